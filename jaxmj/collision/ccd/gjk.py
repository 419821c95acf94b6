"""MuJoCo 4.0's GJK (engine_collision_gjk.c's gjk() with the 4.0 stop rules) for
collision/convex.py: the signed-volume distance subalgorithm and the search loop."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxmj.collision.ccd.support import (
  MINVAL,
  MINVAL2,
  Vertex,
  at_least,
  det3,
  dot,
  mul,
  ones_where,
  pair_support,
  project_origin_line,
  project_origin_plane,
  same_sign,
  tree_get,
  tree_set,
  tree_where,
  vertex_zeros,
)
from jaxmj.loops import batched_like, bounded_loop

# --------------------------------------------------------------------------------------------
# GJK distance subalgorithm (Montanari et al. 2017 signed volumes, as in engine_collision_gjk.c)

def s1d(s1, s2, guard):
  """Barycentric coordinates (..., 2) of the point of segment (s1, s2) closest to the origin.

  MuJoCo 4.0's S1D: (0, 1) for a segment shorter than 1e-15, and the end s1 (not s2) where the
  origin projects beyond it."""
  diff = s2 - s1
  short = dot(diff, diff, guard) < 1e-30
  p = project_origin_line(s1, s2, guard)
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
  first = same_sign(mu_max, c1_)
  same = first & same_sign(mu_max, c2_) & ~short
  den = ones_where(mu_max, ~same)
  end1 = first & ~short  # the origin beyond s1
  return jnp.stack([jnp.where(same, c1_ / den, jnp.where(end1, 1.0, 0.0)),
                    jnp.where(same, c2_ / den, jnp.where(end1, 0.0, 1.0))], axis=-1)


_MI = (1, 0, 0)
_MJ = (2, 2, 1)


def minors(s1, s2, s3, guard):
  """MuJoCo's minors M_14, M_24, M_34 of [s1 s2 s3; 1 1 1]: (the largest in magnitude, picker
  dropping that axis). Batched on (..., 3)."""
  ai, aj = s1[..., _MI], s1[..., _MJ]
  bi, bj = s2[..., _MI], s2[..., _MJ]
  ci, cj = s3[..., _MI], s3[..., _MJ]
  m = (mul(bi, cj, guard) - mul(bj, ci, guard) - mul(ai, cj, guard) + mul(aj, ci, guard)
       + mul(ai, bj, guard) - mul(aj, bi, guard))  # (..., 3): M_14, M_24, M_34
  mu = jnp.abs(m)
  c1 = (mu[..., 0] >= mu[..., 1]) & (mu[..., 0] >= mu[..., 2])
  c2 = ~c1 & (mu[..., 1] >= mu[..., 2])
  m_max = jnp.where(c1, m[..., 0], jnp.where(c2, m[..., 1], m[..., 2]))

  def pick(v):  # drop the axis of largest projection
    return jnp.where(c1, v[..., 1], v[..., 0]), jnp.where(c1 | c2, v[..., 2], v[..., 1])

  return m_max, pick


def area_cofactors(pick, p, s1, s2, s3, guard):
  px, py = pick(p)
  ax, ay = pick(s1)
  bx, by = pick(s2)
  cx, cy = pick(s3)
  c31 = (mul(px, by, guard) + mul(py, cx, guard) + mul(bx, cy, guard)
         - mul(px, cy, guard) - mul(py, bx, guard) - mul(cx, by, guard))
  c32 = (mul(px, cy, guard) + mul(py, ax, guard) + mul(cx, ay, guard)
         - mul(px, ay, guard) - mul(py, cx, guard) - mul(ax, cy, guard))
  c33 = (mul(px, ay, guard) + mul(py, bx, guard) + mul(ax, by, guard)
         - mul(px, by, guard) - mul(py, ax, guard) - mul(bx, ay, guard))
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


def _s2d(s1, s2, s3, guard):
  """Barycentric coordinates (..., 3) of the point of triangle (s1, s2, s3) closest to 0, and
  those of its edges (s2, s3), (s1, s3), (s1, s2) (3, ..., 2).

  MuJoCo 4.0's S2D: the minors from the edge vectors (s2 - s1) x (s3 - s1), the weights as the
  sub-triangle areas around the projection p over their sum, and where the projection fails
  the closest of the three edges (older sources: the edge (s1, s2))."""
  p, fail = project_origin_plane(s1, s2, s3, guard)
  e = s2 - s1
  f = s3 - s1
  m = jnp.stack([mul(e[..., 1], f[..., 2], guard) - mul(e[..., 2], f[..., 1], guard),
                 mul(e[..., 0], f[..., 2], guard) - mul(e[..., 2], f[..., 0], guard),
                 mul(e[..., 0], f[..., 1], guard) - mul(e[..., 1], f[..., 0], guard)], axis=-1)
  mu = jnp.abs(m)
  c1 = (mu[..., 0] >= mu[..., 1]) & (mu[..., 0] >= mu[..., 2])
  c2 = ~c1 & (mu[..., 1] >= mu[..., 2])
  m_max = jnp.where(c1, m[..., 0], jnp.where(c2, m[..., 1], m[..., 2]))

  def pick(v):  # the two axes kept (the one of largest projection dropped)
    return jnp.where(c1, v[..., 1], v[..., 0]), jnp.where(c1 | c2, v[..., 2], v[..., 1])

  pa, pb = pick(p)
  (aa, ab), (ba, bb), (ca, cb) = ((x - pa, y - pb) for x, y in (pick(s1), pick(s2), pick(s3)))
  c31 = mul(cb, ba, guard) - mul(ca, bb, guard)
  c32 = mul(ca, ab, guard) - mul(aa, cb, guard)
  c33 = mul(aa, bb, guard) - mul(ba, ab, guard)
  comp = jnp.stack([same_sign(m_max, c) & ~fail for c in (c31, c32, c33)])
  inside = comp[0] & comp[1] & comp[2]
  den = (c31 + c32) + c33
  den = ones_where(den, ~inside)
  lam_in = jnp.stack([c31 / den, c32 / den, c33 / den], axis=-1)

  # the three edges (s2, s3), (s1, s3), (s1, s2) in one batched call
  ea = jnp.stack([s2, s1, s1])
  eb = jnp.stack([s3, s3, s2])
  l = s1d(ea, eb, guard)
  x = mul(l[..., 0:1], ea, guard) + mul(l[..., 1:2], eb, guard)
  d = dot(x, x, guard)
  zero = jnp.zeros_like(l[..., 0])
  cands = jnp.stack([
    jnp.stack([zero[0], l[0, ..., 0], l[0, ..., 1]], axis=-1),
    jnp.stack([l[1, ..., 0], zero[1], l[1, ..., 1]], axis=-1),
    jnp.stack([l[2, ..., 0], l[2, ..., 1], zero[2]], axis=-1),
  ])
  lam = _first_min_weights(comp, d, cands)
  return jnp.where(inside[..., None], lam_in, lam), l


def _s3d(s1, s2, s3, s4, guard):
  """Barycentric coordinates (4,) of the point of tetrahedron (s1, .., s4) closest to 0, and
  the sub-results of its faces: triangle (s1, s2, s3) (3,) and segment (s1, s2) (2,)."""
  c41 = -det3(s2, s3, s4, guard)
  c42 = det3(s1, s3, s4, guard)
  c43 = -det3(s1, s2, s4, guard)
  c44 = det3(s1, s2, s3, guard)
  m_det = c41 + c42 + c43 + c44
  comp = jnp.stack([same_sign(m_det, c) for c in (c41, c42, c43, c44)])
  inside = jnp.all(comp)
  den = ones_where(m_det, ~inside)
  lam_in = jnp.stack([c41 / den, c42 / den, c43 / den, c44 / den])

  # the four faces in one batched call
  fa = jnp.stack([s2, s1, s1, s1])
  fb = jnp.stack([s3, s3, s2, s2])
  fc = jnp.stack([s4, s4, s4, s3])
  l, edges = _s2d(fa, fb, fc, guard)
  x = mul(l[:, 0:1], fa, guard) + mul(l[:, 1:2], fb, guard) + mul(l[:, 2:3], fc, guard)
  d = dot(x, x, guard)
  zero = jnp.zeros_like(l[:, 0])
  cands = jnp.stack([
    jnp.stack([zero[0], l[0, 0], l[0, 1], l[0, 2]]),
    jnp.stack([l[1, 0], zero[1], l[1, 1], l[1, 2]]),
    jnp.stack([l[2, 0], l[2, 1], zero[2], l[2, 2]]),
    jnp.stack([l[3, 0], l[3, 1], l[3, 2], zero[3]]),
  ])
  lam = _first_min_weights(comp, d, cands)
  return jnp.where(inside, lam_in, lam), l[3], edges[2, 3]


def _subdistance(n, v, guard):
  """Barycentric coordinates (4,) of the point of the n-simplex v[:n] closest to the origin.

  The triangle and segment cases are the tetrahedron's face (v0, v1, v2) and its edge (v0, v1),
  computed once inside _s3d: the same formulas (XLA may round the last bit differently in the
  batched form, measured <= 4.4e-16), and a GJK loop body a quarter smaller to compile."""
  l1 = jnp.zeros(4, v.dtype).at[0].set(1.0)
  l4, tri, seg = _s3d(v[0], v[1], v[2], v[3], guard)
  l2 = jnp.concatenate([seg, jnp.zeros(2, v.dtype)])
  l3 = jnp.concatenate([tri, jnp.zeros(1, v.dtype)])
  return jnp.where(n == 4, l4, jnp.where(n == 3, l3, jnp.where(n == 2, l2, l1)))


def lincomb(lam, n, v, guard):
  """sum_{i<n} lam_i v_i, accumulated left to right like MuJoCo's lincomb."""
  res = jnp.zeros(v.shape[1:], v.dtype)
  for i in range(4):
    res = res + mul(jnp.where(i < n, lam[i], 0.0), v[i], guard)
  return res


