"""Convex-convex narrowphase: MuJoCo 4.0's native GJK/EPA ("nativeccd") in JAX.

Entry points (one pair per call; the driver vmaps):

  collide_convex(type1, type2, g1, g2, margin, tolerance, iterations=35, verts1=, verts2=)
      -> (dist (), pos (3,), frame (3, 3)). The geom types may be TRACED int arrays, so one
      compiled function serves every convex pair type (vmap over all convex pairs at once:
      the search compiles once, which matters, see "Cost" below).
  convex_collider(type1, type2, n, iterations) -> fn(g1, g2, margin, tolerance=1e-6,
      verts1=None, verts2=None) -> (dist (n,), pos (n, 3), frame (n, 3, 3)), static types;
      slot 0 holds the contact, the others are empty.
  convex_plan / contact_from_plan: the two stages of collide_convex (search, then the
      differentiable contact), for callers that want to reuse a compiled search.

`frame` rows are [normal (geom1 -> geom2), tangent1, tangent2] as in `mjContact.frame`, the
tangents made like `mju_makeFrame`. `dist` is negative in penetration; no contact gives
dist = 1e10 (finite), pos 0 and an identity frame. `margin` is the pair margin (geom_margin1 +
geom_margin2, or pair/margin); a contact exists when the signed distance is below it.
CONVEX_PAIRS lists the primitive pairs MuJoCo 4.0 routes to this collider.

Algorithm, reproducing MuJoCo 4.0's mjc_Convex with nativeccd as measured against the 4.0.0
binary (tests/collision/test_convex.py; the stored C sources differ in details, and where
they disagreed the binary decided: no gjkIntersect fallback, EPA stops on the current
iteration's support gap, margins handled by the core pass below):

* Supports S_1(d) - S_2(-d) of the Minkowski difference, each geom inflated by margin/2.
* Core pass, when a sphere or capsule is involved or the margin is positive: GJK distance
  between the cores (sphere -> point, capsule -> segment, other shapes uninflated). When the
  cores are apart, the contact is their closest-point pair pushed out by the radii and
  margin/2, and dist is exact up to GJK's tolerance.
* Otherwise GJK in intersection mode on the inflated shapes, then EPA on the polytope grown
  from GJK's simplex (MuJoCo's polytope2/3/4 constructions), until the support gap of the
  closest face is below ccd_tolerance or ccd_iterations have run. GJK starts from the
  centres' difference, or +x when the centres coincide.
* x1, x2 = witness points; pos = (x1 + x2)/2, normal = (x1 - x2)/|x1 - x2|, which points from
  geom 1 into geom 2; dist = margin + the ccd distance.

Near touching (MuJoCo 4.0's rules, read from the 4.0.0 binary; the stored C sources are
older): EPA starts from 4.0's polytope3 (supports along both normals of GJK's triangle, then
the hexahedron or tetrahedron of those five points that encloses the segment between them,
faces turned away from the vertices' centroid, the origin allowed within the tolerance
outside a face) and reports no contact when its first support falls short of the closest
face by more than the tolerance; so barely touching shapes get MuJoCo's contact or none
(tests/collision/test_convex.py, near-touching cases). Known differences: (1) 4.0's GJK
also stops once its iterate is shorter than ccd_tolerance on curved shapes, takes the
origin's projection on the simplex as the next iterate, skips the Frank-Wolfe test on its
first iteration, and ends with a separating-plane test; ported, these reproduce more
near-touching contacts (e.g. testdata/model.xml's cylinder on a heightfield prism at step
76, depth 6.3e-7 with MuJoCo's normal into the heightfield, where this collider gives
4.8e-8, normal up) but break exact agreement for meshes on heightfields with a margin
(tests/collision/test_hfield.py, cause not found), so they are not in this module yet.
(2) 4.0's polytope3 rebuilds from an edge of the triangle with polytope2 when the origin
lies exactly on a face (within 1e-15); here that is no contact. (3) polytope2/4 hand a failed
face to polytope3 as before (4.0 picks it with a new replaceBestSimplex3). The GJK distance
pass is chaotic where it converges slowly (a curved core within ~1e-5 of another shape):
last-bit rounding, XLA's batched vs unbatched arithmetic included, decides its last
iteration, so such contacts agree to ~1e-5 in the normal (test_convex's GJK_TOL).

float32 (jax's default, what RL users run): MuJoCo's exact tests (mjMINVAL) sit below float32's
resolution, so with exact support ties (axis-aligned, centred placements) GJK ended on a flat
tetrahedron or stalled on a box corner tie and EPA's start polytope failed: clearly
penetrating pairs got no contact. For dtypes narrower than float64 those thresholds scale with
the rounding noise of the pair's coordinates (_noise), and EPA runs whenever GJK's last
support does not prove the shapes apart; float64 runs MuJoCo's thresholds unchanged (bit for
bit). Held by tests/collision/test_convex_float32.py; one known remainder: an ellipsoid on a
box face's symmetry plane 1e-5..1e-4 deep can still be missed (GJK stalls on a segment in
that plane and polytope2's hexahedron around it fails).

JAX structure: fixed-trip lax.fori_loop over fixed-size arrays (MuJoCo's own polytope
capacity, 6 * ccd_iterations faces), no Python branching on traced values, no while_loop.
EPA's horizon is found for all visible faces at once (flood fill through visible neighbours)
instead of MuJoCo's depth-first walk: the polytope is the same, only the numbering of new
faces differs, which matters only for exactly tied face distances.

Gradients: the search runs on stop_gradient-ed inputs (and as its own jit, so a top-level
jax.grad reuses its compiled executable). Values are the search's (straight-through);
gradients are those of a smooth recomputation from the search's outcome (see _surrogate):
dist is the gap of the shapes along the reported normal, -n.(S_1(n) - S_2(-n)), whose
gradient is the signed distance's gradient by the envelope theorem (d/d pos2 = n,
d/d pos1 = -n, d/d sphere radius = -1, d/d margin = 0); pos goes through the final simplex /
face with recomputed barycentric weights. Nothing of the loops is stored for reverse mode.

Support functions: sphere, capsule, ellipsoid, cylinder, box, and a convex mesh given as a
(V, 3) vertex array in the geom frame (support = vertex with the largest dot product, like
MuJoCo's exhaustive mesh support), passed as verts1 / verts2. For a batch mixing meshes and
primitives pass a (V, 3) array for every geom (ignored unless the type is MESH).

Multiple contacts: this module gives MuJoCo's first (EPA or GJK) contact. MuJoCo 4.0's
multiccd, which turns it into up to four contacts when flat features of the two geoms align
(box faces, cylinder caps as 16-gons, mesh polygons, capsule / cylinder side / box / mesh
edges), is collision/multiccd.py, which runs this module's search and then its own stage; the
driver uses it for every convex pair of capsules, cylinders, boxes and meshes. MuJoCo's mesh
hill-climbing and support caching only matter for exactly tied vertices. Where a search direction is
exactly parallel to a box face, last-bit rounding picks the corner and may send EPA down a
different (equally valid) path than the C build: seen in ~2% of random cylinder-box cases.

Cost: the search is a large program; it compiles in ~11 s of CPU time (once for all pair
types when the types are traced; GJK's loop body is the largest part, which is why the
triangle and segment cases of its subdistance reuse the tetrahedron's face computations) and
runs at ~1.5 ms per pair vmapped.

GeomFrame (pos (3,), mat (3, 3) with the geom's local axes as columns, size (3,)) is
primitive.GeomFrame, re-exported here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxmj.collision.primitive import GeomFrame
from jaxmj.types import GeomType

_MINVAL = 1e-15  # mjMINVAL
_MINVAL2 = _MINVAL * _MINVAL
# float32: the search's "exactly zero / coplanar / converged" tests use this many units of
# rounding noise (eps x the pair's coordinate scale) instead of mjMINVAL, see _noise
_NOISE_K = 8.0
NO_CONTACT_DIST = 1e10
_HORIZON = 24  # MuJoCo's horizon buffer holds 24 edges

# geom types with a support function here
_CONVEX_TYPES = (GeomType.SPHERE, GeomType.CAPSULE, GeomType.ELLIPSOID, GeomType.CYLINDER,
                 GeomType.BOX, GeomType.MESH)

# Pairs that MuJoCo 4.0's mjCOLLISIONFUNC sends to mjc_Convex among primitive geoms (type1 <=
# type2, the order in which the driver passes them), with the number of contact slots this
# collider fills. Pairs with a sphere or an ellipsoid give one contact in MuJoCo too. For the
# capsule/cylinder/box pairs MuJoCo 4.0 adds multiccd points when faces or edges are aligned
# (a resting cylinder gets 4, a capsule lying on a cylinder cap 2): collision/multiccd.py.
CONVEX_PAIRS: dict[tuple[GeomType, GeomType], int] = {
  (GeomType.SPHERE, GeomType.ELLIPSOID): 1,
  (GeomType.CAPSULE, GeomType.ELLIPSOID): 1,
  (GeomType.CAPSULE, GeomType.CYLINDER): 1,
  (GeomType.ELLIPSOID, GeomType.ELLIPSOID): 1,
  (GeomType.ELLIPSOID, GeomType.CYLINDER): 1,
  (GeomType.ELLIPSOID, GeomType.BOX): 1,
  (GeomType.CYLINDER, GeomType.CYLINDER): 1,
  (GeomType.CYLINDER, GeomType.BOX): 1,
}

# The most contacts MuJoCo 4.0 itself returns for these pairs (multicontact), for reference.
MUJOCO_MAX_CONTACTS: dict[tuple[GeomType, GeomType], int] = {
  **{k: 1 for k in CONVEX_PAIRS},
  (GeomType.CAPSULE, GeomType.CYLINDER): 2,
  (GeomType.CYLINDER, GeomType.CYLINDER): 4,
  (GeomType.CYLINDER, GeomType.BOX): 4,
  # mesh pairs (measured, tests/collision/test_multicontact_survey.py)
  (GeomType.SPHERE, GeomType.MESH): 1,
  (GeomType.CAPSULE, GeomType.MESH): 2,
  (GeomType.ELLIPSOID, GeomType.MESH): 1,
  (GeomType.CYLINDER, GeomType.MESH): 4,
  (GeomType.BOX, GeomType.MESH): 4,
  (GeomType.MESH, GeomType.MESH): 4,
}


# --------------------------------------------------------------------------------------------
# small vector helpers, written out so the rounding follows MuJoCo's C (left-to-right sums)


def _dot(a, b):
  p = a * b
  return p[..., 0] + p[..., 1] + p[..., 2]


_I120 = (1, 2, 0)
_I201 = (2, 0, 1)


def _cross(a, b):
  return a[..., _I120] * b[..., _I201] - a[..., _I201] * b[..., _I120]


def _det3(a, b, c):
  return _dot(a, _cross(b, c))


def _mat_t_vec(m, v):
  return m[0] * v[0] + m[1] * v[1] + m[2] * v[2]


def _mat_vec(m, v):
  return m[:, 0] * v[0] + m[:, 1] * v[1] + m[:, 2] * v[2]


def _safe(x, bad):
  """x with the entries where `bad` holds replaced by 1 (for guarded divisions)."""
  return jnp.where(bad, jnp.ones_like(x), x)


def _normalize3(v):
  """mju_normalize3: v/|v|, or (1, 0, 0) when |v| < mjMINVAL. Gradient-safe."""
  sq = _dot(v, v)
  tiny = sq < _MINVAL2
  n = jnp.sqrt(_safe(sq, tiny))
  ex = jnp.zeros_like(v).at[..., 0].set(1.0)
  return jnp.where(tiny[..., None], ex, v / n[..., None])


def _same_sign(a, b):
  return ((a > 0) & (b > 0)) | ((a < 0) & (b < 0))


def _noise(g1: GeomFrame, g2: GeomFrame, verts1, verts2, margin):
  """Rounding noise of the search's coordinates for dtypes narrower than float64, else None.

  MuJoCo's exact tests (mjMINVAL = 1e-15: the origin on a simplex or face, a support on the
  plane of a triangle, GJK's iterate converged) sit far below float32's resolution: there an
  origin that lies on a face of the Minkowski difference (symmetric, axis-aligned, centred
  placements: exact support ties) reads as ~1e-8 off it, GJK adds a repeated support and
  ends on a flat tetrahedron, and EPA's start polytope fails, so a clearly penetrating pair
  got no contact. For float32 those thresholds become _NOISE_K x eps x the pair's
  coordinate scale (|pos| of both geoms plus their extents: what a vertex's rounding error
  is relative to); at float64 MuJoCo's values stand, bit for bit.
  """
  dtype = g1.pos.dtype
  if jnp.finfo(dtype).eps < 1e-12:
    return None

  def extent(g, verts):
    e = jnp.sum(jnp.abs(g.size))
    if verts is not None:
      e = jnp.maximum(e, jnp.max(jnp.sum(jnp.abs(verts), axis=-1)))
    return e

  scale = (jnp.sum(jnp.abs(g1.pos)) + jnp.sum(jnp.abs(g2.pos)) + extent(g1, verts1)
           + extent(g2, verts2) + margin)
  return _NOISE_K * jnp.finfo(dtype).eps * scale


def _at_least(threshold, noise):
  """max(threshold, noise), or threshold itself when noise is None (float64)."""
  return threshold if noise is None else jnp.maximum(threshold, noise)


def make_frame(normal: jax.Array) -> jax.Array:
  """Contact frame rows [normal, tangent1, tangent2] like mju_makeFrame with no tangent given."""
  x = _normalize3(normal)
  use_y = (x[..., 1] < 0.5) & (x[..., 1] > -0.5)
  zero = jnp.zeros_like(x[..., 0])
  one = jnp.ones_like(zero)
  y = jnp.stack([zero, jnp.where(use_y, one, zero), jnp.where(use_y, zero, one)], axis=-1)
  y = y - x * _dot(x, y)[..., None]
  y = _normalize3(y)
  z = _cross(x, y)
  return jnp.stack([x, y, z], axis=-2)


# --------------------------------------------------------------------------------------------
# support functions; geom kinds are traced int codes so one compiled function serves all pairs

_POINT = 100  # sphere core
_LINE = 101  # capsule core
_SPHERE, _CAPSULE, _ELLIPSOID = int(GeomType.SPHERE), int(GeomType.CAPSULE), int(GeomType.ELLIPSOID)
_CYLINDER, _BOX, _MESH = int(GeomType.CYLINDER), int(GeomType.BOX), int(GeomType.MESH)
# heightfield prism (collision/hfield.py): 6 vertices passed like a mesh's, but as points of
# the frame the search runs in (the geom frame's pos is only the centre GJK starts from). MuJoCo
# 4.0's ccd counts it as polyhedral (exact EPA termination against boxes and meshes) but its
# prism support never records a vertex index, so EPA's repeated-vertex stop looks at the other
# geom's index alone (measured: it stops early, e.g. 0.057 deep where the depth is 0.102)
PRISM = 102


def _support(code, g: GeomFrame, verts, d):
  """Support point of one geom in unit direction d (global); returns (point, vertex index).

  code: GeomType value (sphere .. mesh) or _POINT / _LINE for the sphere / capsule cores.
  verts: (V, 3) vertex array in the geom frame for meshes, else None.
  """
  ld = _mat_t_vec(g.mat, d)
  zero = jnp.zeros_like(ld[0])
  h = jnp.where(ld[2] >= 0, g.size[1], -g.size[1])
  t_line = jnp.stack([zero, zero, h])
  t_cap = ld * g.size[0] + t_line
  te = ld * g.size
  n2 = _dot(te, te)
  small = n2 < _MINVAL2
  inv = 1.0 / jnp.sqrt(_safe(n2, small))
  t_ell = jnp.where(small, jnp.stack([g.size[0], zero, zero]), te * (inv * g.size))
  n2c = ld[0] * ld[0] + ld[1] * ld[1]
  ok = n2c >= _MINVAL2
  scl = jnp.where(ok, g.size[0] / jnp.sqrt(_safe(n2c, ~ok)), 0.0)
  t_cyl = jnp.stack([scl * ld[0], scl * ld[1], h])
  t_box = jnp.where(ld >= 0, g.size, -g.size)
  i_box = (jnp.where(t_box[0] > 0, 1, 0) + jnp.where(t_box[1] > 0, 2, 0)
           + jnp.where(t_box[2] > 0, 4, 0)).astype(jnp.int32)
  t = jnp.where(code == _LINE, t_line, jnp.where(code == _CAPSULE, t_cap, jnp.where(
    code == _ELLIPSOID, t_ell, jnp.where(code == _CYLINDER, t_cyl, t_box))))
  idx = jnp.where(code == _BOX, i_box, -1).astype(jnp.int32)
  if verts is not None:
    dots = verts[:, 0] * ld[0] + verts[:, 1] * ld[1] + verts[:, 2] * ld[2]
    i_mesh = jnp.argmax(dots).astype(jnp.int32)
    t = jnp.where((code == _MESH) | (code == PRISM), verts[i_mesh], t)
    idx = jnp.where(code == _MESH, i_mesh, idx)
  p = _mat_vec(g.mat, t) + g.pos
  p = jnp.where(code == _SPHERE, g.size[0] * d + g.pos, jnp.where(code == _POINT, g.pos, p))
  p = jnp.where(code == PRISM, t, p)  # prism vertices are given in the common frame
  return p, idx


class _Vtx(NamedTuple):
  """Vertex of the Minkowski difference: support points on both geoms and the direction."""

  vert: jax.Array  # vert1 - vert2
  vert1: jax.Array
  vert2: jax.Array
  dir: jax.Array  # direction the support was taken in (geom 1 at +dir, geom 2 at -dir)
  index1: jax.Array  # vertex index of discrete geoms (box corner bits, mesh vertex), else -1
  index2: jax.Array


def _pair_support(code1, g1, verts1, half1, code2, g2, verts2, half2):
  """S_{A-B}(d) with geom i inflated by half_i along the support direction."""

  def sup(d):
    dn = -d
    p1, i1 = _support(code1, g1, verts1, d)
    p2, i2 = _support(code2, g2, verts2, dn)
    p1 = p1 + d * half1
    p2 = p2 + dn * half2
    return _Vtx(p1 - p2, p1, p2, d, i1, i2)

  return sup


def _tree_set(tree, i, leaf):
  return jax.tree.map(lambda a, b: a.at[i].set(b), tree, leaf)


def _tree_get(tree, i):
  return jax.tree.map(lambda a: a[i], tree)


def _tree_where(c, a, b):
  def sel(x, y):
    return jnp.where(jnp.reshape(c, c.shape + (1,) * (x.ndim - c.ndim)), x, y)

  return jax.tree.map(sel, a, b)


def _vtx_zeros(n, dtype):
  z = jnp.zeros((n, 3), dtype)
  i = jnp.full((n,), -1, jnp.int32)
  return _Vtx(z, z, z, z, i, i)


# --------------------------------------------------------------------------------------------
# GJK distance subalgorithm (Montanari et al. 2017 signed volumes, as in engine_collision_gjk.c)


def _project_origin_line(v1, v2):
  diff = v2 - v1
  dd = _dot(diff, diff)
  scl = -(_dot(v2, diff) / _safe(dd, dd == 0))
  return v2 + scl[..., None] * diff


def _project_origin_plane(v1, v2, v3):
  """Projection of the origin on the plane (v1, v2, v3); (point, failed). Batched on (..., 3)."""
  d21 = v2 - v1
  d31 = v3 - v1
  d32 = v3 - v2
  n1 = _cross(d32, d21)
  nv1 = _dot(n1, v2)
  nn1 = _dot(n1, n1)
  n2 = _cross(d21, d31)
  nv2 = _dot(n2, v1)
  nn2 = _dot(n2, n2)
  n3 = _cross(d31, d32)
  nv3 = _dot(n3, v3)
  nn3 = _dot(n3, n3)
  ok1 = (nv1 != 0) & (nn1 > _MINVAL)
  ok2 = (nv2 != 0) & (nn2 > _MINVAL)
  fail = (nn1 == 0) | (~ok1 & (nn2 == 0)) | (~ok1 & ~ok2 & (nn3 == 0))
  r1 = n1 * (nv1 / _safe(nn1, nn1 == 0))[..., None]
  r2 = n2 * (nv2 / _safe(nn2, nn2 == 0))[..., None]
  r3 = n3 * (nv3 / _safe(nn3, nn3 == 0))[..., None]
  res = jnp.where(ok1[..., None], r1, jnp.where(ok2[..., None], r2, r3))
  return jnp.where(fail[..., None], jnp.zeros_like(res), res), fail


def _s1d(s1, s2):
  """Barycentric coordinates (..., 2) of the point of segment (s1, s2) closest to the origin."""
  p = _project_origin_line(s1, s2)
  mu = s1 - s2
  c1 = jnp.abs(mu[..., 1]) >= jnp.abs(mu[..., 0])
  mu_max = jnp.where(c1, mu[..., 1], mu[..., 0])
  c2 = jnp.abs(mu[..., 2]) >= jnp.abs(mu_max)
  mu_max = jnp.where(c2, mu[..., 2], mu_max)

  def pick(v):
    return jnp.where(c2, v[..., 2], jnp.where(c1, v[..., 1], v[..., 0]))

  pi, s1i, s2i = pick(p), pick(s1), pick(s2)
  c1_ = pi - s2i
  c2_ = s1i - pi
  same = _same_sign(mu_max, c1_) & _same_sign(mu_max, c2_)
  den = _safe(mu_max, ~same)
  return jnp.stack([jnp.where(same, c1_ / den, 0.0), jnp.where(same, c2_ / den, 1.0)], axis=-1)


_MI = (1, 0, 0)
_MJ = (2, 2, 1)


def _minors(s1, s2, s3):
  """MuJoCo's minors M_14, M_24, M_34 of [s1 s2 s3; 1 1 1]: (the largest in magnitude, picker
  dropping that axis). Batched on (..., 3)."""
  ai, aj = s1[..., _MI], s1[..., _MJ]
  bi, bj = s2[..., _MI], s2[..., _MJ]
  ci, cj = s3[..., _MI], s3[..., _MJ]
  m = bi * cj - bj * ci - ai * cj + aj * ci + ai * bj - aj * bi  # (..., 3): M_14, M_24, M_34
  mu = jnp.abs(m)
  c1 = (mu[..., 0] >= mu[..., 1]) & (mu[..., 0] >= mu[..., 2])
  c2 = ~c1 & (mu[..., 1] >= mu[..., 2])
  m_max = jnp.where(c1, m[..., 0], jnp.where(c2, m[..., 1], m[..., 2]))

  def pick(v):  # drop the axis of largest projection
    return jnp.where(c1, v[..., 1], v[..., 0]), jnp.where(c1 | c2, v[..., 2], v[..., 1])

  return m_max, pick


def _area_cofactors(pick, p, s1, s2, s3):
  px, py = pick(p)
  ax, ay = pick(s1)
  bx, by = pick(s2)
  cx, cy = pick(s3)
  c31 = px * by + py * cx + bx * cy - px * cy - py * bx - cx * by
  c32 = px * cy + py * ax + cx * ay - px * ay - py * cx - ax * cy
  c33 = px * ay + py * bx + ax * by - px * by - py * ax - bx * ay
  return c31, c32, c33


def _first_min_weights(comp, d, cands):
  """MuJoCo's candidate choice: the first failing sub-simplex, replaced by a later one only if
  strictly closer. comp (k, ...), d (k, ...), cands (k, ..., m); returns (..., m)."""
  lam = jnp.zeros_like(cands[0])
  dmin = jnp.full_like(d[0], jnp.inf)
  for i in range(comp.shape[0]):
    take = ~comp[i] if i == 0 else ~comp[i] & (d[i] < dmin)
    lam = jnp.where(take[..., None], cands[i], lam)
    dmin = jnp.where(take, d[i], dmin)
  return lam


def _s2d(s1, s2, s3):
  """Barycentric coordinates (..., 3) of the point of triangle (s1, s2, s3) closest to 0, and
  those of its edges (s2, s3), (s1, s3), (s1, s2) (3, ..., 2)."""
  p, fail = _project_origin_plane(s1, s2, s3)
  m_max, pick = _minors(s1, s2, s3)
  c31, c32, c33 = _area_cofactors(pick, p, s1, s2, s3)
  comp = jnp.stack([_same_sign(m_max, c) for c in (c31, c32, c33)])
  inside = comp[0] & comp[1] & comp[2]
  den = _safe(m_max, ~inside)
  lam_in = jnp.stack([c31 / den, c32 / den, c33 / den], axis=-1)

  # the three edges (s2, s3), (s1, s3), (s1, s2) in one batched call
  ea = jnp.stack([s2, s1, s1])
  eb = jnp.stack([s3, s3, s2])
  l = _s1d(ea, eb)
  x = l[..., 0:1] * ea + l[..., 1:2] * eb
  d = _dot(x, x)
  zero = jnp.zeros_like(l[..., 0])
  cands = jnp.stack([
    jnp.stack([zero[0], l[0, ..., 0], l[0, ..., 1]], axis=-1),
    jnp.stack([l[1, ..., 0], zero[1], l[1, ..., 1]], axis=-1),
    jnp.stack([l[2, ..., 0], l[2, ..., 1], zero[2]], axis=-1),
  ])
  lam = _first_min_weights(comp, d, cands)
  lam = jnp.where(inside[..., None], lam_in, lam)
  return jnp.where(fail[..., None], cands[2], lam), l


def _s3d(s1, s2, s3, s4):
  """Barycentric coordinates (4,) of the point of tetrahedron (s1, .., s4) closest to 0, and
  the sub-results of its faces: triangle (s1, s2, s3) (3,) and segment (s1, s2) (2,)."""
  c41 = -_det3(s2, s3, s4)
  c42 = _det3(s1, s3, s4)
  c43 = -_det3(s1, s2, s4)
  c44 = _det3(s1, s2, s3)
  m_det = c41 + c42 + c43 + c44
  comp = jnp.stack([_same_sign(m_det, c) for c in (c41, c42, c43, c44)])
  inside = jnp.all(comp)
  den = _safe(m_det, ~inside)
  lam_in = jnp.stack([c41 / den, c42 / den, c43 / den, c44 / den])

  # the four faces in one batched call
  fa = jnp.stack([s2, s1, s1, s1])
  fb = jnp.stack([s3, s3, s2, s2])
  fc = jnp.stack([s4, s4, s4, s3])
  l, edges = _s2d(fa, fb, fc)
  x = l[:, 0:1] * fa + l[:, 1:2] * fb + l[:, 2:3] * fc
  d = _dot(x, x)
  zero = jnp.zeros_like(l[:, 0])
  cands = jnp.stack([
    jnp.stack([zero[0], l[0, 0], l[0, 1], l[0, 2]]),
    jnp.stack([l[1, 0], zero[1], l[1, 1], l[1, 2]]),
    jnp.stack([l[2, 0], l[2, 1], zero[2], l[2, 2]]),
    jnp.stack([l[3, 0], l[3, 1], l[3, 2], zero[3]]),
  ])
  lam = _first_min_weights(comp, d, cands)
  return jnp.where(inside, lam_in, lam), l[3], edges[2, 3]


def _subdistance(n, v):
  """Barycentric coordinates (4,) of the point of the n-simplex v[:n] closest to the origin.

  The triangle and segment cases are the tetrahedron's face (v0, v1, v2) and its edge (v0, v1),
  computed once inside _s3d: the same formulas (XLA may round the last bit differently in the
  batched form, measured <= 4.4e-16), and a GJK loop body a quarter smaller to compile."""
  l1 = jnp.zeros(4, v.dtype).at[0].set(1.0)
  l4, tri, seg = _s3d(v[0], v[1], v[2], v[3])
  l2 = jnp.concatenate([seg, jnp.zeros(2, v.dtype)])
  l3 = jnp.concatenate([tri, jnp.zeros(1, v.dtype)])
  return jnp.where(n == 4, l4, jnp.where(n == 3, l3, jnp.where(n == 2, l2, l1)))


def _lincomb(lam, n, v):
  """sum_{i<n} lam_i v_i, accumulated left to right like MuJoCo's lincomb."""
  res = jnp.zeros(v.shape[1:], v.dtype)
  for i in range(4):
    res = res + jnp.where(i < n, lam[i], 0.0) * v[i]
  return res


