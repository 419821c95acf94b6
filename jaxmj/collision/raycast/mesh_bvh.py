"""Meshes for the camera: triangles in clusters with bounding boxes, built on the host.

Each mesh geom's triangles are sorted along a Morton curve of their centroids and cut into
clusters of CLUSTER triangles, each with its axis-aligned box (mesh frame). A ray tests the
boxes, visits clusters nearest-entry first and stops once the next box starts beyond the
best hit: exact, and its cost grows with the clusters the ray reaches, not with the mesh.
The traversal (a while loop, not reverse-differentiable) only picks the triangle; the hit
distance is then recomputed from that triangle, so depth and normals carry gradients.
Meshes of up to BRUTE_FORCE_FACES faces skip the clusters: every triangle is tested at once.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.collision import ray as ray_lib
from jaxmj.types import Model

CLUSTER = 16  # triangles per cluster
# Meshes up to this many faces are tested triangle by triangle: under vmap a traversal loop
# runs as long as its slowest ray, which costs more than a few dozen triangles.
BRUTE_FORCE_FACES = 64


def _morton_order(centroids: np.ndarray) -> np.ndarray:
  """Indices sorting points (F, 3) along a 10-bit-per-axis Morton (Z-order) curve."""
  lo, hi = centroids.min(0), centroids.max(0)
  q = ((centroids - lo) / np.maximum(hi - lo, 1e-12) * 1023).astype(np.int64)
  code = np.zeros(len(q), np.int64)
  for bit in range(10):
    for axis in range(3):
      code |= ((q[:, axis] >> bit) & 1) << (3 * bit + axis)
  return np.argsort(code, kind="stable")


def mesh_clusters(m: Model, sel: np.ndarray):
  """Host arrays for mesh geoms `sel` (G,), padded to common sizes: triangles
  (G, NC, CLUSTER, 3, 3) and their unit normals (G, NC, CLUSTER, 3), and the clusters'
  boxes lo, hi (G, NC, 3) (empty clusters get inverted boxes, which no ray enters)."""
  tri = ray_lib.mesh_triangles(m, sel)
  nface = m.mesh_facenum[m.geom_dataid[sel]]
  ncl = int(np.ceil(nface.max() / CLUSTER))
  out = np.zeros((len(sel), ncl * CLUSTER, 3, 3))
  lo = np.full((len(sel), ncl, 3), 1e30)
  hi = np.full((len(sel), ncl, 3), -1e30)
  for g in range(len(sel)):
    t = tri[g, :nface[g]]
    t = t[_morton_order(t.mean(1))]
    out[g, :len(t)] = t
    for c in range(int(np.ceil(len(t) / CLUSTER))):
      pts = t[c * CLUSTER:(c + 1) * CLUSTER].reshape(-1, 3)
      pad = 1e-9 * (1 + np.abs(pts).max())  # a hit on a box face must count as inside
      lo[g, c], hi[g, c] = pts.min(0) - pad, pts.max(0) + pad
  nrm = np.cross(out[:, :, 0] - out[:, :, 2], out[:, :, 1] - out[:, :, 2])
  nrm /= np.maximum(np.linalg.norm(nrm, axis=-1, keepdims=True), 1e-30)
  shape = (len(sel), ncl, CLUSTER)
  return out.reshape(*shape, 3, 3), nrm.reshape(*shape, 3), lo, hi


def _box_entry(lo, hi, p, v):
  """(NC,) distance at which the ray enters each box (0 if it starts inside), inf if never."""
  inv = 1.0 / jnp.where(jnp.abs(v) < 1e-30, 1e-30, v)
  t1, t2 = (lo - p) * inv, (hi - p) * inv
  tmin = jnp.max(jnp.minimum(t1, t2), -1)
  tmax = jnp.min(jnp.maximum(t1, t2), -1)
  enter = jnp.maximum(tmin, 0.0)
  return jnp.where(tmax >= enter, enter, jnp.inf)


def _nearest_triangle(tri, lo, hi, p, v):
  """(cluster, slot) of the nearest triangle hit by the ray, (0, 0) if none (and then the
  recomputed distance is inf unless that triangle is hit, which it then truly is)."""
  entry = _box_entry(lo, hi, p, v)
  order = jnp.argsort(entry)
  ts = entry[order]
  ncl = entry.shape[0]

  def cond(s):
    i, best, _, _ = s
    return (i < ncl) & (ts[jnp.minimum(i, ncl - 1)] < best)

  def body(s):
    i, best, bc, bj = s
    c = order[i]
    h = ray_lib.triangle_hits(p, v, tri[c])
    j = jnp.argmin(h)
    better = h[j] < best
    return i + 1, jnp.where(better, h[j], best), jnp.where(better, c, bc), jnp.where(
      better, j, bj)

  init = (jnp.array(0), jnp.array(jnp.inf, p.dtype), jnp.array(0), jnp.array(0))
  _, _, c, j = jax.lax.while_loop(cond, body, init)
  return c, j


def _cross(a, b):
  return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _dot(a, b):
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _all_triangle_hits(m: Model, sel: np.ndarray, lp, lv):
  """mesh_hits testing every triangle of every mesh geom (Moller-Trumbore, the same hits as
  mj_ray's triangle test), laid out per coordinate with triangles last so it vectorizes."""
  tri = ray_lib.mesh_triangles(m, sel)  # (G, F, 3, 3), host
  v0 = tri[:, :, 2]
  e1, e2 = tri[:, :, 0] - v0, tri[:, :, 1] - v0
  comp = lambda a: [jnp.asarray(a[:, None, :, i], lp.dtype) for i in range(3)]  # noqa: E731
  v0, e1, e2 = comp(v0), comp(e1), comp(e2)  # each (G, 1, F) per coordinate
  p = [lp[..., i, None] for i in range(3)]  # (G, N, 1)
  v = [lv[..., i, None] for i in range(3)]
  pvec = _cross(v, e2)
  det = _dot(e1, pvec)
  ok = jnp.abs(det) >= 1e-15
  inv = 1.0 / jnp.where(ok, det, 1.0)
  tvec = [p[i] - v0[i] for i in range(3)]
  u = _dot(tvec, pvec) * inv
  qvec = _cross(tvec, e1)
  w = _dot(v, qvec) * inv
  t = _dot(e2, qvec) * inv
  hits = jnp.where(ok & (u >= 0) & (w >= 0) & (u + w <= 1) & (t >= 0), t, jnp.inf)  # (G,N,F)
  dist = jnp.min(hits, -1)
  k = jnp.argmin(dist, 0)
  n = jnp.arange(lp.shape[1])
  f = jnp.argmin(hits[k, n], -1)
  normal = _cross([e1[i][k, 0, f] for i in range(3)], [e2[i][k, 0, f] for i in range(3)])
  return dist, k, jnp.stack(normal, -1)


def mesh_hits(m: Model, sel: np.ndarray, lp, lv):
  """Hits of rays lp, lv (G, N, 3) (in each mesh geom's frame) on mesh geoms `sel`:
  dist (G, N), the nearest geom's index k (N,) and its local normal (N, 3)."""
  if m.mesh_facenum[m.geom_dataid[sel]].max() <= BRUTE_FORCE_FACES:
    return _all_triangle_hits(m, sel, lp, lv)
  tri, nrm, lo, hi = mesh_clusters(m, sel)
  tri_j, lo_j, hi_j = (jnp.asarray(a, lp.dtype) for a in (tri, lo, hi))
  pick = jax.vmap(jax.vmap(_nearest_triangle, (None, None, None, 0, 0)), (0, 0, 0, 0, 0))
  c, j = pick(tri_j, lo_j, hi_j, jax.lax.stop_gradient(lp), jax.lax.stop_gradient(lv))
  g = jnp.arange(len(sel))[:, None]
  one = tri_j[g, c, j]  # (G, N, 3, 3)
  dist = jax.vmap(jax.vmap(lambda p, v, t: ray_lib.triangle_hits(p, v, t[None])[0]))(
    lp, lv, one)
  k = jnp.argmin(dist, axis=0)
  n = jnp.arange(lp.shape[1])
  return dist, k, jnp.asarray(nrm)[k, c[k, n], j[k, n]]
