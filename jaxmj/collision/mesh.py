"""Mesh colliders: a mesh geom collides as the convex hull of its vertices.

Pairs of a mesh with sphere, capsule, ellipsoid, cylinder, box or mesh go to the GJK/EPA
collider (`convex.collide_convex`) with the hull vertices as a padded (V, 3) array in the
geom frame: the support function is a masked max over that array, which is one vectorized
reduction whatever the hull size (see `pad_vertices` for why padding needs no mask there).
Plane-mesh has its own collider here, `plane_mesh` (MuJoCo 4.0's mjc_PlaneConvex), fed by
static per-mesh tables (`plane_mesh_tables`: hull graph, hill climbing's start vertices,
polygons per vertex) that also give multiccd its mesh features (`mesh_normals`, `mesh_edges`,
used by multiccd.py). MuJoCo 4.0's rules here were read from the 4.0.0 binary's disassembly
(mjc_PlaneConvex, mjc_hillclimbSupport, mjc_initCCDObjSupport, meshNormals, geomEdgeNormals)
and are held against mujoco 4.0.0 (tests/collision/test_mesh.py, test_multiccd.py).

Vertex arrays: `pad_vertices` turns per-mesh vertex lists into one (nmesh, V, 3) array plus
vertex counts; the driver gathers each pair's rows by geom_dataid, so every pair of a group
shares one shape and the collider is traced once.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmj import math
from jaxmj.collision.primitive import NO_CONTACT, Collision, GeomFrame, make_frame
from jaxmj.loops import kept
from jaxmj.scan import cached_plan
from jaxmj.types import GeomType

PLANE_MESH_CONTACTS = 4  # the most contacts mujoco 4.0's plane-mesh collider returns
_HILLCLIMB_MIN = 10  # mjMESH_HILLCLIMB_MIN: meshes with fewer vertices search exhaustively


def pad_vertices(verts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
  """Per-mesh (n_i, 3) vertex arrays -> ((nmesh, V, 3) float64, (nmesh,) int32 counts).

  Rows past a mesh's count repeat its vertex 0. A support search (first maximum of a dot
  product) then never picks a padding row: a copy of vertex 0 ties with vertex 0, and the
  first of tied rows wins. V is at least 1 (a zero row for an empty list).
  """
  count = np.array([len(v) for v in verts], np.int32)
  width = max(1, int(count.max(initial=0)))
  out = np.zeros((len(verts), width, 3))
  for i, v in enumerate(verts):
    v = np.asarray(v, float).reshape(-1, 3)
    if len(v):
      out[i, :len(v)] = v
      out[i, len(v):] = v[0]
  return out, count


class PlaneMeshTables(NamedTuple):
  """Static per-mesh data of the plane-mesh collider, indices in hull slots (rows of
  mesh_hullvert). Built on the host (`plane_mesh_tables`) from MuJoCo's hull graph and
  polygons; one pair's rows are gathered by mesh id."""

  # () bool: MuJoCo searches the support by hill climbing (graph, >= 10 verts); None where no
  # mesh of the group does (no climbing loop to compile)
  hill: jax.Array | None
  extrema: jax.Array  # (27,) int: hill climbing's start per octant of the direction
  nbr: jax.Array  # (H, D) int: hull neighbours in graph order, padded with the vertex itself
  pmap: jax.Array  # (H, K) int: polygons through each vertex (mesh_polymap), -1 padded
  pnormal: jax.Array  # (F, 3) outward polygon normals in the mesh frame (mesh_polynormal)
  pverts: jax.Array  # (F, P) int: each polygon's vertex path (mesh_polyvert), 0 padded
  pnum: jax.Array  # (F,) int: vertices of each polygon


