"""Tendon wrapping geometry around spheres and cylinders (MuJoCo's mju_wrap), batched.

Every function takes arrays with a leading batch axis and an array namespace `xp`: the
runtime passes `jax.numpy` (traced, differentiable), the compiler passes `numpy` (for
tendon_length0 and tendon_lengthspring at qpos0 / qpos_spring), so both evaluate the same
geometry. Branches are `where` selections with every division guarded, so no branch
produces NaN (or a NaN gradient) for the lanes it does not select.

A wrap takes the two sites x0, x1 around the obstacle and returns the wrap length (-1 when
the straight segment does not touch the obstacle) and the two tangent points. Cylinders are
infinite along their z axis: the 2D problem is solved in the xy plane and the height is
interpolated along the unrolled path. A side site outside the obstacle picks the side the
path goes around; one inside makes the path pass through the obstacle (wrap_inside).
"""

from __future__ import annotations

import jax
import numpy as np

from jaxmj.constants import MINVAL

_INSIDE_ITERATIONS = 20  # wrap_inside's Newton iterations and initial point
_INSIDE_Z0 = 1 - 1e-7
# Residual tolerance. Earlier MuJoCo sources stop at 1e-6; mujoco 4.0's inside points agree
# with a converged root to ~1e-9 (and differ from the 1e-6 iterate by ~1e-8), so iterate on.
_INSIDE_TOL = 1e-10


def _safe(x, xp):
  """x where |x| >= MINVAL, else 1: a denominator for a branch that is not selected."""
  return xp.where(xp.abs(x) < MINVAL, 1.0, x)


def _sqrt(x, xp):
  """sqrt(max(x, 0)) with a zero (not NaN) gradient where x <= 0."""
  pos = x > 0
  return xp.where(pos, xp.sqrt(xp.where(pos, x, 1.0)), 0.0)


def norm(v, xp):
  """|v| over the last axis, with a zero (not NaN) gradient at 0."""
  sq = xp.sum(v * v, axis=-1)
  return xp.where(sq > 0, xp.sqrt(xp.where(sq > 0, sq, 1.0)), 0.0)


def unit(v, xp):
  """mju_normalize: v / |v|, or the first basis vector when |v| < MINVAL; (..., n)."""
  n = norm(v, xp)[..., None]
  e0 = np.eye(v.shape[-1])[0]
  return xp.where(n < MINVAL, e0, v / xp.where(n < MINVAL, 1.0, n))


def _dot2(a, b):
  return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1]


def _intersect(p1, p2, p3, p4, xp):
  """is_intersect: do the 2D segments p1-p2 and p3-p4 cross? (n,) bool."""
  det = (p4[:, 1] - p3[:, 1]) * (p2[:, 0] - p1[:, 0]) - (p4[:, 0] - p3[:, 0]) * (
    p2[:, 1] - p1[:, 1])
  ok = xp.abs(det) >= MINVAL
  det = _safe(det, xp)
  a = ((p4[:, 0] - p3[:, 0]) * (p1[:, 1] - p3[:, 1])
       - (p4[:, 1] - p3[:, 1]) * (p1[:, 0] - p3[:, 0])) / det
  b = ((p2[:, 0] - p1[:, 0]) * (p1[:, 1] - p3[:, 1])
       - (p2[:, 1] - p1[:, 1]) * (p1[:, 0] - p3[:, 0])) / det
  return ok & (a >= 0) & (a <= 1) & (b >= 0) & (b <= 1)


def _arc(p0, p1, second, rad, xp):
  """length_circle: arc length from p0 to p1 on the circle, the long way when flipped."""
  c = xp.clip(_dot2(unit(p0, xp), unit(p1, xp)), -1.0, 1.0)
  # arccos has an infinite derivative at +-1: evaluate it inside, pick the end value there
  end = xp.abs(c) >= 1.0
  angle = xp.where(end, xp.where(c > 0, 0.0, np.pi), xp.arccos(xp.where(end, 0.0, c)))
  cross = p0[:, 1] * p1[:, 0] - p0[:, 0] * p1[:, 1]
  flip = ((cross > 0) & second) | ((cross < 0) & ~second)
  return rad * xp.where(flip, 2 * np.pi - angle, angle)


