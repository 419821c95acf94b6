"""Where compile time goes: per pipeline stage, jaxmj (exact and fast arithmetic) beside MJX.

Each stage of `scripts/profile_step.py` (kinematics, mass, collision, velocity, constraint,
solver, forward, step) is jitted alone on a single world (batch 1: the MPC / notebook case;
`--batch B` vmaps it) and compiled with JAX's caches cleared; the table gives XLA's compile
as process CPU time (summed over XLA's threads, steadier than wall time when other processes
load the machine; wall in the JSON), the tracing + lowering wall time, and the compiled HLO's
instruction and `while` counts. Engines: `jaxmj` (opt.arithmetic "exact"), `jaxmj-fast`
("fast"), `mjx` (mujoco-mjx, impl="jax"), and with `--base REF` `base`: jaxmj at git revision
REF (profile_step's export), for an A/B of a change in one process. `--rounds R` compiles
every (stage, engine) R times, the engines interleaved round by round so that load from
other processes hits them alike, and gives the median (the JSON keeps every round).

`--spd-unroll N [N ...]` repeats the jaxmj engines with `linalg.SPD_UNROLL_MAX` set to each N
(the size up to which the Newton solve's column loop is unrolled) and, with `--run-batch B`,
also times the compiled vmapped step at batch B (median wall ms per call), so that the
threshold's cost in compile time can be weighed against its run time.

Usage:
  python scripts/compile_stages.py MODEL [--engines jaxmj jaxmj-fast mjx] [--stages ...]
      [--batch 1] [--spd-unroll 0 32] [--run-batch 256] [--base REF] [--rounds 3] [--x64]
      [--json PATH]
"""

import os

_XLA_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler=false"  # see bench.py
if _XLA_FLAG not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_XLA_FLAG}".strip()

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from profile_step import ENGINES, STAGES, batched, export_base, hlo_counts, settled_state  # noqa: E402


def compile_stage(fn, m, d) -> dict:
  """Compile cost and HLO size of jit(fn) at (m, d), with JAX's in-memory caches cleared."""
  jax.clear_caches()
  t0 = time.perf_counter()
  lowered = jax.jit(fn).lower(m, d)
  t1, c1 = time.perf_counter(), time.process_time()
  exe = lowered.compile()
  counts = hlo_counts(exe.as_text())
  return {"lower_s": t1 - t0, "compile_s": time.perf_counter() - t1,
          "compile_cpu_s": time.process_time() - c1, "hlo": sum(counts.values()),
          "while": counts["while"], "exe": exe}


def run_ms(exe, m, d, calls: int = 5) -> float:
  jax.block_until_ready(exe(m, d))
  samples = []
  for _ in range(calls):
    t0 = time.perf_counter()
    jax.block_until_ready(exe(m, d))
    samples.append(time.perf_counter() - t0)
  return 1e3 * statistics.median(samples)


def engine(name: str, path: str, md):
  """(m, d, stages) of an engine; jaxmj-fast is jaxmj with opt.arithmetic="fast"."""
  m, d, _, stages = ENGINES["jaxmj" if name.startswith("jaxmj-") else name](path, md)
  if name == "jaxmj-fast":
    m = m.replace(opt=m.opt.replace(arithmetic="fast"))
  return m, d, stages


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  p.add_argument("model")
  p.add_argument("--engines", nargs="+", default=["jaxmj", "jaxmj-fast", "mjx"],
                 choices=["jaxmj", "jaxmj-fast", "mjx", "base"])
  p.add_argument("--stages", nargs="+", choices=STAGES[:-1], default=STAGES[:-1])
  p.add_argument("--batch", type=int, default=1, help="1: a single world, unbatched")
  p.add_argument("--settle", type=int, default=200, help="mj_step calls before measuring")
  p.add_argument("--spd-unroll", nargs="+", type=int, help="SPD_UNROLL_MAX values to try")
  p.add_argument("--run-batch", type=int, help="also time the vmapped step at this batch")
  p.add_argument("--base", metavar="REF", help="also compile jaxmj at git revision REF")
  p.add_argument("--rounds", type=int, default=1, help="compiles per (stage, engine)")
  p.add_argument("--x64", action="store_true")
  p.add_argument("--json", metavar="PATH")
  args = p.parse_args()
  jax.config.update("jax_enable_x64", args.x64)
  jax.config.update("jax_enable_compilation_cache", False)
  from jaxmj import linalg
  if args.base:
    export_base(args.base)
    args.engines = [e for e in args.engines if e != "base"] + ["base"]

  _, md = settled_state(args.model, args.settle)
  print(f"{args.model}: batch {args.batch}, x64={args.x64}, load {os.getloadavg()[0]:.1f}")
  print(f"{'stage':<12}{'engine':<20}{'compile cpu s':>14}{'lower s':>9}{'hlo':>8}"
        f"{'while':>6}" + (f"{'ms @' + str(args.run_batch):>10}" if args.run_batch else ""))
  variants = [(e, None) for e in args.engines]
  if args.spd_unroll:
    variants = [(e, n) for e in args.engines for n in
                (args.spd_unroll if e.startswith("jaxmj") else [None])]
  results = []
  default_unroll = linalg.SPD_UNROLL_MAX
  runs = []  # (label, stage, fn, m, d, unroll)
  for name, unroll in variants:
    m, d1, stages = engine(name, args.model, md)
    d = d1 if args.batch == 1 else batched(d1, args.batch)
    label = name + ("" if unroll is None else f" spd<={unroll}")
    for stage in args.stages:
      fn = stages[stage] if args.batch == 1 else jax.vmap(stages[stage], in_axes=(None, 0))
      runs.append((label, stage, fn, m, d, unroll))
      if args.run_batch and stage == "step":
        db = batched(d1, args.run_batch)
        runs[-1] += (jax.vmap(stages[stage], in_axes=(None, 0)), db)
  rounds = {}
  for _ in range(args.rounds):
    for label, stage, fn, m, d, unroll, *batched_run in runs:
      linalg.SPD_UNROLL_MAX = default_unroll if unroll is None else unroll
      r = compile_stage(fn, m, d)
      exe = r.pop("exe")
      if batched_run:
        r["run_ms"] = run_ms(compile_stage(batched_run[0], m, batched_run[1])["exe"], m,
                             batched_run[1])
      rounds.setdefault((stage, label), []).append(r)
      del exe
  for (stage, label), rs in sorted(rounds.items(), key=lambda kv: STAGES.index(kv[0][0])):
    r = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
    results.append({"stage": stage, "engine": label, **r, "rounds": rs})
    print(f"{stage:<12}{label:<20}{r['compile_cpu_s']:>14.2f}{r['lower_s']:>9.2f}"
          f"{r['hlo']:>8.0f}{r['while']:>6.0f}"
          + (f"{r['run_ms']:>10.2f}" if "run_ms" in r else ""), flush=True)
  linalg.SPD_UNROLL_MAX = default_unroll
  print(f"(load after {os.getloadavg()[0]:.1f})")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"model": args.model, "batch": args.batch, "x64": args.x64,
                 "jax": jax.__version__, "results": results}, f, indent=1)


if __name__ == "__main__":
  main()
