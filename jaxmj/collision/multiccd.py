"""MuJoCo 4.0's multiccd: up to four contacts for a convex pair whose features are aligned.

MuJoCo 4.0 (multiccd on by default, mjDSBL_MULTICCD turns it off) turns the single GJK/EPA
contact of a convex pair into a contact polygon when the two geoms touch with aligned flat
features: a face (box face, cylinder cap as a 16-gon, mesh hull polygon) against a face or a
straight edge (capsule segment, cylinder side line, box or mesh edge). Entry points, one pair
per call (the driver vmaps them; geom types may be traced):

  collide(type1, type2, g1, g2, margin, tolerance, iterations, verts1=, verts2=, poly1=,
          poly2=) -> (dist (4,), pos (4, 3), frame (4, 3, 3)): GJK/EPA (convex.py), then
      the stage below; slot 0 holds the convex contact when no features align, empty slots
      read dist = 1e10.
  polygon_contacts(type1, type2, g1, g2, normal, dir0, margin, poly1=, poly2=) -> the stage
      alone, from a convex contact's normal.
  group_slots / group_collider / mesh_polygons: the driver's convex group (host side).

The 4.0 sources of this feature were not available; the rules below were measured against the
4.0.0 binary (tests/collision/test_multiccd.py), and the clipping, pruning and cap polygon were
read from its symbols and disassembly (polygonClip, cylinderFace's tables, the tolerances);
they agree with the older published box/mesh multicontact (engine_collision_gjk.c) where that
covers the case:

* The features come from the contact direction u (the EPA/GJK normal, from geom 1 into geom 2;
  geom 1 looks along u, geom 2 along -u). A geom offers a face when a face's outward normal
  is within FACE_TOL of its direction (box faces, cylinder caps, mesh polygons), else an edge:
  a capsule's segment pushed out by (radius + margin / 2) * (u minus its axial part), then back
  by margin / 2 along u (MuJoCo inflates each geom by half the margin and moves the points
  back); a cylinder's side line
  through the support point of EPA's final face's first vertex (the closest points when the
  cores are apart); a box edge, the one nearly perpendicular to u, as its two corners; a mesh
  edge, the polygon edge whose lower end reaches farthest along u.
* Two faces whose normals are within FACE_TOL of opposite: geom 2's face is clipped
  (Sutherland-Hodgman) by the planes through geom 1's face edges along geom 1's normal n1 (unit
  plane normals; an edge crosses a plane at t = dP / (dP - dQ) of its ends' plane distances).
  Each clipped point p goes to geom 1's face plane along n1 (x), its distance is
  dist = (x - face2) . n2, its position x - dist/2 n2 and its normal -n2 (geom 2's face).
* An edge and a face: the edge is clipped by the face's edge planes; each point p has
  dist = (p - face) . n_face, position p - dist/2 n_face and normal -+n_face (the face's, made
  to point from geom 1 to geom 2). The edge must be within EDGE_TOL of the face plane; against
  a cylinder cap a cylinder side or box edge is used only when exactly parallel (measured
  ~5e-6; PARALLEL_TOL stands in for a rule that is not a tolerance: in 4.0 a cylinder's
  support point carries its cap as vertex index (mjc_cylinderSupport), the features come from
  the indices at EPA's final face, and geomEdgeNormals draws a side line from such a vertex to
  the other cap; "the face spans both caps" alone was tried and contradicts MuJoCo for sides
  on box faces tilted 0.001-1 degree).
* Points with dist > margin are dropped (distances are those of the uninflated geoms; a
  margin only lets separated features count). More than four: a quadrilateral of them, by
  polygonQuad's greedy search over the remaining points in polygon order with the area
  0.5 |(a - c) x (b - d)|, keeping its corners unless an area is strictly larger; a clipped
  edge with three or four: the first pair (in order) farthest apart; else all of them in
  order, duplicates included (polygonClip, 4.0.0: a side line across a face's edge clips to
  the same point twice, and MuJoCo reports both).
* When EPA gave the contact, a box's face against an edge is not the face nearest u: it is
  the first face at the box corners of EPA's final face (boxNormals' order) that faces the
  contact and is within EDGE_TOL of perpendicular to the edge (a cylinder side on a box face 5
  degrees from u, measured on testdata/model.xml). A cylinder whose three EPA vertices lie on
  one cap (mjc_cylinderSupport's vertex index is its cap: 0 top, 1 bottom) then offers its
  side line against that face even when the cap faces u (a box sunk deep into a disc).
* Cylinder caps are 16-gons, vertex k at angle 2 pi k / 16 (bottom cap) or -2 pi k / 16 (top
  cap), from MuJoCo's tables of cosines and sines rounded to 15 digits: every face is listed
  clockwise seen from outside, like MuJoCo's box faces.
* Round-off: a cap's points form a regular polygon, on which many quadrilaterals tie in exact
  arithmetic, and MuJoCo's pick among them follows its round-off. Faces, clipping and areas are
  therefore computed with MuJoCo's operations in MuJoCo's order, with every product rounded on
  its own (_nf: XLA would otherwise fuse products into sums); from the same geom frames the
  four points are MuJoCo's, bit for bit without fusion and to ~1e-16 with it.

Known differences (measured; tests/collision/test_multiccd.py holds the rest to 1e-9):
* Ties need the same geom frames to the last bit: jaxmj's kinematics gives geom_xmat within
  ~1e-16 of MuJoCo's, not equal, and a cylinder standing on a box then keeps other rim points
  in some steps (its trajectory drifts ~1e-4 in 200 steps).
* Deep, generic overlaps: MuJoCo 4.0 takes every feature from EPA's final face: a cylinder
  cap is a face only when all three vertices are on it, mjc_multicontact pairs the most
  opposed faces that face the contact, and it tries the edges of either geom against the
  other's faces (four geomEdgeNormals call sites, the first order set by the feature
  dimensions). Only the box-face rule above is reproduced: of 360 random box-disc and
  cylinder-slab overlaps (three sets of 120, two of them deep), 6 still differ from MuJoCo's
  two contacts (13 before the rule), all a box in a disc: five where ours keeps the EPA
  contact, one with two other points.
* A capsule whose core penetrates a cylinder cap: the points differ by up to 2.4e-5 with a
  margin (1e-6 without). MuJoCo draws the line through the support point of EPA's first
  vertex (geomEdgeNormals); using that direction here fits no better, and cores apart (GJK's
  path) would get worse, so the contact normal stays.
* When every clipped point is separated beyond the margin, the EPA contact is kept.

Gradients: features, clipping decisions and the quadrilateral are held fixed; the points,
distances and normals are smooth functions of the geom frames (the EPA vertex direction of a
cylinder's side line is held fixed too).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmj.collision import convex
from jaxmj.collision.primitive import GeomFrame
from jaxmj.types import GeomType

FACE_TOL = 0.996  # cos of the largest angle between aligned face normals (measured, 4.0.0)
EDGE_TOL = 0.0888  # |sin| of the largest angle between an aligned edge and a face (measured)
PARALLEL_TOL = 5e-6  # cylinder side / box edge against a cylinder cap (see module docstring)
NCAP = 16  # vertices of a cylinder cap polygon
MAX_CONTACTS = 4
_MINVAL = 1e-15
_BOX, _CYL, _CAP, _MESH = (int(GeomType.BOX), int(GeomType.CYLINDER), int(GeomType.CAPSULE),
                           int(GeomType.MESH))
# geom types with flat features: a convex pair of two of them may get up to four contacts
TYPES = (GeomType.CAPSULE, GeomType.CYLINDER, GeomType.BOX, GeomType.MESH)

# box faces in MuJoCo's order (+x, -x, +y, -y, +z, -z), corners as signs of the half sizes,
# clockwise seen from outside
_BOX_FACES = np.array([
  [(1, 1, 1), (1, 1, -1), (1, -1, -1), (1, -1, 1)],
  [(-1, 1, -1), (-1, 1, 1), (-1, -1, 1), (-1, -1, -1)],
  [(-1, 1, -1), (1, 1, -1), (1, 1, 1), (-1, 1, 1)],
  [(-1, -1, 1), (1, -1, 1), (1, -1, -1), (-1, -1, -1)],
  [(-1, 1, 1), (1, 1, 1), (1, -1, 1), (-1, -1, 1)],
  [(1, 1, -1), (-1, 1, -1), (-1, -1, -1), (1, -1, -1)],
], np.float64)
# MuJoCo 4.0's cap tables (cylinderFace's cos_16 / sin_16, read from the 4.0.0 binary): the
# angles' cosines and sines to 15 digits, not to full precision. Their last bits decide which
# of a cap's nearly tied quadrilaterals MuJoCo keeps, so they are copied as they are.
_C1, _C2, _C2B, _C3 = 0.923879532511287, 0.707106781186548, 0.707106781186547, 0.38268343236509
_CAP_COS = np.array([1.0, _C1, _C2, _C3, 0.0, -_C3, -_C2B, -_C1, -1.0, -_C1, -_C2, -_C3, 0.0, _C3,
                     _C2B, _C1])
_CAP_SIN = np.array([0.0, _C3, _C2B, _C1, 1.0, _C1, _C2, _C3, 0.0, -_C3, -_C2B, -_C1, -1.0, -_C1,
                     -_C2, -_C3])


def applies(type1, type2) -> bool:
  """Whether MuJoCo 4.0 may return more than one contact for this convex pair (host side)."""
  return GeomType(type1) in TYPES and GeomType(type2) in TYPES


class MeshPolygons(NamedTuple):
  """A mesh geom's hull polygons in its frame, padded (rows of unused polygons: count 0)."""

  verts: jax.Array  # (F, P, 3) vertices, counter-clockwise seen from outside (mesh_polyvert)
  count: jax.Array  # (F,) int  vertices of each polygon (0: padding)
  normal: jax.Array  # (F, 3) outward unit normals (mesh_polynormal)


