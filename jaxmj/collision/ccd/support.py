"""Shared pieces of the convex collider (collision/convex.py): mjMINVAL and float32 noise
thresholds, vector helpers rounded like MuJoCo's C, geom support functions and the
Minkowski-difference vertex, the origin's projections on a segment / plane."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmj import math
from jaxmj.collision.primitive import GeomFrame
from jaxmj.constants import MINVAL
from jaxmj.types import GeomType

MINVAL2 = MINVAL * MINVAL
# float32: the search's "exactly zero / coplanar / converged" tests use this many units of
# rounding noise (eps x the pair's coordinate scale) instead of mjMINVAL, see rounding_noise
_NOISE_K = 8.0


# --------------------------------------------------------------------------------------------
# small vector helpers, written out so the rounding follows MuJoCo's C (left-to-right sums)

# `guard`, the last argument of every helper below: the `math.nofma` guard (a
# `math.opaque_zero` of traced data) that rounds each product on its own, as libmujoco (no
# FMA instruction) rounds it, or None to leave the products to the compiler. The search
# (convex._plan_jit) passes a guard: it decides exact support ties (a box corner or prism
# vertex equally far along the direction: box edges parallel to a Minkowski face,
# grid-aligned prism edges) by the last bits of its arithmetic, and XLA:CPU fuses a product
# into the sum it feeds (one rounding where MuJoCo rounds twice), so ties broke otherwise,
# depending on the compiled graph (measured on models/terrain.xml,
# tests/collision/test_mesh_hfield_step.py). An argument, not a mode set around the trace:
# whatever is traced is shaped by its arguments alone, so a cached trace cannot carry
# another caller's setting.


def mul(a, b, guard):
  """a * b, kept out of fused multiply-adds when `guard` is a guard (see above)."""
  return math.nofma(a * b, guard)


def dot(a, b, guard):
  p = mul(a, b, guard)
  return p[..., 0] + p[..., 1] + p[..., 2]


_I120 = (1, 2, 0)
_I201 = (2, 0, 1)


def cross(a, b, guard):
  return mul(a[..., _I120], b[..., _I201], guard) - mul(a[..., _I201], b[..., _I120], guard)


def det3(a, b, c, guard):
  return dot(a, cross(b, c, guard), guard)


def mat_t_vec(m, v, guard):
  return mul(m[0], v[0], guard) + mul(m[1], v[1], guard) + mul(m[2], v[2], guard)


def mat_vec(m, v, guard):
  return mul(m[:, 0], v[0], guard) + mul(m[:, 1], v[1], guard) + mul(m[:, 2], v[2], guard)


def div3(v, s):
  """v / s for (..., 3) v and (...) s, each component divided on its own.

  XLA rewrites a division by a broadcast, v / s[..., None], into v * (1 / s) (measured on
  CPU, jit and eager: 1-ulp differences in ~80% of random cases); MuJoCo divides, and its
  search decides exact support ties by those last bits (e.g. epaSupport's direction)."""
  return jnp.stack([v[..., 0] / s, v[..., 1] / s, v[..., 2] / s], axis=-1)


def ones_where(x, bad):
  """x with the entries where `bad` holds replaced by 1 (for guarded divisions)."""
  return jnp.where(bad, jnp.ones_like(x), x)


def normalize3(v, guard):
  """mju_normalize3: v/|v|, or (1, 0, 0) when |v| < mjMINVAL. Gradient-safe."""
  sq = dot(v, v, guard)
  tiny = sq < MINVAL2
  n = jnp.sqrt(ones_where(sq, tiny))
  ex = jnp.zeros_like(v).at[..., 0].set(1.0)
  return jnp.where(tiny[..., None], ex, v / n[..., None])


def same_sign(a, b):
  return ((a > 0) & (b > 0)) | ((a < 0) & (b < 0))


def rounding_noise(g1: GeomFrame, g2: GeomFrame, verts1, verts2, margin):
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


def at_least(threshold, noise):
  """max(threshold, noise), or threshold itself when noise is None (float64)."""
  return threshold if noise is None else jnp.maximum(threshold, noise)


# --------------------------------------------------------------------------------------------
# support functions; geom kinds are traced int codes so one compiled function serves all pairs

POINT = 100  # sphere core
LINE = 101  # capsule core
SPHERE, CAPSULE, ELLIPSOID = int(GeomType.SPHERE), int(GeomType.CAPSULE), int(GeomType.ELLIPSOID)
CYLINDER, BOX, MESH = int(GeomType.CYLINDER), int(GeomType.BOX), int(GeomType.MESH)
# heightfield prism (collision/hfield.py): 6 vertices passed like a mesh's, but as points of
# the frame the search runs in (the geom frame's pos is only the centre GJK starts from). MuJoCo
# 4.0's ccd counts it as polyhedral (exact EPA termination against boxes and meshes) but its
# prism support never records a vertex index, so EPA's repeated-vertex stop looks at the other
# geom's index alone (measured: it stops early, e.g. 0.057 deep where the depth is 0.102)
PRISM = 102


def support(code, g: GeomFrame, verts, d, guard):
  """Support point of one geom in unit direction d (global); returns (point, vertex index).

  code: GeomType value (sphere .. mesh) or POINT / LINE for the sphere / capsule cores, a
  traced int (every kind computed, the code's selected) or a Python int (its kind alone: a
  group of one pair type compiles one support function instead of eight, same values).
  verts: (V, 3) vertex array in the geom frame for meshes, else None.
  """
  if isinstance(code, int):
    return _support_static(code, g, verts, d, guard)
  ld = mat_t_vec(g.mat, d, guard)
  zero = jnp.zeros_like(ld[0])
  h = jnp.where(ld[2] >= 0, g.size[1], -g.size[1])
  t_line = jnp.stack([zero, zero, h])
  t_cap = mul(ld, g.size[0], guard) + t_line
  t_ell = _ellipsoid(g, ld, guard)
  t_cyl = _cylinder(g, ld, h, guard)
  t_box, i_box = _box(g, ld)
  t = jnp.where(code == LINE, t_line, jnp.where(code == CAPSULE, t_cap, jnp.where(
    code == ELLIPSOID, t_ell, jnp.where(code == CYLINDER, t_cyl, t_box))))
  idx = jnp.where(code == BOX, i_box, -1).astype(jnp.int32)
  if verts is not None:
    t_mesh, i_mesh = _vertex(verts, ld, guard)
    t = jnp.where((code == MESH) | (code == PRISM), t_mesh, t)
    idx = jnp.where(code == MESH, i_mesh, idx)
  p = mat_vec(g.mat, t, guard) + g.pos
  p = jnp.where(code == SPHERE, mul(g.size[0], d, guard) + g.pos,
                jnp.where(code == POINT, g.pos, p))
  p = jnp.where(code == PRISM, t, p)  # prism vertices are given in the common frame
  return p, idx


def _support_static(code: int, g: GeomFrame, verts, d, guard):
  """`support` for a static code: the same operations as its traced form, for one kind."""
  none = jnp.asarray(-1, jnp.int32)
  if code == SPHERE:
    return mul(g.size[0], d, guard) + g.pos, none
  if code == POINT:
    return g.pos, none
  ld = mat_t_vec(g.mat, d, guard)
  idx = none
  if code in (MESH, PRISM):
    t, i_mesh = _vertex(verts, ld, guard)
    if code == PRISM:
      return t, none
    idx = i_mesh
  elif code == BOX:
    t, idx = _box(g, ld)
  elif code == ELLIPSOID:
    t = _ellipsoid(g, ld, guard)
  else:
    h = jnp.where(ld[2] >= 0, g.size[1], -g.size[1])
    if code == CYLINDER:
      t = _cylinder(g, ld, h, guard)
    else:
      zero = jnp.zeros_like(ld[0])
      t = jnp.stack([zero, zero, h])
      if code == CAPSULE:
        t = mul(ld, g.size[0], guard) + t
      elif code != LINE:
        raise ValueError(f"no support function for code {code}")
  return mat_vec(g.mat, t, guard) + g.pos, idx


def _ellipsoid(g: GeomFrame, ld, guard):
  te = ld * g.size
  n2 = dot(te, te, guard)
  small = n2 < MINVAL2
  inv = 1.0 / jnp.sqrt(ones_where(n2, small))
  zero = jnp.zeros_like(ld[0])
  return jnp.where(small, jnp.stack([g.size[0], zero, zero]), te * (inv * g.size))


def _cylinder(g: GeomFrame, ld, h, guard):
  n2c = mul(ld[0], ld[0], guard) + mul(ld[1], ld[1], guard)
  ok = n2c >= MINVAL2
  scl = jnp.where(ok, g.size[0] / jnp.sqrt(ones_where(n2c, ~ok)), 0.0)
  return jnp.stack([scl * ld[0], scl * ld[1], h])


def _box(g: GeomFrame, ld):
  """A box's corner along ld and its index (corner bits x 1, y 2, z 4)."""
  t = jnp.where(ld >= 0, g.size, -g.size)
  i = (jnp.where(t[0] > 0, 1, 0) + jnp.where(t[1] > 0, 2, 0)
       + jnp.where(t[2] > 0, 4, 0)).astype(jnp.int32)
  return t, i


def _vertex(verts, ld, guard):
  """The first vertex of the largest dot product with ld, and its index."""
  dots = (mul(verts[:, 0], ld[0], guard) + mul(verts[:, 1], ld[1], guard)
          + mul(verts[:, 2], ld[2], guard))
  i = jnp.argmax(dots).astype(jnp.int32)
  return verts[i], i


class Vertex(NamedTuple):
  """Vertex of the Minkowski difference: support points on both geoms and the direction."""

  vert: jax.Array  # vert1 - vert2
  vert1: jax.Array
  vert2: jax.Array
  dir: jax.Array  # direction the support was taken in (geom 1 at +dir, geom 2 at -dir)
  index1: jax.Array  # vertex index of discrete geoms (box corner bits, mesh vertex), else -1
  index2: jax.Array


def pair_support(code1, g1, verts1, half1, code2, g2, verts2, half2, guard):
  """S_{A-B}(d) with geom i inflated by half_i along the support direction."""

  def sup(d):
    dn = -d
    p1, i1 = support(code1, g1, verts1, d, guard)
    p2, i2 = support(code2, g2, verts2, dn, guard)
    p1 = p1 + mul(d, half1, guard)
    p2 = p2 + mul(dn, half2, guard)
    return Vertex(p1 - p2, p1, p2, d, i1, i2)

  return sup


def tree_set(tree, i, leaf, mode=None):
  return jax.tree.map(lambda a, b: a.at[i].set(b, mode=mode), tree, leaf)


def tree_get(tree, i):
  return jax.tree.map(lambda a: a[i], tree)


def tree_where(c, a, b):
  def sel(x, y):
    return jnp.where(jnp.reshape(c, c.shape + (1,) * (x.ndim - c.ndim)), x, y)

  return jax.tree.map(sel, a, b)


def vertex_zeros(n, dtype):
  z = jnp.zeros((n, 3), dtype)
  i = jnp.full((n,), -1, jnp.int32)
  return Vertex(z, z, z, z, i, i)


# --------------------------------------------------------------------------------------------
# projections of the origin (GJK's iterate, EPA's faces)


def project_origin_line(v1, v2, guard):
  diff = v2 - v1
  dd = dot(diff, diff, guard)
  scl = -(dot(v2, diff, guard) / ones_where(dd, dd == 0))
  return v2 + mul(scl[..., None], diff, guard)


def project_origin_plane(v1, v2, v3, guard):
  """Projection of the origin on the plane (v1, v2, v3); (point, failed). Batched on (..., 3)."""
  d21 = v2 - v1
  d31 = v3 - v1
  d32 = v3 - v2
  n1 = cross(d32, d21, guard)
  nv1 = dot(n1, v2, guard)
  nn1 = dot(n1, n1, guard)
  n2 = cross(d21, d31, guard)
  nv2 = dot(n2, v1, guard)
  nn2 = dot(n2, n2, guard)
  n3 = cross(d31, d32, guard)
  nv3 = dot(n3, v3, guard)
  nn3 = dot(n3, n3, guard)
  ok1 = (nv1 != 0) & (nn1 > MINVAL)
  ok2 = (nv2 != 0) & (nn2 > MINVAL)
  fail = (nn1 == 0) | (~ok1 & (nn2 == 0)) | (~ok1 & ~ok2 & (nn3 == 0))
  r1 = n1 * (nv1 / ones_where(nn1, nn1 == 0))[..., None]
  r2 = n2 * (nv2 / ones_where(nn2, nn2 == 0))[..., None]
  r3 = n3 * (nv3 / ones_where(nn3, nn3 == 0))[..., None]
  res = jnp.where(ok1[..., None], r1, jnp.where(ok2[..., None], r2, r3))
  return jnp.where(fail[..., None], jnp.zeros_like(res), res), fail
