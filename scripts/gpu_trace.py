"""A profiler trace of one vmapped step per engine on a GPU, kept for reading offline.

A lent GPU machine is held for minutes; what its kernels cost is worth keeping past it. For
each engine this compiles `jit(vmap(step))` at `--batch` worlds, times `--calls` calls, traces
`--trace-calls` more with `jax.profiler`, and writes into OUT/ENGINE/: the trace
(`plugins/profile/*/*.trace.json.gz`), the compiled HLO (`step.hlo.txt`, whose op_name
metadata carry jaxmj's named scopes) and `summary.txt`: the device's kernels
(microseconds per call), charged to jaxmj's named scopes (MuJoCo stages and solver phases).
`--read OUT/ENGINE` prints that report again from the folder, on any machine.

An engine NAME other than jaxmj, mjx and jaxmj-fast is jaxmj at another revision, package
`jaxmj_NAME` in the folder `--base-path` (default gpu_base): the lent machine has no git, so
`--export-base REF --name NAME` writes it there beforehand (an ignored folder carried with
the device call); several revisions, several names, one GPU call. Engine `jaxmj-fast` is
jaxmj in fast arithmetic (no product kept apart from its sum).

  python scripts/gpu_trace.py MODEL [--engines jaxmj mjx NAME...] [--base-path DIR]
      [--batch 8192] [--calls 10] [--trace-calls 3] [--out DIR]
  python scripts/gpu_trace.py --export-base REF [--name base] [--base-path gpu_base]
  python scripts/gpu_trace.py --read OUT/jaxmj [OUT/bar ...]   (several: side by side)
"""

import argparse
import collections
import functools
import glob
import gzip
import json
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_scopes  # noqa: E402
import profile_step  # noqa: E402  (it sets XLA_FLAGS before jax starts its backend)

# isort: split

import jax  # noqa: E402
import numpy as np  # noqa: E402


def kernel_us(trace_file: str, calls: int) -> tuple[dict[str, float], dict[str, float]]:
  """(us, runs) per call of each event on the device's streams, by event name; off a GPU (a
  rehearsal) the host's thunk events stand in."""
  with gzip.open(trace_file) as f:
    events = json.load(f)["traceEvents"]
  device = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"
            and "/device:" in e["args"].get("name", "")}
  us, runs = collections.Counter(), collections.Counter()
  for e in events:
    if e.get("ph") == "X" and (e.get("pid") in device or not device):
      us[e["name"]] += e["dur"] / calls
      runs[e["name"]] += 1 / calls
  return us, runs


BYTES = {"f64": 8, "s64": 8, "u64": 8, "f32": 4, "s32": 4, "u32": 4, "f16": 2, "bf16": 2,
         "s16": 2, "u16": 2, "s8": 1, "u8": 1, "pred": 1}


def _bytes(shapes: str) -> int:
  """Bytes of the arrays an HLO type names ('f32[8192,27]' or a tuple of them)."""
  return sum(BYTES.get(t, 4) * int(np.prod([int(x) for x in dims.split(",") if x]))
             for t, dims in re.findall(r"\b([a-z]+\d*)\[([\d,]*)\]", shapes))


def fusion_bytes(hlo_text: str) -> dict[str, int]:
  """Kernel name ('.' written '_') -> bytes its fusion reads (its fused computation's
  parameters) and writes (its outputs): at the card's memory bandwidth the least time it can
  take. A kernel far slower than that recomputes or branches, not streams."""
  params, computation = collections.Counter(), None
  for line in hlo_text.splitlines():
    if not line.startswith(" "):
      computation = line.split(" ")[0].lstrip("%") if line.endswith("{") else None
    elif computation and " parameter(" in line:
      params[computation] += _bytes(line.split(" = ", 1)[1].split(" parameter(")[0])
  out = {}
  for m in re.finditer(r"^\s*(?:ROOT )?%([\w.\-]+) = (.*?) fusion\(.*?calls=%([\w.\-]+)",
                       hlo_text, flags=re.M):
    out[m.group(1).replace(".", "_")] = params[m.group(3)] + _bytes(m.group(2))
  return out


