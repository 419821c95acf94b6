"""Camera observations: a wrapper that puts a camera's pixels into each world's obs.

The pixels are jaxmj.camera_image's (pure JAX, so they vmap with the batch and a
randomized Model's colours and sizes show in them), flattened so that obs stays one vector
for Brax's trainers: obs = [rgb (H*W*3, in [0, 1]), depth (H*W, metres)...,
then the task's own observation unless pixels_only].
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import jax
import jax.numpy as jnp

from jaxmj.camera.image import camera_id, camera_image
from jaxmj.envs.base import State
from jaxmj.envs.wrappers import Wrapper
from jaxmj.types import Data

# camera_image's keyword-only options a wrapper forwards; colours are not among them: they
# come from sys.geom_rgba, which domain randomization varies per world
IMAGE_OPTIONS = frozenset(
  name for name, p in inspect.signature(camera_image).parameters.items()
  if p.kind is inspect.Parameter.KEYWORD_ONLY) - {"rgba"}


def pixel_observation(sys, d: Data, cam: int | str, height: int, width: int,
                      outputs: Sequence[str], **image_options) -> jax.Array:
  """(sum of each output's H*W*channels,) flattened images of `cam` in world `d`;
  image_options go to jaxmj.camera_image (shadows, softness, tile, ...)."""
  images = camera_image(sys, d, cam, height, width, tuple(outputs), **image_options)
  return jnp.concatenate([images[k].reshape(-1).astype(d.qpos.dtype) for k in outputs])


class CameraObservation(Wrapper):
  """Wraps a single-world env (wrap it before batching): obs = pixels of camera `cam`
  (rgb and/or depth), followed by the env's own obs unless pixels_only. The pixels show the
  state the env's obs describes (after the step's physics; for jaxmj.step, the poses of its
  position stage). image_options go to jaxmj.camera_image: shadows, geomgroup, tile,
  tile_candidates, softness (soft silhouettes, for policies or losses differentiated through
  the pixels)."""

  def __init__(self, env, cam: int | str = -1, height: int = 32, width: int = 32,
               outputs: Sequence[str] = ("rgb",), pixels_only: bool = False, **image_options):
    super().__init__(env)
    unknown = set(image_options) - IMAGE_OPTIONS
    if unknown:
      raise TypeError(f"CameraObservation: unknown image options {sorted(unknown)}; "
                      f"camera_image takes {sorted(IMAGE_OPTIONS)}")
    self.image_options = image_options
    self.cam = camera_id(env.unwrapped.sys, cam)
    self.height, self.width = height, width
    if not set(outputs) <= {"rgb", "depth"}:
      raise ValueError(f"CameraObservation: outputs {tuple(outputs)}; choose rgb and/or depth")
    self.outputs = tuple(outputs)
    self.pixels_only = pixels_only

  def _observe(self, state: State) -> State:
    pixels = pixel_observation(self.unwrapped.sys, state.pipeline_state, self.cam,
                               self.height, self.width, self.outputs, **self.image_options)
    obs = pixels if self.pixels_only else jnp.concatenate([pixels, state.obs])
    return state.replace(obs=obs)

  def reset(self, rng: jax.Array) -> State:
    return self._observe(self.env.reset(rng))

  def step(self, state: State, action: jax.Array) -> State:
    return self._observe(self.env.step(state, action))

  @property
  def observation_size(self) -> int:
    return jax.eval_shape(self.reset, jax.random.PRNGKey(0)).obs.shape[-1]
