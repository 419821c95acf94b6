"""Training wrappers: batching, domain randomization, episode limits, action repeat and
auto-reset to fresh random starts.

`wrap(env, episode_length, action_repeat, randomization_fn)` has the signature and the
info keys of Brax's `brax.envs.training.wrap` (`steps`, `truncation`, `episode_done`,
`episode_metrics`), so Brax's trainers take it as `wrap_env_fn` and their evaluator reads
it. It differs in one way: a finished world restarts from a *new* random start (its own
key, advanced at every restart), where Brax's AutoResetWrapper restarts every world from
the one state it cached at the first reset. Fresh starts are computed only in steps where
some world finished (a `lax.cond` on the batch), so with synchronized episode limits they
cost almost nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import jax
import jax.numpy as jnp

from jaxmj.envs.base import State


class Wrapper:
  """Forwards the environment API to `env`; subclasses override reset and step."""

  def __init__(self, env):
    self.env = env

  def reset(self, rng: jax.Array) -> State:
    return self.env.reset(rng)

  def step(self, state: State, action: jax.Array) -> State:
    return self.env.step(state, action)

  @property
  def observation_size(self) -> int:
    return self.env.observation_size

  @property
  def action_size(self) -> int:
    return self.env.action_size

  @property
  def unwrapped(self):
    return self.env.unwrapped

  @property
  def backend(self) -> str:
    return self.unwrapped.backend

  def __getattr__(self, name):
    if name == "__setstate__":
      raise AttributeError(name)
    return getattr(self.env, name)


class VmapWrapper(Wrapper):
  """reset takes (B, 2) keys, step (B, ...) states and (B, action_size) actions."""

  def reset(self, rng: jax.Array) -> State:
    return jax.vmap(self.env.reset)(rng)

  def step(self, state: State, action: jax.Array) -> State:
    return jax.vmap(self.env.step)(state, action)


class DomainRandomizationVmapWrapper(Wrapper):
  """VmapWrapper where world i runs on its own Model: `randomization_fn(sys)` returns the
  batched Model and its in_axes (jaxmj.envs.randomization builds both)."""

  def __init__(self, env, randomization_fn: Callable):
    super().__init__(env)
    self._sys_v, self._in_axes = randomization_fn(self.env.unwrapped.sys)

  @contextlib.contextmanager
  def _with_sys(self, sys):
    env = self.env.unwrapped
    old, env.sys = env.sys, sys
    try:
      yield self.env
    finally:
      env.sys = old

  def reset(self, rng: jax.Array) -> State:
    def one(sys, rng):
      with self._with_sys(sys) as env:
        return env.reset(rng)
    return jax.vmap(one, in_axes=(self._in_axes, 0))(self._sys_v, rng)

  def step(self, state: State, action: jax.Array) -> State:
    def one(sys, s, a):
      with self._with_sys(sys) as env:
        return env.step(s, a)
    return jax.vmap(one, in_axes=(self._in_axes, 0, 0))(self._sys_v, state, action)


class EpisodeWrapper(Wrapper):
  """Counts steps, repeats each action `action_repeat` times (rewards summed) and ends an
  episode after `episode_length` env steps (info['truncation'] = 1 there unless the task
  itself ended it). Sums each metric per episode in info['episode_metrics']."""

  def __init__(self, env, episode_length: int, action_repeat: int = 1):
    super().__init__(env)
    self.episode_length = episode_length
    self.action_repeat = action_repeat

  def reset(self, rng: jax.Array) -> State:
    state = self.env.reset(rng)
    zero = jnp.zeros(rng.shape[:-1])
    state.info.update(steps=zero, truncation=zero, episode_done=zero)
    state.info["episode_metrics"] = {
      "sum_reward": zero, "length": zero, **{k: zero for k in state.metrics}}
    return state

  def step(self, state: State, action: jax.Array) -> State:
    def once(s, _):
      s = self.env.step(s, action)
      return s, s.reward

    state, rewards = jax.lax.scan(once, state, (), self.action_repeat)
    reward = jnp.sum(rewards, axis=0)
    steps = state.info["steps"] + self.action_repeat
    over = steps >= self.episode_length
    done = jnp.where(over, 1.0, state.done).astype(state.done.dtype)
    info = dict(state.info)
    info["truncation"] = jnp.where(over, 1 - state.done, 0.0).astype(state.done.dtype)
    info["steps"] = steps
    keep = 1 - info["episode_done"]
    totals = dict(info["episode_metrics"])
    totals["sum_reward"] = totals["sum_reward"] * keep + reward
    totals["length"] = totals["length"] * keep + self.action_repeat
    for k, v in state.metrics.items():
      if k in totals:  # not what outer wrappers added later (Brax's eval 'reward')
        totals[k] = totals[k] * keep + v
    info["episode_metrics"] = totals
    info["episode_done"] = done
    return state.replace(reward=reward, done=done, info=info)


class AutoResetWrapper(Wrapper):
  """Restarts every finished world from a fresh random start drawn with its own key."""

  def step(self, state: State, action: jax.Array) -> State:
    state = self.env.step(self.clear_done(state), action)
    return self.restart_done(state)

  @staticmethod
  def clear_done(state: State) -> State:
    """Before a step: the step counter of worlds that finished restarts, done clears."""
    info = dict(state.info)
    if "steps" in info:
      info["steps"] = jnp.where(state.done, jnp.zeros_like(info["steps"]), info["steps"])
    return state.replace(done=jnp.zeros_like(state.done), info=info)

  def restart_done(self, state: State) -> State:
    """After a step: worlds with done set get a fresh start (pipeline_state, obs, key);
    computed only when some world of the batch is done."""
    return jax.lax.cond(jnp.any(state.done > 0), self._restart, lambda s: s, state)

  def _restart(self, state: State) -> State:
    fresh = self.env.reset(state.info["rng"])
    where = lambda new, old: jnp.where(
      jnp.reshape(state.done > 0, state.done.shape + (1,) * (old.ndim - state.done.ndim)),
      new, old)
    info = dict(state.info, rng=where(fresh.info["rng"], state.info["rng"]))
    return state.replace(
      pipeline_state=jax.tree.map(where, fresh.pipeline_state, state.pipeline_state),
      obs=where(fresh.obs, state.obs), info=info)


def wrap(env, episode_length: int = 1000, action_repeat: int = 1,
         randomization_fn: Callable | None = None) -> Wrapper:
  """Brax's training wrapper stack (batch, episode limit, auto-reset) with fresh random
  restarts. `reset` then takes (B, 2) keys. Pass it to Brax's trainers as `wrap_env_fn`."""
  if randomization_fn is None:
    env = VmapWrapper(env)
  else:
    env = DomainRandomizationVmapWrapper(env, randomization_fn)
  return AutoResetWrapper(EpisodeWrapper(env, episode_length, action_repeat))
