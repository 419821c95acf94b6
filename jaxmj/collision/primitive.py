"""Native colliders for primitive geom pairs (engine_collision_primitive.c, _box.c).

Each collider handles ONE geom pair (the driver vmaps it) and has a fixed number of contact
slots, MuJoCo's maximum for the pair:

    fn(g1: GeomFrame, g2: GeomFrame, margin) -> (dist (n,), pos (n, 3), frame (n, 3, 3))

geom1 has the smaller type, as in mj_collideGeoms. `margin` is the distance MuJoCo hands its
collider (in MuJoCo 4.0: the sum of the two geom margins plus the sum of their gaps, or a
pair's margin + gap). `frame` rows are [normal, tangent1, tangent2], the normal pointing
from geom1 to geom2, completed by `make_frame` as mju_makeFrame completes mjContact.frame.
`dist` is negative in penetration. A slot holds a contact where MuJoCo's collider reports
one (dist <= margin, give or take the boundary); other slots have dist = NO_CONTACT, so the
driver keeps the contacts with dist < margin.

The algorithms are MuJoCo 4.0's, checked against mujoco 4.0.0 to round-off (1e-14), branches
and degenerate cases included; every branch is evaluated and selected with `where`, and
MuJoCo's sequential searches run as short `lax.scan`s or unrolled select chains. Two differ
from older MuJoCo sources: capsule-capsule with (nearly) parallel axes, and box-box
(boxbox.py), which 4.0 rewrote (separating axes with a face preference, then incident-face
clipping or one edge contact). Divisions, norms and square roots are guarded so that
gradients stay finite in touching, coincident and parallel configurations, through the
branches not selected too.

Compile time: XLA:CPU compiles each fused kernel with LLVM, and fuses a cheap value into
every kernel that reads it, recomputing it there. The colliders therefore index with traced
indices through selects (`select_at`, `select_col`, `next_of_3`) rather than gathers and
integer remainders, store values read by many kernels once (`materialize`), and run a stage
that repeats (box-box's four clipping passes) as a scan. These change no arithmetic: outputs
are bit for bit those of the straightforward formulation (scripts/compile_time.py measures
each collider).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.collision import boxbox
from jaxmj.collision.common import (
  BIG,
  MINVAL,
  NO_CONTACT,  # noqa: F401 (the driver and the other colliders import it from here)
  Collision,
  GeomFrame,
  cross3,
  dot3,
  first_k,
  make_frame,
  mat_t_vec3,
  mat_vec3,
  materialize,
  next_of_3,
  normalize3,
  pack_slots,
  recip,
  safe_div,
  safe_sqrt,
  select_at,
  take_rows,
)
from jaxmj.loops import short_scan
from jaxmj.types import GeomType

# capsule-capsule: axes count as parallel below this sin^2 of their angle (MuJoCo 4.0, double);
# in float32 the determinant's round-off alone is ~1e-7 of its scale, so 1e-5 is used there
PARALLEL_SIN2 = 1e-8
PARALLEL_SIN2_F32 = 1e-5


# ------------------------------------------------------------------------------------------
# raw pairwise tests (MuJoCo's mjraw_* helpers); each returns (valid, dist, pos, normal)


def _raw_plane_sphere(n, plane_pos, sphere_pos, radius, margin):
  cdist = dot3(sphere_pos - plane_pos, n)
  valid = ~(cdist > margin + radius)
  dist = cdist - radius
  pos = sphere_pos + n * (-dist / 2 - radius)
  return valid, dist, pos, n


def _raw_sphere_sphere(pos1, mat1, r1, pos2, mat2, r2, margin):
  dif = pos1 - pos2
  cdist_sqr = dot3(dif, dif)
  min_dist = margin + r1 + r2
  valid = ~(cdist_sqr > min_dist * min_dist)
  dist = safe_sqrt(cdist_sqr) - r1 - r2
  normal, length = normalize3(pos2 - pos1)
  # coincident centres: normal = cross product of the z axes, else (1, 0, 0)
  alt, _ = normalize3(cross3(mat1[:, 2], mat2[:, 2]))
  normal = jnp.where(length < MINVAL, alt, normal)
  pos = pos1 + normal * (r1 + dist / 2)
  return valid, dist, pos, normal


def _raw_sphere_box(pos1, r1, pos2, mat2, size2, margin):
  center = mat_t_vec3(mat2, pos1 - pos2)
  clamped = jnp.where(size2 > 0, jnp.clip(center, -size2, size2), center)
  tmp, dist = normalize3(clamped - center)
  valid = ~(dist - r1 > margin)

  # sphere centre inside the box: push out through the nearest face (first minimum)
  faces = jnp.stack([-size2, size2], axis=-1).reshape(-1)  # -s0, s0, -s1, s1, -s2, s2
  gaps = jnp.abs(faces - jnp.repeat(center, 2))
  k = jnp.argmin(gaps)
  closest = gaps[k]
  nearest = jnp.zeros(3, center.dtype).at[k // 2].set(jnp.where(k % 2 == 1, -1.0, 1.0))
  pos_in = center + nearest * ((r1 - closest) / 2)

  deepest = center + tmp * r1
  pos_out = clamped * 0.5 + deepest * 0.5

  inside = dist <= MINVAL
  pos = mat_vec3(mat2, jnp.where(inside, pos_in, pos_out)) + pos2
  normal = mat_vec3(mat2, jnp.where(inside, nearest, tmp))
  d = jnp.where(inside, -closest, dist) - r1
  return valid, d, pos, normal


# ------------------------------------------------------------------------------------------
# plane colliders


def plane_sphere(plane: GeomFrame, sphere: GeomFrame, margin) -> Collision:
  n = plane.mat[:, 2]
  valid, dist, pos, normal = _raw_plane_sphere(n, plane.pos, sphere.pos, sphere.size[0], margin)
  return pack_slots(valid[None], dist[None], pos[None], make_frame(normal)[None])


def plane_capsule(plane: GeomFrame, cap: GeomFrame, margin) -> Collision:
  """Two sphere tests at the segment ends; tangent1 follows the capsule axis."""
  n = plane.mat[:, 2]
  axis = cap.mat[:, 2]
  segment = axis * cap.size[1]
  out = []
  for end in (cap.pos + segment, cap.pos - segment):
    out.append(_raw_plane_sphere(n, plane.pos, end, cap.size[0], margin))
  valid, dist, pos, _ = (jnp.stack(x) for x in zip(*out))
  frame = make_frame(n, axis)
  return pack_slots(valid, dist, pos, jnp.stack([frame, frame]))


def plane_ellipsoid(plane: GeomFrame, ell: GeomFrame, margin) -> Collision:
  """mjc_PlaneConvex for an ellipsoid: its support point along -normal."""
  n = plane.mat[:, 2]
  size = ell.size
  local = mat_t_vec3(ell.mat, -n) * size
  norm2 = dot3(local, local)
  small = norm2 < MINVAL * MINVAL
  inv = 1.0 / safe_sqrt(jnp.where(small, 1.0, norm2))
  supp = jnp.where(small, ell.mat[:, 0] * size[0], mat_vec3(ell.mat, local * inv * size)) + ell.pos
  dist = dot3(n, supp - plane.pos)
  valid = ~(dist > margin)
  pos = supp + n * (-0.5 * dist)
  return pack_slots(valid[None], dist[None], pos[None], make_frame(n)[None])


def plane_cylinder(plane: GeomFrame, cyl: GeomFrame, margin) -> Collision:
  """Deepest rim point, the opposite cap's rim point and two more points on the near cap."""
  n = plane.mat[:, 2]
  axis = cyl.mat[:, 2]
  radius, height = cyl.size[0], cyl.size[1]

  # make the axis point towards the plane
  prjaxis = dot3(n, axis)
  flip = prjaxis > 0
  axis = jnp.where(flip, -axis, axis)
  prjaxis = jnp.where(flip, -prjaxis, prjaxis)

  dist0 = dot3(cyl.pos - plane.pos, n)

  # rim direction closest to the plane (the disk's x axis when the disk is parallel)
  vec = axis * prjaxis - n
  len_sqr = dot3(vec, vec)
  general = len_sqr >= MINVAL * MINVAL
  scl = radius / safe_sqrt(jnp.where(general, len_sqr, 1.0))
  vec = jnp.where(general, vec * scl, cyl.mat[:, 0] * radius)
  prjvec = dot3(vec, n)

  axis = axis * height
  prjaxis = prjaxis * height

  d1 = dist0 + prjaxis + prjvec
  d2 = dist0 - prjaxis + prjvec
  d3 = dist0 + prjaxis - prjvec * 0.5
  v1 = d1 <= margin
  p1 = cyl.pos + vec + axis + n * (-d1 * 0.5)
  p2 = cyl.pos + vec - axis + n * (-d2 * 0.5)
  side, _ = normalize3(cross3(vec, axis))
  side = side * (radius * np.sqrt(3.0) / 2)
  pa = cyl.pos + side + axis - vec * 0.5 + n * (-d3 * 0.5)
  pb = cyl.pos - side + axis - vec * 0.5 + n * (-d3 * 0.5)

  valid = jnp.stack([v1, v1 & (d2 <= margin), v1 & (d3 <= margin), v1 & (d3 <= margin)])
  dist = jnp.stack([d1, d2, d3, d3])
  frame = make_frame(n)
  return pack_slots(valid, dist, jnp.stack([p1, p2, pa, pb]), jnp.broadcast_to(frame, (4, 3, 3)))


