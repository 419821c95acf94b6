"""Utilities MuJoCo users reach for (engine_support): Jacobians, frames, object velocities,
positions on the joint manifold (contact forces: constraint/contact_force.py).

Every function is pure and works under jit, vmap and grad. Object ids may be Python ints or
traced integers; object types are host values (an ObjType or its name). Jacobians are dense
(3, nv); vectors in the spatial layout are (rotation, translation) as in MuJoCo.
"""

from __future__ import annotations

import jax.numpy as jnp
import jax.scipy.linalg
import numpy as np

from jaxmj import math
from jaxmj.names import obj_type
from jaxmj.scan import body_plan
from jaxmj.smooth.jac import (
  jac,
  jac_body,
  jac_body_com,
  jac_dot,
  jac_geom,
  jac_site,
  jac_subtree_com,
  point_jacobians,
)
from jaxmj.smooth.mass import mul_m, solve_m
from jaxmj.smooth.qpos import differentiate_pos, integrate_pos, normalize_quat
from jaxmj.types import Data, Model, ObjType, SameFrame

__all__ = [
  "add_m", "angmom_mat", "apply_ft", "differentiate_pos", "full_m",
  "integrate_pos", "jac", "jac_body", "jac_body_com", "jac_dot", "jac_geom", "jac_point_axis",
  "jac_site", "jac_subtree_com", "local2global", "mul_m", "mul_m2", "normalize_quat",
  "object_acceleration", "object_velocity", "solve_m", "solve_m2",
]


# ---------------------------------------------------------------- mass matrix


def full_m(m: Model, d: Data) -> jnp.ndarray:
  """mj_fullM: the dense (nv, nv) joint-space inertia. jaxmj stores qM dense already."""
  del m
  return d.qM


def _unit_l(d: Data) -> jnp.ndarray:
  """(nv, nv) the unit lower-triangular L of qM = L' D L (d.qLD holds D on its diagonal
  and L strictly below it: tree-sparse, zero off the ancestors)."""
  nv = d.qLD.shape[-1]
  return jnp.tril(d.qLD, -1) + jnp.eye(nv, dtype=d.qLD.dtype)


def mul_m2(m: Model, d: Data, vec: jnp.ndarray) -> jnp.ndarray:
  """mj_mulM2: sqrt(D) L vec (nv,), a square root of the inertia: |mul_m2(x)|^2 = x' M x.

  Reads the factor factor_m left in d (qLD), as MuJoCo does. vec: (nv,)."""
  del m
  return jnp.sqrt(jnp.diagonal(d.qLD)) * (_unit_l(d) @ vec)


def solve_m2(m: Model, d: Data, y: jnp.ndarray, sqrt_inv_d: jnp.ndarray | None = None
             ) -> jnp.ndarray:
  """mj_solveM2: half of the solve with M, x = sqrt_inv_d * (L'^-1 y), so that
  |solve_m2(y)|^2 = y' M^-1 y with MuJoCo's sqrt_inv_d = 1 / sqrt(D) (the default,
  from d.qLDiagInv). y: (nv,) or (n, nv), one vector per row as MuJoCo's n vectors;
  sqrt_inv_d: (nv,)."""
  del m
  if sqrt_inv_d is None:
    sqrt_inv_d = jnp.sqrt(d.qLDiagInv)
  y = jnp.asarray(y)
  rows = jnp.atleast_2d(y)
  x = jax.scipy.linalg.solve_triangular(_unit_l(d), rows.T, trans="T", lower=True,
                                        unit_diagonal=True).T * sqrt_inv_d
  return x.reshape(y.shape)


def add_m(m: Model, d: Data, dst: jnp.ndarray) -> jnp.ndarray:
  """mj_addM (dense destination): dst (nv, nv) plus the inertia's lower triangle and
  diagonal, as MuJoCo adds it (its strict upper triangle is not added)."""
  del m
  return dst + jnp.tril(d.qM)


# ---------------------------------------------------------------- frames and velocities


def local2global(d: Data, pos: jnp.ndarray, quat: jnp.ndarray, body,
                 sameframe: SameFrame | int = SameFrame.NONE) -> tuple[jnp.ndarray, jnp.ndarray]:
  """mj_local2Global: global position (3,) and orientation matrix (3, 3) of a frame given
  by `pos`, `quat` in `body`'s local frame; `sameframe` (host value) takes the body or
  inertial frame directly, as MuJoCo does."""
  sf = SameFrame(sameframe)
  if sf == SameFrame.BODY:
    xpos = d.xpos[body]
  elif sf == SameFrame.INERTIA:
    xpos = d.xipos[body]
  else:
    xpos = d.xpos[body] + d.xmat[body] @ pos
  if sf == SameFrame.NONE:
    xmat = math.quat_to_mat(math.quat_mul(d.xquat[body], quat))
  elif sf in (SameFrame.BODY, SameFrame.BODYROT):
    xmat = d.xmat[body]
  else:
    xmat = d.ximat[body]
  return xpos, xmat