def _angle(u, v, xp):
  """Signed angle (n,) from 2D vectors u to v, in (-pi, pi]."""
  return xp.arctan2(u[:, 0] * v[:, 1] - u[:, 1] * v[:, 0], _dot2(u, v))


def circle(d, sd, has_side, rad, xp):
  """wrap_circle: 2D wrap of the segment d[:, :2] - d[:, 2:] around the circle of radius rad
  at the origin. sd: (n, 2) side point on the circle (used where has_side).
  Returns (wlen (n,), -1 for no wrap; pnt (n, 4) the two tangent points).

  Without a side point the path wraps, the shorter way, only when the segment cuts the
  circle. With one (mujoco 4.0) the path is the shortest one that winds around the centre
  by the same angle as the polyline end0 -> side -> end1: straight when the segment misses
  the circle and winds the same way, otherwise around the circle in the polyline's sense.
  """
  a0, a1 = d[:, :2], d[:, 2:]
  sqlen0, sqlen1, sqrad = _dot2(a0, a0), _dot2(a1, a1), rad * rad
  dif = a1 - a0
  dd = _dot2(dif, dif)
  a = xp.clip(-_dot2(dif, a0) / _safe(dd, xp), 0.0, 1.0)
  near = a[:, None] * dif + a0
  winding = _angle(a0, sd, xp) + _angle(sd, a1, xp)
  direct = xp.abs(winding - _angle(a0, a1, xp)) < np.pi
  no_wrap = ((sqlen0 < sqrad) | (sqlen1 < sqrad) | (rad < MINVAL) | (dd < MINVAL)
             | ((_dot2(near, near) > sqrad) & (~has_side | direct)))
  sqrt0, sqrt1 = _sqrt(sqlen0 - sqrad, xp), _sqrt(sqlen1 - sqrad, xp)
  l0, l1 = _safe(sqlen0, xp), _safe(sqlen1, xp)
  sols, goods = [], []
  # solution 0 runs clockwise from end0's tangent point to end1's, solution 1 the other way
  for sgn in (1.0, -1.0):
    s0 = xp.stack([(a0[:, 0] * sqrad + sgn * rad * a0[:, 1] * sqrt0) / l0,
                   (a0[:, 1] * sqrad - sgn * rad * a0[:, 0] * sqrt0) / l0], axis=-1)
    s1 = xp.stack([(a1[:, 0] * sqrad - sgn * rad * a1[:, 1] * sqrt1) / l1,
                   (a1[:, 1] * sqrad + sgn * rad * a1[:, 0] * sqrt1) / l1], axis=-1)
    shorter = -_dot2(s0 - s1, s0 - s1)
    goods.append(xp.where(_intersect(a0, s0, a1, s1, xp), -10000.0, shorter))
    sols.append((s0, s1))
  second = xp.where(has_side, winding > 0, ~(goods[0] > goods[1]))
  p0 = xp.where(second[:, None], sols[1][0], sols[0][0])
  p1 = xp.where(second[:, None], sols[1][1], sols[0][1])
  no_wrap = no_wrap | _intersect(a0, p0, a1, p1, xp)
  wlen = xp.where(no_wrap, -1.0, _arc(p0, p1, second, rad, xp))
  return wlen, xp.concatenate([p0, p1], axis=-1)


def _asin(x, xp):
  """arcsin clamped to [-1, 1], with a finite gradient at and beyond the ends."""
  inner = xp.abs(x) < 1
  return xp.where(inner, xp.arcsin(xp.where(inner, x, 0.0)), xp.sign(x) * (np.pi / 2))


def _root(z, a, xp):
  """max(MINVAL, sqrt(1 - (a z)^2)): the derivative denominators of the Newton step."""
  return xp.maximum(MINVAL, _sqrt(1 - z * z * a * a, xp))


