"""Box-box collider: mjc_BoxBox as of MuJoCo 4.0 (engine_collision_box.c).

Separating axes with a face preference (stage 1), then either the incident face clipped
against the reference face's sides or one edge-edge contact (stage 2); see primitive.py for
the collider conventions (slots, frames, margins) and common.py for the helpers that keep
XLA's compile time down: `select_at` (a traced index as selects, not a gather), `materialize` (a
value XLA stores once instead of recomputing in every kernel that reads it), and short scans
where a stage repeats.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmj.collision.common import (
  BIG,
  MINVAL,
  Collision,
  GeomFrame,
  dot3,
  first_k,
  make_frame,
  mat_t_vec3,
  mat_vec3,
  materialize,
  next_of_3,
  normalize3,
  pack_slots,
  safe_div,
  safe_sqrt,
  select_at,
  select_col,
  take_rows,
)
from jaxmj.constants import MAXVAL
from jaxmj.loops import short_scan

BOXBOX_SEPEPS = 1e-6  # slack on the separation tests, times the summed half-sizes
BOXBOX_PAREPS = 1e-7  # sin^2 of the edge angle below which an edge-cross axis is skipped
BOXBOX_SGNEPS = 1e-5  # axis component below which the supporting edge is ambiguous
BOXBOX_DUPEPS = 1e-10  # squared relative radius for merging clipped vertices
BOXBOX_EDGEBIAS = 1e-6  # relative handicap of edge axes on near-ties with a face axis
BOXBOX_MAXVERT = 8  # a 4-gon clipped by 4 half-planes has at most 8 vertices


def _mm(a, b):
  """a @ b for 3x3, summed in index order."""
  return a[:, 0:1] * b[0:1, :] + a[:, 1:2] * b[1:2, :] + a[:, 2:3] * b[2:3, :]


def _onehot(k, dtype):
  return (jnp.arange(3) == k).astype(dtype)


def _edge_separations(rot, pos21, size1, size2, septol):
  """(9,) separation of the boxes along each edge-cross axis, pair k = 3i + j (box 1 edge i,
  box 2 edge j); -BIG for nearly parallel edges. rot: box 2 axes in box 1's frame (columns),
  pos21: box 2 centre in box 1's frame."""
  # edge-cross axes e_i x (box 2 axis j) in box 1's frame (component i is zero), pair k = 3i + j;
  # x[i1] over the pairs is roll(x, -1) repeated (box 1) or tiled (box 2): static slices, where
  # indexing with index arrays would be gathers
  rr = lambda di, dj: jnp.roll(jnp.roll(rot, -di, axis=0), -dj, axis=1).reshape(9)
  r1 = lambda v, di: jnp.repeat(jnp.roll(v, -di), 3)
  r2 = lambda v, dj: jnp.tile(jnp.roll(v, -dj), 3)
  ax1, ax2 = -rr(2, 0), rr(1, 0)
  norm2 = ax1 * ax1 + ax2 * ax2
  ok = ~(norm2 < BOXBOX_PAREPS)  # nearly parallel edges: left to the face axes
  inv = 1.0 / safe_sqrt(jnp.where(ok, norm2, 1.0))
  ax1, ax2 = ax1 * inv, ax2 * inv
  radius1 = r1(size1, 1) * jnp.abs(ax1) + r1(size1, 2) * jnp.abs(ax2)
  a21 = ax1 * rr(1, 1) + ax2 * rr(2, 1)
  a22 = ax1 * rr(1, 2) + ax2 * rr(2, 2)
  radius2 = r2(size2, 1) * jnp.abs(a21) + r2(size2, 2) * jnp.abs(a22)
  sep = jnp.abs(ax1 * r1(pos21, 1) + ax2 * r1(pos21, 2)) - radius1 - radius2
  sep = materialize(jnp.where(ok, sep, -BIG), septol)  # read by each step of _box_sat's choice
  return sep