# --------------------------------------------------------------------------------------------
# features


class _Face(NamedTuple):
  verts: jax.Array  # (P, 3) world, clockwise seen from outside; rows >= count repeat row 0
  count: jax.Array  # () int
  normal: jax.Array  # (3,) outward unit normal
  ok: jax.Array  # () bool: the geom offers this face


def _world(g: GeomFrame, local):
  return local @ g.mat.T + g.pos


# MuJoCo's choices among nearly tied quadrilaterals (and clipping at a polygon's corners) follow
# its round-off, so the polygon is built and pruned with MuJoCo's operations in MuJoCo's order.
# XLA fuses a product into the sum it feeds (one rounding where MuJoCo rounds twice); _nf keeps
# each product apart with a bit-level identity that the compiler cannot see through (z is an
# unsigned zero it cannot prove zero). Values and gradients are unchanged.


def _opaque_zero(x):
  """An unsigned-integer zero from x > 0 (its sign bit), of x's width."""
  u = jnp.uint64 if x.dtype == jnp.float64 else jnp.uint32
  return lax.shift_right_logical(lax.bitcast_convert_type(x, u), u(8 * x.dtype.itemsize - 1))


def _nf(p, z):
  """p, rounded on its own (not fused into a later sum)."""
  q = lax.bitcast_convert_type(lax.bitcast_convert_type(p, z.dtype) ^ z, p.dtype)
  return p + lax.stop_gradient(q - p)


