"""Velocity-stage sensors (mj_sensorVel's cases) and their table. Joint and tendon limit
position sensors run here too: jaxmj builds the constraint rows in the velocity stage."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.scan import body_plan
from jaxmj.sensor.limit import limit
from jaxmj.sensor.objects import actuator_output, field, frame, mat_t_vec, velocity
from jaxmj.types import ConstraintType, Data, ObjType, SensorType


def _velocimeter(m, d, g):
  return velocity(m, d, ObjType.SITE, g.obj, local=True)[:, 3:]


def _gyro(m, d, g):
  return velocity(m, d, ObjType.SITE, g.obj, local=True)[:, :3]


def _jointvel(m, d, g):
  return d.qvel[m.jnt_dofadr[g.obj]][:, None]


def _ballangvel(m, d, g):
  return d.qvel[m.jnt_dofadr[g.obj][:, None] + np.arange(3)]


def _framevel(angular: bool):
  def fn(m, d, g):
    vel = velocity(m, d, g.objtype, g.obj)
    if g.reftype == ObjType.UNKNOWN:
      return vel[:, :3] if angular else vel[:, 3:]
    rvel = velocity(m, d, g.reftype, g.ref)
    pos, _ = frame(m, d, g.objtype, g.obj)
    rpos, rmat = frame(m, d, g.reftype, g.ref)
    if angular:
      return mat_t_vec(rmat, vel[:, :3] - rvel[:, :3])
    rel = vel[:, 3:] - rvel[:, 3:] - jnp.cross(rvel[:, :3], pos - rpos)
    return mat_t_vec(rmat, rel)

  return fn


def subtree_vel(m, d: Data):
  """mj_subtreeVel: (subtree_linvel, subtree_angmom), each (nbody, 3), world frame: the
  linear velocity of each body's subtree's centre of mass and the subtree's angular momentum
  about it. Reads cvel, xipos, ximat and subtree_com (after com_vel, as MuJoCo's)."""
  subtree = jnp.asarray(body_plan(m)["subtree"], d.qvel.dtype)
  vel = velocity(m, d, ObjType.BODY, np.arange(m.nbody))
  ang, lin = vel[:, :3], vel[:, 3:]
  mass = m.body_mass[:, None]
  stmass = subtree @ m.body_mass
  linvel = (subtree @ (mass * lin)) / jnp.maximum(stmass, MINVAL)[:, None]
  # Spin of each body: ximat diag(inertia) ximat' w.
  spin = jnp.einsum("nij,nj->ni", d.ximat, m.body_inertia * mat_t_vec(d.ximat, ang))
  moment = spin + jnp.cross(d.xipos, mass * lin)
  angmom = subtree @ moment - jnp.cross(d.subtree_com, stmass[:, None] * linvel)
  return linvel, angmom


def _subtreelinvel(m, d, g):
  return subtree_vel(m, d)[0][g.obj]


def _subtreeangmom(m, d, g):
  return subtree_vel(m, d)[1][g.obj]


T = SensorType
C = ConstraintType
# SensorType -> fn(m, d, group) -> (n, dim)
SENSOR_VEL = {
  T.VELOCIMETER: _velocimeter, T.GYRO: _gyro, T.JOINTVEL: _jointvel,
  T.BALLANGVEL: _ballangvel, T.TENDONVEL: field("ten_velocity"),
  T.ACTUATORVEL: actuator_output("actuator_velocity"),
  T.JOINTLIMITPOS: limit(C.LIMIT_JOINT, "pos"), T.JOINTLIMITVEL: limit(C.LIMIT_JOINT, "vel"),
  T.TENDONLIMITPOS: limit(C.LIMIT_TENDON, "pos"),
  T.TENDONLIMITVEL: limit(C.LIMIT_TENDON, "vel"),
  T.FRAMELINVEL: _framevel(False), T.FRAMEANGVEL: _framevel(True),
  T.SUBTREELINVEL: _subtreelinvel, T.SUBTREEANGMOM: _subtreeangmom,
}