# --------------------------------------------------------------------------------------------
# GJK


class GjkPass(NamedTuple):
  """Parameters of one GJK pass (the core distance pass or the full penetration pass)."""

  code1: jax.Array
  code2: jax.Array
  half1: jax.Array  # inflation of geom 1 along the support direction
  half2: jax.Array
  discrete: jax.Array  # both geoms polyhedral and no margin: exact termination
  get_dist: jax.Array  # distance mode (with cutoff) instead of intersection mode
  cutoff: jax.Array


class _Gjk(NamedTuple):
  simplex: Vertex  # (4,)
  n: jax.Array
  x_k: jax.Array
  lam: jax.Array
  x_norm: jax.Array
  done: jax.Array
  nocontact: jax.Array
  proven: jax.Array  # a support proved the shapes apart (distance mode goes on)


def _reduce(simplex_h: Vertex, lam):
  """GJK's pruning: the vertices of non-zero weight moved to the front, in order. Returns
  (simplex (4,), weights (4,), count)."""
  idx4 = jnp.arange(4)
  keep = lam != 0
  n_new = jnp.sum(keep).astype(jnp.int32)
  pos = jnp.cumsum(keep) - 1
  src = jnp.argmax(keep[None, :] & (pos[None, :] == idx4[:, None]), axis=1)
  kept = idx4 < n_new
  return (tree_where(kept, tree_get(simplex_h, src), simplex_h), jnp.where(kept, lam[src], lam),
          n_new)


