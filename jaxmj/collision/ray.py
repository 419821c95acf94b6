"""Ray casting against geoms: mj_ray and mj_multiRay, vectorized over geoms by type.

A ray is pnt + x * vec, x >= 0 (vec need not be unit: distances are in units of |vec|, as
MuJoCo's). Each geom type has an intersection function in the geom's local frame; `ray`
maps the ray into every candidate geom's frame, evaluates each type's function over its
geoms with vmap, and takes the nearest hit. Candidate geoms are chosen on the host from
static fields (group, body, static flag); invisible geoms (rgba alpha 0) are excluded as in
MuJoCo. Meshes are intersected triangle by triangle (one vectorized pass per mesh geom);
heightfields as MuJoCo's mj_rayHfield: the base box, the surface triangles and the sides of
the elevation box below the surface.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.types import Data, GeomType, Model

NGROUP = 6  # mjNGROUP


def _div(a, b):
  """a / b with b kept away from 0 (the result is discarded where |b| is that small)."""
  return a / jnp.where(jnp.abs(b) < MINVAL, MINVAL, b)


def _quad(a, b, c):
  """Smallest root x >= 0 of a x^2 + 2 b x + c = 0, or inf (mju's ray_quad)."""
  det = b * b - a * c
  ok = det >= MINVAL
  sq = jnp.sqrt(jnp.where(ok, det, 1.0))
  x0, x1 = _div(-b - sq, a), _div(-b + sq, a)
  x = jnp.where(x0 >= 0, x0, jnp.where(x1 >= 0, x1, jnp.inf))
  return jnp.where(ok, x, jnp.inf)


def _plane(size, p, v):
  """Front face (local +z side) of a plane, finite where size[0] or size[1] > 0."""
  x = _div(-p[2], v[2])
  hit = p[:2] + x * v[:2]
  inside = jnp.all((size[:2] <= 0) | (jnp.abs(hit) <= size[:2]))
  return jnp.where((v[2] <= -MINVAL) & (x >= 0) & inside, x, jnp.inf)


def _sphere(size, p, v):
  return _quad(v @ v, v @ p, p @ p - size[0] ** 2)


def _ellipsoid(size, p, v):
  s = 1.0 / (size * size)
  return _quad((s * v) @ v, (s * v) @ p, (s * p) @ p - 1.0)


def _side(size, p, v):
  """Round side of a capsule or cylinder between the flat ends z = +-size[1]."""
  x = _quad(v[:2] @ v[:2], v[:2] @ p[:2], p[:2] @ p[:2] - size[0] ** 2)
  z = p[2] + jnp.where(jnp.isfinite(x), x, 0.0) * v[2]
  return jnp.where(jnp.abs(z) <= size[1], x, jnp.inf)


def _capsule(size, p, v):
  best = _side(size, p, v)
  for sign in (1.0, -1.0):
    c = jnp.array([0.0, 0.0, sign]) * size[1]
    q = p - c
    a, b, cc = v @ v, v @ q, q @ q - size[0] ** 2
    det = b * b - a * cc
    ok = det >= MINVAL
    sq = jnp.sqrt(jnp.where(ok, det, 1.0))
    # Both roots: the nearer one may lie on the hidden half of the end sphere.
    for x in (_div(-b - sq, a), _div(-b + sq, a)):
      z = p[2] + x * v[2]
      good = ok & (x >= 0) & (sign * z >= size[1])
      best = jnp.where(good & (x < best), x, best)
  return best


def _cylinder(size, p, v):
  best = _side(size, p, v)
  for sign in (1.0, -1.0):
    x = _div(sign * size[1] - p[2], v[2])
    hit = p[:2] + x * v[:2]
    good = (jnp.abs(v[2]) >= MINVAL) & (x >= 0) & (hit @ hit <= size[0] ** 2)
    best = jnp.where(good & (x < best), x, best)
  return best


def box_faces(size, p, v):
  """(6,) distance to each face of the box (-x, +x, -y, +y, -z, +z; inf for a miss)."""
  out = []
  for i in range(3):
    j, k = (i + 1) % 3, (i + 2) % 3
    for sign in (-1.0, 1.0):
      x = _div(sign * size[i] - p[i], v[i])
      good = ((jnp.abs(v[i]) >= MINVAL) & (x >= 0) & (jnp.abs(p[j] + x * v[j]) <= size[j])
              & (jnp.abs(p[k] + x * v[k]) <= size[k]))
      out.append(jnp.where(good, x, jnp.inf))
  return jnp.stack(out)


def _box(size, p, v):
  return jnp.min(box_faces(size, p, v))


def _triangles(p, v, tri):
  """Nearest hit of the ray with triangles tri (n, 3, 3), local frame (mju ray_triangle):
  the ray's origin must project inside the triangle in the plane normal to the ray."""
  return jnp.min(triangle_hits(p, v, tri), initial=jnp.inf)


def triangle_hits(p, v, tri):
  """(n,) distance along the ray to each triangle of tri (n, 3, 3), inf for a miss."""
  b0, b1 = _orthogonals(v)
  dif = tri - p
  planar = jnp.stack([dif @ b0, dif @ b1], axis=-1)  # (n, 3, 2)
  a = jnp.stack([planar[:, 0] - planar[:, 2], planar[:, 1] - planar[:, 2]], axis=-1)  # (n,2,2)
  rhs = -planar[:, 2]
  det = a[:, 0, 0] * a[:, 1, 1] - a[:, 0, 1] * a[:, 1, 0]
  ok = jnp.abs(det) >= MINVAL
  t0 = _div(rhs[:, 0] * a[:, 1, 1] - rhs[:, 1] * a[:, 0, 1], det)
  t1 = _div(a[:, 0, 0] * rhs[:, 1] - a[:, 1, 0] * rhs[:, 0], det)
  ok &= (t0 >= 0) & (t1 >= 0) & (t0 + t1 <= 1)
  nrm = jnp.cross(tri[:, 0] - tri[:, 2], tri[:, 1] - tri[:, 2])
  x = _div(jnp.sum(dif[:, 2] * nrm, -1), nrm @ v)
  return jnp.where(ok & (x >= 0), x, jnp.inf)


def _orthogonals(v):
  """Two unit vectors orthogonal to v and to each other."""
  n = v / jnp.sqrt(jnp.maximum(v @ v, MINVAL))
  pick = jnp.where(jnp.abs(n[0]) < 0.5, jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 1.0, 0.0]))
  b0 = jnp.cross(n, pick)
  b0 = b0 / jnp.sqrt(b0 @ b0)
  return b0, jnp.cross(n, b0)


