"""Sensors (mj_sensorPos, mj_sensorVel, mj_sensorAcc) as tables keyed by sensor type.

Sensors are grouped on the host by (type, objtype, reftype, intprm): each group is one
vectorized gather over its sensors, written into sensordata at static addresses. `cutoff`
clamps real-valued outputs to [-cutoff, cutoff] and positive ones to [0, cutoff] when it is
positive, and leaves axes and quaternions alone; `noise` is metadata (MuJoCo does not apply
it either). Sensors that read constraint rows (joint and tendon limits) are evaluated with
the velocity stage, since jaxmj builds the efc rows there; after `forward` the values are
MuJoCo's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import energy, math, support
from jaxmj.ray import RAY_FUNCS, candidates, cast
from jaxmj.rne import rne_post_constraint
from jaxmj.scan import body_plan, cached_plan
from jaxmj.sensor_contact import contact
from jaxmj.sensor_geom import geom_distance
from jaxmj.types import ConstraintType, Data, DisableBit, GeomType, ObjType, SensorType, Stage

T = SensorType
C = ConstraintType
MINVAL = 1e-15
REAL, POSITIVE = 0, 1  # mjtDataType values that cutoff clamps


# ---------------------------------------------------------------- object frames


def _frame(m, d: Data, objtype: int, ids: np.ndarray):
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


def _quat(m, d: Data, objtype: int, ids: np.ndarray):
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


def _velocity(m, d: Data, objtype: int, ids: np.ndarray, local: bool = False):
  """(n, 6) mj_objectVelocity of each object: angular, linear."""
  f = lambda i: support.object_velocity(m, d, objtype, i, local)  # noqa: E731
  return jax.vmap(f)(jnp.asarray(ids))


def _acceleration(m, d: Data, objtype: int, ids: np.ndarray, local: bool = False):
  """(n, 6) mj_objectAcceleration of each object: angular, linear."""
  f = lambda i: support.object_acceleration(m, d, objtype, i, local)  # noqa: E731
  return jax.vmap(f)(jnp.asarray(ids))


def _mat_t_vec(mat, v):
  return jnp.einsum("nji,nj->ni", mat, v)


# ---------------------------------------------------------------- position stage


def _magnetometer(m, d, g):
  return _mat_t_vec(d.site_xmat[g.obj], jnp.broadcast_to(m.opt.magnetic, (len(g.obj), 3)))


def _rangefinder(m, d, g):
  """Site rangefinders: fields dist, dir, origin, point, normal, depth (= dist for a site)
  of the ray along the site's z axis, its own body excluded."""
  from jaxmj.ray_normal import hit_normal

  ids = candidates(m)
  pnt, vec = d.site_xpos[g.obj], d.site_xmat[g.obj][:, :, 2]
  exclude = jnp.asarray(m.site_bodyid[g.obj])
  dist, gid = jax.vmap(lambda p, v, b: cast(m, d, ids, p, v, b))(pnt, vec, exclude)
  hit = (dist >= 0)[:, None]
  unit = math.normalize(vec)
  fields = {0: dist[:, None], 1: jnp.where(hit, unit, 0.0), 2: pnt,
            3: jnp.where(hit, pnt + dist[:, None] * vec, 0.0), 5: dist[:, None]}
  if g.intprm[0] >> 4 & 1:
    normal = jax.vmap(lambda p, v, x, i: hit_normal(m, d, ids, p, v, x, i))(pnt, vec, dist, gid)
    fields[4] = jnp.where(hit, normal, 0.0)
  return jnp.concatenate([fields[k] for k in range(6) if g.intprm[0] >> k & 1], axis=-1)


def _camprojection(m, d, g):
  """Pixel coordinates (origin top left) of the site in the camera's image (pinhole from
  fovy and resolution; the camera looks along its -z axis, y up)."""
  cam = g.ref
  if np.any(np.asarray(m.cam_sensorsize)[cam] > 0):
    raise NotImplementedError("camprojection with a camera sensorsize (intrinsic focal "
                              "lengths) is not supported by jaxmj yet")
  p = _mat_t_vec(d.cam_xmat[cam], d.site_xpos[g.obj] - d.cam_xpos[cam])
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
  pos, _ = _frame(m, d, g.objtype, g.obj)
  if g.reftype == ObjType.UNKNOWN:
    return pos
  rpos, rmat = _frame(m, d, g.reftype, g.ref)
  return _mat_t_vec(rmat, pos - rpos)


