"""The constraint problem the solvers share: what Newton, CG and PGS (driver.py), their line
search (linesearch.py), noslip (noslip.py) and inverse dynamics (dynamics/inverse.py) read.

`make_problem` masks MuJoCo's efc rows into a `Problem` (inactive rows zeroed, elliptic cones
as static row groups); `constraint_update` is the primal cost, force and state of each row;
`Islands` holds the constraint islands as one-hot matrices; `dual_state` is the constraint
state of dual forces; `qcqp` is mju_QCQP (the SPD solve is jaxmj/linalg.py's); `safe_sqrt`,
`safe_div` and `ext` are the guarded helpers every solver loop uses (the loops themselves:
jaxmj/loops.py).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.linalg import spd_solve
from jaxmj.math import static_mask
from jaxmj.platform import traces_for_cpu
from jaxmj.types import ConstraintState, ConstraintType

SATISFIED = int(ConstraintState.SATISFIED)


QUADRATIC = int(ConstraintState.QUADRATIC)


LINEARNEG = int(ConstraintState.LINEARNEG)


LINEARPOS = int(ConstraintState.LINEARPOS)


CONE = int(ConstraintState.CONE)




def safe_sqrt(x):
  """sqrt(x) for x > 0, else 0, with a finite derivative everywhere."""
  pos = x > 0
  return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


def safe_div(num, den):
  """num / den where den != 0, else 0 (finite derivative on both sides)."""
  ok = den != 0
  return jnp.where(ok, num / jnp.where(ok, den, 1.0), 0.0)


def ext(x, fill=0.0):
  """x with one extra trailing entry (a padding slot for cone gathers)."""
  pad = jnp.full((1,) + x.shape[1:], fill, x.dtype)
  return jnp.concatenate([x, pad], axis=0)


class Islands(NamedTuple):
  """Which island each dof, row and elliptic cone belongs to, as one-hot matrices (and the
  rows' and cones' island ids).

  Sums over an island's dofs or rows are products with these (segment sums of fixed shape);
  an island's scalar reaches its dofs / rows as `dof @ s` / `efc @ s`, or in the line
  search's evaluations as `spread(efc_id, s)`. Unconstrained dofs and inactive rows have
  all-zero rows (id -1). The monolithic solve is one island holding everything.
  """

  dof: jax.Array  # (nv, ni)
  efc: jax.Array  # (nefc, ni)
  cone: jax.Array  # (ncone, ni)
  efc_id: jax.Array  # (nefc,) int, -1: in no island
  cone_id: jax.Array  # (ncone,)

  @property
  def ni(self) -> int:
    return self.dof.shape[1]


def make_islands(dof_island, efc_island, ni: int, cidx: np.ndarray, dtype) -> Islands:
  slots = jnp.arange(ni)
  efc_id = jnp.where(jnp.asarray(efc_island) < ni, jnp.asarray(efc_island), -1)
  cone_id = ext(efc_id, -1)[cidx[:, 0]] if cidx.shape[0] else jnp.zeros((0,), efc_id.dtype)
  dof = (jnp.asarray(dof_island)[:, None] == slots[None, :]).astype(dtype)
  efc = (efc_id[:, None] == slots[None, :]).astype(dtype)
  cone = (cone_id[:, None] == slots[None, :]).astype(dtype)
  return Islands(dof=dof, efc=efc, cone=cone, efc_id=efc_id, cone_id=cone_id)


def seg(onehot: jax.Array, x: jax.Array) -> jax.Array:
  """Per-island sums of x (..., n) over the island's members: (..., ni)."""
  return x @ onehot