def _box_sat(b1: GeomFrame, b2: GeomFrame, margin):
  """Stage 1: the axis of least separation (code 0-2 box-1 face, 3-5 box-2 face, 6 + 3i + j
  edge i of box 1 x edge j of box 2), with faces preferred on near-ties."""
  pos1, mat1, size1 = b1.pos, b1.mat, b1.size
  pos2, mat2, size2 = b2.pos, b2.mat, b2.size
  dt = pos1.dtype
  pos21 = mat_t_vec3(mat1, pos2 - pos1)  # box 2 centre in box 1's frame
  pos12 = mat_t_vec3(mat2, pos1 - pos2)
  rot = _mm(mat1.T, mat2)  # columns: box 2 axes in box 1's frame
  rotabs = jnp.abs(rot)
  septol = margin + BOXBOX_SEPEPS * (jnp.sum(size1) + jnp.sum(size2))

  # face axes: box 1's, then box 2's; the first largest separation wins
  sep1 = jnp.abs(pos21) - size1 - mat_vec3(rotabs, size2)
  sep2 = jnp.abs(pos12) - size2 - mat_t_vec3(rotabs, size1)
  seps = jnp.concatenate([sep1, sep2])
  separated = jnp.any(seps > septol)
  code_face = jnp.argmax(seps).astype(jnp.int32)
  sep_face = jnp.max(seps)

  sep = _edge_separations(rot, pos21, size1, size2, septol)
  separated = separated | jnp.any(sep > septol)
  beat = sep > sep_face
  biased = sep - BOXBOX_EDGEBIAS * jnp.abs(sep)

  # MuJoCo's sequential choice: an edge axis replaces the best so far if its handicapped
  # depth is larger
  sep_best, code = sep_face, code_face
  for k in range(9):
    upd = beat[k] & (biased[k] > sep_best)
    sep_best = jnp.where(upd, sep[k], sep_best)
    code = jnp.where(upd, jnp.int32(6 + k), code)

  # an edge axis within ~8 degrees of the best face axis gives way to the face unless it is
  # clearly (5% of the face depth) better
  edge = jnp.clip(code - 6, 0, 8)
  edge_i = jnp.where(edge >= 6, 2, jnp.where(edge >= 3, 1, 0))
  edge_ij = materialize(jnp.stack([edge_i, edge - 3 * edge_i]), septol)
  edge_i, edge_j = edge_ij[0], edge_ij[1]
  ei1 = next_of_3(edge_i)
  ei2 = next_of_3(ei1)
  rj = select_col(rot, edge_j)
  axis = _onehot(ei1, dt) * -select_at(rj, ei2) + _onehot(ei2, dt) * select_at(rj, ei1)
  axis, _ = normalize3(axis)
  axis = materialize(axis, septol)
  face_dot = jnp.where(
    code_face < 3,
    jnp.abs(select_at(axis, code_face)),
    jnp.abs(dot3(axis, select_col(rot, jnp.maximum(code_face - 3, 0)))),
  )
  to_face = (
    (code >= 6) & (face_dot > 0.99) & (sep_best < sep_face + 0.05 * jnp.abs(sep_face) + MINVAL)
  )
  code = jnp.where(to_face, code_face, code)
  code = materialize(code, septol)
  return {
    "pos21": pos21,
    "pos12": pos12,
    "rot": rot,
    "code": code,
    "separated": separated,
    "septol": septol,
    "axis": axis,
    "edge_i": edge_i,
    "edge_j": edge_j,
  }