def _dot3(a, b, z):
  p = _nf(a * b, z)
  return (p[..., 0] + p[..., 1]) + p[..., 2]


def _cross3(a, b, z):
  i, j = [1, 2, 0], [2, 0, 1]
  return _nf(a[..., i] * b[..., j], z) - _nf(a[..., j] * b[..., i], z)


def _world_exact(g: GeomFrame, local, z):
  """mju globalcoord: ((mat[i,0] l0 + mat[i,1] l1) + mat[i,2] l2) + pos[i], rows of local."""
  p = _nf(local[..., None, :] * g.mat, z)
  return ((p[..., 0] + p[..., 1]) + p[..., 2]) + g.pos


def _pad(verts, n: int):
  """Rows padded (or cut) to n; padding repeats row 0."""
  if verts.shape[0] >= n:
    return verts[:n]
  return jnp.concatenate([verts, jnp.broadcast_to(verts[:1], (n - verts.shape[0], 3))])


def _box_face(g: GeomFrame, u, p: int, z) -> _Face:
  lu = g.mat.T @ u
  lu = lu / jnp.sqrt(jnp.maximum(lu @ lu, _MINVAL))
  k = jnp.argmax(jnp.abs(lu))
  neg = lu[k] < 0
  verts = _world_exact(g, jnp.asarray(_BOX_FACES)[2 * k + neg.astype(k.dtype)] * g.size, z)
  normal = g.mat[:, k] * jnp.where(neg, -1.0, 1.0)
  return _Face(_pad(verts, p), jnp.array(4, jnp.int32), normal, jnp.abs(lu[k]) > FACE_TOL)


def _cyl_face(g: GeomFrame, u, p: int, z) -> _Face:
  a = g.mat[:, 2]
  au = a @ u
  top = au > 0
  r, h = g.size[0], g.size[1]
  local = jnp.stack([r * _CAP_COS, jnp.where(top, -r, r) * _CAP_SIN,
                     jnp.broadcast_to(jnp.where(top, h, -h), (NCAP,))], axis=1)
  normal = a * jnp.where(top, 1.0, -1.0)
  count = jnp.array(NCAP, jnp.int32)
  return _Face(_pad(_world_exact(g, local, z), p), count, normal, jnp.abs(au) > FACE_TOL)


def _mesh_face(g: GeomFrame, u, poly: MeshPolygons, p: int, z) -> _Face:
  wn = poly.normal @ g.mat.T
  score = jnp.where(poly.count > 0, wn @ u, -2.0)
  i = jnp.argmax(score)
  verts = _pad(_world_exact(g, poly.verts[i], z)[::-1], p)  # MuJoCo lists them reversed
  n = poly.count[i]
  verts = jnp.roll(verts, n - verts.shape[0], axis=0)  # the reversal put padding first
  return _Face(verts, n.astype(jnp.int32), wn[i], score[i] > FACE_TOL)


