"""Positions on the joints' manifolds: qpos (nq,) holds free and ball joints' orientations
as unit quaternions, qvel (nv,) their angular velocities in the local frame. mj_integratePos,
mj_differentiatePos and mj_normalizeQuat, over static per-type address plans.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.scan import cached_plan
from jaxmj.types import JointType, Model


@cached_plan
def qpos_plan(m) -> dict:
  """qpos/qvel addresses per joint type: linear coordinates and quaternion blocks."""
  lin_q, lin_v, quat_q, quat_v = [], [], [], []
  for j, t in enumerate(m.jnt_type):
    qa, da = m.jnt_qposadr[j], m.jnt_dofadr[j]
    if t == JointType.FREE:
      lin_q += range(qa, qa + 3)
      lin_v += range(da, da + 3)
      quat_q.append(qa + 3)
      quat_v.append(da + 3)
    elif t == JointType.BALL:
      quat_q.append(qa)
      quat_v.append(da)
    else:
      lin_q.append(qa)
      lin_v.append(da)
  as_int = lambda v: np.asarray(v, np.int32)
  return {"lin_q": as_int(lin_q), "lin_v": as_int(lin_v),
          "quat_q": as_int(quat_q)[:, None] + np.arange(4),
          "quat_v": as_int(quat_v)[:, None] + np.arange(3)}


def integrate_pos(m: Model, qpos: jnp.ndarray, qvel: jnp.ndarray, dt) -> jnp.ndarray:
  """mj_integratePos: qpos advanced by qvel over dt; quaternions rotate in the local frame."""
  plan = qpos_plan(m)
  # static gathers and selects, where a scatter each was a GPU kernel (and a copy) of its own
  out = qpos
  if len(plan["lin_q"]):
    lin = math.static_mask(len(qpos), plan["lin_q"])
    # the product rounded on its own, as the scatter-add kept it (no fused multiply-add)
    z = math.opaque_zero(qvel[0] * qvel[0]) if m.opt.exact else None
    step = math.nofma(dt * qvel[plan["lin_v"]], z)
    out = jnp.where(lin, qpos + math.place(step, plan["lin_q"], len(qpos)), out)
  if len(plan["quat_q"]):
    quat = math.quat_integrate(qpos[plan["quat_q"]], qvel[plan["quat_v"]], dt)
    rot = math.static_mask(len(qpos), plan["quat_q"])
    out = jnp.where(rot, math.place(quat.reshape(-1), plan["quat_q"].reshape(-1), len(qpos)),
                    out)
  return out


def differentiate_pos(m: Model, dt, qpos1: jnp.ndarray, qpos2: jnp.ndarray) -> jnp.ndarray:
  """mj_differentiatePos: the (nv,) velocity that takes qpos1 to qpos2 in time dt.

  Quaternions differ by a rotation in qpos1's local frame (mju_subQuat), so that
  integrate_pos(m, qpos1, differentiate_pos(m, dt, qpos1, qpos2), dt) == qpos2.
  """
  plan = qpos_plan(m)
  qvel = jnp.zeros(m.nv, jnp.result_type(qpos1, qpos2))
  if len(plan["lin_q"]):
    dq = qpos2[plan["lin_q"]] - qpos1[plan["lin_q"]]
    qvel = qvel.at[plan["lin_v"]].set(dq / dt)
  if len(plan["quat_q"]):
    rot = math.quat_sub(qpos2[plan["quat_q"]], qpos1[plan["quat_q"]])
    qvel = qvel.at[plan["quat_v"]].set(rot / dt)
  return qvel


def normalize_quat(m: Model, qpos: jnp.ndarray) -> jnp.ndarray:
  """mj_normalizeQuat: qpos with every ball and free joint quaternion of unit length
  (a zero quaternion becomes the identity)."""
  plan = qpos_plan(m)
  if not len(plan["quat_q"]):
    return qpos
  return qpos.at[plan["quat_q"]].set(math.normalize_quat(qpos[plan["quat_q"]]))