# --------------------------------------------------------------------------------------------
# GJK


class _Pass(NamedTuple):
  """Parameters of one GJK pass (the core distance pass or the full penetration pass)."""

  code1: jax.Array
  code2: jax.Array
  half1: jax.Array  # inflation of geom 1 along the support direction
  half2: jax.Array
  discrete: jax.Array  # both geoms polyhedral and no margin: exact termination
  get_dist: jax.Array  # distance mode (with cutoff) instead of intersection mode
  cutoff: jax.Array


class _Gjk(NamedTuple):
  simplex: _Vtx  # (4,)
  n: jax.Array
  x_k: jax.Array
  lam: jax.Array
  x_norm: jax.Array
  done: jax.Array
  nocontact: jax.Array


def _gjk(pp: _Pass, g1, g2, verts1, verts2, iterations, tolerance, noise=None):
  """MuJoCo 4.0's gjk(): returns (dist, x1, x2, nsimplex, simplex, lam, no_contact).

  noise: see _noise (None at float64)."""
  sup = _pair_support(pp.code1, g1, verts1, pp.half1, pp.code2, g2, verts2, pp.half2)
  dtype = g1.pos.dtype
  tol2 = tolerance * tolerance
  eps = jnp.where(pp.discrete, 0.0, 0.5 * tol2)
  zero_x = _at_least(_MINVAL, noise)  # an iterate shorter than this reads as zero
  cutoff2 = pp.cutoff * pp.cutoff
  idx4 = jnp.arange(4)

  def body(_, s: _Gjk):
    def step(s: _Gjk):
      xx = _dot(s.x_k, s.x_k)
      small = xx < zero_x * zero_x
      x_norm = jnp.sqrt(_safe(xx, small))
      dn = s.x_k * (1.0 / x_norm)
      v = sup(-dn)
      simplex_h = _tree_set(s.simplex, s.n, v)
      fw = _dot(s.x_k, s.x_k - v.vert) < eps
      vs = _dot(s.x_k, v.vert)
      sep = (vs > 0) & (~pp.get_dist | (vs * vs / _safe(xx, small) >= cutoff2))

      # distance subalgorithm on the n+1 simplex, then drop the vertices with zero weight
      lam = _subdistance(s.n + 1, simplex_h.vert)
      keep = lam != 0
      n_new = jnp.sum(keep).astype(jnp.int32)
      pos = jnp.cumsum(keep) - 1
      src = jnp.argmax(keep[None, :] & (pos[None, :] == idx4[:, None]), axis=1)
      kept = idx4 < n_new
      simplex_c = _tree_where(kept, _tree_get(simplex_h, src), simplex_h)
      lam_c = jnp.where(kept, lam[src], lam)
      x_next = _lincomb(lam_c, n_new, simplex_c.vert)
      conv = jnp.all(jnp.abs(x_next - s.x_k) < _MINVAL)

      head_stop = small | fw | sep
      fail = ~head_stop & (n_new < 1)
      tail = ~head_stop & ~fail
      tet = tail & ~conv & (n_new == 4)

      simplex = _tree_where(tail, simplex_c, _tree_where(fw & ~small, simplex_h, s.simplex))
      return _Gjk(
        simplex=simplex,
        n=jnp.where(tail, n_new, s.n),
        x_k=jnp.where(tail & ~conv, x_next, s.x_k),
        lam=jnp.where(tail, lam_c, s.lam),
        x_norm=jnp.where(small, xx, jnp.where(tet, 0.0, x_norm)),
        done=head_stop | fail | conv | tet,
        nocontact=(~small & ~fw & sep) | fail,
      )

    return lax.cond(s.done, lambda s: s, step, s)

  # initial guess: the centres' difference, or +x when the centres coincide (as MuJoCo 4.0)
  x0 = g1.pos - g2.pos
  x0 = jnp.where(_dot(x0, x0) < _MINVAL2, jnp.array([1.0, 0.0, 0.0], dtype), x0)
  init = _Gjk(
    simplex=_vtx_zeros(4, dtype),
    n=jnp.array(0, jnp.int32),
    x_k=x0,
    lam=jnp.zeros(4, dtype).at[0].set(1.0),
    x_norm=jnp.zeros((), dtype),
    done=jnp.array(False),
    nocontact=jnp.array(False),
  )
  s = lax.fori_loop(0, iterations, body, init)
  x1 = jnp.where(s.n > 0, _lincomb(s.lam, s.n, s.simplex.vert1), g1.pos)
  x2 = jnp.where(s.n > 0, _lincomb(s.lam, s.n, s.simplex.vert2), g2.pos)
  return s.x_norm, x1, x2, jnp.where(s.nocontact, 0, s.n), s.simplex, s.lam, s.nocontact