def _box_face_at(g: GeomFrame, dirs, edge, w, p: int, z) -> _Face:
  """The box face that MuJoCo 4.0 pairs with an edge when EPA ran: the first face at the
  corners of EPA's final face (boxNormals: the face all three corners share; the two faces
  along a two-corner edge, x before y before z; the three faces at a single corner) whose
  normal faces w (the box's contact direction) and is within EDGE_TOL of perpendicular to the
  edge direction. dirs (3, 3): the box's support directions of the face's vertices."""
  s = (dirs @ g.mat) >= 0  # (vertex, axis): the corner's side of each axis (boxSupport)
  idx = s.astype(jnp.int32) @ jnp.array([1, 2, 4])
  two = jnp.where(idx[0] != idx[1], s[1], s[2])
  dim = jnp.where(idx[0] != idx[1], jnp.where((idx[2] == idx[0]) | (idx[2] == idx[1]), 2, 3),
                  jnp.where(idx[0] != idx[2], 2, 1))
  s3 = s.astype(jnp.int32)
  shared3 = jnp.all(s, 0).astype(jnp.int32) - jnp.all(~s, 0).astype(jnp.int32)
  shared2 = (s[0] & two).astype(jnp.int32) - (~s[0] & ~two).astype(jnp.int32)
  # slots (axis, sign): dim 3, the one shared face; dim 2, boxNormals' slots (x, then y in
  # the first free slot, z always second; an unset slot holds no face); dim 1, x, y, z
  nz2 = shared2 != 0
  ax2 = jnp.array([jnp.where(nz2[0], 0, jnp.where(nz2[1], 1, -1)),
                   jnp.where(nz2[2], 2, jnp.where(nz2[0] & nz2[1], 1, -1)), -1])
  nz3 = shared3 != 0
  ax3 = jnp.array([jnp.where(jnp.sum(nz3) == 1, jnp.argmax(nz3), -1), -1, -1])
  axes = jnp.where(dim == 3, ax3, jnp.where(dim == 2, ax2, jnp.arange(3)))
  sgn = jnp.where(dim == 3, shared3, jnp.where(dim == 2, shared2, 2 * s3[0] - 1))
  a = jnp.maximum(axes, 0)
  sign = sgn[a].astype(g.mat.dtype)
  normals = g.mat[:, a].T * sign[:, None]  # (3 slots, 3)
  ok = (axes >= 0) & (normals @ w > _MINVAL) & (jnp.abs(normals @ edge) < EDGE_TOL)
  k = jnp.argmax(ok)
  face = 2 * a[k] + (sign[k] < 0).astype(jnp.int32)
  verts = _world_exact(g, jnp.asarray(_BOX_FACES)[face] * g.size, z)
  return _Face(_pad(verts, p), jnp.array(4, jnp.int32), normals[k], jnp.any(ok))


def _face(code, g: GeomFrame, u, poly, p: int, z) -> _Face:
  out = _Face(jnp.zeros((p, 3), g.pos.dtype), jnp.array(0, jnp.int32), jnp.zeros(3, g.pos.dtype),
              jnp.array(False))
  faces = [(_BOX, _box_face(g, u, p, z)), (_CYL, _cyl_face(g, u, p, z))]
  if poly is not None:
    faces.append((_MESH, _mesh_face(g, u, poly, p, z)))
  for c, f in faces:
    out = jax.tree.map(lambda x, y, c=c: jnp.where(code == c, x, y), f, out)
  return out


def _support(code, g: GeomFrame, d):
  """Support point of a cylinder (side and rim) or box in direction d, as convex.py's."""
  ld = g.mat.T @ d
  sgn = jnp.where(ld >= 0, 1.0, -1.0)
  n2 = ld[0] * ld[0] + ld[1] * ld[1]
  ok = n2 >= _MINVAL * _MINVAL
  scl = jnp.where(ok, g.size[0] / jnp.sqrt(jnp.where(ok, n2, 1.0)), 0.0)
  cyl = jnp.stack([scl * ld[0], scl * ld[1], sgn[2] * g.size[1]])
  return _world(g, jnp.where(code == _CYL, cyl, sgn * g.size))


def _mesh_edge(g: GeomFrame, u, d0, poly: MeshPolygons):
  """The polygon edge of a mesh whose lower end reaches farthest along u (the support edge),
  its end farther along d0 first."""
  f, p = poly.count.shape[0], poly.verts.shape[1]
  j = jnp.arange(p)
  nxt = jnp.where(j[None] + 1 < poly.count[:, None], j[None] + 1, 0)
  start = poly.verts.reshape(f * p, 3)
  end = jnp.take_along_axis(poly.verts, nxt[..., None], axis=1).reshape(f * p, 3)
  lu = g.mat.T @ u
  live = (j[None] < poly.count[:, None]).reshape(f * p)
  i = jnp.argmax(jnp.where(live, jnp.minimum(start @ lu, end @ lu), -jnp.inf))
  ends = jnp.stack([start[i], end[i]])
  ld0 = g.mat.T @ d0
  ends = jnp.where(ends[1] @ ld0 > ends[0] @ ld0, ends[::-1], ends)
  ends = _world(g, ends)
  diff = ends[1] - ends[0]
  return ends, diff / jnp.sqrt(jnp.maximum(diff @ diff, _MINVAL * _MINVAL))