def plane_box(plane: GeomFrame, box: GeomFrame, margin) -> Collision:
  """The first four corners (in MuJoCo's corner order) below the plane and within margin."""
  n = plane.mat[:, 2]
  dist = dot3(box.pos - plane.pos, n)
  signs = np.array(
    [[(1 if i & 1 else -1), (1 if i & 2 else -1), (1 if i & 4 else -1)] for i in range(8)],
    dtype=float,
  )
  corners = jax.vmap(lambda s: mat_vec3(box.mat, s * box.size))(jnp.asarray(signs, box.size.dtype))
  ldist = jax.vmap(lambda c: dot3(n, c))(corners)
  ok = ~((dist + ldist > margin) | (ldist > 0))
  sel, valid = first_k(ok, 4)
  d = dist + take_rows(sel, ldist)
  pos = take_rows(sel, corners) + box.pos + n[None] * (-d[:, None] / 2)
  frame = make_frame(n)
  return pack_slots(valid, d, pos, jnp.broadcast_to(frame, (4, 3, 3)))


# ------------------------------------------------------------------------------------------
# sphere and capsule colliders


def sphere_sphere(s1: GeomFrame, s2: GeomFrame, margin) -> Collision:
  valid, dist, pos, normal = _raw_sphere_sphere(
    s1.pos, s1.mat, s1.size[0], s2.pos, s2.mat, s2.size[0], margin
  )
  return pack_slots(valid[None], dist[None], pos[None], make_frame(normal)[None])