def mesh_triangles(m: Model, sel: np.ndarray) -> np.ndarray:
  """(len(sel), F, 3, 3) triangles of mesh geoms `sel` in their frames, padded to the
  largest face count with degenerate (zero) triangles, which no ray hits."""
  mesh = m.geom_dataid[sel]
  nface = m.mesh_facenum[mesh]
  tri = np.zeros((len(sel), int(nface.max()), 3, 3))
  vert = np.asarray(m.mesh_vert, np.float64)
  for k, i in enumerate(mesh):
    fa = m.mesh_faceadr[i]
    tri[k, : nface[k]] = vert[m.mesh_vertadr[i] + m.mesh_face[fa:fa + nface[k]]]
  return tri


def _mesh_cast(m: Model, sel: np.ndarray, lp, lv):
  """(len(sel),) distances to mesh geoms `sel` (rays already in each geom's frame); the
  padded triangles let all mesh geoms go through one vmap."""
  return jax.vmap(_triangles)(lp, lv, jnp.asarray(mesh_triangles(m, sel)))


def hfield_cast(m: Model, sel: np.ndarray, lp, lv, normals: bool = False):
  """(len(sel),) distances to heightfield geoms `sel` (rays in each geom's frame), as
  mj_rayHfield: the nearest of the base box (below z = 0), and, if the ray enters the
  elevation box (0 <= z <= size[2]), the surface triangles of the cells its segment inside
  that box crosses (`_crossed_cells`) and the box's four sides where the hit lies below the
  edge profile. Fields are padded to common sizes so all go through one vmap.

  normals (static): also return (len(sel), 3) unit normals at the hits in each geom's frame,
  as mj_rayHfield's: the base box's face, the triangle's (pointing up) or the side's."""
  hid = m.geom_dataid[sel]
  nrow, ncol = m.hfield_nrow[hid].astype(np.int32), m.hfield_ncol[hid].astype(np.int32)
  nedge = int(max(nrow.max(), ncol.max()))
  # x, y of the grid lines in units of size[0], size[1] (padded), as the field's vertices
  unit = np.zeros((len(sel), 2, nedge))
  pidx = np.zeros((len(sel), 4, nedge), np.int64)  # elevation along -x, +x, -y, +y sides
  pvalid = np.zeros((len(sel), 4, nedge), bool)
  for k, h in enumerate(hid):
    nr, nc, adr = int(nrow[k]), int(ncol[k]), int(m.hfield_adr[h])
    unit[k, 0, :nc], unit[k, 1, :nr] = np.linspace(-1, 1, nc), np.linspace(-1, 1, nr)
    rows = np.arange(nr) * nc
    pidx[k, 0, :nr], pidx[k, 1, :nr] = adr + rows, adr + rows + nc - 1
    pidx[k, 2, :nc] = adr + np.arange(nc)
    pidx[k, 3, :nc] = adr + (nr - 1) * nc + np.arange(nc)
    pvalid[k, :2, :nr] = pvalid[k, 2:, :nc] = True
  data = jnp.asarray(m.hfield_data)
  size = jnp.asarray(m.hfield_size)[hid]
  prof = jnp.where(pvalid, data[pidx], 0.0)
  adr = m.hfield_adr[hid].astype(np.int32)

  def one(size, unit, adr, nrow, ncol, prof, p, v):
    base_faces = box_faces(jnp.array([size[0], size[1], 0.5 * size[3]]),
                           p - jnp.array([0.0, 0.0, -0.5 * size[3]]), v)
    base = jnp.min(base_faces)
    k = jnp.argmin(base_faces)
    normal = jnp.eye(3, dtype=p.dtype)[k // 2] * jnp.where(k % 2 == 0, -1.0, 1.0)
    top_size = jnp.array([size[0], size[1], 0.5 * size[2]])
    faces = box_faces(top_size, p - jnp.array([0.0, 0.0, 0.5 * size[2]]), v)
    rows, cols, valid = _crossed_cells(size, nrow, ncol, nedge - 1, p, v)
    def vertex(r, c):
      r, c = jnp.clip(r, 0, nrow - 1), jnp.clip(c, 0, ncol - 1)
      z = data[adr + r * ncol + c] * size[2]
      return jnp.stack([unit[0, c] * size[0], unit[1, r] * size[1], z], -1)

    a, b = vertex(rows, cols), vertex(rows + 1, cols + 1)
    tri = jnp.concatenate([jnp.stack([a, b, vertex(rows, cols + 1)], 1),
                           jnp.stack([a, b, vertex(rows + 1, cols)], 1)])
    hits = jnp.where(jnp.concatenate([valid, valid]), triangle_hits(p, v, tri), jnp.inf)
    first = tri[jnp.argmin(hits)]
    up = jnp.cross(first[1] - first[0], first[2] - first[0])
    # sign: half the triangles are wound clockwise seen from above; the guard is for the
    # degenerate triangles of masked cells (clipped vertices), never selected
    up = up * jnp.sign(up[2]) / jnp.sqrt(jnp.maximum(up @ up, MINVAL * MINVAL))
    normal = jnp.where(jnp.min(hits) < base, up, normal)
    best = jnp.minimum(base, jnp.min(hits))
    nprof = jnp.stack([nrow, nrow, ncol, ncol])  # profile points along -x, +x, -y, +y
    spacing = jnp.array([2 * size[1] / (nprof[0] - 1), 2 * size[1] / (nprof[1] - 1),
                         2 * size[0] / (nprof[2] - 1), 2 * size[0] / (nprof[3] - 1)])
    for i in range(4):
      hit = p + faces[i] * v
      along = (hit[1] + size[1]) if i < 2 else (hit[0] + size[0])
      t = along / spacing[i]
      t0 = jnp.clip(jnp.floor(t), 0, nprof[i] - 2)
      k0 = t0.astype(jnp.int32)
      edge = prof[i, k0] * (t0 + 1 - t) + prof[i, k0 + 1] * (t - t0)
      below = jnp.isfinite(faces[i]) & (hit[2] / size[2] < edge)
      side = below & (faces[i] < best)
      best = jnp.where(side, faces[i], best)
      normal = jnp.where(side, jnp.eye(3, dtype=p.dtype)[i // 2] * (i % 2 * 2 - 1), normal)
    entered = jnp.min(faces) < jnp.inf
    if normals:
      return jnp.where(entered, best, base), normal
    return jnp.where(entered, best, base)

  return jax.vmap(one)(size, jnp.asarray(unit), adr, nrow, ncol, prof, lp, lv)


def _crossed_cells(size, nrow, ncol, nmajor: int, p, v):
  """The cells of a heightfield grid whose triangles the ray p + t v (t >= 0, field frame)
  can hit: those its segment inside the elevation box crosses, one cell of padding around
  them (mj_rayHfield's rectangle of cells has the same padding). A triangle the segment
  does not cross cannot be hit, so the nearest hit is the one over every cell; MuJoCo tests
  the segment's bounding rectangle of cells, up to the whole grid for a diagonal ray.

  In cell units the segment runs along its major axis (the one it advances most on) at a
  slope of at most one, so over each cell of that axis it spans at most two cells of the
  other: four with the padding. Returns rows, cols (nmajor * 4,) int32 and which are
  cells of the segment (nmajor: a static bound on the cells along either axis).
  """
  dx, dy = 2 * size[0] / (ncol - 1), 2 * size[1] / (nrow - 1)
  lo, hi = jnp.stack([-size[0], -size[1], 0.0]), jnp.stack([size[0], size[1], size[2]])
  moving = v != 0
  inv = 1 / jnp.where(moving, v, 1.0)
  t1, t2 = (lo - p) * inv, (hi - p) * inv
  inside = (p >= lo) & (p <= hi)
  near = jnp.where(moving, jnp.minimum(t1, t2), jnp.where(inside, -jnp.inf, jnp.inf))
  far = jnp.where(moving, jnp.maximum(t1, t2), jnp.where(inside, jnp.inf, -jnp.inf))
  enter, leave = jnp.maximum(jnp.max(near), 0.0), jnp.min(far)
  crosses = enter <= leave
  enter, leave = jnp.where(crosses, enter, 0.0), jnp.where(crosses, leave, 0.0)
  u = (p[0] + jnp.stack([enter, leave]) * v[0] + size[0]) / dx  # segment ends, cell units
  w = (p[1] + jnp.stack([enter, leave]) * v[1] + size[1]) / dy
  # the axis from the direction alone, in products (no sum for XLA to contract into a fused
  # multiply-add in one of the kernels it recomputes this in and not in another: a
  # near-vertical ray's axis then flipped between the selects below)
  along_u = jnp.abs(v[0]) * dy >= jnp.abs(v[1]) * dx
  a, b = jnp.where(along_u, u, w), jnp.where(along_u, w, u)  # major, minor axis
  na, nb = jnp.where(along_u, ncol, nrow) - 1, jnp.where(along_u, nrow, ncol) - 1
  va, vb = jnp.where(along_u, v[0] * dy, v[1] * dx), jnp.where(along_u, v[1] * dx, v[0] * dy)
  slope = jnp.where(va != 0, vb / jnp.where(va != 0, va, 1.0), 0.0)  # |slope| <= 1
  amin, amax = jnp.minimum(a[0], a[1]), jnp.maximum(a[0], a[1])
  i = jnp.arange(nmajor, dtype=jnp.int32)
  ends = jnp.stack([jnp.clip(i, amin, amax), jnp.clip(i + 1, amin, amax)])
  first = jnp.floor(jnp.min(b[0] + (ends - a[0]) * slope, axis=0)).astype(jnp.int32) - 1
  i, j = jnp.repeat(i, 4), jnp.repeat(first, 4) + jnp.tile(jnp.arange(4, dtype=jnp.int32),
                                                            nmajor)
  valid = (crosses & (i < na) & (j >= 0) & (j < nb)
           & (i >= jnp.floor(amin).astype(jnp.int32) - 1)
           & (i < jnp.ceil(amax).astype(jnp.int32) + 1))
  return jnp.where(along_u, j, i), jnp.where(along_u, i, j), valid


# GeomType -> distance along the ray in the geom's local frame (inf for a miss).
RAY_FUNCS = {
  GeomType.PLANE: _plane,
  GeomType.SPHERE: _sphere,
  GeomType.CAPSULE: _capsule,
  GeomType.ELLIPSOID: _ellipsoid,
  GeomType.CYLINDER: _cylinder,
  GeomType.BOX: _box,
}


def candidates(m: Model, geomgroup=None, flg_static: bool = True,
               bodyexclude: int | Sequence[int] = -1) -> np.ndarray:
  """Static ids of the geoms a ray may hit (mj_ray's ray_eliminate), host side."""
  keep = np.asarray(m.geom_rgba)[:, 3] != 0
  for b in np.atleast_1d(np.asarray(bodyexclude)):
    keep &= m.geom_bodyid != b
  if not flg_static:
    keep &= m.body_weldid[m.geom_bodyid] != 0
  if geomgroup is not None:
    groups = np.asarray(geomgroup, bool)
    keep &= groups[np.clip(m.geom_group, 0, NGROUP - 1)]
  ids = np.flatnonzero(keep)
  other = set(int(t) for t in m.geom_type[ids]) - set(int(t) for t in RAY_FUNCS) - {
    int(GeomType.MESH), int(GeomType.HFIELD)}
  if other:
    names = ", ".join(GeomType(t).name.lower() for t in sorted(other))
    raise NotImplementedError(f"ray casting against {names} geoms is not supported by jaxmj yet")
  return ids


def cast(m: Model, d: Data, ids: np.ndarray, pnt, vec, bodyexclude=None):
  """(dist, geomid) of the nearest hit among static geom ids `ids`; (-1, -1) if none.

  bodyexclude: optional traced body id whose geoms are skipped (for vmapping over rays
  that each exclude their own body, as rangefinders do).
  """
  if len(ids) == 0:
    return jnp.array(-1.0, pnt.dtype), jnp.array(-1, jnp.int32)
  dists, order = [], []
  for gtype in (*RAY_FUNCS, GeomType.MESH, GeomType.HFIELD):
    sel = ids[m.geom_type[ids] == gtype]
    if len(sel) == 0:
      continue
    mat = d.geom_xmat[sel]
    lp = jnp.einsum("nji,nj->ni", mat, pnt - d.geom_xpos[sel])
    lv = jnp.einsum("nji,j->ni", mat, vec)
    if gtype == GeomType.MESH:
      dists.append(_mesh_cast(m, sel, lp, lv))
    elif gtype == GeomType.HFIELD:
      dists.append(hfield_cast(m, sel, lp, lv))
    else:
      dists.append(jax.vmap(RAY_FUNCS[gtype])(m.geom_size[sel], lp, lv))
    order.append(sel)
  dist = jnp.concatenate(dists)
  gid = np.concatenate(order).astype(np.int32)
  if bodyexclude is not None:
    dist = jnp.where(jnp.asarray(m.geom_bodyid[gid]) == bodyexclude, jnp.inf, dist)
  k = jnp.argmin(dist)
  hit = jnp.isfinite(dist[k])
  return jnp.where(hit, dist[k], -1.0), jnp.where(hit, jnp.asarray(gid)[k], -1)


def ray(m: Model, d: Data, pnt: jax.Array, vec: jax.Array, geomgroup=None,
        flg_static: bool = True, bodyexclude: int | Sequence[int] = -1):
  """mj_ray: nearest geom surface along pnt + x vec (x >= 0), global frame.

  pnt, vec: (3,). geomgroup: None (all groups) or 6 flags, which groups to include.
  flg_static: include geoms of static bodies (welded to the world). bodyexclude: a body id
  (or ids) whose geoms are skipped. Reads geom_xpos, geom_xmat. Returns (dist, geomid),
  (-1, -1) when nothing is hit. geomgroup, flg_static and bodyexclude are static.
  """
  _check_shape("ray", vec, 1)
  return _cast_jit(m, d, jnp.asarray(pnt), jnp.asarray(vec),
                   **_static_options(geomgroup, flg_static, bodyexclude))


def multi_ray(m: Model, d: Data, pnt: jax.Array, vec: jax.Array, geomgroup=None,
              flg_static: bool = True, bodyexclude: int | Sequence[int] = -1):
  """mj_multiRay: many rays from one point. pnt (3,), vec (nray, 3).

  Returns dist (nray,) and geomid (nray,), -1 where a ray hits nothing.
  """
  _check_shape("multi_ray", vec, 2)
  return _cast_jit(m, d, jnp.asarray(pnt), jnp.asarray(vec),
                   **_static_options(geomgroup, flg_static, bodyexclude))


def _check_shape(fn: str, vec, ndim: int) -> None:
  shape = np.shape(vec)
  if len(shape) != ndim or shape[-1] != 3:
    want = "(3,)" if ndim == 1 else "(nray, 3)"
    raise ValueError(f"{fn}: vec must have shape {want}, not {shape}")


def _static_options(geomgroup, flg_static, bodyexclude) -> dict:
  """ray's static options as hashable values (lists and arrays as tuples), so that equal
  options share one trace."""
  return dict(
    geomgroup=None if geomgroup is None else tuple(bool(g) for g in np.ravel(geomgroup)),
    flg_static=bool(flg_static),
    bodyexclude=tuple(int(b) for b in np.atleast_1d(bodyexclude)))


# ray and multi_ray are jits of their own: outside jit humanoid_floor's ray ran operation by
# operation (7.4 s first, 128 ms a call after).
@functools.partial(jax.jit, static_argnames=("geomgroup", "flg_static", "bodyexclude"))
def _cast_jit(m: Model, d: Data, pnt: jax.Array, vec: jax.Array, *, geomgroup, flg_static,
              bodyexclude):
  """cast of one ray (vec (3,)) or of a fan of rays from pnt (vec (nray, 3))."""
  ids = candidates(m, geomgroup, flg_static, bodyexclude)
  if vec.ndim == 1:
    return cast(m, d, ids, pnt, vec)
  return jax.vmap(lambda v: cast(m, d, ids, pnt, v))(vec)
