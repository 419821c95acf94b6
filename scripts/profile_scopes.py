"""Where a vmapped step's time goes, by named scope: a jax.profiler trace of jaxmj (or MJX)
summed per MuJoCo stage and solver phase, with the costliest XLA ops.

`scripts/profile_step.py` times each stage as its own jitted function; this script times
them inside the one compiled step, where XLA fuses across stages. Every pipeline stage runs
under `jax.named_scope` with its MuJoCo name (`mj_kinematics`, `mj_makeConstraint`,
`mj_solve`, ...) and the solver's phases under their own (`warmstart`, `constraint_update`,
`hessian`, `hessian_solve`, `linesearch`, `implicit_derivative`); each XLA op of the
compiled step is charged to the innermost stage and phase of the instruction its profiler
event names (MJX has no such scopes: its ops are listed, not grouped). A thunk's time is
the median of its events times their count, so that an event stretched by another process
taking the core does not count (the machine is shared); the total is then close to the
process CPU time of one call, which the script prints beside it. An event is still a wall
duration: pinned to one core (`taskset`), XLA's other threads run inside a long kernel's
event, so a single large op can look several ms dearer than removing it saves (qLD's copy
at 1024 worlds, docs/speed.md "Three layouts of a large batch"): confirm with
`profile_step.py --base`.

`--batch 0` traces one world without vmap, as `jax.jit(step)` runs it. There the kernels'
own time is a fraction of a call and the rest is XLA:CPU's handling of each kernel run,
which costs most at the top level (the entry computation's dataflow executor, its ready
kernels handed between threads) and little in a loop body of at most 8 kernels (run in
order on one thread): the runs per scope, and how many of them are top-level, say where
batch-1 latency goes (docs/speed.md, Batch-1 latency).

`--by-source` also sums the ops by the jaxmj source file and line they come from (a fusion:
its root instruction's), finer than the stages: which of collision's files (GJK, EPA, the
support functions) takes a mesh model's time.

Usage:
  python scripts/profile_scopes.py MODEL [--batch 256] [--engine jaxmj|mjx]
      [--stage step|solver|forward] [--calls 30] [--top 25] [--by-source]
"""

import argparse
import collections
import functools
import glob
import gzip
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile_kernels  # noqa: E402
import profile_step  # noqa: E402  (it sets XLA_FLAGS before jax starts its backend)

# isort: split

import jax  # noqa: E402
import numpy as np  # noqa: E402

PHASES = ("warmstart", "constraint_update", "hessian_solve", "hessian", "linesearch",
          "implicit_derivative")


def op_scopes(hlo_text: str) -> tuple[dict[str, str], set[str]]:
  """Instruction name -> 'stage/phase' from its metadata's op_name ('' when unscoped or
  without metadata, as XLA leaves its dots), and the names in the entry computation.
  Loops are left out: their events span their bodies' ops, which are traced themselves."""
  out, entry, in_entry = {}, set(), False
  for line in hlo_text.splitlines():
    if not line.startswith(" "):
      in_entry = line.startswith("ENTRY")
    m = re.match(r"\s*(?:ROOT )?%?([\w.\-]+) = ", line)
    if m and not re.search(r" (while|conditional)\(", line):
      op_name = re.search(r'op_name="([^"]*)"', line)
      op_name = op_name.group(1) if op_name else ""
      stages = re.findall(r"mj_\w+", op_name)
      phases = [p for p in re.findall(r"[a-z_]+", op_name) if p in PHASES]
      out[m.group(1)] = "/".join(stages[-1:] + phases[-1:])
      if in_entry:
        entry.add(m.group(1))
  return out, entry


