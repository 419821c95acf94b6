"""Whether a world's results depend on the batch it runs in: each stage, vmapped, at two batch
sizes from the same worlds, compared bit for bit on the worlds both hold.

The stages are scripts/profile_step.py's (kinematics, mass, collision, velocity, constraint,
solver, forward, step), each jitted alone from a full `forward` of the same batch, so a stage
that differs is the first place its arithmetic depends on the batch size (through XLA's code
for that shape: a matrix product's blocking, a fusion that contracts a product into a
multiply-add). Batch 0 stands for one world without vmap (`jax.jit(stage)`). The worlds start
from MuJoCo C's state `--settle` steps in, each with its own qvel perturbation.

Usage:
  python scripts/batch_invariance.py models/box_stack.xml [--batches 2 4] [--settle 200] [--x64]

Prints, per stage, "bit-equal" or the fields that differ (count of entries, largest
difference). The exact arithmetic at XLA's default options is batch-invariant from two worlds
on (README, "Compilation cache and several devices").
"""

import argparse
import os
import sys

import jax
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import profile_step  # noqa: E402

STAGES = ("kinematics", "mass", "collision", "velocity", "constraint", "solver", "forward",
          "step")


def differences(a, b, n: int) -> list:
  """(field, entries that differ, largest difference) over the first n worlds."""
  out = []
  for (path, x), y in zip(jax.tree_util.tree_leaves_with_path(a), jax.tree.leaves(b)):
    x, y = np.asarray(x)[:n], np.asarray(y)[:n]
    if x.dtype.kind == "f" and not np.array_equal(x, y, equal_nan=True):
      out.append((jax.tree_util.keystr(path), int((x != y).sum()),
                  float(np.nanmax(np.abs(x - y)))))
  return out


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("model")
  p.add_argument("--batches", type=int, nargs=2, default=[2, 4], metavar=("SMALL", "LARGE"),
                 help="the two batch sizes (SMALL 0: one world without vmap)")
  p.add_argument("--settle", type=int, default=200)
  p.add_argument("--x64", action="store_true", help="float64 (default float32)")
  args = p.parse_args()
  jax.config.update("jax_enable_x64", args.x64)
  small, large = args.batches
  if not 0 <= small < large:
    p.error("--batches: need 0 <= SMALL < LARGE")

  _, md = profile_step.settled_state(args.model, args.settle)
  m, d1, forward, stages = profile_step.ENGINES["jaxmj"](args.model, md)
  batch = jax.jit(jax.vmap(forward, in_axes=(None, 0)))(m, profile_step.batched(d1, large))
  for name in STAGES:
    big = jax.jit(jax.vmap(stages[name], in_axes=(None, 0)))(m, batch)
    if small:
      part = jax.jit(jax.vmap(stages[name], in_axes=(None, 0)))(
        m, jax.tree.map(lambda x: x[:small], batch))
    else:
      part = jax.tree.map(lambda x: x[None], jax.jit(stages[name])(
        m, jax.tree.map(lambda x: x[0], batch)))
    diff = differences(big, part, max(small, 1))
    print(f"{name:11s}", "bit-equal" if not diff else
          ", ".join(f"{f} ({k} entries, {e:.2g})" for f, k, e in diff), flush=True)


if __name__ == "__main__":
  main()
