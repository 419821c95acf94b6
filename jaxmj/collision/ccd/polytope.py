"""EPA's start polytope (MuJoCo 4.0's polytope2 / polytope3 / polytope4) for
collision/convex.py, and the face helpers EPA shares with it."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmj.collision.ccd.gjk import area_cofactors, minors
from jaxmj.collision.ccd.support import (
  MINVAL,
  MINVAL2,
  Vertex,
  at_least,
  cross,
  det3,
  div3,
  dot,
  mat_vec,
  mul,
  ones_where,
  project_origin_plane,
  tree_get,
  tree_where,
)

# --------------------------------------------------------------------------------------------
# face helpers (shared with EPA) and the start polytope


def tri_affine(v1, v2, v3, p, guard):
  """Affine coordinates (..., 3) of p (on the plane of the triangle) w.r.t. v1, v2, v3."""
  m_max, pick = minors(v1, v2, v3, guard)
  c31, c32, c33 = area_cofactors(pick, p, v1, v2, v3, guard)
  bad = m_max == 0
  den = ones_where(m_max, bad)
  third = jnp.full_like(m_max, 1.0 / 3.0)
  return jnp.stack([jnp.where(bad, third, c / den) for c in (c31, c32, c33)], axis=-1)


def _tri_point_intersect(v1, v2, v3, p, guard, noise=None):
  lam = tri_affine(v1, v2, v3, p, guard)
  pr = mul(v1, lam[..., 0:1], guard) + mul(v2, lam[..., 1:2], guard) + mul(v3, lam[..., 2:3], guard)
  d = pr - p
  return jnp.all(lam >= 0, axis=-1) & (jnp.sqrt(dot(d, d, guard)) < at_least(MINVAL, noise))


def _same_side(p0, p1, p2, p3, guard):
  n = cross(p1 - p0, p2 - p0, guard)
  d1 = dot(n, p3 - p0, guard)
  d2 = dot(n, -p0, guard)
  return ((d1 > 0) & (d2 > 0)) | ((d1 < 0) & (d2 < 0))


def _test_tetra(p0, p1, p2, p3, guard):
  return jnp.all(_same_side(jnp.stack([p0, p1, p2, p3]), jnp.stack([p1, p2, p3, p0]),
                            jnp.stack([p2, p3, p0, p1]), jnp.stack([p3, p0, p1, p2]), guard))


def _ray_triangle(v1, v2, v3, v4, v5, guard):
  d12, d13, d14, d15 = v2 - v1, v3 - v1, v4 - v1, v5 - v1
  vol1 = det3(d13, d14, d12, guard)
  vol2 = det3(d14, d15, d12, guard)
  vol3 = det3(d15, d13, d12, guard)
  pos = (vol1 >= 0) & (vol2 >= 0) & (vol3 >= 0)
  neg = (vol1 <= 0) & (vol2 <= 0) & (vol3 <= 0)
  return pos | neg


def _rotmat120(axis, guard):
  n = jnp.sqrt(dot(axis, axis, guard))
  n = ones_where(n, n == 0)
  u1, u2, u3 = axis[0] / n, axis[1] / n, axis[2] / n
  s, c = 0.86602540378, -0.5
  m = lambda a, b: mul(a * b, 1 - c, guard)
  return jnp.stack(
    [
      jnp.stack([c + m(u1, u1), m(u1, u2) - mul(u3, s, guard), m(u1, u3) + mul(u2, s, guard)]),
      jnp.stack([m(u2, u1) + mul(u3, s, guard), c + m(u2, u2), m(u2, u3) - mul(u1, s, guard)]),
      jnp.stack([m(u1, u3) - mul(u2, s, guard), m(u2, u3) + mul(u1, s, guard), c + m(u3, u3)]),
    ]
  )


def epa_dir(d, dnorm):
  """epaSupport's direction: d / |d|, or +x when |d| is below mjMINVAL. Batched."""
  ok = dnorm > MINVAL
  ex = jnp.zeros_like(d).at[..., 0].set(1.0)
  return jnp.where(ok[..., None], div3(d, ones_where(dnorm, ~ok)), ex)


def orient(v, v1, center, guard):
  """MuJoCo 4.0's attachFace turns the face's v away from the polytope's centre."""
  return jnp.where((dot(v, v1 - center, guard) < 0)[..., None], -v, v)


def attach(verts, faces, center, guard):
  """attachFace for a list of faces (v1, v2, v3): oriented projections v and |v|^2."""
  f = jnp.asarray(faces)
  a, b, c = verts[f[:, 2]], verts[f[:, 1]], verts[f[:, 0]]
  v, fail = project_origin_plane(a, b, c, guard)
  v = orient(v, c, center, guard)
  d2 = jnp.where(fail, 0.0, dot(v, v, guard))
  return v, d2