def _framequat(m, d, g):
  q = _quat(m, d, g.objtype, g.obj)
  if g.reftype == ObjType.UNKNOWN:
    return q
  return math.quat_mul(math.quat_conj(_quat(m, d, g.reftype, g.ref)), q)


def _frameaxis(axis: int):
  def fn(m, d, g):
    _, mat = _frame(m, d, g.objtype, g.obj)
    v = mat[:, :, axis]
    if g.reftype == ObjType.UNKNOWN:
      return v
    _, rmat = _frame(m, d, g.reftype, g.ref)
    return _mat_t_vec(rmat, v)

  return fn


def _subtreecom(m, d, g):
  return d.subtree_com[g.obj]


def _inside(site_type, size, p):
  """mju_insideGeom: is local point p inside a site of the given type and size."""
  r2 = size[0] * size[0]
  xy = p[0] ** 2 + p[1] ** 2
  capsule = (xy + jnp.maximum(jnp.abs(p[2]) - size[1], 0.0) ** 2) <= r2
  tests = {
    GeomType.SPHERE: p @ p <= r2,
    GeomType.CAPSULE: capsule,
    GeomType.ELLIPSOID: jnp.sum((p / size) ** 2) <= 1.0,
    GeomType.CYLINDER: (xy <= r2) & (jnp.abs(p[2]) <= size[1]),
    GeomType.BOX: jnp.all(jnp.abs(p) <= size),
  }
  out = jnp.zeros((), bool)
  for t, v in tests.items():
    out = jnp.where(site_type == t, v, out)
  return out


def _insidesite(m, d, g):
  if g.intprm[0]:
    from jaxmj.sensor_inside import enclosed

    return enclosed(m, d, g)
  pos, _ = _frame(m, d, g.objtype, g.obj)
  local = _mat_t_vec(d.site_xmat[g.ref], pos - d.site_xpos[g.ref])
  inside = jax.vmap(_inside)(jnp.asarray(m.site_type[g.ref]), m.site_size[g.ref], local)
  return inside.astype(pos.dtype)[:, None]


def _body_geoms(m, objtype: int, oid: int) -> list[int]:
  if objtype == ObjType.GEOM:
    return [int(oid)]
  adr, num = int(m.body_geomadr[oid]), int(m.body_geomnum[oid])
  return list(range(adr, adr + num))


def _collision(kind: str):
  """geomdist, geomnormal, geomfromto: the smallest signed distance over the geom pairs of
  the two geoms or bodies, searched up to the sensor's cutoff (MuJoCo's distmax)."""

  def fn(m, d, g):
    pairs, owner = [], []
    for k, (o, r) in enumerate(zip(g.obj, g.ref)):
      for x in _body_geoms(m, g.objtype, o):
        for y in _body_geoms(m, g.reftype, r):
          pairs.append((x, y))
          owner.append(k)
    n = len(g.obj)
    cutoff = m.sensor_cutoff[g.ids]
    if not pairs:
      dist, fromto = cutoff, jnp.zeros((n, 6), d.qpos.dtype)
    else:
      g1, g2 = (np.array(c) for c in zip(*pairs))
      owner = np.array(owner)
      pd, pft = geom_distance(m, d, g1, g2, cutoff[owner])
      # First pair (in MuJoCo's loop order) attaining the smallest distance, per sensor.
      width = max(np.bincount(owner, minlength=n))
      slot = np.full((n, width), -1)
      for k in range(n):
        ids = np.flatnonzero(owner == k)
        slot[k, : len(ids)] = ids
      cand = jnp.where(slot >= 0, pd[np.maximum(slot, 0)], jnp.inf)
      best = jnp.argmin(cand, axis=1)
      pick = jnp.asarray(np.maximum(slot, 0))[jnp.arange(n), best]
      found = cand[jnp.arange(n), best] < cutoff
      dist = jnp.where(found, pd[pick], cutoff)
      fromto = jnp.where(found[:, None], pft[pick], 0.0)
    if kind == "dist":
      return dist[:, None]
    if kind == "fromto":
      return fromto
    diff = fromto[:, 3:] - fromto[:, :3]
    norm = jnp.sqrt(jnp.sum(diff * diff, -1, keepdims=True))
    return jnp.where(norm > MINVAL, diff / jnp.where(norm > MINVAL, norm, 1.0), 0.0)

  return fn


