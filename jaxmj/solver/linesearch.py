"""Per-island primal line search: MuJoCo 4.0's PrimalPrepare / PrimalEval / PrimalSearch for
every constraint island at once (driver.py runs the Newton and CG iterations around it).

An island's 1-D cost along qacc + alpha * search is the sum over its rows and dofs; all islands
are evaluated together, each at its own alpha, with per-island sums written as products with
one-hot island matrices (`Islands`), so shapes are fixed whatever the islands are. The search
itself is a small per-island state machine (vmapped over islands) between joint evaluations.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmj.constants import MINVAL
from jaxmj.loops import batched_like, bounded_loop
from jaxmj.solver.problem import (
  Islands,
  Problem,
  ext,
  safe_div,
  safe_sqrt,
  seg,
  spread,
)

# ------------------------------------------------------------------ primal: line search


class _Prep(NamedTuple):
  """PrimalPrepare: the 1-D cost along qacc + alpha * search, piecewise quadratic per row."""

  gauss: jax.Array  # (ni, 2): linear and quadratic Gauss coefficients per island (the constant
  # is shifted out)
  quad: jax.Array  # (nefc, 3)
  jar: jax.Array
  jv: jax.Array
  cq: jax.Array  # (ncone, 3) summed row quadratics (bottom zone)
  cu: jax.Array  # (ncone, 6): U0, V0, UU, UV, VV, Dm
  err: jax.Array  # (ni, 2): scale of the roundoff in d cost/d alpha, r0 + |alpha| r1 (sums of
  # the magnitudes of its terms; see `_tolerance`)


def prepare(p: Problem, isl: Islands, ma, search, mv, jar, jv) -> _Prep:
  gauss = jnp.stack([seg(isl.dof, search * (ma - p.qfrc_smooth)),
                     0.5 * seg(isl.dof, search * mv)], axis=1)
  dj = p.D * jar
  quad = jnp.stack([0.5 * jar * dj, jv * dj, 0.5 * jv * p.D * jv], axis=1)
  ncone = p.cidx.shape[0]
  cq = jnp.zeros((ncone, 3), jar.dtype)
  cu = jnp.zeros((ncone, 6), jar.dtype)
  if ncone:
    cq = jnp.sum(ext(quad)[p.cidx], axis=1)
    s, mu = p.cscale, p.cmu
    u = ext(jar)[p.cidx] * s
    v = ext(jv)[p.cidx] * s
    dm = safe_div(ext(p.D)[p.cidx[:, 0]], mu * mu * (1 + mu * mu))
    cu = jnp.stack([u[:, 0], v[:, 0], jnp.sum(u[:, 1:] ** 2, 1), jnp.sum(u[:, 1:] * v[:, 1:], 1),
                    jnp.sum(v[:, 1:] ** 2, 1), dm], axis=1)
  r0 = seg(isl.dof, jnp.abs(search) * (jnp.abs(ma) + jnp.abs(p.qfrc_smooth)))
  r0 = r0 + seg(isl.efc, jnp.abs(jv) * (jnp.abs(dj) + p.floss))
  r1 = 2 * (gauss[:, 1] + seg(isl.efc, quad[:, 2]))
  return _Prep(gauss=gauss, quad=quad, jar=jar, jv=jv, cq=cq, cu=cu,
               err=jnp.stack([r0, r1], axis=1))


def _friction_cost(x, f, rf, d):
  """Huber cost of friction rows at x = J qacc - aref."""
  return jnp.where((-rf < x) & (x < rf), 0.5 * d * x * x,
                   jnp.where(x <= -rf, f * (-0.5 * rf - x), f * (-0.5 * rf + x)))


def _friction_zone(x, rf):
  return jnp.where((-rf < x) & (x < rf), 0, jnp.where(x <= -rf, -1, 1))


def _cone_zone(n, tsq, mu):
  """Zone of elliptic cones at N, T^2: 1 top, 2 bottom, 3 middle; and safe T."""
  tpos = tsq > 0
  t = safe_sqrt(tsq)
  zone = jnp.where(tpos, jnp.where(n >= mu * t, 1, jnp.where(mu * n + t <= 0, 2, 3)),
                   jnp.where(n < 0, 2, 1))
  return zone, t, jnp.where(tpos, t, 1.0)


def _evaluate(p: Problem, isl: Islands, pr: _Prep, alpha: jax.Array) -> jax.Array:
  """PrimalEval of every island at its own step: alpha (k, ni) -> (k, ni, 4) rows [alpha,
  cost, d cost/d alpha, d2 cost/d alpha2], each island's cost summed over its rows and dofs.

  MuJoCo 4.0 evaluates the cost shifted by its value at alpha = 0, row by row, so that a small
  decrease of a large total cost is not lost to roundoff: quadratic rows whose state is the
  same at 0 and alpha contribute alpha*q1 + alpha^2*q2, friction rows and cones in the same
  zone their exact difference, rows changing zone the difference of their absolute costs.
  """
  a = spread(isl.efc_id, alpha)  # (k, nefc): each row's island's step
  x = pr.jar + a * pr.jv
  floss, rf, dd = p.floss, p.R * p.floss, p.D
  act0 = p.is_ineq & (pr.jar < 0)
  act = p.is_ineq & (x < 0)
  cost0 = jnp.where(act0, pr.quad[:, 0], 0.0)
  use = (p.is_eq | act).astype(x.dtype)
  row = jnp.where(act, pr.quad[:, 0] - cost0, -cost0)  # inequality constant shifts
  # friction: exact differences of the Huber cost
  z0, zx = _friction_zone(pr.jar, rf), _friction_zone(x, rf)
  fdif = jnp.where((z0 == 0) & (zx == 0), 0.5 * dd * (x - pr.jar) * (x + pr.jar),
                   jnp.where((z0 == -1) & (zx == -1), floss * (pr.jar - x),
                             jnp.where((z0 == 1) & (zx == 1), floss * (x - pr.jar),
                                       _friction_cost(x, floss, rf, dd)
                                       - _friction_cost(pr.jar, floss, rf, dd))))
  row = row + jnp.where(p.is_fric, fdif, 0.0)
  fq = p.is_fric & (zx == 0)
  fd1 = jnp.where(fq, dd * x * pr.jv, jnp.where(zx == -1, -floss * pr.jv, floss * pr.jv))
  # the per-island sums of all five row terms in one product (k, 5, nefc) @ (nefc, ni)
  terms = jnp.stack([row, jnp.where(p.is_fric, fd1, 0.0), jnp.where(fq, dd * pr.jv * pr.jv, 0.0),
                     use * pr.quad[:, 1], use * pr.quad[:, 2]], axis=-2)
  cost, d1, d2, q1, q2 = jnp.moveaxis(seg(isl.efc, terms), -2, 0)
  q1, q2 = q1 + pr.gauss[:, 0], q2 + pr.gauss[:, 1]
  if p.cidx.shape[0]:
    cone = seg(isl.cone, jnp.stack(_cone_eval(p, pr, spread(isl.cone_id, alpha)), axis=-2))
    cost, d1, d2 = cost + cone[..., 0, :], d1 + cone[..., 1, :], d2 + cone[..., 2, :]
  cost = cost + alpha * alpha * q2 + alpha * q1
  d1 = d1 + 2 * alpha * q2 + q1
  d2 = d2 + 2 * q2
  d2 = jnp.where(d2 <= 0, MINVAL, d2)
  return jnp.stack([alpha, cost, d1, d2], axis=-1)


def _cone_eval(p: Problem, pr: _Prep, a: jax.Array):
  """Elliptic cones' shifted cost and derivatives at steps a (k, ncone): each (k, ncone)."""
  u0, v0, uu, uv, vv, dm = (pr.cu[:, k] for k in range(6))
  mu, on = p.cmu, p.cactive
  cq0, cq1, cq2 = pr.cq[:, 0], pr.cq[:, 1], pr.cq[:, 2]
  zone0, t0, _ = _cone_zone(u0, uu, mu)
  n = u0 + a * v0  # (k, ncone)
  zone, t, tsafe = _cone_zone(n, uu + a * (2 * uv + a * vv), mu)
  nmt, nmt0 = n - mu * t, u0 - mu * t0

  def absolute(z, al, nmt):
    return jnp.where(z == 2, al * al * cq2 + al * cq1 + cq0,
                     jnp.where(z == 3, 0.5 * dm * nmt * nmt, 0.0))

  dif = jnp.where(zone0 == zone, jnp.where(zone == 2, a * a * cq2 + a * cq1,
                                           jnp.where(zone == 3, 0.5 * dm * (nmt - nmt0)
                                                     * (nmt + nmt0), 0.0)),
                  absolute(zone, a, nmt) - absolute(zone0, 0.0, nmt0))
  t1 = (uv + a * vv) / tsafe
  t2 = vv / tsafe - (uv + a * vv) * t1 / (tsafe * tsafe)
  dn = v0 - mu * t1
  bottom, middle = (zone == 2) & on, (zone == 3) & on
  d1 = jnp.where(bottom, 2 * a * cq2 + cq1, jnp.where(middle, dm * nmt * dn, 0.0))
  d2 = jnp.where(bottom, 2 * cq2, jnp.where(middle, dm * (dn * dn + nmt * (-mu * t2)), 0.0))
  return jnp.where(on, dif, 0.0), d1, d2


