"""Potential and kinetic energy (mj_energyPos, mj_energyVel)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.smooth import plastic
from jaxmj.smooth.qpos import qpos_plan
from jaxmj.types import Data, DisableBit, JointType, Model


def _joint_spring_energy(m: Model, d: Data) -> jnp.ndarray:
  """Work of the polynomial joint springs (passive._spring) from qpos_spring: per joint
  k x^2/2 + k2 x^3/3 + k3 x^4/4, x the signed displacement of a hinge or slide, or the norm
  of a ball's or free joint's rotation vector and of a free joint's translation."""
  plan = qpos_plan(m)
  ref = plastic.qpos_spring(m, d)
  dq = jnp.zeros(m.nv, d.qpos.dtype)
  if len(plan["lin_q"]):
    dq = dq.at[plan["lin_v"]].set(d.qpos[plan["lin_q"]] - ref[plan["lin_q"]])
  if len(plan["quat_q"]):
    rot = math.quat_sub(d.qpos[plan["quat_q"]], ref[plan["quat_q"]])
    dq = dq.at[plan["quat_v"]].set(rot)
  dof_type = np.asarray(m.jnt_type)[np.asarray(m.dof_jntid)]
  scalar = np.flatnonzero((dof_type == JointType.HINGE) | (dof_type == JointType.SLIDE))
  free = np.flatnonzero(m.jnt_type == JointType.FREE)
  blocks = np.concatenate([plan["quat_v"], np.asarray(m.jnt_dofadr)[free][:, None]
                           + np.arange(3)]).astype(np.int32)
  x = jnp.concatenate([dq[scalar], math.safe_norm(dq[blocks], axis=-1)])
  jnt = np.asarray(m.dof_jntid)[np.concatenate([scalar, blocks[:, 0]]).astype(np.int32)]
  k, k2, k3 = m.jnt_stiffness[jnt], m.jnt_stiffnesspoly[jnt, 0], m.jnt_stiffnesspoly[jnt, 1]
  return jnp.sum(k * x**2 / 2 + k2 * x**3 / 3 + k3 * x**4 / 4)


def _tendon_spring_energy(m: Model, d: Data) -> jnp.ndarray:
  """k x^2/2 + k2 x^3/3 + k3 x^4/4 per tendon (the work of passive.tendon_passive's polynomial
  spring), x the length's signed distance outside the [lower, upper] deadband."""
  length = d.ten_length
  rest = plastic.lengthspring(m, d)
  lower, upper = rest[:, 0], rest[:, 1]
  x = jnp.where(length > upper, length - upper, jnp.where(length < lower, length - lower, 0.0))
  k2, k3 = m.tendon_stiffnesspoly[:, 0], m.tendon_stiffnesspoly[:, 1]
  return jnp.sum(m.tendon_stiffness * x**2 / 2 + k2 * x**3 / 3 + k3 * x**4 / 4)


def energy_pos(m: Model, d: Data) -> jnp.ndarray:
  """mj_energyPos: () potential energy, gravitational plus joint and tendon springs.

  Reads xipos (after kinematics) and ten_length (after the tendon stage).
  """
  energy = jnp.zeros((), d.qpos.dtype)
  if not m.opt.disabled(DisableBit.GRAVITY) and m.nbody > 1:
    energy -= jnp.sum(m.body_mass[1:] * (d.xipos[1:] @ m.opt.gravity))
  if not m.opt.disabled(DisableBit.SPRING):
    if m.njnt:
      energy += _joint_spring_energy(m, d)
    if m.ntendon:
      energy += _tendon_spring_energy(m, d)
  return energy


def energy_vel(m: Model, d: Data) -> jnp.ndarray:
  """mj_energyVel: () kinetic energy 0.5 qvel' M qvel. Reads qM (after crb)."""
  return 0.5 * d.qvel @ (d.qM @ d.qvel)


def energy(m: Model, d: Data) -> Data:
  """Writes d.energy = (potential, kinetic), as mj_forward does with the energy flag on."""
  return d.replace(energy=jnp.stack([energy_pos(m, d), energy_vel(m, d)]))

