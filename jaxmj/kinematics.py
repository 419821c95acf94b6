"""Forward kinematics: body, joint, geom and site frames in the global frame (mj_kinematics).

Bit for bit MuJoCo 4.0's arithmetic in float64 on CPU (read from libmujoco's machine code):
each body is composed from its parent's normalized frame (xpos + xmat·pos, xquat * quat),
its joints apply in the global frame, then its quaternion is normalized and turned into
xmat; geoms, sites and inertial frames are composed from the body frame or copied from it
as their `sameframe` class says. Every product is kept out of fused multiply-adds
(`math.nofma`), because contact decisions downstream (ties between equal depths) turn on
the last bit of these frames.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.scan import cached_plan, levels
from jaxmj.types import Data, JointType, Model

# mjtSameFrame
_SAME_BODY, _SAME_INERTIA, _SAME_BODYROT, _SAME_INERTIAROT = 1, 2, 3, 4


@cached_plan
def _level_plan(m) -> dict:
  """Static plan of the scan over tree levels (depth 1, 2, ...; free bodies, always at depth
  1, are set before it): per level, its bodies padded to the widest level with the scratch
  row nbody, their parents, and per joint slot (a body's k-th joint) the joint id, type
  (0: none) and qpos address (padding: nq, past the end of qpos)."""
  free = np.zeros(m.nbody, bool)
  has = m.body_jntnum == 1
  free[has] = m.jnt_type[m.body_jntadr[has]] == JointType.FREE
  lv = [b[~free[b]] for b in levels(m.body_depth, start=1)]
  lv = [b for b in lv if len(b)]
  width = max([len(b) for b in lv], default=0)
  nslot = int(m.body_jntnum[~free].max(initial=0))
  shape = (len(lv), width)
  body = np.full(shape, m.nbody)
  jnt = np.full(shape + (nslot,), 0)
  jtype = np.zeros(shape + (nslot,), np.int32)
  adr = np.full(shape + (nslot,), m.nq)
  for i, b in enumerate(lv):
    body[i, :len(b)] = b
    for k in range(nslot):
      rows = np.flatnonzero(m.body_jntnum[b] > k)
      j = m.body_jntadr[b[rows]] + k
      jnt[i, rows, k], jtype[i, rows, k], adr[i, rows, k] = j, m.jnt_type[j], m.jnt_qposadr[j]
  fb = np.flatnonzero(free)
  # every joint's place in [scan outputs (level, row, slot) flattened, free joints]
  where = np.zeros(m.njnt, int)
  slot = np.flatnonzero(jtype.ravel() != 0)
  where[jnt.ravel()[slot]] = slot
  where[m.body_jntadr[fb]] = jtype.size + np.arange(len(fb))
  parent = np.where(body < m.nbody, m.body_parentid[np.minimum(body, m.nbody - 1)], 0)
  return {"body": body, "parent": parent, "jnt": jnt, "jtype": jtype, "adr": adr,
          "free": fb, "free_adr": m.jnt_qposadr[m.body_jntadr[fb]], "joint_src": where,
          "mocap": np.flatnonzero(m.body_mocapid >= 0),
          "mocapid": m.body_mocapid[m.body_mocapid >= 0]}


def _joints(m: Model, qpos, qpos0, plan_k, pos, quat, z):
  """Applies each body's joints in slot order, in the global frame, to one level's padded
  rows (pos (w, 3), quat (w, 4)); returns pos, quat and (w, nslot, 3) xanchor and xaxis.
  Every row computes every joint kind and keeps its own (padding keeps its frame)."""
  jnt, jtype, adr = plan_k
  anchors, axes = [], []
  for k in range(jnt.shape[1]):
    t, a, jpos, jaxis = jtype[:, k, None], adr[:, k], m.jnt_pos[jnt[:, k]], m.jnt_axis[jnt[:, k]]
    axis, anchor = jnp.unstack(math.rot_vec_quat(jnp.stack([jaxis, jpos], 1), quat[:, None], z),
                               axis=1)
    anchor = anchor + pos
    dq = qpos[a] - qpos0[a]
    slid = pos + math.nofma(axis * dq[:, None], z)
    half = (dq * 0.5)[:, None]
    hinge = jnp.concatenate([jnp.cos(half), jnp.sin(half) * jaxis], axis=-1)
    ball = math.normalize_quat(qpos[a[:, None] + jnp.arange(4)], z)
    q = math.quat_mul(quat, jnp.where(t == JointType.BALL, ball, hinge), z)
    # rotation is about the anchor, not the body origin
    turned = anchor - math.rot_vec_quat(jpos, q, z)
    rotates = (t == JointType.HINGE) | (t == JointType.BALL)
    pos = jnp.where(t == JointType.SLIDE, slid, jnp.where(rotates, turned, pos))
    quat = jnp.where(rotates, q, quat)
    anchors, axes = anchors + [anchor], axes + [axis]
  w = pos.shape[0]
  stack = (lambda x: jnp.stack(x, 1)) if anchors else (lambda x: jnp.zeros((w, 0, 3), pos.dtype))
  return pos, quat, stack(anchors), stack(axes)


def _bodies(m: Model, d: Data, z):
  """xpos, xquat, xmat, xanchor, xaxis, level by level from the root (mj_kinematics1): one
  scan step per tree level, so the graph does not grow with the depth of the tree."""
  dt = d.qpos.dtype
  plan = _level_plan(m)
  # one row per body, plus a scratch row for padding: pos (3), quat (4), mat (9)
  world = jnp.concatenate([jnp.zeros(3), jnp.array([1.0, 0, 0, 0]), jnp.eye(3).ravel()])
  frame = jnp.zeros((m.nbody + 1, 16), dt).at[0].set(world.astype(dt))
  pad = jnp.zeros(4, dt)
  qpos, qpos0 = jnp.concatenate([d.qpos, pad]), jnp.concatenate([m.qpos0.astype(dt), pad])
  bpos, bquat = m.body_pos, m.body_quat
  if len(plan["mocap"]):
    bpos = bpos.at[plan["mocap"]].set(d.mocap_pos[plan["mocapid"]])
    bquat = bquat.at[plan["mocap"]].set(math.normalize_quat(d.mocap_quat[plan["mocapid"]], z))
  bpos = jnp.concatenate([bpos, jnp.zeros((1, 3), bpos.dtype)])
  bquat = jnp.concatenate([bquat, jnp.array([[1.0, 0, 0, 0]], bquat.dtype)])

  def place(frame, ids, pos, quat):
    quat = math.normalize_quat(quat, z)
    mat = math.quat_to_mat(quat, z).reshape(-1, 9)
    return frame.at[ids].set(jnp.concatenate([pos, quat, mat], 1))

  a = plan["free_adr"]
  free_pos = qpos[a[:, None] + np.arange(3)]
  # normalized when read, and again as every body's quaternion
  frame = place(frame, plan["free"], free_pos,
                math.normalize_quat(qpos[a[:, None] + np.arange(3, 7)], z))

  def level(frame, xs):
    body, parent, *plan_k = xs
    up = frame[parent]
    p = math.mat_vec3(up[:, 7:].reshape(-1, 3, 3), bpos[body], z) + up[:, :3]
    q = math.quat_mul(up[:, 3:7], bquat[body], z)
    p, q, anchor, axis = _joints(m, qpos, qpos0, plan_k, p, q, z)
    return place(frame, body, p, q), (anchor, axis)

  xs = tuple(plan[k] for k in ("body", "parent", "jnt", "jtype", "adr"))
  frame, (anchor, axis) = jax.lax.scan(level, frame, xs)
  src = plan["joint_src"]
  xanchor = jnp.concatenate([anchor.reshape(-1, 3), free_pos])[src]
  xaxis = jnp.concatenate([axis.reshape(-1, 3), m.jnt_axis[m.body_jntadr[plan["free"]]]])[src]
  frame = frame[:-1]
  return frame[:, :3], frame[:, 3:7], frame[:, 7:].reshape(-1, 3, 3), xanchor, xaxis


@jax.custom_jvp
def _exact(value, smooth):
  """`value`, differentiated as `smooth` (the same quantity computed another way)."""
  return value


@_exact.defjvp
def _exact_jvp(primals, tangents):
  return primals[0], tangents[1]


def _copies(composed, frames, inert, bodyid, quat, sameframe):
  """mj_local2GlobalQuat's copies: (xpos, xquat, xmat) of objects fixed in their bodies,
  `composed` from the body frame, replaced by the body's frame `frames` or inertial frame
  `inert` = (xipos, xiquat, ximat, body_iquat) where `sameframe` (static) says they coincide.
  Copies carry the composed frame's derivatives, so gradients with respect to the local
  pos and quat stay."""
  same_pos = {_SAME_BODY: frames, _SAME_INERTIA: inert}
  same_rot = {_SAME_BODY: frames, _SAME_BODYROT: frames, _SAME_INERTIA: inert,
              _SAME_INERTIAROT: inert}
  out = list(composed)
  for k, table in ((0, same_pos), (1, same_rot), (2, same_rot)):
    value, smooth = out[k], out[k]
    for kind, src in table.items():
      mask = sameframe == kind
      if not mask.any():
        continue
      col = mask.reshape((-1,) + (1,) * (out[k].ndim - 1))
      value = jnp.where(col, src[k][bodyid], value)
      if k == 1:
        # the local rotation may have matched -ref: the copy keeps the body's sign
        ref = np.array([1.0, 0, 0, 0]) if src is frames else inert[3][bodyid]
        flip = col & (jnp.sum(quat * ref, -1, keepdims=True) < 0)
        smooth = jnp.where(flip, -smooth, smooth)
    out[k] = _exact(value, smooth) if value is not out[k] else value
  return tuple(out)


def kinematics(m: Model, d: Data) -> Data:
  """mj_kinematics: global frames of bodies, inertial frames, joints, geoms and sites.

  Reads qpos, mocap_pos, mocap_quat. Writes xpos, xquat, xmat, xipos, ximat, xanchor, xaxis,
  geom_xpos/xquat/xmat, site_xpos/xquat/xmat. Bodies are composed one tree level at a time
  (a scan over levels, each level one vectorized pass); inertial, geom and site frames in
  one pass after.
  """
  # a zero the compiler cannot fold (time² is never negative), for the nofma guards
  z = math.opaque_zero(d.time * d.time)
  xpos, xquat, xmat, xanchor, xaxis = _bodies(m, d, z)
  frames = (xpos, xquat, xmat)
  # xpos + xmat·pos, xquat * quat and its matrix for inertial frames, geoms and sites at once
  bodyid = np.concatenate([np.arange(m.nbody), m.geom_bodyid, m.site_bodyid]).astype(int)
  pos = jnp.concatenate([m.body_ipos, m.geom_pos, m.site_pos])
  quat = jnp.concatenate([m.body_iquat, m.geom_quat, m.site_quat])
  cq = math.quat_mul(xquat[bodyid], quat, z)
  composed = (math.mat_vec3(xmat[bodyid], pos, z) + xpos[bodyid], cq, math.quat_to_mat(cq, z))
  cut = np.cumsum([m.nbody, m.ngeom])
  parts = [jnp.split(x, cut) for x in composed]
  body, geom, site = ([f[i] for f in parts] for i in range(3))
  xipos, xiquat, ximat = _copies(body, frames, None, bodyid[:cut[0]], m.body_iquat,
                                 m.body_sameframe)
  # the world's inertial frame is the world frame, even with a (URDF) world inertial
  xipos, xiquat = xipos.at[0].set(0.0), xiquat.at[0].set(xquat[0])
  ximat = ximat.at[0].set(jnp.eye(3, dtype=ximat.dtype))
  inert = (xipos, xiquat, ximat, m.body_iquat)
  geom = _copies(geom, frames, inert, m.geom_bodyid, m.geom_quat, m.geom_sameframe)
  site = _copies(site, frames, inert, m.site_bodyid, m.site_quat, m.site_sameframe)
  return d.replace(
    xpos=xpos, xquat=xquat, xmat=xmat, xipos=xipos, ximat=ximat, xanchor=xanchor,
    xaxis=xaxis, geom_xpos=geom[0], geom_xquat=geom[1], geom_xmat=geom[2],
    site_xpos=site[0], site_xquat=site[1], site_xmat=site[2],
  )