# --------------------------------------------------------------------------------------------
# EPA


def _tri_affine(v1, v2, v3, p):
  """Affine coordinates (..., 3) of p (on the plane of the triangle) w.r.t. v1, v2, v3."""
  m_max, pick = _minors(v1, v2, v3)
  c31, c32, c33 = _area_cofactors(pick, p, v1, v2, v3)
  bad = m_max == 0
  den = _safe(m_max, bad)
  third = jnp.full_like(m_max, 1.0 / 3.0)
  return jnp.stack([jnp.where(bad, third, c / den) for c in (c31, c32, c33)], axis=-1)


def _tri_point_intersect(v1, v2, v3, p, noise=None):
  lam = _tri_affine(v1, v2, v3, p)
  pr = v1 * lam[..., 0:1] + v2 * lam[..., 1:2] + v3 * lam[..., 2:3]
  d = pr - p
  return jnp.all(lam >= 0, axis=-1) & (jnp.sqrt(_dot(d, d)) < _at_least(_MINVAL, noise))


def _same_side(p0, p1, p2, p3):
  n = _cross(p1 - p0, p2 - p0)
  d1 = _dot(n, p3 - p0)
  d2 = _dot(n, -p0)
  return ((d1 > 0) & (d2 > 0)) | ((d1 < 0) & (d2 < 0))