def thunk_ms(trace_dir: str, calls: int) -> tuple[dict[str, float], dict[str, float]]:
  """ms per call of each traced event name (median event time x events per call), and its
  events (kernel runs) per call."""
  path = glob.glob(os.path.join(trace_dir, "**", "*.trace.json.gz"), recursive=True)[0]
  durations = collections.defaultdict(list)
  for e in json.load(gzip.open(path))["traceEvents"]:
    if e.get("ph") == "X" and "dur" in e:
      durations[e["name"]].append(e["dur"])
  return ({k: float(np.median(v)) * len(v) / calls / 1e3 for k, v in durations.items()},
          {k: len(v) / calls for k, v in durations.items()})


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  p.add_argument("model")
  p.add_argument("--batch", type=int, default=256)
  p.add_argument("--settle", type=int, default=500)
  p.add_argument("--engine", choices=["jaxmj", "mjx"], default="jaxmj")
  p.add_argument("--stage", choices=["step", "solver", "forward", "transition"], default="step",
                 help="transition: jaxmj.transition_jacobians (its tangents charged to the "
                 "stages they differentiate)")
  p.add_argument("--calls", type=int, default=30)
  p.add_argument("--top", type=int, default=25)
  p.add_argument("--list", metavar="SCOPE", help="also list every op charged to SCOPE "
                 "('' or '(unscoped)': the ops without a scope)")
  p.add_argument("--by-source", action="store_true",
                 help="also sum the ops by source file and by source line (a fusion: its root's)")
  p.add_argument("--x64", action="store_true", help="float64 (default float32)")
  p.add_argument("--chunk", type=int, help="--stage transition: columns at a time (each "
                 "vmapped state; transition_jacobians' chunk)")
  args = p.parse_args()
  jax.config.update("jax_enable_x64", args.x64)

  _, md = profile_step.settled_state(args.model, args.settle)
  m, d1, forward, stages = profile_step.ENGINES[args.engine](args.model, md)
  batch = ((lambda f: f) if args.batch == 0 else
           (lambda f: jax.vmap(f, in_axes=(None, 0))))
  d = jax.jit(batch(forward))(m, profile_step.batched(d1, args.batch) if args.batch else d1)
  fn = stages[args.stage]
  if args.chunk is not None:
    if args.stage != "transition":
      p.error("--chunk applies to --stage transition")
    fn = functools.partial(fn, chunk=args.chunk)
  exe = jax.jit(batch(fn)).lower(m, d).compile()
  text = exe.as_text()
  counts = profile_step.hlo_counts(text)
  for _ in range(3):
    jax.block_until_ready(exe(m, d))
  cpu = []
  for _ in range(args.calls):
    c0 = time.process_time()
    jax.block_until_ready(exe(m, d))
    cpu.append(time.process_time() - c0)
  with tempfile.TemporaryDirectory() as trace_dir:
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
      for _ in range(args.calls):
        jax.block_until_ready(exe(m, d))
    ms, runs = thunk_ms(trace_dir, args.calls)

  scopes, entry = op_scopes(text)
  ops = {k: v for k, v in ms.items() if k in scopes}
  by_scope, runs_by_scope, top_by_scope = (collections.Counter() for _ in range(3))
  for k, v in ops.items():
    by_scope[scopes[k] or "(unscoped)"] += v
    runs_by_scope[scopes[k] or "(unscoped)"] += runs[k]
    top_by_scope[scopes[k] or "(unscoped)"] += runs[k] * (k in entry)
  print(f"{args.model}: {args.engine} {args.stage}, batch {args.batch}: "
        f"{sum(counts.values())} HLO instructions, while {counts['while']}; CPU "
        f"{1e3 * np.median(cpu):.2f} ms per call (median), XLA ops in the trace "
        f"{sum(ops.values()):.2f} ms in {sum(runs[k] for k in ops):.0f} kernel runs "
        f"({sum(runs[k] for k in ops if k in entry):.0f} top-level); load "
        f"{os.getloadavg()[0]:.1f}")
  if args.engine == "jaxmj":
    print("ms, kernel runs and top-level kernel runs per call by stage/phase:")
    for k, v in by_scope.most_common():
      print(f"  {v:7.3f} {runs_by_scope[k]:6.0f} {top_by_scope[k]:6.0f}  {k}")
  if args.list is not None:
    print(f"ops of {args.list or '(unscoped)'} (ms and runs per call):")
    want = "" if args.list == "(unscoped)" else args.list  # as the table above names it
    for k, v in sorted(ops.items()):
      if scopes[k] == want:
        print(f"  {v:7.3f} {runs[k]:6.0f}  {k}")
  if args.by_source:
    sources = compile_kernels.frame_lines(text, 1)  # 'file:line:function'
    by_line, by_file = collections.Counter(), collections.Counter()
    for k, v in ops.items():
      by_line[sources.get(k, "")] += v
      by_file[sources.get(k, "").split(":")[0]] += v
    print("ms per call by source file:")
    for k, v in by_file.most_common(args.top):
      print(f"  {v:7.3f}  {k or '(no metadata)'}")
    print(f"costliest {args.top} source lines (ms per call):")
    for k, v in by_line.most_common(args.top):
      print(f"  {v:7.3f}  {k or '(no metadata)'}")
  print(f"costliest {args.top} ops (ms and runs per call, scope):")
  for k, v in sorted(ops.items(), key=lambda kv: -kv[1])[:args.top]:
    print(f"  {v:7.3f} {runs[k]:6.0f}  {k:<40} {scopes[k]}")


if __name__ == "__main__":
  main()