def spread(ids: jax.Array, s: jax.Array) -> jax.Array:
  """Each member's island's entry of s (..., ni): (..., n), 0 for members of no island.

  The value of `s @ onehot.T` (one nonzero term per member) as a chain of selects, which
  fuses into its consumers, where XLA:CPU hands the product to XNNPACK as a kernel of its own
  (box_stack: two per line-search evaluation, 18 us each at batch 64). Not for the solver's
  move (driver.py): there it changed humanoid_floor's bits in vmapped float32 steps."""
  out = jnp.zeros(s.shape[:-1] + ids.shape, s.dtype)
  for i in range(s.shape[-1]):
    out = jnp.where(ids == i, s[..., i:i + 1], out)
  return out


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


@jax.tree_util.register_static
@dataclasses.dataclass(frozen=True, eq=False)
class UnitRows:
  """Static (a pytree without leaves, equal by identity): the rows whose Jacobian is a single
  +-1 on one dof (`constraint.layout.unit_rows`), whose share of the Hessian J' D J is D on
  that dof's diagonal entry. `rows` (n,) and `dofs` (n,); `diag` (k, nv): for each dof its
  first, second, ... such row's place in `rows`, n where it has none (k: the most rows on one
  dof); `rest` the slice of the other rows."""

  rows: np.ndarray
  dofs: np.ndarray
  diag: np.ndarray
  rest: slice


def unit_plan(rows: np.ndarray, dofs: np.ndarray, nefc: int, nv: int) -> UnitRows | None:
  """UnitRows for those of `rows` (on `dofs`) before the first other row or after the last,
  so that the other rows are one slice of J (a gather of J's rows cost more than the product
  it spared: humanoid_floor's step of 256 worlds 1.5x); None where there are none."""
  rows, dofs = np.asarray(rows, np.int32), np.asarray(dofs, np.int32)
  other = np.setdiff1d(np.arange(nefc), rows)
  lo, hi = (int(other[0]), int(other[-1]) + 1) if len(other) else (0, 0)
  out = (rows < lo) | (rows >= hi)
  rows, dofs = rows[out], dofs[out]
  if not len(rows):
    return None
  diag = []
  for i, dof in enumerate(dofs):
    k = int(np.sum(dofs[:i] == dof))  # this row's rank among its dof's
    if k == len(diag):
      diag.append(np.full(nv, len(rows), np.int32))
    diag[k][dof] = i
  return UnitRows(rows=rows, dofs=dofs, diag=np.stack(diag), rest=slice(lo, hi))


class Problem(NamedTuple):
  """Everything the primal solvers need, with inactive rows masked out."""

  M: jax.Array  # (nv, nv)
  qacc_smooth: jax.Array
  qfrc_smooth: jax.Array
  J: jax.Array  # (nefc, nv), inactive rows zeroed
  # (nefc, nv) efc_J as given: an inactive row is finite, and its D, force, cost and state
  # terms are 0, so the primal solvers' products with it equal those with J (to the sign of
  # a zero) and no masked copy of the rows is made for them
  J_all: jax.Array
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
  unit: UnitRows | None = None  # static: rows with one +-1 on a dof, for the Hessian


def make_problem(qM, qacc_smooth, qfrc_smooth, efc_J, efc_D, efc_R, efc_aref, efc_frictionloss,
                 efc_type, efc_active, cones, cone_friction, cone_mu,
                 unit: UnitRows | None = None) -> Problem:
  nefc = efc_J.shape[0]
  active = jnp.asarray(efc_active, bool)
  in_cone = static_mask(nefc, cones.rows[cones.rows >= 0])
  ncone = len(cones.dim)
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
    cactive = ext(active, False)[cidx[:, 0]]
  else:
    cscale = cfric = jnp.zeros((0, 6), dt)
    mu = jnp.zeros((0,), dt)
    cactive = jnp.zeros((0,), bool)
  return Problem(M=qM, qacc_smooth=qacc_smooth, qfrc_smooth=qfrc_smooth, J=J,
                  J_all=jnp.asarray(efc_J), D=D,
                  R=jnp.asarray(efc_R, dt), aref=aref, floss=floss, active=active, is_eq=is_eq,
                  is_fric=is_fric, is_ineq=is_ineq, cidx=cidx, cmask=cmask, cscale=cscale,
                  cfric=cfric, cmu=mu, cactive=cactive, unit=unit)