def _e_potential(m, d, g):
  return jnp.broadcast_to(energy.energy_pos(m, d), (len(g.ids), 1))


def _e_kinetic(m, d, g):
  return jnp.broadcast_to(energy.energy_vel(m, d), (len(g.ids), 1))


def _clock(m, d, g):
  return jnp.broadcast_to(d.time, (len(g.ids), 1))


# ---------------------------------------------------------------- velocity stage


def _velocimeter(m, d, g):
  return _velocity(m, d, ObjType.SITE, g.obj, local=True)[:, 3:]


def _gyro(m, d, g):
  return _velocity(m, d, ObjType.SITE, g.obj, local=True)[:, :3]


def _jointvel(m, d, g):
  return d.qvel[m.jnt_dofadr[g.obj]][:, None]


def _ballangvel(m, d, g):
  return d.qvel[m.jnt_dofadr[g.obj][:, None] + np.arange(3)]


def _limit(kind: ConstraintType, field: str):
  """Joint and tendon limit sensors: efc_pos - efc_margin, efc_vel or efc_force of the
  object's first active limit row (as MuJoCo's first matching row; a range narrower than
  2 * margin owns a lower and an upper row), 0 when none is active."""

  def fn(m, d, g):
    from jaxmj.constraint import efc_layout

    lay = efc_layout(m, d.contact.dim)
    rows = {}
    for r in np.flatnonzero(lay.efc_type == kind):
      rows.setdefault(int(lay.efc_id[r]), []).append(int(r))
    out = jnp.zeros(len(g.obj), d.qpos.dtype)
    for k in (1, 0):  # the first row wins: assign it last
      row = np.array([(rows.get(int(j), []) + [-1, -1])[k] for j in g.obj])
      if np.all(row < 0):
        continue
      r = np.maximum(row, 0)
      value = {"pos": d.efc_pos[r] - d.efc_margin[r], "vel": d.efc_vel[r],
               "frc": d.efc_force[r]}[field]
      out = jnp.where((row >= 0) & d.efc_active[r], value, out)
    return out[:, None]

  return fn


def _field(name: str, index: str = "obj"):
  """Sensors that copy one Data entry per object: d.<name>[objid]."""

  def fn(m, d, g):
    return getattr(d, name)[getattr(g, index)][:, None]

  return fn


def _tendonactfrc(m, d, g):
  """Sum of actuator_force over the actuators transmitting through each tendon."""
  from jaxmj.types import TrnType

  on = (np.asarray(m.actuator_trntype) == TrnType.TENDON)[None] & (
    np.asarray(m.actuator_trnid)[:, 0][None] == g.obj[:, None])
  return (jnp.asarray(on, d.qpos.dtype) @ d.actuator_force)[:, None]


def _framevel(angular: bool):
  def fn(m, d, g):
    vel = _velocity(m, d, g.objtype, g.obj)
    if g.reftype == ObjType.UNKNOWN:
      return vel[:, :3] if angular else vel[:, 3:]
    rvel = _velocity(m, d, g.reftype, g.ref)
    pos, _ = _frame(m, d, g.objtype, g.obj)
    rpos, rmat = _frame(m, d, g.reftype, g.ref)
    if angular:
      return _mat_t_vec(rmat, vel[:, :3] - rvel[:, :3])
    rel = vel[:, 3:] - rvel[:, 3:] - jnp.cross(rvel[:, :3], pos - rpos)
    return _mat_t_vec(rmat, rel)

  return fn


def _subtree_vel(m, d: Data):
  """mj_subtreeVel: (nbody, 3) subtree com velocity and angular momentum about it."""
  subtree = jnp.asarray(body_plan(m)["subtree"], d.qvel.dtype)
  vel = _velocity(m, d, ObjType.BODY, np.arange(m.nbody))
  ang, lin = vel[:, :3], vel[:, 3:]
  mass = m.body_mass[:, None]
  stmass = subtree @ m.body_mass
  linvel = (subtree @ (mass * lin)) / jnp.maximum(stmass, MINVAL)[:, None]
  # Spin of each body: ximat diag(inertia) ximat' w.
  spin = jnp.einsum("nij,nj->ni", d.ximat, m.body_inertia * _mat_t_vec(d.ximat, ang))
  moment = spin + jnp.cross(d.xipos, mass * lin)
  angmom = subtree @ moment - jnp.cross(d.subtree_com, stmass[:, None] * linvel)
  return linvel, angmom


