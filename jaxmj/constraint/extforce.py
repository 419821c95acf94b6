"""mj_rnePostConstraint (cacc, cfrc_int, cfrc_ext after the constraint solve) and the equality
and spatial-tendon terms of cfrc_ext it adds in MuJoCo 4.0. It lives with the constraints, not
in smooth/rne.py, because those terms read the constraint forces and equality geometry.

Connect and weld constraints: the translation rows' force acts on body1 at its constraint
point and, opposite, on body2 at its point (equality.anchor_frames); a weld's rotation rows add
the torque whose work matches theirs (_weld_torque), +- on the two bodies.

Spatial tendons: a tendon carrying the scalar force f (its generalized force is
ten_J' f) pulls on the bodies along its path. Every straight piece between two points of
different bodies (tendon.pieces, wrap tangent points included, scaled by 1 / divisor)
gives body1 the force f s u at its end x1 and body0 -f s u at x0, u the unit piece
direction. f sums everything that acts along the tendon, as MuJoCo 4.0 does: the spring
and damper, the actuators on the tendon (gear times actuator_force), the tendon's limit,
friction-loss and equality rows, and the armature's inertial force
-a (ten_J qacc + d/dt ten_J . qvel).
All wrenches are (torque, force) about the subtree com of the body's tree, in the world frame.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.constraint import equality
from jaxmj.constraint.contact_force import contact_forces
from jaxmj.constraint.layout import efc_layout
from jaxmj.scan import body_plan
from jaxmj.smooth import armature, passive, tendon, wrap
from jaxmj.smooth.com import subtree_product
from jaxmj.types import Data, DisableBit, EqType, Model, TrnType


def _wrench(d: Data, m: Model, body: np.ndarray, point, force, torque=None) -> jnp.ndarray:
  """(k, 6) world (torque, force) about the tree's com-frame origin of force at point."""
  arm = point - d.subtree_com[m.body_rootid[body]]
  torque = jnp.zeros_like(force) if torque is None else torque
  return jnp.concatenate([torque + jnp.cross(arm, force), force], axis=-1)


def equality_wrenches(m: Model, d: Data) -> jnp.ndarray:
  """(nbody, 6) connect and weld constraint forces on their bodies."""
  out = jnp.zeros((m.nbody, 6), d.qvel.dtype)
  if m.opt.disabled(DisableBit.CONSTRAINT | DisableBit.EQUALITY) or not m.neq:
    return out
  for (t, site), g in equality.eq_plan(m)["groups"].items():
    if t not in (EqType.CONNECT, EqType.WELD):
      continue
    weld = t == EqType.WELD
    rows = d.efc_force[g["first"][:, None] + np.arange(6 if weld else 3)]
    p1, p2, q1, q2 = equality.anchor_frames(m, d, g, site, weld)
    force, torque = rows[:, :3], None
    if weld:
      torque = _weld_torque(q1, q2, m.eq_data[g["eq"], 10], rows[:, 3:])
    out = out.at[g["body1"]].add(_wrench(d, m, g["body1"], p1, force, torque))
    out = out.at[g["body2"]].add(-_wrench(d, m, g["body2"], p2, force, torque))
  return out


def _weld_torque(q1, q2, torquescale, frc) -> jnp.ndarray:
  """(n, 3) torque on body1 of weld rotation rows with forces frc (n, 3): A' frc, where the
  rows' Jacobian is A (jacr1 - jacr2), A's column i = 0.5 torquescale
  vec(conj(q2) [0, e_i] q1) (constraint.equality._connect_weld)."""
  axes = jnp.eye(3, dtype=frc.dtype)
  pure = jnp.concatenate([jnp.zeros((3, 1), frc.dtype), axes], axis=1)  # (3, 4)
  conj2 = math.quat_conj(q2)
  cols = jax.vmap(lambda a: math.quat_mul(math.quat_mul(conj2, a[None]), q1)[:, 1:])(pure)
  return 0.5 * torquescale[:, None] * jnp.einsum("ink,nk->ni", cols, frc)


def _row_tendon_forces(m: Model, d: Data) -> jnp.ndarray:
  """(ntendon,) scalar force of the tendon limit, friction-loss and equality rows."""
  f = jnp.zeros(m.ntendon, d.qvel.dtype)
  if m.opt.disabled(DisableBit.CONSTRAINT) or not d.efc_force.shape[0]:
    return f
  lay = efc_layout(m, np.asarray(d.contact.dim))
  eq_rows = 0 if m.opt.disabled(DisableBit.EQUALITY) else equality.eq_plan(m)["ne"]
  nf = eq_rows + len(lay.friction_dof)
  nl = eq_rows + len(lay.friction_dof) + len(lay.friction_ten) + len(lay.limit_jnt)
  ten = np.concatenate([lay.friction_ten, lay.limit_ten]).astype(np.int32)
  rows = np.concatenate([nf + np.arange(len(lay.friction_ten)),
                         nl + np.arange(len(lay.limit_ten))]).astype(np.int32)
  if len(ten):
    # each row's Jacobian is +-ten_J of its tendon: the sign by projection
    tj = d.ten_J[ten]
    sq = jnp.sum(tj * tj, axis=-1)
    sign = jnp.sum(d.efc_J[rows] * tj, axis=-1) / jnp.where(sq > 0, sq, 1.0)
    f = f.at[ten].add(sign * d.efc_force[rows])
  g = equality.eq_plan(m)["groups"].get((EqType.TENDON, False)) if eq_rows else None
  if g is not None:
    force = d.efc_force[g["first"]]
    f = f.at[g["obj1"]].add(force)
    two = g["obj2"] >= 0
    if np.any(two):
      obj2 = g["obj2"][two]
      coef = m.eq_data[g["eq"][two], :5]
      x = d.ten_length[obj2] - m.tendon_length0[obj2]
      deriv = coef[:, 1] + 2 * coef[:, 2] * x + 3 * coef[:, 3] * x**2 + 4 * coef[:, 4] * x**3
      f = f.at[obj2].add(-deriv * force[two])
  return f


