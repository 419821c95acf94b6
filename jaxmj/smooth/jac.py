"""Jacobians (mj_jac and its variants): translational and rotational (3, nv) Jacobians of
points moving with bodies, from cdof and subtree_com (after com_pos), and their time
derivatives (after com_vel). `point_jacobians` serves many (body, point) pairs at once, for
the tendon, actuator and constraint stages; the single-object forms are public utilities.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.constants import MINVAL
from jaxmj.scan import body_plan, cached_plan
from jaxmj.types import Data, JointType, Model


def _dof_mask(m: Model, body) -> jnp.ndarray | np.ndarray:
  """(..., nv) bool: the dofs that move `body` (its own and its ancestors'); numpy for
  static ids, so that static callers gather nothing at run time."""
  table = body_plan(m)["body_dof"]
  if isinstance(body, (int, np.integer, np.ndarray)):
    return table[body].astype(bool)
  return jnp.asarray(table, bool)[body]


def point_jacobians(m: Model, d: Data, body, point: jnp.ndarray):
  """mj_jac for many (body, point) pairs: translational and rotational (n, 3, nv) Jacobians.

  body: (n,) body ids (static numpy or traced); point: (n, 3) global. Reads cdof and
  subtree_com (after com_pos).
  """
  mask = _dof_mask(m, body)  # (n, nv)
  rootid = m.body_rootid if isinstance(body, np.ndarray) else jnp.asarray(m.body_rootid)
  offset = point - d.subtree_com[rootid[body]]
  ang, lin = d.cdof[:, :3], d.cdof[:, 3:]
  jacp = lin[None] + jnp.cross(ang[None], offset[:, None, :])  # (n, nv, 3)
  jacp = jnp.where(mask[..., None], jacp, 0.0)
  jacr = jnp.where(mask[..., None], ang[None], 0.0)
  return jnp.swapaxes(jacp, 1, 2), jnp.swapaxes(jacr, 1, 2)


def jac(m: Model, d: Data, point: jnp.ndarray, body) -> tuple[jnp.ndarray, jnp.ndarray]:
  """mj_jac: translational and rotational Jacobians (3, nv) of the global `point` (3,)
  moving with `body`. Reads cdof and subtree_com (after com_pos)."""
  if isinstance(body, (int, np.integer, np.ndarray)):
    body = np.asarray(body).reshape(1)
  else:
    body = jnp.asarray(body).reshape(1)
  jacp, jacr = point_jacobians(m, d, body, jnp.asarray(point)[None])
  return jacp[0], jacr[0]


def jac_body(m: Model, d: Data, body) -> tuple[jnp.ndarray, jnp.ndarray]:
  """mj_jacBody: Jacobians (3, nv) of the body frame's origin."""
  return jac(m, d, d.xpos[body], body)


def jac_body_com(m: Model, d: Data, body) -> tuple[jnp.ndarray, jnp.ndarray]:
  """mj_jacBodyCom: Jacobians (3, nv) of the body's centre of mass."""
  return jac(m, d, d.xipos[body], body)


def jac_geom(m: Model, d: Data, geom) -> tuple[jnp.ndarray, jnp.ndarray]:
  """mj_jacGeom: Jacobians (3, nv) of the geom's centre."""
  return jac(m, d, d.geom_xpos[geom], jnp.asarray(m.geom_bodyid)[geom])


def jac_site(m: Model, d: Data, site) -> tuple[jnp.ndarray, jnp.ndarray]:
  """mj_jacSite: Jacobians (3, nv) of the site's position."""
  return jac(m, d, d.site_xpos[site], jnp.asarray(m.site_bodyid)[site])


def jac_subtree_com(m: Model, d: Data, body) -> jnp.ndarray:
  """mj_jacSubtreeCom: translational Jacobian (3, nv) of the centre of mass of the subtree
  rooted at `body`: the mass-weighted mean of its bodies' com Jacobians."""
  plan = body_plan(m)
  weight = jnp.asarray(plan["subtree"], d.xipos.dtype)[body] * m.body_mass  # (nbody,)
  mask = jnp.asarray(plan["body_dof"], bool)  # (nbody, nv)
  offset = d.xipos - d.subtree_com[m.body_rootid]  # (nbody, 3)
  ang, lin = d.cdof[:, :3], d.cdof[:, 3:]
  # sum_b w_b (lin_i + ang_i x offset_b) over the bodies b that dof i moves
  w_mask = weight[:, None] * mask  # (nbody, nv)
  jacp = (jnp.sum(w_mask, axis=0)[:, None] * lin
          + jnp.cross(ang, w_mask.T @ offset))
  return jacp.T / jnp.maximum(jnp.sum(weight), MINVAL)


def jac_dot(m: Model, d: Data, point: jnp.ndarray, body) -> tuple[jnp.ndarray, jnp.ndarray]:
  """mj_jacDot: time derivatives (3, nv) of jac(point, body). Reads cdof, cdof_dot and cvel
  (after com_vel); rotational dofs of ball and free joints use cvel x cdof, as MuJoCo."""
  mask = _dof_mask(m, body)
  com = d.subtree_com[jnp.asarray(m.body_rootid)[body]]
  offset = point - com
  cvel = d.cvel[body]
  pvel_lin = cvel[3:] + jnp.cross(cvel[:3], offset)
  cdof_dot = d.cdof_dot
  quat = _quat_dofs(m)
  if len(quat):
    spun = math.motion_cross(d.cvel[m.dof_bodyid[quat]], d.cdof[quat])
    cdof_dot = cdof_dot.at[quat].set(spun)
  ang_dot, lin_dot = cdof_dot[:, :3], cdof_dot[:, 3:]
  jacp = lin_dot + jnp.cross(ang_dot, offset) + jnp.cross(d.cdof[:, :3], pvel_lin)
  jacp = jnp.where(mask[:, None], jacp, 0.0)
  jacr = jnp.where(mask[:, None], ang_dot, 0.0)
  return jacp.T, jacr.T


@cached_plan
def _quat_dofs(m) -> np.ndarray:
  """Rotational dofs of ball and free joints."""
  jnt = m.dof_jntid
  t = m.jnt_type[jnt]
  local = np.arange(m.nv) - m.jnt_dofadr[jnt]
  return np.flatnonzero((t == JointType.BALL) | ((t == JointType.FREE) & (local >= 3)))
