"""Camera observations: CameraObservation puts jaxmj.camera_image's pixels into obs (batched
with the env), and CartpoleBalancePixels is CartpoleBalance seen through its side camera."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmj
import jaxmj.envs as E


def test_camera_observation_prepends_the_cameras_pixels_to_obs():
  env = E.load("CartpoleBalance")
  cam = E.CameraObservation(env, cam="side", height=6, width=8, outputs=("rgb", "depth"))
  batched = E.wrap(cam, episode_length=10)
  state = jax.jit(batched.reset)(jax.random.split(jax.random.PRNGKey(0), 2))
  state = jax.jit(batched.step)(state, jnp.ones((2, env.action_size)))
  assert cam.observation_size == 6 * 8 * 4 + 5 and state.obs.shape == (2, 6 * 8 * 4 + 5)
  for w in range(2):
    d = jax.tree.map(lambda x, w=w: x[w], state.pipeline_state)
    img = jaxmj.camera_image(env.sys, d, "side", 6, 8, ("rgb", "depth"))
    np.testing.assert_allclose(state.obs[w, :6 * 8 * 3], img["rgb"].reshape(-1), atol=1e-12)
    np.testing.assert_allclose(state.obs[w, 6 * 8 * 3:6 * 8 * 4], img["depth"].reshape(-1),
                               atol=1e-12)
    np.testing.assert_allclose(state.obs[w, -5:], env.observation(d), atol=1e-12)
  with pytest.raises(ValueError, match="rgb and/or depth"):
    E.CameraObservation(env, outputs=("segmentation",))


@pytest.mark.slow  # compiles the physics step of a pixel task
def test_cartpole_from_pixels_sees_the_pole_move():
  assert "CartpoleBalancePixels" in E.names()
  env = E.load("CartpoleBalancePixels")
  assert env.observation_size == 32 * 32 * 3
  s0 = jax.jit(env.reset)(jax.random.PRNGKey(1))
  step = jax.jit(env.step)
  s = s0
  for _ in range(20):
    s = step(s, jnp.ones(env.action_size))
  assert 0 <= float(s.obs.min()) and float(s.obs.max()) <= 1
  assert np.abs(np.asarray(s.obs) - np.asarray(s0.obs)).max() > 0.1  # the cart moved


def test_camera_observation_forwards_image_options():
  env = E.load("CartpoleBalance")
  cam = E.CameraObservation(env, cam="side", height=4, width=6, pixels_only=True, softness=0.05)
  state = jax.jit(cam.reset)(jax.random.PRNGKey(0))

  @jax.jit
  def images(d):
    return [jaxmj.camera_image(env.sys, d, "side", 4, 6, ("rgb",), softness=s)["rgb"]
            for s in (0.05, None)]

  soft, exact = images(state.pipeline_state)
  np.testing.assert_allclose(state.obs, soft.reshape(-1), atol=1e-12)
  assert np.abs(np.asarray(soft) - np.asarray(exact)).max() > 1e-3  # the option took effect
  with pytest.raises(TypeError, match="unknown image options.*softness"):
    E.CameraObservation(env, softnes=0.05)
