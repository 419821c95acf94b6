"""Training with Brax's PPO, SAC and APG on jaxmj.envs tasks, with orbax checkpoints.

    result = train("CartpoleBalance", "ppo", num_timesteps=2_000_000, out_dir="runs/cp")
    policy = load_policy("runs/cp")              # in any later process
    action = policy(obs)                         # (action_size,) in [-1, 1]

A run directory holds `run.json` (task, algorithm, network and training settings, steps
so far, the evaluation curve), `checkpoint/` (the network parameters as an orbax PyTree in
Brax's checkpoint layout, with Brax's network config beside it) and `curve.png`.
`train(..., resume=True)` continues a run: PPO restores every parameter (policy, value and
observation normalizer); SAC its policy and normalizer (Brax's SAC starts its Q networks
and replay buffer anew); Brax's APG has no restore and is refused.

Needs `pip install jaxmj[rl]` (brax, optax, orbax-checkpoint, matplotlib).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time

import jax
import numpy as np

from jaxmj.envs import brax_compat
from jaxmj.envs.registry import load
from jaxmj.envs.wrappers import wrap

ALGOS = ("ppo", "sac", "apg")

# Settings per preset and algorithm. Keys are the algorithm's `train` arguments; "network"
# goes to its network factory (initializers and activations by their Brax names, so
# run.json and Brax's checkpoint config can hold them).
# "cpu" (the default) is sized for a few CPU cores, where compiling the env step dominates
# a short run: small networks; PPO's policy is a Gaussian whose mean starts near 0 (a
# pole left alone scores ~700, a random deterministic policy pushing one way ~190) with
# little noise, since exploring noise knocks the pole over. Each PPO update sees whole
# episodes (64 worlds x 50 unrolls x 20 steps = 1000 steps each): episodes that only end
# at the limit stay in lockstep across worlds, so an update fed one short time window of
# every world (512 x 10 steps) learns from the fallen-pole phase for ~95 updates in a
# row and forgets the upright one (such runs fell from 484 to ~220 and stayed there).
# "playground" is MuJoCo Playground's dm_control-suite PPO (2048 worlds, unroll 30, 16 x
# 32 minibatches, Brax's default networks; 60M steps on an accelerator).
PRESETS: dict[str, dict[str, dict]] = {
  "cpu": {
    "ppo": dict(num_envs=64, batch_size=64, unroll_length=20, num_minibatches=50,
                num_updates_per_batch=8, discounting=0.99, learning_rate=1e-3,
                entropy_cost=0.0, reward_scaling=1.0, normalize_observations=False,
                num_eval_envs=32, deterministic_eval=True,
                network=dict(policy_hidden_layer_sizes=(32, 32),
                             value_hidden_layer_sizes=(64, 64),
                             distribution_type="normal", noise_std_type="log",
                             init_noise_std=0.2, mean_kernel_init_fn="variance_scaling",
                             mean_kernel_init_kwargs=dict(scale=0.01, mode="fan_in",
                                                          distribution="uniform"))),
    "sac": dict(num_envs=64, batch_size=256, learning_rate=1e-3, discounting=0.99,
                grad_updates_per_step=8, min_replay_size=4096, max_replay_size=200_000,
                reward_scaling=1.0, normalize_observations=True, num_eval_envs=32,
                deterministic_eval=True, network=dict(hidden_layer_sizes=(64, 64))),
    # APG follows the gradient of 32 steps from wherever the worlds are: with short
    # episodes (restarts often) cart-pole worlds stay near the balance start, where that
    # gradient teaches holding the pole; in 1000-step episodes they spend most steps with
    # the pole fallen and swinging, and evaluation fell (540 -> 412 in 300 updates).
    "apg": dict(num_envs=64, horizon_length=32, learning_rate=3e-3, episode_length=200,
                normalize_observations=True, num_eval_envs=32, deterministic_eval=True,
                network=dict(hidden_layer_sizes=(64, 64))),
  },
  "playground": {
    "ppo": dict(num_envs=2048, batch_size=1024, unroll_length=30, num_minibatches=32,
                num_updates_per_batch=16, discounting=0.995, learning_rate=1e-3,
                entropy_cost=1e-2, reward_scaling=10.0, normalize_observations=True,
                num_resets_per_eval=10, num_eval_envs=128, network=dict()),
  },
}
DEFAULTS = PRESETS["cpu"]


def settings_for(algo: str, preset: str = "cpu", **overrides) -> tuple[dict, dict]:
  """(trainer arguments, network factory arguments) of `preset` for `algo`, with
  `overrides` on top (a `network` dict overrides single network arguments). Both are
  JSON-safe: initializers and activations stay names (see network_factory)."""
  if preset not in PRESETS:
    raise ValueError(f"unknown preset {preset!r}; one of {', '.join(PRESETS)}")
  if algo not in PRESETS[preset]:
    raise ValueError(f"preset {preset!r} has no {algo} settings")
  base = PRESETS[preset][algo]
  cfg = {**base, **overrides}
  if algo == "ppo":
    # Presets whose minibatch is one row per world (cpu: whole episodes per update) keep
    # that when only the number of worlds changes, so `--num-envs 256` works as it reads.
    if ("num_envs" in overrides and "batch_size" not in overrides
        and base["batch_size"] == base["num_envs"]):
      cfg["batch_size"] = cfg["num_envs"]
    rollouts = cfg["batch_size"] * cfg["num_minibatches"]
    if rollouts % cfg["num_envs"]:
      raise ValueError(
        f"PPO collects batch_size x num_minibatches = {cfg['batch_size']} x "
        f"{cfg['num_minibatches']} = {rollouts} rollouts per update, which num_envs="
        f"{cfg['num_envs']} does not divide; choose num_envs dividing {rollouts} or set "
        "batch_size/num_minibatches to match")
  net = {**base["network"], **cfg.pop("network", {})}
  return cfg, {k: tuple(v) if isinstance(v, list) else v for k, v in net.items()}


def network_factory(factory, net: dict):
  """`factory` with the network arguments `net`, Brax's names of initializers
  (`*_kernel_init_fn`) and activations turned into the functions."""
  from brax.training import networks as brax_networks

  kwargs = dict(net)
  for k, v in net.items():
    if k.endswith("kernel_init_fn") and isinstance(v, str):
      kwargs[k] = brax_networks.KERNEL_INITIALIZER[v]
    elif k == "activation" and isinstance(v, str):
      kwargs[k] = brax_networks.ACTIVATION[v]
  return functools.partial(factory, **kwargs)


@dataclasses.dataclass
class Result:
  """A finished run: where it is saved, its curve ((steps, eval return) pairs), the
  parameters and Brax's `make_policy` for them, and the wall time of this call."""

  out_dir: str
  curve: list
  params: tuple
  make_policy: object
  seconds: float


