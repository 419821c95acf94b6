"""jaxmj.camera_image: RGB, depth and segmentation images of one camera of one world."""

from __future__ import annotations

from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np

from jaxmj.camera import frustum, shade, trace
from jaxmj.collision import ray as ray_lib
from jaxmj.names import name2id
from jaxmj.types import Data, Model, ObjType

OUTPUTS = ("rgb", "depth", "segmentation")
# mjvOption's default geomgroup: groups 0, 1 and 2 are drawn.
DEFAULT_GEOMGROUP = (1, 1, 1, 0, 0, 0)


def visible_geoms(m: Model, geomgroup=DEFAULT_GEOMGROUP) -> np.ndarray:
  """Static ids of the geoms MuJoCo's renderer draws with these group flags (rgba alpha 0:
  not drawn), of the types the camera intersects."""
  return ray_lib.candidates(m, geomgroup)


def camera_id(m: Model, cam: int | str) -> int:
  """A camera's id from its id or name (-1: the free camera)."""
  if isinstance(cam, str):
    i = name2id(m, ObjType.CAMERA, cam)
    if i < 0:
      raise ValueError(f"camera_image: no camera named {cam!r}")
    return i
  return int(cam)


def camera_image(m: Model, d: Data, cam: int | str = -1, height: int = 64, width: int = 64,
                 outputs: Sequence[str] = OUTPUTS, *, shadows: bool = False,
                 geomgroup=DEFAULT_GEOMGROUP) -> dict[str, jnp.ndarray]:
  """Images of world `d` (after forward: reads geom, camera and light poses) seen by model
  camera `cam` (id or name; -1: MuJoCo's free camera), ray-cast in pure JAX
  (jit/vmap/grad-able; cam, height, width, outputs, shadows and geomgroup are static). To
  batch cameras, vmap over d.cam_xpos / d.cam_xmat with one camera id (same intrinsics).

  Returns a dict with the requested outputs, row 0 at the top as mujoco.Renderer's:
    rgb: (height, width, 3) float in [0, 1], geom colours under the model's lights and the
      headlight (background black); shadows: rays to shadow-casting lights.
    depth: (height, width) distance along the optical axis in metres, as mujoco.Renderer's
      depth rendering; where nothing is hit, its far clip distance (vis.map.zfar * extent).
    segmentation: (height, width, 2) int32 (geom id, mjOBJ_GEOM), (-1, -1) where nothing is
      hit, as mujoco.Renderer's segmentation rendering.
  """
  unknown = set(outputs) - set(OUTPUTS)
  if unknown:
    raise ValueError(f"camera_image: unknown outputs {sorted(unknown)}; choose from {OUTPUTS}")
  cam = camera_id(m, cam)
  ids = visible_geoms(m, geomgroup)
  pos, mat = frustum.camera_pose(m, d, cam)
  local = jnp.asarray(frustum.pixel_directions(m, cam, height, width), pos.dtype)
  vec = local.reshape(-1, 3) @ mat.T
  hits = trace.nearest_hits(m, d, ids, pos, vec)
  hit = hits.geomid >= 0
  out = {}
  if "depth" in outputs:
    far = frustum.clip_range(m)[1]
    out["depth"] = jnp.where(hit, hits.dist, far).reshape(height, width)
  if "segmentation" in outputs:
    seg = jnp.stack([hits.geomid, jnp.where(hit, int(ObjType.GEOM), -1)], -1)
    out["segmentation"] = seg.reshape(height, width, 2).astype(jnp.int32)
  if "rgb" in outputs:
    point = pos + jnp.where(hit, hits.dist, 0.0)[:, None] * vec

    def occluded(origin, direction, max_dist):
      blocked = trace.nearest_hits(m, d, ids, origin, direction).dist
      return blocked < max_dist

    rgb = shade.shade(m, d, pos, mat, point, hits.normal, hits.geomid,
                      occluded if shadows else None)
    out["rgb"] = rgb.reshape(height, width, 3)
  return out