def _graph(m, i):
  """Mesh i's hull graph: (vertex ids per local id (nv,), hull slot per local id (nv,),
  neighbour local ids per local id)."""
  adr = int(m.mesh_graphadr[i])
  g = m.mesh_graph[adr:]
  nv = int(g[0])
  edgeadr, gid, edges = g[2:2 + nv], g[2 + nv:2 + 2 * nv], g[2 + 2 * nv:]
  slot = np.empty(nv, np.int64)
  slot[np.argsort(gid, kind="stable")] = np.arange(nv)  # hull slots: ascending vertex ids
  lists = []
  for j in range(nv):
    e = edges[edgeadr[j]:]
    lists.append(e[:int(np.argmax(e < 0))])
  return gid, slot, lists


def _extrema(vert: np.ndarray) -> np.ndarray:
  """mesh_extrema: per octant (sx, sy, sz) in {-1, 0, 1}^3, x slowest, the first vertex
  maximising (sx x + sy y) + sz z in float32 (measured against MuJoCo 4.0's compiler)."""
  s = np.array([-1, 0, 1], np.float32)
  d = np.stack(np.meshgrid(s, s, s, indexing="ij"), -1).reshape(27, 3)
  v = vert.astype(np.float32)
  dots = (v[None, :, 0] * d[:, None, 0] + v[None, :, 1] * d[:, None, 1]) \
    + v[None, :, 2] * d[:, None, 2]
  return np.argmax(dots, axis=1)


@cached_plan
def plane_mesh_tables(m) -> PlaneMeshTables:
  """PlaneMeshTables of every mesh, stacked (nmesh, ...) as numpy arrays (host side)."""
  nmesh = m.nmesh
  h = max(1, int(np.max(m.mesh_hullnum, initial=0)))
  k = max(1, int(np.max(m.mesh_polymapnum, initial=0)))
  f = max(1, int(np.max(m.mesh_polynum, initial=0)))
  p = max(1, int(np.max(m.mesh_polyvertnum, initial=0)))
  graphs = [_graph(m, i) if m.mesh_graphadr[i] >= 0 else None for i in range(nmesh)]
  d = max([1] + [len(x) for g in graphs if g for x in g[2]])
  hill = np.zeros(nmesh, bool)
  extrema = np.zeros((nmesh, 27), np.int32)
  nbr = np.broadcast_to(np.arange(h, dtype=np.int32)[:, None], (nmesh, h, d)).copy()
  pmap = np.full((nmesh, h, k), -1, np.int32)
  pnormal = np.zeros((nmesh, f, 3))
  pverts = np.zeros((nmesh, f, p), np.int32)
  pnum = np.zeros((nmesh, f), np.int32)
  for i, g in enumerate(graphs):
    if g is None:
      continue
    gid, slot, lists = g
    vadr = int(m.mesh_vertadr[i])
    hill[i] = m.mesh_vertnum[i] >= _HILLCLIMB_MIN
    extrema[i] = slot[_extrema(m.mesh_vert[vadr + gid])]
    for j, e in enumerate(lists):
      nbr[i, slot[j], :len(e)] = slot[e]
    of_vert = np.zeros(int(m.mesh_vertnum[i]), np.int64)
    of_vert[gid] = slot
    padr = int(m.mesh_polyadr[i])
    for q in range(int(m.mesh_polynum[i])):
      adr, num = m.mesh_polyvertadr[padr + q], m.mesh_polyvertnum[padr + q]
      pverts[i, q, :num] = of_vert[m.mesh_polyvert[adr:adr + num]]
      pnum[i, q] = num
      pnormal[i, q] = m.mesh_polynormal[padr + q]
    for v in gid:
      adr, num = m.mesh_polymapadr[vadr + v], m.mesh_polymapnum[vadr + v]
      pmap[i, of_vert[v], :num] = m.mesh_polymap[adr:adr + num]
  return PlaneMeshTables(hill, extrema, nbr, pmap, pnormal, pverts, pnum)


# MuJoCo's arithmetic in MuJoCo's order, each product rounded on its own (`math.nofma`):
# the choice among tied vertices and quadrilaterals follows its round-off.
def _dot3(a, b, z):
  p = math.nofma(a * b, z)
  return (p[..., 0] + p[..., 1]) + p[..., 2]