def _box_edge(b1: GeomFrame, b2: GeomFrame, sat):
  """Stage 2, edge axis: one contact midway between the closest points of the two
  supporting edges (both candidate edges tried where the choice is ambiguous)."""
  size1, size2 = b1.size, b2.size
  rot, pos21, axis = sat["rot"], sat["pos21"], sat["axis"]
  ei, ej = sat["edge_i"], sat["edge_j"]
  dt = pos21.dtype
  i1, j1 = next_of_3(ei), next_of_3(ej)
  i2, j2 = next_of_3(i1), next_of_3(j1)
  axis = jnp.where(dot3(axis, pos21) < 0, -axis, axis)  # from box 1 towards box 2
  a2 = mat_t_vec3(rot, axis)  # the axis in box 2's frame
  x1, x2, y1, y2 = select_at(axis, i1), select_at(axis, i2), select_at(a2, j1), select_at(a2, j2)
  amb1 = jnp.where(jnp.abs(x1) < BOXBOX_SGNEPS, i1, jnp.where(jnp.abs(x2) < BOXBOX_SGNEPS, i2, -1))
  amb2 = jnp.where(jnp.abs(y1) < BOXBOX_SGNEPS, j1, jnp.where(jnp.abs(y2) < BOXBOX_SGNEPS, j2, -1))
  d2 = select_col(rot, ej)
  b = select_at(d2, ei)
  denom = 1.0 - b * b
  lim1, lim2 = select_at(size1, ei), select_at(size2, ej)

  # supporting edge corners, then the variants with the ambiguous sign flipped: (v1, v2) in
  # MuJoCo's loop order (0, 0), (0, 1), (1, 0), (1, 1)
  z1, z2 = select_at(size1, i1), select_at(size1, i2)
  w1, w2 = select_at(size2, j1), select_at(size2, j2)
  c1 = _onehot(i1, dt) * jnp.where(x1 >= 0, z1, -z1) + _onehot(i2, dt) * jnp.where(x2 >= 0, z2, -z2)
  cc = _onehot(j1, dt) * jnp.where(y1 >= 0, -w1, w1) + _onehot(j2, dt) * jnp.where(y2 >= 0, -w2, w2)
  v1 = jnp.array([0.0, 0.0, 1.0, 1.0], dt)[:, None]
  v2 = jnp.array([0.0, 1.0, 0.0, 1.0], dt)[:, None]
  c1 = c1[None, :] * (1.0 - 2.0 * v1 * _onehot(amb1, dt)[None, :])
  cc = cc[None, :] * (1.0 - 2.0 * v2 * _onehot(amb2, dt)[None, :])
  tried = jnp.array([True, True, False, False]) | (amb1 >= 0)
  tried = tried & (jnp.array([True, False, True, False]) | (amb2 >= 0))

  c1, cc = materialize(jnp.stack([c1, cc]), sat["septol"])
  c2 = jax.vmap(lambda x: mat_vec3(rot, x))(cc) + pos21
  e = c2 - c1
  d1e = select_at([e[:, 0], e[:, 1], e[:, 2]], ei)
  d2e = e[:, 0] * d2[0] + e[:, 1] * d2[1] + e[:, 2] * d2[2]
  s = jnp.where(denom >= MINVAL, safe_div(d1e - b * d2e, denom), 0.0)
  s = jnp.clip(s, -lim1, lim1)
  t = jnp.clip(b * s - d2e, -lim2, lim2)
  s = jnp.clip(d1e + b * t, -lim1, lim1)
  s, t = materialize(jnp.stack([s, t]), sat["septol"])
  p1 = jnp.where(jnp.arange(3)[None, :] == ei, s[:, None], c1)
  p2 = c2 + d2[None, :] * t[:, None]
  g = p2 - p1
  gap2 = jnp.where(tried, g[:, 0] * g[:, 0] + g[:, 1] * g[:, 1] + g[:, 2] * g[:, 2], MAXVAL)
  # the first closest pair among the variants tried
  w1, w2, best = p1[0], p2[0], gap2[0]
  for k in range(1, 4):
    upd = gap2[k] < best
    best = jnp.where(upd, gap2[k], best)
    w1, w2 = jnp.where(upd, p1[k], w1), jnp.where(upd, p2[k], w2)
  w1, w2 = materialize(jnp.stack([w1, w2]), sat["septol"])

  dist = dot3(w2 - w1, axis)
  valid = ~(dist > sat["septol"])
  pos = mat_vec3(b1.mat, 0.5 * (w1 + w2)) + b1.pos
  normal = mat_vec3(b1.mat, axis)
  n = BOXBOX_MAXVERT
  slots = jnp.arange(n) == 0
  return (slots & valid, jnp.where(slots, dist, MAXVAL), jnp.broadcast_to(pos, (n, 3)), normal)


def _clip(poly, n, coord, sign, limit):
  """Sutherland-Hodgman: clip the first n vertices of poly (8, 3) to sign * v[coord] <= limit
  (z rides along as an attribute); returns the new polygon and count (at most 8)."""
  m = BOXBOX_MAXVERT
  k = jnp.arange(m)
  live = k < n
  d = sign * jnp.where(coord == 0, poly[:, 0], poly[:, 1]) - limit
  all_inside = jnp.all(~live | (d <= 0))
  k1 = jnp.where(k + 1 == n, 0, k + 1)
  q = poly[k1]
  dq = d[k1]
  cross = ((d < 0) & (dq > 0)) | ((d > 0) & (dq < 0))
  t = safe_div(d, d - dq)
  hit = poly + t[:, None] * (q - poly)
  cand = jnp.stack([poly, hit], axis=1).reshape(2 * m, 3)  # p0, x0, p1, x1, ...
  ok = jnp.stack([live & (d <= 0), live & cross], axis=1).reshape(2 * m)
  sel, _ = first_k(ok, m)
  out = take_rows(sel, cand)
  count = jnp.minimum(jnp.sum(ok.astype(jnp.int32)), m)
  return jnp.where(all_inside, poly, out), jnp.where(all_inside, n, count).astype(jnp.int32)


