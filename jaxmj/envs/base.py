"""The environment API: Brax's shape (`reset`, `step`, `State`) on jaxmj's Model and Data.

Brax's trainers and wrappers read an environment through a handful of attributes:
`reset(rng) -> State`, `step(state, action) -> State`, `observation_size`, `action_size`,
`dt`, `backend`, `unwrapped`, and `sys`, the Model that its domain-randomization wrapper
swaps for one world's randomized copy under `vmap`. `Env` has exactly these, so Brax takes
it unchanged, and it needs no Brax: brax stays an optional dependency (`jaxmj[rl]`).

Everything is pure: `reset` and `step` read `self.sys` at trace time and return new
states, so they jit, vmap and differentiate (APG takes gradients through `step`).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

import jaxmj
from jaxmj.types import Data, Model


@struct.dataclass
class State:
  """One world's environment state (batched: every leaf gains a leading world axis).

  pipeline_state: jaxmj Data after the last physics step.
  obs: (observation_size,) observation.
  reward: () reward of the last step; done: () 1.0 where the episode ended (float, as Brax).
  metrics: per-step reward terms, summed per episode by the episode wrapper.
  info: bookkeeping: `rng` ((2,) uint32) the world's key for its next fresh start, plus
    what wrappers add (`steps`, `truncation`, ...).
  """

  pipeline_state: Data
  obs: jax.Array
  reward: jax.Array
  done: jax.Array
  metrics: dict[str, jax.Array] = struct.field(default_factory=dict)
  info: dict[str, Any] = struct.field(default_factory=dict)


# Brax's AutoResetWrapper resets a finished world to these cached entries (see Env.step)
_BRAX_FIRST = ("first_pipeline_state", "first_obs")


class Env:
  """A task on a jaxmj Model; subclasses define the task's four pieces:

  `initial_qpos_qvel(rng) -> (qpos (nq,), qvel (nv,))`: a random start (or, for more than
  positions and velocities, `initial_data(rng) -> Data` before forward);
  `observation(d) -> (observation_size,)`;
  `reward_done(d_prev, d, action) -> (reward (), done (), metrics {name: ()})`;
  `metric_names`: the keys of those metrics.

  Actions are in [-1, 1]^nu and map affinely onto each actuator's ctrlrange (clipped there).
  One env step is `n_frames` physics steps with the same control.
  """

  backend = "jaxmj"
  metric_names: tuple[str, ...] = ()
  episode_length = 1000  # the training default (env steps); the env itself never truncates

  def __init__(self, sys: Model, n_frames: int = 1):
    if n_frames < 1:
      raise ValueError(f"n_frames must be >= 1, got {n_frames}")
    self.sys = sys
    self.n_frames = n_frames

  # -- Brax's attributes ---------------------------------------------------------------------
  @property
  def dt(self) -> jax.Array:
    """Seconds of simulated time per env step."""
    return self.sys.opt.timestep * self.n_frames

  @property
  def observation_size(self) -> int:
    obs = jax.eval_shape(self.reset, jax.random.PRNGKey(0)).obs
    return obs.shape[-1]

  @property
  def action_size(self) -> int:
    return self.sys.nu

  @property
  def unwrapped(self) -> Env:
    return self

  # -- the functional API --------------------------------------------------------------------
  def reset(self, rng: jax.Array) -> State:
    """A fresh random start; `rng` is a (2,) key (vmap it for a batch)."""
    rng, key = jax.random.split(rng)
    d = jaxmj.forward(self.sys, self.initial_data(key))
    zero = jnp.zeros((), d.qpos.dtype)
    metrics = {k: zero for k in self.metric_names}
    return State(d, self.observation(d), zero, zero, metrics, {"rng": rng})

  def step(self, state: State, action: jax.Array) -> State:
    """`n_frames` physics steps with `action` ((action_size,) in [-1, 1])."""
    d0 = state.pipeline_state
    d = d0.replace(ctrl=self.control(action).astype(d0.ctrl.dtype))
    d = jax.lax.fori_loop(0, self.n_frames, lambda _, d: jaxmj.step(self.sys, d), d)
    reward, done, metrics = self.reward_done(d0, d, action)
    diverged = jnp.any(d.warning[jnp.array(_BAD)] > 0)
    done = jnp.where(diverged, True, done).astype(reward.dtype)
    info = dict(state.info)
    if all(k in info for k in _BRAX_FIRST):
      # Under Brax's own AutoResetWrapper a finished world restarts from
      # info['first_pipeline_state']: refreshing it every step gives fresh random starts
      # there too (at one reset's cost per step; jaxmj.envs.wrap only pays it when some
      # world finished).
      fresh = self.reset(info["rng"])
      info["rng"] = fresh.info["rng"]
      info["first_pipeline_state"], info["first_obs"] = fresh.pipeline_state, fresh.obs
    # keep metrics that wrappers added (Brax's EvalWrapper adds 'reward')
    return state.replace(pipeline_state=d, obs=self.observation(d), reward=reward,
                         done=done, metrics={**state.metrics, **metrics}, info=info)

  def control(self, action: jax.Array) -> jax.Array:
    """Action in [-1, 1] -> ctrl in each actuator's ctrlrange."""
    a = jnp.clip(action, -1.0, 1.0)
    limited = self.sys.actuator_ctrllimited.astype(bool)
    lo = jnp.where(limited, self.sys.actuator_ctrlrange[:, 0], -1.0)
    hi = jnp.where(limited, self.sys.actuator_ctrlrange[:, 1], 1.0)
    return lo + 0.5 * (a + 1.0) * (hi - lo)

  # -- the task ------------------------------------------------------------------------------
  def initial_data(self, rng: jax.Array) -> Data:
    qpos, qvel = self.initial_qpos_qvel(rng)
    return jaxmj.make_data(self.sys).replace(qpos=qpos, qvel=qvel)

  def initial_qpos_qvel(self, rng: jax.Array) -> tuple[jax.Array, jax.Array]:
    raise NotImplementedError

  def observation(self, d: Data) -> jax.Array:
    raise NotImplementedError

  def reward_done(self, d_prev: Data, d: Data, action: jax.Array):
    raise NotImplementedError


# jaxmj.step resets a diverged world itself; these counters tell the episode ended
_BAD = tuple(int(w) for w in (jaxmj.Warning.BADQPOS, jaxmj.Warning.BADQVEL, jaxmj.Warning.BADQACC))
