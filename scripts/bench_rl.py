"""PPO on cart-pole balance: jaxmj beside MuJoCo Playground's MJX cart-pole, same config.

    python scripts/bench_rl.py                      # both engines, one after the other
    python scripts/bench_rl.py --engines jaxmj --num-timesteps 1000000
    python scripts/bench_rl.py --task HalfCheetah --engines jaxmj --target 0   # locomotion

Each engine trains in its own process with Brax's PPO and the settings below (the same
for both; Playground's balance task has dm_control's reward, returns up to 1000 like
ours). The script prints, per engine, the evaluation curve (env steps, seconds since
training started, return), the wall time and env steps to the first evaluation at or
above --target, and the ratio of the two times (below 1: jaxmj reaches it sooner).
Times include compilation, as a user waits for them. float32, CPU or whatever jax finds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

PPO = dict(num_envs=128, batch_size=128, unroll_length=16, num_minibatches=8,
           num_updates_per_batch=8, discounting=0.99, learning_rate=1e-3, entropy_cost=1e-3,
           reward_scaling=10.0, normalize_observations=True, num_eval_envs=32,
           deterministic_eval=True, episode_length=1000)
NETWORK = dict(policy_hidden_layer_sizes=(64, 64), value_hidden_layer_sizes=(64, 64))


def _train(engine: str, task: str, num_timesteps: int, num_evals: int, seed: int) -> dict:
  import functools

  import jax

  from jaxmj.envs import brax_compat

  brax_compat.install()
  from brax.training.agents.ppo import networks, train

  if engine == "jaxmj":
    import jaxmj.envs

    env, wrap = jaxmj.envs.load(task), jaxmj.envs.wrap
  else:
    from mujoco_playground import registry, wrapper

    env = registry.load(task, config_overrides={"impl": "jax"})
    wrap = wrapper.wrap_for_brax_training
  curve, t0 = [], time.perf_counter()

  def progress(step, metrics):
    curve.append((int(step), time.perf_counter() - t0, float(metrics["eval/episode_reward"])))
    print(f"  {engine:10s} {step:>10,d} steps {curve[-1][1]:7.1f} s  return "
          f"{curve[-1][2]:8.1f}", file=sys.stderr, flush=True)

  train.train(environment=env, num_timesteps=num_timesteps, num_evals=num_evals, seed=seed,
              wrap_env_fn=wrap, progress_fn=progress,
              network_factory=functools.partial(networks.make_ppo_networks, **NETWORK),
              **PPO)
  return {"engine": engine, "backend": jax.default_backend(), "curve": curve,
          "seconds": time.perf_counter() - t0}


def _first_at(curve, target):
  return next(((s, t) for s, t, r in curve if r >= target), None)


def main() -> int:
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  p.add_argument("--engines", nargs="+", default=["jaxmj", "playground"],
                 choices=["jaxmj", "playground"])
  p.add_argument("--task", default="CartpoleBalance", help="jaxmj.envs task (Playground: "
                 "same name; CartpoleBalance exists in both)")
  p.add_argument("--num-timesteps", type=int, default=1_000_000)
  p.add_argument("--num-evals", type=int, default=9)
  p.add_argument("--target", type=float, default=700.0)
  p.add_argument("--seed", type=int, default=0)
  p.add_argument("--child", default=None, help=argparse.SUPPRESS)
  args = p.parse_args()
  if args.child:
    print(json.dumps(_train(args.child, args.task, args.num_timesteps, args.num_evals,
                            args.seed)))
    return 0
  print(f"PPO on {args.task}: {args.num_timesteps:,} env steps, {args.num_evals} evals, "
        f"settings {PPO}, networks {NETWORK}")
  results = {}
  for engine in args.engines:
    out = subprocess.run([sys.executable, __file__, "--child", engine, "--task", args.task,
                          "--num-timesteps", str(args.num_timesteps), "--num-evals",
                          str(args.num_evals), "--seed", str(args.seed)],
                         stdout=subprocess.PIPE, text=True, env=os.environ)
    if out.returncode:
      print(f"{engine}: failed (exit {out.returncode})")
      continue
    results[engine] = r = json.loads(out.stdout.strip().splitlines()[-1])
    hit = _first_at(r["curve"], args.target)
    best = max(c[2] for c in r["curve"])
    reached = (f"return >= {args.target:g} after {hit[0]:,} steps, {hit[1]:.1f} s"
               if hit else f"never reached {args.target:g}")
    print(f"{engine:10s} ({r['backend']}): {reached}; best eval {best:.1f}; total "
          f"{r['curve'][-1][0]:,} steps in {r['seconds']:.1f} s")
  if len(results) == 2:
    hits = [_first_at(results[e]["curve"], args.target) for e in ("jaxmj", "playground")]
    if all(hits):
      print(f"time to return {args.target:g}: jaxmj/playground = "
            f"{hits[0][1] / hits[1][1]:.2f}x (below 1: jaxmj sooner)")
    total = results["jaxmj"]["seconds"] / results["playground"]["seconds"]
    print(f"whole run wall time: jaxmj/playground = {total:.2f}x")
  return 0


if __name__ == "__main__":
  sys.exit(main())