# J' D J with the rows' axis the last of both operands up to this many entries of J (nefc x
# nv), the row-first J.T @ (D J) above: vmapped over worlds XLA:CPU hands the first layout to
# XNNPACK and the second to a batched Eigen product, and XNNPACK is faster while a world's J is
# small (256 worlds, float32, the product alone, CPU time: 53 x 27 0.59x, 185 x 27 0.70x,
# 100 x 48 0.86x; float64 0.67x, 0.95x, 0.96x) and slower beyond (300 x 48 1.27x, 400 x 108
# 1.35x; box_pile's 404 x 48 step 1.06x). 2026-12-01, one pinned core.
HESSIAN_LAST_AXIS_MAX = 8192


def hessian(p: Problem, Dq: jax.Array, Hc: jax.Array) -> jax.Array:
  """The primal cost's Hessian (nv, nv): M + J' diag(Dq) J + the cones' J_c' Hc J_c, for the
  Newton step and the implicit derivative. Dq: (nefc,) the rows' quadratic weights (0 off
  the quadratic state); Hc: (ncone, 6, 6) the cones' Hessians."""
  J, D, h = p.J_all, Dq, p.M
  u = p.unit
  if u is not None and J.size > HESSIAN_LAST_AXIS_MAX and traces_for_cpu():
    # the unit rows' D on the diagonal, the product over the other rows only. Where J is
    # small the product is cheap and the extra kernels cost more than it saves (256 worlds,
    # one pinned core, 2026-12-04: quadruped's step 1.05x, MJX's humanoid 1.00x; 04_humanoids,
    # 84 of 148 rows, 0.94x); not measured on a GPU. The products J x and J' f of the solver
    # lose by it (04_humanoids 1.09x: J's other rows copied for each product)
    w = ext(Dq[u.rows] * jnp.square(J[u.rows, u.dofs]))
    h = h + jnp.diag(sum(w[k] for k in u.diag))
    J, D = J[u.rest], Dq[u.rest]
  if J.shape[0] and J.size <= HESSIAN_LAST_AXIS_MAX:
    jt = J.T
    h = h + jax.lax.dot_general(jt * D[None, :], jt, (((1,), (1,)), ((), ())))
  elif J.shape[0]:
    h = h + J.T @ (D[:, None] * J)
  if p.cidx.shape[0]:
    jc = ext(p.J_all)[p.cidx]  # (ncone, 6, nv)
    h = h + jnp.einsum("cin,cij,cjm->nm", jc, Hc, jc)
  return h


def qcqp(a, b, d, r, live):
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
    delta = -safe_div(val, deriv)
    stop = ~ok | (val < 1e-10) | (delta < 1e-10)
    res = jnp.where(done, res, jnp.where(ok, x, 0.0))
    fail = jnp.where(done, fail, ~ok)
    la = jnp.where(done | stop, la, la + delta)
    return la, res, done | stop, fail

  z = jnp.zeros((), a.dtype)
  la, res, _, fail = jax.lax.fori_loop(
    0, 20, it, (z, jnp.zeros(5, a.dtype), jnp.array(False), jnp.array(False)))
  return res * dd, (la != 0) & ~fail


def contact_mu(d, adr: np.ndarray, fric: jax.Array) -> jax.Array:
  """mjContact.mu of elliptic contacts whose rows start at `adr` (static), friction (n, 5):
  friction[0] * sqrt(R[1] / R[0]) from their first two rows' R, as mj_makeImpedance computes
  it (R[1] = R[0] / impratio: sqrt(1 / impratio) is an ulp off for a third of R values at
  impratio 3, and an ulp decides the state of a cone on its boundary, where PGS puts them)."""
  return fric[:, 0] * jnp.sqrt(d.efc_R[adr + 1] / d.efc_R[adr])


