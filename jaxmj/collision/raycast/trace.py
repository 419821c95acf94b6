"""The nearest geom along each of many rays, with the surface normal there.

Geoms are grouped by type (static); each group's rays are mapped into its geoms' frames and
intersected with collision/ray.py's functions (mj_ray's geometry), the nearest hit is kept
per group, its normal is computed in that geom's frame, and the groups are merged. Meshes go
through mesh_bvh.py's clusters. Misses are dist = inf, geomid = -1.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.collision import ray as ray_lib
from jaxmj.collision.raycast import cull, mesh_bvh
from jaxmj.types import Data, GeomType, Model


class Hits(NamedTuple):
  """Nearest hits of N rays: dist (N,) in units of the ray direction (inf: miss),
  geomid (N,) int32 (-1: miss), normal (N, 3) unit, global frame, facing the ray."""

  dist: jax.Array
  geomid: jax.Array
  normal: jax.Array


def unit(v):
  """v (..., 3) over its length (kept away from 0)."""
  return v / jnp.sqrt(jnp.maximum(jnp.sum(v * v, -1, keepdims=True), 1e-30))


def _box_normal(half, q):
  """Outward normal of the box face nearest to q (box centred at 0, half sizes `half`)."""
  k = jnp.argmax(jnp.abs(q) - half)
  return jnp.where(jnp.arange(3) == k, jnp.sign(q), 0.0)


def _normal_plane(size, p):
  return jnp.array([0.0, 0.0, 1.0], p.dtype)


def _normal_sphere(size, p):
  return p


def _normal_ellipsoid(size, p):
  return p / (size * size)


def _normal_capsule(size, p):
  return p - jnp.array([0.0, 0.0, 1.0]) * jnp.clip(p[2], -size[1], size[1])


def _normal_cylinder(size, p):
  radial = jnp.sqrt(jnp.maximum(p[0] ** 2 + p[1] ** 2, 1e-30))
  cap = jnp.abs(jnp.abs(p[2]) - size[1]) < jnp.abs(radial - size[0])
  return jnp.where(cap, jnp.array([0.0, 0.0, 1.0]) * jnp.sign(p[2]),
                   jnp.array([1.0, 1.0, 0.0]) * p)


def _normal_box(size, p):
  return _box_normal(size[:3], p)


NORMALS = {
  GeomType.PLANE: _normal_plane, GeomType.SPHERE: _normal_sphere,
  GeomType.CAPSULE: _normal_capsule, GeomType.ELLIPSOID: _normal_ellipsoid,
  GeomType.CYLINDER: _normal_cylinder, GeomType.BOX: _normal_box,
}


def _group_hits(m: Model, d: Data, sel: np.ndarray, gtype, pnt, vec,
                tiles: cull.Tiles | None = None) -> Hits:
  """Nearest hit of each ray among the geoms `sel` of one type."""
  mat, pos = d.geom_xmat[sel], d.geom_xpos[sel]
  size = m.geom_size[sel]
  n = jnp.arange(vec.shape[0])
  if tiles is not None and gtype in cull.CULLED and len(sel) > tiles.candidates:
    k, hit = cull.nearest_candidate(tiles, gtype, size, mat, pos, vec)
    # The picked geom's hit again, now with gradients (the same arithmetic as below).
    lpk = jnp.einsum("nji,nj->ni", mat[k], pnt - pos[k])
    lvk = jnp.einsum("nji,nj->ni", mat[k], vec)
    best = jnp.where(hit, jax.vmap(ray_lib.RAY_FUNCS[gtype])(size[k], lpk, lvk), jnp.inf)
    return _surface(m, sel, gtype, k, best, lpk, lvk, mat[k], vec)
  lp = jnp.einsum("gji,gnj->gni", mat, pnt[None] - pos[:, None])  # (G, N, 3)
  lv = jnp.einsum("gji,nj->gni", mat, vec)
  local_n = None
  if gtype == GeomType.MESH:
    dist, k, local_n = mesh_bvh.mesh_hits(m, sel, lp, lv)
  elif gtype == GeomType.HFIELD:
    dist, normals = jax.vmap(lambda p, v: ray_lib.hfield_cast(m, sel, p, v, normals=True),
                             (1, 1), (1, 1))(lp, lv)
    k = jnp.argmin(dist, axis=0)
    local_n = normals[k, n]
  else:
    one = jax.vmap(ray_lib.RAY_FUNCS[gtype], (None, 0, 0))
    dist = jax.vmap(one)(size, lp, lv)
    k = jnp.argmin(dist, axis=0)
  return _surface(m, sel, gtype, k, dist[k, n], lp[k, n], lv[k, n], mat[k], vec, local_n)


def _surface(m: Model, sel, gtype, k, best, lp, lv, mat, vec, local_n=None) -> Hits:
  """Hits at distances best (N,) on geoms sel[k] (N,), rays lp, lv (N, 3) in their frames
  (orientations mat (N, 3, 3)); local_n: the local normals where the caller has them."""
  hit = jnp.isfinite(best)
  # A finite stand-in where nothing is hit keeps the discarded normal's gradient finite.
  p = lp + jnp.where(hit, best, 0.0)[:, None] * lv
  if local_n is None:
    local_n = jax.vmap(NORMALS[gtype])(m.geom_size[sel][k], p)
  normal = unit(jnp.einsum("nij,nj->ni", mat, local_n))
  normal = jnp.where((jnp.sum(normal * vec, -1) > 0)[:, None], -normal, normal)
  return Hits(best, jnp.where(hit, jnp.asarray(sel, jnp.int32)[k], -1), normal)


def nearest_hits(m: Model, d: Data, ids: np.ndarray, pnt, vec,
                 tiles: cull.Tiles | None = None) -> Hits:
  """Nearest hits of rays pnt (N, 3) + x vec (N, 3), x >= 0, among static geom ids `ids`.
  tiles: the rays are a camera's, tile by tile (pnt its position), so primitive types with
  more than tiles.candidates geoms are culled per tile (cull.py); same hits."""
  pnt = jnp.broadcast_to(pnt, vec.shape)
  groups = []
  for gtype in (*ray_lib.RAY_FUNCS, GeomType.MESH, GeomType.HFIELD):
    sel = ids[m.geom_type[ids] == gtype]
    if len(sel):
      groups.append(_group_hits(m, d, sel, gtype, pnt, vec, tiles))
  if not groups:
    n = vec.shape[0]
    return Hits(jnp.full(n, jnp.inf, vec.dtype), jnp.full(n, -1, jnp.int32),
                jnp.zeros_like(vec))
  dist = jnp.stack([g.dist for g in groups])
  k = jnp.argmin(dist, axis=0)
  n = jnp.arange(vec.shape[0])
  return Hits(dist[k, n], jnp.stack([g.geomid for g in groups])[k, n],
              jnp.stack([g.normal for g in groups])[k, n])


def image_hits(m: Model, d: Data, ids: np.ndarray, cam_pos, cam_mat, origins: np.ndarray,
               dirs: np.ndarray, pnt, vec, orthographic: bool, tile: int = 8,
               candidates: int = 4) -> Hits:
  """nearest_hits of one camera's image of rays, culled per tile x tile block (cull.py):
  origins, dirs (H, W, 3) the rays in the camera frame (static: they place the tiles'
  planes; perspective directions (x, y, -1), orthographic origins (x, y, 0)), pnt ((3,) or
  (H, W, 3)) and vec (H, W, 3) the same rays in the global frame, the camera at cam_pos,
  cam_mat. The image is padded to whole tiles with its edge rays. Hits of the H * W rays,
  row by row."""
  h, w = dirs.shape[:2]
  hp, wp = cull.padded_shape(h, w, tile)

  def tiled(a, xp):
    a = xp.pad(a, ((0, hp - h), (0, wp - w), (0, 0)), mode="edge")
    return cull.to_tiles(a, tile)

  tiled_origins, tiled_dirs = tiled(origins, np), tiled(dirs, np)
  tiles = cull.Tiles(*cull.tile_planes(tiled_origins, tiled_dirs, orthographic), candidates,
                     cam_pos, cam_mat, tiled_origins if orthographic else None)
  if jnp.ndim(pnt) == 3:  # one origin per ray
    pnt = tiled(pnt, jnp).reshape(-1, 3)
  hits = nearest_hits(m, d, ids, pnt, tiled(vec, jnp).reshape(-1, 3), tiles)
  return Hits(*(cull.from_tiles(x, h, w, tile).reshape(h * w, *x.shape[1:]) for x in hits))
