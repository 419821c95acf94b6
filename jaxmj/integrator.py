"""Time integration: positions on the joint manifold and MuJoCo's semi-implicit Euler."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import mass, math
from jaxmj.scan import cached_plan
from jaxmj.types import Data, DisableBit, JointType, Model


@cached_plan
def _pos_plan(m) -> dict:
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
  plan = _pos_plan(m)
  if len(plan["lin_q"]):
    qpos = qpos.at[plan["lin_q"]].add(dt * qvel[plan["lin_v"]])
  if len(plan["quat_q"]):
    quat = math.quat_integrate(qpos[plan["quat_q"]], qvel[plan["quat_v"]], dt)
    qpos = qpos.at[plan["quat_q"]].set(quat)
  return qpos


def advance(m: Model, d: Data, qacc: jnp.ndarray) -> Data:
  """mj_advance: qvel, qpos and time one step ahead with acceleration qacc."""
  h = m.opt.timestep
  qvel = d.qvel + h * qacc
  return d.replace(
    qvel=qvel,
    qpos=integrate_pos(m, d.qpos, qvel, h),
    time=d.time + h,
    qacc_warmstart=d.qacc,
  )


def euler(m: Model, d: Data) -> Data:
  """mj_Euler: semi-implicit Euler, with joint damping implicit unless eulerdamp is disabled.

  With damping D, the velocity update uses (M + h D)^-1 (M qacc), which stays stable for
  stiff damping. Reads qacc, qM; writes qpos, qvel, time, qacc_warmstart.
  """
  qacc = d.qacc
  if m.nv and not m.opt.disabled(DisableBit.EULERDAMP | DisableBit.DAMPER):
    h = m.opt.timestep
    ld, diag_inv = mass.factor(m, d.qM + jnp.diag(h * m.dof_damping))
    qacc = mass.solve_ld(m, ld, diag_inv, d.qM @ d.qacc)
  return advance(m, d, qacc)