def tendon_forces(m: Model, d: Data) -> jnp.ndarray:
  """(ntendon,) total scalar force along each tendon (see the module docstring)."""
  f = _row_tendon_forces(m, d)
  if not m.opt.disabled(DisableBit.SPRING):
    f = f - passive.tendon_spring_polynomial(m, d)
  if not m.opt.disabled(DisableBit.DAMPER):
    b, poly = armature.tendon_damping(m, d.qvel.dtype)
    f = f + armature.damper_force(b, poly, d.ten_velocity)
  on = np.asarray(m.actuator_trntype) == TrnType.TENDON
  if m.nactuator and np.any(on):
    act = np.flatnonzero(on)
    out = m.actuator_outadr[act]
    f = f.at[m.actuator_trnid[act, 0]].add(m.actuator_gear[out, 0] * d.actuator_force[out])
  arm = armature.tendon_armature(m, d.qvel.dtype)
  return f - arm * (d.ten_J @ d.qacc + armature.jdot_qvel(m, d))


def tendon_wrenches(m: Model, d: Data) -> jnp.ndarray:
  """(nbody, 6) spatial tendon forces on the bodies along their paths."""
  out = jnp.zeros((m.nbody, 6), d.qvel.dtype)
  if not m.ntendon:
    return out
  p = tendon.cached_path_plan(m)
  geo = tendon.geometry(p, d.site_xpos, d.geom_xpos, d.geom_xmat, m.geom_size, jnp)
  ten, b0, b1, x0, x1, scale = tendon.pieces(p, m.site_bodyid, m.geom_bodyid, m.wrap_prm,
                                             d.site_xpos, geo, jnp)
  if not len(ten):
    return out
  force = (tendon_forces(m, d)[ten] * scale)[:, None] * wrap.unit(x1 - x0, jnp)
  out = out.at[b1].add(_wrench(d, m, b1, x1, force))
  return out.at[b0].add(-_wrench(d, m, b0, x0, force))


def rne_post_constraint(m: Model, d: Data) -> Data:
  """mj_rnePostConstraint: cacc, cfrc_ext, cfrc_int with the final qacc (com frame).

  cacc includes gravity as an upward acceleration of the world. cfrc_ext holds xfrc_applied,
  contact forces (contact_force.py), connect and weld constraint forces and spatial
  tendon forces (equality_wrenches, tendon_wrenches) on each body, moved to the com-frame
  origin; cfrc_int is the force each body receives from its parent. Reads cdof, cdof_dot,
  cinert, cvel,
  qvel, qacc, xfrc_applied, contact, efc_force (and efc_J, tendon and actuator state).
  """
  plan = body_plan(m)
  dt = d.qvel.dtype
  gravity = jnp.zeros(3, dt) if m.opt.disabled(DisableBit.GRAVITY) else m.opt.gravity
  body_dof = jnp.asarray(plan["body_dof"], dt)
  cacc = body_dof @ (d.cdof_dot * d.qvel[:, None] + d.cdof * d.qacc[:, None])
  cacc = cacc.at[:, 3:].add(-gravity)

  com = d.subtree_com[m.body_rootid]
  force, torque = d.xfrc_applied[:, :3], d.xfrc_applied[:, 3:]
  cfrc_ext = jnp.concatenate([torque - jnp.cross(com - d.xipos, force), force], axis=-1)
  cfrc_ext = cfrc_ext.at[0].set(0.0)
  ncon = d.contact.dist.shape[0]
  if ncon and d.efc_force.shape[0]:
    local = contact_forces(m, d)
    frame = d.contact.frame
    fglob = jnp.einsum("cij,ci->cj", frame, local[:, :3])
    tglob = jnp.einsum("cij,ci->cj", frame, local[:, 3:])
    for body, sign in zip(d.contact.bodies(m.geom_bodyid), (-1.0, 1.0)):
      arm = com[body] - d.contact.pos
      wrench = jnp.concatenate([tglob - jnp.cross(arm, fglob), fglob], axis=-1)
      wrench = jnp.where((body > 0)[:, None], sign * wrench, 0.0)
      cfrc_ext = cfrc_ext.at[body].add(wrench)

  cfrc_ext = cfrc_ext + equality_wrenches(m, d) + tendon_wrenches(m, d)
  cfrc_ext = cfrc_ext.at[0].set(0.0)

  cfrc_body = math.inert_mul(d.cinert, cacc) + math.force_cross(
    d.cvel, math.inert_mul(d.cinert, d.cvel)) - cfrc_ext
  cfrc_body = cfrc_body.at[0].set(0.0)
  cfrc_int = subtree_product(m, cfrc_body)
  return d.replace(cacc=cacc, cfrc_ext=cfrc_ext, cfrc_int=cfrc_int)
