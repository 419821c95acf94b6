"""Ideal spring plasticity (MuJoCo 4.0's springyield on joints and tendons).

A spring with springyield y > 0 pulls toward a reference held in `Data.plastic` (slots at
jnt_plasticadr / tendon_plasticadr) instead of the compiled qpos_spring or
tendon_lengthspring. After each integration step the reference is dragged along so the
displacement never exceeds y (a return mapping, as in MuJoCo, measured against mj_step):

- hinge / slide: with x = qpos - ref, if |x| > y then ref = qpos - y sign(x);
- ball: with u = quat_sub(qpos, ref) (rotation vector in ref's frame), if |u| > y then
  ref = qpos * exp(-y u / |u|);
- tendon: its length is predicted at the new qpos as ten_length + ten_J dq (ten_length and
  ten_J from the step's forward pass at the old qpos, dq = mj_differentiatePos(old, new));
  if it lies more than y beyond the rest range [lo, hi], the whole range shifts so the
  length sits exactly y beyond it; only hi moves when a slack range (lo == 0 < hi, as the
  state holds it now) yields in tension.

No update when springs are disabled. The update does not depend on the stiffness: a
yielding joint with zero stiffness still moves its reference.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.scan import cached_plan
from jaxmj.smooth.qpos import differentiate_pos
from jaxmj.types import Data, DisableBit, JointType, Model


@cached_plan
def _plan(m) -> dict:
  """Static slots: scalar joints (hinge, slide), balls and tendons with plasticity."""
  adr, jtype = np.asarray(m.jnt_plasticadr), np.asarray(m.jnt_type)
  scalar = np.flatnonzero((adr >= 0) & ((jtype == JointType.HINGE)
                                        | (jtype == JointType.SLIDE)))
  ball = np.flatnonzero((adr >= 0) & (jtype == JointType.BALL))
  ten = np.flatnonzero(np.asarray(m.tendon_plasticadr) >= 0)
  qadr = np.asarray(m.jnt_qposadr)
  return {
    "jnt": scalar, "jnt_q": qadr[scalar], "jnt_p": adr[scalar],
    "ball": ball, "ball_q": qadr[ball][:, None] + np.arange(4),
    "ball_p": adr[ball][:, None] + np.arange(4),
    "ten": ten, "ten_p": np.asarray(m.tendon_plasticadr)[ten][:, None] + np.arange(2),
  }


def init(m: Model) -> jnp.ndarray:
  """(nplastic,) plastic state after mj_resetData: the compiled spring references
  (qpos_spring of each joint, tendon_lengthspring of each tendon)."""
  p = _plan(m)
  out = jnp.zeros(m.nplastic, m.qpos_spring.dtype)
  out = out.at[p["jnt_p"]].set(m.qpos_spring[p["jnt_q"]])
  out = out.at[p["ball_p"]].set(m.qpos_spring[p["ball_q"]])
  return out.at[p["ten_p"]].set(m.tendon_lengthspring[p["ten"]])


def qpos_spring(m: Model, d: Data) -> jnp.ndarray:
  """(nq,) joint spring references: qpos_spring, with yielding joints' from d.plastic."""
  if m.nplastic == 0:
    return m.qpos_spring
  p = _plan(m)
  ref = m.qpos_spring.at[p["jnt_q"]].set(d.plastic[p["jnt_p"]])
  return ref.at[p["ball_q"]].set(d.plastic[p["ball_p"]])


def lengthspring(m: Model, d: Data) -> jnp.ndarray:
  """(ntendon, 2) tendon spring rest ranges: tendon_lengthspring, yielding ones from
  d.plastic."""
  if m.nplastic == 0:
    return m.tendon_lengthspring
  p = _plan(m)
  return m.tendon_lengthspring.at[p["ten"]].set(d.plastic[p["ten_p"]])


def update(m: Model, d: Data, new: Data) -> Data:
  """`new` (the Data after integrating `d`) with its plastic references dragged along (see
  the module docstring). `d` is the Data before integration, with its forward pass."""
  if m.nplastic == 0 or m.opt.disabled(DisableBit.SPRING):
    return new
  p = _plan(m)
  plastic = new.plastic
  if len(p["jnt"]):
    q, ref, y = new.qpos[p["jnt_q"]], plastic[p["jnt_p"]], m.jnt_springyield[p["jnt"]]
    x = q - ref
    plastic = plastic.at[p["jnt_p"]].set(jnp.where(jnp.abs(x) > y, q - y * jnp.sign(x), ref))
  if len(p["ball"]):
    plastic = plastic.at[p["ball_p"]].set(_ball(new.qpos[p["ball_q"]], plastic[p["ball_p"]],
                                                m.jnt_springyield[p["ball"]]))
  if len(p["ten"]):
    dq = differentiate_pos(m, 1.0, d.qpos, new.qpos)
    length = (d.ten_length + d.ten_J @ dq)[p["ten"]]
    rng, y = plastic[p["ten_p"]], m.tendon_springyield[p["ten"]]
    lo, hi = rng[:, 0], rng[:, 1]
    stretch = length > hi + y
    shift = jnp.where(stretch, length - hi - y, jnp.where(length < lo - y, length - lo + y, 0.0))
    # a slack tendon's range [0, L] keeps its lower end when it yields in tension
    slack = stretch & (lo == 0) & (hi > 0)
    plastic = plastic.at[p["ten_p"]].set(rng + jnp.stack([jnp.where(slack, 0.0, shift), shift],
                                                         axis=-1))
  return new.replace(plastic=plastic)


def _ball(quat: jnp.ndarray, ref: jnp.ndarray, y: jnp.ndarray) -> jnp.ndarray:
  """(n, 4) ball references: `ref` rotated toward `quat` until the angle between them is at
  most y, about the axis of their relative rotation."""
  quat = math.normalize_quat(quat)
  u = math.quat_sub(quat, ref)
  angle = math.safe_norm(u, axis=-1)
  axis = u / jnp.where(angle > 0, angle, 1.0)[:, None]
  pulled = math.quat_mul(quat, math.axis_angle_to_quat(axis, -y))
  return jnp.where((angle > y)[:, None], pulled, ref)