def _edge(code, g: GeomFrame, u, d0, poly, grow):
  """(ends (2, 3), unit direction, ok) of the geom's edge along its contact direction u.
  d0: the direction of EPA's first face vertex for this geom (its support point starts a
  cylinder's side line and picks the first end of a box or mesh edge); grow: half the pair's
  margin (a capsule's segment moves out by radius + grow, then back by grow along u)."""
  a = g.mat[:, 2]
  h = g.size[1]
  # capsule: the segment pushed out by (radius + grow) * (u without its axial part), then
  # back by grow along u (measured, 4.0.0: the points of a tilted capsule inside the margin)
  side = g.pos + (g.size[0] + grow) * (u - (a @ u) * a) - grow * u
  cap = jnp.stack([side - h * a, side + h * a])
  # cylinder: the side line through the support point along d0, to the other cap
  vert0 = _support(code, g, d0)
  cyl = jnp.stack([vert0, vert0 - 2.0 * ((vert0 - g.pos) @ a) * a])
  # box: the edge along the local axis most perpendicular to u, d0's corner first
  lu = g.mat.T @ u
  k = jnp.argmin(jnp.abs(lu))
  on_k = jnp.arange(3) == k
  sgn = jnp.where(lu >= 0, 1.0, -1.0)
  first = jnp.where((g.mat.T @ d0)[k] >= 0, 1.0, -1.0)
  corners = jnp.stack([jnp.where(on_k, first, sgn), jnp.where(on_k, -first, sgn)]) * g.size
  ends = jnp.where(code == _CAP, cap, jnp.where(code == _CYL, cyl, _world(g, corners)))
  direction = jnp.where(code == _BOX, g.mat[:, k], a)
  ok = (code == _CAP) | (code == _CYL) | (code == _BOX)
  if poly is not None:
    mends, mdir = _mesh_edge(g, u, d0, poly)
    mesh = code == _MESH
    ends, direction, ok = jnp.where(mesh, mends, ends), jnp.where(mesh, mdir, direction), ok | mesh
  return ends, direction, ok


def _edge_aligned(direction, code_e, code_f, face: _Face):
  """The edge lies within tolerance of the face plane (see the module docstring)."""
  strict = (code_f == _CYL) & (code_e != _CAP)
  tol = jnp.where(strict, PARALLEL_TOL, EDGE_TOL)
  return jnp.abs(direction @ face.normal) < tol


# --------------------------------------------------------------------------------------------
# clipping and pruning


def _clip(clipper: _Face, subject, nsub, n, z):
  """Sutherland-Hodgman as MuJoCo 4.0's polygonClip: `subject` (M, 3) with nsub vertices,
  clipped by the planes through the clipper's edges along n (unit plane normals, as
  mju_normalize3; a crossing at t = dP / (dP - dQ) of the vertices' plane distances). Returns
  (points (M, 3), count)."""
  m = subject.shape[0]
  idx = jnp.arange(m)

  def body(e, state):
    poly, cnt = state
    a = clipper.verts[e]
    b = clipper.verts[jnp.where(e + 1 < clipper.count, e + 1, 0)]
    r = _cross3(b - a, (a + n) - a, z)
    rr = _nf(r * r, z)
    norm = jnp.sqrt((rr[0] + rr[1]) + rr[2])
    tiny = norm < _MINVAL
    pn = jnp.where(tiny, jnp.array([1.0, 0.0, 0.0], r.dtype),
                   r * (1.0 / jnp.where(tiny, 1.0, norm)))
    q = poly[jnp.where(idx + 1 < cnt, idx + 1, 0)]
    dp, dq = _dot3(poly - a, pn, z), _dot3(q - a, pn, z)
    in1, in2 = dp > -_MINVAL, dq > -_MINVAL
    ab = q - poly
    den = dp - dq
    nonzero = den != 0
    t = dp / jnp.where(nonzero, den, 1.0)
    crossing = (in1 != in2) & nonzero & (t >= 0) & (t <= 1)
    live = idx < cnt
    cand = jnp.stack([_nf(t[:, None] * ab, z) + poly, q], axis=1).reshape(2 * m, 3)
    keep = jnp.stack([crossing & live, in2 & live], axis=1).reshape(2 * m)
    slot = jnp.where(keep, jnp.cumsum(keep) - 1, 2 * m)
    new = jnp.zeros_like(poly).at[slot].set(cand, mode="drop")
    skip = e >= clipper.count
    newcnt = jnp.minimum(jnp.sum(keep), m).astype(jnp.int32)
    return jnp.where(skip, poly, new), jnp.where(skip, cnt, newcnt)

  return lax.fori_loop(0, clipper.verts.shape[0], body, (subject, jnp.asarray(nsub, jnp.int32)))


def _area4(a, b, c, d, z):
  """MuJoCo 4.0's quadrilateral area, 0.5 |(a - c) x (b - d)|, in its order of operations."""
  e = _cross3(a - c, b - d, z)
  ee = _nf(e * e, z)
  return 0.5 * jnp.sqrt((ee[..., 0] + ee[..., 1]) + ee[..., 2])