def sphere_capsule(sphere: GeomFrame, cap: GeomFrame, margin) -> Collision:
  axis = cap.mat[:, 2]
  length = cap.size[1]
  x = jnp.clip(dot3(axis, sphere.pos - cap.pos), -length, length)
  point = axis * x + cap.pos
  valid, dist, pos, normal = _raw_sphere_sphere(
    sphere.pos, sphere.mat, sphere.size[0], point, cap.mat, cap.size[0], margin
  )
  return pack_slots(valid[None], dist[None], pos[None], make_frame(normal)[None])


def sphere_cylinder(sphere: GeomFrame, cyl: GeomFrame, margin) -> Collision:
  """Side (sphere-sphere), cap (plane-sphere) or rim corner (sphere-point) contact."""
  radius, height = cyl.size[0], cyl.size[1]
  r1 = sphere.size[0]
  axis = cyl.mat[:, 2]
  vec = sphere.pos - cyl.pos
  x = dot3(axis, vec)
  a_proj = axis * x
  p_proj = vec - a_proj
  p_proj_sqr = dot3(p_proj, p_proj)

  side = jnp.abs(x) < height
  cap = p_proj_sqr < radius * radius
  both = side & cap  # sphere centre inside the cylinder: keep the shallower exit
  dist_cap = height - jnp.abs(x)
  dist_radius = radius - safe_sqrt(p_proj_sqr)
  cap_wins = dist_cap < dist_radius
  side = side & ~(both & cap_wins)
  cap = cap & ~(both & ~cap_wins)

  # side: sphere against the axis point; corner: against the nearest rim point (radius 0)
  top = x > 0
  rim = p_proj * safe_div(radius, safe_sqrt(p_proj_sqr))
  corner = axis * jnp.where(top, height, -height) + rim + cyl.pos
  vs, ds, ps, ns = _raw_sphere_sphere(
    sphere.pos,
    sphere.mat,
    r1,
    jnp.where(side, a_proj + cyl.pos, corner),
    cyl.mat,
    jnp.where(side, radius, 0.0),
    margin,
  )
  # cap: plane through the nearer cap, normal flipped to point from sphere to cylinder
  cap_n = jnp.where(top, axis, -axis)
  cap_pos = cyl.pos + axis * jnp.where(top, height, -height)
  vc, dc, pc, nc = _raw_plane_sphere(cap_n, cap_pos, sphere.pos, r1, margin)

  use_cap = ~side & cap
  valid = jnp.where(use_cap, vc, vs)
  dist = jnp.where(use_cap, dc, ds)
  pos = jnp.where(use_cap, pc, ps)
  normal = jnp.where(use_cap, -nc, ns)
  return pack_slots(valid[None], dist[None], pos[None], make_frame(normal)[None])


