"""Kernels of a rollout's compiled gradient: how many XLA:CPU runs, by stage and pass.

On the CPU a rollout gradient is launch-bound (`perf`: ~45% of its cycles in XLA:CPU's
runtime, docs/gradients.md "Where box_stack's gradient goes"), so this counts its kernels:
the instructions of the compiled `jax.grad` of `bench_grad_memory.py`'s loss (T steps,
float32) that run as kernels (`compile_time.kernel_lines`), each charged to its pipeline
stage (the innermost `mj_*` scope of its op_name) and pass (`transposed`: the backward
pass, whose op_names carry `transpose(`; else the forward pass, the gradient's primal side
included), then the transposed pass's (or `--pass forward`'s) kernels of one stage
(`--scope`) by source line.
Instructions inside the scan bodies count once, not once per step. The plain forward
rollout is counted beside it. `--base REF` counts jaxmj at git REF too, in the same process
(`profile_step.export_base`), for an A/B of a change's kernels; time it with
`bench_grad_memory.py --ratio-only --base REF`: kernel counts alone do not predict time
(docs/gradients.md).

Usage:
  python scripts/grad_kernels.py [--model box_stack] [--nstep 50] [--scope mj_collision]
      [--pass transposed|forward] [--frames 1] [--top 20] [--base REF] [--x64]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compile_kernels  # noqa: E402
import profile_step  # noqa: E402  (it sets XLA_FLAGS before jax starts its backend)
from bench_grad_memory import make_loss  # noqa: E402
from compile_time import kernel_lines  # noqa: E402

# isort: split

import jax  # noqa: E402

import jaxmj  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NAME = re.compile(r"\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=")


def kernels(hlo_text: str) -> list[tuple[str, str, str]]:
  """(instruction name, stage, pass) of every kernel of a compiled module's text."""
  out = []
  for line in kernel_lines(hlo_text):
    op = re.search(r'op_name="([^"]*)"', line)
    op = op.group(1) if op else ""
    stages = re.findall(r"mj_\w+", op)
    out.append((_NAME.match(line).group(1), stages[-1] if stages else "(no stage)",
                "transposed" if "transpose(" in op else "forward"))
  return out


def report(name: str, lib, path: str, args) -> None:
  m = lib.Model.from_xml_path(path)
  d = lib.make_data(m)
  loss = make_loss(m, d, args.nstep, None, lib)
  forward = kernels(jax.jit(loss).lower(d.qvel).compile().as_text())
  text = jax.jit(jax.grad(loss)).lower(d.qvel).compile().as_text()
  grad = kernels(text)
  by = collections.Counter((stage, p) for _, stage, p in grad)
  passes = collections.Counter(p for _, _, p in grad)
  print(f"{name}: forward rollout {len(forward)} kernels; gradient {len(grad)} "
        f"(forward pass {passes['forward']}, transposed {passes['transposed']})")
  print("  " + ", ".join(f"{s} {p[0]}:{n}" for (s, p), n in by.most_common(args.top)))
  where = compile_kernels.frame_lines(text, args.frames)
  lines = collections.Counter(where.get(k, "(no frame)") for k, stage, p in grad
                              if p == args.pass_ and args.scope in stage)
  print(f"  {args.scope} {args.pass_}: {sum(lines.values())} kernels")
  for line, n in lines.most_common(args.top):
    print(f"  {n:5d}  {line}")


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--model", default="box_stack", help="a model in models/ (name) or a path")
  p.add_argument("--nstep", type=int, default=50)
  p.add_argument("--scope", default="mj_collision", help="the stage listed by source line")
  p.add_argument("--pass", dest="pass_", choices=["transposed", "forward"], default="transposed")
  p.add_argument("--frames", type=int, default=1, help="stack frames per source line")
  p.add_argument("--top", type=int, default=20)
  p.add_argument("--base", metavar="REF", help="also jaxmj at git REF")
  p.add_argument("--x64", action="store_true", help="float64 (default float32)")
  args = p.parse_args()
  # set here: compile_time, imported above, turns float64 on for its own measurements
  jax.config.update("jax_enable_x64", args.x64)
  path = args.model if os.path.exists(args.model) else os.path.join(
    ROOT, "models", f"{args.model}.xml")
  report("tree", jaxmj, path, args)
  if args.base:
    profile_step.export_base(args.base)
    import jaxmj_base

    report(args.base, jaxmj_base, path, args)


if __name__ == "__main__":
  main()