def _quad(pts, n, z):
  """MuJoCo's polygonQuad (a greedy walk, not the largest quadrilateral) over pts[:n], n > 4:
  the indices (4,) of the chosen corners, run as a fixed-length state machine.

  On a regular polygon (a cylinder cap) many steps tie in exact arithmetic and MuJoCo keeps
  its corners unless an area is larger (`<=`) in its own round-off: the points and areas are
  computed as MuJoCo computes them (see _nf), so the same ties go the same way.
  """
  m = pts.shape[0]
  nx = lambda i: jnp.where(i + 1 < n, i + 1, 0)
  area = lambda a, b, c, d: _area4(pts[a], pts[b], pts[c], pts[d], z)
  i0 = jnp.array(0)
  # state: a, b, c, d, best area, phase (0: try d, 1: try c, 2: try b, 3: next a), result
  init = (i0, i0 + 1, i0 + 2, i0 + 3, area(0, 1, 2, 3), i0, jnp.arange(4))

  def step(_, s):
    a, b, c, d, best, phase, res = s
    tb = jnp.where(phase == 2, nx(b), b)
    tc = jnp.where(phase == 1, nx(c), c)
    td = jnp.where(phase == 0, nx(d), d)
    trial = area(jnp.minimum(a, m - 1), tb, tc, td)
    better = (trial > best) & (phase < 3)
    nb, nc, nd = jnp.where(better, tb, b), jnp.where(better, tc, c), jnp.where(better, td, d)
    # d improved -> try c; c stalls -> try b; b stalls -> try d; d stalls -> next a
    nphase = jnp.where(phase == 0, jnp.where(better, 1, 3),
                       jnp.where(phase == 1, jnp.where(better, 1, 2),
                                 jnp.where(phase == 2, jnp.where(better, 2, 0), 0)))
    # end of a: MuJoCo's pointer fix-up, then the next a
    fb = jnp.where(b == a, nx(b), b)
    fc = jnp.where((b == a) & (c == fb), nx(c), c)
    fd = jnp.where((b == a) & (c == fb) & (d == fc), nx(d), d)
    last = phase == 3
    out = (jnp.where(last, a + 1, a), jnp.where(last, fb, nb), jnp.where(last, fc, nc),
           jnp.where(last, fd, nd), jnp.where(better, trial, best), nphase,
           jnp.where(better, jnp.stack([a, nb, nc, nd]), res))
    return jax.tree.map(lambda x, y: jnp.where(a >= n, x, y), s, out)

  return lax.fori_loop(0, 8 * m + 8, step, init)[-1]


def _farthest(pts, n, z):
  """polygonClip's pair for a clipped edge: the indices (2,) of the first pair i < j < n (in
  row-major order) whose squared distance (dx^2 + dy^2) + dz^2 is largest."""
  k = pts.shape[0]
  i, j = np.triu_indices(k, 1)
  d = _nf((pts[j] - pts[i]) ** 2, z)
  d2 = (d[:, 0] + d[:, 1]) + d[:, 2]
  best = jnp.argmax(jnp.where(jnp.asarray(j) < n, d2, -1.0))
  return jnp.stack([jnp.asarray(i)[best], jnp.asarray(j)[best]])


# --------------------------------------------------------------------------------------------
# the pair


