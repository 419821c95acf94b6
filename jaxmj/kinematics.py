"""Forward kinematics: body, joint, geom and site frames in the global frame (mj_kinematics)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.scan import body_plan, cached_plan
from jaxmj.types import Data, JointType, Model


@cached_plan
def _joint_plan(m) -> list[list[dict]]:
  """Per body level, per joint slot (a body's k-th joint), joints grouped by type.

  Each group holds `local` (positions of the joints' bodies within the level), `jnt`
  (joint ids) and `adr` (qpos addresses); joints of one body apply in order, as in MuJoCo.
  """
  plan = []
  for ids in body_plan(m)["body_levels"]:
    slots = []
    for k in range(int(m.body_jntnum[ids].max(initial=0))):
      has = np.flatnonzero(m.body_jntnum[ids] > k)
      jnt = m.body_jntadr[ids[has]] + k
      groups = {}
      for t in JointType:
        sel = m.jnt_type[jnt] == t
        if sel.any():
          groups[t] = {"local": has[sel], "jnt": jnt[sel], "adr": m.jnt_qposadr[jnt[sel]]}
      slots.append(groups)
    mocap = np.flatnonzero(m.body_mocapid[ids] >= 0)
    plan.append({"slots": slots, "mocap": mocap, "mocapid": m.body_mocapid[ids[mocap]]})
  return plan


def _apply_joints(m: Model, d: Data, groups: dict, pos, quat, xanchor, xaxis):
  """Moves the frames of one joint slot's bodies by their joints' coordinates."""
  for jtype, g in groups.items():
    loc, jnt, adr = g["local"], g["jnt"], g["adr"]
    p, q = pos[loc], quat[loc]
    if jtype == JointType.FREE:
      p = d.qpos[adr[:, None] + np.arange(3)]
      q = math.normalize_quat(d.qpos[adr[:, None] + np.arange(3, 7)])
      anchor, axis = p, m.jnt_axis[jnt]
    else:
      jpos = m.jnt_pos[jnt]
      anchor = math.rot_vec_quat(jpos, q) + p
      axis = math.rot_vec_quat(m.jnt_axis[jnt], q)
      if jtype == JointType.SLIDE:
        p = p + axis * (d.qpos[adr] - m.qpos0[adr])[:, None]
      else:
        if jtype == JointType.BALL:
          qloc = math.normalize_quat(d.qpos[adr[:, None] + np.arange(4)])
        else:
          qloc = math.axis_angle_to_quat(m.jnt_axis[jnt], d.qpos[adr] - m.qpos0[adr])
        q = math.quat_mul(q, qloc)
        # Rotation is about the anchor, not the body origin.
        p = anchor - math.rot_vec_quat(jpos, q)
    pos = pos.at[loc].set(p)
    quat = quat.at[loc].set(q)
    xanchor = xanchor.at[jnt].set(anchor)
    xaxis = xaxis.at[jnt].set(axis)
  return pos, quat, xanchor, xaxis


def kinematics(m: Model, d: Data) -> Data:
  """mj_kinematics: global frames of bodies, inertial frames, joints, geoms and sites.

  Reads qpos, mocap_pos, mocap_quat. Writes xpos, xquat, xmat, xipos, ximat, xanchor, xaxis,
  geom_xpos/xquat/xmat, site_xpos/xquat/xmat. Runs level by level down the body tree.
  """
  dtype = d.qpos.dtype
  xpos = jnp.zeros((m.nbody, 3), dtype)
  xquat = jnp.zeros((m.nbody, 4), dtype).at[:, 0].set(1.0)
  xanchor = jnp.zeros((m.njnt, 3), dtype)
  xaxis = jnp.zeros((m.njnt, 3), dtype)
  for ids, lvl in zip(body_plan(m)["body_levels"], _joint_plan(m)):
    par = m.body_parentid[ids]
    pos = xpos[par] + math.rot_vec_quat(m.body_pos[ids], xquat[par])
    quat = math.quat_mul(xquat[par], m.body_quat[ids])
    if len(lvl["mocap"]):
      pos = pos.at[lvl["mocap"]].set(d.mocap_pos[lvl["mocapid"]])
      quat = quat.at[lvl["mocap"]].set(math.normalize_quat(d.mocap_quat[lvl["mocapid"]]))
    for groups in lvl["slots"]:
      pos, quat, xanchor, xaxis = _apply_joints(m, d, groups, pos, quat, xanchor, xaxis)
    xpos = xpos.at[ids].set(pos)
    xquat = xquat.at[ids].set(math.normalize_quat(quat))

  xmat = math.quat_to_mat(xquat)
  xipos = xpos + jnp.einsum("bij,bj->bi", xmat, m.body_ipos)
  ximat = math.quat_to_mat(math.quat_mul(xquat, m.body_iquat))
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