def _test_tetra(p0, p1, p2, p3):
  return jnp.all(_same_side(jnp.stack([p0, p1, p2, p3]), jnp.stack([p1, p2, p3, p0]),
                            jnp.stack([p2, p3, p0, p1]), jnp.stack([p3, p0, p1, p2])))


def _ray_triangle(v1, v2, v3, v4, v5):
  d12, d13, d14, d15 = v2 - v1, v3 - v1, v4 - v1, v5 - v1
  vol1 = _det3(d13, d14, d12)
  vol2 = _det3(d14, d15, d12)
  vol3 = _det3(d15, d13, d12)
  pos = (vol1 >= 0) & (vol2 >= 0) & (vol3 >= 0)
  neg = (vol1 <= 0) & (vol2 <= 0) & (vol3 <= 0)
  return pos | neg


def _rotmat120(axis):
  n = jnp.sqrt(_dot(axis, axis))
  n = _safe(n, n == 0)
  u1, u2, u3 = axis[0] / n, axis[1] / n, axis[2] / n
  s, c = 0.86602540378, -0.5
  return jnp.stack(
    [
      jnp.stack([c + u1 * u1 * (1 - c), u1 * u2 * (1 - c) - u3 * s, u1 * u3 * (1 - c) + u2 * s]),
      jnp.stack([u2 * u1 * (1 - c) + u3 * s, c + u2 * u2 * (1 - c), u2 * u3 * (1 - c) - u1 * s]),
      jnp.stack([u1 * u3 * (1 - c) - u2 * s, u2 * u3 * (1 - c) + u1 * s, c + u3 * u3 * (1 - c)]),
    ]
  )