def _global(mat, pos, v, z):
  """mat @ v + pos per row of v (localToGlobal)."""
  p = math.nofma(v[..., None, :] * mat, z)
  return ((p[..., 0] + p[..., 1]) + p[..., 2]) + pos


def _hill_climb(t: PlaneMeshTables, dots, start):
  """mjc_hillclimbSupport: from `start`, move to the first neighbour with the largest
  support value while it beats the best so far. dots (H,): support values of the hull."""

  def step(s):
    imax, _, best = s
    nb = t.nbr[imax]
    k = jnp.argmax(dots[nb])
    up = dots[nb[k]] > best
    return jnp.where(up, nb[k], imax), imax, jnp.where(up, dots[nb[k]], best)

  init = (start, jnp.asarray(-1, start.dtype), dots[start])
  return kept(lax.while_loop(lambda s: s[0] != s[1], step, init)[0])


def _hull4(verts, face, n, a, z):
  """MuJoCo's pruning of a polygon to at most four corners through corner `a`: the
  quadrilateral (a, a+1, a+2, a+3) grown greedily (advance d, then c, then b, while the
  area grows). face (P,): vertex slots of the path, n its length. Returns path positions
  (4,) and their count min(n, 4)."""

  def area(b, c, d):
    u = verts[face[a]] - verts[face[c]]
    w = verts[face[b]] - verts[face[d]]
    i, j = jnp.array([1, 2, 0]), jnp.array([2, 0, 1])
    x = math.nofma(u[i] * w[j], z) - math.nofma(u[j] * w[i], z)
    x2 = math.nofma(x * x, z)
    return 0.5 * jnp.sqrt((x2[0] + x2[1]) + x2[2])

  nn = jnp.maximum(n, 1)
  b, c, d = (a + 1) % nn, (a + 2) % nn, (a + 3) % nn

  def step(s):  # phase 0: try the next d, 1: the next c, 2: the next b; 3: done
    b, c, d, best, phase = s
    cb = jnp.where(phase == 2, (b + 1) % nn, b)
    cc = jnp.where(phase == 1, (c + 1) % nn, c)
    cd = jnp.where(phase == 0, (d + 1) % nn, d)
    new = area(cb, cc, cd)
    grow = new > best
    stop = jnp.where(phase == 0, 3, (phase + 1) % 3)  # d stuck: done; c stuck: b; b: d
    return (jnp.where(grow, cb, b), jnp.where(grow, cc, c), jnp.where(grow, cd, d),
            jnp.where(grow, new, best), jnp.where(grow, jnp.maximum(phase, 1), stop))

  if face.shape[0] <= 4:  # no polygon of more than four corners: nothing to prune (no loop)
    return jnp.stack([a, b, c, d]), jnp.minimum(n, 4)
  phase = jnp.where(n > 4, 0, 3)
  b, c, d, _, _ = kept(lax.while_loop(lambda s: s[4] != 3, step, (b, c, d, area(b, c, d), phase)))
  return jnp.stack([a, b, c, d]), jnp.minimum(n, 4)


