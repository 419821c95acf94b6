"""Transition Jacobians: jaxmj (exact, forward mode, vmapped over a batch of states) against
MuJoCo C's mjd_transitionFD (centred differences, eps 1e-6, one state per call, float64).

Reports, per model: jaxmj's compile time, its wall time per state at batch B (median of 3
calls after a warm-up) for each variant, mjd_transitionFD's time per state (median over the
same states, one thread), their ratio, and the largest difference of A relative to |A|max;
then jaxmj's batched `step` alone per state, for scale. Variants (--variants):

  chunk<k>  transition_jacobians(chunk=k): linearized once, the tangent map vmapped over k
            basis columns at a time (chunk1 is the default; a chunk of all columns is jacfwd)
  fast      chunk 1 with opt.arithmetic="fast"
  fd        transition_jacobians(eps=1e-6): centred differences, all columns in one vmap

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


def bench(name: str, batch: int, with_mujoco: bool, variants) -> None:
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
  step_fn = jax.jit(jax.vmap(jaxmj.step, in_axes=(None, 0)))
  step_s = median_time(step_fn, m, d) / batch
  if with_mujoco:
    fd_runs = []
    for md in mds:
      t = time.perf_counter()
      mujoco_fd(mm, md)
      fd_runs.append(time.perf_counter() - t)
    theirs = np.median(fd_runs)
    steppers = states(mm, 8, 1)
    mj_step_s = median_time(lambda: [mujoco.mj_step(mm, md) for md in steppers]) / 8
  for variant in variants:
    mv, kw = m, {}
    if variant.startswith("chunk"):
      kw = dict(chunk=int(variant[5:]))
    elif variant == "fast":
      mv = m.replace(opt=m.opt.replace(arithmetic="fast"))
    elif variant == "fd":
      kw = dict(eps=1e-6)
    fn = jax.jit(jax.vmap(lambda m, d: jaxmj.transition_jacobians(m, d, **kw), in_axes=(None, 0)))
    t = time.perf_counter()
    compiled = fn.lower(mv, d).compile()
    compile_s = time.perf_counter() - t
    ours = median_time(compiled, mv, d) / batch
    line = (f"{name:16s} nv={m.nv:3d} B={batch:4d} {variant:7s} compile {compile_s:6.1f} s | "
            f"jaxmj {ours * 1e3:8.3f} ms/state")
    if with_mujoco:
      a = np.asarray(compiled(mv, d)[0])
      refs = [mujoco_fd(mm, md)[0] for md in mds[:8]]
      err = max(np.max(np.abs(a[i] - r)) / np.max(np.abs(r)) for i, r in enumerate(refs))
      line += (f" | mjd_transitionFD {theirs * 1e3:8.3f} ms/state | ratio (FD/jaxmj) "
               f"{theirs / ours:6.2f} | max |dA|/|A| {err:.1e}")
    print(line, flush=True)
  line = f"{name:16s} step alone: jaxmj {step_s * 1e3:.3f} ms/state (batched)"
  if with_mujoco:
    line += f", mj_step {mj_step_s * 1e3:.3f} ms"
  print(line, flush=True)


def median_time(fn, *args, n: int = 3) -> float:
  """Median wall time of fn(*args) over n calls after a warm-up."""
  jax.block_until_ready(fn(*args))
  runs = []
  for _ in range(n):
    t = time.perf_counter()
    jax.block_until_ready(fn(*args))
    runs.append(time.perf_counter() - t)
  return float(np.median(runs))


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--batch", type=int, default=64)
  p.add_argument("--models", nargs="+", default=["cartpole", "double_pendulum", "box_stack"])
  p.add_argument("--variants", nargs="+", default=["chunk1", "fast"],
                 help="chunk<k>, fast, fd (see the docstring)")
  p.add_argument("--no-mujoco", action="store_true", help="time jaxmj alone")
  p.add_argument("--float32", action="store_true", help="jaxmj in float32 (default float64)")
  args = p.parse_args()
  jax.config.update("jax_enable_x64", not args.float32)
  print(f"backend {jax.default_backend()}, {os.cpu_count()} cpus")
  for name in args.models:
    bench(name, args.batch, not args.no_mujoco, args.variants)


if __name__ == "__main__":
  main()
