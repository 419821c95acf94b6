"""Where XLA:CPU's compile of one jitted step goes, by jaxmj source line.

XLA:CPU emits every fusion (and every unfused dot, slice, gather...) of the optimized HLO as
a kernel of its own, compiled MLIR -> LLVM IR -> machine code; on MJX's humanoid these
~1,200 per-kernel compiles take ~70% of XLA's compile CPU time, the HLO passes most of the
rest. This script compiles `jax.jit(jaxmj.step)` (or its vmap at `--batch B`) once in a
child process with XLA's timers logged (TF_CPP_MAX_VLOG_LEVEL=1), then charges each
kernel's MLIR and LLVM compile time to the source line that made its root instruction (the
HLO's stack frames; jaxmj's innermost frame, `--frames N` for callers too) and prints the
lines by time, with the HLO passes' totals. Times are CPU seconds summed over XLA's
threads, as noisy as the machine's load; kernel counts are exact. `--scan T` compiles
`lax.scan` of T steps instead (bench.py's rollout, vmapped with `--batch`), to see what a
rollout adds to its step.

Usage:
  python scripts/compile_kernels.py MODEL [--batch 0] [--scan 0] [--top 40] [--frames 1]
      [--passes 10] [--x64]
"""

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile

_XLA_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler=false"  # see bench.py
_KERNEL = re.compile(r"Compiled (LLVM|MLIR) module: (?:__compute_module_)?(\S+?)_"
                     r"(?:elemental_)?kernel_module time: [^(]*\((\d+) us\)")
_PASS = re.compile(r"HLO pass: (\S+) time: [^(]*\((\d+) us\)")


def child(model: str, batch: int, scan: int, hlo_path: str):
  """Compiles the step, or `scan` steps in a `lax.scan` (the parent reads the timers from
  this process's stderr)."""
  import jax

  jax.config.update("jax_enable_compilation_cache", False)
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  from profile_step import ENGINES, batched, settled_state

  _, md = settled_state(model, 200)
  m, d, _, stages = ENGINES["jaxmj"](model, md)
  fn = step = stages["step"]
  if scan:
    def fn(m, d):
      return jax.lax.scan(lambda d, _: (step(m, d), None), d, None, length=scan)[0]
  if batch:
    fn, d = jax.vmap(fn, in_axes=(None, 0)), batched(d, batch)
  lowered = jax.jit(fn).lower(m, d)
  print("=== compile step ===", file=sys.stderr, flush=True)
  with open(hlo_path, "w") as f:
    f.write(lowered.compile().as_text())


def frame_lines(text: str, depth: int) -> dict:
  """{instruction name: 'file:line:function' of its innermost `depth` stack frames}."""
  tables, section = collections.defaultdict(dict), None
  for line in text.splitlines():
    if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
      section = line
    elif section and re.match(r"^\d+ ", line):
      key, rest = line.split(" ", 1)
      tables[section][int(key)] = rest.strip('"')
    elif section and line.strip():
      section = None
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/"

  def where(frame: int) -> str:
    out = []
    while frame in tables["StackFrames"] and len(out) < depth:
      loc, parent = map(int, re.findall(r"=(\d+)", tables["StackFrames"][frame]))
      file, func, line = map(int, re.findall(r"\b(?:file_name_id|function_name_id|line)=(\d+)",
                                             tables["FileLocations"][loc]))
      out.append(f"{tables['FileNames'][file].replace(root, '')}:{line}:"
                 f"{tables['FunctionNames'][func]}")
      frame = parent - 1  # the text prints the parent's id + 1 (1: no parent)
    return " < ".join(out) or "(no frame)"

  names = {}
  for line in text.splitlines():
    m = re.match(r"\s*(?:ROOT )?%([\w.\-]+) = .*?stack_frame_id=(\d+)", line)
    if m:
      names[m.group(1)] = where(int(m.group(2)))
  return names


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  p.add_argument("model")
  p.add_argument("--batch", type=int, default=0, help="0: one world, jit(step) unbatched")
  p.add_argument("--scan", type=int, default=0, help="T > 0: a lax.scan of T steps")
  p.add_argument("--top", type=int, default=40)
  p.add_argument("--frames", type=int, default=1, help="stack frames per source line")
  p.add_argument("--passes", type=int, default=10, help="slowest HLO passes to list")
  p.add_argument("--x64", action="store_true")
  p.add_argument("--child", metavar="HLO_PATH", help=argparse.SUPPRESS)
  args = p.parse_args()
  if args.child:
    import jax

    jax.config.update("jax_enable_x64", args.x64)
    return child(args.model, args.batch, args.scan, args.child)

  with tempfile.TemporaryDirectory() as tmp:
    hlo, log = os.path.join(tmp, "step.hlo"), os.path.join(tmp, "stderr")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="0", TF_CPP_MAX_VLOG_LEVEL="1",
               XLA_FLAGS=f"{os.environ.get('XLA_FLAGS', '')} {_XLA_FLAG}".strip())
    cmd = [sys.executable, __file__, args.model, "--batch", str(args.batch), "--scan",
           str(args.scan), "--child", hlo]
    with open(log, "w") as err:
      subprocess.run(cmd + (["--x64"] if args.x64 else []), env=env, stderr=err, check=True)
    with open(hlo) as f:
      names = frame_lines(f.read(), args.frames)
    with open(log) as f:
      lines = f.read().split("=== compile step ===", 1)[1].splitlines()

  time_by, count_by, passes = collections.Counter(), collections.Counter(), collections.Counter()
  total = collections.Counter()
  for line in lines:
    if m := _KERNEL.search(line):
      where = names.get(m.group(2), "(unnamed)")
      time_by[where] += int(m.group(3))
      count_by[where] += m.group(1) == "LLVM"
      total[m.group(1)] += int(m.group(3))
    elif m := _PASS.search(line):
      passes[m.group(1)] += int(m.group(2))
  print(f"{args.model}: batch {args.batch}, scan {args.scan}, x64={args.x64}, "
        f"load {os.getloadavg()[0]:.1f}")
  print(f"kernel compiles: MLIR {total['MLIR'] / 1e6:.2f} s, LLVM {total['LLVM'] / 1e6:.2f} s "
        f"over {sum(count_by.values())} kernels; HLO passes {sum(passes.values()) / 1e6:.2f} s")
  print("slowest HLO passes: " + ", ".join(f"{k} {v / 1e6:.2f} s"
                                           for k, v in passes.most_common(args.passes)))
  print(f"{'CPU s':>7} {'kernels':>7}  source line")
  for where, us in time_by.most_common(args.top):
    print(f"{us / 1e6:7.3f} {count_by[where]:7d}  {where}")


if __name__ == "__main__":
  main()