def _epa_dir(d, dnorm):
  """epaSupport's direction: d / |d|, or +x when |d| is below mjMINVAL. Batched."""
  ok = dnorm > _MINVAL
  ex = jnp.zeros_like(d).at[..., 0].set(1.0)
  return jnp.where(ok[..., None], d / _safe(dnorm, ~ok)[..., None], ex)


def _orient(v, v1, center):
  """MuJoCo 4.0's attachFace turns the face's v away from the polytope's centre."""
  return jnp.where((_dot(v, v1 - center) < 0)[..., None], -v, v)


def _attach(verts, faces, center):
  """attachFace for a list of faces (v1, v2, v3): oriented projections v and |v|^2."""
  f = jnp.asarray(faces)
  a, b, c = verts[f[:, 2]], verts[f[:, 1]], verts[f[:, 0]]
  v, fail = _project_origin_plane(a, b, c)
  v = _orient(v, c, center)
  d2 = jnp.where(fail, 0.0, _dot(v, v))
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


def _ray_volumes(v1, v2, v3, v4, v5):
  """rayTriangle's signed volumes: where the segment v1-v2 passes the triangle (v3, v4, v5)."""
  d12, d13, d14, d15 = v2 - v1, v3 - v1, v4 - v1, v5 - v1
  return jnp.stack([_det3(d13, d14, d12), _det3(d14, d15, d12), _det3(d15, d13, d12)])


def _polytope3(sup, tri: _Vtx, tolerance, noise=None):
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
  n = _cross(t2 - t1, t3 - t1)
  n_norm = jnp.sqrt(_dot(n, n))
  nn = jnp.stack([-n, n])
  w54 = jax.vmap(sup)(_epa_dir(nn, jnp.stack([n_norm, n_norm])))  # v5 at -n, then v4 at +n
  v5, v4 = w54.vert[0], w54.vert[1]
  inv = _tri_point_intersect(t1, t2, t3, w54.vert, noise)
  zero_d = _at_least(_MINVAL, noise)
  eps = zero_d * n_norm
  flat = (_dot(n, v4 - t1) < eps) | (_dot(-n, v5 - t1) < eps)
  ok = (n_norm >= _MINVAL) & ~jnp.any(inv) & ~flat

  # a0..a4 = t1, t2, t3, v4, v5
  five = jax.tree.map(lambda s, x: jnp.concatenate([s, x[::-1]]), tri, w54)
  x, y, z = _ray_volumes(v4, v5, t1, t2, t3)
  crosses = ((x >= 0) & (y >= 0) & (z >= 0)) | ((x <= 0) & (y <= 0) & (z <= 0))
  c = -_MINVAL
  case = jnp.select(
    [crosses, (x > 0) & (y < c) & (z < c), (y > 0) & (x < c) & (z < c),
     (z > 0) & (x < c) & (y < c), (x <= y) & (x <= z), (y <= x) & (y <= z)],
    [0, 1, 2, 3, 4, 5], 6)
  hexa = case < 4
  order = jnp.asarray(_P3_ORDERS)[case]
  b = _tree_get(five, order)
  # hexahedron: centroid of all five; tetrahedron (b0, b1, b3, b4): of those four
  bv = b.vert
  center = jnp.where(hexa, ((((bv[0] + bv[1]) + bv[2]) + bv[3]) + bv[4]) * 0.2,
                     (((bv[0] + bv[1]) + bv[3]) + bv[4]) * 0.25)
  tet_order = jnp.asarray([0, 1, 3, 4, 0])
  verts = _tree_where(hexa, b, _tree_get(b, tet_order))
  faces = jnp.where(hexa, jnp.asarray(_P3_HEXA), jnp.asarray(_P4_FACES))
  adj = jnp.where(hexa, jnp.asarray(_P2_ADJ), jnp.asarray(_P4_ADJ))
  nfaces = jnp.where(hexa, 6, 4).astype(jnp.int32)
  _, d2 = _attach(verts.vert, faces, center)
  live = jnp.arange(6) < nfaces
  on_face = jnp.any(live & (d2 < _MINVAL2))
  sides = jnp.where(hexa, jnp.asarray(_P3_SIDES),
                    jnp.asarray(_P4_SIDES + ((0, 1, 2, 3), (0, 1, 2, 3))))
  vv = verts.vert[sides]  # (6, 4, 3)
  tol = _at_least(tolerance, noise)
  inner = _same_side(vv[:, 0], vv[:, 1], vv[:, 2], vv[:, 3]) | (d2 < tol * tol)
  ok = ok & ~on_face & jnp.all(inner | ~live)
  nverts = jnp.where(hexa, 5, 4).astype(jnp.int32)
  return verts, nverts, faces.astype(jnp.int32), adj.astype(jnp.int32), nfaces, center, ok


def _polytope(sup, simplex: _Vtx, nsimplex, tolerance, noise=None):
  """MuJoCo 4.0's polytope2/3/4: the initial EPA polytope grown from the GJK simplex.

  Returns (verts (5,), nverts, faces (6, 3), adj (6, 3), nfaces, center (3,), ok).
  """
  dtype = simplex.vert.dtype
  # polytope2: hexahedron around the segment (nsimplex == 2)
  v1, v2 = simplex.vert[0], simplex.vert[1]
  diff = v2 - v1
  index = jnp.argmin(jnp.abs(diff))
  e = jnp.zeros(3, dtype).at[index].set(1.0)
  d1 = _cross(e, diff)
  rot = _rotmat120(diff)
  d2 = _mat_vec(rot, d1)
  d3 = _mat_vec(rot, d2)
  dd = jnp.stack([d1, d2, d3])
  w = jax.vmap(sup)(_epa_dir(dd, jnp.sqrt(_dot(dd, dd))))
  p2 = jax.tree.map(lambda s, x: jnp.concatenate([s[:2], x]), simplex, w)
  c2 = jnp.mean(p2.vert, axis=0)
  _, d2_p2 = _attach(p2.vert, _P2_FACES, c2)
  zero_d = _at_least(_MINVAL, noise)
  bad2 = d2_p2 < zero_d * zero_d
  fb2, k2 = jnp.any(bad2), jnp.argmax(bad2)
  nonconvex2 = ~_ray_triangle(*[p2.vert[i] for i in range(5)])

  # polytope4: the tetrahedron itself (nsimplex == 4)
  c4 = jnp.mean(simplex.vert, axis=0)
  _, d2_p4 = _attach(simplex.vert, _P4_FACES[:4], c4)
  bad4 = d2_p4 < zero_d * zero_d
  fb4, k4 = jnp.any(bad4), jnp.argmax(bad4)
  notetra4 = ~_test_tetra(*[simplex.vert[i] for i in range(4)])

  # polytope3 on a triangle: GJK's (nsimplex == 3) or the failed face of polytope2/4
  case2, case3, case4 = nsimplex == 2, nsimplex == 3, nsimplex == 4
  tri2 = _tree_get(p2, jnp.asarray(_P2_FACES)[k2])
  tri4 = _tree_get(simplex, jnp.asarray(_P4_FACES)[k4])
  tri = _tree_where(case3, _tree_get(simplex, jnp.arange(3)), _tree_where(case2, tri2, tri4))
  p3, n3, f3, a3, nf3, c3, ok3 = _polytope3(sup, tri, tolerance, noise)

  use3 = case3 | (case2 & fb2) | (case4 & fb4)
  use2 = case2 & ~fb2
  ok = jnp.where(use3, ok3, jnp.where(use2, ~nonconvex2, case4 & ~notetra4))
  p4 = jax.tree.map(lambda x: jnp.concatenate([x, x[:1]]), simplex)
  verts = _tree_where(use3, p3, _tree_where(use2, p2, p4))
  nverts = jnp.where(use3, n3, jnp.where(use2, 5, 4)).astype(jnp.int32)
  faces = jnp.where(use3, f3, jnp.where(use2, jnp.asarray(_P2_FACES), jnp.asarray(_P4_FACES)))
  adj = jnp.where(use3, a3, jnp.where(use2, jnp.asarray(_P2_ADJ), jnp.asarray(_P4_ADJ)))
  nfaces = jnp.where(use3, nf3, jnp.where(use2, 6, 4)).astype(jnp.int32)
  center = jnp.where(use3, c3, jnp.where(use2, c2, c4))
  return verts, nverts, faces.astype(jnp.int32), adj.astype(jnp.int32), nfaces, center, ok