def _next_iterate(sv, lam, n, guard):
  """MuJoCo 4.0's next iterate: the origin's projection on the segment / plane of the kept
  simplex sv (4, 3), their barycentric combination where that degenerates (or n is 1, 4)."""
  seg = sv[1] - sv[0]
  plane, plane_fail = project_origin_plane(sv[0], sv[1], sv[2], guard)
  return jnp.where(
    ((n == 2) & (dot(seg, seg, guard) >= 1e-30))[..., None],
    project_origin_line(sv[0], sv[1], guard),
    jnp.where(((n == 3) & ~plane_fail)[..., None], plane, lincomb(lam, n, sv, guard)))


def gjk(pp: GjkPass, g1, g2, verts1, verts2, iterations, tolerance, guard, noise=None):
  """MuJoCo 4.0's gjk(): returns (dist, x1, x2, nsimplex, simplex, lam, no_contact).

  Stop rules as read from the 4.0.0 binary (the stored C sources are older): the separation
  test comes first, then the Frank-Wolfe gap test, skipped on the first iteration; the new
  iterate is the origin's projection on the kept segment / triangle (their barycentric
  combination only where that degenerates); the search stops once that iterate is shorter
  than ccd_tolerance (mjMINVAL in distance mode, for polyhedral pairs, or with one vertex left)
  or, from the second iteration, its norm changed by less than mjMINVAL; dist is then the new
  iterate's norm. A tetrahedron gives dist 0 (the last norm where a support already proved
  the shapes apart). After the loop one more support along the iterate tests for a separating
  plane: in intersection mode that is no contact, i.e. no EPA for shapes apart by less than
  the tolerance.

  noise: see rounding_noise (None at float64)."""
  sup = pair_support(pp.code1, g1, verts1, pp.half1, pp.code2, g2, verts2, pp.half2, guard)
  dtype = g1.pos.dtype
  tol2 = tolerance * tolerance
  eps = jnp.where(pp.discrete, 0.0, 0.5 * tol2)
  zero_x = at_least(MINVAL, noise)  # an iterate shorter than this reads as zero
  stop_norm = jnp.where(pp.discrete | pp.get_dist, MINVAL, tolerance)

  def body(k, s: _Gjk):
    def step(s: _Gjk):
      xx = dot(s.x_k, s.x_k, guard)
      small = xx < zero_x * zero_x
      x_norm = jnp.sqrt(ones_where(xx, small))
      dn = s.x_k * (1.0 / x_norm)
      v = sup(-dn)
      simplex_h = tree_set(s.simplex, s.n, v)
      fw = (k > 0) & (dot(s.x_k, s.x_k - v.vert, guard) < eps)
      vs = dot(s.x_k, v.vert, guard)
      sep = (vs > 0) & (~pp.get_dist | (vs >= pp.cutoff * x_norm))

      # distance subalgorithm on the n+1 simplex, then drop the vertices with zero weight
      simplex_c, lam_c, n_new = _reduce(simplex_h, _subdistance(s.n + 1, simplex_h.vert, guard))
      x_next = _next_iterate(simplex_c.vert, lam_c, n_new, guard)
      next_norm = jnp.sqrt(dot(x_next, x_next, guard))
      near = next_norm < jnp.where(n_new == 1, MINVAL, stop_norm)
      conv = (k > 0) & (jnp.abs(next_norm - x_norm) < MINVAL)

      head_stop = small | sep | fw
      fail = ~head_stop & (n_new < 1)
      tail = ~head_stop & ~fail
      tet = tail & (n_new == 4)
      proven = s.proven | (~small & (vs > 0))

      simplex = tree_where(tail, simplex_c, tree_where(fw & ~small, simplex_h, s.simplex))
      tet_norm = jnp.where(proven, x_norm, 0.0)
      return _Gjk(
        simplex=simplex,
        n=jnp.where(tail, n_new, s.n),
        x_k=jnp.where(tail & ~tet, x_next, s.x_k),
        lam=jnp.where(tail, lam_c, s.lam),
        x_norm=jnp.where(small, xx, jnp.where(tet, tet_norm, jnp.where(tail, next_norm, x_norm))),
        done=head_stop | fail | tet | near | conv,
        nocontact=(~small & sep) | fail,
        proven=proven | fail,
      )

    return lax.cond(s.done, lambda s: s, step, s)

  # initial guess: the centres' difference, or +x when the centres coincide (as MuJoCo 4.0)
  x0 = g1.pos - g2.pos
  x0 = jnp.where(dot(x0, x0, guard) < MINVAL2, jnp.array([1.0, 0.0, 0.0], dtype), x0)
  init = _Gjk(
    simplex=vertex_zeros(4, dtype),
    n=jnp.array(0, jnp.int32),
    x_k=x0,
    lam=jnp.zeros(4, dtype).at[0].set(1.0),
    x_norm=jnp.zeros((), dtype),
    done=jnp.array(False),
    nocontact=jnp.array(False),
    proven=jnp.array(False),
  )
  # the search is never differentiated (convex_plan stops its inputs' gradients), so it stops
  # once done: under vmap, once every pair is (a fixed loop would run every trip's step)
  init = batched_like(init, (pp, g1, g2, verts1, verts2))
  s = bounded_loop(iterations, body, init, lambda s: jnp.all(s.done), early_exit=True)
  # the final separating-plane test; it decides contact in intersection mode only (the core
  # pass in distance mode reports its distance whatever it finds)
  xx = dot(s.x_k, s.x_k, guard)
  xn = s.x_k * (1.0 / jnp.sqrt(ones_where(xx, xx < MINVAL2)))
  apart = ~pp.get_dist & ~s.proven & (s.n < 4) & (s.x_norm >= MINVAL) & (
    dot(s.x_k, sup(-xn).vert, guard) > 0)
  s = s._replace(nocontact=s.nocontact | apart)
  x1 = jnp.where(s.n > 0, lincomb(s.lam, s.n, s.simplex.vert1, guard), g1.pos)
  x2 = jnp.where(s.n > 0, lincomb(s.lam, s.n, s.simplex.vert2, guard), g2.pos)
  return s.x_norm, x1, x2, jnp.where(s.nocontact, 0, s.n), s.simplex, s.lam, s.nocontact