_ONE, _BRACKET, _DONE = 0, 1, 2
# A derivative within _ROUNDOFF * eps of the sum of its terms' magnitudes is 0 to the precision
# of the dtype: further Newton steps only follow roundoff (in float32 MuJoCo's gtol is usually
# far below that level, and the search would run to its budget; in float64 gtol is larger)
_ROUNDOFF = 4.0


def _newton_pt(pt):
  """Newton step from a point [alpha, cost, d1, d2] (d2 >= MINVAL)."""
  return pt[..., 0] - pt[..., 2] / pt[..., 3]


# An island's search state, packed in one row (ni, 22) so that a select of states is one
# select: phase, p1, p2 (points [alpha, cost, d1, d2]), p1n and p2n (the evaluated Newton
# points of p1 and p2), evaluations spent, result. Phase and count are small integers, exact
# in the float dtype.
def _pack(phase, p1, p2, p1n, p2n, it, res):
  dt = p1.dtype
  return jnp.concatenate([jnp.asarray(phase, dt)[None], p1, p2, p1n, p2n,
                          jnp.asarray(it, dt)[None], res])


def _unpack(st):  # (..., 22) -> the fields, for one island's row or all islands'
  return (st[..., 0], st[..., 1:5], st[..., 5:9], st[..., 9:13], st[..., 13:17], st[..., 17],
          st[..., 18:22])


