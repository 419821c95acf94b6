"""Transition Jacobians: jaxmj (exact, forward mode, vmapped over a batch of states) against
MuJoCo C's mjd_transitionFD (centred differences, eps 1e-6, one state per call, float64).

Reports, per model and batch B: jaxmj's compile time, its time per state (median of 3
calls after a warm-up; wall, and process CPU time summed over XLA's threads) for each
variant, mjd_transitionFD's (median over B states, one thread), their ratio (wall and
CPU), and the largest difference of A relative to |A|max; then jaxmj's batched `step`
alone per state (its qpos out), for scale. The states: 5 steps after a random velocity kick
of the initial state, or with --settle N of the state N steps from it (in contact). Variants
(--variants):

  exact     transition_jacobians(m, d) of one state, vmapped over the batch (two
            linearizations, all columns at once)
  batched   transition_jacobians(m, d) of the whole batch: 32 states at a time, at most 8
            columns at a time (its defaults); block<k>: k states at a time
  chunk<k>  transition_jacobians(chunk=k): the tangent maps applied k columns at a time
  jacfwd    jax.jacfwd of one step in all 2 nv + na + nu directions at once: one
            linearization for every column (what transition_jacobians did before the
            position / velocity split)
  fast      exact with opt.arithmetic="fast"
  fd        transition_jacobians(eps=1e-6): centred differences, all columns in one vmap

  python scripts/bench_transition.py [--batch 64 1024] [--models cartpole humanoid_floor]

--base REF (A/B): each variant also with jaxmj at git REF (`profile_step.export_base`), the
two programs timed in turn in this process (least CPU time of 5 rounds each), and REF/tree.
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


def states(mm, n: int, seed: int = 0, settle: int = 0):
  """n MuJoCo states a few steps after random velocity perturbations of the state `settle`
  steps from the initial one (humanoid_floor: no contact at 0, lying on the floor at 1500)."""
  import copy

  import mujoco

  rng = np.random.default_rng(seed)
  md0 = mujoco.MjData(mm)
  for _ in range(settle):
    mujoco.mj_step(mm, md0)
  out = []
  for _ in range(n):
    md = copy.deepcopy(md0)
    md.qvel[:] += 0.1 * rng.normal(size=mm.nv)
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


def jacfwd_step(m, d):
  """jax.jacfwd of one step in the same layout: every column through one linearization."""
  from jaxmj.smooth.qpos import differentiate_pos, integrate_pos

  nv, na = m.nv, m.na

  def f(x):
    d1 = d.replace(qpos=integrate_pos(m, d.qpos, x[:nv], 1.0), qvel=d.qvel + x[nv:2 * nv],
                   act=d.act + x[2 * nv:2 * nv + na], ctrl=d.ctrl + x[2 * nv + na:])
    new = jaxmj.step(m, d1)
    dq = differentiate_pos(m, 1.0, jax.lax.stop_gradient(new.qpos), new.qpos)
    return jnp.concatenate([dq, new.qvel, new.act]), new.sensordata

  jy, js = jax.jacfwd(f)(jnp.zeros(2 * nv + na + m.nu, d.qvel.dtype))
  nx = 2 * nv + na
  return jy[:, :nx], jy[:, nx:], js[:, :nx], js[:, nx:]


def variant_fn(m, variant: str, lib=jaxmj):
  """(model, per-state function of (m, d)) for a variant name (see the docstring)."""
  if variant == "jacfwd":
    return m, jacfwd_step
  kw = {}
  if variant == "batched" or variant.startswith("block"):
    kw = dict(block=int(variant[5:])) if variant.startswith("block") else {}
    return m, BatchedCall(lambda m, d: lib.transition_jacobians(m, d, **kw))
  if variant.startswith("chunk"):
    kw = dict(chunk=int(variant[5:]))
  elif variant == "fast":
    m = m.replace(opt=m.opt.replace(arithmetic="fast"))
  elif variant == "fd":
    kw = dict(eps=1e-6)
  elif variant != "exact":
    raise ValueError(f"unknown variant {variant!r}")
  return m, lambda m, d: lib.transition_jacobians(m, d, **kw)


class BatchedCall:
  """A function of (m, batched d) to be jitted as is (not vmapped over the states)."""

  def __init__(self, fn):
    self.fn = fn


def jitted(per_state):
  """jit of a variant's function over a batch of states."""
  if isinstance(per_state, BatchedCall):
    return jax.jit(per_state.fn)
  return jax.jit(jax.vmap(per_state, in_axes=(None, 0)))