def _multicontact(code1, code2, g1, g2, u, dir0, margin, polys, p: int, epa=None):
  """The pair's multiccd contacts: (use, dist (4,), pos (4, 3), normal (3,), valid (4,))."""
  z = _opaque_zero(g1.size[0])
  f1 = _face(code1, g1, u, polys[0], p, z)
  f2 = _face(code2, g2, -u, polys[1], p, z)
  grow = 0.5 * margin  # a capsule's share of the margin (MuJoCo inflates each geom by half)
  ends1, dir1, has1 = _edge(code1, g1, u, dir0, polys[0], grow)
  ends2, dir2, has2 = _edge(code2, g2, -u, -dir0, polys[1], grow)
  ff = f1.ok & f2.ok & (f1.normal @ f2.normal < -FACE_TOL)
  if epa is not None:  # a box's face against an edge comes from EPA's final face
    dirs, deep = epa
    e2, e1 = _box_face_at(g2, -dirs, dir1, -u, p, z), _box_face_at(g1, dirs, dir2, u, p, z)
    pick = lambda a, b, c: jax.tree.map(lambda x, y: jnp.where(c, x, y), a, b)
    fe2 = pick(e2, f2, deep & (code2 == _BOX))
    fe1 = pick(e1, f1, deep & (code1 == _BOX))
    # a cylinder whose three EPA vertices lie on one cap offers its side line against such a
    # box face even when that cap faces u (mjc_cylinderSupport's vertex index: its cap)
    one_cap = lambda g, d: jnp.all((d @ g.mat[:, 2] < 0) == (d[0] @ g.mat[:, 2] < 0))
    side1 = deep & (code1 == _CYL) & (code2 == _BOX) & one_cap(g1, dirs)
    side2 = deep & (code2 == _CYL) & (code1 == _BOX) & one_cap(g2, -dirs)
  else:
    fe1, fe2, side1, side2 = f1, f2, False, False
  ef12 = ~ff & has1 & (~f1.ok | side1) & fe2.ok & _edge_aligned(dir1, code1, code2, fe2)
  ef21 = ~ff & ~ef12 & has2 & (~f2.ok | side2) & fe1.ok & _edge_aligned(dir2, code2, code1, fe1)
  f1, f2 = (jax.tree.map(lambda a, b: jnp.where(ff, a, b), f, fe) for f, fe in ((f1, fe1),
                                                                                  (f2, fe2)))

  # subject: geom 2's face (face-face) or the edge; clipper: the other geom's face
  clipper = jax.tree.map(lambda a, b: jnp.where(ef12, a, b), f2, f1)
  m = 2 * p
  subject = jnp.where(ff, _pad(f2.verts, m), _pad(jnp.where(ef21, ends2, ends1), m))
  pts, cnt = _clip(clipper, subject, jnp.where(ff, f2.count, 2), clipper.normal, z)

  # face-face: points onto geom 1's face plane along n1; then the distance to the other face
  n1 = f1.normal
  x = jnp.where(ff, pts - ((pts - f1.verts[0]) @ n1)[:, None] * n1, pts)
  face = jax.tree.map(lambda a, b: jnp.where(ef21, a, b), f1, f2)
  dist = (x - face.verts[0]) @ face.normal
  pos = x - 0.5 * dist[:, None] * face.normal
  normal = jnp.where(ef21, face.normal, -face.normal)

  keep = (jnp.arange(m) < cnt) & (dist <= margin)
  nkeep = jnp.sum(keep)
  slot = jnp.where(keep, jnp.cumsum(keep) - 1, m)
  order = jnp.zeros(m, jnp.int32).at[slot].set(jnp.arange(m, dtype=jnp.int32), mode="drop")
  kpts = pts[order]

  # more than four: MuJoCo's quadrilateral; an edge clipped to three or four points: its two
  # farthest apart; else the points as they are, duplicates included (MuJoCo 4.0 keeps them)
  first4 = jnp.arange(4)
  many = nkeep > 4
  pair = ~ff & (nkeep >= 3)
  sel = jnp.where(many, _quad(kpts, nkeep, z),
                  jnp.where(pair, jnp.concatenate([_farthest(kpts[:4], nkeep, z), first4[2:]]),
                            first4))
  valid = first4 < jnp.where(many, 4, jnp.where(pair, 2, jnp.minimum(nkeep, 4)))
  src = order[sel]
  use = (ff | ef12 | ef21) & (nkeep > 0)
  return use, dist[src], pos[src], normal, valid


def polygon_contacts(type1, type2, g1: GeomFrame, g2: GeomFrame, normal, dir0, margin,
                     poly1: MeshPolygons | None = None, poly2: MeshPolygons | None = None,
                     npoly: int = NCAP, epa=None):
  """The multiccd stage alone, from a convex contact's direction: (use (), dist (4,),
  pos (4, 3), frame (4, 3, 3)); `use` says that the features align (the contacts replace the
  convex contact), unused slots read dist = 1e10 and an identity frame.

  normal: the convex contact's unit normal (from geom 1 into geom 2); dir0: the support
  direction of the first vertex of EPA's final face (of GJK's final simplex when the cores
  were apart), which places a cylinder's side line and orders box and mesh edges; epa:
  None, or (dirs (3, 3), deep ()) the support directions of EPA's final face and whether EPA
  gave the contact, from which a box's face against an edge is taken (else from `normal`).
  """
  dtype = jnp.result_type(g1.pos, g2.pos, float)
  frames = [GeomFrame(*(jnp.asarray(x, dtype) for x in g)) for g in (g1, g2)]
  g1, g2 = (g._replace(mat=jnp.reshape(g.mat, (3, 3))) for g in frames)
  code1, code2 = jnp.asarray(type1, jnp.int32), jnp.asarray(type2, jnp.int32)
  use, dist, pos, normal, valid = _multicontact(code1, code2, g1, g2, jnp.asarray(normal, dtype),
                                                jnp.asarray(dir0, dtype), margin,
                                                (poly1, poly2), npoly, epa)
  eye = jnp.eye(3, dtype=dtype)
  frame = jnp.where(valid[:, None, None], convex.make_frame(normal)[None], eye)
  dist = jnp.where(valid, dist, convex.NO_CONTACT_DIST)
  return use, dist, jnp.where(valid[:, None], pos, 0.0), frame


