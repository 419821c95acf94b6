"""jaxmj.camera_image: RGB, depth and segmentation images of one camera of one world."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.camera import frustum, reflection, shade, soft, texture
from jaxmj.collision import ray as ray_lib
from jaxmj.collision.raycast import cull, trace
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
                 geomgroup=DEFAULT_GEOMGROUP, tile: int | None = 8,
                 tile_candidates: int = 4, softness: float | None = None,
                 rgba: jax.Array | None = None, skybox: bool = True,
                 reflections: bool = True) -> dict[str, jnp.ndarray]:
  """Images of world `d` (after forward: reads geom, camera and light poses) seen by model
  camera `cam` (id or name; -1: MuJoCo's free camera), ray-cast in pure JAX
  (jit/vmap/grad-able; every argument but m's leaves, d and rgba is static: a call is traced
  once per model structure and option set, a camera's name sharing its id's trace, and runs
  compiled outside jit too). To batch cameras, vmap over d.cam_xpos / d.cam_xmat with one
  camera id (same intrinsics).

  tile, tile_candidates: culling (collision/raycast/cull.py): each tile x tile block of pixels
  intersects only the primitives whose bounding spheres reach into it, tile_candidates of
  them at a time (more take further passes: exact for any value); types with at most
  tile_candidates geoms, planes, meshes and heightfields are tested by every pixel. The
  images equal those without culling (tile=None).

  softness: None (default): exact images. A distance in metres: rgb and depth with soft
    silhouettes of the primitives (camera/soft.py), so their gradients flow across edges;
    biased: edges blur over about +-4 softness of ray-to-surface miss distance, 50%
    transparent at the exact edge, and every primitive costs every pixel. Segmentation
    stays exact.
  rgba: (ngeom, 4) colours in place of geom_rgba and materials (a traced array: randomized
    colours do not recompile); which geoms are drawn still follows the model's alpha.
  skybox: draw the model's skybox texture behind everything, as mujoco.Renderer does by
    default (False, or no skybox: black).
  reflections: mirrors (planes and boxes whose material has reflectance) show the scene,
    as mujoco.Renderer's do by default (camera/reflection.py; exact images only: a soft one
    has none). One more ray per pixel: where a scene has a mirror, about twice the time.

  Returns a dict with the requested outputs, row 0 at the top as mujoco.Renderer's:
    rgb: (height, width, 3) float in [0, 1], geom colours under the model's lights and the
      headlight, textures on planes and primitives (camera/texture.py), the skybox (else
      black) where nothing is hit; shadows: rays to shadow-casting lights.
    depth: (height, width) distance along the optical axis in metres, as mujoco.Renderer's
      depth rendering; where nothing is hit, its far clip distance (vis.map.zfar * extent).
    segmentation: (height, width, 2) int32 (geom id, mjOBJ_GEOM), (-1, -1) where nothing is
      hit, as mujoco.Renderer's segmentation rendering.
  """
  unknown = set(outputs) - set(OUTPUTS)
  if unknown:
    raise ValueError(f"camera_image: unknown outputs {sorted(unknown)}; choose from {OUTPUTS}")
  if (tile is not None and tile < 1) or tile_candidates < 1 or (softness is not None
                                                               and not softness > 0):
    raise ValueError(f"camera_image: tile ({tile}), tile_candidates ({tile_candidates}) and "
                     f"softness ({softness}) must be positive (tile, softness: or None)")
  images = ray_cast_images(
    m, d, rgba, cam=camera_id(m, cam), height=int(height), width=int(width),
    outputs=tuple(outputs), shadows=bool(shadows),
    geomgroup=None if geomgroup is None else tuple(bool(g) for g in geomgroup),
    tile=None if tile is None else int(tile), tile_candidates=int(tile_candidates),
    softness=None if softness is None else float(softness), skybox=bool(skybox),
    reflections=bool(reflections))
  return {k: images[k] for k in outputs}   # in the order asked (a jit's dict comes sorted)


# A jit of its own, every option static and hashable (camera_image normalizes them: a name to
# an id, lists to tuples): outside any trace a call runs compiled (cartpole's 64 x 64 image
# was 0.1-0.2 s a call operation by operation), and the traces that call it (a pixels
# environment's reset and step) share one trace per model structure and option set.
@functools.partial(jax.jit, static_argnames=("cam", "height", "width", "outputs", "shadows",
                                             "geomgroup", "tile", "tile_candidates",
                                             "softness", "skybox", "reflections"))
def ray_cast_images(m: Model, d: Data, rgba: jax.Array | None, *, cam: int, height: int,
                    width: int, outputs: tuple[str, ...], shadows: bool,
                    geomgroup: tuple[bool, ...] | None, tile: int | None,
                    tile_candidates: int, softness: float | None,
                    skybox: bool, reflections: bool) -> dict[str, jnp.ndarray]:
  """camera_image's images for a camera id and normalized options (see camera_image)."""
  ids = visible_geoms(m, geomgroup)
  pos, mat = frustum.camera_pose(m, d, cam)
  rows, cols = (height, width) if tile is None else cull.padded_shape(height, width, tile)
  ortho = frustum.orthographic(m, cam)
  origin, local = frustum.pixel_rays(m, cam, height, width, rows, cols)
  tiles = None
  if tile is not None:
    origin, local = cull.to_tiles(origin, tile), cull.to_tiles(local, tile)
    tiles = cull.Tiles(*cull.tile_planes(origin, local, ortho), tile_candidates, pos, mat,
                       origin if ortho else None)
  vec = jnp.asarray(local.reshape(-1, 3), pos.dtype) @ mat.T
  pnt = pos + jnp.asarray(origin.reshape(-1, 3), pos.dtype) @ mat.T if ortho else pos
  hits = trace.nearest_hits(m, d, ids, pnt, vec, tiles)
  hit = hits.geomid >= 0

  def as_image(x):
    if tile is None:
      return x.reshape(height, width, *x.shape[1:])
    return cull.from_tiles(x, height, width, tile)

  out = {}
  far = frustum.clip_range(m)[1]
  if "segmentation" in outputs:
    seg = jnp.stack([hits.geomid, jnp.where(hit, int(ObjType.GEOM), -1)], -1)
    out["segmentation"] = as_image(seg.astype(jnp.int32))

  def occluded(origin, direction, max_dist):
    blocked = trace.nearest_hits(m, d, ids, origin, direction).dist
    return blocked < max_dist

  left, right, bottom, top = frustum.image_plane(m, cam, height, width)
  textures = texture.geom_textures(m, ids, skybox and "rgb" in outputs,
                                   0.0 if ortho else (top - bottom) / height)
  # one pixel's step across the image: a ray's direction (perspective) or origin moves by
  # this much per pixel, right and down
  steps = jnp.stack([(right - left) / width * mat[:, 0], (top - bottom) / height * mat[:, 1]])

  def textured(point, normal, geomid, ray, depth):
    if textures is None:
      return None
    scale = 1.0 if ortho else depth[:, None, None]
    return texture.texel_colours(textures, m, d, point, normal, geomid, ray, scale * steps)

  # where a ray meets nothing: the skybox along its direction (black without one)
  sky = texture.sky_colours(textures, vec, jnp.broadcast_to(0.0 if ortho else steps,
                                                            (vec.shape[0], 2, 3)))

  if softness is not None and {"rgb", "depth"} & set(outputs):
    depth, rgb = soft.soft_image(m, d, ids, pnt, vec, pos, mat, softness, far, tiles, rgba,
                                 occluded if shadows else None, textured, sky)
    out.update({"depth": as_image(depth), "rgb": as_image(rgb)})
    return {k: out[k] for k in outputs}
  if "depth" in outputs:
    out["depth"] = as_image(jnp.where(hit, hits.dist, far))
  if "rgb" in outputs:
    point = pnt + jnp.where(hit, hits.dist, 0.0)[:, None] * vec
    rgb = shade.shade(m, d, pos, mat, point, hits.normal, hits.geomid,
                      occluded if shadows else None, rgba,
                      textured(point, hits.normal, hits.geomid, vec,
                               jnp.where(hit, hits.dist, 0.0)))
    mirrors = reflection.mirrors(m, ids) if reflections else None
    if mirrors is not None:
      rgb = jnp.clip(rgb + _reflected(m, d, ids, mirrors, pos, mat, point, hits, vec, rgba,
                                      textured), 0.0, 1.0)
    if sky is not None:
      rgb = jnp.where(hit[:, None], rgb, sky)
    out["rgb"] = as_image(rgb)
  return out


def _reflected(m: Model, d: Data, ids, mirrors, pos, mat, point, hits, vec, rgba, textured):
  """The colour (N, 3) the mirrors among the hits show (camera/reflection.py), 0 elsewhere;
  the caller adds it to the mirror's own and clamps."""
  on, refl, origin, direction, axis, base = reflection.reflected_rays(
    m, d, mirrors, pos, point, hits.normal, hits.geomid, vec)
  seen = trace.nearest_hits(m, d, ids, origin, direction)
  found = on & (seen.geomid >= 0)
  geomid = jnp.where(found, seen.geomid, -1)
  at = origin + jnp.where(found, seen.dist, 0.0)[:, None] * direction
  cam_pos, cam_mat = reflection.mirrored_camera(pos, mat, axis, base)
  depth = jnp.where(found, hits.dist + seen.dist, 0.0)  # the path's length, in ray units
  return shade.shade(m, d, cam_pos, cam_mat, at, seen.normal, geomid, None, rgba,
                     textured(at, seen.normal, geomid, direction, depth), refl)