class _Epa(NamedTuple):
  verts: _Vtx  # (NV,)
  nverts: jax.Array
  fv: jax.Array  # (NF, 3) vertex indices
  adj: jax.Array  # (NF, 3) adjacent faces across edges [v1,v2], [v2,v3], [v3,v1]
  v: jax.Array  # (NF, 3) projection of the origin on the face plane
  d2: jax.Array  # (NF,) |v|^2
  alive: jax.Array  # (NF,) face is part of the polytope
  inmap: jax.Array  # (NF,) face is a candidate (MuJoCo's face map)
  nfaces: jax.Array
  face: jax.Array  # current best face, -1 for none
  upper: jax.Array
  upper2: jax.Array
  done: jax.Array


def _epa(sup, verts0, nverts0, faces0, adj0, nfaces0, center, iterations, tolerance,
         discrete, noise=None):
  """MuJoCo 4.0's epa(): returns (found, face vertex indices (3,), verts, face v, face |v|^2).

  The horizon is found for all visible faces at once (flood fill from the closest face through
  visible neighbours) rather than by MuJoCo's depth-first walk; the polytope is the same, only
  the numbering of new faces differs, which matters only for exact ties in face distance.
  """
  nv_max = 5 + iterations
  nf_max = 6 * iterations  # MuJoCo's polytope capacity
  dtype = verts0.vert.dtype
  big = jnp.asarray(jnp.finfo(dtype).max, dtype)
  tol = jnp.where(discrete, _at_least(_MINVAL, noise), tolerance)

  def grow(x, fill):
    return jnp.concatenate([x, jnp.full((nv_max - 5,) + x.shape[1:], fill, x.dtype)])

  verts = _Vtx(*(grow(x, -1 if x.dtype == jnp.int32 else 0) for x in verts0))
  fv = jnp.zeros((nf_max, 3), jnp.int32).at[:6].set(faces0)
  adj = jnp.zeros((nf_max, 3), jnp.int32).at[:6].set(adj0)
  vp, dp = _attach(verts.vert, faces0, center)
  live0 = jnp.arange(6) < nfaces0
  v = jnp.zeros((nf_max, 3), dtype).at[:6].set(vp)
  d2 = jnp.zeros((nf_max,), dtype).at[:6].set(dp)
  alive = jnp.zeros((nf_max,), bool).at[:6].set(live0)

  s0 = _Epa(verts, nverts0, fv, adj, v, d2, alive, alive, nfaces0, jnp.array(-1, jnp.int32),
            big, big, jnp.array(False))
  e_idx = jnp.arange(_HORIZON, dtype=jnp.int32)
  v_idx = jnp.arange(nv_max, dtype=jnp.int32)

  def body(it, s: _Epa):
    def step(s: _Epa):
      pface = s.face
      masked = jnp.where(s.inmap, s.d2, jnp.inf)
      f = jnp.argmin(masked).astype(jnp.int32)
      lower2 = masked[f]
      has = jnp.any(s.inmap)
      invalid = (lower2 > s.upper2) | ~has
      zero = lower2 <= 0

      lower = jnp.sqrt(jnp.where(zero | ~has, 1.0, lower2))
      fvv = s.v[f]
      w = sup(_epa_dir(fvv, lower))
      upper_k = _dot(fvv, w.vert) / lower
      better = upper_k < s.upper
      upper = jnp.where(better, upper_k, s.upper)
      upper2 = jnp.where(better, upper * upper, s.upper2)
      conv = upper_k - lower < tol  # MuJoCo 4.0 tests this iteration's bound
      # MuJoCo 4.0: a first support short of the closest face by more than the tolerance means
      # that the origin lies outside the shapes' difference (near touching): no contact
      outside = (it == 0) & conv & (lower - tol > upper)
      wi = s.nverts
      rep = discrete & jnp.any((s.verts.index1 == w.index1) & (s.verts.index2 == w.index2)
                               & (v_idx < wi))
      verts = _tree_set(s.verts, wi, w)

      # faces visible from w and connected to f through visible faces
      vis_eps = _at_least(_MINVAL, None if noise is None else noise * jnp.sqrt(s.d2))
      vis_test = s.alive & (_dot(s.v, w.vert) - s.d2 > vis_eps)
      vis0 = jnp.zeros_like(s.alive).at[f].set(True)
      vis = lax.fori_loop(
        0, 12, lambda _, vis: vis | (vis_test & jnp.any(vis[s.adj], axis=1)), vis0)

      # horizon: edge j of a visible face whose neighbour is not visible
      cand = vis[:, None] & ~vis[s.adj]
      flat = cand.reshape(-1)
      nedges = jnp.sum(flat).astype(jnp.int32)
      slot = jnp.where(flat, jnp.cumsum(flat) - 1, _HORIZON)
      src = jnp.zeros(_HORIZON + 1, jnp.int32).at[slot].set(
        jnp.arange(flat.shape[0], dtype=jnp.int32), mode="drop")[:_HORIZON]
      valid = e_idx < nedges
      fi, ej = src // 3, src % 3
      g = s.adj[fi, ej]  # face across the horizon edge, stays in the polytope
      ea = s.fv[fi, (ej + 1) % 3]  # the edge runs ea -> eb in g
      eb = s.fv[fi, ej]
      gv = s.fv[g]
      eg = jnp.where(gv[:, 0] == ea, 0, jnp.where(gv[:, 1] == ea, 1, 2))
      nid = s.nfaces + e_idx
      prev = nid[jnp.argmax((ea[None, :] == eb[:, None]) & valid[None, :], axis=1)]
      nxt = nid[jnp.argmax((eb[None, :] == ea[:, None]) & valid[None, :], axis=1)]
      new_fv = jnp.stack([jnp.full_like(ea, wi), eb, ea], axis=1)
      new_adj = jnp.stack([prev, g, nxt], axis=1)
      wb = jnp.broadcast_to(w.vert, (_HORIZON, 3))
      nvp, nfail = _project_origin_plane(verts.vert[ea], verts.vert[eb], wb)
      nvp = _orient(nvp, wb, center)
      nd2 = jnp.where(nfail, 0.0, _dot(nvp, nvp))

      few = nedges < 3
      over = (nedges > _HORIZON) | (s.nfaces + nedges > nf_max)
      bad = jnp.any(valid & (nd2 == 0))
      expand = ~(invalid | zero | conv | rep | few | over | bad)

      tgt = jnp.where(valid, nid, nf_max)
      fv = s.fv.at[tgt].set(new_fv, mode="drop")
      adj = s.adj.at[tgt].set(new_adj, mode="drop")
      adj = adj.at[jnp.where(valid, g, nf_max), eg].set(nid, mode="drop")
      v = s.v.at[tgt].set(nvp, mode="drop")
      d2 = s.d2.at[tgt].set(nd2, mode="drop")
      new_in = valid & (nd2 >= lower2) & (nd2 <= upper2)
      alive = (s.alive & ~vis).at[tgt].set(True, mode="drop")
      inmap = (s.inmap & ~vis).at[tgt].set(new_in, mode="drop")
      empty = ~jnp.any(inmap)

      face = jnp.where(invalid, pface, jnp.where(
        few | outside | (bad & ~(zero | conv | rep | over)), -1, f)).astype(jnp.int32)
      expanded = _Epa(verts, s.nverts + 1, fv, adj, v, d2, alive, inmap, s.nfaces + nedges,
                      face, upper, upper2, empty)
      stopped = s._replace(face=face, done=jnp.array(True))
      return _tree_where(expand, expanded, stopped)

    return lax.cond(s.done, lambda s: s, step, s)

  s = lax.fori_loop(0, iterations, body, s0)
  face = jnp.maximum(s.face, 0)
  return s.face >= 0, s.fv[face], s.verts, s.v[face], s.d2[face]


