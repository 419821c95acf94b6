"""Transition Jacobians: jaxmj (exact, forward mode, vmapped over a batch of states) against
MuJoCo C's mjd_transitionFD (centred differences, eps 1e-6, one state per call, float64).

Reports, per model: jaxmj's compile time, its wall time per state at batch B (median of 3
calls after a warm-up), mjd_transitionFD's time per state (median over the same states,
one thread), their ratio, and the largest difference of A relative to |A|max.

  python scripts/bench_transition.py [--batch 64] [--models cartpole humanoid_floor]
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxmj

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def states(mm, n: int, seed: int = 0):
  """n MuJoCo states a few steps after random velocity perturbations."""
  import mujoco

  rng = np.random.default_rng(seed)
  out = []
  for _ in range(n):
    md = mujoco.MjData(mm)
    md.qvel[:] = 0.1 * rng.normal(size=mm.nv)
    md.ctrl[:] = 0.1 * rng.normal(size=mm.nu)
    for _ in range(5):
      mujoco.mj_step(mm, md)
    out.append(md)
  return out


def mujoco_fd(mm, md):
  import mujoco

  nx = 2 * mm.nv + mm.na
  a, b = np.zeros((nx, nx)), np.zeros((nx, mm.nu))
  c, d = np.zeros((mm.nsensordata, nx)), np.zeros((mm.nsensordata, mm.nu))
  mujoco.mjd_transitionFD(mm, md, 1e-6, True, a, b, c, d)
  return a, b, c, d


def bench(name: str, batch: int, with_mujoco: bool) -> None:
  path = os.path.join(ROOT, "models", f"{name}.xml")
  m = jaxmj.Model.from_xml_path(path)
  d0 = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), jaxmj.make_data(m))
  if with_mujoco:
    import mujoco

    mm = mujoco.MjModel.from_xml_path(path)
    mds = states(mm, batch)
    fields = ("time", "qpos", "qvel", "act", "ctrl", "qacc_warmstart")
    d = d0.replace(**{f: jnp.stack([jnp.asarray(getattr(md, f)) for md in mds])
                      for f in fields})
  else:  # jaxmj alone (no mujoco package): its own states a few steps after perturbations
    rng = np.random.default_rng(0)
    d = d0.replace(qvel=d0.qvel + jnp.asarray(0.1 * rng.normal(size=d0.qvel.shape), d0.qvel.dtype))
    d = jax.jit(jax.vmap(lambda d: jaxmj.rollout(m, d, nstep=5)[0], in_axes=(0,)))(d)
  fn = jax.jit(jax.vmap(jaxmj.transition_jacobians, in_axes=(None, 0)))
  t = time.perf_counter()
  compiled = fn.lower(m, d).compile()
  compile_s = time.perf_counter() - t
  jax.block_until_ready(compiled(m, d))
  runs = []
  for _ in range(3):
    t = time.perf_counter()
    out = jax.block_until_ready(compiled(m, d))
    runs.append(time.perf_counter() - t)
  ours = np.median(runs) / batch
  if not with_mujoco:
    print(f"{name:16s} nv={m.nv:3d} B={batch:5d} compile {compile_s:6.1f} s | jaxmj "
          f"{ours * 1e3:8.3f} ms/state ({np.median(runs) * 1e3:.1f} ms per batch)")
    return
  fd_runs, err = [], 0.0
  for i, md in enumerate(mds):
    t = time.perf_counter()
    a = mujoco_fd(mm, md)[0]
    fd_runs.append(time.perf_counter() - t)
    err = max(err, np.max(np.abs(np.asarray(out[0][i]) - a)) / np.max(np.abs(a)))
  theirs = np.median(fd_runs)
  print(f"{name:16s} nv={mm.nv:3d} B={batch:4d} compile {compile_s:6.1f} s | jaxmj "
        f"{ours * 1e3:8.3f} ms/state | mjd_transitionFD {theirs * 1e3:8.3f} ms/state | "
        f"ratio (FD/jaxmj) {theirs / ours:6.2f} | max |dA|/|A| {err:.1e}")


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--batch", type=int, default=64)
  p.add_argument("--models", nargs="+", default=["cartpole", "double_pendulum", "box_stack"])
  p.add_argument("--no-mujoco", action="store_true", help="time jaxmj alone")
  p.add_argument("--float32", action="store_true", help="jaxmj in float32 (default float64)")
  args = p.parse_args()
  jax.config.update("jax_enable_x64", not args.float32)
  print(f"backend {jax.default_backend()}, {os.cpu_count()} cpus")
  for name in args.models:
    bench(name, args.batch, not args.no_mujoco)


if __name__ == "__main__":
  main()