def _subtreelinvel(m, d, g):
  return _subtree_vel(m, d)[0][g.obj]


def _subtreeangmom(m, d, g):
  return _subtree_vel(m, d)[1][g.obj]


# ---------------------------------------------------------------- acceleration stage


def _touch(m, d, g):
  """Normal forces of contacts on the site's body whose force ray (from the contact point,
  along the normal towards the body) meets the site volume."""
  n = len(g.obj)
  ncon = d.contact.dist.shape[0]
  if ncon == 0 or d.efc_force.shape[0] == 0:
    return jnp.zeros((n, 1), d.qpos.dtype)
  normal_force = support.contact_forces(m, d)[:, 0]
  body = m.site_bodyid[g.obj]
  b1 = m.geom_bodyid[d.contact.geom1]
  b2 = m.geom_bodyid[d.contact.geom2]
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
  return _acceleration(m, d, ObjType.SITE, g.obj, local=True)[:, 3:]


def _force_torque(torque: bool):
  def fn(m, d, g):
    body = m.site_bodyid[g.obj]
    frc = d.cfrc_int[body]
    arm = d.site_xpos[g.obj] - d.subtree_com[m.body_rootid[body]]
    ang = frc[:, :3] - jnp.cross(arm, frc[:, 3:])
    return _mat_t_vec(d.site_xmat[g.obj], ang if torque else frc[:, 3:])

  return fn


def _jointactfrc(m, d, g):
  return d.qfrc_actuator[m.jnt_dofadr[g.obj]][:, None]


def _frameacc(angular: bool):
  def fn(m, d, g):
    acc = _acceleration(m, d, g.objtype, g.obj)
    return acc[:, :3] if angular else acc[:, 3:]

  return fn


# ---------------------------------------------------------------- tables

# SensorType -> fn(m, d, group) -> (n, dim), per stage (the stage MuJoCo computes it in).
SENSOR_POS = {
  T.MAGNETOMETER: _magnetometer, T.RANGEFINDER: _rangefinder,
  T.CAMPROJECTION: _camprojection, T.JOINTPOS: _jointpos,
  T.TENDONPOS: _field("ten_length"), T.ACTUATORPOS: _field("actuator_length"),
  T.BALLQUAT: _ballquat, T.FRAMEPOS: _framepos, T.FRAMEQUAT: _framequat,
  T.FRAMEXAXIS: _frameaxis(0), T.FRAMEYAXIS: _frameaxis(1), T.FRAMEZAXIS: _frameaxis(2),
  T.SUBTREECOM: _subtreecom, T.INSIDESITE: _insidesite, T.GEOMDIST: _collision("dist"),
  T.GEOMNORMAL: _collision("normal"), T.GEOMFROMTO: _collision("fromto"),
  T.E_POTENTIAL: _e_potential,
  T.E_KINETIC: _e_kinetic, T.CLOCK: _clock,
}
SENSOR_VEL = {
  T.VELOCIMETER: _velocimeter, T.GYRO: _gyro, T.JOINTVEL: _jointvel,
  T.BALLANGVEL: _ballangvel, T.TENDONVEL: _field("ten_velocity"),
  T.ACTUATORVEL: _field("actuator_velocity"),
  T.JOINTLIMITPOS: _limit(C.LIMIT_JOINT, "pos"), T.JOINTLIMITVEL: _limit(C.LIMIT_JOINT, "vel"),
  T.TENDONLIMITPOS: _limit(C.LIMIT_TENDON, "pos"),
  T.TENDONLIMITVEL: _limit(C.LIMIT_TENDON, "vel"),

  T.FRAMELINVEL: _framevel(False), T.FRAMEANGVEL: _framevel(True),
  T.SUBTREELINVEL: _subtreelinvel, T.SUBTREEANGMOM: _subtreeangmom,
}
SENSOR_ACC = {
  T.TOUCH: _touch, T.ACCELEROMETER: _accelerometer, T.FORCE: _force_torque(False),
  T.TORQUE: _force_torque(True), T.JOINTACTFRC: _jointactfrc,
  T.JOINTLIMITFRC: _limit(C.LIMIT_JOINT, "frc"), T.TENDONLIMITFRC: _limit(C.LIMIT_TENDON, "frc"),
  T.ACTUATORFRC: _field("actuator_force"),
  T.TENDONACTFRC: _tendonactfrc, T.CONTACT: contact, T.FRAMELINACC: _frameacc(False),
  T.FRAMEANGACC: _frameacc(True),
}
SUPPORTED = frozenset(SENSOR_POS) | frozenset(SENSOR_VEL) | frozenset(SENSOR_ACC)
_TABLES = {Stage.POS: SENSOR_POS, Stage.VEL: SENSOR_VEL, Stage.ACC: SENSOR_ACC}
# Types that need mj_rnePostConstraint (cacc, cfrc_int, cfrc_ext) first.
_NEED_RNE_POST = {T.ACCELEROMETER, T.FORCE, T.TORQUE, T.FRAMELINACC, T.FRAMEANGACC}


