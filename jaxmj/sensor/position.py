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
  """Pixel coordinates (origin top left) of the site in the camera's image, as MuJoCo's
  cam_project: pinhole focal lengths from the intrinsics over the sensor size (x and y on
  their own) when the camera has a sensor size, else from fovy and the image height (the
  principal point is not used); the camera looks along its -z axis, y up. A site on the
  camera's plane divides by mjMINVAL with the sign of its z (positive at exactly 0)."""
  cam = g.ref
  p = mat_t_vec(d.cam_xmat[cam], d.site_xpos[g.obj] - d.cam_xpos[cam])
  res = np.asarray(m.cam_resolution)[cam].astype(np.float64)
  fovy = np.asarray(m.cam_fovy, np.float64)[cam]
  square = 0.5 / np.tan(fovy * np.pi / 360.0) * res[:, 1]
  # MuJoCo divides its float32 intrinsics by the float32 sensor size in float32
  size = np.asarray(m.cam_sensorsize, np.float32)[cam]
  intrinsic = np.asarray(m.cam_intrinsic, np.float32)[cam]
  physical = (size[:, 0] != 0) & (size[:, 1] != 0)
  focal = intrinsic[:, :2] / np.where(size == 0, np.float32(1), size) * res.astype(np.float32)
  fx = np.where(physical, focal[:, 0], square)
  fy = np.where(physical, focal[:, 1], square)
  z = p[:, 2]
  denom = jnp.where(jnp.abs(z) < MINVAL, jnp.where(z < 0, -MINVAL, MINVAL), z)
  u = -fx * (p[:, 0] / denom) + 0.5 * res[:, 0]
  v = fy * (p[:, 1] / denom) + 0.5 * res[:, 1]
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