def _ls_final_choice(p1, p2):  # costs are relative to alpha = 0
  c1 = (p1[1] <= p2[1]) & (p1[1] < 0)
  c2 = (p2[1] <= p1[1]) & (p2[1] < 0)
  return jnp.where(c1, p1, jnp.where(c2, p2, jnp.zeros_like(p1)))


def _ls_brackets(st, qa):
  """One island's bracket updates from the candidates (p1n, p2n, midpoint)."""
  _, p1, p2, p1n, p2n, _, _ = _unpack(st)
  cands = (p1n, p2n, qa[1])

  def update(pt):
    # the slope d1 = pt[2] followed on its own: the tests read scalars only, the selects of
    # points none of the tests (XLA then fuses the chain into its consumers)
    flag, d1 = jnp.array(False), pt[2]
    for c in cands:
      neg = (d1 < 0) & (c[2] < 0) & (d1 < c[2])
      pos = ~neg & (d1 > 0) & (c[2] > 0) & (d1 > c[2])
      pt, d1 = jnp.where(neg | pos, c, pt), jnp.where(neg | pos, c[2], d1)
      flag = flag | neg | pos
    return pt, flag

  q1, f1 = update(p1)
  q2, f2 = update(p2)
  return q1, f1, q2, f2


def _tolerance(pt, tl):
  """Convergence tolerance on d cost/d alpha at a point: MuJoCo's gtol, or the roundoff of the
  derivative if that is larger (tl: [gtol, c eps r0, c eps r1], `_ROUNDOFF`)."""
  return jnp.maximum(tl[..., 0], tl[..., 1] + tl[..., 2] * jnp.abs(pt[..., 0]))


