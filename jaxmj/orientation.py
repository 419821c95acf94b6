"""SO3 servos (<orientation>, MuJoCo 4.0): a ball joint driven towards a target orientation.

Each so3 actuator reads 3 controls (the target's rotation vector, each clamped to ctrlrange)
and writes 3 outputs, one per dof of its ball joint. As mujoco 4.0.0 computes them:

  length   = rotation vector of the joint quaternion            (3,)
  moment   = identity on the ball's dofs                        (3, nv)
  velocity = moment @ qvel = the ball's qvel                    (3,)
  force    = kp log(q^-1 exp(ctrl)) + biasprm[2] velocity + biasprm[0]   (3,)

with kp = gainprm[0] = -biasprm[1] and biasprm[2] = -kv; a forcelimited actuator caps the
norm of the force at forcerange[1] (the compiler requires forcerange[0] = 0). Compiled by
jaxmj/mjcf/orientation.py; jaxmj.actuation calls `transmission` and `forces`.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.scan import cached_plan
from jaxmj.types import Data, Model, TrnType

NOUT = 3


@cached_plan
def so3_ids(m) -> np.ndarray:
  """(n,) ids of the so3 actuators."""
  return np.flatnonzero(np.asarray(m.actuator_trntype) == TrnType.SO3)


def rows(m: Model, ids: np.ndarray, first: np.ndarray) -> np.ndarray:
  """(n * 3,) the output (first = outadr) or control (first = ctrladr) rows of so3 actuators."""
  return (np.asarray(first)[ids][:, None] + np.arange(NOUT)).ravel()


def transmission(m: Model, d: Data, grp) -> tuple:
  """(length (n * 3,), moment (n * 3, nv)) of the so3 actuators grp = (ids, qposadr, dofadr)."""
  i, qadr, dadr = grp
  quat = math.normalize_quat(d.qpos[qadr[:, None] + np.arange(4)])
  length = math.quat_to_axis_angle_vec(quat).reshape(-1)
  moment = np.zeros((len(i) * NOUT, m.nv))
  moment[np.arange(len(i) * NOUT), (dadr[:, None] + np.arange(NOUT)).ravel()] = 1.0
  return length, jnp.asarray(moment)


def forces(m: Model, d: Data, controls: jnp.ndarray, limited: np.ndarray) -> jnp.ndarray:
  """(n * 3,) forces of the so3 actuators from the clamped controls (nu,).

  limited: (nactuator,) bool, forcelimited. Reads qpos and actuator_velocity."""
  ids = so3_ids(m)
  qadr = m.jnt_qposadr[m.actuator_trnid[ids, 0]]
  quat = math.normalize_quat(d.qpos[qadr[:, None] + np.arange(4)])
  ctrl = controls[rows(m, ids, m.actuator_ctrladr)].reshape(-1, NOUT)
  target = math.quat_integrate(jnp.broadcast_to(jnp.array([1.0, 0, 0, 0]), quat.shape), ctrl,
                               1.0)
  err = math.quat_sub(target, quat)
  vel = d.actuator_velocity[rows(m, ids, m.actuator_outadr)].reshape(-1, NOUT)
  gain, bias = m.actuator_gainprm[ids], m.actuator_biasprm[ids]
  force = gain[:, :1] * err + bias[:, 2:3] * vel + bias[:, :1]
  cap = m.actuator_forcerange[ids, 1:2]
  norm = math.safe_norm(force, keepdims=True)
  capped = force * (cap / jnp.maximum(norm, 1e-15))
  force = jnp.where(limited[ids][:, None] & (norm > cap), capped, force)
  return force.reshape(-1)


def implicit_correction(m: Model, d: Data) -> jnp.ndarray | None:
  """(nv, nv) to add to the exact d qfrc_actuator / d qvel to get MuJoCo's mjd_actuator_vel,
  which gives each so3 actuator the velocity derivative biasprm[2] I, or none when its norm
  cap binds (as a clamped scalar force has none). MuJoCo decides "binds" by the capped
  force's norm >= forcerange[1], so rounding of the last bit picks either; jaxmj decides by
  the uncapped norm > forcerange[1]. None without so3 actuators or with actuation off."""
  import jax

  from jaxmj import actuation
  from jaxmj.types import DisableBit

  ids = so3_ids(m)
  if not len(ids) or m.opt.disabled(DisableBit.ACTUATION):
    return None
  plan = actuation._act_plan(m, m.opt.disableactuator)
  controls, _ = actuation._ctrl(m, d, plan)
  out = rows(m, ids, m.actuator_outadr)
  limited = np.asarray(m.actuator_forcelimited)

  def force(vel, limit):
    return forces(m, d.replace(actuator_velocity=d.actuator_velocity.at[out].set(vel)),
                  controls, limit)

  vel = d.actuator_velocity[out]
  exact = jax.jacfwd(lambda v: force(v, limited))(vel)  # (n * 3, n * 3), block diagonal
  free = force(vel, np.zeros_like(limited)).reshape(-1, NOUT)
  at_cap = limited[ids] & (math.safe_norm(free) > m.actuator_forcerange[ids, 1])
  slope = jnp.where(at_cap, 0.0, m.actuator_biasprm[ids, 2])
  on = jnp.asarray(~np.isin(ids, plan["disabled"]), vel.dtype)
  gap = jnp.repeat(on, NOUT)[:, None] * (jnp.diag(jnp.repeat(slope, NOUT)) - exact)
  moment = d.actuator_moment[out]
  return moment.T @ gap @ moment