def capsule_capsule(c1: GeomFrame, c2: GeomFrame, margin) -> Collision:
  """Closest segment points; two contacts, at the ends of the overlap, for parallel axes.

  MuJoCo 4.0 treats the axes as parallel when sin^2 of their angle is below 1e-8 (measured
  against mujoco 4.0.0; older sources used |det| < mjMINVAL and four end-point tests; see
  PARALLEL_SIN2_F32 for float32). Each
  end of segment 1 is projected on segment 2; where that projection is clamped, the clamped
  point is projected back on segment 1. Both pairs are sphere-tested on their own.
  """
  pos1, mat1, size1 = c1.pos, c1.mat, c1.size
  pos2, mat2, size2 = c2.pos, c2.mat, c2.size
  axis1 = mat1[:, 2] * size1[1]
  axis2 = mat2[:, 2] * size2[1]
  dif = pos1 - pos2
  ma = dot3(axis1, axis1)
  mb = -dot3(axis1, axis2)
  mc = dot3(axis2, axis2)
  u = -dot3(axis1, dif)
  v = dot3(axis2, dif)
  det = ma * mc - mb * mb
  tol = PARALLEL_SIN2 if jnp.finfo(det.dtype).bits >= 64 else PARALLEL_SIN2_F32
  parallel = (det < tol * ma * mc) | (ma == 0) | (mc == 0)

  def sphere_test(x1, x2):
    return _raw_sphere_sphere(
      axis1 * x1 + pos1, mat1, size1[0], axis2 * x2 + pos2, mat2, size2[0], margin
    )

  # general configuration
  sdet = jnp.where(parallel, 1.0, det)
  x1 = (mc * u - mb * v) / sdet
  x2 = (ma * v - mb * u) / sdet
  hi1, lo1 = x1 > 1, x1 < -1
  x2 = jnp.where(hi1, safe_div(v - mb, mc), jnp.where(lo1, safe_div(v + mb, mc), x2))
  x1 = jnp.clip(x1, -1.0, 1.0)
  hi2, lo2 = x2 > 1, x2 < -1
  x1 = jnp.where(
    hi2, jnp.clip(safe_div(u - mb, ma), -1, 1),
    jnp.where(lo2, jnp.clip(safe_div(u + mb, ma), -1, 1), x1))
  x2 = jnp.clip(x2, -1.0, 1.0)

  # parallel axes: each end of segment 1, projected on segment 2 (and back where clamped)
  ends = jnp.array([1.0, -1.0], pos1.dtype)
  px2 = safe_div(v - mb * ends, mc)
  clamped = (px2 > 1) | (px2 < -1)
  px2 = jnp.clip(px2, -1.0, 1.0)
  px1 = jnp.where(clamped, jnp.clip(safe_div(u - mb * px2, ma), -1.0, 1.0), ends)

  # slot 0: the general contact or the first parallel one; slot 1: the second parallel one
  x1s = jnp.where(parallel, px1, jnp.stack([x1, x1]))
  x2s = jnp.where(parallel, px2, jnp.stack([x2, x2]))
  x1s, x2s = materialize(jnp.stack([x1s, x2s]), ma)
  valid, dist, pos, normal = jax.vmap(sphere_test)(x1s, x2s)
  valid = valid & (parallel | jnp.array([True, False]))
  return pack_slots(valid, dist, pos, jax.vmap(make_frame)(normal))