def inside(d, rad, xp):
  """wrap_inside: the point on the circle where a path from d[:, :2] to d[:, 2:] through
  the disk touches its boundary. Returns (wlen (n,): 0 if wrapped, -1 if not; pnt (n, 4):
  that point twice). Newton's method on asin(A z) + asin(B z) - 2 asin(z) + G = 0 with
  MuJoCo's fixed iteration budget; on any numerical trouble the point between the ends."""
  a0, a1 = d[:, :2], d[:, 2:]
  len0, len1 = norm(a0, xp), norm(a1, xp)
  dif = a1 - a0
  dd = _dot2(dif, dif)
  a = -_dot2(dif, a0) / _safe(dd, xp)
  cut = (dd > MINVAL) & (a > 0) & (a < 1) & (norm(a0 + a[:, None] * dif, xp) <= rad)
  no_wrap = ((len0 <= rad) | (len1 <= rad) | (rad < MINVAL) | (len0 < MINVAL)
             | (len1 < MINVAL) | cut)
  avg = unit(0.5 * (a0 + a1), xp) * rad[:, None]
  ca, cb = rad / _safe(len0, xp), rad / _safe(len1, xp)
  cosg = (len0 * len0 + len1 * len1 - dd) / _safe(2 * len0 * len1, xp)
  no_wrap = no_wrap | (cosg < -1 + MINVAL)
  fallback = cosg > 1 - MINVAL
  g = xp.arccos(xp.clip(cosg, -1 + MINVAL, 1 - MINVAL))

  def fun(z):
    return _asin(ca * z, xp) + _asin(cb * z, xp) - 2 * _asin(z, xp) + g

  z = xp.full(len0.shape, _INSIDE_Z0)
  f = fun(z)
  fallback = fallback | (f > 0)

  def newton(_, state):
    z, f, bad, steps = state
    active = ~bad & (xp.abs(f) > _INSIDE_TOL)
    df = ca / _root(z, ca, xp) + cb / _root(z, cb, xp) - 2 / _root(z, 1.0, xp)
    bad = bad | (active & (df > -MINVAL))
    z1 = z - f / _safe(df, xp)
    bad = bad | (active & (z1 > z))
    move = active & ~bad
    z = xp.where(move, z1, z)
    f = xp.where(move, fun(z), f)
    bad = bad | (move & (f > _INSIDE_TOL))
    return z, f, bad, steps + active.astype(np.int32)

  state = (z, f, xp.zeros(len0.shape, bool), xp.zeros(len0.shape, np.int32))
  if xp is np:
    for k in range(_INSIDE_ITERATIONS):
      state = newton(k, state)
  else:  # one traced iteration body, not twenty
    state = jax.lax.fori_loop(0, _INSIDE_ITERATIONS, newton, state)
  z, f, bad, steps = state
  fallback = fallback | bad | (steps >= _INSIDE_ITERATIONS)
  first = a0[:, 0] * a1[:, 1] - a0[:, 1] * a1[:, 0] > 0
  vec = unit(xp.where(first[:, None], a0, a1), xp)
  ang = _asin(z, xp) - xp.where(first, _asin(ca * z, xp), _asin(cb * z, xp))
  c, s = xp.cos(ang), xp.sin(ang)
  pnt = rad[:, None] * xp.stack([c * vec[:, 0] - s * vec[:, 1],
                                 s * vec[:, 0] + c * vec[:, 1]], axis=-1)
  pnt = xp.where(fallback[:, None], avg, pnt)
  return xp.where(no_wrap, -1.0, 0.0), xp.concatenate([pnt, pnt], axis=-1)