_P2_FACES = ((0, 2, 3), (0, 4, 2), (0, 3, 4), (1, 3, 2), (1, 2, 4), (1, 4, 3))
_P2_ADJ = ((1, 3, 2), (2, 4, 0), (0, 5, 1), (5, 0, 4), (3, 1, 5), (4, 2, 3))
_P4_FACES = ((0, 1, 2), (0, 3, 1), (0, 2, 3), (3, 2, 1), (0, 1, 2), (0, 1, 2))
_P4_ADJ = ((1, 3, 2), (2, 3, 0), (0, 3, 1), (2, 0, 1), (0, 0, 0), (0, 0, 0))


_P3_HEXA = ((3, 0, 1), (3, 2, 0), (3, 1, 2), (4, 1, 0), (4, 0, 2), (4, 2, 1))  # b3 = +n, b4 = -n
_P3_SIDES = ((3, 0, 1, 2), (3, 2, 0, 1), (3, 1, 2, 0), (4, 1, 0, 2), (4, 0, 2, 1), (4, 2, 1, 0))
_P4_SIDES = ((0, 1, 2, 3), (0, 3, 1, 2), (0, 2, 3, 1), (3, 2, 1, 0))
# recoverHexa's vertex orders [b0, b1, b2, b3, b4] of the five vertices a0..a4 (triangle, +n, -n)
# (hexahedra: b3, b4 the apexes; tetrahedra: b0, b1, b3, b4)
_P3_ORDERS = ((0, 1, 2, 3, 4), (2, 4, 3, 0, 1), (0, 4, 3, 1, 2), (1, 4, 3, 2, 0),
              (0, 1, 2, 3, 4), (1, 2, 2, 3, 4), (2, 0, 2, 3, 4))


def _ray_volumes(v1, v2, v3, v4, v5, guard):
  """rayTriangle's signed volumes: where the segment v1-v2 passes the triangle (v3, v4, v5)."""
  d12, d13, d14, d15 = v2 - v1, v3 - v1, v4 - v1, v5 - v1
  return jnp.stack([det3(d13, d14, d12, guard), det3(d14, d15, d12, guard),
                    det3(d15, d13, d12, guard)])


def _polytope3(sup, tri: Vertex, tolerance, guard, noise=None):
  """MuJoCo 4.0's polytope3: the EPA start polytope around the triangle `tri` (3,).

  Supports v4 at +n and v5 at -n (n the triangle's normal) must lie strictly on either side
  of its plane. When the segment v4-v5 crosses the triangle the polytope is the hexahedron
  (triangle, v4, v5); otherwise rayTriangle's volumes pick another triangle of the five
  vertices that the segment does cross (a hexahedron again) or, failing that, the
  tetrahedron of v4, v5 and the edge of smallest volume. Faces are oriented away from the
  vertices' centroid, and each must have the origin on the inner side unless the origin is
  within the tolerance of it.
  Returns (verts (5,), nverts, faces (6, 3), adj (6, 3), nfaces, center (3,), ok).
  """
  t1, t2, t3 = tri.vert[0], tri.vert[1], tri.vert[2]
  n = cross(t2 - t1, t3 - t1, guard)
  n_norm = jnp.sqrt(dot(n, n, guard))
  nn = jnp.stack([-n, n])
  w54 = jax.vmap(sup)(epa_dir(nn, jnp.stack([n_norm, n_norm])))  # v5 at -n, then v4 at +n
  v5, v4 = w54.vert[0], w54.vert[1]
  inv = _tri_point_intersect(t1, t2, t3, w54.vert, guard, noise)
  zero_d = at_least(MINVAL, noise)
  eps = zero_d * n_norm
  flat = (dot(n, v4 - t1, guard) < eps) | (dot(-n, v5 - t1, guard) < eps)
  ok = (n_norm >= MINVAL) & ~jnp.any(inv) & ~flat

  # a0..a4 = t1, t2, t3, v4, v5
  five = jax.tree.map(lambda s, x: jnp.concatenate([s, x[::-1]]), tri, w54)
  x, y, z = _ray_volumes(v4, v5, t1, t2, t3, guard)
  crosses = ((x >= 0) & (y >= 0) & (z >= 0)) | ((x <= 0) & (y <= 0) & (z <= 0))
  c = -MINVAL
  case = jnp.select(
    [crosses, (x > 0) & (y < c) & (z < c), (y > 0) & (x < c) & (z < c),
     (z > 0) & (x < c) & (y < c), (x <= y) & (x <= z), (y <= x) & (y <= z)],
    [0, 1, 2, 3, 4, 5], 6)
  hexa = case < 4
  order = jnp.asarray(_P3_ORDERS)[case]
  b = tree_get(five, order)
  # hexahedron: centroid of all five; tetrahedron (b0, b1, b3, b4): of those four
  bv = b.vert
  center = jnp.where(hexa, ((((bv[0] + bv[1]) + bv[2]) + bv[3]) + bv[4]) * 0.2,
                     (((bv[0] + bv[1]) + bv[3]) + bv[4]) * 0.25)
  tet_order = jnp.asarray([0, 1, 3, 4, 0])
  verts = tree_where(hexa, b, tree_get(b, tet_order))
  faces = jnp.where(hexa, jnp.asarray(_P3_HEXA), jnp.asarray(_P4_FACES))
  adj = jnp.where(hexa, jnp.asarray(_P2_ADJ), jnp.asarray(_P4_ADJ))
  nfaces = jnp.where(hexa, 6, 4).astype(jnp.int32)
  _, d2 = attach(verts.vert, faces, center, guard)
  live = jnp.arange(6) < nfaces
  on_face = jnp.any(live & (d2 < MINVAL2))
  sides = jnp.where(hexa, jnp.asarray(_P3_SIDES),
                    jnp.asarray(_P4_SIDES + ((0, 1, 2, 3), (0, 1, 2, 3))))
  vv = verts.vert[sides]  # (6, 4, 3)
  tol = at_least(tolerance, noise)
  inner = _same_side(vv[:, 0], vv[:, 1], vv[:, 2], vv[:, 3], guard) | (d2 < tol * tol)
  ok = ok & ~on_face & jnp.all(inner | ~live)
  nverts = jnp.where(hexa, 5, 4).astype(jnp.int32)
  return verts, nverts, faces.astype(jnp.int32), adj.astype(jnp.int32), nfaces, center, ok