# ------------------------------------------------------------------------------------------
# sphere-box and capsule-box (engine_collision_box.c)


def sphere_box(sphere: GeomFrame, box: GeomFrame, margin) -> Collision:
  valid, dist, pos, normal = _raw_sphere_box(
    sphere.pos, sphere.size[0], box.pos, box.mat, box.size, margin
  )
  return pack_slots(valid[None], dist[None], pos[None], make_frame(normal)[None])


# the 12 box edges in mjraw_CapsuleBox's loop order: axis j, corner i (bit j clear), and the
# sign pattern of the edge centre (0 along the edge)
_EDGE_AXIS = np.array([j for j in range(3) for i in range(8) if not i & (1 << j)])
_EDGE_CORNER = np.array([i for j in range(3) for i in range(8) if not i & (1 << j)])
_EDGE_SIGN = np.array(
  [
    [0.0 if k == j else (1.0 if i & (1 << k) else -1.0) for k in range(3)]
    for j in range(3)
    for i in range(8)
    if not i & (1 << j)
  ]
)


def capsule_box(cap: GeomFrame, box: GeomFrame, margin) -> Collision:
  """Closest point of the segment to the box, then a second point along the segment.

  Follows mjraw_CapsuleBox: the closest feature of the box (a face via a clamped end point,
  or one of the 12 edges) is found with MuJoCo's sequential comparisons, its kind decides
  where a second sphere test goes; both points are tested with sphere-box.
  """
  size1, mat2, size2, pos2 = cap.size, box.mat, box.size, box.pos
  halflength = size1[1]
  pos = mat_t_vec3(mat2, cap.pos - pos2)  # capsule centre in the box frame
  axis = mat_t_vec3(mat2, cap.mat[:, 2])
  halfaxis = axis * halflength
  i32 = lambda x: jnp.asarray(x, jnp.int32)
  axisdir = i32(halfaxis[0] > 0) + 2 * i32(halfaxis[1] > 0) + 4 * i32(halfaxis[2] > 0)

  bestdistmax = margin + 2 * (size1[0] + halflength + size2[0] + size2[1] + size2[2])

  bsp, boxpos, closest = _capsule_box_closest(size1, size2, pos, halfaxis, bestdistmax)
  cltype = closest[0]
  secondpos = _capsule_box_second(closest, bsp, boxpos, size2, pos, axis, halfaxis, axisdir)
  found = cltype != -4

  def sphere(t):
    center = mat_vec3(mat2, pos + halfaxis * t) + pos2
    valid, dist, p, normal = _raw_sphere_box(center, size1[0], pos2, mat2, size2, margin)
    return valid, dist, p, make_frame(normal)

  bsp, secondpos = materialize(jnp.stack([bsp, secondpos]), size2[0])
  valid, dist, p, frames = jax.vmap(sphere)(jnp.stack([bsp, secondpos + bsp]))
  valid = valid & jnp.stack([found, found & (secondpos > -3)])
  return pack_slots(valid, dist, p, frames)


