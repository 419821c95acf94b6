"""Equality constraint rows (mj_instantiateEquality, and their part of mj_diagApprox).

Rows per constraint, in equality-id order: connect 3 (position), weld 6 (position, then
the torquescale-weighted orientation), joint and tendon 1 (quartic coupling). Every
equality of the model owns its rows whatever Data.eq_active says (fixed shapes); an
inactive equality's rows are marked inactive, so they carry no force, as MuJoCo's absent
rows. Equality rows are never "satisfied": pos is the signed violation and margin is 0.

MuJoCo 4.0 adds the Coriolis term Jdot v of connect and weld rows to the reference
acceleration (aref -= Jdot v). Here Jdot v is the exact second time derivative of the row's
position along q(t) = integrate(q, v t), by forward-mode differentiation of kinematics.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.scan import cached_plan
from jaxmj.smooth.jac import point_jacobians
from jaxmj.smooth.kinematics import kinematics
from jaxmj.smooth.qpos import integrate_pos
from jaxmj.types import Data, EqType, Model, ObjType

NROWS = {EqType.CONNECT: 3, EqType.WELD: 6, EqType.JOINT: 1, EqType.TENDON: 1}


@cached_plan
def eq_plan(m) -> dict:
  """Static row layout: per row its equality id; per (type, site form) group the ids,
  bodies (or sites) and the first row of each constraint within the equality block."""
  unsupported = [t for t in np.asarray(m.eq_type) if EqType(t) not in NROWS]
  if unsupported:
    raise NotImplementedError(f"equality type {EqType(unsupported[0]).name} is not supported")
  nrows = np.array([NROWS[EqType(t)] for t in m.eq_type], np.int64)
  first = np.cumsum(nrows) - nrows
  row_eq = np.repeat(np.arange(m.neq), nrows).astype(np.int32)
  groups = {}
  for t in (EqType.CONNECT, EqType.WELD, EqType.JOINT, EqType.TENDON):
    for site in (False, True):
      sel = (m.eq_type == t) & ((m.eq_objtype == ObjType.SITE) == site)
      ids = np.flatnonzero(sel)
      if not len(ids):
        continue
      o1, o2 = m.eq_obj1id[ids], m.eq_obj2id[ids]
      g = {"eq": ids, "first": first[ids], "obj1": o1, "obj2": o2}
      if t in (EqType.CONNECT, EqType.WELD):
        g["body1"] = m.site_bodyid[o1] if site else o1
        g["body2"] = m.site_bodyid[o2] if site else o2
      groups[(t, site)] = g
  return {"ne": int(nrows.sum()), "row_eq": row_eq, "groups": groups}


def anchor_frames(m: Model, d: Data, g: dict, site: bool, weld: bool):
  """Global points (and weld orientations) of the two sides of connect / weld constraints."""
  data = m.eq_data[g["eq"]]
  if site:
    p1, p2 = d.site_xpos[g["obj1"]], d.site_xpos[g["obj2"]]
    q1, q2 = d.site_xquat[g["obj1"]], d.site_xquat[g["obj2"]]
    return p1, p2, q1, q2
  b1, b2 = g["body1"], g["body2"]
  # Connect: anchor1 = data[0:3] on body1, anchor2 = data[3:6] on body2. Weld: body1's
  # point is relpos = data[3:6], body2's the anchor data[0:3]; body1's frame turns by relquat.
  a1, a2 = (data[:, 3:6], data[:, 0:3]) if weld else (data[:, 0:3], data[:, 3:6])
  p1 = d.xpos[b1] + jnp.einsum("nij,nj->ni", d.xmat[b1], a1)
  p2 = d.xpos[b2] + jnp.einsum("nij,nj->ni", d.xmat[b2], a2)
  q1 = math.quat_mul(d.xquat[b1], data[:, 6:10]) if weld else d.xquat[b1]
  return p1, p2, q1, d.xquat[b2]


def _residual(m: Model, d: Data, g: dict, site: bool, weld: bool) -> jnp.ndarray:
  """(n, k) connect / weld position residual: translation, then scaled rotation."""
  p1, p2, q1, q2 = anchor_frames(m, d, g, site, weld)
  if not weld:
    return p1 - p2
  err = math.quat_mul(math.quat_conj(q2), q1)[:, 1:] * m.eq_data[g["eq"], 10][:, None]
  return jnp.concatenate([p1 - p2, err], axis=1)


def _jdot_v(m: Model, d: Data, g: dict, site: bool, weld: bool) -> jnp.ndarray:
  """(n, k) Jdot v: d^2/dt^2 of the residual along q(t) = integrate(q, v t) at t = 0."""
  def residual(t):
    qpos = integrate_pos(m, d.qpos, d.qvel, t)
    return _residual(m, kinematics(m, d.replace(qpos=qpos)), g, site, weld)

  velocity = lambda t: jax.jvp(residual, (t,), (jnp.ones_like(t),))[1]
  t0 = jnp.zeros((), d.qpos.dtype)
  return jax.jvp(velocity, (t0,), (jnp.ones_like(t0),))[1]


def _connect_weld(m: Model, d: Data, g: dict, site: bool, weld: bool):
  """(n, k, nv) Jacobians, (n, k) positions and diagApprox of connect (k=3) / weld (k=6)."""
  p1, p2, q1, q2 = anchor_frames(m, d, g, site, weld)
  jp1, jr1 = point_jacobians(m, d, g["body1"], p1)
  jp2, jr2 = point_jacobians(m, d, g["body2"], p2)
  iw = m.body_invweight0
  tran = iw[g["body1"], 0] + iw[g["body2"], 0]
  if not weld:
    return jp1 - jp2, p1 - p2, jnp.repeat(tran[:, None], 3, axis=1)
  ts = m.eq_data[g["eq"], 10]
  neg2 = math.quat_conj(q2)

  def rot_col(n2, q, axis):  # 0.5 * neg(q2) * [0, axis] * q1: axis components
    a = jnp.concatenate([jnp.zeros(1, axis.dtype), axis])
    return 0.5 * math.quat_mul(math.quat_mul(n2, a), q)[1:]

  jr = jnp.swapaxes(jax.vmap(jax.vmap(rot_col, (None, None, 0)))(
    neg2, q1, jnp.swapaxes(jr1 - jr2, 1, 2)), 1, 2) * ts[:, None, None]
  rot = iw[g["body1"], 1] + iw[g["body2"], 1]
  diag = jnp.concatenate([jnp.repeat(tran[:, None], 3, 1), jnp.repeat(rot[:, None], 3, 1)], 1)
  return jnp.concatenate([jp1 - jp2, jr], axis=1), _residual(m, d, g, site, weld), diag


def _scalar_objects(m: Model, d: Data, g: dict, tendon: bool):
  """Positions relative to reference, (n, nv) Jacobians and invweight0 of both objects."""
  nv = m.nv
  if tendon:
    ref1, ref2 = m.tendon_length0[g["obj1"]], m.tendon_length0[g["obj2"]]
    val1, val2 = d.ten_length[g["obj1"]], d.ten_length[g["obj2"]]
    J1, J2 = d.ten_J[g["obj1"]], d.ten_J[g["obj2"]]
    w1, w2 = m.tendon_invweight0[g["obj1"]], m.tendon_invweight0[g["obj2"]]
  else:
    qa1, qa2 = m.jnt_qposadr[g["obj1"]], m.jnt_qposadr[g["obj2"]]
    da1, da2 = m.jnt_dofadr[g["obj1"]], m.jnt_dofadr[g["obj2"]]
    ref1, ref2 = m.qpos0[qa1], m.qpos0[qa2]
    val1, val2 = d.qpos[qa1], d.qpos[qa2]
    J1 = jnp.asarray(np.eye(nv)[da1], d.qpos.dtype)
    J2 = jnp.asarray(np.eye(nv)[da2], d.qpos.dtype)
    w1, w2 = m.dof_invweight0[da1], m.dof_invweight0[da2]
  return val1 - ref1, val2 - ref2, J1, J2, w1, w2


def _polynomial(m: Model, d: Data, g: dict, tendon: bool):
  """Joint / tendon coupling: obj1 - ref1 = a0 + sum_k a_k (obj2 - ref2)^k, k = 1..4."""
  x1, x2, J1, J2, w1, w2 = _scalar_objects(m, d, g, tendon)
  coef = m.eq_data[g["eq"], :5]
  two = jnp.asarray(g["obj2"] >= 0)
  dif = jnp.where(two, x2, 0.0)
  poly = coef[:, 1] * dif + coef[:, 2] * dif**2 + coef[:, 3] * dif**3 + coef[:, 4] * dif**4
  deriv = coef[:, 1] + 2 * coef[:, 2] * dif + 3 * coef[:, 3] * dif**2 + 4 * coef[:, 4] * dif**3
  pos = x1 - coef[:, 0] - jnp.where(two, poly, 0.0)
  J = J1 - jnp.where(two, deriv, 0.0)[:, None] * J2
  diag = w1 + jnp.where(two, w2, 0.0)
  return J[:, None], pos[:, None], diag[:, None]


def equality_rows(m: Model, d: Data) -> dict:
  """Per-row J (ne, nv), pos, imp_pos (norm of the constraint's residual, for the
  impedance), diag (diagApprox), solref, solimp, active, bias (Jdot v) of the equality block.

  Reads xpos, xmat, xquat, site_xpos, site_xquat, cdof, subtree_com, qpos (and ten_length,
  ten_J for tendon equalities), eq_active.
  """
  plan = eq_plan(m)
  ne, dt = plan["ne"], d.qpos.dtype
  J, pos, diag = jnp.zeros((ne, m.nv), dt), jnp.zeros(ne, dt), jnp.zeros(ne, dt)
  bias = jnp.zeros(ne, dt)
  for (t, site), g in plan["groups"].items():
    rows = g["first"][:, None] + np.arange(NROWS[t])
    if t in (EqType.CONNECT, EqType.WELD):
      gJ, gpos, gdiag = _connect_weld(m, d, g, site, t == EqType.WELD)
      bias = bias.at[rows].set(_jdot_v(m, d, g, site, t == EqType.WELD))
    else:
      gJ, gpos, gdiag = _polynomial(m, d, g, t == EqType.TENDON)
    J = J.at[rows].set(gJ)
    pos = pos.at[rows].set(gpos)
    diag = diag.at[rows].set(gdiag)
  eq = plan["row_eq"]
  # The impedance of every row of a constraint uses the norm of its whole residual.
  sq = jax.ops.segment_sum(pos * pos, eq, num_segments=m.neq)
  norm = jnp.where(sq > 0, jnp.sqrt(jnp.where(sq > 0, sq, 1.0)), 0.0)
  return {"J": J, "pos": pos, "imp_pos": norm[eq], "diag": diag, "solref": m.eq_solref[eq],
          "solimp": m.eq_solimp[eq], "active": d.eq_active[eq], "bias": bias}
