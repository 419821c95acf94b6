"""gymnasium adapters: numpy in, numpy out, for SB3/CleanRL-style code.

`JaxmjVectorEnv` is a `gymnasium.vector.VectorEnv` over num_envs worlds stepped together in
one jitted call. It resets in the same step (`metadata["autoreset_mode"]` is SAME_STEP): a
finished world's returned observation is already its next episode's first, and
`info["final_obs"]` (num_envs, obs) holds the last one where `info["_final_obs"]` is True.
`JaxmjEnv` is one world as a plain `gymnasium.Env` (what gymnasium's env checker takes).
Episodes end with `terminated` when the task ends them and `truncated` at the episode limit.
"""

from __future__ import annotations

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv

from jaxmj.envs.wrappers import AutoResetWrapper, EpisodeWrapper, VmapWrapper


def _spaces(env):
  obs = gymnasium.spaces.Box(-np.inf, np.inf, (env.observation_size,), np.float32)
  act = gymnasium.spaces.Box(-1.0, 1.0, (env.action_size,), np.float32)
  return obs, act


class _Stepper:
  """The jitted batched reset and step shared by both adapters."""

  def __init__(self, env, episode_length: int | None):
    self.episode = EpisodeWrapper(VmapWrapper(env), episode_length or env.episode_length)
    self.autoreset = AutoResetWrapper(self.episode)
    self.reset = jax.jit(self.episode.reset)
    self.step = jax.jit(self._step)

  def _step(self, state, action):
    state = self.episode.step(AutoResetWrapper.clear_done(state), action)
    done, trunc = state.done > 0, state.info["truncation"] > 0
    final_obs = state.obs
    return self.autoreset.restart_done(state), final_obs, done & ~trunc, trunc


def _keys(seed: int, n: int) -> jax.Array:
  return jax.random.split(jax.random.PRNGKey(seed), n)


class JaxmjVectorEnv(VectorEnv):
  """num_envs worlds of a jaxmj.envs task; actions (num_envs, action_size) in [-1, 1]."""

  metadata = {"autoreset_mode": AutoresetMode.SAME_STEP}

  def __init__(self, env, num_envs: int, episode_length: int | None = None, seed: int = 0):
    self.env, self.num_envs = env, num_envs
    self.single_observation_space, self.single_action_space = _spaces(env)
    self.observation_space = gymnasium.vector.utils.batch_space(
      self.single_observation_space, num_envs)
    self.action_space = gymnasium.vector.utils.batch_space(self.single_action_space, num_envs)
    self._run = _Stepper(env, episode_length)
    self._seed = seed
    self._state = None

  def reset(self, *, seed: int | None = None, options=None):
    if seed is not None:
      self._seed = seed
    self._state = self._run.reset(_keys(self._seed, self.num_envs))
    self._seed += 1  # a later reset without a seed starts elsewhere
    return np.asarray(self._state.obs, np.float32), {}

  def step(self, actions):
    if self._state is None:
      raise RuntimeError("call reset() before step()")
    actions = jnp.asarray(np.asarray(actions, np.float32).reshape(self.action_space.shape))
    self._state, final_obs, term, trunc = self._run.step(self._state, actions)
    term, trunc = np.asarray(term), np.asarray(trunc)
    info = {}
    if np.any(term | trunc):
      info = {"final_obs": np.asarray(final_obs, np.float32), "_final_obs": term | trunc}
    return (np.asarray(self._state.obs, np.float32),
            np.asarray(self._state.reward, np.float32), term, trunc, info)


class JaxmjEnv(gymnasium.Env):
  """One world of a jaxmj.envs task as a gymnasium.Env (no autoreset: call reset)."""

  metadata = {"render_modes": []}

  def __init__(self, env, episode_length: int | None = None):
    self.env = env
    self.observation_space, self.action_space = _spaces(env)
    self._run = _Stepper(env, episode_length)
    self._state = None

  def reset(self, *, seed: int | None = None, options=None):
    super().reset(seed=seed)
    key = int(self.np_random.integers(2**31))
    self._state = self._run.reset(_keys(key, 1))
    return np.asarray(self._state.obs[0], np.float32), {}

  def step(self, action):
    action = jnp.asarray(np.asarray(action, np.float32).reshape(1, -1))
    self._state, final_obs, term, trunc = self._run.step(self._state, action)
    return (np.asarray(final_obs[0], np.float32), float(self._state.reward[0]),
            bool(term[0]), bool(trunc[0]), {})