def _scoped(folder: str, calls: int):
  """(us, runs) per kernel, (us, runs) per named scope, kernel -> scope and the HLO text of
  the run in `folder`."""
  us, runs = kernel_us(os.path.join(folder, "trace.json.gz"), calls)
  with open(os.path.join(folder, "step.hlo.txt")) as f:
    hlo_text = f.read()
  scopes, _ = profile_scopes.op_scopes(hlo_text)
  scope_of = {name.replace(".", "_"): scope for name, scope in scopes.items()}
  scope_of.update(scopes)
  by_scope, scope_runs = collections.Counter(), collections.Counter()
  for name, t in us.items():
    scope = scope_of.get(name, "(library)") or "(unscoped)"
    by_scope[scope] += t
    scope_runs[scope] += runs[name]
  return us, runs, by_scope, scope_runs, scope_of, hlo_text


def compare(folders: list[str]) -> list[str]:
  """Kernel us per call by named scope, one column per run folder (engines, revisions),
  costliest scopes of the first first; MJX's kernels carry no jaxmj scopes."""
  columns = []
  for folder in folders:
    with open(os.path.join(folder, "meta.json")) as f:
      columns.append(_scoped(folder, json.load(f)["trace_calls"]))
  names = [os.path.basename(os.path.normpath(f)) for f in folders]
  order = list(dict.fromkeys(k for c in columns for k, _ in c[2].most_common()))
  lines = [f"{'us per call':30}" + "".join(f"{n[:12]:>13}" for n in names),
           f"{'all kernels':30}" + "".join(f"{sum(c[0].values()):13.1f}" for c in columns),
           f"{'kernel runs':30}" + "".join(f"{sum(c[1].values()):13.0f}" for c in columns)]
  lines += [f"{k[:30]:30}" + "".join(f"{c[2].get(k, 0.0):13.1f}" for c in columns)
            for k in order]
  return lines