def _box_face(b1: GeomFrame, b2: GeomFrame, sat, margin):
  """Stage 2, face axis: the incident face clipped against the reference face's sides;
  clipped vertices within the margin, merged when nearly coincident, become contacts."""
  dt = b1.pos.dtype
  code = jnp.clip(sat["code"], 0, 5)
  ref1 = code < 3
  a = jnp.where(ref1, code, code - 3)
  sizeref = jnp.where(ref1, b1.size, b2.size)
  sizeinc = jnp.where(ref1, b2.size, b1.size)
  posref = jnp.where(ref1, b1.pos, b2.pos)
  matref = jnp.where(ref1, b1.mat, b2.mat)
  posoi = jnp.where(ref1, sat["pos21"], sat["pos12"])  # incident centre, reference frame
  rinc = jnp.where(ref1, sat["rot"], sat["rot"].T)  # columns: incident axes

  # (ax, ay, a): the reference face's in-plane axes, then its normal (a cyclic permutation)
  def perm(v):
    return select_at([jnp.stack([v[1], v[2], v[0]]), jnp.stack([v[2], v[0], v[1]]), v], a)

  sgn = jnp.where(select_at(posoi, a) >= 0, 1.0, -1.0)
  # incident face: the first most opposed to the reference normal
  row = jnp.abs(select_at(rinc, a))
  binc = jnp.where(row[1] > row[0], 1, 0)
  binc = jnp.where(row[2] > jnp.maximum(row[0], row[1]), 2, binc)
  a, binc = materialize(jnp.stack([a, binc]), sat["septol"])
  colb = select_col(rinc, binc)
  tinc = jnp.where(sgn * select_at(colb, a) > 0, -1.0, 1.0)
  bu = next_of_3(binc)
  bv = next_of_3(bu)
  sref = perm(sizeref)
  cx = perm(posoi) + tinc * select_at(sizeinc, binc) * perm(colb)
  du = select_at(sizeinc, bu) * perm(select_col(rinc, bu))
  dv = select_at(sizeinc, bv) * perm(select_col(rinc, bv))
  scale = jnp.stack([jnp.ones_like(sgn), jnp.ones_like(sgn), sgn])
  cx = jnp.stack([cx[0], cx[1], sgn * cx[2] - sref[2]])
  du = du * scale
  dv = dv * scale
  cx, du, dv, sref = materialize(jnp.stack([cx, du, dv, sref]), sat["septol"])

  su = jnp.array([1.0, -1.0, -1.0, 1.0], dt)
  sv = jnp.array([1.0, 1.0, -1.0, -1.0], dt)
  quad = cx + su[:, None] * du + sv[:, None] * dv
  poly = jnp.concatenate([quad, jnp.zeros((BOXBOX_MAXVERT - 4, 3), dt)])
  n = jnp.asarray(4, jnp.int32)
  # the four sides of the reference face, in MuJoCo's order: one clipping stage repeated by a
  # scan (compiled once) rather than four copies of it
  stages = (jnp.array([0, 0, 1, 1]), jnp.array([1.0, -1.0, 1.0, -1.0], dt),
            jnp.stack([sref[0], sref[0], sref[1], sref[1]]))
  (poly, n), _ = short_scan(lambda c, s: (_clip(*c, *s), None), (poly, n), stages)

  # accept vertices within the margin, skipping those within dupe radius of an accepted one
  dupe2 = BOXBOX_DUPEPS * (sref[0] * sref[0] + sref[1] * sref[1])
  live = (jnp.arange(BOXBOX_MAXVERT) < n) & ~(poly[:, 2] > margin)
  dxy = poly[:, None, :2] - poly[None, :, :2]
  close = dxy[..., 0] * dxy[..., 0] + dxy[..., 1] * dxy[..., 1] < dupe2

  def accept(acc, k):
    take = live[k] & ~jnp.any(acc & close[k])
    return acc | (jnp.arange(BOXBOX_MAXVERT) == k) & take, None

  accepted, _ = short_scan(accept, jnp.zeros(BOXBOX_MAXVERT, bool), jnp.arange(BOXBOX_MAXVERT))

  normal = jnp.where(ref1, sgn, -sgn) * select_col(matref, a)
  ax = next_of_3(a)
  ay = next_of_3(ax)
  local = jax.vmap(
    lambda v: (
      _onehot(ax, dt) * v[0]
      + _onehot(ay, dt) * v[1]
      + _onehot(a, dt) * (sgn * (sref[2] + 0.5 * v[2]))
    )
  )(poly)
  pos = jax.vmap(lambda x: mat_vec3(matref, x) + posref)(local)
  return accepted, poly[:, 2], pos, normal


def box_box(b1: GeomFrame, b2: GeomFrame, margin) -> Collision:
  """mjc_BoxBox (MuJoCo 4.0): up to 8 face contacts or 1 edge-edge contact."""
  sat = _box_sat(b1, b2, margin)
  ev, ed, ep, en = _box_edge(b1, b2, sat)
  fv, fd, fp, fn = _box_face(b1, b2, sat, margin)
  is_edge = sat["code"] >= 6
  valid = jnp.where(is_edge, ev, fv) & ~sat["separated"] & (sat["code"] >= 0)
  dist = jnp.where(is_edge, ed, fd)
  pos = jnp.where(is_edge, ep, fp)
  frame = make_frame(jnp.where(is_edge, en, fn))
  return pack_slots(valid, dist, pos, jnp.broadcast_to(frame, (BOXBOX_MAXVERT, 3, 3)))
