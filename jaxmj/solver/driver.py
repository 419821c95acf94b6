"""Constraint solvers: MuJoCo's Newton and CG (primal) and PGS (dual), bounded iteration counts.

Every solver follows MuJoCo's engine_solver.c step by step (cost per row type, exact Newton
line search, warm start, termination tests) with static bounds on its loops (`opt.iterations`,
`opt.ls_iterations`): once MuJoCo's loop would have stopped (improvement or gradient below
`opt.tolerance`, a line search returning alpha = 0, for Newton an expected decrease
0.5 g'H^-1 g below `opt.tolerance` after an iteration, or an island already converged at its
warm start: for CG a duality gap 0.5 g'M^-1 g below `opt.tolerance`, for Newton the gradient
norm and the expected decrease), the remaining iterations leave the
carry unchanged, so the result is MuJoCo's and `solver_niter` counts the iterations MuJoCo runs.
Loops whose values are not differentiated (the line search always; the solver iterations with
implicit gradients, the default) stop there instead, as a while_loop bounded by the same
count: same result, and a converged Newton solve costs its few iterations rather than
`opt.iterations` (under vmap, those of the slowest world in the batch).
Newton and CG reproduce MuJoCo 4.0 iterate for iterate (up to roundoff), for any
`ls_iterations`: MuJoCo 4.0's line search evaluates costs shifted by their value at alpha = 0,
keeps its first Newton step, returns the last Newton point when its evaluation budget runs out
(jaxmj/solver/linesearch.py), and its measured decrease is the iteration's `improvement`; CG's
directions are Hager-Zhang's (`_cg_beta`); every solver scales its tests by 1 / trace(qM) at the
current state (over the island's dofs).

Islands (`<flag island>`, on by default; jaxmj/solver/island.py finds them): as MuJoCo 4.0, each
island (trees coupled by active rows) is solved as its own problem after one warm start of the
whole system: dofs in no island take qacc_smooth; Newton and CG run per island directions,
line searches (one step size each), termination tests and statistics, PGS per island
termination and statistics. With fixed shapes all islands iterate together: per-island sums
are products with one-hot island matrices, the Hessian (block diagonal over islands) is
factored once, and an island that has stopped keeps its iterate while others go on; the loop
ends when every island has stopped. With islands disabled all rows form one problem over all
dofs. Converged results are the same either way; at few iterations they differ, and these
follow MuJoCo's island solves iterate for iterate, PGS too: MuJoCo 4.0's PGS sweeps each
island's blocks in a PCG32-shuffled order with Nesterov extrapolation between sweeps, not the
published engine_solver.c loop (read from the 4.0.0 binary: jaxmj/solver/pgs_order.py).

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

from jaxmj.constants import MINVAL
from jaxmj.constraint.driver import jac_products, mul_jac, mul_jac_t
from jaxmj.constraint.layout import efc_layout, unit_rows
from jaxmj.constraint.rows import contact_factors
from jaxmj.linalg import spd_solve
from jaxmj.loops import batch_any, batched_like, bounded_loop, kept
from jaxmj.math import static_mask
from jaxmj.platform import by_platform
from jaxmj.smooth import mass
from jaxmj.solver import island, pgs_order, smoothing, tree_blocks
from jaxmj.solver.linesearch import differentiable_alpha, prepare
from jaxmj.solver.problem import (
  SATISFIED,
  Cones,
  Islands,
  Problem,
  cone_layout,
  constraint_update,
  contact_mu,
  dual_state,
  ext,
  hessian,
  make_islands,
  make_problem,
  qcqp,
  safe_div,
  safe_sqrt,
  seg,
  unit_plan,
)
from jaxmj.types import Cone, Data, DisableBit, Model, Solver


class SolverResult(NamedTuple):
  """What a solver returns (the Data fields of the same names)."""

  qacc: jax.Array  # (nv,)
  efc_force: jax.Array  # (nefc,)
  efc_state: jax.Array  # (nefc,) int32 ConstraintState
  qfrc_constraint: jax.Array  # (nv,)  efc_J' efc_force
  solver_niter: jax.Array  # () int32
  solver_improvement: jax.Array  # ()  scaled cost decrease of the last iteration
  solver_gradient: jax.Array  # ()  scaled gradient norm after the last iteration (0 for PGS)


# ------------------------------------------------------------------ primal: Newton and CG


def _cg_beta(isl: Islands, grad, mgrad, grad_old, mgrad_old, search_old):
  """MuJoCo 4.0's CG direction update per island: Hager-Zhang, preconditioned by M^-1 (mgrad =
  M^-1 grad).

  With y = grad - grad_old and d = search_old: beta = (y'M^-1 grad - 2 (y'M^-1 y)(d'grad)/(d'y))
  / (d'y), bounded below by Hager-Zhang's eta_k = -1 / (|d| min(0.01, |grad_old|)); beta may be
  negative (no Polak-Ribiere reset). Matched iterate for iterate against mujoco 4.0.0 with inexact
  line searches (where it differs from Polak-Ribiere); the lower bound was not active there.
  Every dot product is over one island's dofs.
  """
  dot = lambda a, b: seg(isl.dof, a * b)  # noqa: E731
  y = grad - grad_old
  my = mgrad - mgrad_old
  dy = dot(search_old, y)
  dys = jnp.where(dy == 0, 1.0, dy)
  beta = jnp.where(dy == 0, 0.0,
                   (dot(my, grad) - 2 * dot(y, my) * dot(search_old, grad) / dys) / dys)
  lower = -1.0 / jnp.maximum(MINVAL, safe_sqrt(dot(search_old, search_old))
                             * jnp.minimum(0.01, safe_sqrt(dot(grad_old, grad_old))))
  return jnp.maximum(beta, lower)


def _primal(p: Problem, isl: Islands, qacc0, newton: bool, iterations: int,
            ls_iterations: int, tolerance, ls_tolerance, scale, solve_m: Callable,
            early_exit: bool, blocks: tree_blocks.TreeBlocks | None = None) -> SolverResult:
  """mj_solPrimal (Newton or CG) from qacc0 (already warm-started), on every island at once.

  MuJoCo runs update(qacc0), then per iteration: line search, move, update, count, test. Here
  each of `iterations` loop steps runs update at the current qacc (which for a step after a
  move is MuJoCo's post-move update: count it, test termination), then the new direction, line
  search and move unless done. A last update at the final qacc counts the last move
  and gives the final force, state and statistics; it needs neither a direction nor a line
  search, which a loop step would compute and discard (at iterations=1 that halves the work:
  one Hessian factorization and one line search per solve instead of two of each).

  Islands (mj_solCGNewton per island): the constraint update, Hessian and M^-1 act on all rows
  and dofs together (the Hessian and M are block diagonal over islands, so one factorization
  serves them all); directions, line searches (one step size each), termination and statistics
  are per island (`scale`: (ni,)), and an island that has stopped keeps its iterate while
  others go on. Dofs in no island do not move. `blocks`: the Newton step by kinematic tree
  where no weighted row couples two trees (jaxmj/solver/tree_blocks.py).
  """
  in_isl = jnp.sum(isl.dof, axis=1) > 0

  # named scopes: each phase's share of the step in a profiler trace (see README, Speed)
  @jax.named_scope("constraint_update")
  def gradient_at(ma, jar):
    u = constraint_update(p, jar)
    qfrc_c = p.J_all.T @ u.force
    return u, jnp.where(in_isl, ma - p.qfrc_smooth - qfrc_c, 0.0)

  def newton_direction(u, grad):
    with jax.named_scope("hessian"):
      h = hessian(p, u.Dq, u.Hc)
    with jax.named_scope("hessian_solve"):
      if blocks is None:
        return spd_solve(h, grad)[0]
      return jax.lax.cond(batch_any(tree_blocks.coupled(blocks, h)),
                          lambda: spd_solve(h, grad)[0],
                          lambda: tree_blocks.block_solve(blocks, h, grad))

  def update(qacc, ma, jar):
    u, grad = gradient_at(ma, jar)
    mgrad = newton_direction(u, grad) if newton else solve_m(grad)
    return u, grad, jnp.where(in_isl, mgrad, 0.0)

  tol_ls = tolerance * ls_tolerance
  nv, ni = qacc0.shape[0], isl.ni
  z = jnp.zeros(ni, qacc0.dtype)
  no = jnp.zeros(ni, bool)
  absent = jnp.sum(isl.efc * p.active[:, None], axis=0) == 0  # islands without rows never run
  carry0 = dict(qacc=qacc0, ma=p.M @ qacc0, jar=p.J_all @ qacc0 - p.aref, search=jnp.zeros(nv),
                lsimp=z, grad=jnp.zeros(nv), mgrad=jnp.zeros(nv), done=absent, moved=no,
                niter=jnp.zeros(ni, jnp.int32), improvement=z, gradient=z)
  carry0 = batched_like(carry0, (carry0["jar"], qacc0))  # every entry comes out per world

  def counted(c, grad):
    """The last move counted, with the statistics of the update after it."""
    niter = c["niter"] + c["moved"].astype(jnp.int32)
    # MuJoCo 4.0: the improvement is the decrease the line search measured (shifted costs,
    # accurate where the difference of two large totals is not); only a positive one stops
    improvement = c["lsimp"]
    gradient = scale * safe_sqrt(seg(isl.dof, grad * grad))
    # MuJoCo's statistics of an iteration are those of the update after its move
    stats = dict(improvement=jnp.where(c["moved"], improvement, c["improvement"]),
                 gradient=jnp.where(c["moved"], gradient, c["gradient"]))
    return niter, improvement, gradient, stats

  def body(k, c):
    u, grad, mgrad = update(c["qacc"], c["ma"], c["jar"])
    niter, improvement, gradient, stats = counted(c, grad)
    conv = c["moved"] & (((improvement > 0) & (improvement < tolerance))
                         | (gradient < tolerance))
    # 0.5 g'H^-1 g for Newton (its decrement), 0.5 g'M^-1 g for CG (the duality gap), scaled
    decrease = jnp.maximum(0.5 * scale * seg(isl.dof, grad * mgrad), 0.0)
    if newton:
      # MuJoCo 4.0's Newton also stops once the expected decrease of the next Newton step is
      # below tolerance (read from libmujoco 4.0.0's mj_solPrimal; matched against
      # solver_niter of mj_step)
      conv = conv | (c["moved"] & (decrease < tolerance))
    done = c["done"] | conv | (niter >= iterations)
    # MuJoCo 4.0 runs no iteration on an island already converged at its warm start
    # (mj_solPrimal's zero-iteration exit): CG where the duality gap 0.5 g'M^-1 g is below
    # tolerance, Newton where the gradient norm is too and either the gap or the decrement
    # is. H = M + J'DJ + cone Hessians exceeds M, so the decrement never exceeds the gap and
    # Newton's test is the gradient's and the decrement's (no M solve for the gap)
    start = (decrease < tolerance) & ((gradient < tolerance) if newton else True)
    done = done | ((k == 0) & start)
    if newton:
      search = -mgrad
    else:
      beta = _cg_beta(isl, grad, mgrad, c["grad"], c["mgrad"], c["search"])
      search = jnp.where(k == 0, -mgrad, -mgrad + (isl.dof @ beta) * c["search"])
    snorm = safe_sqrt(seg(isl.dof, search * search))
    gtol = tol_ls * snorm / scale
    with jax.named_scope("linesearch"):
      mv = p.M @ search
      jv = p.J_all @ search
      pr = prepare(p, isl, c["ma"], search, mv, c["jar"], jv)
      # an island that has stopped does not move: its search (a direction that may be all
      # roundoff) ends at once, as for a null direction
      alpha, lsimp = differentiable_alpha(p, isl, pr, jnp.where(done, 0.0, snorm), gtol,
                                          ls_iterations)
    move = ~done & (alpha != 0)
    step = jnp.where(move, alpha, 0.0)
    sv, se = isl.dof @ step, isl.efc @ step
    return dict(qacc=c["qacc"] + sv * search, ma=c["ma"] + sv * mv, jar=c["jar"] + se * jv,
                search=search, lsimp=scale * lsimp, grad=grad, mgrad=mgrad,
                done=done | (alpha == 0), moved=move, niter=niter, **stats)

  c = bounded_loop(iterations, body, carry0, lambda c: jnp.all(c["done"]), early_exit)
  # every island has stopped or spent its iterations: the loop step that would follow moves
  # nothing, so only its update, count and statistics remain
  u, grad = gradient_at(c["ma"], c["jar"])
  niter, _, _, stats = counted(c, grad)
  return SolverResult(qacc=c["qacc"], efc_force=u.force, efc_state=u.state,
                      qfrc_constraint=p.J_all.T @ u.force, solver_niter=niter,
                      solver_improvement=stats["improvement"],
                      solver_gradient=stats["gradient"])


# ------------------------------------------------------------------ dual: PGS


def _project(p: Problem, f):
  """Dual forces projected onto the constraint set, as MuJoCo 4.0's PGS after extrapolating:
  friction loss into [-floss, floss], inequalities >= 0, an elliptic contact with a negative
  normal to 0, else its friction scaled onto the dual cone when outside it."""
  f = jnp.where(p.is_fric, jnp.clip(f, -p.floss, p.floss), f)
  f = jnp.where(p.is_ineq, jnp.maximum(f, 0.0), f)
  if not p.cidx.shape[0]:
    return f
  fc = ext(f)[p.cidx]
  n, t = fc[:, 0], fc[:, 1:]
  s = jnp.sum(jnp.where(p.cmask[:, 1:], safe_div(t * t, p.cfric[:, 1:] ** 2), 0.0), axis=1)
  t = jnp.where((s > n * n)[:, None], t * safe_sqrt(n * n / jnp.maximum(MINVAL, s))[:, None], t)
  proj = jnp.where((n < 0)[:, None], 0.0, jnp.concatenate([n[:, None], t], axis=1))
  proj = jnp.where(p.cactive[:, None] & p.cmask, proj, fc)
  return ext(f).at[jnp.asarray(p.cidx)].set(proj)[:-1]


def _pgs_blocks(cidx: np.ndarray, nefc: int):
  """Static PGS blocks in row order: kind (0 row, 1 elliptic cone), row or cone id, first row."""
  cone_first = {int(r[0]): c for c, r in enumerate(cidx)}
  in_cone = static_mask(nefc + 1, cidx)
  blocks = [(1, cone_first[i]) if i in cone_first else (0, i)
            for i in range(nefc) if i in cone_first or not in_cone[i]]
  kinds = np.array([k for k, _ in blocks], np.int32)
  ids = np.array([j for _, j in blocks], np.int32)
  first = np.array([cidx[j, 0] if k else j for k, j in blocks], np.int32)
  return kinds, ids, first


def _pgs(p: Problem, isl: Islands, force0, ar, b, iterations: int, tolerance, scale,
         early_exit: bool, efc_order):
  """mj_solPGS as MuJoCo 4.0 runs it: projected Gauss-Seidel on the dual over blocks (rows,
  elliptic cones), each sweep in a PCG32-shuffled order, with Nesterov extrapolation and
  adaptive restart between sweeps (jaxmj/solver/pgs_order.py; `efc_order`: (nefc,) keys in
  MuJoCo's row order, static or traced, which rank each island's blocks before the shuffles).

  ar = J M^-1 J' + diag(R) and b = J qacc_smooth - aref (efc_AR, efc_b). Islands (MuJoCo 4.0
  runs PGS per island too): shuffles, extrapolation, improvement, termination (`scale`: (ni,))
  and iteration counts are per island; a sweep updates every row, and the rows of islands that
  have stopped keep their forces (islands do not couple, so this is each island's own sweep).
  Returns (force, qfrc_constraint, dual state, iterations run (ni,), last improvement (ni,)).

  One function, as mj_solPGS is one routine: the sweep, the extrapolation with its restart
  and the per-island bookkeeping share the extended arrays and the block layout built here,
  and the sweep body (the long part) is already its own function of the loop carry.
  """
  nefc = p.J.shape[0]
  ar = jnp.where(p.active[:, None] & p.active[None, :], ar, 0.0)
  ar = jnp.where(jnp.eye(nefc, dtype=bool) & ~p.active[:, None], 1.0, ar)  # keep 1/diag finite
  ar_ext = jnp.zeros((nefc + 1, nefc + 1), ar.dtype).at[:nefc, :nefc].set(ar)
  b_ext = ext(b)
  floss = p.floss

  kinds, ids, first = _pgs_blocks(p.cidx, nefc)
  block_isl = isl.efc[jnp.asarray(first)] * p.active[first][:, None]  # (nblock, ni) one-hot
  bisl = jnp.where(jnp.sum(block_isl, axis=1) > 0, jnp.argmax(block_isl, axis=1), -1)
  rank, count = pgs_order.block_ranks(bisl, efc_order[first], isl.ni)

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
    fe = ext(f)
    a = ar_ext[idx][:, idx]  # padded rows / cols are 0
    res = b_ext[idx] + ar_ext[idx] @ fe
    old = fe[idx]
    mask = jnp.asarray(p.cmask)[c]
    fr = p.cfric[c, 1:]
    # normal or ray update
    normal_f = jnp.maximum(old[0] - res[0] / a[0, 0], 0.0)
    f_norm = jnp.zeros(6, f.dtype).at[0].set(normal_f)
    denom = old @ (a @ old)
    x = -safe_div(old @ res, denom)
    x = jnp.where(old[0] + x * old[0] < 0, -safe_div(old[0], old[0]), x)
    f_ray = jnp.where(denom >= MINVAL, old + x * old, old)
    fnew = jnp.where(old[0] < MINVAL, f_norm, f_ray)
    # friction update with the normal fixed
    ac = a[1:, 1:]
    bc = res[1:] - ac @ old[1:] + a[1:, 0] * (fnew[0] - old[0])
    v, act = qcqp(ac, bc, fr, fnew[0], mask[1:])
    ssq = jnp.sum(jnp.where(mask[1:], safe_div(v * v, fr * fr), 0.0))
    sc = safe_sqrt(fnew[0] * fnew[0] / jnp.maximum(MINVAL, ssq))
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
    kind, j, onehot = blk
    if has_rows and has_cones:
      f, change = jax.lax.cond(kind == 1, cone_update, row_update, f, j)
    elif has_cones:
      f, change = cone_update(f, j)
    else:
      f, change = row_update(f, j)
    return (f, improvement - change * onehot), None

  def sweep(_, c):
    f, done, niter, last, prev, k, perm, hi, lo = c
    beta = (k - 1).astype(f.dtype) / (k + 2).astype(f.dtype)
    ex = (niter > 0) & (beta > 0) & ~done
    row_ex = isl.efc @ ex.astype(f.dtype) > 0
    start = isl.efc @ jnp.where(ex, beta, 0.0) * (f - prev) + f
    start = jnp.where(row_ex, _project(p, start), f)
    perm, hi, lo = pgs_order.shuffle(perm, hi, lo, count, ~done & (count >= 2))
    order = pgs_order.sweep_order(perm, rank, bisl)
    (fn, improvement), _ = jax.lax.scan(block, (start, jnp.zeros(isl.ni, f.dtype)),
                                        (jnp.asarray(kinds)[order], jnp.asarray(ids)[order],
                                         block_isl[order]))
    restart = (niter > 0) & (seg(isl.efc, (fn - start) * (start - f)) < 0)
    k = jnp.where(done, k, jnp.where(restart, 0, k + 1))
    fn = jnp.where(isl.efc @ done.astype(f.dtype) > 0, f, fn)
    niter = niter + jnp.where(done, 0, 1).astype(niter.dtype)
    last = jnp.where(done, last, improvement * scale)
    done = done | (improvement * scale < tolerance)
    return fn, done, niter, last, f, k, perm, hi, lo

  absent = jnp.sum(isl.efc * p.active[:, None], axis=0) == 0  # islands without rows never run
  zero = jnp.zeros(isl.ni, force0.dtype)
  izero = jnp.zeros(isl.ni, jnp.int32)
  carry = (force0, absent, izero, zero, force0, izero, *pgs_order.init_state(isl.ni, len(kinds)))
  force, _, niter, improvement, *_ = bounded_loop(iterations, sweep, carry,
                                                  lambda c: jnp.all(c[1]), early_exit)
  force = jnp.where(p.active, force, 0.0)
  qfrc_c = p.J.T @ force
  return force, qfrc_c, dual_state(p, force, floss), niter, improvement


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
  warmstart: bool = True,
  solve_m: Callable[[jax.Array], jax.Array] | None = None,
  implicit_grad: bool = True,
  dof_island: jax.Array | None = None,
  efc_island: jax.Array | None = None,
  nisland_max: int = 1,
  efc_order: np.ndarray | jax.Array | None = None,
  efc_soft_weight: jax.Array | None = None,
  mul_m: tuple[Callable, tuple] | None = None,
  mul_j: tuple[Callable, Callable, tuple] | None = None,
  slip_pairs: smoothing.SlipPairs | None = None,
  inv_m: tuple[Callable, tuple] | None = None,
  tree_blocks_plan: tree_blocks.TreeBlocks | None = None,
  unit_rows: tuple[np.ndarray, np.ndarray] | None = None,
) -> SolverResult:
  """mj_fwdConstraint's solve on plain arrays (one world): warm start, then PGS / CG / Newton.

  qM: (nv, nv) dense inertia; qacc_smooth, qfrc_smooth, qacc_warmstart: (nv,);
  efc_J: (nefc, nv); efc_D, efc_R, efc_aref, efc_frictionloss: (nefc,); efc_type: (nefc,)
  ConstraintType; efc_active: (nefc,) bool (False rows are absent). Elliptic contacts: `cones`
  (static, see `cone_layout`), their `cone_friction` (ncone, 5) and regularized
  `cone_mu` (ncone,) = friction[0] / sqrt(impratio) (mjContact.mu). Options as in mjOption;
  every solver scales its termination tests (and Newton / CG their line-search tolerance) by
  1 / trace(qM) over the island's dofs at the current state (MuJoCo 4.0).
  `solve_m(x)` = qM^-1 x (default: a dense SPD solve of qM).

  Islands (jaxmj/solver/island.py): `dof_island` (nv,) and `efc_island` (nefc,) (-1: in none) with
  at most `nisland_max` islands (static) solve each island as its own problem, as MuJoCo 4.0
  does: warm start over the whole system, then dofs in no island take qacc_smooth and each
  island iterates (own directions, step sizes, termination) until it stops. Without them the
  rows form one problem over all dofs (MuJoCo with islands disabled). Statistics
  (solver_niter, solver_improvement, solver_gradient) are per island: (nisland_max,).
  `efc_order` (nefc,): keys in MuJoCo's order of the rows, static or traced (PGS's blocks are
  ranked by them before MuJoCo 4.0 shuffles them; default: the rows' own order, as when
  they are MuJoCo's rows).

  Derivatives (`implicit_grad`, default True): the iterations run under stop_gradient and the
  outputs carry the implicit-function derivative of the optimum they converge to, added as a
  zero-valued Newton correction (qacc + d - stop_gradient(d), d = -H^-1 grad at the solution,
  H = M + J' D_quadratic J + cone Hessians), so values are exactly the solver's and gradients
  are those of the exact constrained acceleration, for all three solvers. This is cheap (no
  backward pass through the loops) and stable; differentiating the unrolled CG/PGS iterates is
  not (CG's unrolled derivative grows without bound as it converges). With
  implicit_grad=False, reverse mode unrolls the fixed iterations instead (the line search still
  contributes its own implicit derivative). `efc_soft_weight` (nefc,): contact smoothing of
  the implicit derivative (jaxmj/solver/smoothing.py), None: exact. `mul_m` (fn, args): qM x
  = fn(*args, x), whose derivative in args the implicit derivative takes for dqM qacc
  instead of qM's tangent (smooth/mass.py's mul_m_tree: no nv^2 tangent); None: qM's.
  `mul_j` (mul, mul_t, factors): efc_J x = mul(factors, x), efc_J' y = mul_t(factors, y)
  (constraint/driver.py's jac_products), whose derivatives in the factors the implicit
  derivative takes for dJ qacc and dJ' force instead of efc_J's tangent (not read); None:
  efc_J's. Neither applies to the soft rows' share (efc_soft_weight). `slip_pairs`:
  static-friction smoothing of the implicit derivative (smoothing.slip), None: exact.
  `inv_m` (fn, args): qM^-1 x = fn(*args, x) for a tangent x, linear and transposable
  (smooth/mass.py's solve_tangent on qM's factor). With it, on the CPU the implicit
  derivative takes H = M, neither forming the rows' Hessian nor inverting it, when no row
  has a Hessian weight (Dq, cones) in the world, or under vmap in the whole batch
  (loops.batch_any); other platforms keep one program (a branch costs a GPU a host sync).
  None: H^-1 always. `tree_blocks_plan` (static, `tree_blocks.plan`): Newton's step solved
  tree by tree where no weighted row couples two trees (in the world, or under vmap in
  the whole batch); None: one dense step. `unit_rows` (rows, dofs), static: rows whose
  Jacobian is a single +-1 on that dof (`constraint.layout.unit_rows`), which the Hessian
  adds to its diagonal instead of taking them through the product J' D J.
  """
  dt = qM.dtype
  nv, nefc = qM.shape[0], efc_J.shape[0]
  islands = dof_island is not None
  ni = nisland_max if islands else 1
  if cones is None:
    cones = Cones(rows=np.zeros((0, 6), np.int32), dim=np.zeros(0, np.int32))
  if nefc == 0:
    z = jnp.zeros((0,), dt)
    return SolverResult(qacc=qacc_smooth, efc_force=z, efc_state=jnp.zeros(0, jnp.int32),
                        qfrc_constraint=jnp.zeros_like(qacc_smooth),
                        solver_niter=jnp.zeros(ni, jnp.int32),
                        solver_improvement=jnp.zeros(ni, dt), solver_gradient=jnp.zeros(ni, dt))
  if solve_m is None:
    solve_m = lambda x: spd_solve(qM, x)[0]  # noqa: E731
  if not implicit_grad:
    mul_m = mul_j = inv_m = None
  sg = jax.lax.stop_gradient
  p = make_problem(qM if mul_m is None else sg(qM), qacc_smooth, qfrc_smooth,
                   efc_J if mul_j is None else sg(efc_J), efc_D, efc_R, efc_aref,
                   efc_frictionloss, efc_type, efc_active, cones, cone_friction, cone_mu,
                   None if unit_rows is None else unit_plan(*unit_rows, nefc, nv))
  if not islands:  # one island holding every dof, or none without active rows (nefc = 0)
    dof_island = jnp.where(jnp.any(p.active), jnp.zeros(nv, jnp.int32), -1)
    efc_island = jnp.zeros(nefc, jnp.int32)
  isl = make_islands(dof_island, efc_island, ni, p.cidx, dt)
  if implicit_grad:  # the iterations see constants; derivatives come from _implicit below
    ps = p._replace(**{k: sg(v) for k, v in p._asdict().items() if isinstance(v, jax.Array)})
    solve_m_loop = lambda x: sg(solve_m(x))  # noqa: E731
    qacc_w, tolerance, ls_tolerance = sg(qacc_warmstart), sg(tolerance), sg(ls_tolerance)
  else:
    ps, solve_m_loop, qacc_w = p, solve_m, qacc_warmstart
  inertia = jax.lax.stop_gradient(seg(isl.dof, jnp.diag(qM)))
  scale = 1.0 / jnp.where(inertia > 0, inertia, 1.0)  # mj_solCGNewton's island_inertia

  if solver == Solver.PGS:
    minv_jt = jax.vmap(solve_m_loop, in_axes=1, out_axes=1)(ps.J.T)
    b = ps.J @ ps.qacc_smooth - ps.aref
    ar = ps.J @ minv_jt + jnp.diag(jnp.where(ps.active, ps.R, 0.0))
    if warmstart:  # primal forces at qacc_warmstart, or zero if their dual cost is positive
      f = constraint_update(ps, ps.J @ qacc_w - ps.aref).force
      force0 = jnp.where(f @ b + 0.5 * f @ (ar @ f) > 0, 0.0, f)
    else:
      force0 = jnp.zeros(nefc, dt)
    order = np.arange(nefc) if efc_order is None else efc_order
    force, qfrc_c, state, niter, improvement = _pgs(ps, isl, force0, ar, b, iterations,
                                                    tolerance, scale, implicit_grad, order)
    res = SolverResult(qacc=ps.qacc_smooth + solve_m_loop(qfrc_c), efc_force=force,
                       efc_state=state, qfrc_constraint=qfrc_c, solver_niter=niter,
                       solver_improvement=improvement,
                       solver_gradient=jnp.zeros_like(improvement))
  else:
    if warmstart:  # the better of qacc_warmstart and qacc_smooth (one batched cost evaluation)
      with jax.named_scope("warmstart"):
        jars = jnp.stack([ps.J_all @ qacc_w, ps.J_all @ ps.qacc_smooth]) - ps.aref
        costs = jax.vmap(lambda jar: constraint_update(ps, jar).cost)(jars)
        ma_w = ps.M @ qacc_w
        cost_w = costs[0] + 0.5 * (ma_w - ps.qfrc_smooth) @ (qacc_w - ps.qacc_smooth)
        qacc0 = jnp.where(cost_w > costs[1], ps.qacc_smooth, qacc_w)
    else:
      qacc0 = ps.qacc_smooth
    qacc0 = jnp.where(jnp.asarray(dof_island) >= 0, qacc0, ps.qacc_smooth)  # unconstrained
    res = _primal(ps, isl, qacc0, solver == Solver.NEWTON, iterations, ls_iterations,
                  tolerance, ls_tolerance, scale, solve_m_loop, early_exit=implicit_grad,
                  blocks=tree_blocks_plan)
  if not implicit_grad:
    return res
  soft = None
  if efc_soft_weight is not None:
    soft = dict(J=efc_J, aref=efc_aref, D=1.0 / efc_R, w=efc_soft_weight)
  slip = None if slip_pairs is None else (slip_pairs, isl)
  return _implicit(p, res, soft, mul_m, mul_j, slip, inv_m)


@jax.named_scope("implicit_derivative")
def _implicit(p: Problem, res: SolverResult, soft: dict | None = None,
              mul_m: tuple[Callable, tuple] | None = None,
              mul_j: tuple[Callable, Callable, tuple] | None = None,
              slip: tuple[smoothing.SlipPairs, Islands] | None = None,
              inv_m: tuple[Callable, tuple] | None = None) -> SolverResult:
  """res with the implicit-function derivative of the optimum (values unchanged).

  At the optimum the primal gradient g(qacc; inputs) = M qacc - qfrc_smooth - J' force(J qacc -
  aref) vanishes, so d qacc = -H^-1 dg with H its generalized Hessian; the forces follow from
  the primal constraint update at qacc. A custom JVP attaches that derivative, so a forward
  pass that is not differentiated computes nothing for it. `soft`: the smoothed rows
  (smoothing.soft_tangent), whose share is added to that derivative. `mul_m`, `mul_j`,
  `inv_m`: see solve_arrays (then p.M, p.J_all carry no tangent). `slip`: the pyramid pairs
  and the islands, for static-friction smoothing (smoothing.slip). The rows are read unmasked
  (p.J_all: an inactive row's force, force tangent and Hessian weight are 0), so no tangent
  of the masked rows is made.
  """
  sg = jax.lax.stop_gradient
  arrays = {k: v for k, v in p._asdict().items() if isinstance(v, jax.Array)}
  static = {k: v for k, v in p._asdict().items() if not isinstance(v, jax.Array)}
  if soft is not None:
    arrays = dict(arrays, soft=soft)
  if mul_m is not None:
    arrays = dict(arrays, mass=mul_m[1])
    static = dict(static, mul_m=mul_m[0])
  if mul_j is not None:
    arrays = dict(arrays, jac=mul_j[2])
    static = dict(static, mul_j=mul_j[:2])
  if inv_m is not None:
    arrays = dict(arrays, minv=inv_m[1])
    static = dict(static, inv_m=inv_m[0])
  if slip is not None:
    arrays = dict(arrays, isl=(slip[1].dof, slip[1].efc))
    static = dict(static, slip=slip[0])
  qacc, force, qfrc = _optimum(static)(arrays, sg(res.qacc), sg(res.efc_force))
  # kept: the tangents below read the forces, which reverse mode would otherwise recompute
  # from the rows' states in every kernel of efc_J's cotangent ((nefc, nv) each)
  force = kept(force)
  # unmasked rows (an inactive row's force is 0): the same product as _primal's last, once;
  # smoothed rows that are inactive carry force tangents, so theirs must not be masked
  if soft is not None:
    qfrc = _mul_jt(soft["J"], force)
  elif slip is not None:
    qfrc = _jt_force(p.J_all, None if mul_j is None else mul_j[1], arrays.get("jac"), force)
  return res._replace(qacc=qacc, efc_force=force, qfrc_constraint=qfrc)


def _jt_force(J_all: jax.Array, mul_jt, jac, force: jax.Array) -> jax.Array:
  """efc_J' force (nv,): by the formed rows J_all (nefc, nv), or with jac_products by
  `mul_jt` on the factors `jac` (mul_jt None: formed)."""
  return _mul_jt(J_all, force) if mul_jt is None else mul_jac_t(mul_jt, J_all, jac, force)


@jax.custom_jvp
def _mul_jt(J: jax.Array, f: jax.Array) -> jax.Array:
  """J' f (nv,) for J (nefc, nv), f (nefc,). Its tangent takes dJ' f as a weighted sum of
  dJ's rows: as J.T @ f, each tangent of J got a transposed copy on XLA:CPU (box_stack: the
  costliest op of a position tangent)."""
  return J.T @ f


@_mul_jt.defjvp
def _mul_jt_jvp(primals, tangents):
  (J, f), (dJ, df) = primals, tangents
  return J.T @ f, jnp.sum(f[:, None] * dJ, axis=0) + J.T @ df


def _optimum(static: dict) -> Callable:
  """optimum: (arrays, qacc, force) -> (qacc, force, qfrc): qacc and force as given, with
  the implicit derivative of the optimum w.r.t. the problem's arrays (`static`: its numpy
  fields) as their JVP, and qfrc = J' force (nv,) (the same product as before) with the
  tangent of M qacc - qfrc_smooth, which it equals at the optimum (the primal gradient
  vanishes, and the implicit derivative keeps it so: its Hessian is M + d(-J' force)/d
  qacc): dM qacc + M dqacc - dqfrc_smooth, O(nv^2) per tangent where dJ' force + J' dforce
  took two (nefc, nv) products and the forces' tangent; its dM qacc - dqfrc_smooth is the
  one dg reads (as a custom_jvp of its own, qfrc took that derivative of M qacc again per
  tangent: XLA did not merge the two). qfrc None with smoothed rows or static-friction
  smoothing (their forces' tangents have shares outside the Hessian that gives dqacc).
  With arrays["mass"] and static["mul_m"] (see solve_arrays), M q's derivative is
  mul_m's."""
  static = dict(static)
  mul_m = static.pop("mul_m", None)
  mul_j = static.pop("mul_j", None)
  pairs = static.pop("slip", None)
  inv_m = static.pop("inv_m", None)

  def problem(arrays):
    return Problem(**{k: v for k, v in arrays.items()
                      if k not in ("soft", "mass", "jac", "isl", "minv")}, **static)

  def jar_at(arrays, q):
    pa = problem(arrays)
    jq = pa.J_all @ q if mul_j is None else mul_jac(mul_j[0], pa.J_all, arrays["jac"], q)
    return jq - pa.aref

  def mul_m_at(arrays, q):
    return problem(arrays).M @ q if mul_m is None else mul_m(*arrays["mass"], q)

  def jt_force(arrays, force):
    mul_jt = None if mul_j is None else mul_j[1]
    return _jt_force(problem(arrays).J_all, mul_jt, arrays.get("jac"), force)

  def stationary(arrays):  # whether qfrc's tangent may come from stationarity
    return "soft" not in arrays and pairs is None

  @jax.custom_jvp
  def optimum(arrays, qacc, force):
    return qacc, force, jt_force(arrays, force) if stationary(arrays) else None

  @optimum.defjvp
  def optimum_jvp(primals, tangents):
    arrays, q, force = primals
    darrays = tangents[0]
    pa = problem(arrays)
    jar = jar_at(arrays, q)
    u = constraint_update(pa, jar)

    def hinv_of(extra=None, base=None):
      # H^-1 from the primal alone, so that the tangent is a linear map (transposable); kept,
      # or rematerializing reverse mode (rollout's) would eliminate again in the backward
      # pass. H is formed here, inside solve_h's branch where it has one.
      h = hessian(pa, u.Dq, u.Hc) if base is None else base
      return kept(spd_solve(h if extra is None else h + extra,
                            jnp.eye(h.shape[0], dtype=h.dtype))[0])

    # The forces' tangent split as df = df_rows + dforce/djar (djar + J dq): the rows'
    # weights (D, R, friction loss, cone friction) at fixed jar, then jar's tangent through
    # the Hessian's weights (force = -dcost/djar, so dforce/djar = -(Dq + the cones' Hc)).
    # dJ q then enters once (one outer product per step in reverse mode, where jvps of the
    # force at q, once for the gradient and once for the forces, made two, each a broadcast
    # of the recomputed row states over (nefc, nv)); Dq is kept for the same reason.
    dq_w = kept(u.Dq)
    df_rows = jax.jvp(lambda a: constraint_update(problem(a), jar).force, (arrays,),
                      (darrays,))[1]
    djar = jax.jvp(lambda a: jar_at(a, q), (arrays,), (darrays,))[1]

    def dforce(x):  # dforce/djar x, x (nefc,)
      out = -dq_w * x
      if pa.cidx.shape[0]:
        xc = ext(x)[pa.cidx]  # (ncone, 6)
        out = ext(out).at[pa.cidx].add(-jnp.einsum("cij,cj->ci", u.Hc, xc))[:-1]
      return out

    # dsmooth: the tangent of the primal gradient M q - qfrc_smooth - J' force with the
    # forces held, its first two terms' shared with qfrc's
    dmq = jax.jvp(lambda a: mul_m_at(a, q) - problem(a).qfrc_smooth, (arrays,), (darrays,))[1]
    dsmooth = dmq - jax.jvp(lambda a: jt_force(a, kept(u.force)), (arrays,), (darrays,))[1]
    dg = dsmooth - pa.J_all.T @ (df_rows + dforce(djar))
    if stationary(arrays):
      dq = -solve_h(arrays, pa, u, hinv_of)(dg)
      return ((q, force, jt_force(arrays, force)),
              (dq, df_rows + dforce(djar + pa.J_all @ dq), dmq + mul_m_at(arrays, dq)))
    soft_h, dg_soft, df_soft = None, 0.0, lambda dq: 0.0  # noqa: E731
    if "soft" in arrays:
      soft_h, dg_soft, df_soft = smoothing.soft_tangent(arrays["soft"], darrays["soft"], q,
                                                        u.state == SATISFIED)
    dq = -hinv_of(soft_h) @ (dg + dg_soft)
    df = df_rows + dforce(djar + pa.J_all @ dq) + df_soft(dq)
    if pairs is None:
      return (q, force, None), (dq, df, None)
    # static friction (smoothing.slip): the derivative of the slip mode, in which each
    # pushing contact pushes along its resultant only (rows A J, forces A' f), blended in
    # per island
    sl = smoothing.slip(pairs, u.force, arrays["isl"][1])
    rows = lambda x: sl.rows(pairs, x)  # noqa: E731
    slip_force = lambda x: sl.pool(pairs, df_rows + dforce(rows(x)))  # noqa: E731
    h_slip = hessian(pa._replace(J_all=rows(pa.J_all), unit=None), u.Dq, u.Hc)
    dq_slip = -hinv_of(soft_h, h_slip) @ (dsmooth - pa.J_all.T @ slip_force(djar) + dg_soft)
    df_slip = slip_force(djar + pa.J_all @ dq_slip) + df_soft(dq_slip)
    dof, efc = arrays["isl"]
    return (q, force, None), (dq + (dof @ sl.share) * (dq_slip - dq),
                              df + (efc @ sl.share) * (df_slip - df), None)

  def solve_h(arrays, pa, u, hinv_of):
    """x -> H^-1 x for tangents x. With inv_m, on the CPU: M^-1 x by the mass matrix's
    factor where no row has a Hessian weight (H = M exactly: J' 0 J adds zeros), so that a
    contact-free step neither forms J' D J (the costliest product of a falling humanoid's
    gradient) nor eliminates H. The primal branch and the tangent's read one predicate,
    which reverse mode keeps."""
    if inv_m is None:
      return lambda x: hinv_of() @ x
    weighted = jnp.any(u.Dq != 0)
    if pa.cidx.shape[0]:
      weighted = weighted | jnp.any(u.Hc != 0)
    weighted = by_platform(
      weighted, cpu=batch_any, default=lambda w: jnp.ones((), bool))
    hinv = jax.lax.cond(weighted, hinv_of, lambda: jnp.zeros(pa.M.shape, pa.M.dtype))
    return lambda x: jax.lax.cond(weighted, lambda x: hinv @ x,
                                  lambda x: inv_m(*arrays["minv"], x), x)

  return optimum


GRADS = ("implicit", "unrolled")


def solve(m: Model, d: Data, *, implicit_grad: bool | None = None,
          find_islands: bool = True) -> Data:
  """mj_fwdConstraint: the constraint forces for the efc rows in `d` (one world).

  Reads qM, qLD, qLDiagInv, qacc_smooth, qfrc_smooth, qacc_warmstart, efc_J, efc_D, efc_R,
  efc_aref, efc_frictionloss, efc_type, efc_active, contact.friction/dim/efc_address (elliptic).
  Writes qacc, efc_force, efc_state, qfrc_constraint, the solver statistics and the island
  fields (mj_island, jaxmj/solver/island.py: computed here, from the rows the solve uses). Solver,
  cone, iteration counts, tolerances and the island flag from m.opt. Like MuJoCo 4.0's
  mj_fwdConstraint it leaves qacc_warmstart alone: mj_advance (the integrator) copies qacc
  into it after each step. `implicit_grad`: see `solve_arrays`; None (default) takes it
  from `m.opt.grad` ("implicit" or "unrolled"). `find_islands=False` reads the island
  fields of `d` as they are (the pipeline runs mj_island as a stage of its own).
  Derivatives take dqM x from d's cinert, cdof, ten_J and the contact rows' dJ x, dJ' f
  from d's cdof, subtree_com and contacts (solve_arrays' mul_m, mul_j), not from the
  tangents of d.qM and of d.efc_J's contact rows: those must be crb's and
  make_constraint's, as in the pipeline.
  """
  if implicit_grad is None:
    if m.opt.grad not in GRADS:
      raise ValueError(f"opt.grad must be one of {GRADS}, got {m.opt.grad!r}")
    implicit_grad = m.opt.grad == "implicit"
  t, tf = smoothing.temperature(m), smoothing.friction_temperature(m)
  for name, on in (("grad_smoothing", t), ("grad_smoothing_friction", tf)):
    if on and not implicit_grad:
      raise ValueError(f"opt.{name} smooths the implicit derivative: it needs "
                       "opt.grad='implicit'")
  if tf and m.opt.cone == Cone.ELLIPTIC:
    raise ValueError("opt.grad_smoothing_friction smooths pyramidal cones only")
  nefc = d.efc_J.shape[0]
  if find_islands:
    d = island.island(m, d)
  if nefc == 0 or m.opt.disabled(DisableBit.CONSTRAINT):
    return d.replace(qacc=d.qacc_smooth, qfrc_constraint=jnp.zeros_like(d.qacc_smooth),
                     efc_force=jnp.zeros_like(d.efc_force),
                     efc_state=jnp.zeros_like(d.efc_state),
                     solver_niter=jnp.zeros_like(d.solver_niter),
                     solver_improvement=jnp.zeros_like(d.solver_improvement),
                     solver_gradient=jnp.zeros_like(d.solver_gradient))
  cones, fric, mu, elliptic_normal = None, None, None, None
  con = d.contact
  if m.opt.cone == Cone.ELLIPTIC and len(con.dim):
    sel = np.asarray(con.dim) > 1
    cones = cone_layout(np.asarray(con.efc_address)[sel], np.asarray(con.dim)[sel])
    elliptic_normal = static_mask(nefc, np.asarray(con.efc_address)[sel])
    fric = con.friction[jnp.asarray(np.flatnonzero(sel))]
    mu = contact_mu(d, np.asarray(con.efc_address)[sel], fric)
  islands = {}
  if not m.opt.disabled(DisableBit.ISLAND):
    islands = dict(dof_island=d.dof_island, efc_island=d.efc_island,
                   nisland_max=island.nisland_max(m))
  # the rows' types from the static layout (Data's rows follow it): row kinds the model cannot
  # have (friction loss, equality) then cost nothing in the solver, where a traced efc_type
  # makes every evaluation compute each kind and select
  lay = efc_layout(m, con.dim)
  efc_type = lay.efc_type if lay.nefc == nefc else d.efc_type
  if tf and lay.nefc != nefc:
    raise ValueError("opt.grad_smoothing_friction needs the efc rows of make_constraint")
  mul_j = None
  if m.opt.jac_products and lay.nefc == nefc and lay.nc and not t:  # see solve_arrays
    mul_j = jac_products(m, lay, d.efc_J[:nefc - lay.nc], contact_factors(m, d, lay), d.cdof)
  res = solve_arrays(
    d.qM, d.qacc_smooth, d.qfrc_smooth, d.qacc_warmstart, d.efc_J, d.efc_D, d.efc_R,
    d.efc_aref, d.efc_frictionloss, efc_type, d.efc_active, cones, fric, mu,
    solver=Solver(m.opt.solver), iterations=m.opt.iterations,
    ls_iterations=m.opt.ls_iterations, tolerance=m.opt.tolerance,
    ls_tolerance=m.opt.ls_tolerance, warmstart=not m.opt.disabled(DisableBit.WARMSTART),
    solve_m=lambda x: mass.solve_m(m, d, x), implicit_grad=implicit_grad, **islands,
    mul_m=(mass.mul_m_tree, (m, d.cinert, d.cdof, d.ten_J)),  # m's leaves differentiate
    inv_m=(mass.solve_tangent, (m, d.qLD, d.qLDiagInv)),
    mul_j=mul_j,
    efc_order=pgs_order.mujoco_efc_order(m, con) if m.opt.solver == Solver.PGS else None,
    efc_soft_weight=smoothing.row_weights(d.efc_type, d.efc_pos, d.efc_margin, t,
                                          elliptic_normal) if t else None,
    slip_pairs=smoothing.slip_pairs(lay, tf) if tf else None,
    tree_blocks_plan=tree_blocks.plan(m) if m.opt.solver == Solver.NEWTON else None,
    unit_rows=unit_rows(lay, m.jnt_dofadr) if lay.nefc == nefc else None,
  )
  return d.replace(qacc=res.qacc, efc_force=res.efc_force,
                   efc_state=res.efc_state, qfrc_constraint=res.qfrc_constraint,
                   solver_niter=res.solver_niter.astype(d.solver_niter.dtype),
                   solver_improvement=jax.lax.stop_gradient(res.solver_improvement),
                   solver_gradient=jax.lax.stop_gradient(res.solver_gradient))
