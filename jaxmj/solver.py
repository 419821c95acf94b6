"""Constraint solvers: MuJoCo's Newton and CG (primal) and PGS (dual), bounded iteration counts.

Every solver follows MuJoCo's engine_solver.c step by step (cost per row type, exact Newton
line search, warm start, termination tests) with static bounds on its loops (`opt.iterations`,
`opt.ls_iterations`): once MuJoCo's loop would have stopped (improvement or gradient below
`opt.tolerance`, or a line search returning alpha = 0), the remaining iterations leave the
carry unchanged, so the result is MuJoCo's and `solver_niter` counts the iterations MuJoCo runs.
Loops whose values are not differentiated (the line search always; the solver iterations with
implicit gradients, the default) stop there instead, as a while_loop bounded by the same
count: same result, and a converged Newton solve costs its few iterations rather than
`opt.iterations` (under vmap, those of the slowest world in the batch).
Newton and CG reproduce MuJoCo 4.0 iterate for iterate (up to roundoff), for any
`ls_iterations`: MuJoCo 4.0's line search evaluates costs shifted by their value at alpha = 0,
keeps its first Newton step, returns the last Newton point when its evaluation budget runs out
(see `_linesearch`), and its measured decrease is the iteration's `improvement`; CG's directions
are Hager-Zhang's (`_cg_beta`); both scale their tests by 1 / trace(qM) at the current state.
MuJoCo 4.0's PGS sweeps are not the published ones this module follows; converged PGS results
agree with MuJoCo's optimum. MuJoCo's island decomposition (`<flag island>`, on by default) is
not reproduced: rows are solved as one problem, as MuJoCo does with islands disabled.

Derivatives: by default (`implicit_grad=True`) the loops run on stopped values and the outputs
carry the implicit-function derivative of the optimum (see `solve_arrays`); with
`implicit_grad=False` reverse mode differentiates the unrolled iterations. Either way every
division and square root that a branch not taken could evaluate at 0 (zero search direction,
zero curvature, zero tangential velocity) is guarded on both sides of its `where`, so gradients
stay finite also when no constraint is active.

Rows with `efc_active` False are absent: their force is 0, their state SATISFIED and they add
nothing to the cost, gradient, Hessian or Delassus matrix. The row layout is MuJoCo's: one row
per equality / friction / limit / frictionless-contact / pyramid-edge constraint, and `dim`
consecutive rows (normal first) per elliptic contact; the elliptic groups are static (from the
contact slots' `efc_address` and `dim`).

Entry points: `solve(m, d)` (Data in, Data out) and `solve_arrays(...)` (plain arrays, the same
algorithm; `solve` wraps it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import mass
from jaxmj.types import Cone, ConstraintState, ConstraintType, Data, DisableBit, Model, Solver

MINVAL = 1e-15  # mjMINVAL

_SAT = int(ConstraintState.SATISFIED)
_QUAD = int(ConstraintState.QUADRATIC)
_LNEG = int(ConstraintState.LINEARNEG)
_LPOS = int(ConstraintState.LINEARPOS)
_CONE = int(ConstraintState.CONE)


class SolverResult(NamedTuple):
  """What a solver returns (the Data fields of the same names)."""

  qacc: jax.Array  # (nv,)
  efc_force: jax.Array  # (nefc,)
  efc_state: jax.Array  # (nefc,) int32 ConstraintState
  qfrc_constraint: jax.Array  # (nv,)  efc_J' efc_force
  solver_niter: jax.Array  # () int32
  solver_improvement: jax.Array  # ()  scaled cost decrease of the last iteration
  solver_gradient: jax.Array  # ()  scaled gradient norm after the last iteration (0 for PGS)


# ------------------------------------------------------------------ small dense linear algebra
#
# SPD solves are written with plain jnp ops (Gauss-Jordan elimination without pivoting, one
# fori_loop step per column) rather than jnp.linalg.cholesky / jax.scipy.linalg.cho_factor /
# solve: the batched LAPACK path (potrf under vmap) has been seen to deadlock on XLA:CPU at large
# batch sizes (MJX, batch 1024), and for the small nv of one world an O(n^3) column loop costs
# little. For an SPD matrix the Gauss-Jordan pivots are exactly the Cholesky pivots (Schur
# complements), so the elimination is as stable as Cholesky and needs no pivoting; a pivot below
# `mindiag` is replaced by `mindiag`, as mju_cholFactor does. One loop (factor and solve fused)
# instead of a factorization plus two triangular substitutions keeps XLA compile times low.


def spd_solve(a: jax.Array, b: jax.Array, mindiag: float = MINVAL, unroll: bool = False):
  """x = a^-1 b for SPD a (n, n); b (n,) or (n, k). Returns (x, full_rank).

  full_rank is False if a pivot fell below `mindiag` (mju_cholFactor's rank test).
  """
  n = a.shape[0]
  vec = b.ndim == 1
  aug = jnp.concatenate([a, b[:, None] if vec else b], axis=1)
  idx = jnp.arange(n)

  def step(j, carry):
    aug, ok = carry
    row = aug[j]
    piv = row[j]
    ok = ok & (piv >= mindiag)
    row = jnp.where(jnp.arange(row.shape[0]) == j, 1.0, row / jnp.maximum(piv, mindiag))
    col = aug[:, j]
    aug = jnp.where((idx == j)[:, None], row[None, :], aug - col[:, None] * row[None, :])
    return aug, ok

  carry = (aug, jnp.array(True))
  if unroll:
    for j in range(n):
      carry = step(j, carry)
  else:
    carry = jax.lax.fori_loop(0, n, step, carry)
  aug, ok = carry
  x = aug[:, n:]
  return (x[:, 0] if vec else x), ok


def _safe_sqrt(x):
  """sqrt(x) for x > 0, else 0, with a finite derivative everywhere."""
  pos = x > 0
  return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


def _safe_div(num, den):
  """num / den where den != 0, else 0 (finite derivative on both sides)."""
  ok = den != 0
  return jnp.where(ok, num / jnp.where(ok, den, 1.0), 0.0)


# ------------------------------------------------------------------ problem description


class Cones(NamedTuple):
  """Static layout of the elliptic contacts: rows (ncone, 6) int, padded with -1; dim (ncone,)."""

  rows: np.ndarray
  dim: np.ndarray


def cone_layout(efc_address, dim) -> Cones:
  """Cones for contacts with condim > 1 (elliptic): rows efc_address .. efc_address+dim-1."""
  efc_address, dim = np.asarray(efc_address, np.int64), np.asarray(dim, np.int64)
  keep = dim > 1
  efc_address, dim = efc_address[keep], dim[keep]
  rows = -np.ones((len(dim), 6), np.int64)
  for c, (a, n) in enumerate(zip(efc_address, dim)):
    rows[c, :n] = np.arange(a, a + n)
  return Cones(rows=rows.astype(np.int32), dim=dim.astype(np.int32))


class _Problem(NamedTuple):
  """Everything the primal solvers need, with inactive rows masked out."""

  M: jax.Array  # (nv, nv)
  qacc_smooth: jax.Array
  qfrc_smooth: jax.Array
  J: jax.Array  # (nefc, nv), inactive rows zeroed
  D: jax.Array  # (nefc,), 0 for inactive rows
  R: jax.Array  # (nefc,)
  aref: jax.Array  # (nefc,), 0 for inactive rows
  floss: jax.Array  # (nefc,), 0 for inactive rows
  active: jax.Array  # (nefc,) bool
  is_eq: jax.Array  # scalar rows by kind (cone rows excluded), all & active
  is_fric: jax.Array
  is_ineq: jax.Array
  cidx: np.ndarray  # (ncone, 6) rows of the cones, padding -> nefc (an extra zero row)
  cmask: np.ndarray  # (ncone, 6) bool, static
  cscale: jax.Array  # (ncone, 6): mu, friction[0..dim-2], 0-padded
  cfric: jax.Array  # (ncone, 6): 0, friction[0..dim-2], 0-padded (PGS's dual cone)
  cmu: jax.Array  # (ncone,)
  cactive: jax.Array  # (ncone,) bool


def _ext(x, fill=0.0):
  """x with one extra trailing entry (a padding slot for cone gathers)."""
  pad = jnp.full((1,) + x.shape[1:], fill, x.dtype)
  return jnp.concatenate([x, pad], axis=0)


def _problem(qM, qacc_smooth, qfrc_smooth, efc_J, efc_D, efc_R, efc_aref, efc_frictionloss,
             efc_type, efc_active, cones, cone_friction, cone_mu) -> _Problem:
  nefc = efc_J.shape[0]
  active = jnp.asarray(efc_active, bool)
  in_cone = np.zeros(nefc, bool)
  ncone = len(cones.dim)
  if ncone:
    in_cone[cones.rows[cones.rows >= 0]] = True
  scalar = active & ~jnp.asarray(in_cone)
  t = jnp.asarray(efc_type)
  is_eq = scalar & (t == ConstraintType.EQUALITY)
  is_fric = scalar & ((t == ConstraintType.FRICTION_DOF) | (t == ConstraintType.FRICTION_TENDON))
  is_ineq = scalar & ~is_eq & ~is_fric
  J = jnp.where(active[:, None], efc_J, 0.0)
  D = jnp.where(active, efc_D, 0.0)
  aref = jnp.where(active, efc_aref, 0.0)
  floss = jnp.where(is_fric, efc_frictionloss, 0.0)
  cidx = np.where(cones.rows >= 0, cones.rows, nefc).astype(np.int32).reshape(ncone, 6)
  cmask = (cones.rows >= 0).reshape(ncone, 6)
  dt = J.dtype
  if ncone:
    fr = jnp.asarray(cone_friction, dt).reshape(ncone, 5)
    mu = jnp.asarray(cone_mu, dt).reshape(ncone)
    tang = jnp.where(jnp.asarray(cmask[:, 1:]), fr, 0.0)
    cscale = jnp.concatenate([mu[:, None], tang], axis=1)
    cfric = jnp.concatenate([jnp.zeros((ncone, 1), dt), tang], axis=1)
    cactive = _ext(active, False)[cidx[:, 0]]
  else:
    cscale = cfric = jnp.zeros((0, 6), dt)
    mu = jnp.zeros((0,), dt)
    cactive = jnp.zeros((0,), bool)
  return _Problem(M=qM, qacc_smooth=qacc_smooth, qfrc_smooth=qfrc_smooth, J=J, D=D,
                  R=jnp.asarray(efc_R, dt), aref=aref, floss=floss, active=active, is_eq=is_eq,
                  is_fric=is_fric, is_ineq=is_ineq, cidx=cidx, cmask=cmask, cscale=cscale,
                  cfric=cfric, cmu=mu, cactive=cactive)


# ------------------------------------------------------------------ primal: constraint update


class _Update(NamedTuple):
  force: jax.Array
  state: jax.Array
  cost: jax.Array  # constraint cost (Gauss not included)
  Dq: jax.Array  # D of QUADRATIC rows (Hessian weights)
  Hc: jax.Array  # (ncone, 6, 6) cone Hessians, 0 unless the cone is in state CONE


def _constraint_update(p: _Problem, jar: jax.Array) -> _Update:
  """mj_constraintUpdate: force, state, cost of each row at jar = J qacc - aref."""
  D, floss = p.D, p.floss
  rf = p.R * floss
  lneg = p.is_fric & (jar <= -rf)
  lpos = p.is_fric & ~lneg & (jar >= rf)
  quad = p.is_eq | (p.is_fric & ~lneg & ~lpos) | (p.is_ineq & (jar < 0))
  force = jnp.where(quad, -D * jar, jnp.where(lneg, floss, jnp.where(lpos, -floss, 0.0)))
  cost = jnp.where(quad, 0.5 * D * jar * jar, 0.0)
  cost += jnp.where(lneg, -0.5 * rf * floss - floss * jar, 0.0)
  cost += jnp.where(lpos, -0.5 * rf * floss + floss * jar, 0.0)
  state = jnp.where(quad, _QUAD, jnp.where(lneg, _LNEG, jnp.where(lpos, _LPOS, _SAT)))
  total = jnp.sum(cost)
  Dq = jnp.where(quad, D, 0.0)
  ncone = p.cidx.shape[0]
  Hc = jnp.zeros((ncone, 6, 6), jar.dtype)
  if ncone:
    jc = _ext(jar)[p.cidx]  # (ncone, 6)
    dc = _ext(D)[p.cidx]
    s, mu = p.cscale, p.cmu
    u = jc * s
    n = u[:, 0]
    tsq = jnp.sum(u[:, 1:] ** 2, axis=1)
    t = _safe_sqrt(tsq)
    tpos = t > 0
    top = (n >= mu * t) | (~tpos & (n >= 0))
    bottom = ~top & ((mu * n + t <= 0) | (~tpos & (n < 0)))
    middle = ~top & ~bottom
    top, bottom, middle = (z & p.cactive for z in (top, bottom, middle))
    dm = _safe_div(dc[:, 0], mu * mu * (1 + mu * mu))
    nmt = n - mu * t
    tsafe = jnp.where(tpos, t, 1.0)
    c_cost = jnp.where(bottom, 0.5 * jnp.sum(dc * jc * jc, axis=1),
                       jnp.where(middle, 0.5 * dm * nmt * nmt, 0.0))
    f0 = -dm * nmt * mu
    fmid = jnp.concatenate([f0[:, None], -(f0 / tsafe)[:, None] * u[:, 1:] * s[:, 1:]], axis=1)
    fc = jnp.where(bottom[:, None], -dc * jc, jnp.where(middle[:, None], fmid, 0.0))
    sc = jnp.where(bottom, _QUAD, jnp.where(middle, _CONE, _SAT))
    rows = jnp.asarray(p.cidx)
    force = _ext(force).at[rows].set(fc)[:-1]
    state = _ext(state).at[rows].set(jnp.broadcast_to(sc[:, None], rows.shape))[:-1]
    state = jnp.where(p.active, state, _SAT)
    Dq = _ext(Dq).at[rows].set(jnp.where(bottom[:, None], dc, 0.0))[:-1]
    total = total + jnp.sum(c_cost)
    # cone Hessian (mj_constraintUpdate with flg_coneHessian), zero outside the middle zone
    eye = jnp.eye(5, dtype=jar.dtype)
    ut = u[:, 1:]
    row0 = jnp.concatenate([jnp.ones((ncone, 1)), -(mu / tsafe)[:, None] * ut], axis=1)
    blk = ((mu * n / tsafe**3)[:, None, None] * ut[:, :, None] * ut[:, None, :]
           + (mu * mu - mu * n / tsafe)[:, None, None] * eye)
    h = jnp.zeros((ncone, 6, 6), jar.dtype).at[:, 0, :].set(row0).at[:, 1:, 0].set(row0[:, 1:])
    h = h.at[:, 1:, 1:].set(blk)
    h = h * (dm[:, None, None] * s[:, :, None] * s[:, None, :])
    Hc = jnp.where(middle[:, None, None], h, 0.0)
  return _Update(force=force, state=state.astype(jnp.int32), cost=total, Dq=Dq, Hc=Hc)


# ------------------------------------------------------------------ primal: line search


class _Prep(NamedTuple):
  """PrimalPrepare: the 1-D cost along qacc + alpha * search, piecewise quadratic per row."""

  gauss: jax.Array  # (2,): linear and quadratic Gauss coefficients (the constant is shifted out)
  quad: jax.Array  # (nefc, 3)
  jar: jax.Array
  jv: jax.Array
  cq: jax.Array  # (ncone, 3) summed row quadratics (bottom zone)
  cu: jax.Array  # (ncone, 6): U0, V0, UU, UV, VV, Dm


def _prepare(p: _Problem, ma, search, mv, jar, jv) -> _Prep:
  gauss = jnp.stack([search @ ma - search @ p.qfrc_smooth, 0.5 * (search @ mv)])
  dj = p.D * jar
  quad = jnp.stack([0.5 * jar * dj, jv * dj, 0.5 * jv * p.D * jv], axis=1)
  ncone = p.cidx.shape[0]
  cq = jnp.zeros((ncone, 3), jar.dtype)
  cu = jnp.zeros((ncone, 6), jar.dtype)
  if ncone:
    cq = jnp.sum(_ext(quad)[p.cidx], axis=1)
    s, mu = p.cscale, p.cmu
    u = _ext(jar)[p.cidx] * s
    v = _ext(jv)[p.cidx] * s
    dm = _safe_div(_ext(p.D)[p.cidx[:, 0]], mu * mu * (1 + mu * mu))
    cu = jnp.stack([u[:, 0], v[:, 0], jnp.sum(u[:, 1:] ** 2, 1), jnp.sum(u[:, 1:] * v[:, 1:], 1),
                    jnp.sum(v[:, 1:] ** 2, 1), dm], axis=1)
  return _Prep(gauss=gauss, quad=quad, jar=jar, jv=jv, cq=cq, cu=cu)


def _friction_cost(x, f, rf, d):
  """Huber cost of friction rows at x = J qacc - aref."""
  return jnp.where((-rf < x) & (x < rf), 0.5 * d * x * x,
                   jnp.where(x <= -rf, f * (-0.5 * rf - x), f * (-0.5 * rf + x)))


def _friction_zone(x, rf):
  return jnp.where((-rf < x) & (x < rf), 0, jnp.where(x <= -rf, -1, 1))


def _cone_zone(n, tsq, mu):
  """Zone of elliptic cones at N, T^2: 1 top, 2 bottom, 3 middle; and safe T."""
  tpos = tsq > 0
  t = _safe_sqrt(tsq)
  zone = jnp.where(tpos, jnp.where(n >= mu * t, 1, jnp.where(mu * n + t <= 0, 2, 3)),
                   jnp.where(n < 0, 2, 1))
  return zone, t, jnp.where(tpos, t, 1.0)


def _evaluate(p: _Problem, pr: _Prep, alpha: jax.Array) -> jax.Array:
  """PrimalEval at each of alpha (k,): rows [alpha, cost, d cost/d alpha, d2 cost/d alpha2].

  MuJoCo 4.0 evaluates the cost shifted by its value at alpha = 0, row by row, so that a small
  decrease of a large total cost is not lost to roundoff: quadratic rows whose state is the
  same at 0 and alpha contribute alpha*q1 + alpha^2*q2, friction rows and cones in the same
  zone their exact difference, rows changing zone the difference of their absolute costs.
  """
  a = alpha[:, None]
  x = pr.jar + a * pr.jv  # (k, nefc)
  floss, rf, dd = p.floss, p.R * p.floss, p.D
  act0 = p.is_ineq & (pr.jar < 0)
  act = p.is_ineq & (x < 0)
  cost0 = jnp.where(act0, pr.quad[:, 0], 0.0)
  use = p.is_eq | act
  q = jnp.einsum("kr,rj->kj", use.astype(x.dtype), pr.quad[:, 1:])  # (k, 2)
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
  d1 = jnp.sum(jnp.where(p.is_fric, fd1, 0.0), axis=1)
  d2 = jnp.sum(jnp.where(fq, dd * pr.jv * pr.jv, 0.0), axis=1)
  cost = jnp.sum(row, axis=1)
  q1 = q[:, 0] + pr.gauss[0]
  q2 = q[:, 1] + pr.gauss[1]
  if p.cidx.shape[0]:
    c, d1c, d2c = _cone_eval(p, pr, a)
    cost, d1, d2 = cost + c, d1 + d1c, d2 + d2c
  cost = cost + alpha * alpha * q2 + alpha * q1
  d1 = d1 + 2 * alpha * q2 + q1
  d2 = d2 + 2 * q2
  d2 = jnp.where(d2 <= 0, MINVAL, d2)
  return jnp.stack([alpha, cost, d1, d2], axis=1)


def _cone_eval(p: _Problem, pr: _Prep, a: jax.Array):
  """Elliptic cones' shifted cost and derivatives at a (k, 1): each (k,)."""
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
  return (jnp.sum(jnp.where(on, dif, 0.0), axis=1), jnp.sum(d1, axis=1), jnp.sum(d2, axis=1))


_ONE, _BRACKET, _DONE = 0, 1, 2


def _loop(n: int, body: Callable, init, done: Callable, early_exit: bool):
  """`fori_loop(0, n, body, init)` for a body that leaves the carry unchanged once
  `done(carry)`; with `early_exit` the same result from a while_loop that stops there (not
  reverse-differentiable, so only for loops whose values are not differentiated)."""
  if not early_exit:
    return jax.lax.fori_loop(0, n, body, init)

  def step(kc):
    k, c = kc
    return k + 1, body(k, c)

  return jax.lax.while_loop(lambda kc: (kc[0] < n) & ~done(kc[1]), step, (0, init))[1]


def _linesearch(p: _Problem, pr: _Prep, snorm, gtol, ls_iterations: int) -> jax.Array:
  """PrimalSearch: MuJoCo 4.0's exact Newton-bracketing line search.

  Returns the chosen point [alpha, cost(alpha) - cost(0), d1, d2] (alpha = 0: no step). As in
  MuJoCo 4.0 the first Newton step is kept even when it raises the cost (no fallback to alpha
  = 0), the bracket starts from it, and when the evaluation budget runs out during the
  one-sided phase the last Newton point is returned, better or not; the bracketed phase then
  returns the better bracket end only if it decreases the cost.

  The while-loops of PrimalSearch become a loop of at most `ls_iterations` steps over a small
  state machine (one-sided phase, bracketed phase, done); every step that does not finish spends
  at least one of the `ls_iterations` evaluations, so that many steps always reach MuJoCo's
  return value. Each step evaluates the candidates of both phases (batched) and selects, so the
  body has no branches (as under vmap anyway).
  """
  ev = lambda a: _evaluate(p, pr, a)  # noqa: E731
  newton = lambda pt: pt[0] - pt[2] / pt[3]  # noqa: E731  (pt[3] >= MINVAL)
  lsmax = ls_iterations
  p0 = ev(jnp.zeros((1,), snorm.dtype))[0]
  p1 = ev(newton(p0)[None])[0]
  zero = jnp.zeros_like(p0)  # "no step": alpha 0, no improvement
  small = snorm < MINVAL
  conv = jnp.abs(p1[2]) < gtol
  dirn = jnp.where(p1[2] < 0, 1.0, -1.0)

  def norm(st):  # fixed dtypes for the loop carry
    phase, p1, p2, p1n, p2n, it, res = st
    return (jnp.asarray(phase, jnp.int32), p1, p2, p1n, p2n, jnp.asarray(it, jnp.int32), res)

  def select(c, a, b):
    return jax.tree.map(lambda x, y: jnp.where(c, x, y), norm(a), norm(b))

  def final_choice(p1, p2):  # costs are relative to alpha = 0
    c1 = (p1[1] <= p2[1]) & (p1[1] < 0)
    c2 = (p2[1] <= p1[1]) & (p2[1] < 0)
    return jnp.where(c1, p1, jnp.where(c2, p2, zero))

  def update_bracket(pt, cands):
    flag = jnp.array(False)
    for c in cands:
      neg = (pt[2] < 0) & (c[2] < 0) & (pt[2] < c[2])
      pos = ~neg & (pt[2] > 0) & (c[2] > 0) & (pt[2] > c[2])
      pt = jnp.where(neg | pos, c, pt)
      flag = flag | neg | pos
    return pt, flag

  def step(_, st):
    phase, p1, p2, p1n, p2n, it, res = st
    qa = ev(jnp.stack([newton(p1), 0.5 * (p1[0] + p2[0])]))
    q, pmid = qa[0], qa[1]

    # one-sided phase: step to the Newton point of p1 while the slope keeps its sign
    loop = (p1[2] * dirn <= -gtol) & (it < lsmax)
    qconv = jnp.abs(q[2]) < gtol
    body = (jnp.where(qconv, _DONE, _ONE), q, p1, p1n, p2n, it + 1, jnp.where(qconv, q, res))
    fail = it >= lsmax  # could not bracket: return p1
    leave = (jnp.where(fail, _DONE, _BRACKET), p1, p2, jnp.where(fail, p1n, q),
             jnp.where(fail, p2n, p1), it + jnp.where(fail, 0, 1), jnp.where(fail, p1, res))
    one = select(loop, body, leave)

    # bracketed phase: midpoint and the Newton points of both bracket ends
    cands = (p1n, p2n, pmid)
    ok = jnp.stack([jnp.abs(c[2]) < gtol for c in cands])
    costs = jnp.where(ok, jnp.stack([c[1] for c in cands]), jnp.inf)
    best = jnp.stack(cands)[jnp.argmin(costs)]
    q1, f1 = update_bracket(p1, cands)
    q2, f2 = update_bracket(p2, cands)
    qb = ev(jnp.stack([newton(q1), newton(q2)]))
    q1n = jnp.where(f1, qb[0], p1n)
    q2n = jnp.where(f2, qb[1], p2n)
    stuck = ~f1 & ~f2  # no update possible: numerical accuracy reached, use the midpoint
    it2 = it + 1 + f1.astype(jnp.int32) + f2.astype(jnp.int32)
    moved = (jnp.where(stuck, _DONE, _BRACKET), q1, q2, q1n, q2n, it2, jnp.where(stuck, pmid, res))
    found = (_DONE, p1, p2, p1n, p2n, it + 1, best)
    over = (_DONE, p1, p2, p1n, p2n, it, final_choice(p1, p2))
    brk = select(it < lsmax, select(jnp.any(ok), found, moved), over)

    return select(phase == _ONE, one, select(phase == _BRACKET, brk, st))

  st0 = norm((jnp.where(small | conv, _DONE, _ONE), p1, p0, p1, p1, 2,
              jnp.where(small, zero, p1)))
  # the search's values are never differentiated (see _differentiable_alpha): stop early
  phase, p1, p2, _, _, _, res = _loop(lsmax, step, st0, lambda st: st[0] == _DONE, True)
  return jnp.where(phase == _ONE, p1, jnp.where(phase == _BRACKET, final_choice(p1, p2), res))


def _differentiable_alpha(p: _Problem, pr: _Prep, snorm, gtol, ls_iterations: int):
  """MuJoCo's line-search alpha, with the implicit-function derivative of the line minimum;
  and the search's (stopped) cost decrease cost(0) - cost(alpha).

  The value is exactly `_linesearch`'s. Its derivative is not obtained by unrolling the search
  (a state machine whose branches carry no useful derivative; unrolling it multiplies compile
  time and memory of reverse mode) but from the optimality condition d cost/d alpha = 0 at the
  returned point: d alpha = -d(d1) / d2, written as a zero-valued Newton correction whose
  gradient is exactly that. alpha = 0 (no step) has zero derivative.
  """
  sg = jax.lax.stop_gradient
  pt = sg(_linesearch(sg(p), sg(pr), sg(snorm), sg(gtol), ls_iterations))
  alpha0 = pt[0]
  ev = _evaluate(p, pr, alpha0[None])[0]
  corr = -ev[2] / ev[3]  # ev[3] >= MINVAL
  return jnp.where(alpha0 == 0, 0.0, alpha0 + (corr - sg(corr))), -pt[1]


# ------------------------------------------------------------------ primal: Newton and CG


def _cg_beta(grad, mgrad, grad_old, mgrad_old, search_old):
  """MuJoCo 4.0's CG direction update: Hager-Zhang, preconditioned by M^-1 (mgrad = M^-1 grad).

  With y = grad - grad_old and d = search_old: beta = (y'M^-1 grad - 2 (y'M^-1 y)(d'grad)/(d'y))
  / (d'y), bounded below by Hager-Zhang's eta_k = -1 / (|d| min(0.01, |grad_old|)); beta may be
  negative (no Polak-Ribiere reset). Matched iterate for iterate against mujoco 4.0.0 with inexact
  line searches (where it differs from Polak-Ribiere); the lower bound was not active there.
  """
  y = grad - grad_old
  my = mgrad - mgrad_old
  dy = search_old @ y
  dys = jnp.where(dy == 0, 1.0, dy)
  beta = jnp.where(dy == 0, 0.0, (my @ grad - 2 * (y @ my) * (search_old @ grad) / dys) / dys)
  lower = -1.0 / jnp.maximum(MINVAL, _safe_sqrt(search_old @ search_old)
                             * jnp.minimum(0.01, _safe_sqrt(grad_old @ grad_old)))
  return jnp.maximum(beta, lower)


def _primal(p: _Problem, qacc0, newton: bool, iterations: int, ls_iterations: int, tolerance,
            ls_tolerance, scale, solve_m: Callable, early_exit: bool) -> SolverResult:
  """mj_solPrimal (Newton or CG) from qacc0 (already warm-started).

  MuJoCo runs update(qacc0), then per iteration: line search, move, update, count, test. Here
  each of iterations + 1 loop steps runs update at the current qacc (which for a step after a
  move is MuJoCo's post-move update: count it, test termination), then the new direction, line
  search and move unless done; one copy of the update keeps the traced graph small. The last
  step never moves, so the final force and state belong to the final qacc.
  """

  def update(qacc, ma, jar):
    u = _constraint_update(p, jar)
    qfrc_c = p.J.T @ u.force
    grad = ma - p.qfrc_smooth - qfrc_c
    if newton:
      h = p.M + p.J.T @ (u.Dq[:, None] * p.J)
      if p.cidx.shape[0]:
        jc = _ext(p.J)[p.cidx]  # (ncone, 6, nv)
        h = h + jnp.einsum("cin,cij,cjm->nm", jc, u.Hc, jc)
      mgrad, _ = spd_solve(h, grad)
    else:
      mgrad = solve_m(grad)
    return u, grad, mgrad

  tol_ls = tolerance * ls_tolerance
  nv = qacc0.shape[0]
  z = jnp.zeros((), qacc0.dtype)
  carry0 = dict(qacc=qacc0, ma=p.M @ qacc0, jar=p.J @ qacc0 - p.aref, search=jnp.zeros(nv),
                lsimp=z, grad=jnp.zeros(nv), mgrad=jnp.zeros(nv),
                force=jnp.zeros_like(p.aref), state=jnp.zeros(p.aref.shape, jnp.int32),
                done=jnp.array(False), moved=jnp.array(False), niter=jnp.array(0, jnp.int32),
                improvement=z, gradient=z)

  def body(k, c):
    u, grad, mgrad = update(c["qacc"], c["ma"], c["jar"])
    niter = c["niter"] + c["moved"].astype(jnp.int32)
    # MuJoCo 4.0: the improvement is the decrease the line search measured (shifted costs,
    # accurate where the difference of two large totals is not); only a positive one stops
    improvement = c["lsimp"]
    gradient = scale * _safe_sqrt(grad @ grad)
    conv = c["moved"] & (((improvement > 0) & (improvement < tolerance))
                         | (gradient < tolerance))
    done = c["done"] | conv | (niter >= iterations)
    if newton:
      search = -mgrad
    else:
      beta = _cg_beta(grad, mgrad, c["grad"], c["mgrad"], c["search"])
      search = jnp.where(k == 0, -mgrad, -mgrad + beta * c["search"])
    snorm = _safe_sqrt(search @ search)
    gtol = tol_ls * snorm / scale
    mv = p.M @ search
    jv = p.J @ search
    pr = _prepare(p, c["ma"], search, mv, c["jar"], jv)
    alpha, lsimp = _differentiable_alpha(p, pr, snorm, gtol, ls_iterations)
    move = ~done & (alpha != 0)
    step = jnp.where(move, alpha, 0.0)
    return dict(qacc=c["qacc"] + step * search, ma=c["ma"] + step * mv, jar=c["jar"] + step * jv,
                search=search, lsimp=scale * lsimp, grad=grad, mgrad=mgrad, force=u.force,
                state=u.state,
                done=done | (alpha == 0), moved=move, niter=niter,
                # MuJoCo's statistics of an iteration are those of the update after its move
                improvement=jnp.where(c["moved"], improvement, c["improvement"]),
                gradient=jnp.where(c["moved"], gradient, c["gradient"]))

  c = _loop(iterations + 1, body, carry0, lambda c: c["done"], early_exit)
  return SolverResult(qacc=c["qacc"], efc_force=c["force"], efc_state=c["state"],
                      qfrc_constraint=p.J.T @ c["force"], solver_niter=c["niter"],
                      solver_improvement=c["improvement"], solver_gradient=c["gradient"])


# ------------------------------------------------------------------ dual: PGS


def _qcqp(a, b, d, r, live):
  """mju_QCQP: min 0.5 x'Ax + x'b s.t. sum (x_i/d_i)^2 <= r^2 over the `live` dims (of 5).

  Returns (x, constrained). Dead dims get identity rows and zero b, so they stay 0. Like
  mju_QCQP: 20 Newton steps on the multiplier, stopping when the constraint holds
  (val < 1e-10) or the step is below 1e-10; a pivot below 1e-10 gives x = 0, unconstrained.
  """
  dd = jnp.where(live, d, 0.0)
  bs = b * dd
  eye = jnp.eye(5, dtype=a.dtype)
  As = a * dd[:, None] * dd[None, :] + jnp.diag(jnp.where(live, 0.0, 1.0))

  def it(_, carry):
    la, res, done, fail = carry
    pinv, ok = spd_solve(As + la * eye, eye, 1e-10, unroll=True)
    x = -pinv @ bs
    val = x @ x - r * r
    deriv = -2.0 * (x @ (pinv @ x))
    delta = -_safe_div(val, deriv)
    stop = ~ok | (val < 1e-10) | (delta < 1e-10)
    res = jnp.where(done, res, jnp.where(ok, x, 0.0))
    fail = jnp.where(done, fail, ~ok)
    la = jnp.where(done | stop, la, la + delta)
    return la, res, done | stop, fail

  z = jnp.zeros((), a.dtype)
  la, res, _, fail = jax.lax.fori_loop(
    0, 20, it, (z, jnp.zeros(5, a.dtype), jnp.array(False), jnp.array(False)))
  return res * dd, (la != 0) & ~fail


def _dual_state(p: _Problem, force, floss) -> jax.Array:
  """dualState: the constraint state implied by dual forces."""
  is_fric, is_ineq = p.is_fric, p.is_ineq
  st = jnp.where(p.is_eq, _QUAD, _SAT)
  st = jnp.where(is_fric, jnp.where(force <= -floss, _LPOS,
                                    jnp.where(force >= floss, _LNEG, _QUAD)), st)
  st = jnp.where(is_ineq, jnp.where(force <= 0, _SAT, _QUAD), st)
  if p.cidx.shape[0]:
    f = _ext(force)[p.cidx]
    mu = p.cmu
    n = _safe_div(f[:, 0], mu)
    t = _safe_sqrt(jnp.sum(jnp.where(p.cmask[:, 1:], _safe_div(f[:, 1:], p.cfric[:, 1:]), 0.0)
                           ** 2, axis=1))
    sc = jnp.where(mu * n >= t, _SAT, jnp.where(n + mu * t <= 0, _QUAD, _CONE))
    rows = jnp.asarray(p.cidx)
    st = _ext(st).at[rows].set(jnp.broadcast_to(sc[:, None], rows.shape))[:-1]
  return jnp.where(p.active, st, _SAT).astype(jnp.int32)


def _pgs(p: _Problem, force0, ar, b, iterations: int, tolerance, scale, early_exit: bool):
  """mj_solPGS: projected Gauss-Seidel on the dual, sweeping rows (and cones) in row order.

  ar = J M^-1 J' + diag(R) and b = J qacc_smooth - aref (efc_AR, efc_b). Returns (force,
  qfrc_constraint, dual state, iterations run).
  """
  nefc = p.J.shape[0]
  ar = jnp.where(p.active[:, None] & p.active[None, :], ar, 0.0)
  ar = jnp.where(jnp.eye(nefc, dtype=bool) & ~p.active[:, None], 1.0, ar)  # keep 1/diag finite
  ar_ext = jnp.zeros((nefc + 1, nefc + 1), ar.dtype).at[:nefc, :nefc].set(ar)
  b_ext = _ext(b)
  floss = p.floss

  # static block list in row order: ("row", i) or ("cone", c)
  cone_first = {int(r[0]): c for c, r in enumerate(p.cidx)}
  in_cone = np.zeros(nefc + 1, bool)
  in_cone[p.cidx.ravel()] = True
  blocks = []
  for i in range(nefc):
    if i in cone_first:
      blocks.append((1, cone_first[i]))
    elif not in_cone[i]:
      blocks.append((0, i))
  kinds = np.array([k for k, _ in blocks], np.int32)
  ids = np.array([j for _, j in blocks], np.int32)

  def row_update(f, i):
    res = b[i] + ar[i] @ f
    old = f[i]
    aii = ar[i, i]
    fi = old - res / aii
    fi = jnp.where(p.is_fric[i], jnp.clip(fi, -floss[i], floss[i]), fi)
    fi = jnp.where(p.is_ineq[i], jnp.maximum(fi, 0.0), fi)
    delta = fi - old
    change = 0.5 * delta * delta * aii + delta * res
    keep = (change > 1e-10) | ~(p.is_eq[i] | p.is_fric[i] | p.is_ineq[i])
    return f.at[i].set(jnp.where(keep, old, fi)), jnp.where(keep, 0.0, change)

  def cone_update(f, c):
    idx = jnp.asarray(p.cidx)[c]
    fe = _ext(f)
    a = ar_ext[idx][:, idx]  # padded rows / cols are 0
    res = b_ext[idx] + ar_ext[idx] @ fe
    old = fe[idx]
    mask = jnp.asarray(p.cmask)[c]
    fr = p.cfric[c, 1:]
    # normal or ray update
    normal_f = jnp.maximum(old[0] - res[0] / a[0, 0], 0.0)
    f_norm = jnp.zeros(6, f.dtype).at[0].set(normal_f)
    denom = old @ (a @ old)
    x = -_safe_div(old @ res, denom)
    x = jnp.where(old[0] + x * old[0] < 0, -_safe_div(old[0], old[0]), x)
    f_ray = jnp.where(denom >= MINVAL, old + x * old, old)
    fnew = jnp.where(old[0] < MINVAL, f_norm, f_ray)
    # friction update with the normal fixed
    ac = a[1:, 1:]
    bc = res[1:] - ac @ old[1:] + a[1:, 0] * (fnew[0] - old[0])
    v, act = _qcqp(ac, bc, fr, fnew[0], mask[1:])
    ssq = jnp.sum(jnp.where(mask[1:], _safe_div(v * v, fr * fr), 0.0))
    sc = _safe_sqrt(fnew[0] * fnew[0] / jnp.maximum(MINVAL, ssq))
    v = jnp.where(act, v * sc, v)
    fric = jnp.where(fnew[0] < MINVAL, 0.0, v)
    fnew = jnp.where(mask, fnew.at[1:].set(fric), 0.0)
    delta = fnew - old
    change = 0.5 * delta @ (a @ delta) + delta @ res
    keep = (change > 1e-10) | ~p.cactive[c]
    fnew = jnp.where(keep, old, fnew)
    return fe.at[idx].set(fnew)[:-1], jnp.where(keep, 0.0, change)

  has_rows, has_cones = bool(np.any(kinds == 0)), bool(np.any(kinds == 1))

  def block(carry, blk):
    f, improvement = carry
    kind, j = blk
    if has_rows and has_cones:
      f, change = jax.lax.cond(kind == 1, cone_update, row_update, f, j)
    elif has_cones:
      f, change = cone_update(f, j)
    else:
      f, change = row_update(f, j)
    return (f, improvement - change), None

  def sweep(_, c):
    f, done, niter, last = c
    (fn, improvement), _ = jax.lax.scan(block, (f, jnp.zeros((), f.dtype)),
                                        (jnp.asarray(kinds), jnp.asarray(ids)))
    f = jnp.where(done, f, fn)
    niter = niter + jnp.where(done, 0, 1).astype(niter.dtype)
    last = jnp.where(done, last, improvement * scale)
    done = done | (improvement * scale < tolerance)
    return f, done, niter, last

  zero = jnp.zeros((), force0.dtype)
  force, _, niter, improvement = _loop(
    iterations, sweep, (force0, jnp.array(False), jnp.array(0, jnp.int32), zero),
    lambda c: c[1], early_exit)
  force = jnp.where(p.active, force, 0.0)
  qfrc_c = p.J.T @ force
  return force, qfrc_c, _dual_state(p, force, floss), niter, improvement


# ------------------------------------------------------------------ entry points


def solve_arrays(
  qM: jax.Array,
  qacc_smooth: jax.Array,
  qfrc_smooth: jax.Array,
  qacc_warmstart: jax.Array,
  efc_J: jax.Array,
  efc_D: jax.Array,
  efc_R: jax.Array,
  efc_aref: jax.Array,
  efc_frictionloss: jax.Array,
  efc_type: jax.Array,
  efc_active: jax.Array,
  cones: Cones | None = None,
  cone_friction: jax.Array | None = None,
  cone_mu: jax.Array | None = None,
  *,
  solver: Solver = Solver.NEWTON,
  iterations: int = 100,
  ls_iterations: int = 50,
  tolerance=1e-8,
  ls_tolerance=0.01,
  meaninertia=None,
  warmstart: bool = True,
  solve_m: Callable[[jax.Array], jax.Array] | None = None,
  implicit_grad: bool = True,
) -> SolverResult:
  """mj_fwdConstraint's solve on plain arrays (one world): warm start, then PGS / CG / Newton.

  qM: (nv, nv) dense inertia; qacc_smooth, qfrc_smooth, qacc_warmstart: (nv,);
  efc_J: (nefc, nv); efc_D, efc_R, efc_aref, efc_frictionloss: (nefc,); efc_type: (nefc,)
  ConstraintType; efc_active: (nefc,) bool (False rows are absent). Elliptic contacts: `cones`
  (static, see `cone_layout`), their `cone_friction` (ncone, 5) and regularized
  `cone_mu` (ncone,) = friction[0] / sqrt(impratio) (mjContact.mu). Options as in mjOption;
  Newton and CG scale their termination tests and line-search tolerance by 1 / trace(qM) (MuJoCo
  4.0); PGS by 1 / (`meaninertia` nv) (mjStatistic.meaninertia, default mean(diag(qM))).
  `solve_m(x)` = qM^-1 x (default: a dense SPD solve of qM).

  Derivatives (`implicit_grad`, default True): the iterations run under stop_gradient and the
  outputs carry the implicit-function derivative of the optimum they converge to, added as a
  zero-valued Newton correction (qacc + d - stop_gradient(d), d = -H^-1 grad at the solution,
  H = M + J' D_quadratic J + cone Hessians), so values are exactly the solver's and gradients
  are those of the exact constrained acceleration, for all three solvers. This is cheap (no
  backward pass through the loops) and stable; differentiating the unrolled CG/PGS iterates is
  not (CG's unrolled derivative grows without bound as it converges). With
  implicit_grad=False, reverse mode unrolls the fixed iterations instead (the line search still
  contributes its own implicit derivative).
  """
  dt = qM.dtype
  nv, nefc = qM.shape[0], efc_J.shape[0]
  if cones is None:
    cones = Cones(rows=np.zeros((0, 6), np.int32), dim=np.zeros(0, np.int32))
  if nefc == 0:
    z = jnp.zeros((0,), dt)
    return SolverResult(qacc=qacc_smooth, efc_force=z, efc_state=jnp.zeros(0, jnp.int32),
                        qfrc_constraint=jnp.zeros_like(qacc_smooth),
                        solver_niter=jnp.array(0, jnp.int32),
                        solver_improvement=jnp.zeros((), dt), solver_gradient=jnp.zeros((), dt))
  if solve_m is None:
    solve_m = lambda x: spd_solve(qM, x)[0]  # noqa: E731
  if meaninertia is None:
    meaninertia = jnp.mean(jnp.diag(qM))
  trace = jnp.sum(jnp.diag(qM))
  p = _problem(qM, qacc_smooth, qfrc_smooth, efc_J, efc_D, efc_R, efc_aref, efc_frictionloss,
               efc_type, efc_active, cones, cone_friction, cone_mu)
  if implicit_grad:  # the iterations see constants; derivatives come from _implicit below
    sg = jax.lax.stop_gradient
    ps = p._replace(**{k: sg(v) for k, v in p._asdict().items() if isinstance(v, jax.Array)})
    solve_m_loop = lambda x: sg(solve_m(x))  # noqa: E731
    qacc_w, tolerance, meaninertia = sg(qacc_warmstart), sg(tolerance), sg(meaninertia)
    trace = sg(trace)
    ls_tolerance = sg(ls_tolerance)
  else:
    ps, solve_m_loop, qacc_w = p, solve_m, qacc_warmstart
  scale = 1.0 / (meaninertia * max(1, nv))

  if solver == Solver.PGS:
    minv_jt = jax.vmap(solve_m_loop, in_axes=1, out_axes=1)(ps.J.T)
    b = ps.J @ ps.qacc_smooth - ps.aref
    ar = ps.J @ minv_jt + jnp.diag(jnp.where(ps.active, ps.R, 0.0))
    if warmstart:  # primal forces at qacc_warmstart, or zero if their dual cost is positive
      f = _constraint_update(ps, ps.J @ qacc_w - ps.aref).force
      force0 = jnp.where(f @ b + 0.5 * f @ (ar @ f) > 0, 0.0, f)
    else:
      force0 = jnp.zeros(nefc, dt)
    force, qfrc_c, state, niter, improvement = _pgs(ps, force0, ar, b, iterations, tolerance,
                                                    scale, early_exit=implicit_grad)
    res = SolverResult(qacc=ps.qacc_smooth + solve_m_loop(qfrc_c), efc_force=force,
                       efc_state=state, qfrc_constraint=qfrc_c, solver_niter=niter,
                       solver_improvement=improvement,
                       solver_gradient=jnp.zeros((), improvement.dtype))
  else:
    if warmstart:  # the better of qacc_warmstart and qacc_smooth (one batched cost evaluation)
      jars = jnp.stack([ps.J @ qacc_w, ps.J @ ps.qacc_smooth]) - ps.aref
      costs = jax.vmap(lambda jar: _constraint_update(ps, jar).cost)(jars)
      ma_w = ps.M @ qacc_w
      cost_w = costs[0] + 0.5 * (ma_w - ps.qfrc_smooth) @ (qacc_w - ps.qacc_smooth)
      qacc0 = jnp.where(cost_w > costs[1], ps.qacc_smooth, qacc_w)
    else:
      qacc0 = ps.qacc_smooth
    res = _primal(ps, qacc0, solver == Solver.NEWTON, iterations, ls_iterations, tolerance,
                  ls_tolerance, 1.0 / trace, solve_m_loop, early_exit=implicit_grad)
  return _implicit(p, res) if implicit_grad else res


def _implicit(p: _Problem, res: SolverResult) -> SolverResult:
  """res with the implicit-function derivative of the optimum (values unchanged).

  At the optimum the primal gradient g(qacc; inputs) = M qacc - qfrc_smooth - J' force(J qacc -
  aref) vanishes, so d qacc = -H^-1 dg with H its generalized Hessian. d = -H^-1 g evaluated at
  the (stopped) solution has exactly that derivative and value ~0; adding d - stop_gradient(d)
  changes no value. The forces then follow from the primal constraint update at qacc.
  """
  sg = jax.lax.stop_gradient
  q = sg(res.qacc)
  u = _constraint_update(p, p.J @ q - p.aref)
  grad = p.M @ q - p.qfrc_smooth - p.J.T @ u.force
  h = p.M + p.J.T @ (sg(u.Dq)[:, None] * p.J)
  if p.cidx.shape[0]:
    jc = _ext(p.J)[p.cidx]
    h = h + jnp.einsum("cin,cij,cjm->nm", jc, sg(u.Hc), jc)
  delta, _ = spd_solve(h, -grad)
  qacc = res.qacc + (delta - sg(delta))
  force = _constraint_update(p, p.J @ qacc - p.aref).force
  force = res.efc_force + (force - sg(force))
  return res._replace(qacc=qacc, efc_force=force, qfrc_constraint=p.J.T @ force)


def solve(m: Model, d: Data, *, implicit_grad: bool = True) -> Data:
  """mj_fwdConstraint: the constraint forces for the efc rows in `d` (one world).

  Reads qM, qLD, qLDiagInv, qacc_smooth, qfrc_smooth, qacc_warmstart, efc_J, efc_D, efc_R,
  efc_aref, efc_frictionloss, efc_type, efc_active, contact.friction/dim/efc_address (elliptic).
  Writes qacc, efc_force, efc_state, qfrc_constraint, solver_niter. Solver, cone, iteration
  counts and tolerances from m.opt. Like MuJoCo 4.0's mj_fwdConstraint it leaves
  qacc_warmstart alone: mj_advance (the integrator) copies qacc into it after each step.
  `implicit_grad`: see `solve_arrays`.
  """
  nefc = d.efc_J.shape[0]
  if nefc == 0 or m.opt.disabled(DisableBit.CONSTRAINT):
    return d.replace(qacc=d.qacc_smooth, qfrc_constraint=jnp.zeros_like(d.qacc_smooth),
                     efc_force=jnp.zeros_like(d.efc_force),
                     efc_state=jnp.zeros_like(d.efc_state),
                     solver_niter=jnp.zeros_like(d.solver_niter),
                     solver_improvement=jnp.zeros_like(d.solver_improvement),
                     solver_gradient=jnp.zeros_like(d.solver_gradient))
  cones, fric, mu = None, None, None
  con = d.contact
  if m.opt.cone == Cone.ELLIPTIC and len(con.dim):
    sel = np.asarray(con.dim) > 1
    cones = cone_layout(np.asarray(con.efc_address)[sel], np.asarray(con.dim)[sel])
    fric = con.friction[jnp.asarray(np.flatnonzero(sel))]
    # mjContact.mu: friction[0] * sqrt(R[1] / R[0]) with R[1] = R[0] / impratio
    mu = fric[:, 0] * jnp.sqrt(1.0 / jnp.maximum(MINVAL, m.opt.impratio))
  res = solve_arrays(
    d.qM, d.qacc_smooth, d.qfrc_smooth, d.qacc_warmstart, d.efc_J, d.efc_D, d.efc_R,
    d.efc_aref, d.efc_frictionloss, d.efc_type, d.efc_active, cones, fric, mu,
    solver=Solver(m.opt.solver), iterations=m.opt.iterations,
    ls_iterations=m.opt.ls_iterations, tolerance=m.opt.tolerance,
    ls_tolerance=m.opt.ls_tolerance, meaninertia=jnp.mean(m.dof_M0),
    warmstart=not m.opt.disabled(DisableBit.WARMSTART),
    solve_m=lambda x: mass.solve_m(m, d, x), implicit_grad=implicit_grad,
  )
  return d.replace(qacc=res.qacc, efc_force=res.efc_force,
                   efc_state=res.efc_state, qfrc_constraint=res.qfrc_constraint,
                   solver_niter=res.solver_niter.astype(d.solver_niter.dtype),
                   solver_improvement=jax.lax.stop_gradient(res.solver_improvement),
                   solver_gradient=jax.lax.stop_gradient(res.solver_gradient))