def _module(algo: str):
  if algo not in ALGOS:
    raise ValueError(f"unknown algorithm {algo!r}; one of {', '.join(ALGOS)}")
  import importlib

  brax_compat.install()
  train = importlib.import_module(f"brax.training.agents.{algo}.train")
  networks = importlib.import_module(f"brax.training.agents.{algo}.networks")
  return train, networks, getattr(networks, f"make_{algo}_networks")


def _run_json(out_dir: str) -> str:
  return os.path.join(out_dir, "run.json")


def _checkpoint_dir(out_dir: str) -> str:
  return os.path.join(os.path.abspath(out_dir), "checkpoint")


def _latest(out_dir: str) -> str:
  root = _checkpoint_dir(out_dir)
  steps = sorted(os.listdir(root)) if os.path.isdir(root) else []
  if not steps:
    raise FileNotFoundError(f"no checkpoint under {root}")
  return os.path.join(root, steps[-1])


def train(env_name: str, algo: str = "ppo", num_timesteps: int = 1_000_000,
          out_dir: str = "runs/run", resume: bool = False, seed: int = 0,
          num_evals: int = 10, episode_length: int | None = None,
          env_config: dict | None = None, progress: bool = True, preset: str = "cpu",
          **settings) -> Result:
  """Trains `algo` on the task `env_name` for `num_timesteps` env steps (more on resume),
  evaluating `num_evals` times; saves checkpoint, run.json and curve.png in `out_dir`.
  `settings` override PRESETS[preset][algo] (a `network` dict overrides single network
  arguments)."""
  from brax.training import checkpoint as brax_checkpoint

  train_mod, networks, factory = _module(algo)
  prior = None
  if resume:
    with open(_run_json(out_dir)) as f:
      prior = json.load(f)
    if prior["algo"] != algo or prior["env"] != env_name:
      raise ValueError(f"{out_dir} holds a {prior['algo']} run on {prior['env']}, not "
                       f"{algo} on {env_name}")
    if algo == "apg":
      raise ValueError("Brax's APG cannot restore parameters: --resume takes ppo or sac runs")
    env_config, episode_length = prior["env_config"], prior["episode_length"]
    preset = prior.get("preset", preset)
    settings = {**prior["settings"], **settings}
  env_config = env_config or {}
  env = load(env_name, **env_config)
  cfg, net_kwargs = settings_for(algo, preset, **settings)
  preset_length = cfg.pop("episode_length", None)  # a preset's, below the caller's
  episode_length = episode_length or preset_length or env.episode_length
  make_networks = network_factory(factory, net_kwargs)
  done_before = prior["steps"] if prior else 0
  curve = [tuple(p) for p in prior["curve"]] if prior else []

  kwargs = dict(cfg, environment=env, episode_length=episode_length, num_evals=num_evals,
                seed=seed + done_before, wrap_env_fn=wrap, network_factory=make_networks)
  if algo == "apg":
    per_update = cfg["num_envs"] * cfg["horizon_length"]
    kwargs["policy_updates"] = max(1, -(-num_timesteps // per_update))
    updates_per_eval = round(kwargs["policy_updates"] / max(num_evals - 1, 1))  # as Brax
  else:
    kwargs["num_timesteps"] = num_timesteps
  if resume and algo == "ppo":
    kwargs["restore_params"] = brax_checkpoint.load(_latest(out_dir))
  elif resume:
    kwargs["restore_checkpoint_path"] = _latest(out_dir)

  bar = _progress_bar(progress, num_timesteps, env_name, algo)
  t0 = time.perf_counter()

  def progress_fn(step, metrics):
    if "eval/episode_reward" not in metrics:
      return
    if algo == "apg":  # APG reports the evaluation's index; each follows updates_per_eval
      step = step * updates_per_eval * cfg["num_envs"] * cfg["horizon_length"]
    curve.append((done_before + int(step), float(metrics["eval/episode_reward"])))
    if bar is not None:
      bar.update(max(0, int(step) - bar.n))
      bar.set_postfix(eval_return=f"{curve[-1][1]:.1f}")

  with brax_compat.placing_pmap():
    make_policy, params, _ = train_mod.train(progress_fn=progress_fn, **kwargs)
  seconds = time.perf_counter() - t0
  if bar is not None:
    bar.close()
  steps = max([done_before + num_timesteps] + [s for s, _ in curve])  # Brax rounds up
  os.makedirs(out_dir, exist_ok=True)
  config = brax_checkpoint.network_config(env.observation_size, env.action_size,
                                          cfg["normalize_observations"], make_networks)
  brax_checkpoint.save(_checkpoint_dir(out_dir), steps, params, config)
  with open(_run_json(out_dir), "w") as f:
    json.dump({"env": env_name, "env_config": env_config, "algo": algo, "preset": preset,
               "seed": seed, "episode_length": episode_length, "steps": steps, "curve": curve,
               "settings": {**cfg, "network": net_kwargs}}, f, indent=1)
  plot_curve(curve, os.path.join(out_dir, "curve.png"), f"{algo} on {env_name}")
  return Result(out_dir, curve, params, make_policy, seconds)


def _progress_bar(enabled: bool, total: int, env_name: str, algo: str):
  if not enabled:
    return None
  from tqdm import tqdm

  return tqdm(total=total, desc=f"{algo} {env_name}", unit="step", unit_scale=True)


def plot_curve(curve, path: str, title: str) -> None:
  """Evaluation return against env steps, as a PNG."""
  import matplotlib

  matplotlib.use("Agg")
  import matplotlib.pyplot as plt

  fig, ax = plt.subplots(figsize=(6, 3.5))
  if curve:
    steps, returns = zip(*curve)
    ax.plot(steps, returns, marker="o")
  ax.set(xlabel="env steps", ylabel="eval episode return", title=title)
  ax.grid(alpha=0.3)
  fig.tight_layout()
  fig.savefig(path, dpi=100)
  plt.close(fig)


def load_policy(path: str, deterministic: bool = True):
  """The policy of the run saved at `path`: a jitted `policy(obs) -> action`, obs
  (observation_size,) or batched (B, observation_size). Deterministic by default (the
  mean action); with deterministic=False it takes `policy(obs, key)`."""
  from brax.training import checkpoint as brax_checkpoint

  with open(_run_json(path)) as f:
    run = json.load(f)
  _, networks, factory = _module(run["algo"])
  ckpt = _latest(path)
  network = brax_checkpoint.get_network(_network_config(ckpt), factory)
  params = brax_checkpoint.load(ckpt)
  if run["algo"] == "ppo":
    params = tuple(params)
  make_policy = networks.make_inference_fn(network)
  inference = make_policy(params, deterministic=deterministic)

  @jax.jit
  def policy(obs, key=None):
    key = jax.random.PRNGKey(0) if key is None else key
    return inference(obs, key)[0]

  return policy


def _network_config(ckpt: str):
  """Brax's load_config, minus its KeyError on initializers saved as null (brax 0.14.2
  writes `mean_kernel_init_fn: null` and then looks null up as a name): unset ones are
  left to the factory's default."""
  from brax.training import networks as brax_networks
  from ml_collections import config_dict

  with open(os.path.join(ckpt, "config.json")) as f:
    config = json.load(f)
  kwargs = {k: v for k, v in config["network_factory_kwargs"].items() if v is not None}
  for k, v in kwargs.items():
    if k == "activation":
      kwargs[k] = brax_networks.ACTIVATION[v]
    elif k.endswith("kernel_init_fn"):
      kwargs[k] = brax_networks.KERNEL_INITIALIZER[v]
  config["network_factory_kwargs"] = kwargs
  return config_dict.create(**config)


def evaluate(env_name: str, policy, episodes: int = 8, seed: int = 0,
             env_config: dict | None = None, episode_length: int | None = None) -> np.ndarray:
  """Returns of `episodes` episodes of `policy(obs) -> action` on fresh random starts."""
  env = load(env_name, **(env_config or {}))
  steps = episode_length or env.episode_length
  batched = wrap(env, episode_length=steps)

  @jax.jit
  def run(keys):
    state = batched.reset(keys)

    def f(carry, _):
      state, total, alive = carry
      state = batched.step(state, policy(state.obs))
      total = total + alive * state.reward
      return (state, total, alive * (1 - state.done)), None

    zero = state.reward * 0
    return jax.lax.scan(f, (state, zero, zero + 1), None, steps)[0][1]

  return np.asarray(run(jax.random.split(jax.random.PRNGKey(seed), episodes)))
