"""Reverse mode through long rollouts: memory and cost, with and without checkpointing.

For models/humanoid_floor.xml (contacts, default solver settings; float32 unless --x64):

  memory   XLA's temporaries of the compiled gradient (`memory_analysis().temp_size_in_bytes`)
           of loss(qvel0) = |qpos_T|^2 + sum_t |qvel_t|^2 for each T in --nsteps, plain scan
           and `rollout(checkpoint=True)` (segments of ceil(sqrt T) steps), at each solver
           iteration count in --iterations.
  finite   the checkpointed gradient at the longest T, run: whether every entry is finite.
  ratio    time of the gradient over that of the forward rollout alone (T = --ratio-steps,
           after a warm-up), plain and checkpointed: wall time (median of --repeats) and this
           process's CPU time (least of --repeats; on a loaded machine the steadier of the two,
           as waiting for a core does not count).

  python scripts/bench_grad_memory.py [--nsteps 100 300 1000] [--iterations 1 50]
  python scripts/bench_grad_memory.py --ratio-only --model box_stack   (the ratio alone)
  python scripts/bench_grad_memory.py --ratio-only --base main   (A/B: REF's jaxmj beside this
      tree's in one process, timed alternately; `profile_step.export_base`)
  python scripts/bench_grad_memory.py --ratio-only --settle 300   (start from the state MuJoCo
      reaches after 300 steps from rest: humanoid_floor lies in contact, where from the
      model's initial state it falls without contact through the first ~70 steps)
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


def make_loss(m, d, nstep, checkpoint, lib=jaxmj):
  def loss(qvel):
    final, traj = lib.rollout(m, d.replace(qvel=qvel), nstep=nstep, checkpoint=checkpoint)
    return jnp.sum(final.qpos ** 2) + jnp.sum(traj["qvel"] ** 2)
  return loss


def with_iterations(m, iterations):
  return m.replace(opt=m.opt.replace(iterations=iterations))


def run_times(fn, *args, n=3):
  """(median wall time, least CPU time of this process) of `n` calls after a warm-up."""
  jax.block_until_ready(fn(*args))
  wall, cpu = [], []
  for _ in range(n):
    t, c = time.perf_counter(), time.process_time()
    jax.block_until_ready(fn(*args))
    wall.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
  return float(np.median(wall)), float(np.min(cpu))


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--model", default="humanoid_floor")
  p.add_argument("--nsteps", type=int, nargs="+", default=[100, 300, 1000])
  p.add_argument("--iterations", type=int, nargs="+", default=[1, 50])
  p.add_argument("--ratio-steps", type=int, default=50)
  p.add_argument("--repeats", type=int, default=3)
  p.add_argument("--x64", action="store_true")
  p.add_argument("--ratio-only", action="store_true", help="skip the memory reports")
  p.add_argument("--base", metavar="REF", help="with --ratio-only: also jaxmj at git REF")
  p.add_argument("--settle", type=int, default=0, metavar="STEPS",
                 help="start from MuJoCo's state after STEPS steps from the initial state")
  args = p.parse_args()
  jax.config.update("jax_enable_x64", args.x64)
  print(f"backend {jax.default_backend()}, {'float64' if args.x64 else 'float32'}, "
        f"model {args.model}")
  path = os.path.join(ROOT, "models", f"{args.model}.xml")
  start = settled(path, args.settle)
  m0 = jaxmj.Model.from_xml_path(path)
  d = start(jaxmj.make_data(m0))
  qvel = d.qvel + 0.1
  if args.ratio_only and args.base:
    report_ab(path, start, args.base, args.ratio_steps, args.repeats)
    return
  if args.ratio_only:
    report_ratio(m0, d, qvel, args.ratio_steps, args.repeats)
    return
  longest, shortest = max(args.nsteps), min(args.nsteps)
  # most telling first (a run cut short by a time limit still reports them): the shortest
  # and longest horizon at the model's own iterations, the gradient's cost and finiteness,
  # then the other horizons and iteration counts
  configs = [(None, ck, t) for t in (shortest, longest) for ck in (None, True)]
  for it, ck, t in configs:
    report_memory(m0, d, qvel, it, ck, t)
  g = jax.jit(jax.grad(make_loss(m0, d, longest, True)))(qvel)
  print(f"checkpointed gradient through {longest} steps finite: {bool(np.all(np.isfinite(g)))}, "
        f"|g| = {float(jnp.linalg.norm(g)):.3e}", flush=True)
  report_ratio(m0, d, qvel, args.ratio_steps, args.repeats)
  rest = [(None, ck, t) for t in args.nsteps if t not in (shortest, longest)
          for ck in (None, True)]
  rest += [(it, ck, shortest) for it in args.iterations for ck in (None, True)]
  for it, ck, t in rest:
    report_memory(m0, d, qvel, it, ck, t)


def settled(path, nstep):
  """Data -> Data with qpos and qvel of MuJoCo's state after `nstep` steps from rest."""
  if not nstep:
    return lambda d: d
  import mujoco
  mm = mujoco.MjModel.from_xml_path(path)
  md = mujoco.MjData(mm)
  mujoco.mj_step(mm, md, nstep)
  print(f"start: MuJoCo's state after {nstep} steps, {md.ncon} contacts, nefc {md.nefc}")
  return lambda d: d.replace(qpos=d.qpos.at[:].set(md.qpos), qvel=d.qvel.at[:].set(md.qvel))