class _Group:
  """Static description of one group of sensors of the same type and object types."""

  def __init__(self, m, ids: np.ndarray):
    self.ids = ids
    self.type = int(m.sensor_type[ids[0]])
    self.objtype, self.reftype = int(m.sensor_objtype[ids[0]]), int(m.sensor_reftype[ids[0]])
    self.obj, self.ref = m.sensor_objid[ids], m.sensor_refid[ids]
    self.intprm = tuple(int(v) for v in m.sensor_intprm[ids[0]])
    self.cols = m.sensor_adr[ids][:, None] + np.arange(int(m.sensor_dim[ids[0]]))
    self.datatype = m.sensor_datatype[ids]


@cached_plan
def _groups(m, stage: int) -> list:
  table = _TABLES[Stage(stage)]
  sel = [i for i in range(m.nsensor) if int(m.sensor_type[i]) in table]
  keys = {}
  for i in sel:
    key = (int(m.sensor_type[i]), int(m.sensor_objtype[i]), int(m.sensor_reftype[i]),
           tuple(int(v) for v in m.sensor_intprm[i]))
    keys.setdefault(key, []).append(i)
  return [_Group(m, np.array(ids)) for ids in keys.values()]


# Their cutoff is a search distance, not a clamp (as in MuJoCo). geomdist's is both: a
# penetration deeper than the cutoff reads -cutoff.
_NO_CLAMP = {T.GEOMNORMAL, T.GEOMFROMTO, T.CONTACT}


def _cutoff(m, g: _Group, value):
  if g.type in _NO_CLAMP:
    return value
  cutoff = m.sensor_cutoff[g.ids][:, None]
  on = cutoff > 0
  real = (g.datatype == REAL)[:, None]
  pos = (g.datatype == POSITIVE)[:, None]
  value = jnp.where(on & real, jnp.clip(value, -cutoff, cutoff), value)
  return jnp.where(on & pos, jnp.minimum(value, cutoff), value)


def _stage(m, d: Data, stage: Stage) -> Data:
  if m.nsensor == 0 or m.opt.disabled(DisableBit.SENSOR):
    return d
  groups = _groups(m, int(stage))
  if not groups:
    return d
  if stage == Stage.ACC and any(g.type in _NEED_RNE_POST for g in groups):
    d = rne_post_constraint(m, d)
  table = _TABLES[stage]
  data = d.sensordata
  for g in groups:
    value = table[g.type](m, d, g).astype(data.dtype)
    data = data.at[g.cols].set(_cutoff(m, g, value))
  return d.replace(sensordata=data)


def sensor_pos(m, d: Data) -> Data:
  """mj_sensorPos: position-stage sensors into sensordata (after fwd_position)."""
  return _stage(m, d, Stage.POS)


def sensor_vel(m, d: Data) -> Data:
  """mj_sensorVel: velocity-stage sensors (after fwd_velocity), and joint and tendon
  limit position sensors, whose constraint rows jaxmj builds in the velocity stage."""
  return _stage(m, d, Stage.VEL)


def sensor_acc(m, d: Data) -> Data:
  """mj_sensorAcc: acceleration-stage sensors (after the constraint solver); runs
  mj_rnePostConstraint first when a sensor needs cacc or cfrc_int."""
  return _stage(m, d, Stage.ACC)