def _ls_one(st, qa, tl, dirn, lsmax: int):
  """One island's step of the one-sided phase, given qa: evaluations at (the Newton point of
  p1, the midpoint of p1 and p2). Islands in another phase keep their state."""
  phase, p1, p2, p1n, p2n, it, res = _unpack(st)
  q = qa[0]
  # step to the Newton point of p1 while the slope keeps its sign; a Newton point that equals
  # p1 (a step below half an ulp of alpha) would repeat p1 until the budget runs out, which
  # ends as p1: stop there at once
  desc = p1[2] * dirn <= -_tolerance(p1, tl)
  qconv = jnp.abs(q[2]) < _tolerance(q, tl)
  fail = (it >= lsmax) | (desc & ~qconv & (q[0] == p1[0]))  # could not bracket: return p1
  body = _pack(jnp.where(qconv, _DONE, _ONE), q, p1, p1n, p2n, it + 1, jnp.where(qconv, q, res))
  # bracketed from here: p1's Newton point is q (just evaluated), p2's is p1
  leave = _pack(jnp.where(fail, _DONE, _BRACKET), p1, p2, jnp.where(fail, p1n, q),
                jnp.where(fail, p2n, p1), it + jnp.where(fail, 0, 1), jnp.where(fail, p1, res))
  return jnp.where(phase == _ONE, jnp.where(desc & ~fail, body, leave), st)


def _ls_bracket(st, qa, qb, brk, tl, lsmax: int):
  """One island's step of the bracketed phase, given its evaluations: qa[1] at the bracket
  midpoint, qb at the Newton points of the updated brackets (`brk`). Islands in another
  phase keep their state."""
  phase, p1, p2, p1n, p2n, it, res = _unpack(st)
  pmid = qa[1]
  ok = [jnp.abs(c[2]) < _tolerance(c, tl) for c in (p1n, p2n, pmid)]
  # the first of the converged candidates of least cost (argmin's choice, NaN first)
  best, least = p1n, jnp.where(ok[0], p1n[1], jnp.inf)
  for c, k in ((p2n, ok[1]), (pmid, ok[2])):
    cost = jnp.where(k, c[1], jnp.inf)
    take = (cost < least) | (jnp.isnan(cost) & ~jnp.isnan(least))
    best, least = jnp.where(take, c, best), jnp.where(take, cost, least)
  q1, f1, q2, f2 = brk
  q1n = jnp.where(f1, qb[0], p1n)
  q2n = jnp.where(f2, qb[1], p2n)
  stuck = ~f1 & ~f2  # no update possible: numerical accuracy reached, use the midpoint
  it2 = it + 1 + f1.astype(it.dtype) + f2.astype(it.dtype)
  moved = _pack(jnp.where(stuck, _DONE, _BRACKET), q1, q2, q1n, q2n, it2,
                jnp.where(stuck, pmid, res))
  found = _pack(_DONE, p1, p2, p1n, p2n, it + 1, best)
  over = _pack(_DONE, p1, p2, p1n, p2n, it, _ls_final_choice(p1, p2))
  brkt = jnp.where(it < lsmax, jnp.where(ok[0] | ok[1] | ok[2], found, moved), over)
  return jnp.where(phase == _BRACKET, brkt, st)