def report(folder: str, calls: int, top: int) -> list[str]:
  """The kernels of OUT/ENGINE charged to jaxmj's named scopes (stage/phase, from the HLO's
  op_name metadata; a GPU kernel is named for its instruction, '.' written '_'; library
  kernels such as cuBLAS's are '(library)'), then the costliest kernels with the memory
  bandwidth each reached (GB/s: its fusion's bytes in and out over its time)."""
  us, runs, by_scope, scope_runs, scope_of, hlo_text = _scoped(folder, calls)
  moved = fusion_bytes(hlo_text)
  lines = [f"kernels: {sum(runs.values()):.0f} runs and {sum(us.values()):.0f} us per call",
           "by scope (us per call, runs per call):"]
  lines += [f"{t:10.1f} us {scope_runs[k]:6.1f} x  {k}" for k, t in by_scope.most_common()]
  lines.append(f"costliest {top} kernels (us and runs per call, GB/s, scope, kernel):")
  for k, t in us.most_common(top):
    rate = f"{moved[k] * runs[k] / t / 1e3:7.0f}" if k in moved and t > 0 else f"{'-':>7}"
    lines.append(f"{t:10.1f} us {runs[k]:6.1f} x {rate}  "
                 f"{scope_of.get(k, '(library)') or '(unscoped)':30} {k[:100]}")
  return lines


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("model", nargs="?")
  p.add_argument("--export-base", metavar="REF", help="write jaxmj at git revision REF as "
                 "package jaxmj_NAME (engine NAME, --name) into --base-path and exit: run it "
                 "where git is, before the GPU call")
  p.add_argument("--name", default="base", help="the engine name --export-base gives REF")
  p.add_argument("--read", metavar="OUT/ENGINE", nargs="+", help="report a folder this "
                 "script wrote (a run's trace, read again on any machine) instead of running; "
                 "several: their kernel time by scope side by side")
  p.add_argument("--engines", nargs="+", default=["jaxmj", "mjx"])
  p.add_argument("--base-path", default="gpu_base",
                 help="folder holding the packages jaxmj_NAME of engines NAME")
  p.add_argument("--batch", type=int, default=8192)
  p.add_argument("--calls", type=int, default=10)
  p.add_argument("--trace-calls", type=int, default=3)
  p.add_argument("--settle", type=int, default=100, help="mj_step calls before the state")
  p.add_argument("--top", type=int, default=40)
  p.add_argument("--out", default=os.environ.get("OUT", "gpu_trace"))
  args = p.parse_args()
  if args.export_base:
    package = f"jaxmj_{args.name}"
    dest = os.path.join(args.base_path, package)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(os.path.join(profile_step.export_base(args.export_base, package), package),
                    dest)
    print(f"jaxmj at {args.export_base} is package {package} in {args.base_path}/ "
          f"(engine {args.name})")
    return
  if args.read and len(args.read) > 1:
    print("\n".join(compare(args.read)))
    return
  if args.read:
    with open(os.path.join(args.read[0], "meta.json")) as f:
      calls = json.load(f)["trace_calls"]
    print("\n".join(report(args.read[0], calls, args.top)))
    return
  if not args.model:
    p.error("MODEL is required unless --read is given")
  sys.path.insert(0, os.path.abspath(args.base_path))
  _, md = profile_step.settled_state(args.model, args.settle)
  print(f"{args.model}, batch {args.batch}, {jax.devices()}")
  for engine in args.engines:
    try:
      run_engine(args, engine, md)
    except Exception as e:  # noqa: BLE001  (one GPU call: report, go on to the next engine)
      print(f"{engine} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)


def run_engine(args, engine: str, md):
  """Compiles, times and traces one engine's vmapped step into OUT/ENGINE (module doc)."""
  folder = os.path.join(args.out, engine)
  shutil.rmtree(folder, ignore_errors=True)
  os.makedirs(folder)
  # another revision: package jaxmj_ENGINE, written by --export-base REF --name ENGINE
  make = profile_step.ENGINES.get(engine) or functools.partial(
    profile_step.jaxmj_engine, package=f"jaxmj_{engine}")
  m, d1, forward, stages = make(args.model, md)
  d = jax.jit(jax.vmap(forward, in_axes=(None, 0)))(m, profile_step.batched(d1, args.batch))
  step = jax.jit(jax.vmap(stages["step"], in_axes=(None, 0)))
  t0 = time.perf_counter()
  compiled = step.lower(m, d).compile()
  compile_s = time.perf_counter() - t0
  with open(os.path.join(folder, "step.hlo.txt"), "w") as f:
    f.write(compiled.as_text())
  jax.block_until_ready(compiled(m, d))
  times = []
  for _ in range(args.calls):
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(m, d))
    times.append(time.perf_counter() - t0)
  ms = 1e3 * sorted(times)[len(times) // 2]
  with jax.profiler.trace(folder):
    for _ in range(args.trace_calls):
      jax.block_until_ready(compiled(m, d))
  # flat, so that the device tool brings it back (it leaves deep folders behind)
  trace_file = glob.glob(os.path.join(folder, "plugins/profile/*/*.trace.json.gz"))[0]
  shutil.move(trace_file, os.path.join(folder, "trace.json.gz"))
  shutil.rmtree(os.path.join(folder, "plugins"))
  with open(os.path.join(folder, "meta.json"), "w") as f:
    json.dump({"model": args.model, "batch": args.batch, "trace_calls": args.trace_calls}, f)
  lines = [f"{engine}: compile {compile_s:.1f} s, step {ms:.3f} ms median of {args.calls} "
           f"({args.batch / ms * 1e3:,.0f} steps/s), {args.trace_calls} calls traced"]
  lines += report(folder, args.trace_calls, args.top)
  with open(os.path.join(folder, "summary.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
  print("\n".join(lines), flush=True)


if __name__ == "__main__":
  main()