def polytope(sup, simplex: Vertex, nsimplex, tolerance, guard, noise=None):
  """MuJoCo 4.0's polytope2/3/4: the initial EPA polytope grown from the GJK simplex.

  Returns (verts (5,), nverts, faces (6, 3), adj (6, 3), nfaces, center (3,), ok).
  """
  dtype = simplex.vert.dtype
  # polytope2: hexahedron around the segment (nsimplex == 2)
  v1, v2 = simplex.vert[0], simplex.vert[1]
  diff = v2 - v1
  index = jnp.argmin(jnp.abs(diff))
  e = jnp.zeros(3, dtype).at[index].set(1.0)
  d1 = cross(e, diff, guard)
  rot = _rotmat120(diff, guard)
  d2 = mat_vec(rot, d1, guard)
  d3 = mat_vec(rot, d2, guard)
  dd = jnp.stack([d1, d2, d3])
  w = jax.vmap(sup)(epa_dir(dd, jnp.sqrt(dot(dd, dd, guard))))
  p2 = jax.tree.map(lambda s, x: jnp.concatenate([s[:2], x]), simplex, w)
  c2 = jnp.mean(p2.vert, axis=0)
  _, d2_p2 = attach(p2.vert, _P2_FACES, c2, guard)
  zero_d = at_least(MINVAL, noise)
  bad2 = d2_p2 < zero_d * zero_d
  fb2, k2 = jnp.any(bad2), jnp.argmax(bad2)
  nonconvex2 = ~_ray_triangle(*[p2.vert[i] for i in range(5)], guard)

  # polytope4: the tetrahedron itself (nsimplex == 4)
  c4 = jnp.mean(simplex.vert, axis=0)
  _, d2_p4 = attach(simplex.vert, _P4_FACES[:4], c4, guard)
  bad4 = d2_p4 < zero_d * zero_d
  fb4, k4 = jnp.any(bad4), jnp.argmax(bad4)
  notetra4 = ~_test_tetra(*[simplex.vert[i] for i in range(4)], guard)

  # polytope3 on a triangle: GJK's (nsimplex == 3) or the failed face of polytope2/4
  case2, case3, case4 = nsimplex == 2, nsimplex == 3, nsimplex == 4
  tri2 = tree_get(p2, jnp.asarray(_P2_FACES)[k2])
  tri4 = tree_get(simplex, jnp.asarray(_P4_FACES)[k4])
  tri = tree_where(case3, tree_get(simplex, jnp.arange(3)), tree_where(case2, tri2, tri4))
  p3, n3, f3, a3, nf3, c3, ok3 = _polytope3(sup, tri, tolerance, guard, noise)

  use3 = case3 | (case2 & fb2) | (case4 & fb4)
  use2 = case2 & ~fb2
  ok = jnp.where(use3, ok3, jnp.where(use2, ~nonconvex2, case4 & ~notetra4))
  p4 = jax.tree.map(lambda x: jnp.concatenate([x, x[:1]]), simplex)
  verts = tree_where(use3, p3, tree_where(use2, p2, p4))
  nverts = jnp.where(use3, n3, jnp.where(use2, 5, 4)).astype(jnp.int32)
  faces = jnp.where(use3, f3, jnp.where(use2, jnp.asarray(_P2_FACES), jnp.asarray(_P4_FACES)))
  adj = jnp.where(use3, a3, jnp.where(use2, jnp.asarray(_P2_ADJ), jnp.asarray(_P4_ADJ)))
  nfaces = jnp.where(use3, nf3, jnp.where(use2, 6, 4)).astype(jnp.int32)
  center = jnp.where(use3, c3, jnp.where(use2, c2, c4))
  return verts, nverts, faces.astype(jnp.int32), adj.astype(jnp.int32), nfaces, center, ok