def _linesearch(p: Problem, isl: Islands, pr: _Prep, snorm, gtol, ls_iterations: int):
  """PrimalSearch: MuJoCo 4.0's exact Newton-bracketing line search, one per island.

  snorm, gtol: (ni,). Returns each island's chosen point (ni, 4) [alpha, cost(alpha) -
  cost(0), d1, d2] (alpha = 0: no step) and its loop trips (ni,). As in MuJoCo 4.0 the first
  Newton step is kept even when it raises the cost (no fallback to alpha = 0), the bracket
  starts from it, and when the evaluation budget runs out during the one-sided phase the last
  Newton point is returned, better or not; the bracketed phase then returns the better bracket
  end only if it decreases the cost.

  The while-loops of PrimalSearch become a loop of at most `ls_iterations` steps over a small
  state machine per island (one-sided phase, bracketed phase, done); every step that does not
  finish spends at least one of the `ls_iterations` evaluations, so that many steps always
  reach MuJoCo's return value. Each step evaluates the candidates of both phases for every
  island at once (one pass over the rows) and selects, so the body has no branches (as under
  vmap anyway); an island that is done keeps its state.

  Roundoff (float32): a derivative counts as converged below MuJoCo's gtol or below the
  roundoff of its own evaluation (`_tolerance`), whichever is larger, and a one-sided Newton
  point that does not move ends the search as MuJoCo's would once its budget ran out (with p1).
  In float64 gtol is far above the roundoff, so the search is MuJoCo's; in float32 gtol is
  usually below it, and without these tests a search could follow roundoff to its budget (a
  batched while loop pays the slowest world's trips).
  """
  ev = lambda a: jnp.swapaxes(_evaluate(p, isl, pr, a), 0, 1)  # noqa: E731  (k, ni)->(ni, k, 4)
  lsmax = ls_iterations
  p0 = ev(jnp.zeros((1, isl.ni), snorm.dtype))[:, 0]
  p1 = ev(_newton_pt(p0)[None])[:, 0]
  small = snorm < MINVAL
  eps = _ROUNDOFF * jnp.finfo(p0.dtype).eps
  tl = jnp.stack([gtol, eps * pr.err[:, 0], eps * pr.err[:, 1]], axis=1)
  conv = jnp.abs(p1[:, 2]) < _tolerance(p1, tl)
  dirn = jnp.where(p1[:, 2] < 0, 1.0, -1.0)
  vm = jax.vmap

  def step(_, carry):
    st, trips = carry
    phase, p1, p2 = _unpack(st)[:3]
    trips = trips + (phase != _DONE).astype(jnp.int32)
    # an island that leaves the one-sided phase keeps p1 and p2, so the midpoint evaluated
    # here is already its first bracketed midpoint: both phases' steps run in one trip
    qa = ev(jnp.stack([_newton_pt(p1), 0.5 * (p1[:, 0] + p2[:, 0])]))
    st = vm(lambda s, a, g, d: _ls_one(s, a, g, d, lsmax))(st, qa, tl, dirn)
    brk = vm(_ls_brackets)(st, qa)
    qb = ev(jnp.stack([_newton_pt(brk[0]), _newton_pt(brk[2])]))
    st = vm(lambda s, a, b, k, g: _ls_bracket(s, a, b, k, g, lsmax))(st, qa, qb, brk, tl)
    return st, trips

  zero = jnp.zeros_like(p0)
  two = jnp.full(small.shape, 2, jnp.int32)
  st0 = vm(_pack)(jnp.where(small | conv, _DONE, _ONE), p1, p0, p1, p1, two,
                  jnp.where(small[:, None], zero, p1))
  # the search's values are never differentiated (see differentiable_alpha): stop early
  st, trips = bounded_loop(lsmax, step, batched_like((st0, jnp.zeros(small.shape, jnp.int32)), st0),
                           lambda c: jnp.all(_unpack(c[0])[0] == _DONE), True)
  phase, p1, p2, _, _, _, res = _unpack(st)
  final = vm(_ls_final_choice)(p1, p2)
  return jnp.where((phase == _ONE)[:, None], p1,
                   jnp.where((phase == _BRACKET)[:, None], final, res)), trips


def differentiable_alpha(p: Problem, isl: Islands, pr: _Prep, snorm, gtol,
                          ls_iterations: int):
  """MuJoCo's line-search alpha per island (ni,), with the implicit-function derivative of the
  line minimum; and the search's (stopped) cost decrease cost(0) - cost(alpha).

  The value is exactly `_linesearch`'s. Its derivative is not obtained by unrolling the search
  (a state machine whose branches carry no useful derivative; unrolling it multiplies compile
  time and memory of reverse mode) but from the optimality condition d cost/d alpha = 0 at the
  returned point: d alpha = -d(d1) / d2, written as a zero-valued Newton correction whose
  gradient is exactly that. alpha = 0 (no step) has zero derivative.
  """
  sg = jax.lax.stop_gradient
  pt = sg(_linesearch(sg(p), sg(isl), sg(pr), sg(snorm), sg(gtol), ls_iterations)[0])
  alpha0 = pt[:, 0]
  arrays = {k: v for k, v in p._asdict().items() if isinstance(v, jax.Array)}
  static = {k: v for k, v in p._asdict().items() if not isinstance(v, jax.Array)}

  def correction(alpha, arrays, isl, pr):
    ev = _evaluate(type(p)(**arrays, **static), isl, pr, alpha[None])[0]
    return -ev[:, 2] / ev[:, 3]  # ev[:, 3] >= MINVAL

  # a custom JVP, so that a forward pass that is not differentiated evaluates nothing for it
  @jax.custom_jvp
  def minimum(alpha, arrays, isl, pr):
    return alpha

  @minimum.defjvp
  def minimum_jvp(primals, tangents):
    alpha, *args = primals
    tangent = jax.jvp(lambda *a: correction(alpha, *a), tuple(args), tuple(tangents[1:]))[1]
    return alpha, tangent

  return jnp.where(alpha0 == 0, 0.0, minimum(alpha0, arrays, isl, pr)), -pt[:, 1]
