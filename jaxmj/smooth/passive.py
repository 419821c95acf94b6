"""Passive forces: joint and tendon springs and dampers, gravcomp, fluid (mj_passive)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.scan import cached_plan
from jaxmj.smooth import armature, fluid, plastic
from jaxmj.types import Data, DisableBit, JointType, Model


@cached_plan
def _spring_plan(m) -> dict:
  """Joints grouped by type with their qpos and dof addresses."""
  groups = {}
  for t in JointType:
    jnt = np.flatnonzero(m.jnt_type == t)
    if len(jnt):
      groups[t] = {"jnt": jnt, "qadr": m.jnt_qposadr[jnt], "dadr": m.jnt_dofadr[jnt]}
  return groups


def _vector_spring(m: Model, jnt: np.ndarray, x: jnp.ndarray) -> jnp.ndarray:
  """(n, 3) force of a polynomial spring on displacements x (n, 3): the scalar polynomial of
  r = |x| along x, -(k + k2 r + k3 r^2) x, as MuJoCo does for ball and free joints."""
  k, poly = m.jnt_stiffness[jnt], m.jnt_stiffnesspoly[jnt]
  r = math.safe_norm(x, axis=-1)
  return -(k + poly[:, 0] * r + poly[:, 1] * r * r)[:, None] * x


def _spring(m: Model, d: Data) -> jnp.ndarray:
  """(nv,) joint spring forces toward qpos_spring (plastic.qpos_spring: d.plastic for
  yielding joints); ball and free rotate back along the arc.

  A hinge or slide with displacement x feels -(k x + k2 x^2 + k3 x^3): x^2, not x |x|, as in
  MuJoCo, so the quadratic term pushes the same way on both sides. Ball and free rotations
  and free translations apply the polynomial to the displacement's norm (_vector_spring)."""
  spring_ref = plastic.qpos_spring(m, d)
  dofs, frcs = [], []  # each joint type's dof addresses and forces, placed at once
  for jtype, g in _spring_plan(m).items():
    qa, da = g["qadr"][:, None], g["dadr"][:, None]
    if jtype in (JointType.HINGE, JointType.SLIDE):
      x = d.qpos[g["qadr"]] - spring_ref[g["qadr"]]
      k, poly = m.jnt_stiffness[g["jnt"]], m.jnt_stiffnesspoly[g["jnt"]]
      dofs.append(g["dadr"])
      frcs.append(-(k * x + poly[:, 0] * x * x + poly[:, 1] * x * x * x))
      continue
    if jtype == JointType.FREE:
      trans = qa + np.arange(3)
      dofs.append(da + np.arange(3))
      frcs.append(_vector_spring(m, g["jnt"], d.qpos[trans] - spring_ref[trans]))
      qa, da = qa + 3, da + 3
    quat = math.normalize_quat(d.qpos[qa + np.arange(4)])
    dif = math.quat_sub(quat, spring_ref[qa + np.arange(4)])
    dofs.append(da + np.arange(3))
    frcs.append(_vector_spring(m, g["jnt"], dif))
  if not dofs:
    return jnp.zeros(m.nv, d.qpos.dtype)
  # one static gather, where a scatter per joint type into zeros was a GPU kernel each
  return math.place(jnp.concatenate([f.reshape(-1) for f in frcs]).astype(d.qpos.dtype),
                    np.concatenate([a.reshape(-1) for a in dofs]), m.nv)


def tendon_spring_polynomial(m: Model, d: Data) -> jnp.ndarray:
  """(ntendon,) k x + k2 x^2 + k3 x^3, x the length past the nearer end of the rest range
  (0 inside it): minus each tendon's scalar spring force."""
  rest = plastic.lengthspring(m, d)
  lo, hi = rest[:, 0], rest[:, 1]
  length = d.ten_length
  x = jnp.where(length > hi, length - hi, jnp.where(length < lo, length - lo, 0.0))
  k2, k3 = m.tendon_stiffnesspoly[:, 0], m.tendon_stiffnesspoly[:, 1]
  return m.tendon_stiffness * x + k2 * x * x + k3 * x * x * x


def tendon_passive(m: Model, d: Data) -> tuple[jnp.ndarray, jnp.ndarray]:
  """Tendon spring and damper forces in joint space, (nv,) each (part of mj_passive).

  Spring: outside the rest range [lo, hi] of tendon_lengthspring (or of d.plastic for a
  yielding tendon: plastic.lengthspring), with x the distance past
  the nearer end, f = -(k x + k2 x^2 + k3 x^3); zero inside (a deadband when lo < hi).
  Damper: f = -(b v + b2 v |v| + b3 v^3), with the damping actuators reflect onto the tendon
  (armature.tendon_damping). Both act along ten_J.
  """
  zero = jnp.zeros(m.nv, d.qvel.dtype)
  if m.ntendon == 0:
    return zero, zero
  spring = damper = zero
  if not m.opt.disabled(DisableBit.SPRING):
    spring = -tendon_spring_polynomial(m, d) @ d.ten_J
  if not m.opt.disabled(DisableBit.DAMPER):
    b, poly = armature.tendon_damping(m, d.qvel.dtype)
    damper = armature.damper_force(b, poly, d.ten_velocity) @ d.ten_J
  return spring, damper


def passive(m: Model, d: Data) -> Data:
  """mj_passive: qfrc_spring, qfrc_damper, qfrc_gravcomp, qfrc_fluid and qfrc_passive.

  Reads qpos, qvel (and ten_length, ten_velocity, ten_J for tendons; xipos, cvel for
  gravcomp and fluid). The spring and damper flags disable each part as in MuJoCo.
  """
  zero = jnp.zeros(m.nv, d.qvel.dtype)
  spring = zero if m.opt.disabled(DisableBit.SPRING) else _spring(m, d)
  damper = zero if m.opt.disabled(DisableBit.DAMPER) else armature.damper_force(
    *armature.dof_damping(m, d.qvel.dtype), d.qvel)
  ten_spring, ten_damper = tendon_passive(m, d)
  spring, damper = spring + ten_spring, damper + ten_damper
  gravcomp, fluid_frc = fluid.gravcomp(m, d), fluid.fluid(m, d)
  # Gravity compensation of joints with actuatorgravcomp goes to qfrc_actuator instead.
  to_passive = np.asarray(~m.jnt_actgravcomp[m.dof_jntid], bool)
  return d.replace(qfrc_spring=spring, qfrc_damper=damper, qfrc_gravcomp=gravcomp,
                   qfrc_fluid=fluid_frc,
                   qfrc_passive=spring + damper + jnp.where(to_passive, gravcomp, 0.0)
                   + fluid_frc)
