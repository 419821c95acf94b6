"""Per-tile culling of primitive geoms, so a pixel's cost grows with the geoms it can hit.

The image is cut into square tiles of pixels; each tile's rays lie in a pyramid from the
camera (perspective) or a prism along its axis (orthographic) whose four side planes are
static (camera frame, from the intrinsics). Per world, a primitive geom is a candidate of a
tile when its bounding sphere (centre geom_xpos, radius from geom_size, so edited sizes stay
covered) reaches into that pyramid or prism; each ray is then
intersected with its tile's candidates only, K at a time, nearest first by index order.
A tile with more than K candidates takes further chunks of K in a while loop (run as long
as the busiest tile of the batch needs), so the result is exact for any K: K trades the
cost of the first chunk against the chance of a second. The loop only picks each ray's
geom (no gradients flow through it); trace.py recomputes that geom's hit with gradients.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.collision import ray as ray_lib
from jaxmj.types import GeomType

CULLED = (GeomType.SPHERE, GeomType.CAPSULE, GeomType.ELLIPSOID, GeomType.CYLINDER,
          GeomType.BOX)


class Tiles(NamedTuple):
  """Camera rays laid out tile by tile: planes (T, 4, 3) inward unit normals of the side
  planes of each tile's pyramid or prism and their offsets (T, 4) (camera frame: a point c is
  inside where planes . c + offsets >= 0), K the candidates intersected per chunk, the
  camera's pose (position (3,), orientation (3, 3), global) and the rays' origins (T, P, 3)
  in its frame (None: every ray starts at the camera, perspective)."""

  planes: np.ndarray
  offsets: np.ndarray
  candidates: int
  cam_pos: jax.Array
  cam_mat: jax.Array
  origins: np.ndarray | None = None


def padded_shape(height: int, width: int, tile: int) -> tuple[int, int]:
  """The image grown to whole tiles."""
  return -(-height // tile) * tile, -(-width // tile) * tile


def to_tiles(img: np.ndarray, tile: int) -> np.ndarray:
  """(Hp, Wp, ...) -> (T, tile * tile, ...), tiles row by row, pixels row by row in each."""
  hp, wp = img.shape[:2]
  t = img.reshape(hp // tile, tile, wp // tile, tile, *img.shape[2:])
  return t.swapaxes(1, 2).reshape(hp // tile * (wp // tile), tile * tile, *img.shape[2:])


def from_tiles(t, height: int, width: int, tile: int):
  """Inverse of to_tiles on (T * tile * tile, ...) values, cropped to (height, width, ...)."""
  hp, wp = padded_shape(height, width, tile)
  img = t.reshape(hp // tile, wp // tile, tile, tile, *t.shape[1:]).swapaxes(1, 2)
  return img.reshape(hp, wp, *t.shape[1:])[:height, :width]


def tile_planes(tiled_origins: np.ndarray, tiled_dirs: np.ndarray,
                orthographic: bool) -> tuple[np.ndarray, np.ndarray]:
  """Inward unit normals (T, 4, 3) and offsets (T, 4) of each tile's side planes through its
  outer pixel centres, from its rays' camera-frame origins and directions (T, P, 3):
  perspective, planes through the camera ((x, y, -1) directions); orthographic, planes
  along the axis ((x, y, 0) origins)."""
  xy = tiled_origins if orthographic else tiled_dirs
  x, y = xy[..., 0], xy[..., 1]
  x0, x1, y0, y1 = x.min(1), x.max(1), y.min(1), y.max(1)
  one, zero = np.ones_like(x0), np.zeros_like(x0)
  if orthographic:
    n = np.stack([np.stack([one, zero, zero], -1), np.stack([-one, zero, zero], -1),
                  np.stack([zero, one, zero], -1), np.stack([zero, -one, zero], -1)], 1)
    return n, np.stack([-x0, x1, -y0, y1], 1)
  n = np.stack([np.stack([one, zero, x0], -1), np.stack([-one, zero, -x1], -1),
                np.stack([zero, one, y0], -1), np.stack([zero, -one, -y1], -1)], 1)
  return n / np.linalg.norm(n, axis=-1, keepdims=True), np.zeros(n.shape[:2])


def bounding_radius(gtype: GeomType, size):
  """(G,) radius of the sphere about the geom's centre enclosing it, from sizes (G, 3)."""
  if gtype == GeomType.SPHERE:
    return size[:, 0]
  if gtype == GeomType.CAPSULE:
    return size[:, 0] + size[:, 1]
  if gtype == GeomType.ELLIPSOID:
    return jnp.max(size, -1)
  if gtype == GeomType.CYLINDER:
    return jnp.sqrt(size[:, 0] ** 2 + size[:, 1] ** 2)
  return jnp.sqrt(jnp.sum(size * size, -1))


