"""Line-search loop trips in vmapped steps: how many passes the per-island search of
jaxmj/solver/linesearch.py makes, per line search, in a batch of worlds stepped together.

Each line search is a while loop whose every trip evaluates all islands at four step sizes;
under vmap a batch pays, per Newton iteration, the trips of its slowest world. The script
settles the model in MuJoCo C (`--settle` steps), perturbs qvel per world as
scripts/profile_step.py does, then runs `--steps` jitted, vmapped `jaxmj.step` calls and
records every line search through a host callback around the search loop:

  trips     loop trips per island (steps in which it was still searching), per search
  evals     cost evaluations MuJoCo would count (LSiter)
  ran out   searches that reached the `ls_iterations` budget

Reported: histogram, mean and max of per-island trips over searches that ran at least one
trip, the count that ran out, and the batch cost: per line-search call, the trips of the
slowest world (what the batched while loop executes), summed over the run.

`--base REF` measures jaxmj at git revision REF the same way (scripts/profile_step.py's
export), for a before/after in one process.

Usage:
  python scripts/ls_trips.py models/box_pile.xml [--batch 256] [--steps 20] [--settle 500]
      [--x64] [--base REF]
"""

import argparse
import collections
import importlib
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# profile_step sets XLA_FLAGS on import (read when the backend starts, after this)
from profile_step import batched, export_base, module_at, settled_state  # noqa: E402


def instrument(package: str, log: list):
  """Replaces `package.solver.linesearch.bounded_loop` (the search's early-exit loop) by one that
  counts trips per island and hands (trips, evals, final phase) of every search to `log`."""
  ls = module_at(package, "solver.linesearch")
  done_phase = ls._DONE

  def record(trips, evals, phase):
    log.append((np.asarray(trips), np.asarray(evals), np.asarray(phase)))
    return np.zeros(np.shape(trips)[:-1], np.int32)  # one per world under vmap

  def counting_loop(n, body, init, done, early_exit):
    # the search's carry is its state (phase, ..., evals at 5, ...), or (state, trips)
    nested = isinstance(init[0], tuple)
    state = (lambda c: c[0]) if nested else (lambda c: c)

    def step(c):
      k, st, trips = c
      return k + 1, body(k, st), trips + (state(st)[0] != done_phase).astype(jnp.int32)

    trips0 = jnp.zeros(state(init)[0].shape, jnp.int32)
    _, st, trips = jax.lax.while_loop(lambda c: (c[0] < n) & ~done(c[1]), step,
                                      (0, init, trips0))
    token = jax.pure_callback(record, jax.ShapeDtypeStruct((), jnp.int32), trips,
                              state(st)[5], state(st)[0], vmap_method="broadcast_all")
    # adding min(token, 0) = 0 to the result keeps the callback in the graph
    inner = (state(st)[0] + jnp.minimum(token, 0),) + tuple(state(st)[1:])
    return (inner,) + tuple(st[1:]) if nested else inner

  ls.bounded_loop = counting_loop


def run(package, path, md, batch, steps, seed=0):
  jaxmj = importlib.import_module(package)
  log = []
  instrument(package, log)
  m = jaxmj.Model.from_xml_path(path)
  dt = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
  d = jaxmj.make_data(m).replace(
    qpos=jnp.asarray(md.qpos, dt), qvel=jnp.asarray(md.qvel, dt),
    qacc_warmstart=jnp.asarray(md.qacc_warmstart, dt), time=jnp.asarray(md.time, dt))
  d = batched(d, batch, seed)
  step = jax.jit(jax.vmap(jaxmj.step, in_axes=(None, 0)))
  t0 = time.perf_counter()
  d = jax.block_until_ready(step(m, d))
  compile_s = time.perf_counter() - t0
  log.clear()
  c0 = time.process_time()
  for _ in range(steps):
    d = step(m, d)
  jax.block_until_ready(d)
  cpu = time.process_time() - c0
  finite = bool(np.all(np.isfinite(np.asarray(d.qpos))))
  return log, compile_s, cpu, finite, m.opt.ls_iterations


def summarize(name, log, compile_s, cpu, finite, lsmax):
  trips = np.concatenate([t.reshape(-1) for t, _, _ in log])
  evals = np.concatenate([e.reshape(-1) for _, e, _ in log])
  live = trips > 0
  t, e = trips[live], evals[live]
  batch_cost = sum(int(tr.max()) for tr, _, _ in log)  # slowest world per call
  hist = collections.Counter(np.minimum(t, 10).tolist())
  hist_s = " ".join(f"{k if k < 10 else '10+'}:{hist[k]}" for k in sorted(hist))
  print(f"  {name}: {len(log)} search calls, {t.size} live island searches; trips mean "
        f"{t.mean():.2f} max {t.max()}; evals mean {e.mean():.2f}; ran out "
        f"{int(np.sum(e >= lsmax))}; batch trips {batch_cost} "
        f"({batch_cost / max(len(log), 1):.2f}/call); CPU {cpu:.1f} s, compile {compile_s:.1f} s,"
        f" finite {finite}")
  print(f"    trips histogram: {hist_s}")


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  p.add_argument("model")
  p.add_argument("--batch", type=int, default=256)
  p.add_argument("--steps", type=int, default=20)
  p.add_argument("--settle", type=int, default=500)
  p.add_argument("--x64", action="store_true")
  p.add_argument("--base", metavar="REF")
  args = p.parse_args()
  jax.config.update("jax_enable_x64", args.x64)
  _, md = settled_state(args.model, args.settle)
  print(f"{args.model}: batch {args.batch}, {args.steps} steps after {args.settle} settle "
        f"steps (ncon {md.ncon}), x64={args.x64}")
  packages = ["jaxmj"]
  if args.base:
    export_base(args.base)
    packages.append("jaxmj_base")
  for package in packages:
    summarize(package, *run(package, args.model, md, args.batch, args.steps))


if __name__ == "__main__":
  main()