def collide(type1, type2, g1: GeomFrame, g2: GeomFrame, margin, tolerance=1e-6, *,
            iterations: int = 35, verts1=None, verts2=None, poly1: MeshPolygons | None = None,
            poly2: MeshPolygons | None = None, npoly: int = NCAP):
  """mjc_Convex with multiccd for one pair: (dist (4,), pos (4, 3), frame (4, 3, 3)).

  Arguments as convex.collide_convex; poly1 / poly2: the mesh geoms' polygons (MeshPolygons,
  required with a mesh type, else None); npoly: the polygon capacity (static, >= 16 and >=
  the largest mesh polygon). Slots without a contact read dist = 1e10 and an identity frame.
  """
  plan = convex.convex_plan(type1, type2, g1, g2, margin, tolerance, iterations=iterations,
                            verts1=verts1, verts2=verts2)
  dist0, pos0, frame0 = convex.contact_from_plan(plan, type1, type2, g1, g2, margin,
                                                 verts1=verts1, verts2=verts2)
  diff = plan.x1 - plan.x2
  u = lax.stop_gradient(diff / jnp.sqrt(jnp.maximum(diff @ diff, _MINVAL * _MINVAL)))
  dir0 = lax.stop_gradient(jnp.where(plan.shallow, plan.core_dirs[0], plan.face_dirs[0]))
  epa = lax.stop_gradient((plan.face_dirs, plan.deep))
  use, dist, pos, frame = polygon_contacts(type1, type2, g1, g2, u, dir0, margin, poly1, poly2,
                                           npoly, epa)
  use = use & (dist0 < convex.NO_CONTACT_DIST)
  first = jnp.arange(MAX_CONTACTS) == 0
  dist = jnp.where(use, dist, jnp.where(first, dist0, convex.NO_CONTACT_DIST))
  pos = jnp.where(use, pos, jnp.where(first[:, None], pos0, 0.0))
  eye = jnp.eye(3, dtype=dist.dtype)
  frame = jnp.where(use, frame, jnp.where(first[:, None, None], frame0, eye))
  return dist, pos, frame


# --------------------------------------------------------------------------------------------
# the driver's convex group


def group_slots(m, g1: np.ndarray, g2: np.ndarray, disable: int) -> int:
  """Contact slots per pair of the driver's convex group (host side): MAX_CONTACTS when
  multiccd is on and some pair in the group has flat features on both geoms, else 1."""
  from jaxmj.types import DisableBit

  if disable & DisableBit.MULTICCD:
    return 1
  t1, t2 = m.geom_type[g1], m.geom_type[g2]
  return MAX_CONTACTS if any(applies(a, b) for a, b in zip(t1, t2)) else 1


def mesh_polygons(m, g: np.ndarray, p: int):
  """(verts (n, F, p, 3), count (n, F), normal (n, F, 3)) of the geoms' mesh polygons in the
  geom frames; zero rows for geoms that are no mesh or polygons past a mesh's count."""
  n = len(g)
  nf = int(np.max(m.mesh_polynum)) if m.nmesh else 0
  verts = np.zeros((n, max(nf, 1), p, 3))
  count = np.zeros((n, max(nf, 1)), np.int32)
  normal = np.zeros((n, max(nf, 1), 3))
  for i, gi in enumerate(g):
    mid = m.geom_dataid[gi]
    if m.geom_type[gi] != GeomType.MESH or mid < 0:
      continue
    vadr = m.mesh_vertadr[mid]
    for k in range(m.mesh_polynum[mid]):
      f = m.mesh_polyadr[mid] + k
      adr, num = m.mesh_polyvertadr[f], min(m.mesh_polyvertnum[f], p)
      ids = m.mesh_polyvert[adr:adr + num] + vadr
      verts[i, k, :num] = m.mesh_vert[ids]
      count[i, k] = num
      normal[i, k] = m.mesh_polynormal[f]
  return verts, count, normal


def group_collider(m, g1: np.ndarray, g2: np.ndarray, slots: int):
  """(fn, extra) for the driver's convex group: fn(g1, g2, margin, type1, type2, verts1=None,
  verts2=None, *polygons) -> (dist (slots,), pos (slots, 3), frame (slots, 3, 3)); extra:
  per-pair polygon arrays to append to the mesh vertex arguments (empty without meshes)."""
  tol, iters = m.opt.ccd_tolerance, m.opt.ccd_iterations
  if slots == 1:
    def single(a, b, margin, t1, t2, verts1=None, verts2=None):
      one = convex.collide_convex(t1, t2, a, b, margin, tol, iterations=iters, verts1=verts1,
                                  verts2=verts2)
      return tuple(x[None] for x in one)
    return single, ()
  mesh = np.any(m.geom_type[g1] == GeomType.MESH) or np.any(m.geom_type[g2] == GeomType.MESH)
  p = max(NCAP, int(m.npolygonmax))
  extra = ()
  if mesh and m.nmeshpoly:
    extra = tuple(jnp.asarray(x) for g in (g1, g2) for x in mesh_polygons(m, g, p))

  def multi(a, b, margin, t1, t2, verts1=None, verts2=None, *polys):
    poly1 = MeshPolygons(*polys[:3]) if polys else None
    poly2 = MeshPolygons(*polys[3:]) if polys else None
    return collide(t1, t2, a, b, margin, tol, iterations=iters, verts1=verts1, verts2=verts2,
                   poly1=poly1, poly2=poly2, npoly=p)
  return multi, extra