def tile_candidates(tiles: Tiles, gtype: GeomType, size, pos):
  """Which geoms (sizes (G, 3), centres (G, 3)) each tile may see: their indices (T, G),
  candidates first in index order, and the number of candidates (T,)."""
  centre = (pos - tiles.cam_pos) @ tiles.cam_mat  # camera frame
  # Rounding of the ray functions must not drop a geom grazing a tile's edge.
  radius = bounding_radius(gtype, size) * (1 + 1e-6) + 1e-9
  reach = jnp.einsum("tjk,gk->tgj", jnp.asarray(tiles.planes, pos.dtype), centre) + (
    jnp.asarray(tiles.offsets, pos.dtype)[:, None])
  inside = jnp.all(reach >= -radius[None, :, None], -1) & (centre[:, 2] <= radius)[None]
  order = jnp.argsort(~inside, axis=-1, stable=True)
  return order, jnp.sum(inside, -1)


def nearest_candidate(tiles: Tiles, gtype: GeomType, size, mat, pos, vec):
  """Index (N,) among the G geoms (sizes (G, 3), orientations (G, 3, 3), centres (G, 3)) of
  the nearest hit of each camera ray vec (N, 3) (tile by tile), and whether it hits (N,);
  no gradients."""
  size, mat, pos, vec = (jax.lax.stop_gradient(a) for a in (size, mat, pos, vec))
  planes = tiles.planes
  k = tiles.candidates
  ntile = planes.shape[0]
  rays = vec.reshape(ntile, -1, 3)
  origins = None
  if tiles.origins is not None:
    cam_pos, cam_mat = (jax.lax.stop_gradient(a) for a in (tiles.cam_pos, tiles.cam_mat))
    origins = cam_pos + jnp.asarray(tiles.origins, vec.dtype) @ cam_mat.T  # (T, P, 3)
  order, count = tile_candidates(tiles, gtype, size, pos)
  chunks = -(-size.shape[0] // k)
  order = jnp.pad(order, ((0, 0), (0, chunks * k - size.shape[0])))
  hit_one = jax.vmap(jax.vmap(ray_lib.RAY_FUNCS[gtype], (None, None, 0)))

  def chunk(state):
    c, best, slot = state
    idx = jax.lax.dynamic_slice_in_dim(order, c * k, k, axis=1)  # (T, K)
    lv = jnp.einsum("tkji,tpj->tkpi", mat[idx], rays)
    if origins is None:
      lp = jnp.einsum("tkji,tkj->tki", mat[idx], tiles.cam_pos - pos[idx])
      dist = jax.vmap(hit_one)(size[idx], lp, lv)  # (T, K, P)
    else:
      lp = jnp.einsum("tkji,tkpj->tkpi", mat[idx], origins[:, None] - pos[idx][:, :, None])
      dist = jax.vmap(jax.vmap(jax.vmap(ray_lib.RAY_FUNCS[gtype], (None, 0, 0))))(
        size[idx], lp, lv)
    valid = c * k + jnp.arange(k) < count[:, None]
    dist = jnp.where(valid[..., None], dist, jnp.inf)
    j = jnp.argmin(dist, 1)
    near = jnp.min(dist, 1)
    better = near < best
    return c + 1, jnp.where(better, near, best), jnp.where(
      better, jnp.take_along_axis(idx, j, 1), slot)

  init = (jnp.array(0), jnp.full(rays.shape[:2], jnp.inf, vec.dtype),
          jnp.zeros(rays.shape[:2], order.dtype))
  _, best, slot = jax.lax.while_loop(lambda s: s[0] * k < jnp.max(count), chunk, init)
  return slot.reshape(-1), jnp.isfinite(best).reshape(-1)