def _sphere_axes(p0, p1, xp):
  """The wrapping plane of a sphere: axis0 along p0, axis1 in the plane of p0 and p1."""
  ax0 = unit(p0, xp)
  normal = xp.cross(p0, p1)
  parallel = norm(normal, xp) < MINVAL
  # p0, p1 parallel: any normal to p0, from the basis vectors other than p0's largest
  mag = xp.abs(ax0)
  big1 = (mag[:, 1] > mag[:, 0]) & (mag[:, 1] > mag[:, 2])
  big2 = (mag[:, 2] > mag[:, 0]) & (mag[:, 2] > mag[:, 1])
  other = xp.stack([xp.where(big1 | big2, 1.0, 0.0), xp.where(big1, 0.0, 1.0),
                    xp.where(big2, 0.0, 1.0)], axis=-1)
  normal = unit(xp.where(parallel[:, None], xp.cross(ax0, other), normal), xp)
  return ax0, unit(xp.cross(normal, ax0), xp)


def wrap(x0, x1, xpos, xmat, rad, sphere, side, has_side, xp):
  """mju_wrap for n obstacles at once.

  x0, x1: (n, 3) global site positions; xpos (n, 3), xmat (n, 3, 3): obstacle frames;
  rad (n,); sphere (n,) bool (else cylinder); side (n, 3) global side sites, used where
  has_side (n,) bool. Returns wlen (n,) (-1: no wrap) and tangent points t0, t1 (n, 3).
  """
  p0 = xp.einsum("nji,nj->ni", xmat, x0 - xpos)
  p1 = xp.einsum("nji,nj->ni", xmat, x1 - xpos)
  at_centre = (norm(p0, xp) < MINVAL) | (norm(p1, xp) < MINVAL)
  sx0, sx1 = _sphere_axes(p0, p1, xp)
  ex, ey = np.eye(3)[0], np.eye(3)[1]
  ax0 = xp.where(sphere[:, None], sx0, ex)
  ax1 = xp.where(sphere[:, None], sx1, ey)
  dot = lambda a, b: xp.sum(a * b, axis=-1)
  d = xp.stack([dot(p0, ax0), dot(p0, ax1), dot(p1, ax0), dot(p1, ax1)], axis=-1)
  s = xp.einsum("nji,nj->ni", xmat, side - xpos)
  sd = xp.stack([dot(s, ax0), dot(s, ax1)], axis=-1)
  sd = unit(sd, xp) * rad[:, None]
  wlen_c, pnt_c = circle(d, sd, has_side, rad, xp)
  wlen, pnt = wlen_c, pnt_c
  if not (isinstance(has_side, np.ndarray) and not has_side.any()):
    # the side site inside the obstacle (3D distance, also for cylinders): pass through it
    wlen_i, pnt_i = inside(d, rad, xp)
    through = has_side & (norm(s, xp) < rad)
    wlen = xp.where(through, wlen_i, wlen)
    pnt = xp.where(through[:, None], pnt_i, pnt)
  wlen = xp.where(at_centre, -1.0, wlen)
  r0 = ax0 * pnt[:, 0:1] + ax1 * pnt[:, 1:2]
  r1 = ax0 * pnt[:, 2:3] + ax1 * pnt[:, 3:4]
  # cylinder: heights interpolated along the unrolled path, length over the helix
  flat0 = norm(p0[:, :2] - r0[:, :2], xp)
  flat1 = norm(p1[:, :2] - r1[:, :2], xp)
  total = _safe(flat0 + wlen + flat1, xp)
  z0 = p0[:, 2] + (p1[:, 2] - p0[:, 2]) * flat0 / total
  z1 = p0[:, 2] + (p1[:, 2] - p0[:, 2]) * (flat0 + wlen) / total
  cyl = ~sphere
  r0 = xp.where(cyl[:, None], xp.stack([r0[:, 0], r0[:, 1], z0], axis=-1), r0)
  r1 = xp.where(cyl[:, None], xp.stack([r1[:, 0], r1[:, 1], z1], axis=-1), r1)
  helix = norm(xp.stack([wlen, z1 - z0], axis=-1), xp)
  wlen = xp.where(cyl & (wlen >= 0), helix, wlen)
  t0 = xp.einsum("nij,nj->ni", xmat, r0) + xpos
  t1 = xp.einsum("nij,nj->ni", xmat, r1) + xpos
  return wlen, t0, t1