def bench(name: str, batches, with_mujoco: bool, variants, base=None, settle: int = 0) -> None:
  path = os.path.join(ROOT, "models", f"{name}.xml")
  m = jaxmj.Model.from_xml_path(path)
  if with_mujoco:
    import mujoco

    mm = mujoco.MjModel.from_xml_path(path)
    all_mds = states(mm, max(batches), settle=settle)
    fd_wall, fd_cpu = [], []
    for md in all_mds:
      t, c = time.perf_counter(), time.process_time()
      mujoco_fd(mm, md)
      fd_wall.append(time.perf_counter() - t)
      fd_cpu.append(time.process_time() - c)
    theirs, theirs_cpu = np.median(fd_wall), np.median(fd_cpu)
    steppers = states(mm, 8, 1, settle)
    mj_step_s = median_time(lambda: [mujoco.mj_step(mm, md) for md in steppers])[0] / 8
    refs = [mujoco_fd(mm, md)[0] for md in all_mds[:8]]
    nefc = [md.nefc for md in all_mds]
    print(f"{name:16s} settle {settle}: MuJoCo nefc {min(nefc)}-{max(nefc)} over the states")
    print(f"{name:16s} nv={m.nv:3d} mjd_transitionFD {theirs * 1e3:.3f} ms/state "
          f"(CPU {theirs_cpu * 1e3:.3f}), mj_step {mj_step_s * 1e3:.4f} ms", flush=True)
  for batch in batches:
    d0 = jaxmj.make_data(m)
    if settle and not with_mujoco:
      d0 = jaxmj.rollout(m, d0, nstep=settle)[0]
    d = jax.tree.map(lambda x, batch=batch: jnp.broadcast_to(x, (batch,) + x.shape), d0)
    if with_mujoco:
      fields = ("time", "qpos", "qvel", "act", "ctrl", "qacc_warmstart")
      d = d.replace(**{f: jnp.stack([jnp.asarray(getattr(md, f)) for md in all_mds[:batch]])
                       for f in fields})
    else:  # jaxmj alone (no mujoco package): its own states a few steps after perturbations
      rng = np.random.default_rng(0)
      d = d.replace(qvel=d.qvel + jnp.asarray(0.1 * rng.normal(size=d.qvel.shape), d.qvel.dtype))
      d = jax.jit(jax.vmap(lambda d: jaxmj.rollout(m, d, nstep=5)[0], in_axes=(0,)))(d)
    # qpos out only: returning the whole Data costs more than a small model's step
    step_fn = jax.jit(jax.vmap(lambda m, d: jaxmj.step(m, d).qpos, in_axes=(None, 0)))
    step_s, step_cpu = (t / batch for t in median_time(step_fn, m, d))
    print(f"{name:16s} B={batch:4d} step alone: jaxmj {step_s * 1e3:.4f} ms/state "
          f"(CPU {step_cpu * 1e3:.4f}, batched)", flush=True)
    for variant in variants:
      mv, per_state = variant_fn(m, variant)
      fn = jitted(per_state)
      t = time.perf_counter()
      compiled = fn.lower(mv, d).compile()
      compile_s = time.perf_counter() - t
      ours, ours_cpu = (t / batch for t in median_time(compiled, mv, d))
      line = (f"{name:16s} B={batch:4d} {variant:7s} compile {compile_s:6.1f} s | jaxmj "
              f"{ours * 1e3:8.4f} ms/state (CPU {ours_cpu * 1e3:8.4f})")
      if with_mujoco:
        a = np.asarray(compiled(mv, d)[0])
        err = max(np.max(np.abs(a[i] - r)) / np.max(np.abs(r)) for i, r in enumerate(refs))
        line += (f" | FD/jaxmj wall {theirs / ours:6.2f}, CPU {theirs_cpu / ours_cpu:6.2f}"
                 f" | max |dA|/|A| {err:.1e} | load {os.getloadavg()[0]:.1f}")
      print(line, flush=True)
      if base is not None:
        ab(name, batch, variant, base, (compiled, mv, d))


