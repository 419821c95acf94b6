"""Camera observations: a wrapper that puts a camera's pixels into each world's obs.

The pixels are jaxmj.camera_image's (pure JAX, so they vmap with the batch and a
randomized Model's colours and sizes show in them), flattened so that obs stays one vector
for Brax's trainers: obs = [rgb (H*W*3, in [0, 1]), depth (H*W, metres)...,
then the task's own observation unless pixels_only].
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp

from jaxmj.camera.image import camera_id, camera_image
from jaxmj.envs.base import State
from jaxmj.envs.wrappers import Wrapper
from jaxmj.types import Data


def pixel_observation(sys, d: Data, cam: int | str, height: int, width: int,
                      outputs: Sequence[str]) -> jax.Array:
  """(sum of each output's H*W*channels,) flattened images of `cam` in world `d`."""
  images = camera_image(sys, d, cam, height, width, tuple(outputs))
  return jnp.concatenate([images[k].reshape(-1).astype(d.qpos.dtype) for k in outputs])


class CameraObservation(Wrapper):
  """Wraps a single-world env (wrap it before batching): obs = pixels of camera `cam`
  (rgb and/or depth), followed by the env's own obs unless pixels_only. The pixels show the
  state the env's obs describes (after the step's physics; for jaxmj.step, the poses of its
  position stage)."""

  def __init__(self, env, cam: int | str = -1, height: int = 32, width: int = 32,
               outputs: Sequence[str] = ("rgb",), pixels_only: bool = False):
    super().__init__(env)
    self.cam = camera_id(env.unwrapped.sys, cam)
    self.height, self.width = height, width
    if not set(outputs) <= {"rgb", "depth"}:
      raise ValueError(f"CameraObservation: outputs {tuple(outputs)}; choose rgb and/or depth")
    self.outputs = tuple(outputs)
    self.pixels_only = pixels_only

  def _observe(self, state: State) -> State:
    pixels = pixel_observation(self.unwrapped.sys, state.pipeline_state, self.cam,
                               self.height, self.width, self.outputs)
    obs = pixels if self.pixels_only else jnp.concatenate([pixels, state.obs])
    return state.replace(obs=obs)

  def reset(self, rng: jax.Array) -> State:
    return self._observe(self.env.reset(rng))

  def step(self, state: State, action: jax.Array) -> State:
    return self._observe(self.env.step(state, action))

  @property
  def observation_size(self) -> int:
    return jax.eval_shape(self.reset, jax.random.PRNGKey(0)).obs.shape[-1]
