"""Per-object quantities the sensor kinds share: frames, orientations, velocities and
accelerations of bodies, geoms, sites and cameras, and per-object copies of Data entries."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.smooth import support
from jaxmj.types import Data, ObjType


def frame(m, d: Data, objtype: int, ids: np.ndarray):
  """(pos (n, 3), mat (n, 3, 3)) of objects with a spatial frame, global."""
  t = ObjType(objtype)
  if t == ObjType.BODY:
    return d.xipos[ids], d.ximat[ids]
  if t == ObjType.XBODY:
    return d.xpos[ids], d.xmat[ids]
  if t == ObjType.GEOM:
    return d.geom_xpos[ids], d.geom_xmat[ids]
  if t == ObjType.SITE:
    return d.site_xpos[ids], d.site_xmat[ids]
  return d.cam_xpos[ids], d.cam_xmat[ids]


def quat(m, d: Data, objtype: int, ids: np.ndarray):
  """(n, 4) orientation quaternions of objects, global."""
  t = ObjType(objtype)
  if t == ObjType.BODY:
    return math.quat_mul(d.xquat[ids], m.body_iquat[ids])
  if t == ObjType.XBODY:
    return d.xquat[ids]
  if t == ObjType.GEOM:
    return d.geom_xquat[ids]
  if t == ObjType.SITE:
    return d.site_xquat[ids]
  return math.quat_mul(d.xquat[m.cam_bodyid[ids]], m.cam_quat[ids])


def velocity(m, d: Data, objtype: int, ids: np.ndarray, local: bool = False):
  """(n, 6) mj_objectVelocity of each object: angular, linear."""
  f = lambda i: support.object_velocity(m, d, objtype, i, local)  # noqa: E731
  return jax.vmap(f)(jnp.asarray(ids))


def acceleration(m, d: Data, objtype: int, ids: np.ndarray, local: bool = False):
  """(n, 6) mj_objectAcceleration of each object: angular, linear."""
  f = lambda i: support.object_acceleration(m, d, objtype, i, local)  # noqa: E731
  return jax.vmap(f)(jnp.asarray(ids))


def mat_t_vec(mat, v):
  """(n, 3) mat[i].T @ v[i]: global vectors in the objects' local frames."""
  return jnp.einsum("nji,nj->ni", mat, v)


def field(name: str, index: str = "obj"):
  """Sensors that copy one Data entry per object: d.<name>[objid]."""

  def fn(m, d, g):
    return getattr(d, name)[getattr(g, index)][:, None]

  return fn


def actuator_output(name: str):
  """Actuator sensors: the actuator's outputs d.<name>[outadr : + outnum] (three for so3)."""

  def fn(m, d, g):
    return getattr(d, name)[m.actuator_outadr[g.obj][:, None] + np.arange(g.cols.shape[1])]

  return fn
