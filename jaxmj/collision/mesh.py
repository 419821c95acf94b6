"""Mesh colliders: a mesh geom collides as the convex hull of its vertices.

Pairs of a mesh with sphere, capsule, ellipsoid, cylinder, box or mesh go to the GJK/EPA
collider (`convex.collide_convex`) with the hull vertices as a padded (V, 3) array in the
geom frame: the support function is a masked max over that array, which is one vectorized
reduction whatever the hull size (see `pad_vertices` for why padding needs no mask there).
Plane-mesh has its own collider here, `plane_mesh` (MuJoCo's mjc_PlaneConvex).

Vertex arrays: `pad_vertices` turns per-mesh vertex lists into one (nmesh, V, 3) array plus
vertex counts; the driver gathers each pair's rows by geom_dataid, so every pair of a group
shares one shape and the collider is traced once.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.collision.primitive import NO_CONTACT, Collision, GeomFrame, make_frame
from jaxmj.types import GeomType

PLANE_MESH_CONTACTS = 4  # the most contacts mujoco 4.0's plane-mesh collider returns
_SIDE_EPS = 1e-9  # relative signed area below which a vertex counts as on the line a-b


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


def support_index(verts: jax.Array, local_dir: jax.Array) -> jax.Array:
  """Index of the first vertex maximising local_dir . v (MuJoCo's exhaustive mesh support,
  mjc_meshSupport, with no cached start). verts (V, 3), local_dir (3,) in the geom frame."""
  dots = verts[:, 0] * local_dir[0] + verts[:, 1] * local_dir[1] + verts[:, 2] * local_dir[2]
  return jnp.argmax(dots)


def _cross_n(n, a, b):
  """n . (a x b) for rows of a, b: signed area of (a, b) seen along n."""
  c = jnp.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                 a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                 a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], axis=-1)
  return jnp.sum(c * n, axis=-1)


def plane_mesh(plane: GeomFrame, mesh: GeomFrame, margin, verts: jax.Array,
               nvert: jax.Array) -> Collision:
  """Plane-mesh contacts (mjc_PlaneConvex on a mesh): up to 4 hull vertices below the plane.

  verts (V, 3): hull vertices in the mesh geom frame, padded (`pad_vertices`); nvert: count.
  Returns (dist (4,), pos (4, 3), frame (4, 3, 3)); normal = plane z axis, each contact at
  its vertex moved halfway back to the plane, dist = the vertex's signed height.

  Slot 0 is MuJoCo's first contact exactly: the support vertex along -normal (first maximum
  in vertex order), reported when its height is at most `margin`. MuJoCo 4.0 then adds up to
  three more vertices of the contact polygon whose height is below `margin`; its choice
  among more than four such vertices is not reproduced (its source for 4.0 is not public in
  a form we could read). Here the extra vertices are the one farthest from the first in the
  plane, then the farthest on either side of that diagonal (the largest quadrilateral through
  the first two), ordered around the polygon as MuJoCo orders its four (slot 0, the left
  one, the diagonal's end, the right one, clockwise about the normal). With four or fewer
  vertices below the margin this is the same set of contacts as MuJoCo's.
  """
  n = plane.mat[:, 2]
  dtype = mesh.pos.dtype
  local_dir = -(mesh.mat[0] * n[0] + mesh.mat[1] * n[1] + mesh.mat[2] * n[2])
  a = support_index(verts, local_dir)
  world = (verts[:, None, :] * mesh.mat[None]).sum(-1) + mesh.pos  # mat @ v + pos per row
  height = jnp.sum((world - plane.pos) * n, axis=-1)
  real = jnp.arange(verts.shape[0]) < nvert
  cand = real & (height < margin) & (jnp.arange(verts.shape[0]) != a)
  flat = world - height[:, None] * n  # projections on the plane
  rel = flat - flat[a]
  far = jnp.where(cand, jnp.sum(rel * rel, axis=-1), -1.0)
  b = jnp.argmax(far)
  has_b = far[b] > 0
  side = _cross_n(n, rel[b], rel)
  scale = _SIDE_EPS * jnp.maximum(far[b], 0.0)
  left = jnp.where(cand, side, -jnp.inf)
  right = jnp.where(cand, -side, -jnp.inf)
  c, e = jnp.argmax(left), jnp.argmax(right)
  idx = jnp.stack([a, c, b, e])
  valid = jnp.stack([height[a] <= margin, has_b & (left[c] > scale), has_b,
                     has_b & (right[e] > scale)])
  dist = height[idx]
  pos = world[idx] - n * (0.5 * dist)[:, None]
  frame = jnp.broadcast_to(make_frame(n), (PLANE_MESH_CONTACTS, 3, 3)).astype(dtype)
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
    return m.mesh_hullvert[mid], jnp.asarray(m.mesh_hullnum[mid])
  if types != "convex" or not (np.any(is_mesh(g1)) or np.any(is_mesh(g2))):
    return ()
  out = []
  for g in (g1, g2):
    verts = m.mesh_hullvert[np.maximum(m.geom_dataid[g], 0)]
    out.append(jnp.where(jnp.asarray(is_mesh(g))[:, None, None], verts, 0.0))
  return tuple(out)
