"""The gymnasium adapters: spaces, same-step autoreset, seeding, gymnasium's env checker."""

import numpy as np
import pytest

import jaxmj.envs as E

gymnasium = pytest.importorskip("gymnasium")


@pytest.fixture(scope="module")
def env():
  return E.load("CartpoleBalance")


def test_vector_env_resets_finished_worlds_in_the_same_step(env):
  venv = E.to_gymnasium(env, 4, episode_length=10)
  assert isinstance(venv, gymnasium.vector.VectorEnv)
  assert venv.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
  obs, _ = venv.reset(seed=7)
  again, _ = venv.reset(seed=7)
  np.testing.assert_array_equal(obs, again)
  assert obs.shape == (4, 5) and obs.dtype == np.float32 and venv.observation_space.contains(obs)
  venv.action_space.seed(0)
  for t in range(1, 13):
    prev = obs
    obs, rew, term, trunc, info = venv.step(venv.action_space.sample())
    assert rew.shape == term.shape == trunc.shape == (4,) and not term.any()
    if t == 10:
      assert trunc.all() and info["_final_obs"].all()
      assert not np.allclose(info["final_obs"], obs)  # the new episodes start elsewhere
      assert np.all(np.abs(obs[:, 0]) <= 0.1)  # cart within the task's start range
    else:
      assert not trunc.any() and "final_obs" not in info
    assert not np.array_equal(prev, obs)


def test_single_env_passes_gymnasium_env_checker(env):
  from gymnasium.utils.env_checker import check_env

  check_env(E.to_gymnasium(env, None, episode_length=20), skip_render_check=True)