def dual_state(p: Problem, force, floss) -> jax.Array:
  """dualState: the constraint state implied by dual forces."""
  is_fric, is_ineq = p.is_fric, p.is_ineq
  st = jnp.where(p.is_eq, QUADRATIC, SATISFIED)
  st = jnp.where(is_fric, jnp.where(force <= -floss, LINEARPOS,
                                    jnp.where(force >= floss, LINEARNEG, QUADRATIC)), st)
  st = jnp.where(is_ineq, jnp.where(force <= 0, SATISFIED, QUADRATIC), st)
  if p.cidx.shape[0]:
    f = ext(force)[p.cidx]
    mu = p.cmu
    n = safe_div(f[:, 0], mu)
    t = safe_sqrt(jnp.sum(jnp.where(p.cmask[:, 1:], safe_div(f[:, 1:], p.cfric[:, 1:]), 0.0)
                           ** 2, axis=1))
    sc = jnp.where(mu * n >= t, SATISFIED, jnp.where(n + mu * t <= 0, QUADRATIC, CONE))
    rows = jnp.asarray(p.cidx)
    st = ext(st).at[rows].set(jnp.broadcast_to(sc[:, None], rows.shape))[:-1]
  return jnp.where(p.active, st, SATISFIED).astype(jnp.int32)


class Update(NamedTuple):
  force: jax.Array
  state: jax.Array
  cost: jax.Array  # constraint cost (Gauss not included)
  Dq: jax.Array  # D of QUADRATIC rows (Hessian weights)
  Hc: jax.Array  # (ncone, 6, 6) cone Hessians, 0 unless the cone is in state CONE


def constraint_update(p: Problem, jar: jax.Array) -> Update:
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
  state = jnp.where(quad, QUADRATIC,
                    jnp.where(lneg, LINEARNEG, jnp.where(lpos, LINEARPOS, SATISFIED)))
  total = jnp.sum(cost)
  Dq = jnp.where(quad, D, 0.0)
  ncone = p.cidx.shape[0]
  Hc = jnp.zeros((ncone, 6, 6), jar.dtype)
  if ncone:
    jc = ext(jar)[p.cidx]  # (ncone, 6)
    dc = ext(D)[p.cidx]
    s, mu = p.cscale, p.cmu
    u = jc * s
    n = u[:, 0]
    tsq = jnp.sum(u[:, 1:] ** 2, axis=1)
    t = safe_sqrt(tsq)
    tpos = t > 0
    top = (n >= mu * t) | (~tpos & (n >= 0))
    bottom = ~top & ((mu * n + t <= 0) | (~tpos & (n < 0)))
    middle = ~top & ~bottom
    top, bottom, middle = (z & p.cactive for z in (top, bottom, middle))
    dm = safe_div(dc[:, 0], mu * mu * (1 + mu * mu))
    nmt = n - mu * t
    tsafe = jnp.where(tpos, t, 1.0)
    c_cost = jnp.where(bottom, 0.5 * jnp.sum(dc * jc * jc, axis=1),
                       jnp.where(middle, 0.5 * dm * nmt * nmt, 0.0))
    f0 = -dm * nmt * mu
    fmid = jnp.concatenate([f0[:, None], -(f0 / tsafe)[:, None] * u[:, 1:] * s[:, 1:]], axis=1)
    fc = jnp.where(bottom[:, None], -dc * jc, jnp.where(middle[:, None], fmid, 0.0))
    sc = jnp.where(bottom, QUADRATIC, jnp.where(middle, CONE, SATISFIED))
    rows = jnp.asarray(p.cidx)
    force = ext(force).at[rows].set(fc)[:-1]
    state = ext(state).at[rows].set(jnp.broadcast_to(sc[:, None], rows.shape))[:-1]
    state = jnp.where(p.active, state, SATISFIED)
    Dq = ext(Dq).at[rows].set(jnp.where(bottom[:, None], dc, 0.0))[:-1]
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
  return Update(force=force, state=state.astype(jnp.int32), cost=total, Dq=Dq, Hc=Hc)
