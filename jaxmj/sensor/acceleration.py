"""Acceleration-stage sensors (mj_sensorAcc's cases, after the constraint solver) and their
table; the contact sensor is in contact.py."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.collision.ray import RAY_FUNCS
from jaxmj.constraint import contact_force
from jaxmj.sensor.contact import contact
from jaxmj.sensor.limit import limit
from jaxmj.sensor.objects import acceleration, actuator_output, mat_t_vec
from jaxmj.types import ConstraintType, GeomType, ObjType, SensorType, TrnType


def _touch(m, d, g):
  """Normal forces of contacts on the site's body whose force ray (from the contact point,
  along the normal towards the body) meets the site volume."""
  n = len(g.obj)
  ncon = d.contact.dist.shape[0]
  if ncon == 0 or d.efc_force.shape[0] == 0:
    return jnp.zeros((n, 1), d.qpos.dtype)
  normal_force = contact_force.contact_forces(m, d)[:, 0]
  body = m.site_bodyid[g.obj]
  b1, b2 = d.contact.bodies(m.geom_bodyid)
  on1 = body[:, None] == b1[None]
  on2 = body[:, None] == b2[None]
  ray_dir = math.normalize(d.contact.frame[:, 0] * normal_force[:, None])
  direction = jnp.where(on2[..., None], -ray_dir[None], ray_dir[None])

  def hits(site, pos, vec):
    lp = d.site_xmat[site].T @ (pos - d.site_xpos[site])
    lv = d.site_xmat[site].T @ vec
    size = m.site_size[site]
    t = jnp.asarray(m.site_type)[site]
    out = jnp.inf
    for gt, fn in RAY_FUNCS.items():
      if gt != GeomType.PLANE:
        out = jnp.where(t == gt, fn(size, lp, lv), out)
    return jnp.isfinite(out)

  sites = jnp.asarray(g.obj)
  hit = jax.vmap(lambda s, vecs: jax.vmap(lambda p, v: hits(s, p, v))(d.contact.pos, vecs))(
    sites, direction)
  use = (on1 | on2) & (normal_force > 0)[None] & hit
  return jnp.sum(jnp.where(use, normal_force[None], 0.0), axis=1)[:, None]


def _accelerometer(m, d, g):
  return acceleration(m, d, ObjType.SITE, g.obj, local=True)[:, 3:]


def _force_torque(torque: bool):
  def fn(m, d, g):
    body = m.site_bodyid[g.obj]
    frc = d.cfrc_int[body]
    arm = d.site_xpos[g.obj] - d.subtree_com[m.body_rootid[body]]
    ang = frc[:, :3] - jnp.cross(arm, frc[:, 3:])
    return mat_t_vec(d.site_xmat[g.obj], ang if torque else frc[:, 3:])

  return fn


def _jointactfrc(m, d, g):
  return d.qfrc_actuator[m.jnt_dofadr[g.obj]][:, None]


def _tendonactfrc(m, d, g):
  """Sum of actuator_force over the actuators transmitting through each tendon."""
  on = (np.asarray(m.actuator_trntype) == TrnType.TENDON)[None] & (
    np.asarray(m.actuator_trnid)[:, 0][None] == g.obj[:, None])
  return (jnp.asarray(on, d.qpos.dtype) @ d.actuator_force[m.actuator_outadr])[:, None]


def _frameacc(angular: bool):
  def fn(m, d, g):
    acc = acceleration(m, d, g.objtype, g.obj)
    return acc[:, :3] if angular else acc[:, 3:]

  return fn


T = SensorType
C = ConstraintType
# SensorType -> fn(m, d, group) -> (n, dim)
SENSOR_ACC = {
  T.TOUCH: _touch, T.ACCELEROMETER: _accelerometer, T.FORCE: _force_torque(False),
  T.TORQUE: _force_torque(True), T.JOINTACTFRC: _jointactfrc,
  T.JOINTLIMITFRC: limit(C.LIMIT_JOINT, "frc"), T.TENDONLIMITFRC: limit(C.LIMIT_TENDON, "frc"),
  T.ACTUATORFRC: actuator_output("actuator_force"),
  T.TENDONACTFRC: _tendonactfrc, T.CONTACT: contact, T.FRAMELINACC: _frameacc(False),
  T.FRAMEANGACC: _frameacc(True),
}
# Types that need mj_rnePostConstraint (cacc, cfrc_int, cfrc_ext) first.
NEED_RNE_POST = frozenset({T.ACCELEROMETER, T.FORCE, T.TORQUE, T.FRAMELINACC, T.FRAMEANGACC})
