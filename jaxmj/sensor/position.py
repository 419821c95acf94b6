"""Position-stage sensors (mj_sensorPos's cases): the simple kinds, and the table that
dispatches every position-stage type, the larger kinds included (rangefinder.py,
inside.py, distance.py)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.constants import MINVAL
from jaxmj.sensor.distance import collision
from jaxmj.sensor.inside import insidesite
from jaxmj.sensor.objects import actuator_output, field, frame, mat_t_vec, quat
from jaxmj.sensor.rangefinder import rangefinder
from jaxmj.smooth import energy
from jaxmj.types import ObjType, SensorType


def _magnetometer(m, d, g):
  return mat_t_vec(d.site_xmat[g.obj], jnp.broadcast_to(m.opt.magnetic, (len(g.obj), 3)))


def _camprojection(m, d, g):
  """Pixel coordinates (origin top left) of the site in the camera's image (pinhole from
  fovy and resolution; the camera looks along its -z axis, y up)."""
  cam = g.ref
  if np.any(np.asarray(m.cam_sensorsize)[cam] > 0):
    raise NotImplementedError("camprojection with a camera sensorsize (intrinsic focal "
                              "lengths) is not supported by jaxmj yet")
  p = mat_t_vec(d.cam_xmat[cam], d.site_xpos[g.obj] - d.cam_xpos[cam])
  res = jnp.asarray(np.asarray(m.cam_resolution)[cam], p.dtype)
  fovy = jnp.asarray(np.asarray(m.cam_fovy)[cam], p.dtype)
  focal = 0.5 * res[:, 1] / jnp.tan(jnp.deg2rad(fovy) / 2)
  depth = -p[:, 2]
  depth = jnp.where(jnp.abs(depth) < MINVAL, MINVAL, depth)
  u = focal * p[:, 0] / depth + 0.5 * res[:, 0]
  v = -focal * p[:, 1] / depth + 0.5 * res[:, 1]
  return jnp.stack([u, v], axis=-1)


def _jointpos(m, d, g):
  return d.qpos[m.jnt_qposadr[g.obj]][:, None]


def _ballquat(m, d, g):
  adr = m.jnt_qposadr[g.obj][:, None] + np.arange(4)
  return math.normalize_quat(d.qpos[adr])


def _framepos(m, d, g):
  pos, _ = frame(m, d, g.objtype, g.obj)
  if g.reftype == ObjType.UNKNOWN:
    return pos
  rpos, rmat = frame(m, d, g.reftype, g.ref)
  return mat_t_vec(rmat, pos - rpos)


def _framequat(m, d, g):
  q = quat(m, d, g.objtype, g.obj)
  if g.reftype == ObjType.UNKNOWN:
    return q
  return math.quat_mul(math.quat_conj(quat(m, d, g.reftype, g.ref)), q)


def _frameaxis(axis: int):
  def fn(m, d, g):
    _, mat = frame(m, d, g.objtype, g.obj)
    v = mat[:, :, axis]
    if g.reftype == ObjType.UNKNOWN:
      return v
    _, rmat = frame(m, d, g.reftype, g.ref)
    return mat_t_vec(rmat, v)

  return fn


def _subtreecom(m, d, g):
  return d.subtree_com[g.obj]


def _e_potential(m, d, g):
  return jnp.broadcast_to(energy.energy_pos(m, d), (len(g.ids), 1))


def _e_kinetic(m, d, g):
  return jnp.broadcast_to(energy.energy_vel(m, d), (len(g.ids), 1))


def _clock(m, d, g):
  return jnp.broadcast_to(d.time, (len(g.ids), 1))


T = SensorType
# SensorType -> fn(m, d, group) -> (n, dim)
SENSOR_POS = {
  T.MAGNETOMETER: _magnetometer, T.RANGEFINDER: rangefinder,
  T.CAMPROJECTION: _camprojection, T.JOINTPOS: _jointpos,
  T.TENDONPOS: field("ten_length"), T.ACTUATORPOS: actuator_output("actuator_length"),
  T.BALLQUAT: _ballquat, T.FRAMEPOS: _framepos, T.FRAMEQUAT: _framequat,
  T.FRAMEXAXIS: _frameaxis(0), T.FRAMEYAXIS: _frameaxis(1), T.FRAMEZAXIS: _frameaxis(2),
  T.SUBTREECOM: _subtreecom, T.INSIDESITE: insidesite, T.GEOMDIST: collision("dist"),
  T.GEOMNORMAL: collision("normal"), T.GEOMFROMTO: collision("fromto"),
  T.E_POTENTIAL: _e_potential, T.E_KINETIC: _e_kinetic, T.CLOCK: _clock,
}