def apply_ft(m: Model, d: Data, force: jnp.ndarray, torque: jnp.ndarray, point: jnp.ndarray,
             body) -> jnp.ndarray:
  """mj_applyFT: the generalized force (nv,) of a global force and torque (3,) acting at the
  global point (3,) moving with `body` (MuJoCo adds it to a qfrc_target; add it to, e.g.,
  d.qfrc_applied). Reads cdof and subtree_com (after com_pos)."""
  jacp, jacr = jac(m, d, point, body)
  force, torque = jnp.asarray(force), jnp.asarray(torque)
  # J' f row by row, as mju_mulMatTVec accumulates; the force's, then the torque's
  qforce = jacp[0] * force[0] + jacp[1] * force[1] + jacp[2] * force[2]
  return qforce + (jacr[0] * torque[0] + jacr[1] * torque[1] + jacr[2] * torque[2])


def jac_point_axis(m: Model, d: Data, point: jnp.ndarray, axis: jnp.ndarray,
                   body) -> tuple[jnp.ndarray, jnp.ndarray]:
  """mj_jacPointAxis: the Jacobians (3, nv) of the global `point` (3,) moving with `body` and
  of the global `axis` (3,) turning with it (each column: the rotational column x axis)."""
  jacp, jacr = jac(m, d, point, body)
  a = jnp.asarray(axis)
  return jacp, jnp.stack([jacr[1] * a[2] - jacr[2] * a[1], jacr[2] * a[0] - jacr[0] * a[2],
                          jacr[0] * a[1] - jacr[1] * a[0]])


def angmom_mat(m: Model, d: Data, body) -> jnp.ndarray:
  """mj_angmomMat: (3, nv) matrix whose product with qvel is the angular momentum of the
  subtree of `body` about its centre of mass (d.subtree_com[body]), world frame. Reads
  ximat, xipos, cdof, subtree_com (after com_pos)."""
  ids = np.arange(m.nbody)
  inside = jnp.asarray(body_plan(m)["subtree"] > 0)[body]  # (nbody,) the subtree's bodies
  jacp, jacr = point_jacobians(m, d, ids, d.xipos)  # (nbody, 3, nv)
  # ximat diag(inertia) ximat' jacr: each body's own angular momentum in the world frame
  inertia = jnp.einsum("bij,bj,bkj->bik", d.ximat, m.body_inertia, d.ximat)
  term1 = jnp.einsum("bik,bkv->biv", inertia, jacr)
  # mass (xipos - subtree com) x jacp: the moment of its linear momentum
  com = d.xipos - d.subtree_com[body]
  term2 = m.body_mass[:, None, None] * jnp.cross(com[:, :, None], jacp, axisa=1, axisb=1,
                                                  axisc=1)
  return jnp.sum(jnp.where(inside[:, None, None], term1 + term2, 0.0), axis=0)


def _object_frame(m: Model, d: Data, objtype, objid):
  """(body id, position, rotation) of an object with a spatial frame."""
  t = obj_type(objtype)
  if t == ObjType.BODY:
    return objid, d.xipos[objid], d.ximat[objid]
  if t == ObjType.XBODY:
    return objid, d.xpos[objid], d.xmat[objid]
  if t == ObjType.GEOM:
    return jnp.asarray(m.geom_bodyid)[objid], d.geom_xpos[objid], d.geom_xmat[objid]
  if t == ObjType.SITE:
    return jnp.asarray(m.site_bodyid)[objid], d.site_xpos[objid], d.site_xmat[objid]
  if t == ObjType.CAMERA:
    return jnp.asarray(m.cam_bodyid)[objid], d.cam_xpos[objid], d.cam_xmat[objid]
  raise ValueError(f"object type {t.name.lower()} has no spatial frame in jaxmj")


def _transform_motion(vec: jnp.ndarray, newpos, oldpos, rot, local: bool) -> jnp.ndarray:
  """mju_transformSpatial for a motion vector: moved from oldpos to newpos, then rotated
  into the frame `rot` if `local`."""
  ang, lin = vec[:3], vec[3:] + jnp.cross(vec[:3], newpos - oldpos)
  if local:
    ang, lin = rot.T @ ang, rot.T @ lin
  return jnp.concatenate([ang, lin])


def object_velocity(m: Model, d: Data, objtype, objid, local: bool = False) -> jnp.ndarray:
  """mj_objectVelocity: (6,) angular then linear velocity of the object's frame origin,
  in the world frame, or in the object's own frame when `local`. Reads cvel."""
  body, pos, rot = _object_frame(m, d, objtype, objid)
  com = d.subtree_com[jnp.asarray(m.body_rootid)[body]]
  return _transform_motion(d.cvel[body], pos, com, rot, local)


def object_acceleration(m: Model, d: Data, objtype, objid, local: bool = False) -> jnp.ndarray:
  """mj_objectAcceleration: (6,) angular then linear acceleration of the object's frame
  origin (world or local frame), with the rotating-frame term vel_rot x vel_lin added to
  the linear part as MuJoCo does. Gravity appears as an upward acceleration of every body,
  the world included (cacc's convention). Reads cacc and cvel: call rne_post_constraint after
  forward first, as MuJoCo needs mj_rnePostConstraint."""
  body, pos, rot = _object_frame(m, d, objtype, objid)
  com = d.subtree_com[jnp.asarray(m.body_rootid)[body]]
  acc = _transform_motion(d.cacc[body], pos, com, rot, local)
  vel = _transform_motion(d.cvel[body], pos, com, rot, local)
  return acc.at[3:].add(jnp.cross(vel[:3], vel[3:]))