def plane_mesh(plane: GeomFrame, mesh: GeomFrame, margin, verts: jax.Array, nvert: jax.Array,
               tables: PlaneMeshTables) -> Collision:
  """Plane-mesh contacts (MuJoCo 4.0's mjc_PlaneConvex on a mesh): up to 4 hull vertices.

  verts (V, 3): hull vertices in the mesh geom frame, padded (`pad_vertices`); nvert: count;
  tables: the mesh's `PlaneMeshTables`. Returns (dist (4,), pos (4, 3), frame (4, 3, 3));
  normal = plane z axis, each contact at its vertex moved halfway back to the plane, dist =
  the vertex's signed height; a contact needs dist <= margin.

  Contact 0 is the support vertex along -normal: hill climbing over the hull graph from the
  octant's extreme vertex for meshes with a graph and >= 10 vertices, else the first maximum.
  The others are corners of the hull polygon through it that faces the plane most (least
  normal . plane normal): its path pruned to four corners through contact 0 (`_hull4`), in
  path order, each kept when below the margin and not above the mesh centre.
  """
  n = plane.mat[:, 2]
  # a square, not |x|: LLVM knows fabs clears the sign bit and would fold the guard away
  z = math.opaque_zero(mesh.size[0] * mesh.size[0])
  # indices only: the search sees no gradients (and its while loops need none)
  sv, smat, sn = (lax.stop_gradient(x) for x in (verts, mesh.mat, n))
  ln = _dot3(smat.T, sn, z)  # mat' n: the plane normal in the mesh frame
  dots = jnp.where(jnp.arange(verts.shape[0]) < nvert, _dot3(sv, -ln, z), -jnp.inf)
  octant = 13 + jnp.sum(jnp.array([9, 3, 1]) * ((-ln > 0.4).astype(int) - (-ln < -0.4)))
  vi = jnp.argmax(dots)
  if tables.hill is not None:
    vi = jnp.where(tables.hill, _hill_climb(tables, dots, tables.extrema[octant]), vi)
  ids = tables.pmap[vi]
  nd = jnp.where(ids >= 0, _dot3(tables.pnormal[jnp.maximum(ids, 0)], ln, z), jnp.inf)
  k = jnp.argmin(nd)
  has_poly = nd[k] < 1.0
  face, nf = tables.pverts[ids[k]], jnp.where(has_poly, tables.pnum[ids[k]], 1)
  on = face == vi
  a = jnp.where(jnp.any(on), jnp.argmax(on), 0)
  corner, count = _hull4(sv, face, nf, a, z)
  idx = jnp.concatenate([vi[None], face[corner[1:]]])
  world = _global(mesh.mat, mesh.pos, verts[idx], z)
  dist = _dot3(world - plane.pos, n, z)
  above = _dot3(world - mesh.pos, n, z) > 0
  valid = (dist <= margin) & ((jnp.arange(4) == 0) | ((jnp.arange(4) < count) & ~above))
  pos = world - n * (0.5 * dist)[:, None]
  frame = jnp.broadcast_to(make_frame(n), (PLANE_MESH_CONTACTS, 3, 3)).astype(mesh.pos.dtype)
  return jnp.where(valid, dist, NO_CONTACT), pos, frame


# pairs with a mesh that go to the GJK/EPA collider (type1 <= type2)
CONVEX_MESH_PAIRS = tuple((t, GeomType.MESH) for t in (
  GeomType.SPHERE, GeomType.CAPSULE, GeomType.ELLIPSOID, GeomType.CYLINDER, GeomType.BOX,
  GeomType.MESH))

# pairs with their own mesh collider: (collider, contact slots); the collider takes the
# mesh's padded vertices and count after the margin
COLLIDERS = {(GeomType.PLANE, GeomType.MESH): (plane_mesh, PLANE_MESH_CONTACTS)}


def pair_arguments(m, types, g1: np.ndarray, g2: np.ndarray) -> tuple:
  """Extra per-pair arguments of a group's collider: the mesh hull vertices it needs.

  types: the group key ("convex" or a (type1, type2) tuple). Convex group: (verts1, verts2),
  each (npair, V, 3) rows of m.mesh_hullvert in the geom frames (zeros for geoms that are
  no mesh), or () when the group has no mesh. Plane-mesh: (verts2, count2). Other: ().
  """
  is_mesh = lambda g: m.geom_type[g] == GeomType.MESH
  if types == (GeomType.PLANE, GeomType.MESH):
    mid = m.geom_dataid[g2]
    tables = PlaneMeshTables(*(jnp.asarray(x[mid]) for x in plane_mesh_tables(m)))
    if not np.any(plane_mesh_tables(m).hill[mid]):
      tables = tables._replace(hill=None)
    return m.mesh_hullvert[mid], jnp.asarray(m.mesh_hullnum[mid]), tables
  if types != "convex" or not (np.any(is_mesh(g1)) or np.any(is_mesh(g2))):
    return ()
  out = []
  for g in (g1, g2):
    verts = m.mesh_hullvert[np.maximum(m.geom_dataid[g], 0)]
    out.append(jnp.where(jnp.asarray(is_mesh(g))[:, None, None], verts, 0.0))
  return tuple(out)


