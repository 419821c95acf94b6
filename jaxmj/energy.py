"""Potential and kinetic energy (mj_energyPos, mj_energyVel)."""

from __future__ import annotations

import jax.numpy as jnp

from jaxmj import math
from jaxmj.integrator import qpos_plan
from jaxmj.types import Data, DisableBit, Model


def _joint_spring_energy(m: Model, d: Data) -> jnp.ndarray:
  """0.5 k |q - q_spring|^2 per joint, quaternions measured as rotation vectors."""
  plan = qpos_plan(m)
  dq = jnp.zeros(m.nv, d.qpos.dtype)
  if len(plan["lin_q"]):
    dq = dq.at[plan["lin_v"]].set(d.qpos[plan["lin_q"]] - m.qpos_spring[plan["lin_q"]])
  if len(plan["quat_q"]):
    rot = math.quat_sub(d.qpos[plan["quat_q"]], m.qpos_spring[plan["quat_q"]])
    dq = dq.at[plan["quat_v"]].set(rot)
  stiffness = m.jnt_stiffness[m.dof_jntid]
  return 0.5 * jnp.sum(stiffness * dq * dq)


def _tendon_spring_energy(m: Model, d: Data) -> jnp.ndarray:
  """0.5 k x^2 per tendon, x the length's distance outside the [lower, upper] deadband."""
  length = d.ten_length
  lower, upper = m.tendon_lengthspring[:, 0], m.tendon_lengthspring[:, 1]
  x = jnp.where(length > upper, upper - length, jnp.where(length < lower, lower - length, 0.0))
  return 0.5 * jnp.sum(m.tendon_stiffness * x * x)


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