def _capsule_box_closest(size1, size2, pos, halfaxis, bestdistmax):
  """mjraw_CapsuleBox's closest feature: (segment position in [-1, 1], box edge position,
  (type, face, corner, edge)) of the best of the 2 end points (a face) and the 12 edges, box
  frame; type -4 when none is within bestdistmax."""
  i32 = lambda x: jnp.asarray(x, jnp.int32)
  # end points whose clamping to the box changes at most one coordinate: a face
  ends = pos[None, :] + halfaxis[None, :] * jnp.array([[-1.0], [1.0]], pos.dtype)
  below, above = ends < -size2, ends > size2
  out = below | above
  nout = jnp.sum(out.astype(jnp.int32), axis=1)
  lastout = jnp.where(out[:, 2], 2, jnp.where(out[:, 1], 1, jnp.where(out[:, 0], 0, -1)))
  gap = jnp.where(below, -size2, jnp.where(above, size2, ends)) - ends
  fdist = gap[:, 0] * gap[:, 0] + gap[:, 1] * gap[:, 1] + gap[:, 2] * gap[:, 2]

  edist, x1, x2, ok, ecode, s1 = _capsule_box_edges(size1, size2, pos, halfaxis)

  # MuJoCo's sequential search over the 2 end points, then the 12 edges: a candidate replaces
  # the best so far if its squared distance is smaller (for edges, smaller by MINVAL). Per
  # candidate (stored once, not recomputed for each of the scan's inputs): squared distance,
  # segment and box positions; ok, type, face, corner and edge.
  f32 = lambda x: jnp.asarray(x, pos.dtype)
  slack = jnp.asarray(np.repeat([0.0, MINVAL], [2, 12]), pos.dtype)
  fcand = materialize(jnp.stack([
    jnp.concatenate([fdist, edist]),
    jnp.concatenate([f32([-1.0, 1.0]), x2]),
    jnp.concatenate([jnp.zeros(2, pos.dtype), x1]),
  ], axis=1), size2[0])
  icand = materialize(jnp.stack([
    i32(jnp.concatenate([nout <= 1, ok])),
    jnp.concatenate([i32([-3, -1]), i32(ecode)]),
    jnp.concatenate([i32(lastout), i32(jnp.full(12, -1))]),
    jnp.concatenate([i32([0, 0]), i32(_EDGE_CORNER + (1 << _EDGE_AXIS) * i32(s1 == 2))]),
    i32(np.concatenate([[0, 0], _EDGE_AXIS])),
  ], axis=1), size2[0])

  def step(best, cand):
    (bf, bi), (cf, ci, sl) = best, cand
    upd = (ci[0] == 1) & (cf[0] < bf[0] - sl)
    return (jnp.where(upd, cf, bf), jnp.where(upd, ci[1:], bi)), None

  init = (jnp.stack([bestdistmax, f32(0.0), f32(0.0)]), i32([-4, -1, 0, 0]))
  (bf, bi), _ = short_scan(step, init, (fcand, icand, slack))
  bestsegmentpos, bestboxpos = bf[1], bf[2]
  cltype, clface, clcorner, cledge = bi[0], bi[1], bi[2], bi[3]
  return bestsegmentpos, bestboxpos, (cltype, clface, clcorner, cledge)