# --------------------------------------------------------------------------------------------
# multiccd features of a mesh (mjc_multicontact's meshNormals and geomEdgeNormals)


def _rotate(mat, v, z):
  """mat @ v per row of v (globalcoord without a position)."""
  p = math.nofma(v[..., None, :] * mat, z)
  return (p[..., 0] + p[..., 1]) + p[..., 2]


def _compact(sel, n: int):
  """Indices (n,) of the True entries of sel first, in order (then the others)."""
  order = jnp.argsort(~sel, stable=True)
  if order.shape[0] < n:
    order = jnp.concatenate([order, jnp.zeros(n - order.shape[0], order.dtype)])
  return order[:n]


def mesh_normals(mat, idx, first, dim, pmap, pnormal, n: int, z):
  """meshNormals (MuJoCo 4.0): a mesh's candidate faces from the hull vertices (slots) of
  EPA's final face. dim 3: the first polygon through all three vertices (among the first two
  through idx[0] and idx[1]); dim 2: the first two polygons through both ends of the edge;
  dim 1: every polygon through the vertex, in mesh_polymap's order.

  idx (3,), first (2,): the vertices as _Simplex lists them; pmap (H, K) polygons per vertex
  (-1 padded); pnormal (F, 3) in the mesh frame. Returns (world normals (n, 3), count, polygon
  ids (n,)), n >= K."""
  l0, l1, l2 = pmap[first[0]], pmap[first[1]], pmap[idx[2]]
  own = l0 >= 0
  edge = own & jnp.any(l0[:, None] == l1[None, :], axis=1)
  edge = edge & (jnp.cumsum(edge) <= 2)
  face = edge & jnp.any(l0[:, None] == l2[None, :], axis=1)
  face = face & (jnp.cumsum(face) <= 1)
  sel = jnp.where(dim == 3, face, jnp.where(dim == 2, edge, own))
  order = _compact(sel, n)
  ids = jnp.maximum(l0[order], 0)
  return _rotate(mat, pnormal[ids], z), jnp.sum(sel).astype(jnp.int32), ids


def mesh_edges(g: GeomFrame, hull, first, dim, pmap, pverts, pnum, n: int, z):
  """geomEdgeNormals on a mesh (MuJoCo 4.0): edges from the first vertex of EPA's final face,
  positions recomputed from the hull. dim 2: the edge to the second distinct vertex; else one
  edge per polygon through the vertex (mesh_polymap's order), to the vertex before it on the
  polygon's path. hull (H, 3) in the mesh frame; pverts (F, P), pnum (F,): polygon paths in
  hull slots. Returns (ends (n, 2, 3) world, count), n >= K."""
  start = _global(g.mat, g.pos, hull[first[0]], z)
  l0 = pmap[first[0]]
  own = l0 >= 0
  paths, num = pverts[jnp.maximum(l0, 0)], jnp.maximum(pnum[jnp.maximum(l0, 0)], 1)
  at = jnp.argmax(paths == first[0], axis=1)
  prev = jnp.take_along_axis(paths, ((at + num - 1) % num)[:, None], axis=1)[:, 0]
  other = jnp.where(dim == 2, jnp.full_like(prev, first[1]), prev)
  ends = _global(g.mat, g.pos, hull[other], z)
  if ends.shape[0] < n:
    ends = jnp.concatenate([ends, jnp.broadcast_to(ends[:1], (n - ends.shape[0], 3))])
  ends = jnp.stack([jnp.broadcast_to(start, (n, 3)), ends[:n]], axis=1)
  return ends, jnp.where(dim == 2, 1, jnp.sum(own)).astype(jnp.int32)