def report_ratio(m, d, qvel, t, repeats):
  fwd, fwd_cpu = run_times(jax.jit(make_loss(m, d, t, None)), qvel, n=repeats)
  for ck in (None, True):
    grad, grad_cpu = run_times(jax.jit(jax.grad(make_loss(m, d, t, ck))), qvel, n=repeats)
    print(f"T {t} checkpoint {str(ck):5s}: forward {fwd * 1e3:.1f} ms, gradient "
          f"{grad * 1e3:.1f} ms, ratio {grad / fwd:.2f} (CPU time {fwd_cpu * 1e3:.1f} ms, "
          f"{grad_cpu * 1e3:.1f} ms, ratio {grad_cpu / fwd_cpu:.2f})", flush=True)


def report_ab(path, start, ref, t, repeats):
  """Gradient over forward CPU time (plain scan) of this tree's jaxmj and of REF's, the four
  programs timed in turn, `repeats` rounds (least per program)."""
  from profile_step import export_base
  export_base(ref)
  import jaxmj_base
  fns = {}
  for name, lib in (("tree", jaxmj), (ref, jaxmj_base)):
    m = lib.Model.from_xml_path(path)
    d = start(lib.make_data(m))
    qvel = d.qvel + 0.1
    for kind, f in (("forward", make_loss(m, d, t, None, lib)),
                    ("gradient", jax.grad(make_loss(m, d, t, None, lib)))):
      fns[name, kind] = (jax.jit(f), qvel)
      jax.block_until_ready(fns[name, kind][0](qvel))
  cpu = {k: np.inf for k in fns}
  for _ in range(repeats):
    for k, (fn, x) in fns.items():
      cpu[k] = min(cpu[k], run_times(fn, x, n=1)[1])
  for name in ("tree", ref):
    fwd, grad = cpu[name, "forward"], cpu[name, "gradient"]
    print(f"{name:>8s} T {t}: forward {fwd * 1e3:.1f} ms, gradient {grad * 1e3:.1f} ms CPU time, "
          f"ratio {grad / fwd:.2f}", flush=True)


def report_memory(m0, d, qvel, iterations, checkpoint, nstep):
  m = m0 if iterations is None else with_iterations(m0, iterations)
  start = time.perf_counter()
  comp = jax.jit(jax.grad(make_loss(m, d, nstep, checkpoint))).lower(qvel).compile()
  mib = comp.memory_analysis().temp_size_in_bytes / 2**20
  print(f"iterations {m.opt.iterations:3d} checkpoint {str(checkpoint):5s} T {nstep:5d}: "
        f"temp {mib:9.2f} MiB (compile {time.perf_counter() - start:.0f} s)", flush=True)

if __name__ == "__main__":
  main()