def ab(name: str, batch: int, variant: str, base, tree) -> None:
  """CPU time per state of the tree's compiled variant `tree` = (fn, m, d) and of the same
  variant of jaxmj at REF (`base` = (ref, its package)) on the same states, timed in turn."""
  ref, lib = base
  _, m, d = tree
  mb = lib.Model.from_xml_path(os.path.join(ROOT, "models", f"{name}.xml"))
  mb, per_state = variant_fn(mb, variant, lib)
  db = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), lib.make_data(mb))
  fields = ("time", "qpos", "qvel", "act", "ctrl", "qacc_warmstart")
  db = db.replace(**{f: getattr(d, f) for f in fields})
  t = time.perf_counter()
  fb = jitted(per_state).lower(mb, db).compile()
  compile_s = time.perf_counter() - t
  runs = {"tree": tree, ref: (fb, mb, db)}
  same = all(np.array_equal(x, y) for x, y in zip(tree[0](m, d), fb(mb, db)))
  cpu = {k: np.inf for k in runs}
  for _ in range(5):
    for k, (fn, mk, dk) in runs.items():
      cpu[k] = min(cpu[k], median_time(fn, mk, dk, n=1)[1] / batch)
  print(f"{name:16s} B={batch:4d} {variant:7s} A/B CPU ms/state: tree {cpu['tree'] * 1e3:8.4f}"
        f", {ref} {cpu[ref] * 1e3:8.4f}, {ref}/tree {cpu[ref] / cpu['tree']:5.2f} | {ref} "
        f"compile {compile_s:6.1f} s | bit-identical {same} | load {os.getloadavg()[0]:.1f}",
        flush=True)


def median_time(fn, *args, n: int = 3) -> tuple[float, float]:
  """Median wall time and process CPU time of fn(*args) over n calls after a warm-up."""
  jax.block_until_ready(fn(*args))
  wall, cpu = [], []
  for _ in range(n):
    t, c = time.perf_counter(), time.process_time()
    jax.block_until_ready(fn(*args))
    wall.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
  return float(np.median(wall)), float(np.median(cpu))


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--batch", type=int, nargs="+", default=[64])
  p.add_argument("--models", nargs="+", default=["cartpole", "double_pendulum", "box_stack"])
  p.add_argument("--variants", nargs="+", default=["exact"],
                 help="exact, batched, block<k>, chunk<k>, jacfwd, fast, fd (see the docstring)")
  p.add_argument("--no-mujoco", action="store_true", help="time jaxmj alone")
  p.add_argument("--settle", type=int, default=0, metavar="N",
                 help="perturb the state N steps from the initial one (default 0; humanoid_floor "
                      "lies on the floor in contact at 1500)")
  p.add_argument("--float32", action="store_true", help="jaxmj in float32 (default float64)")
  p.add_argument("--base", metavar="REF", help="A/B: also jaxmj at git REF (see the docstring)")
  args = p.parse_args()
  base = None
  if args.base:
    import sys
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from profile_step import export_base  # sets its XLA flag: both sides run with it

    export_base(args.base)
    import jaxmj_base

    base = (args.base, jaxmj_base)
  jax.config.update("jax_enable_x64", not args.float32)
  print(f"backend {jax.default_backend()}, {os.cpu_count()} cpus")
  for name in args.models:
    bench(name, args.batch, not args.no_mujoco, args.variants, base, args.settle)


if __name__ == "__main__":
  main()
