"""jaxmj.envs: batched reset and step, Brax's wrappers and trainers, fresh random restarts,
domain randomization."""


import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmj
import jaxmj.envs as E


@pytest.fixture(scope="module")
def cartpole():
  return E.load("CartpoleBalance")


def test_registry_lists_and_loads_every_task():
  assert {"CartpoleBalance", "CartpoleSwingup", "PendulumSwingup"} <= set(E.names())
  with pytest.raises(ValueError, match="unknown task 'Nope'"):
    E.load("Nope")


def test_vmapped_reset_and_step_over_1024_worlds(cartpole):
  env = cartpole
  keys = jax.random.split(jax.random.PRNGKey(0), 1024)
  state = jax.jit(jax.vmap(env.reset))(keys)
  act = jnp.zeros((1024, env.action_size))
  state = jax.jit(jax.vmap(env.step))(state, act)
  assert state.obs.shape == (1024, env.observation_size) == (1024, 5)
  assert state.reward.shape == state.done.shape == (1024,)
  assert np.all(np.isfinite(state.obs)) and np.all(np.asarray(state.done) == 0)
  # every world starts elsewhere
  assert len(np.unique(np.asarray(state.pipeline_state.qpos[:, 1]))) == 1024
  assert 0 < float(state.reward.min()) and float(state.reward.max()) <= 1
  # the pole's angle in the observation is the model's (analytic: cos and sin of qpos)
  np.testing.assert_allclose(state.obs[:, 1], np.cos(state.pipeline_state.qpos[:, 1]))


def _restarts(wrapped, steps, nworld):
  """Steps `wrapped` with zero actions; returns per-step done flags and the pole angles of
  the states each world was restarted at."""
  state = jax.jit(wrapped.reset)(jax.random.split(jax.random.PRNGKey(1), nworld))
  first = np.asarray(state.pipeline_state.qpos[:, 1])

  @jax.jit
  def run(state):
    def f(s, _):
      s = wrapped.step(s, jnp.zeros((nworld, 1)))
      return s, (s.done, s.pipeline_state.qpos[:, 1], s.info["steps"])
    return jax.lax.scan(f, state, None, steps)

  return first, run(state)[1]


@pytest.mark.parametrize("which,length", [("brax", 1000), ("jaxmj", 50)])
def test_wrapped_env_restarts_every_finished_world_from_a_new_random_start(
    cartpole, which, length):
  if which == "brax":  # the check: Brax's own wrapper, 2000 steps
    training = pytest.importorskip("brax.envs.wrappers.training")
    wrapped = training.wrap(cartpole, episode_length=length)
  else:
    wrapped = E.wrap(cartpole, episode_length=length)
  nworld = 8
  first, (done, theta, steps) = _restarts(wrapped, 2 * length + 20, nworld)
  done, theta = np.asarray(done), np.asarray(theta)
  assert np.array_equal(done.sum(0), np.full(nworld, 2))  # ended at the two limits
  assert np.all(done[[length - 1, 2 * length - 1]] == 1)
  # after a done step the world holds its restart state: new each time, never the first
  starts = theta[[length - 1, 2 * length - 1]]
  assert np.all(np.abs(starts) <= 0.1)  # drawn from the task's start distribution
  assert len(np.unique(np.concatenate([first, starts.ravel()]))) == 3 * nworld
  assert np.asarray(steps)[length].max() == 1  # the step counter restarted



def test_cartpole_balance_reward_is_dm_control_s(cartpole):
  """Our reward on random states and actions equals dm_control's cartpole balance reward,
  computed with dm_control's own `rewards.tolerance` terms (dm_control.suite itself does not
  load under mujoco 4), so returns compare with dm_control's and Playground's."""
  tolerance = pytest.importorskip("dm_control.utils.rewards").tolerance
  rng = np.random.default_rng(0)
  d = jaxmj.make_data(cartpole.sys)
  for _ in range(20):
    qpos, qvel = rng.uniform(-2, 2, 2) * [1, np.pi / 2], rng.uniform(-8, 8, 2)
    action = rng.uniform(-1.2, 1.2, 1)
    upright = (np.cos(qpos[1]) + 1) / 2
    centered = (1 + tolerance(qpos[0], margin=2)) / 2
    small_control = (4 + tolerance(np.clip(action[0], -1, 1), margin=1, value_at_margin=0,
                                   sigmoid="quadratic")) / 5
    small_velocity = (1 + tolerance(qvel[1], margin=5)) / 2
    state = d.replace(qpos=jnp.asarray(qpos), qvel=jnp.asarray(qvel))
    reward, done, _ = cartpole.reward_done(state, state, jnp.asarray(action))
    np.testing.assert_allclose(float(reward),
                               upright * centered * small_control * small_velocity, rtol=1e-9)
    assert float(done) == 0