# --------------------------------------------------------------------------------------------
# mjc_ccd and the contact


class _Plan(NamedTuple):
  """Combinatorial outcome of one mjc_ccd call, enough to recompute it differentiably."""

  shallow: jax.Array  # cores apart: result from the GJK distance pass
  deep: jax.Array  # result from EPA
  dist: jax.Array  # forward values of mjc_ccd
  x1: jax.Array
  x2: jax.Array
  core_dirs: jax.Array  # (4, 3) support directions of the final GJK simplex
  core_n: jax.Array
  core_lam: jax.Array
  face_dirs: jax.Array  # (3, 3) support directions of the vertices of EPA's face


def _codes(code1, code2, g1, g2, margin):
  """Traced per-pair quantities: core codes, inflations, full margins, discreteness."""
  half = 0.5 * margin  # margins are >= 0; no max() so that d/d margin is one-sided-consistent
  cap1 = (code1 == _SPHERE) | (code1 == _CAPSULE)
  cap2 = (code2 == _SPHERE) | (code2 == _CAPSULE)
  core1 = jnp.where(code1 == _SPHERE, _POINT, jnp.where(code1 == _CAPSULE, _LINE, code1))
  core2 = jnp.where(code2 == _SPHERE, _POINT, jnp.where(code2 == _CAPSULE, _LINE, code2))
  fm1 = jnp.where(cap1, g1.size[0], 0.0) + half
  fm2 = jnp.where(cap2, g2.size[0], 0.0) + half
  poly = (_BOX, _MESH, PRISM)
  disc = functools.reduce(jnp.logical_or, [code1 == c for c in poly]) & functools.reduce(
    jnp.logical_or, [code2 == c for c in poly])
  return half, cap1 | cap2, core1, core2, fm1, fm2, disc


def _ccd_plan(code1, code2, g1, g2, verts1, verts2, margin, iterations, tolerance) -> _Plan:
  """Forward mjc_ccd on stop-gradient inputs. dist < 0 means contact (dist = signed - margin)."""
  dtype = g1.pos.dtype
  big = jnp.asarray(jnp.finfo(dtype).max, dtype)
  half, has_core, core1, core2, fm1, fm2, disc = _codes(code1, code2, g1, g2, margin)
  noise = _noise(g1, g2, verts1, verts2, margin)
  zero = jnp.zeros((), dtype)
  # pass 0: distance between the cores (sphere -> point, capsule -> segment, others
  # uninflated), run when a sphere/capsule is involved or the margin is positive
  # pass 1: penetration on the full, margin-inflated shapes (intersection mode)
  passes = _Pass(
    code1=jnp.stack([core1, code1]).astype(jnp.int32),
    code2=jnp.stack([core2, code2]).astype(jnp.int32),
    half1=jnp.stack([zero, half]),
    half2=jnp.stack([zero, half]),
    discrete=jnp.stack([disc, disc & (margin == 0)]),
    get_dist=jnp.array([True, False]),
    cutoff=jnp.stack([fm1 + fm2, zero]),
  )
  dist_k, x1_k, x2_k, n_k, simplex_k, lam_k, none_k = jax.vmap(
    lambda pp: _gjk(pp, g1, g2, verts1, verts2, iterations, tolerance, noise))(passes)

  use_core = has_core | (margin > 0)
  cdist, cx1, cx2, cnone = dist_k[0], x1_k[0], x2_k[0], none_k[0]
  nvec = _normalize3(cx2 - cx1)
  sx1 = cx1 + fm1 * nvec
  sx2 = cx2 - fm2 * nvec
  sdist = jnp.where(cnone, big, cdist - (fm1 + fm2))
  shallow = use_core & (cnone | (cdist > tolerance))

  full = _pair_support(code1, g1, verts1, half, code2, g2, verts2, half)
  gsimplex = _tree_get(simplex_k, 1)
  near = dist_k[1] <= tolerance
  if noise is not None:
    # float32: GJK may end a few rounding units short of enclosing the origin (a face of its
    # last tetrahedron within noise of it), or stall on a support tie (a flat face met
    # head-on: the sign of its iterate's tiny transverse part is rounding, so it keeps
    # picking the same corner): EPA decides whenever the support opposite GJK's last
    # iterate does not prove the shapes apart
    xk = x1_k[1] - x2_k[1]
    unproven = _dot(xk, full(-_normalize3(xk)).vert) <= 0
    near = near | (dist_k[1] <= 4 * noise) | unproven
  run_epa = ~none_k[1] & near & (n_k[1] > 1)
  pverts, pnverts, pfaces, padj, pnfaces, pcenter, pok = _polytope(full, gsimplex, n_k[1],
                                                                  tolerance, noise)
  found, fidx, everts, fv, fd2 = _epa(full, pverts, pnverts, pfaces, padj, pnfaces, pcenter,
                                     iterations, tolerance, disc & (margin == 0), noise)
  deep = ~shallow & run_epa & pok & found
  tri = _tree_get(everts, fidx)
  lam = _tri_affine(tri.vert[0], tri.vert[1], tri.vert[2], fv)
  ex1 = tri.vert1[0] * lam[0] + tri.vert1[1] * lam[1] + tri.vert1[2] * lam[2]
  ex2 = tri.vert2[0] * lam[0] + tri.vert2[1] * lam[1] + tri.vert2[2] * lam[2]
  edist = -jnp.sqrt(jnp.maximum(fd2, 0.0))

  dist = jnp.where(shallow, jnp.where(sdist > 0, big, sdist), jnp.where(deep, edist, big))
  x1 = jnp.where(shallow, sx1, ex1)
  x2 = jnp.where(shallow, sx2, ex2)
  return _Plan(shallow, deep, dist, x1, x2, simplex_k.dir[0], n_k[0], lam_k[0], tri.dir)