def _capsule_box_edges(size1, size2, pos, halfaxis):
  """The segment's closest points to the box's 12 edges (box frame): squared distance,
  position along the edge and the segment in [-1, 1], whether the pair is not parallel, and
  MuJoCo's code 3 * side1 + side2 (0 below, 1 inside, 2 above) with side1 alone. (12,) each."""
  # the 12 edges (centre tmp3, direction along axis j): closest points to the segment
  # edges 4k..4k+3 run along axis k: x[j] is x repeated, not a gather
  j = jnp.asarray(_EDGE_AXIS)
  tmp3 = size2[None, :] * jnp.asarray(_EDGE_SIGN, pos.dtype)
  dif = tmp3 - pos[None, :]
  sj = size2[j]
  mc = size1[1] * size1[1]
  ma = sj * sj
  mb = -sj * halfaxis[j]
  u = -sj * jnp.take_along_axis(dif, j[:, None], axis=1)[:, 0]
  v = dif[:, 0] * halfaxis[0] + dif[:, 1] * halfaxis[1] + dif[:, 2] * halfaxis[2]
  det = ma * mc - mb * mb
  ok = ~(jnp.abs(det) < MINVAL)
  idet = recip(jnp.where(ok, det, 0.0), 0.0)
  x1 = (mc * u - mb * v) * idet
  x2 = (ma * v - mb * u) * idet
  hi, lo = x1 > 1, x1 < -1
  s1 = jnp.where(hi, 2, jnp.where(lo, 0, 1))
  x2 = jnp.where(hi, (v - mb) * recip(mc, 0.0), jnp.where(lo, (v + mb) * recip(mc, 0.0), x2))
  x1 = jnp.where(hi, 1.0, jnp.where(lo, -1.0, x1))
  hi, lo = x2 > 1, x2 < -1
  s2 = jnp.where(hi, 2, jnp.where(lo, 0, 1))
  ima = recip(ma, 0.0)
  x1b = jnp.where(hi, (u - mb) * ima, (u + mb) * ima)
  s1b = jnp.where(x1b > 1, 2, jnp.where(x1b < -1, 0, s1))  # s1 kept if x1b is inside
  clamp2 = hi | lo
  x1 = jnp.where(clamp2, jnp.clip(x1b, -1.0, 1.0), x1)
  s1 = jnp.where(clamp2, s1b, s1)
  x2 = jnp.where(hi, 1.0, jnp.where(lo, -1.0, x2))
  d = dif - halfaxis[None, :] * x2[:, None]
  d = d + jax.nn.one_hot(j, 3, dtype=d.dtype) * (sj * x1)[:, None]
  edist = d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]
  ecode = s1 * 3 + s2
  return edist, x1, x2, ok, ecode, s1


