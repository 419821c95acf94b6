"""Reverse mode through long rollouts: memory and cost, with and without checkpointing.

For models/humanoid_floor.xml (contacts, default solver settings; float32 unless --x64):

  memory   XLA's temporaries of the compiled gradient (`memory_analysis().temp_size_in_bytes`)
           of loss(qvel0) = |qpos_T|^2 + sum_t |qvel_t|^2 for each T in --nsteps, plain scan
           and `rollout(checkpoint=True)` (segments of ceil(sqrt T) steps), at each solver
           iteration count in --iterations.
  finite   the checkpointed gradient at the longest T, run: whether every entry is finite.
  ratio    CPU time of the gradient over that of the forward rollout alone (T = --ratio-steps,
           plain scan and checkpointed). The programs are compiled and warmed up, then timed
           in --repeats interleaved rounds (`interleaved`): per round and program the least
           of --calls back-to-back calls (this process's CPU time: waiting for a core does
           not count, and the least call is one no other process interrupted). Reported: the
           median time per program, the median of the per-round ratios with their range
           [least-most], and the ratio of the least times over all rounds. On the shared
           2-core machine per-round ratios spread by +-15-30% at load 6-13 (docs/gradients.md, Long
           horizons), so compare revisions with --base, whose tree-over-REF ratios per
           round (both timed in the same round) are the figures to read, over several runs;
           --cpu N pins the process to one core. On an accelerator the times are wall
           times (the host only waits for the device there).

  python scripts/bench_grad_memory.py [--nsteps 100 300 1000] [--iterations 1 50]
  python scripts/bench_grad_memory.py --ratio-only --model box_stack   (the ratio alone)
  python scripts/bench_grad_memory.py --ratio-only --base main --repeats 15   (A/B: REF's jaxmj
      beside this tree's in one process, the four programs in each round;
      `profile_step.export_base`)
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


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--model", default="humanoid_floor")
  p.add_argument("--nsteps", type=int, nargs="+", default=[100, 300, 1000])
  p.add_argument("--iterations", type=int, nargs="+", default=[1, 50])
  p.add_argument("--ratio-steps", type=int, default=50)
  p.add_argument("--repeats", type=int, default=3,
                 help="rounds of the ratio's interleaved timing (see `interleaved`)")
  p.add_argument("--calls", type=int, default=10,
                 help="back-to-back calls of each program per round (the least counts)")
  p.add_argument("--cpu", type=int, metavar="N",
                 help="pin this process (XLA's threads with it) to core N")
  p.add_argument("--x64", action="store_true")
  p.add_argument("--ratio-only", action="store_true", help="skip the memory reports")
  p.add_argument("--base", metavar="REF", help="with --ratio-only: also jaxmj at git REF")
  p.add_argument("--settle", type=int, default=0, metavar="STEPS",
                 help="start from MuJoCo's state after STEPS steps from the initial state")
  args = p.parse_args()
  jax.config.update("jax_enable_x64", args.x64)
  if args.cpu is not None:
    os.sched_setaffinity(0, {args.cpu})
  print(f"backend {jax.default_backend()}, {'float64' if args.x64 else 'float32'}, "
        f"model {args.model}")
  path = os.path.join(ROOT, "models", f"{args.model}.xml")
  start = settled(path, args.settle)
  m0 = jaxmj.Model.from_xml_path(path)
  d = start(jaxmj.make_data(m0))
  qvel = d.qvel + 0.1
  if args.ratio_only and args.base:
    report_ab(path, start, args.base, args.ratio_steps, args.repeats, args.calls)
    return
  if args.ratio_only:
    report_ratio(m0, d, qvel, args.ratio_steps, args.repeats, args.calls)
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
  report_ratio(m0, d, qvel, args.ratio_steps, args.repeats, args.calls)
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


def clock():
  """(timer, its name): this process's CPU time on the CPU (steadier than wall time on a
  loaded machine), wall time on an accelerator (the host only waits there; its CPU time says
  nothing of the device's)."""
  if jax.default_backend() == "cpu":
    return time.process_time, "CPU time"
  return time.perf_counter, f"wall time ({jax.default_backend()})"


def call_times(fn, x, calls):
  """Time (s, `clock`) of each of `calls` back-to-back calls of `fn(x)`."""
  timer = clock()[0]
  out = []
  for _ in range(calls):
    c = timer()
    jax.block_until_ready(fn(x))
    out.append(timer() - c)
  return out


def interleaved(fns, rounds, calls):
  """{key: (rounds,) least time (`clock`) of `calls` back-to-back calls per round}: every program
  timed once per round, in turn (every other round in reverse order, so that no program
  always follows the same one), so that a change of load hits all of them alike. The least
  of a round's calls is a call that no other process interrupted (on a loaded machine the
  others are longer by the cache lines and cycles another process took)."""
  for fn, x in fns.values():
    jax.block_until_ready(fn(x))  # compile and warm up
  best = {k: np.empty(rounds) for k in fns}
  order = list(fns)
  for r in range(rounds):
    for k in (order if r % 2 == 0 else order[::-1]):
      fn, x = fns[k]
      best[k][r] = min(call_times(fn, x, calls))
  return best


def spread(xs):
  """'median [least-most]' of `xs`."""
  return f"{np.median(xs):.2f} [{np.min(xs):.2f}-{np.max(xs):.2f}]"


def report_ratio(m, d, qvel, t, repeats, calls=10):
  """Gradient over forward CPU time, plain scan and checkpointed, interleaved rounds."""
  fns = {"forward": (jax.jit(make_loss(m, d, t, None)), qvel)}
  for ck in (None, True):
    fns[ck] = (jax.jit(jax.grad(make_loss(m, d, t, ck))), qvel)
  best = interleaved(fns, repeats, calls)
  fwd = best["forward"]
  for ck in (None, True):
    print(f"T {t} checkpoint {str(ck):5s}: forward {np.median(fwd) * 1e3:.2f} ms, gradient "
          f"{np.median(best[ck]) * 1e3:.2f} ms {clock()[1]} (medians of {repeats} rounds' least of "
          f"{calls} calls), ratio per round {spread(best[ck] / fwd)}, of least times "
          f"{best[ck].min() / fwd.min():.2f}", flush=True)


def report_ab(path, start, ref, t, repeats, calls=10):
  """Gradient over forward CPU time (plain scan) of this tree's jaxmj and of REF's: the four
  programs timed in turn for `repeats` rounds (see `interleaved`). Per revision: the median
  of the per-round ratios with their range, and the ratio of the least times; then the
  tree's times and ratio over REF's from the same rounds, whose median a load change
  between rounds does not shift."""
  from profile_step import export_base
  export_base(ref)
  import jaxmj_base
  fns = {}
  for name, lib in (("tree", jaxmj), (ref, jaxmj_base)):
    m = lib.Model.from_xml_path(path)
    d = start(lib.make_data(m))
    qvel = d.qvel + 0.1
    fns[name, "forward"] = (jax.jit(make_loss(m, d, t, None, lib)), qvel)
    fns[name, "gradient"] = (jax.jit(jax.grad(make_loss(m, d, t, None, lib))), qvel)
  best = interleaved(fns, repeats, calls)
  ratio = {}
  for name in ("tree", ref):
    fwd, grad = best[name, "forward"], best[name, "gradient"]
    ratio[name] = grad / fwd
    print(f"{name:>8s} T {t}: forward {np.median(fwd) * 1e3:.2f} ms, gradient "
          f"{np.median(grad) * 1e3:.2f} ms {clock()[1]} (medians of {repeats} rounds' least of "
          f"{calls} calls), ratio per round {spread(ratio[name])}, of least times "
          f"{grad.min() / fwd.min():.2f}", flush=True)
  rel = {k: best["tree", k] / best[ref, k] for k in ("forward", "gradient")}
  print(f"tree / {ref}, per round: forward {spread(rel['forward'])}, gradient "
        f"{spread(rel['gradient'])}, ratio {spread(ratio['tree'] / ratio[ref])}", flush=True)


def report_memory(m0, d, qvel, iterations, checkpoint, nstep):
  m = m0 if iterations is None else with_iterations(m0, iterations)
  start = time.perf_counter()
  comp = jax.jit(jax.grad(make_loss(m, d, nstep, checkpoint))).lower(qvel).compile()
  mib = comp.memory_analysis().temp_size_in_bytes / 2**20
  print(f"iterations {m.opt.iterations:3d} checkpoint {str(checkpoint):5s} T {nstep:5d}: "
        f"temp {mib:9.2f} MiB (compile {time.perf_counter() - start:.0f} s)", flush=True)

if __name__ == "__main__":
  main()
