"""Com-based quantities: subtree com, cinert, cdof (mj_comPos) and cvel, cdof_dot (mj_comVel)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.constants import MINVAL
from jaxmj.scan import body_plan, cached_plan
from jaxmj.types import Data, JointType, Model


def subtree_mass(m: Model) -> jnp.ndarray:
  """(nbody,) mass of each subtree, from body_mass (so edits to body_mass take effect)."""
  return jnp.asarray(body_plan(m)["subtree"], m.body_mass.dtype) @ m.body_mass


@cached_plan
def _dof_plan(m) -> dict:
  """Static per-dof index sets for cdof and the velocity recursion.

  before: (nv, nv) float, [i, j] = 1 if dof j's velocity is seen by dof i in mj_comVel,
  that is j lies strictly up the dof tree, excluding the other dofs of i's ball joint and
  the other rotational dofs of i's free joint. zero_dot: translational free dofs, whose
  axes are fixed in the world, so MuJoCo sets their cdof_dot to zero.
  """
  jnt = m.dof_jntid
  jtype = m.jnt_type[jnt]
  local = np.arange(m.nv) - m.jnt_dofadr[jnt]  # index of the dof within its joint
  before = np.zeros((m.nv, m.nv))
  for i in range(m.nv):
    j = m.dof_parentid[i]
    while j >= 0:
      same = jnt[j] == jnt[i]
      if not same or (jtype[i] == JointType.FREE and local[i] >= 3 and local[j] < 3):
        before[i, j] = 1.0
      j = m.dof_parentid[j]
  groups = {}
  for t in JointType:
    sel = np.flatnonzero(jtype == t)
    if len(sel):
      groups[t] = {"dof": sel, "jnt": jnt[sel], "body": m.dof_bodyid[sel], "local": local[sel]}
  zero_dot = np.flatnonzero((jtype == JointType.FREE) & (local < 3))
  return {"before": before, "groups": groups, "zero_dot": zero_dot}


def com_pos(m: Model, d: Data) -> Data:
  """mj_comPos: subtree_com (global), cinert and cdof (com frame).

  Reads xipos, ximat, xmat, xanchor, xaxis. Writes subtree_com, cinert, cdof.
  """
  plan = body_plan(m)
  subtree = jnp.asarray(plan["subtree"], d.xipos.dtype)
  stmass = subtree_mass(m)
  weighted = subtree @ (m.body_mass[:, None] * d.xipos)
  has_mass = stmass >= MINVAL
  subtree_com = jnp.where(
    has_mass[:, None], weighted / jnp.where(has_mass, stmass, 1.0)[:, None], d.xipos
  )
  root_com = subtree_com[m.body_rootid]
  z = math.opaque_zero(d.time * d.time) if m.opt.exact else None
  cinert = math.inert_com(m.body_inertia, d.ximat, d.xipos - root_com, m.body_mass, z)
  cinert = cinert.at[0].set(0.0)  # MuJoCo leaves the world's zero (a URDF world has mass)

  cdof = jnp.zeros((m.nv, 6), d.xipos.dtype)
  for jtype, g in _dof_plan(m)["groups"].items():
    offset = root_com[g["body"]] - d.xanchor[g["jnt"]]
    if jtype == JointType.SLIDE:
      rows = jnp.concatenate([jnp.zeros_like(offset), d.xaxis[g["jnt"]]], axis=-1)
    else:
      if jtype == JointType.HINGE:
        axis = d.xaxis[g["jnt"]]
      else:
        # Rotational dofs of ball and free joints turn about the body's own axes.
        axis = d.xmat[g["body"], :, g["local"] % 3]
      rows = jnp.concatenate([axis, jnp.cross(axis, offset)], axis=-1)
      if jtype == JointType.FREE:
        trans = np.eye(6)[3 + g["local"] % 3]
        rows = jnp.where((g["local"] < 3)[:, None], trans, rows)
    # distinct static indices, declared so: JAX then differentiates the scatter as a plain
    # one, where otherwise its JVP scatters ids to pick a winner among duplicate indices (more
    # ops, and one more array kept per step by reverse mode through a rollout)
    cdof = cdof.at[g["dof"]].set(rows, unique_indices=True)
  return d.replace(subtree_com=subtree_com, cinert=cinert, cdof=cdof)


def com_vel(m: Model, d: Data) -> Data:
  """mj_comVel: body velocities cvel and dof axis derivatives cdof_dot (com frame).

  Reads cdof, qvel. Writes cvel, cdof_dot.
  """
  plan = _dof_plan(m)
  dof_vel = d.cdof * d.qvel[:, None]
  cvel = jnp.asarray(body_plan(m)["body_dof"], dof_vel.dtype) @ dof_vel
  seen = jnp.asarray(plan["before"], dof_vel.dtype) @ dof_vel
  cdof_dot = math.motion_cross(seen, d.cdof)
  if len(plan["zero_dot"]):
    cdof_dot = cdof_dot.at[plan["zero_dot"]].set(0.0, unique_indices=True)
  return d.replace(cvel=cvel, cdof_dot=cdof_dot)