def _capsule_box_second(closest, bsp, bestboxpos, size2, pos, axis, halfaxis, axisdir):
  """mjraw_CapsuleBox's second point: how far along the segment from `bsp` the second sphere
  test goes for a closest corner (a), edge (b) or face (c); -4 where MuJoCo makes none."""
  cltype, clface, clcorner, cledge = closest
  absh = jnp.abs(halfaxis)
  spans = safe_div(2.0 * size2, absh, BIG)  # C: x / 0 = inf
  span = lambda a: select_at(spans, a)

  # (a) closest to a corner of the box
  c1 = jnp.bitwise_xor(axisdir, clcorner)
  skip_a = (c1 == 0) | (c1 == 7)
  flip = (c1 == 3) | (c1 == 5) | (c1 == 6)
  mul = jnp.where(flip, -1.0, 1.0)
  de = jnp.where(flip, 1 + bsp, 1 - bsp)
  dp = jnp.where(flip, 1 - bsp, 1 + bsp)
  c1f = jnp.where(flip, 7 - c1, c1)
  ax = jnp.where(c1f == 1, 0, jnp.where(c1f == 2, 1, 2))
  ax1 = next_of_3(ax)
  ax2 = next_of_3(ax1)
  along_edge = select_at(axis, ax) * select_at(axis, ax) > 0.5
  sp_a = jnp.where(
    along_edge,
    jnp.minimum(de, span(ax)) * mul,
    jnp.minimum(jnp.minimum(dp, span(ax1)), span(ax2)) * -mul,
  )

  # (b) closest to the middle of an edge
  c1 = jnp.bitwise_and(jnp.bitwise_xor(axisdir, clcorner), 7 - jnp.left_shift(1, cledge))
  skip_b = ~((c1 == 1) | (c1 == 2) | (c1 == 4))
  ax = cledge
  ax1 = next_of_3(ax)
  ax2 = next_of_3(ax1)
  ax1 = jnp.where(jnp.abs(select_at(axis, ax1)) > jnp.abs(select_at(axis, ax2)), ax2, ax1)
  ax2 = 3 - ax - ax1
  bit = jnp.bitwise_and(jnp.right_shift(c1, ax2), 1) == 1
  mul = jnp.where(bit, 1.0, -1.0)
  sp_b = jnp.minimum(jnp.where(bit, 1 - bsp, 1 + bsp), span(ax2))
  same = (jnp.bitwise_and(jnp.right_shift(axisdir, ax), 1) == 1) == bit
  e2 = jnp.where(same, 1 - bestboxpos, 1 + bestboxpos)
  sp_b = jnp.minimum(sp_b, safe_div(select_at(size2, ax) * e2, select_at(absh, ax), BIG)) * mul

  # (c) an end point is closest to a face
  skip_c = clface == -1
  mul = jnp.where(cltype == -3, 1.0, -1.0)
  sp_c = jnp.asarray(2.0, halfaxis.dtype)
  p = pos - halfaxis * mul
  for i in range(3):
    other = clface != i
    for bound in (size2[i], -size2[i]):
      e1 = safe_div(bound - p[i], halfaxis[i], -1.0) * mul
      upd = other & (halfaxis[i] != 0) & (e1 > 0) & (e1 < sp_c)
      sp_c = jnp.where(upd, e1, sp_c)
  sp_c = sp_c * mul

  edge = (cltype >= 3) & (cltype <= 5)  # type // 3 == 1
  corner = (cltype >= 0) & ~edge
  secondpos = jnp.where(
    corner,
    jnp.where(skip_a, -4.0, sp_a),
    jnp.where(edge, jnp.where(skip_b, -4.0, sp_b), jnp.where(skip_c, -4.0, sp_c)),
  )
  return secondpos


# ------------------------------------------------------------------------------------------
# box-box


def box_box(b1: GeomFrame, b2: GeomFrame, margin) -> Collision:
  """mjc_BoxBox (MuJoCo 4.0): up to 8 face contacts or 1 edge-edge contact; in boxbox.py."""
  return boxbox.box_box(b1, b2, margin)


# ------------------------------------------------------------------------------------------

COLLIDERS: dict[tuple[GeomType, GeomType], tuple[Callable[..., Collision], int]] = {
  (GeomType.PLANE, GeomType.SPHERE): (plane_sphere, 1),
  (GeomType.PLANE, GeomType.CAPSULE): (plane_capsule, 2),
  (GeomType.PLANE, GeomType.ELLIPSOID): (plane_ellipsoid, 1),
  (GeomType.PLANE, GeomType.CYLINDER): (plane_cylinder, 4),
  (GeomType.PLANE, GeomType.BOX): (plane_box, 4),
  (GeomType.SPHERE, GeomType.SPHERE): (sphere_sphere, 1),
  (GeomType.SPHERE, GeomType.CAPSULE): (sphere_capsule, 1),
  (GeomType.SPHERE, GeomType.CYLINDER): (sphere_cylinder, 1),
  (GeomType.SPHERE, GeomType.BOX): (sphere_box, 1),
  (GeomType.CAPSULE, GeomType.CAPSULE): (capsule_capsule, 2),
  (GeomType.CAPSULE, GeomType.BOX): (capsule_box, 2),
  (GeomType.BOX, GeomType.BOX): (box_box, 8),
}
