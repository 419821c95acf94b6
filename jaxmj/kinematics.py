"""Forward kinematics: body, joint, geom and site frames in the global frame (mj_kinematics)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.scan import cached_plan
from jaxmj.types import Data, JointType, Model


@cached_plan
def _joint_plan(m) -> dict:
  """Static plan: joints per slot (a body's k-th joint) grouped by type, mocap bodies, and
  the ancestor pointers for composing frames by pointer jumping.

  Joints of one body apply in order, as in MuJoCo, so each slot is one vectorized pass over
  every body that has that many joints. `jumps[s]` is the 2^s-th ancestor of each body.
  """
  slots = []
  for k in range(int(m.body_jntnum.max(initial=0))):
    bodies = np.flatnonzero(m.body_jntnum > k)
    jnt = m.body_jntadr[bodies] + k
    groups = {}
    for t in JointType:
      sel = m.jnt_type[jnt] == t
      if sel.any():
        groups[t] = {"body": bodies[sel], "jnt": jnt[sel], "adr": m.jnt_qposadr[jnt[sel]]}
    slots.append(groups)
  jumps, anc = [], m.body_parentid.copy()
  # 2^steps >= depth: after the last jump every body's ancestor pointer is the world.
  for _ in range(max(1, (int(m.body_depth.max(initial=0)) - 1).bit_length())):
    jumps.append(anc)
    anc = anc[anc]
  mocap = np.flatnonzero(m.body_mocapid >= 0)
  return {"slots": slots, "jumps": jumps, "mocap": mocap, "mocapid": m.body_mocapid[mocap]}


def _local_frames(m: Model, d: Data, plan: dict):
  """Each body's frame in its parent's frame after its joints, and each joint's anchor and
  axis in that parent frame (free joints: global values, their parent being the world)."""
  pos, quat = m.body_pos, m.body_quat
  if len(plan["mocap"]):
    pos = pos.at[plan["mocap"]].set(d.mocap_pos[plan["mocapid"]])
    quat = quat.at[plan["mocap"]].set(math.normalize_quat(d.mocap_quat[plan["mocapid"]]))
  anchor = jnp.zeros((m.njnt, 3), pos.dtype)
  axis = jnp.zeros((m.njnt, 3), pos.dtype)
  for groups in plan["slots"]:
    for jtype, g in groups.items():
      b, jnt, adr = g["body"], g["jnt"], g["adr"]
      p, q = pos[b], quat[b]
      if jtype == JointType.FREE:
        p = d.qpos[adr[:, None] + np.arange(3)]
        q = math.normalize_quat(d.qpos[adr[:, None] + np.arange(3, 7)])
        a, ax = p, m.jnt_axis[jnt]
      else:
        jpos = m.jnt_pos[jnt]
        a = math.rot_vec_quat(jpos, q) + p
        ax = math.rot_vec_quat(m.jnt_axis[jnt], q)
        if jtype == JointType.SLIDE:
          p = p + ax * (d.qpos[adr] - m.qpos0[adr])[:, None]
        else:
          if jtype == JointType.BALL:
            qloc = math.normalize_quat(d.qpos[adr[:, None] + np.arange(4)])
          else:
            qloc = math.axis_angle_to_quat(m.jnt_axis[jnt], d.qpos[adr] - m.qpos0[adr])
          q = math.quat_mul(q, qloc)
          # Rotation is about the anchor, not the body origin.
          p = a - math.rot_vec_quat(jpos, q)
      pos, quat = pos.at[b].set(p), quat.at[b].set(q)
      anchor, axis = anchor.at[jnt].set(a), axis.at[jnt].set(ax)
  return pos, quat, anchor, axis


def kinematics(m: Model, d: Data) -> Data:
  """mj_kinematics: global frames of bodies, inertial frames, joints, geoms and sites.

  Reads qpos, mocap_pos, mocap_quat. Writes xpos, xquat, xmat, xipos, ximat, xanchor, xaxis,
  geom_xpos/xquat/xmat, site_xpos/xquat/xmat. Local frames are computed for all bodies at
  once, then composed with their ancestors by pointer jumping: log2(depth) vectorized steps.
  """
  plan = _joint_plan(m)
  pos, quat, anchor, axis = _local_frames(m, d, plan)
  # The world's frame is the identity, so composing with it changes nothing.
  pos = pos.at[0].set(0.0)
  quat = quat.at[0].set(jnp.array([1.0, 0.0, 0.0, 0.0], quat.dtype))
  parent = m.body_parentid[m.jnt_bodyid]
  for anc in plan["jumps"]:
    pos = pos[anc] + math.rot_vec_quat(pos, quat[anc])
    quat = math.quat_mul(quat[anc], quat)
  xquat = math.normalize_quat(quat)
  xpos = pos
  if m.njnt:
    free = m.jnt_type == JointType.FREE
    xanchor = jnp.where(free[:, None], anchor,
                        xpos[parent] + math.rot_vec_quat(anchor, xquat[parent]))
    xaxis = jnp.where(free[:, None], axis, math.rot_vec_quat(axis, xquat[parent]))
  else:
    xanchor, xaxis = anchor, axis

  xmat = math.quat_to_mat(xquat)
  xipos = xpos + jnp.einsum("bij,bj->bi", xmat, m.body_ipos)
  ximat = math.quat_to_mat(math.quat_mul(xquat, m.body_iquat))
  # the world's inertial frame is the world frame, even with a (URDF) world inertial
  xipos, ximat = xipos.at[0].set(0.0), ximat.at[0].set(jnp.eye(3))
  geom_xpos, geom_xquat, geom_xmat = _attached_frames(xpos, xquat, xmat, m.geom_bodyid,
                                                      m.geom_pos, m.geom_quat)
  site_xpos, site_xquat, site_xmat = _attached_frames(xpos, xquat, xmat, m.site_bodyid,
                                                      m.site_pos, m.site_quat)
  return d.replace(
    xpos=xpos, xquat=xquat, xmat=xmat, xipos=xipos, ximat=ximat, xanchor=xanchor,
    xaxis=xaxis, geom_xpos=geom_xpos, geom_xquat=geom_xquat, geom_xmat=geom_xmat,
    site_xpos=site_xpos, site_xquat=site_xquat, site_xmat=site_xmat,
  )


def _attached_frames(xpos, xquat, xmat, bodyid, pos, quat):
  """Global frames of objects fixed in their bodies (geoms, sites)."""
  xq = math.quat_mul(xquat[bodyid], quat)
  return xpos[bodyid] + jnp.einsum("nij,nj->ni", xmat[bodyid], pos), xq, math.quat_to_mat(xq)
