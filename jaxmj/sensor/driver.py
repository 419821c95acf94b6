"""The sensor stages (mj_sensorPos, mj_sensorVel, mj_sensorAcc): tables keyed by type.

Sensors are grouped on the host by (type, objtype, reftype, intprm): each group is one
vectorized gather over its sensors, written into sensordata at static addresses. `cutoff`
clamps real-valued outputs to [-cutoff, cutoff] and positive ones to [0, cutoff] when it is
positive, and leaves axes and quaternions alone; `noise` is metadata (MuJoCo does not apply
it either). Sensors that read constraint rows (joint and tendon limits) are evaluated with
the velocity stage, since jaxmj builds the efc rows there; after `forward` the values are
MuJoCo's.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.constraint.extforce import rne_post_constraint
from jaxmj.scan import cached_plan
from jaxmj.sensor.acceleration import NEED_RNE_POST, SENSOR_ACC
from jaxmj.sensor.position import SENSOR_POS
from jaxmj.sensor.velocity import SENSOR_VEL
from jaxmj.types import Data, DisableBit, SensorType, Stage

T = SensorType
REAL, POSITIVE = 0, 1  # mjtDataType values that cutoff clamps
SUPPORTED = frozenset(SENSOR_POS) | frozenset(SENSOR_VEL) | frozenset(SENSOR_ACC)
_TABLES = {Stage.POS: SENSOR_POS, Stage.VEL: SENSOR_VEL, Stage.ACC: SENSOR_ACC}
# Their cutoff is a search distance, not a clamp (as in MuJoCo). geomdist's is both: a
# penetration deeper than the cutoff reads -cutoff.
_NO_CLAMP = {T.GEOMNORMAL, T.GEOMFROMTO, T.CONTACT}


class Group:
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
def _groups(m, stage: int, history_only: bool = False) -> list:
  table = _TABLES[Stage(stage)]
  sel = [i for i in range(m.nsensor) if int(m.sensor_type[i]) in table
         and (not history_only or m.sensor_history[i, 0] > 0)]
  keys = {}
  for i in sel:
    key = (int(m.sensor_type[i]), int(m.sensor_objtype[i]), int(m.sensor_reftype[i]),
           tuple(int(v) for v in m.sensor_intprm[i]), int(m.sensor_dim[i]))
    keys.setdefault(key, []).append(i)
  return [Group(m, np.array(ids)) for ids in keys.values()]


def _cutoff(m, g: Group, value):
  if g.type in _NO_CLAMP:
    return value
  cutoff = m.sensor_cutoff[g.ids][:, None]
  on = cutoff > 0
  real = (g.datatype == REAL)[:, None]
  pos = (g.datatype == POSITIVE)[:, None]
  value = jnp.where(on & real, jnp.clip(value, -cutoff, cutoff), value)
  return jnp.where(on & pos, jnp.minimum(value, cutoff), value)


def _stage(m, d: Data, stage: Stage, history_only: bool = False) -> Data:
  if m.nsensor == 0 or m.opt.disabled(DisableBit.SENSOR):
    return d
  groups = _groups(m, int(stage), history_only)
  if not groups:
    return d
  if stage == Stage.ACC and any(g.type in NEED_RNE_POST for g in groups):
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


def sensor_fresh(m, d: Data, acc: bool = False) -> Data:
  """The position- and velocity-stage sensors that own a history buffer (and with `acc` the
  acceleration-stage ones), computed again: after step1 (forward) their sensordata holds
  delayed or held values, while the buffer records computed ones (mj_step2 pushes computed
  values too, and mj_advance computes a delayed sensor's)."""
  d = _stage(m, _stage(m, d, Stage.POS, True), Stage.VEL, True)
  return _stage(m, d, Stage.ACC, True) if acc else d
