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

from jaxmj.camera import cull, mesh_bvh
from jaxmj.collision import ray as ray_lib
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


def _hfield_normals(m: Model, sel: np.ndarray, k, p):
  """Normals (N, 3) at local hit points p (N, 3) on heightfield geoms sel[k] (N,): the
  surface triangle's (the cell's split as mj_rayHfield's) where p lies on the surface, else
  the face of the elevation-plus-base box nearest p."""
  hid = jnp.asarray(m.geom_dataid[sel])[k]
  size = jnp.asarray(m.hfield_size)[hid]
  nrow, ncol = jnp.asarray(m.hfield_nrow)[hid], jnp.asarray(m.hfield_ncol)[hid]
  adr = jnp.asarray(m.hfield_adr)[hid]
  data = jnp.asarray(m.hfield_data)
  gx = jnp.clip((p[:, 0] / size[:, 0] + 1) / 2 * (ncol - 1), 0, ncol - 1)
  gy = jnp.clip((p[:, 1] / size[:, 1] + 1) / 2 * (nrow - 1), 0, nrow - 1)
  j = jnp.clip(jnp.floor(gx), 0, ncol - 2).astype(jnp.int32)
  i = jnp.clip(jnp.floor(gy), 0, nrow - 2).astype(jnp.int32)
  fx, fy = gx - j, gy - i
  z = lambda r, c: data[adr + r * ncol + c] * size[:, 2]  # noqa: E731
  za, zb = z(i, j), z(i + 1, j + 1)
  upper = fx >= fy  # the triangle (a, b, c) with c one column on; else (a, b, e)
  zt = jnp.where(upper, z(i, j + 1), z(i + 1, j))
  dx = 2 * size[:, 0] / (ncol - 1)
  dy = 2 * size[:, 1] / (nrow - 1)
  # Slopes of the triangle's plane: along x and y across the cell.
  sx = jnp.where(upper, zt - za, zb - zt) / dx
  sy = jnp.where(upper, zb - zt, zt - za) / dy
  surface_n = jnp.stack([-sx, -sy, jnp.ones_like(sx)], -1)
  zsurf = za + sx * fx * dx + sy * fy * dy
  half = jnp.stack([size[:, 0], size[:, 1], 0.5 * (size[:, 2] + size[:, 3])], -1)
  q = p - jnp.stack([0 * za, 0 * za, 0.5 * (size[:, 2] - size[:, 3])], -1)
  box_gap = jnp.min(jnp.abs(jnp.abs(q) - half), -1)
  box_n = jax.vmap(_box_normal)(half, q)
  return jnp.where((jnp.abs(p[:, 2] - zsurf) <= box_gap)[:, None], surface_n, box_n)


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
  else:
    if gtype == GeomType.HFIELD:
      dist = jax.vmap(lambda p, v: ray_lib.hfield_cast(m, sel, p, v), (1, 1), 1)(lp, lv)
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
  if gtype == GeomType.HFIELD:
    local_n = _hfield_normals(m, sel, k, p)
  elif gtype != GeomType.MESH:
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
