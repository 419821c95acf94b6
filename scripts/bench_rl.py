"""PPO or SAC on cart-pole balance: jaxmj beside MuJoCo Playground's MJX cart-pole, same config.

    python scripts/bench_rl.py                      # both engines, one after the other
    python scripts/bench_rl.py --algo sac --num-timesteps 600000 --together
    python scripts/bench_rl.py --engines jaxmj --num-timesteps 1000000
    python scripts/bench_rl.py --task HalfCheetah --engines jaxmj --target 0   # locomotion

Each engine trains in its own process with Brax's PPO (or SAC) and the settings of
`jaxmj train --algo ALGO --preset PRESET` (--preset cpu by default; the same for both; both
balance tasks are dm_control's: same model, start distribution and reward, returns up to
1000). The script prints, per engine,
the evaluation curve (env steps, seconds since training started, return), the wall time
and env steps to the first evaluation at or above --target, and the ratio of the two
times (below 1: jaxmj reaches it sooner). Times include compilation, as a user waits
for them. float32, CPU or whatever jax finds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def _settings(algo: str, preset: str) -> tuple[dict, dict]:
  """`jaxmj train --algo ALGO --preset PRESET`'s settings (jaxmj.envs.train.PRESETS): the
  trainer's arguments and the network's."""
  from jaxmj.envs.train import settings_for

  return settings_for(algo, preset)


def _train(engine: str, task: str, num_timesteps: int, num_evals: int, seed: int,
           preset: str, algo: str) -> dict:
  import importlib

  import jax

  from jaxmj.envs import brax_compat

  brax_compat.install()
  train = importlib.import_module(f"brax.training.agents.{algo}.train")
  networks = importlib.import_module(f"brax.training.agents.{algo}.networks")

  if engine == "jaxmj":
    import jaxmj.envs

    env, wrap = jaxmj.envs.load(task), jaxmj.envs.wrap
  else:
    from mujoco_playground import registry, wrapper

    env = registry.load(task, config_overrides={"impl": "jax"})
    wrap = wrapper.wrap_for_brax_training
  from jaxmj.envs.train import network_factory

  settings, network = _settings(algo, preset)
  curve, t0 = [], time.perf_counter()

  def progress(step, metrics):
    curve.append((int(step), time.perf_counter() - t0, float(metrics["eval/episode_reward"])))
    print(f"  {engine:10s} {step:>10,d} steps {curve[-1][1]:7.1f} s  return "
          f"{curve[-1][2]:8.1f}", file=sys.stderr, flush=True)

  train.train(environment=env, num_timesteps=num_timesteps, num_evals=num_evals, seed=seed,
              wrap_env_fn=wrap, progress_fn=progress,
              network_factory=network_factory(getattr(networks, f"make_{algo}_networks"),
                                              network),
              episode_length=1000, **settings)
  return {"engine": engine, "backend": jax.default_backend(), "curve": curve,
          "seconds": time.perf_counter() - t0}


def _first_at(curve, target):
  return next(((s, t) for s, t, r in curve if r >= target), None)


def _report(results: dict, targets: list[float]) -> None:
  for engine, r in results.items():
    best = max(c[2] for c in r["curve"])
    print(f"{engine:10s} ({r['backend']}): best eval {best:.1f}; total "
          f"{r['curve'][-1][0]:,} steps in {r['seconds']:.1f} s")
    for target in targets:
      hit = _first_at(r["curve"], target)
      print(f"  return >= {target:g}: " + (f"after {hit[0]:,} steps, {hit[1]:.1f} s" if hit
                                            else "never reached"))
  if len(results) < 2:
    return
  for target in targets:
    hits = [_first_at(results[e]["curve"], target) for e in ("jaxmj", "playground")]
    if all(hits):
      print(f"time to return {target:g}: jaxmj/playground = {hits[0][1] / hits[1][1]:.2f}x "
            "(below 1: jaxmj sooner)")
  total = results["jaxmj"]["seconds"] / results["playground"]["seconds"]
  print(f"whole run wall time: jaxmj/playground = {total:.2f}x")


def main() -> int:
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  p.add_argument("--engines", nargs="+", default=["jaxmj", "playground"],
                 choices=["jaxmj", "playground"])
  p.add_argument("--task", default="CartpoleBalance", help="jaxmj.envs task (Playground: "
                 "same name; CartpoleBalance exists in both)")
  p.add_argument("--num-timesteps", type=int, default=1_000_000)
  p.add_argument("--num-evals", type=int, default=9)
  p.add_argument("--target", type=float, nargs="+", default=[700.0, 950.0],
                 help="returns to time (cart-pole: pushing nothing returns ~700, balancing "
                      "~1000)")
  p.add_argument("--together", action="store_true",
                 help="train the engines at the same time (on a machine shared with other "
                      "jobs both then see the same load)")
  p.add_argument("--preset", default="cpu", choices=["cpu", "playground"],
                 help="settings of `jaxmj train --preset` (the same for both engines)")
  p.add_argument("--algo", default="ppo", choices=["ppo", "sac"])
  p.add_argument("--seed", type=int, default=0)
  p.add_argument("--child", default=None, help=argparse.SUPPRESS)
  args = p.parse_args()
  if args.child:
    print(json.dumps(_train(args.child, args.task, args.num_timesteps, args.num_evals,
                            args.seed, args.preset, args.algo)))
    return 0
  settings, network = _settings(args.algo, args.preset)
  print(f"{args.algo.upper()} ({args.preset} preset) on {args.task}: "
        f"{args.num_timesteps:,} env steps, {args.num_evals} evals, "
        f"settings {settings}, networks {network}")
  results = {}

  def start(engine):
    return subprocess.Popen([sys.executable, __file__, "--child", engine, "--task", args.task,
                             "--num-timesteps", str(args.num_timesteps), "--num-evals",
                             str(args.num_evals), "--seed", str(args.seed),
                             "--preset", args.preset, "--algo", args.algo],
                            stdout=subprocess.PIPE, text=True, env=os.environ)

  running = [(e, start(e)) for e in args.engines] if args.together else []
  for engine in args.engines:
    proc = dict(running)[engine] if args.together else start(engine)
    out, _ = proc.communicate()
    if proc.returncode:
      print(f"{engine}: failed (exit {proc.returncode})")
      continue
    results[engine] = json.loads(out.strip().splitlines()[-1])
  _report(results, args.target)
  return 0


if __name__ == "__main__":
  sys.exit(main())