def _surrogate(plan: _Plan, code1, code2, g1, g2, verts1, verts2, margin):
  """mjc_ccd's (dist, x1, x2) recomputed smoothly from the plan: the functions whose gradients
  `contact_from_plan` reports (its values are the plan's).

  dist is the gap of the two shapes along the plan's contact normal u (held fixed):
  -u . (S_1(u) - S_2(-u)), with the cores' supports minus the radii and margin/2 when the
  cores are apart, and the inflated shapes' supports for a penetration. At the exact normal
  this IS the signed distance, and by the envelope theorem its gradient is the distance's
  gradient (translation: -+u, sphere radius: -1, margin: 0); at the search's normal it differs
  from the reported distance by the search's error (GJK ~1e-10, EPA its last face's gap).
  x1, x2 are the witness points through the final GJK simplex / EPA face (barycentric
  weights recomputed), for the gradient of the contact position.
  """
  half, _, core1, core2, fm1, fm2, _ = _codes(code1, code2, g1, g2, margin)
  u = lax.stop_gradient(_normalize3(plan.x1 - plan.x2))

  # supports: final GJK simplex (cores, rows 0-3), EPA face (rows 4-6), and along u (row 7)
  dirs = jnp.concatenate([plan.core_dirs, plan.face_dirs, u[None]])
  row = jnp.arange(8)
  full_row = (row >= 4) & ((row < 7) | ~plan.shallow)
  c1 = jnp.where(full_row, code1, core1)
  c2 = jnp.where(full_row, code2, core2)
  hh = jnp.where(full_row, half, 0.0)
  allv = jax.vmap(lambda d, a, b, h: _pair_support(a, g1, verts1, h, b, g2, verts2, h)(d))(
    dirs, c1, c2, hh)
  cv = _tree_get(allv, jnp.arange(4))
  tv = _tree_get(allv, jnp.arange(4, 7))
  gap = -_dot(u, allv.vert[7])
  dist = jnp.where(plan.shallow, gap - (fm1 + fm2), gap)

  # shallow: the origin's projection on the final GJK simplex (all weights positive after
  # GJK's pruning), pushed out by the radii and margin/2; an empty simplex (GJK stopped at
  # its first check, e.g. two points) keeps the centres
  l2 = _s1d(cv.vert[0], cv.vert[1])
  p3, _ = _project_origin_plane(cv.vert[0], cv.vert[1], cv.vert[2])
  l3 = _tri_affine(cv.vert[0], cv.vert[1], cv.vert[2], p3)
  z = jnp.zeros_like(l2[:1])
  lam = jnp.where(plan.core_n == 3, jnp.concatenate([l3, z]),
                  jnp.where(plan.core_n == 2, jnp.concatenate([l2, z, z]),
                            jnp.concatenate([z + 1, z, z, z])))
  cx1 = jnp.where(plan.core_n > 0, _lincomb(lam, plan.core_n, cv.vert1), g1.pos)
  cx2 = jnp.where(plan.core_n > 0, _lincomb(lam, plan.core_n, cv.vert2), g2.pos)
  nvec = _normalize3(cx2 - cx1)
  sx1 = cx1 + fm1 * nvec
  sx2 = cx2 - fm2 * nvec

  # deep: witness points through the EPA face
  fv, _ = _project_origin_plane(tv.vert[2], tv.vert[1], tv.vert[0])
  lamf = _tri_affine(tv.vert[0], tv.vert[1], tv.vert[2], fv)
  ex1 = tv.vert1[0] * lamf[0] + tv.vert1[1] * lamf[1] + tv.vert1[2] * lamf[2]
  ex2 = tv.vert2[0] * lamf[0] + tv.vert2[1] * lamf[1] + tv.vert2[2] * lamf[2]

  used = plan.shallow | plan.deep
  dist = jnp.where(used, dist, jnp.zeros_like(dist))
  x1 = jnp.where(plan.shallow, sx1, ex1)
  x2 = jnp.where(plan.shallow, sx2, ex2)
  return dist, x1, x2


def _ccd_recompute(plan: _Plan, code1, code2, g1, g2, verts1, verts2, margin):
  """mjc_ccd's (dist, x1, x2): the plan's values, with the surrogate's gradient."""
  dist, x1, x2 = _surrogate(plan, code1, code2, g1, g2, verts1, verts2, margin)
  fwd_dist = jnp.where(plan.shallow | plan.deep, plan.dist, jnp.zeros_like(dist))

  def st(re, fw):  # forward value of the search, gradient of the recomputation
    return re + lax.stop_gradient(fw - re)

  return st(dist, fwd_dist), st(x1, plan.x1), st(x2, plan.x2)


def _prepare(type1, type2, g1, g2, margin, tolerance, verts1, verts2):
  dtype = jnp.result_type(g1.pos, g2.pos, float)
  g1 = GeomFrame(*(jnp.asarray(x, dtype) for x in g1))
  g2 = GeomFrame(*(jnp.asarray(x, dtype) for x in g2))
  g1 = g1._replace(mat=g1.mat.reshape(3, 3))
  g2 = g2._replace(mat=g2.mat.reshape(3, 3))
  return (jnp.asarray(type1, jnp.int32), jnp.asarray(type2, jnp.int32), g1, g2,
          jnp.asarray(margin, dtype), jnp.asarray(tolerance, dtype),
          None if verts1 is None else jnp.asarray(verts1, dtype),
          None if verts2 is None else jnp.asarray(verts2, dtype))


def convex_plan(type1, type2, g1: GeomFrame, g2: GeomFrame, margin, tolerance=1e-6, *,
                iterations: int = 35, verts1=None, verts2=None):
  """First stage of `collide_convex`: the GJK/EPA search, on stop-gradient inputs.

  Returns an opaque pytree (fixed shapes) for `contact_from_plan`. This stage holds all the
  loops and most of the compile time; it has no gradient.
  """
  args = _prepare(type1, type2, g1, g2, margin, tolerance, verts1, verts2)
  # stop the gradient before entering the jitted search: its tangents are then symbolic zeros
  # and a top-level jax.grad reuses the compiled search instead of recompiling it
  return _plan_jit(*jax.tree.map(lax.stop_gradient, args), iterations=iterations)


@functools.partial(jax.jit, static_argnames=("iterations",))
def _plan_jit(code1, code2, g1, g2, margin, tolerance, verts1, verts2, *, iterations):
  return _ccd_plan(code1, code2, g1, g2, verts1, verts2, margin, iterations, tolerance)


def contact_from_plan(plan, type1, type2, g1: GeomFrame, g2: GeomFrame, margin, *, verts1=None,
                      verts2=None):
  """Second stage of `collide_convex`: (dist, pos, frame) of the contact, differentiable in
  the geoms and the margin with the plan's combinatorics held fixed. Values are the plan's."""
  code1, code2, g1, g2, margin, _, verts1, verts2 = _prepare(
    type1, type2, g1, g2, margin, 0.0, verts1, verts2)
  dtype = g1.pos.dtype
  valid = (plan.shallow | plan.deep) & (plan.dist < 0)
  dist, x1, x2 = _ccd_recompute(plan, code1, code2, g1, g2, verts1, verts2, margin)
  normal = _normalize3(x1 - x2)
  pos = (x1 + x2) * 0.5
  frame = make_frame(normal)
  dist = jnp.where(valid, margin + dist, NO_CONTACT_DIST)
  pos = jnp.where(valid, pos, 0.0)
  frame = jnp.where(valid, frame, jnp.eye(3, dtype=dtype))
  return dist, pos, frame


def collide_convex(type1, type2, g1: GeomFrame, g2: GeomFrame, margin, tolerance=1e-6, *,
                   iterations: int = 35, verts1=None, verts2=None):
  """MuJoCo's first convex contact for one pair: (dist (), pos (3,), frame (3, 3)).

  type1, type2: GeomType values, Python ints or traced int arrays, so that one compiled
  function (vmapped by the driver) serves every convex pair type at once. dist = 1e10 and an
  identity frame when there is no contact. margin: the pair margin (geom margins summed).
  tolerance: opt.ccd_tolerance (may be traced); iterations: opt.ccd_iterations (static).
  verts1 / verts2: (V, 3) mesh vertices in the geom frame, required when the corresponding
  type is GeomType.MESH (otherwise leave None).
  """
  plan = convex_plan(type1, type2, g1, g2, margin, tolerance, iterations=iterations,
                     verts1=verts1, verts2=verts2)
  return contact_from_plan(plan, type1, type2, g1, g2, margin, verts1=verts1, verts2=verts2)


def convex_collider(
  type1: GeomType, type2: GeomType, n: int = 1, iterations: int = 35
) -> Callable[..., tuple[jax.Array, jax.Array, jax.Array]]:
  """Collision function for one pair of convex geoms of the given (static) types.

  Returns fn(g1, g2, margin, tolerance=1e-6, verts1=None, verts2=None) -> (dist (n,),
  pos (n, 3), frame (n, 3, 3)). `iterations` is opt.ccd_iterations (static: it sizes the
  loops and the EPA polytope); `tolerance` is opt.ccd_tolerance and may be traced. Only the
  first slot can hold a contact (see CONVEX_PAIRS); the others always read dist = 1e10.
  """
  for t in (type1, type2):
    if GeomType(t) not in _CONVEX_TYPES:
      raise ValueError(f"no convex support function for geom type {GeomType(t)!r}")
  if n < 1:
    raise ValueError("n must be at least 1")
  if iterations < 1:
    raise ValueError("iterations must be at least 1")
  t1, t2 = int(type1), int(type2)

  def collide(g1: GeomFrame, g2: GeomFrame, margin, tolerance=1e-6, verts1=None, verts2=None):
    if (t1 == _MESH and verts1 is None) or (t2 == _MESH and verts2 is None):
      raise ValueError("mesh geoms need their vertex array (verts1 / verts2)")
    dist, pos, frame = collide_convex(t1, t2, g1, g2, margin, tolerance, iterations=iterations,
                                      verts1=verts1, verts2=verts2)
    dtype = dist.dtype
    pad = n - 1
    dist = jnp.concatenate([dist[None], jnp.full((pad,), NO_CONTACT_DIST, dtype)])
    pos = jnp.concatenate([pos[None], jnp.zeros((pad, 3), dtype)])
    frame = jnp.concatenate([frame[None], jnp.broadcast_to(jnp.eye(3, dtype=dtype),
                                                           (pad, 3, 3))])
    return dist, pos, frame

  return collide
