"""The noslip post-processing solver (mj_solNoSlip), run after the main constraint solver when
`opt.noslip_iterations` > 0.

It keeps the main solver's normal forces (and equality and limit forces) and re-solves only the
friction forces (friction-loss rows and contact friction) by Gauss-Seidel sweeps on the dual
problem without regularization, A = J M^-1 J' instead of J M^-1 J' + diag(R), so that the
friction cannot slip by the soft constraint's compliance. Then qfrc_constraint = J' force and
qacc = qacc_smooth + M^-1 qfrc_constraint, and efc_state is the dual state of the forces.

Each sweep visits, in MuJoCo's row order, every friction-loss row (a scalar update clamped to
[-frictionloss, frictionloss]), then every contact: a pyramidal contact by pairs of opposing
edges (the pair's sum held fixed, its split minimized on [-mid, mid]), an elliptic one by its
friction rows at once (a QCQP on the cone with the normal force fixed). Unlike MuJoCo 4.0's
PGS, the noslip sweeps are neither shuffled nor extrapolated (the published engine_solver.c
loop); like its main solvers, MuJoCo 4.0 runs noslip per island: each island stops on its own
once its sweep's improvement, scaled by 1 / trace of the island's inertia, is below
`opt.noslip_tolerance`, and adds its sweeps to its solver_niter entry. Islands do not couple,
so with fixed shapes one sweep over all rows serves all islands, an island that has stopped
keeping its forces. All of this was confirmed against mujoco 4.0.0 (tests/test_noslip.py).

The iteration count is static (`opt.noslip_iterations`); sweeps after an island's early stop
leave its forces unchanged. The sweeps are plain jax ops, so they jit and vmap. Derivatives
follow `opt.grad` as the main solver's do: "implicit" (default) runs the sweeps on stopped
values and attaches the implicit-function derivative of their fixed point (`_fixed_point`:
memory independent of `noslip_iterations`), "unrolled" differentiates the sweeps as run.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.constraint.layout import efc_layout
from jaxmj.math import static_mask
from jaxmj.smooth import mass
from jaxmj.solver import pgs_order
from jaxmj.solver.problem import (
  Cones,
  cone_layout,
  contact_mu,
  dual_state,
  ext,
  make_problem,
  qcqp,
  safe_div,
  safe_sqrt,
)
from jaxmj.types import Cone, Data, DisableBit, Model

_ROW, _PAIR, CONE = 0, 1, 2


def _blocks(m: Model, con, nefc: int):
  """Sweep blocks in MuJoCo's order: kind (nb,), rows (nb, 5) padded with nefc, normal row
  (nb,) (elliptic; else nefc), contact slot (nb,) (elliptic; else 0), all static, and the
  order: None where the blocks come sorted, else (under a contact cap, whose order is
  traced: pgs_order.mujoco_efc_order) the (nb,) permutation that sorts them."""
  lay = efc_layout(m, con.dim)
  order = pgs_order.mujoco_efc_order(m, con)
  blocks = [(r, _ROW, [r], nefc, 0) for r in range(lay.ne, lay.ne + lay.nf)]
  for s, (dim, adr) in enumerate(zip(np.asarray(con.dim), np.asarray(con.efc_address))):
    if dim < 2 or adr < 0:
      continue
    if m.opt.cone == Cone.PYRAMIDAL:
      blocks += [(adr + 2 * k, _PAIR, [adr + 2 * k, adr + 2 * k + 1], nefc, 0)
                 for k in range(dim - 1)]
    else:
      blocks.append((adr, CONE, list(range(adr + 1, adr + dim)), adr, s))
  perm = None
  if isinstance(order, np.ndarray):
    blocks.sort(key=lambda b: order[b[0]])
  elif blocks:
    perm = jnp.argsort(order[np.array([b[0] for b in blocks])])
  rows = np.full((len(blocks), 5), nefc, np.int32)
  for i, b in enumerate(blocks):
    rows[i, :len(b[2])] = b[2]
  return (np.array([b[1] for b in blocks], np.int32), rows,
          np.array([b[3] for b in blocks], np.int32), np.array([b[4] for b in blocks], np.int32),
          perm)


def _cost_change(a, new, old, res):
  """costChange: the dual cost change of a block update, and whether it is kept (MuJoCo
  restores the old forces when the cost rises by more than 1e-10)."""
  delta = new - old
  change = 0.5 * delta @ (a @ delta) + delta @ res
  keep = change <= 1e-10
  return jnp.where(keep, new, old), jnp.where(keep, change, 0.0)


def _row(a, res, old, floss):
  """A friction-loss row: unconstrained minimum clamped to the friction interval (no
  restore: MuJoCo takes the clamped minimum as it is)."""
  aii = jnp.maximum(MINVAL, a[0, 0])
  new = old.at[0].set(jnp.clip(old[0] - res[0] / aii, -floss, floss))
  delta = new[0] - old[0]
  return new, 0.5 * delta * delta * aii + delta * res[0]


def _pair(a, res, old):
  """Two opposing pyramid edges: their sum 2 mid fixed, f0 = mid + y, f1 = mid - y with y
  minimizing the dual cost on [-mid, mid]."""
  ac = a[:2, :2]
  bc = res[:2] - ac @ old[:2]
  mid = 0.5 * (old[0] + old[1])
  k1 = ac[0, 0] + ac[1, 1] - ac[0, 1] - ac[1, 0]
  k0 = mid * (ac[0, 0] - ac[1, 1]) + bc[0] - bc[1]
  y = jnp.clip(-safe_div(k0, k1), -mid, mid)
  y = jnp.where(k1 < MINVAL, 0.0, y)
  new = old.at[0].set(mid + y).at[1].set(mid - y)
  return _cost_change(a, new, old, res)


def _cone(a, res, old, normal, fric, live):
  """The friction rows of an elliptic contact: QCQP on the cone |f_t / friction| <= normal
  with the normal force fixed, put back on the ellipsoid when the cone is active."""
  bc = res - a @ old
  v, act = qcqp(a, bc, fric, normal, live)
  ssq = jnp.sum(jnp.where(live, safe_div(v * v, fric * fric), 0.0))
  v = jnp.where(act, v * safe_sqrt(normal * normal / jnp.maximum(MINVAL, ssq)), v)
  new = jnp.where((normal < MINVAL) | ~live, 0.0, v)
  return _cost_change(a, new, old, res)


def _sweep_fn(kinds, rows, normal_rows, slots, perm, *, amat, b, floss, fric_slot, active,
              onehot):
  """One Gauss-Seidel sweep over the blocks (in `perm`'s order where it is not None):
  (force, improvement (ni,), done (ni,)) -> (force, improvement); blocks of islands that are
  done keep their forces."""
  nefc = amat.shape[0]
  dt = amat.dtype
  a_ext = jnp.zeros((nefc + 1, nefc + 1), dt).at[:nefc, :nefc].set(amat)
  b_ext, act_ext = ext(b), ext(active, False)
  present = sorted(set(kinds.tolist()))
  xs = (jnp.asarray(kinds), jnp.asarray(rows), jnp.asarray(normal_rows), jnp.asarray(slots),
        onehot[jnp.asarray(rows[:, 0])])
  if perm is not None:
    xs = tuple(x[perm] for x in xs)

  def sweep(f, improvement, done):
    def block(carry, blk):
      f, improvement = carry
      kind, idx, nrow, slot, isl = blk
      fe = ext(f)
      live = (idx < nefc) & act_ext[idx] & ~jnp.any((isl > 0) & done)
      a = a_ext[idx][:, idx]
      a = jnp.where(jnp.eye(5, dtype=bool) & live[:, None], jnp.maximum(1e-10, a), a)
      res = b_ext[idx] + a_ext[idx] @ fe
      old = fe[idx]
      fns = {_ROW: lambda: _row(a, res, old, ext(floss)[idx[0]]),
             _PAIR: lambda: _pair(a, res, old),
             CONE: lambda: _cone(a, res, old, fe[nrow], fric_slot[slot], live)}
      if len(present) == 1:
        new, change = fns[present[0]]()
      else:
        new, change = jax.lax.switch(jnp.searchsorted(jnp.asarray(present), kind),
                                     [fns[k] for k in present])
      new = jnp.where(live, new, old)
      change = jnp.where(live[0], change, 0.0)
      return (fe.at[idx].set(new)[:-1], improvement - change * isl), None

    return jax.lax.scan(block, (f, improvement), xs)[0]

  return sweep


def noslip(m: Model, d: Data) -> Data:
  """mj_solNoSlip after the main solver (a no-op unless opt.noslip_iterations > 0).

  Reads efc_force (the main solver's), efc_J, efc_R, efc_aref, efc_active, efc_frictionloss,
  qacc_smooth, the contacts and efc_island; writes efc_force, efc_state, qfrc_constraint, qacc,
  and per island adds its sweeps to solver_niter and sets solver_improvement to its last
  sweep's and solver_gradient to 0 (MuJoCo saves its statistics after the main solver's).
  """
  nefc = d.efc_J.shape[0]
  if m.opt.noslip_iterations <= 0 or nefc == 0 or m.opt.disabled(DisableBit.CONSTRAINT):
    return d
  dt = d.efc_J.dtype
  con = d.contact
  cones = Cones(rows=np.zeros((0, 6), np.int32), dim=np.zeros(0, np.int32))
  fric, mu = None, None
  fric_slot = jnp.zeros((1, 5), dt)
  if m.opt.cone == Cone.ELLIPTIC and len(con.dim):
    sel = np.asarray(con.dim) > 1
    cones = cone_layout(np.asarray(con.efc_address)[sel], np.asarray(con.dim)[sel])
    fric = con.friction[jnp.asarray(np.flatnonzero(sel))]
    mu = contact_mu(d, np.asarray(con.efc_address)[sel], fric)
    fric_slot = jnp.asarray(con.friction, dt).reshape(-1, 5)
  p = make_problem(d.qM, d.qacc_smooth, d.qfrc_smooth, d.efc_J, d.efc_D, d.efc_R, d.efc_aref,
               d.efc_frictionloss, d.efc_type, d.efc_active, cones, fric, mu)
  minv_jt = jax.vmap(lambda x: mass.solve_m(m, d, x), in_axes=1, out_axes=1)(p.J.T)
  amat = p.J @ minv_jt
  b = p.J @ d.qacc_smooth - p.aref
  # MuJoCo 4.0 runs noslip per island (one problem with islands disabled): per-island
  # termination and statistics; islands do not couple, so the forces are one sweep's
  ni = d.solver_niter.shape[0]
  eisl = d.efc_island if not m.opt.disabled(DisableBit.ISLAND) else jnp.zeros(nefc, jnp.int32)
  onehot = ((eisl[:, None] == jnp.arange(ni)) & p.active[:, None]).astype(dt)  # (nefc, ni)
  absent = jnp.sum(onehot, axis=0) == 0
  kinds, rows, normal_rows, slots, perm = _blocks(m, con, nefc)
  implicit = m.opt.grad == "implicit"
  params = dict(amat=amat, b=b, floss=p.floss, fric_slot=fric_slot)
  f0 = jnp.where(p.active, d.efc_force, 0.0)
  loop_params, loop_f0 = (jax.lax.stop_gradient((params, f0)) if implicit else (params, f0))
  if len(kinds):
    sweep = _sweep_fn(kinds, rows, normal_rows, slots, perm, **loop_params, active=p.active,
                      onehot=onehot)
  else:
    sweep = lambda f, imp, done: (f, imp)  # noqa: E731
  scale = _scale(m, d, onehot)
  rsq = jnp.where(p.active, p.R, 0.0)

  def body(k, c):
    f, done, niter, last = c
    # the sweep's dual cost decrease; the first also counts dropping R from the cost
    imp0 = jnp.where(k == 0, 0.5 * (f * f * rsq) @ onehot, 0.0)
    f, improvement = sweep(f, imp0, done)
    improvement = jax.lax.stop_gradient(improvement) * scale
    niter = niter + jnp.where(done, 0, 1)
    last = jnp.where(done, last, improvement)
    return f, done | (improvement < m.opt.noslip_tolerance), niter, last

  zero = jnp.zeros(ni, jnp.int32)
  force, _, niter, last = jax.lax.fori_loop(
    0, m.opt.noslip_iterations, body, (loop_f0, absent, zero, jnp.zeros(ni, dt)))
  if implicit and len(kinds):
    blocks = (kinds, rows, normal_rows, slots)
    force = _fixed_point(blocks, nefc)(params, f0, (p.active, perm),
                                       jax.lax.stop_gradient(force))
  qfrc = p.J.T @ force
  ran = niter > 0
  return d.replace(
    efc_force=force, efc_state=dual_state(p, force, p.floss), qfrc_constraint=qfrc,
    qacc=d.qacc_smooth + mass.solve_m(m, d, qfrc),
    solver_niter=d.solver_niter + niter.astype(d.solver_niter.dtype),
    solver_improvement=jnp.where(ran, last, d.solver_improvement),
    solver_gradient=jnp.where(ran, 0.0, d.solver_gradient))


def _scale(m: Model, d: Data, onehot):
  """The improvement's scale per island (ni,): 1 / trace of the island's inertia (MuJoCo 4.0,
  as its main solvers)."""
  ni = onehot.shape[1]
  if m.opt.disabled(DisableBit.ISLAND):
    dof = jnp.ones((m.nv, ni), onehot.dtype)
  else:
    dof = (d.dof_island[:, None] == jnp.arange(ni)).astype(onehot.dtype)
  inertia = jax.lax.stop_gradient(jnp.diag(d.qM) @ dof)
  return 1.0 / jnp.where(inertia > 0, inertia, 1.0)


def _fixed_point(blocks, nefc: int) -> Callable:
  """(params, f0, active, force) -> force as given, with the implicit-function derivative of
  the sweeps' fixed point as its JVP (`blocks`: _blocks' static arrays).

  A sweep conserves what it does not solve for: the rows outside its blocks (normal, equality,
  limit rows; inactive rows) and each pyramid pair's sum keep the values of f0, the main
  solver's forces. G(f) = sweep(f with those parts taken from f0) has them as parameters, so
  at the fixed point f = G(f; params, f0) the derivative is df = (I - dG/df)^-1 dG/d(params,
  f0). I - dG/df is singular where the noslip solution is not unique (friction forces in the
  null space of J', e.g. a box's four corner contacts): the pseudo-inverse takes the
  minimum-norm derivative, which moves qfrc_constraint = J' f the same. The matrix comes from
  the primal alone, so the tangent is linear (transposable) and reverse mode stores one
  sweep's residuals, not every sweep's.
  """
  kinds, rows, normal_rows, slots = blocks
  free = static_mask(nefc, rows[rows < nefc])
  partner = np.arange(nefc)
  pairs = rows[kinds == _PAIR][:, :2]
  partner[pairs[:, 0]], partner[pairs[:, 1]] = pairs[:, 1], pairs[:, 0]
  paired = partner != np.arange(nefc)

  def g(params, f0, active, f):
    active, perm = active  # the rows that are constraints, and the blocks' order (_blocks)
    fixed = ~free | ~active
    conserve = 0.5 * (f0 + f0[partner] - f - f[partner])
    f = jnp.where(fixed, f0, jnp.where(paired, f + conserve, f))
    onehot = jnp.zeros((nefc, 1), f.dtype)  # no island has stopped: every block sweeps
    sweep = _sweep_fn(kinds, rows, normal_rows, slots, perm, **params, active=active,
                      onehot=onehot)
    return sweep(f, jnp.zeros(1, f.dtype), jnp.zeros(1, bool))[0]

  @jax.custom_jvp
  def fixed_point(params, f0, active, f):
    return f

  @fixed_point.defjvp
  def fixed_point_jvp(primals, tangents):
    params, f0, active, f = primals
    dparams, df0 = tangents[:2]
    dg = jax.jvp(lambda pr, x0: g(pr, x0, active, f), (params, f0), (dparams, df0))[1]
    jf = jax.jacfwd(lambda x: g(params, f0, active, x))(f)
    # relative cutoff: singular values below it are the null space, not a stiff direction
    rtol = 1e-10 if f.dtype == jnp.float64 else 1e-5
    k = jnp.linalg.pinv(jnp.eye(nefc, dtype=f.dtype) - jf, rtol=rtol)
    return f, k @ dg

  return fixed_point
