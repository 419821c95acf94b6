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
  polygon_contacts(type1, type2, g1, g2, normal, dirs, margin, poly1=, poly2=, npoly=, ndirs=,
      depth=) -> the stage alone (mjc_multicontact), from a convex contact's normal and the
      support directions of its vertices.
  group_slots / group_collider / mesh_polygons: the driver's convex group (host side).

The 4.0 sources of this feature were not available; the rules below were read from the 4.0.0
binary's symbols and disassembly (mjc_multicontact, boxNormals, geomEdgeNormals,
mjc_cylinderSupport, polygonClip, cylinderFace's tables) and are held against mujoco 4.0.0
(tests/collision/test_multiccd.py). They extend the older published box/mesh multicontact
(engine_collision_gjk.c):

* The features come from the vertices of EPA's final face (GJK's final simplex when the cores
  are apart: its first 1-3 vertices), through the vertex index each geom's support function
  records: a box's corner bits (x 1, y 2, z 4), a cylinder's cap (0 top, 1 bottom: local z of
  the direction < 0), a mesh's vertex. A geom's dimension is the number of distinct indices
  (simplexDim: 1 a vertex, 2 an edge, 3 a face; the first index and the second distinct one
  start its edges). Face normals (the contact direction u points from geom 1 into geom 2, v =
  x2 - x1 = -|v| u): a box's boxNormals (dimension 3: the face its three corners share; 2: the
  faces along the edge, x before y before z; 1: the corner's three faces), a cylinder's cap
  only when all its vertices lie on that cap, a mesh's hull polygons through its vertices
  (meshNormals, mesh.mesh_normals: dimension 3, the polygon through all three; 2, the first
  two through the edge; 1, one of those through the vertex: in mesh_polymap's order, the
  first whose normal's projection on the witness difference out of the geom (x1 - x2 for geom
  1, x2 - x1 for geom 2, unnormalized) beats the best before it by more than mjMINVAL
  (_vertex_face: MuJoCo's model/surfacevel/carousel.xml, a bag's pole where 32 triangles meet
  resting on a belt, all aligned; the first of them, as the older published source takes
  it, tilted the contacts by 5e-3 rad; the most opposed to the belt's face broke a random
  box-mesh scene's count). Edges (geomEdgeNormals): a
  capsule's line along its axis through the convex contact's witness point on it (MuJoCo
  inflates each geom by half the margin), moved back by margin / 2 along the normal of the
  face it meets (not along u: measured on faces 13 degrees off u); a cylinder's side line
  from its first vertex's rim point to the other cap; a box's edge between its two vertices
  (dimension 2) or the three edges at its corner (dimension 1); a mesh's edge between its two
  vertices (dimension 2) or, per polygon through its vertex, the edge to the vertex before it
  on the polygon's path (mesh.mesh_edges). A mesh without polygons gets no multiccd.
* Two faces: the first pair (in geom 1's order, then geom 2's) with n1 . n2 < -FACE_TOL
  among faces turned to the contact (n1 . u > EDGE_TOL, n2 . u < -EDGE_TOL), as
  alignedFaces finds it: not the most opposed (stacked bevelled cubes, MuJoCo's
  model/cube: their parallel bevels are more opposed than their tilted contact faces).
  Geom 2's face is clipped (Sutherland-Hodgman) by the planes through geom 1's face edges
  along n1 (unit plane normals; an edge crosses a plane at t = dP / (dP - dQ) of its ends'
  plane distances). Each clipped point p goes to geom 1's face plane along n1 (x),
  its distance is dist = (x - face2) . n2, its position x - dist/2 n2 and its normal -n2.
* Else an edge against a face: |e . n| < EDGE_TOL, the face turned to the contact (n . v >
  1e-15, with geom 1's faces against -v), faces outer, edges inner, the first found. Geom 2's
  edges go first when it is no face (dimension < 3), geom 1 has faces, and geom 2 has none or
  a lower dimension; else geom 1's edges (when geom 1 is no face and geom 2 has faces); then
  the other order. The first aligned pair is final: its edge is clipped by the face's edge
  planes, and each point has dist = (p - face) . n_face, position p - dist/2 n_face and
  normal -+n_face (the face's, made to point from geom 1 to geom 2). So a cylinder's side on
  a cylinder cap counts when its vertices span both caps (exactly parallel, to EPA's
  round-off: a cylinder lying on a disc gets two contacts at 90.0001 degrees, one at 90.001),
  and a disc's own side line may be clipped (to nothing) by a tilted cylinder's cap or a box
  face: there is no tolerance on parallelism beyond EDGE_TOL.
* Points with dist > margin are dropped (distances are those of the uninflated geoms; a
  margin only lets separated features count). More than four: a quadrilateral of them, by
  polygonQuad's greedy search over the remaining points in polygon order with the area
  0.5 |(a - c) x (b - d)|, keeping its corners unless an area is strictly larger; a clipped
  edge with three or four: the first pair (in order) farthest apart; else all of them in
  order, duplicates included (polygonClip, 4.0.0: a side line across a face's edge clips to
  the same point twice, and MuJoCo reports both). None left: the convex contact stays.
* Cylinder caps are 16-gons, vertex k at angle 2 pi k / 16 (bottom cap) or -2 pi k / 16 (top
  cap), from MuJoCo's tables of cosines and sines rounded to 15 digits: every face is listed
  clockwise seen from outside, like MuJoCo's box faces.
* Round-off: a cap's points form a regular polygon, on which many quadrilaterals tie in exact
  arithmetic, and MuJoCo's pick among them follows its round-off. Faces, clipping and areas are
  therefore computed with MuJoCo's operations in MuJoCo's order, with every product rounded on
  its own (_nf: XLA would otherwise fuse products into sums); from the same geom frames the
  four points are MuJoCo's, bit for bit without fusion and to ~1e-16 with it.

Known differences (measured; tests/collision/test_multiccd.py holds the rest to 1e-9):
* Meshes: in 132 random scenes (capsules inside a mesh's margin or in it, mesh-mesh and
  box-mesh overlaps; tests/collision/test_multiccd.py, slow) every contact is MuJoCo's to
  1e-8, but the two ends of a clipped edge may come in the other order (the order of EPA's
  final face's vertices, convex.py).
* The features are as good as the EPA face they come from: where jaxmj's EPA ends on another
  face than MuJoCo's (convex.py), other features can follow; in 360 random box-disc and
  cylinder-slab overlaps (240 deep, held in tests/collision/test_multiccd.py, slow; 120 near
  touching) none picked other features (6 did with the stand-ins these rules replace); under
  the test suite's compile flags one deep cylinder side line starts 3e-4 away (EPA's first
  vertex under other round-off).
* Ties need the same geom frames to the last bit: jaxmj's kinematics gives geom_xmat within
  ~1e-16 of MuJoCo's, not equal, and a cylinder standing on a box then keeps other rim points
  in some steps (its trajectory drifts ~1e-4 in 200 steps).
* polygon_contacts without witness points (the stage alone, as tests call it) draws a
  capsule's line through a stand-in, the grown surface point along u's part across the axis:
  MuJoCo's point where the cores are apart, not where a capsule's core penetrates (measured
  there before collide passed the witness points: up to 2.4e-5 off with a margin).

Gradients: features, clipping decisions and the quadrilateral are held fixed; the points,
distances and normals are smooth functions of the geom frames (the support directions of
EPA's vertices are held fixed too).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmj import math
from jaxmj.collision import mesh
from jaxmj.collision.ccd import convex
from jaxmj.collision.primitive import GeomFrame
from jaxmj.constants import MINVAL
from jaxmj.loops import batched_like, bounded_loop
from jaxmj.types import DisableBit, GeomType

FACE_TOL = 0.996  # cos of the largest angle between aligned face normals (4.0.0's binary)
EDGE_TOL = 0.0888  # |sin| of the largest angle between an aligned edge and a face (binary)
NCAP = 16  # vertices of a cylinder cap polygon
MAX_CONTACTS = 4
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
  """A mesh geom's hull polygons in its frame, padded (rows of unused polygons: count 0), and
  the hull they index (slots: rows of mesh_hullvert)."""

  verts: jax.Array  # (F, P, 3) vertices, counter-clockwise seen from outside (mesh_polyvert)
  count: jax.Array  # (F,) int  vertices of each polygon (0: padding)
  normal: jax.Array  # (F, 3) outward unit normals (mesh_polynormal)
  ids: jax.Array  # (F, P) int  the vertices' hull slots
  pmap: jax.Array  # (H, K) int  polygons through each hull vertex (mesh_polymap), -1 padded
  hull: jax.Array  # (H, 3)  hull vertices (mesh_hullvert's row)


# --------------------------------------------------------------------------------------------
# features


class _Face(NamedTuple):
  verts: jax.Array  # (P, 3) world, clockwise seen from outside; rows >= count repeat row 0
  count: jax.Array  # () int
  normal: jax.Array  # (3,) outward unit normal


def _world(g: GeomFrame, local):
  return local @ g.mat.T + g.pos


# MuJoCo's choices among nearly tied quadrilaterals (and clipping at a polygon's corners) follow
# its round-off, so the polygon is built and pruned with MuJoCo's operations in MuJoCo's order,
# each product kept out of fused multiply-adds by `math.nofma` (z: `math.opaque_zero`).
_nf = math.nofma


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


class _Simplex(NamedTuple):
  """One geom's vertices of EPA's final face (GJK's final simplex when the cores are apart),
  as mjc_multicontact reads them: the support directions and mjc_*Support's vertex indices
  (box: corner bits x 1, y 2, z 4; cylinder: its cap, 0 top, 1 bottom; else 0)."""

  dim: jax.Array  # () int: distinct indices (simplexDim): 1 a vertex, 2 an edge, 3 a face
  idx: jax.Array  # (3,) int: the three indices (repeats when there are fewer vertices)
  first: jax.Array  # (2,) int: the first index and the second distinct one (simplexDim's swap)
  dirs: jax.Array  # (2, 3) their support directions


def _static(code, kinds) -> bool:
  """Whether `code` is a Python int among `kinds`: its branch alone is traced (a group of
  one pair type), the same values as the traced code's selection."""
  return isinstance(code, int) and code in kinds


def _simplex(code, g: GeomFrame, dirs, n, poly) -> _Simplex:
  """dirs (3, 3): the geom's own support directions (geom 2's are minus the pair's); n: how
  many vertices there are (1-3): rows past it repeat row 0, as mjc_multicontact reads them.
  A mesh's index is its support vertex (hull slot, the first maximum: MuJoCo's hill climbing
  and exhaustive search agree but for exact ties)."""
  rows = jnp.stack([0, jnp.where(n >= 2, 1, 0), jnp.where(n > 2, 2, 0)])
  d = dirs[rows]
  ld = d @ g.mat
  box = lambda: jnp.sum(jnp.where(ld >= 0, jnp.array([1, 2, 4]), 0), axis=1)  # noqa: E731
  cyl = lambda: (ld[:, 2] < 0).astype(jnp.int32)  # mjc_cylinderSupport: z < 0 is the bottom cap
  vertex = lambda: jnp.argmax(ld @ poly.hull.T, axis=1)  # noqa: E731
  if _static(code, (_BOX, _CYL) + ((_MESH,) if poly is not None else ())):
    i = {_BOX: box, _CYL: cyl, _MESH: vertex}[code]().astype(jnp.int32)
  else:
    i = jnp.where(code == _BOX, box(), jnp.where(code == _CYL, cyl(), 0)).astype(jnp.int32)
    if poly is not None:
      i = jnp.where(code == _MESH, vertex(), i).astype(jnp.int32)
  same = i[0] == i[1]
  swap = same & (i[0] != i[2])
  dim = jnp.where(same, jnp.where(swap, 2, 1), jnp.where((i[2] == i[0]) | (i[2] == i[1]), 2, 3))
  second = jnp.where(swap, 2, 1)
  return _Simplex(dim, i, jnp.stack([i[0], i[second]]), jnp.stack([d[0], d[second]]))


def _bits(i):
  return (i[..., None] >> jnp.arange(3)) & 1


def _box_normals(g: GeomFrame, s: _Simplex):
  """boxNormals (4.0): (normals (3, 3), count, face ids (3,)): dim 3, the face all three
  corners share (a zero normal if none); dim 2, the faces along the edge, x before y before z;
  dim 1, the corner's x, y and z faces."""
  b3, b2 = _bits(s.idx), _bits(s.first)
  sh3 = jnp.all(b3 == 1, 0).astype(jnp.int32) - jnp.all(b3 == 0, 0).astype(jnp.int32)
  sh2 = (b2[0] & b2[1]) - ((1 - b2[0]) & (1 - b2[1]))
  shared = jnp.where(s.dim == 3, sh3, jnp.where(s.dim == 2, sh2, 2 * b2[0] - 1))
  axes = jnp.argsort(shared == 0, stable=True)  # the shared axes first, in axis order
  sign = shared[axes]
  count = jnp.where(s.dim == 3, 1, jnp.sum(shared != 0))
  normals = g.mat[:, axes].T * sign[:, None].astype(g.mat.dtype)
  return normals, count, 2 * axes + (sign < 0)


def _rows(poly) -> int:
  """Rows of a geom's normal and edge lists: 3 (a box corner), or a mesh vertex's polygons."""
  return 3 if poly is None else max(3, poly.pmap.shape[1])


def _normals(code, g: GeomFrame, s: _Simplex, poly, z):
  """The geom's candidate face normals, as mjc_multicontact gathers them: (normals (n, 3),
  count, tags (n,): box face id, cylinder cap (0 top, 1 bottom), mesh polygon), n = _rows. A
  cylinder offers its cap only when all its vertices lie on it; a mesh the polygons through
  its vertices (mesh.mesh_normals)."""
  n = _rows(poly)
  if poly is not None and _static(code, (_MESH,)):
    mn, mc, mt = mesh.mesh_normals(g.mat, s.idx, s.first, s.dim, poly.pmap, poly.normal, n, z)
    return mn, mc.astype(jnp.int32), mt.astype(jnp.int32)
  zero = jnp.zeros((n, 3), g.mat.dtype)
  bn, bc, bt = _box_normals(g, s)
  if _static(code, (_BOX,)):
    return zero.at[:3].set(bn), bc.astype(jnp.int32), jnp.zeros(n, jnp.int32).at[:3].set(
      bt.astype(jnp.int32))
  cap = jnp.where(s.first[0] == 0, 1.0, -1.0) * g.mat[:, 2]
  normals = jnp.where(code == _BOX, zero.at[:3].set(bn), zero.at[0].set(cap))
  count = jnp.where(code == _BOX, bc, jnp.where((code == _CYL) & (s.dim == 1), 1, 0))
  tags = jnp.where(code == _BOX, jnp.zeros(n, jnp.int32).at[:3].set(bt.astype(jnp.int32)),
                   s.first[0])
  if poly is not None:
    mn, mc, mt = mesh.mesh_normals(g.mat, s.idx, s.first, s.dim, poly.pmap, poly.normal, n, z)
    is_mesh = code == _MESH
    normals = jnp.where(is_mesh, mn, normals)
    count = jnp.where(is_mesh, mc, count)
    tags = jnp.where(is_mesh, mt, tags)
  return normals, count.astype(jnp.int32), tags.astype(jnp.int32)


def _vertex_face(code, s: _Simplex, n, c, t, toward):
  """A mesh vertex (dim 1) offers one polygon: of those through it (in mesh_polymap's order),
  the first whose normal's projection on `toward` (the witness difference out of this geom,
  x1 - x2 for geom 1, x2 - x1 for geom 2, not normalized) beats the best before it by more
  than MINVAL. (normals, count, tags) as _normals'."""
  along = n @ toward

  def scan(k, best):
    return jnp.where((k < c) & (along[k] > along[best] + MINVAL), k, best)

  k = lax.fori_loop(1, n.shape[0], scan, jnp.zeros((), jnp.int32))
  narrow = (code == _MESH) & (s.dim == 1) & (c > 0)
  return (jnp.where(narrow, n.at[0].set(n[k]), n), jnp.where(narrow, 1, c),
          jnp.where(narrow, t.at[0].set(t[k]), t))


def _face(code, g: GeomFrame, tag, normal, poly, p: int, z) -> _Face:
  """The polygon of a face chosen by _normals (tag, unit normal)."""
  def of_mesh():
    mv = _pad(_world_exact(g, poly.verts[tag], z)[::-1], p)  # MuJoCo lists them reversed
    n = poly.count[tag]
    return jnp.roll(mv, n - mv.shape[0], axis=0), n  # the reversal put padding first

  box = _world_exact(g, jnp.asarray(_BOX_FACES)[tag] * g.size, z)
  if poly is not None and _static(code, (_MESH,)):
    verts, count = of_mesh()
    return _Face(verts, count.astype(jnp.int32), normal)
  if _static(code, (_BOX,)):
    return _Face(_pad(box, p), jnp.asarray(4, jnp.int32), normal)
  top = tag == 0
  r, h = g.size[0], g.size[1]
  local = jnp.stack([r * _CAP_COS, jnp.where(top, -r, r) * _CAP_SIN,
                     jnp.broadcast_to(jnp.where(top, h, -h), (NCAP,))], axis=1)
  cyl = _world_exact(g, local, z)
  verts = jnp.where(code == _BOX, _pad(box, p), _pad(cyl, p))
  count = jnp.where(code == _BOX, 4, min(NCAP, p))  # p < NCAP: no cylinder in the group
  if poly is not None:
    mv, n = of_mesh()
    verts = jnp.where(code == _MESH, mv, verts)
    count = jnp.where(code == _MESH, n, count)
  return _Face(verts, count.astype(jnp.int32), normal)


def _support(code, g: GeomFrame, d):
  """Support point of a cylinder (side and rim) or box in direction d, as convex.py's."""
  ld = g.mat.T @ d
  sgn = jnp.where(ld >= 0, 1.0, -1.0)
  n2 = ld[0] * ld[0] + ld[1] * ld[1]
  ok = n2 >= MINVAL * MINVAL
  scl = jnp.where(ok, g.size[0] / jnp.sqrt(jnp.where(ok, n2, 1.0)), 0.0)
  cyl = jnp.stack([scl * ld[0], scl * ld[1], sgn[2] * g.size[1]])
  return _world(g, jnp.where(code == _CYL, cyl, sgn * g.size))


def _unit(v):
  return v / jnp.sqrt(jnp.maximum(jnp.sum(v * v, -1, keepdims=True), MINVAL * MINVAL))


def _edges(code, g: GeomFrame, s: _Simplex, u, poly, grow, witness, z):
  """geomEdgeNormals (4.0): the geom's candidate edges from its first vertex: (ends (n, 2, 3),
  unit directions (n, 3), count), n = _rows. A capsule's edge: a line along its axis, as long
  as its core, through its witness point (the convex contact's point on this geom, grown by
  grow, half the pair's margin; _multicontact moves it back once the face is known); without
  a witness (None) a stand-in for it: the grown surface point along u's part across the axis.
  A mesh's edges: mesh.mesh_edges."""
  n = _rows(poly)
  mesh_edges = lambda: mesh.mesh_edges(g, poly.hull, s.first, s.dim, poly.pmap,  # noqa: E731
                                       poly.ids, poly.count, n, z)
  if poly is not None and _static(code, (_MESH,)):
    ends, count = mesh_edges()
    return ends, _unit(ends[:, 1] - ends[:, 0]), count.astype(jnp.int32)
  a, h = g.mat[:, 2], g.size[1]
  if witness is None:
    witness = g.pos + (g.size[0] + grow) * (u - (a @ u) * a)
  t = _dot3(a, witness - g.pos, z)
  cap = jnp.stack([_nf((-t - h) * a, z) + witness, _nf((h - t) * a, z) + witness])
  # cylinder: the side line from the first vertex (its rim point) to the other cap
  toward = jnp.where(s.first[0] == 0, -1.0, 1.0) * a
  start = _support(_CYL, g, s.dirs[0])
  cyl = jnp.stack([start, start + (2.0 * h) * toward])
  # box: dim 2, the corners of the first two distinct vertices; dim 1, the corner's three
  # edges (to the corners across x, y, z)
  corner = lambda i: _world_exact(g, (2.0 * _bits(i) - 1.0) * g.size, z)
  c0 = corner(s.first[0])
  ends = jnp.where(s.dim == 2, corner(s.first[1])[None],
                   corner(s.first[0] ^ jnp.array([1, 2, 4])))
  box = jnp.stack([jnp.broadcast_to(c0, (3, 3)), ends], axis=1)
  one = lambda e: jnp.broadcast_to(e, (n, 2, 3))
  box = jnp.concatenate([box, jnp.broadcast_to(box[:1], (n - 3, 2, 3))])
  ends = jnp.where(code == _CAP, one(cap), jnp.where(code == _CYL, one(cyl), box))
  count = jnp.where(code == _BOX, jnp.where(s.dim == 2, 1, 3),
                    jnp.where((code == _CAP) | (code == _CYL), 1, 0))
  if poly is not None:
    mends, mcount = mesh_edges()
    is_mesh = code == _MESH
    ends = jnp.where(is_mesh, mends, ends)
    count = jnp.where(is_mesh, mcount, count)
  return ends, _unit(ends[:, 1] - ends[:, 0]), count.astype(jnp.int32)


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
    tiny = norm < MINVAL
    pn = jnp.where(tiny, jnp.array([1.0, 0.0, 0.0], r.dtype),
                   r * (1.0 / jnp.where(tiny, 1.0, norm)))
    q = poly[jnp.where(idx + 1 < cnt, idx + 1, 0)]
    dp, dq = _dot3(poly - a, pn, z), _dot3(q - a, pn, z)
    in1, in2 = dp > -MINVAL, dq > -MINVAL
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
  the indices (4,) of the chosen corners, run as a state machine of at most 8 M + 8 steps
  that stops once every pair of a vmapped call has walked its points (n <= 4: no steps, the
  result is unused). Indices only: no gradient flows through the walk, so its loop may stop
  early under reverse mode too.

  On a regular polygon (a cylinder cap) many steps tie in exact arithmetic and MuJoCo keeps
  its corners unless an area is larger (`<=`) in its own round-off: the points and areas are
  computed as MuJoCo computes them (see _nf), so the same ties go the same way.
  """
  m = pts.shape[0]
  pts = lax.stop_gradient(pts)
  n = jnp.where(n > 4, n, 0)
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

  return bounded_loop(8 * m + 8, step, batched_like(init, (pts, n)), lambda s: jnp.all(s[0] >= n),
                      early_exit=True)[-1]


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


def _first(hit):
  """(found, row, col) of the first True of an (A, B) mask in row-major order."""
  k = jnp.argmax(hit.reshape(-1))
  return jnp.any(hit), k // hit.shape[1], k % hit.shape[1]


def _select(n1, c1, n2, c2, e1, ec1, e2, ec2, dim1, dim2, u, vnorm):
  """mjc_multicontact's choice of features: (ff, ef12, ef21, slot1, slot2, edge slot).

  Faces: the first pair with n1 . n2 < -FACE_TOL among faces that face the contact
  (n1 . u > EDGE_TOL, n2 . u < -EDGE_TOL). Else an edge against a face (|e . n| < EDGE_TOL,
  faces outer, edges inner, the first found, the face facing the contact), geom 2's edges
  first when dil = geom 2 is no face (dim != 3) and geom 1 has faces and geom 2 none or a
  lower dimension, else geom 1's first; the other order when none aligns."""
  ok1, ok2 = jnp.arange(n1.shape[0]) < c1, jnp.arange(n2.shape[0]) < c2
  dots = n1 @ n2.T
  cand = (ok1 & (n1 @ u > EDGE_TOL))[:, None] & (ok2 & (n2 @ u < -EDGE_TOL))[None] & (
    dots < -FACE_TOL)
  k = jnp.argmax(cand.reshape(-1))
  ff, fi, fj = jnp.any(cand), k // n2.shape[0], k % n2.shape[0]
  # faces outer, edges inner; the face must face the contact (n . v > 1e-15, v = x2 - x1)
  face2 = ok2 & (-(n2 @ u) * vnorm > MINVAL)
  face1 = ok1 & ((n1 @ u) * vnorm > MINVAL)
  hit_a = face2[:, None] & (jnp.arange(e1.shape[0]) < ec1)[None] & (
    jnp.abs(n2 @ e1.T) < EDGE_TOL)
  hit_b = face1[:, None] & (jnp.arange(e2.shape[0]) < ec2)[None] & (
    jnp.abs(n1 @ e2.T) < EDGE_TOL)
  found_a, ja, ka = _first(hit_a)
  found_b, ib, kb = _first(hit_b)
  ok_a = (dim1 != 3) & (c2 != 0) & (ec1 > 0) & found_a
  ok_b = (dim2 != 3) & (c1 != 0) & (ec2 > 0) & found_b
  dil = (dim2 != 3) & (c1 != 0) & ((c2 == 0) | (dim2 < dim1))
  ef21 = ~ff & ok_b & (dil | ~ok_a)
  ef12 = ~ff & ok_a & ~(dil & ok_b)
  slot1 = jnp.where(ff, fi, ib)
  slot2 = jnp.where(ff, fj, ja)
  return ff, ef12, ef21, slot1, slot2, jnp.where(ef21, kb, ka)


def _multicontact(code1, code2, g1, g2, u, dirs, ndirs, vnorm, margin, polys, p: int,
                  witness):
  """The pair's multiccd contacts: (use, dist (4,), pos (4, 3), normal (3,), valid (4,))."""
  z = math.opaque_zero(g1.size[0])
  s1, s2 = _simplex(code1, g1, dirs, ndirs, polys[0]), _simplex(code2, g2, -dirs, ndirs, polys[1])
  n1, c1, t1 = _normals(code1, g1, s1, polys[0], z)
  n2, c2, t2 = _normals(code2, g2, s2, polys[1], z)
  if polys[0] is not None:  # a pair without meshes has no vertex polygons to narrow
    n1, c1, t1 = _vertex_face(code1, s1, n1, c1, t1, u * vnorm)
  if polys[1] is not None:
    n2, c2, t2 = _vertex_face(code2, s2, n2, c2, t2, -u * vnorm)
  grow = 0.5 * margin  # a capsule's share of the margin (MuJoCo inflates each geom by half)
  e1, d1, ec1 = _edges(code1, g1, s1, u, polys[0], grow, witness[0], z)
  e2, d2, ec2 = _edges(code2, g2, s2, -u, polys[1], grow, witness[1], z)
  ff, ef12, ef21, i, j, k = _select(n1, c1, n2, c2, d1, ec1, d2, ec2, s1.dim, s2.dim, u, vnorm)
  f1 = _face(code1, g1, t1[i], n1[i], polys[0], p, z)
  f2 = _face(code2, g2, t2[j], n2[j], polys[1], p, z)
  ends = jnp.where(ef21, e2[k], e1[k])
  # a capsule's line runs through its grown witness point: back by grow along the face's
  # normal (measured, 4.0.0: capsules inside a margin, their face 13 degrees off the normal)
  cap_edge = jnp.where(ef21, code2, code1) == _CAP
  ends = ends + jnp.where(cap_edge, grow, 0.0) * jnp.where(ef21, f1.normal, f2.normal)

  # subject: geom 2's face (face-face) or the edge; clipper: the other geom's face
  clipper = jax.tree.map(lambda a, b: jnp.where(ef12, a, b), f2, f1)
  m = 2 * p
  subject = jnp.where(ff, _pad(f2.verts, m), _pad(ends, m))
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


def polygon_contacts(type1, type2, g1: GeomFrame, g2: GeomFrame, normal, dirs, margin,
                     poly1: MeshPolygons | None = None, poly2: MeshPolygons | None = None,
                     npoly: int = NCAP, ndirs=3, depth=1.0, witness=None):
  """The multiccd stage alone (mjc_multicontact), from a convex contact: (use (), dist (4,),
  pos (4, 3), frame (4, 3, 3)); `use` says that features align (the contacts replace the
  convex contact), unused slots read dist = 1e10 and an identity frame.

  normal: the convex contact's unit normal (from geom 1 into geom 2); dirs (3, 3) or (3,): the
  support directions (geom 1's sense) of the vertices of EPA's final face, or of GJK's final
  simplex when the cores were apart, of which the first ndirs count (a single direction: one
  vertex); their vertex indices choose the features. depth: |x1 - x2| of the convex contact
  (scales MuJoCo's test that a face faces the contact). witness: the convex contact's points
  (x1, x2) on the two geoms, through which a capsule's edge runs (None: a stand-in, _edges).
  """
  dtype = jnp.result_type(g1.pos, g2.pos, float)
  frames = [GeomFrame(*(jnp.asarray(x, dtype) for x in g)) for g in (g1, g2)]
  g1, g2 = (g._replace(mat=jnp.reshape(g.mat, (3, 3))) for g in frames)
  code1, code2 = convex.type_codes(type1, type2)
  dirs = jnp.asarray(dirs, dtype)
  if dirs.ndim == 1:
    dirs, ndirs = jnp.broadcast_to(dirs, (3, 3)), 1
  use, dist, pos, normal, valid = _multicontact(
    code1, code2, g1, g2, jnp.asarray(normal, dtype), lax.stop_gradient(dirs),
    jnp.asarray(ndirs, jnp.int32), depth, margin, (poly1, poly2), npoly,
    (None, None) if witness is None else witness)
  eye = jnp.eye(3, dtype=dtype)
  frame = jnp.where(valid[:, None, None], convex.make_frame(normal)[None], eye)
  dist = jnp.where(valid, dist, convex.NO_CONTACT_DIST)
  return use, dist, jnp.where(valid[:, None], pos, 0.0), frame


def collide(type1, type2, g1: GeomFrame, g2: GeomFrame, margin, tolerance=1e-6, *,
            iterations: int = 35, verts1=None, verts2=None, poly1: MeshPolygons | None = None,
            poly2: MeshPolygons | None = None, npoly: int = NCAP):
  """mjc_Convex with multiccd for one pair: (dist (4,), pos (4, 3), frame (4, 3, 3)).

  Arguments as convex.collide_convex; poly1 / poly2: the mesh geoms' polygons (MeshPolygons,
  required with a mesh type, else None); npoly: the polygon capacity (static, >= 16 with a
  cylinder, else >= 4, and >= the largest mesh polygon). Slots without a contact read dist =
  1e10 and an identity frame.
  """
  plan = convex.convex_plan(type1, type2, g1, g2, margin, tolerance, iterations=iterations,
                            verts1=verts1, verts2=verts2)
  return collide_from_plan(plan, type1, type2, g1, g2, margin, verts1=verts1, verts2=verts2,
                           poly1=poly1, poly2=poly2, npoly=npoly)


def collide_from_plan(plan, type1, type2, g1: GeomFrame, g2: GeomFrame, margin, *,
                      verts1=None, verts2=None, poly1: MeshPolygons | None = None,
                      poly2: MeshPolygons | None = None, npoly: int = NCAP):
  """`collide` after its search: the contacts from a `convex.convex_plan` (differentiable in
  the geoms with the plan's combinatorics held fixed, as convex.contact_from_plan)."""
  dist0, pos0, frame0 = convex.contact_from_plan(plan, type1, type2, g1, g2, margin,
                                                 verts1=verts1, verts2=verts2)
  diff = lax.stop_gradient(plan.x1 - plan.x2)
  depth = jnp.sqrt(diff @ diff)
  u = diff / jnp.maximum(depth, MINVAL)
  dirs = jnp.where(plan.shallow, plan.core_dirs[:3], plan.face_dirs)
  ndirs = jnp.where(plan.shallow, plan.core_n, 3)
  # the witness points held fixed in their geom's frame (their gradients follow the geom)
  held = lambda g, x: g.pos + g.mat @ lax.stop_gradient(g.mat.T @ (x - g.pos))  # noqa: E731
  witness = tuple(jnp.where(plan.shallow | plan.deep, held(g, x), g.pos)
                  for g, x in ((g1, plan.x1), (g2, plan.x2)))
  use, dist, pos, frame = polygon_contacts(type1, type2, g1, g2, u, dirs, margin, poly1, poly2,
                                           npoly, ndirs, depth, witness)
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
  if disable & DisableBit.MULTICCD:
    return 1
  t1, t2 = m.geom_type[g1], m.geom_type[g2]
  return MAX_CONTACTS if any(applies(a, b) for a, b in zip(t1, t2)) else 1


def mesh_polygons(m, g: np.ndarray, p: int):
  """(verts (n, F, p, 3), count (n, F), normal (n, F, 3), ids (n, F, p), pmap (n, H, K)) of
  the geoms' mesh polygons in the geom frames (MeshPolygons but its hull); zero rows for
  geoms that are no mesh or polygons past a mesh's count."""
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
  tables = mesh.plane_mesh_tables(m)
  at = np.maximum(m.geom_dataid[g], 0) if m.nmesh else np.zeros(n, int)
  ids = np.zeros((n, max(nf, 1), p), np.int32)
  pmap = np.full((n,) + tables.pmap.shape[1:], -1, np.int32)
  if m.nmesh:
    is_mesh = m.geom_type[g] == GeomType.MESH
    ids[:, :, :tables.pverts.shape[2]] = np.where(is_mesh[:, None, None], tables.pverts[at], 0)
    pmap = np.where(is_mesh[:, None, None], tables.pmap[at], -1).astype(np.int32)
  return verts, count, normal, ids, pmap


def polygon_capacity(types: np.ndarray, npolygonmax: int) -> int:
  """Vertices of the largest face the group's geoms can offer (a box's 4, a cylinder cap's
  16, the largest mesh polygon): the clipping loop's trips and half its point capacity (an
  n-gon clipped by a k-gon keeps at most n + k points), so no larger than needed."""
  return max(NCAP if np.any(types == GeomType.CYLINDER) else 4, npolygonmax)


def group_collider(m, g1: np.ndarray, g2: np.ndarray, slots: int):
  """(search, contact, extra) for the driver's convex group, split where the gradient starts:
  search(g1, g2, margin, type1, type2, verts1=None, verts2=None) -> plan, the GJK/EPA search
  (convex.convex_plan: no gradient, all the loops); contact(plan, g1, g2, margin, type1,
  type2, verts1=None, verts2=None, *polygons) -> (dist (slots,), pos (slots, 3), frame
  (slots, 3, 3)); extra: per-pair polygon arrays to append to the mesh vertex arguments
  (empty without meshes). The driver runs the search on near pairs only (cull.py)."""
  tol, iters = m.opt.ccd_tolerance, m.opt.ccd_iterations
  # a group of one pair type (every pair of mesh_drop's: mesh-mesh) compiles for that type
  # alone: the types passed in are then ignored
  kinds = {(int(a), int(b)) for a, b in zip(m.geom_type[g1], m.geom_type[g2])}
  fixed = kinds.pop() if len(kinds) == 1 else None
  static = lambda t1, t2: (t1, t2) if fixed is None else fixed  # noqa: E731

  def search(a, b, margin, t1, t2, verts1=None, verts2=None):
    return convex.convex_plan(*static(t1, t2), a, b, margin, tol, iterations=iters,
                              verts1=verts1, verts2=verts2)

  if slots == 1:
    def single(plan, a, b, margin, t1, t2, verts1=None, verts2=None):
      one = convex.contact_from_plan(plan, *static(t1, t2), a, b, margin, verts1=verts1,
                                     verts2=verts2)
      return tuple(x[None] for x in one)
    return search, single, ()
  types = np.concatenate([m.geom_type[g1], m.geom_type[g2]])
  meshes = np.any(types == GeomType.MESH)
  p = polygon_capacity(types, int(m.npolygonmax))
  extra = ()
  if meshes and m.nmeshpoly:
    extra = tuple(jnp.asarray(x) for g in (g1, g2) for x in mesh_polygons(m, g, p))

  def multi(plan, a, b, margin, t1, t2, verts1=None, verts2=None, *polys):
    poly1 = MeshPolygons(*polys[:5], verts1) if polys else None
    poly2 = MeshPolygons(*polys[5:], verts2) if polys else None
    return collide_from_plan(plan, *static(t1, t2), a, b, margin, verts1=verts1,
                             verts2=verts2, poly1=poly1, poly2=poly2, npoly=p)
  return search, multi, extra
