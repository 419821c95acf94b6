"""Sample histories of controls and sensors (mjData.history): delays and sensor intervals.

An actuator or sensor with `nsample` > 0 owns a ring buffer in `d.history` at its
actuator_historyadr / sensor_historyadr, laid out as MuJoCo 4.0 does:
[user slot, index of the newest sample, nsample times, nsample values (dim each)]. The
user slot holds a sensor's last computation time (its interval phase); 0 for actuators.

* A step pushes the current ctrl, and the freshly computed sensor values, stamped with the
  time at which the step started (`push`, after forward; sensors with an interval only
  when due: time >= last + period, which advances last by one period). A stamp older than
  the newest sample (after a keyframe with an earlier time) is inserted in time order.
* With a positive delay, the actuator reads its ctrl (`ctrl`) and the sensor reports
  (`delay_sensors`) the buffer's value at time - delay, read before this step's push (so
  the least effective delay is one timestep). Interval sensors without delay report their
  newest sample when not due. step1 does this for position- and velocity-stage sensors.
* Reading (mj_readCtrl / mj_readSensor): zero-order hold, linear, or cubic Hermite with
  Catmull-Rom tangents (zero at the ends), constant outside the buffer's time span.

The buffers are fixed-size: pushes and reads index them with the traced newest index.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.scan import cached_plan
from jaxmj.types import Data, DisableBit, Model, Stage


@cached_plan
def _plan(m) -> dict:
  """Static groups of buffers with the same (nsample, dim, interp): actuators and sensors."""
  groups = {}
  for kind, hist, adr, dims in (
      ("ctrl", m.actuator_history, m.actuator_historyadr, m.actuator_ctrlnum),
      ("sensor", m.sensor_history, m.sensor_historyadr, m.sensor_dim)):
    for i in np.flatnonzero(np.asarray(hist)[:, 0] > 0):
      key = (kind, int(hist[i, 0]), int(dims[i]), int(hist[i, 1]))
      groups.setdefault(key, []).append((int(i), int(adr[i])))
  return {k: (np.array([i for i, _ in v]), np.array([a for _, a in v]))
          for k, v in groups.items()}


def _fields(buf, adr: np.ndarray, n: int, dim: int):
  """(last (k,), newest index (k,) int, times (k, n), values (k, n, dim)) of k buffers."""
  times = buf[adr[:, None] + 2 + np.arange(n)]
  values = buf[adr[:, None, None] + 2 + n + dim * np.arange(n)[:, None] + np.arange(dim)]
  return buf[adr], buf[adr + 1].astype(jnp.int32), times, values


def _read_one(times, values, newest, t, interp: int):
  """(dim,) value of one buffer at time t (times (n,), values (n, dim)): the oldest sample
  up to MINVAL after it, the sample just after t when stamped within MINVAL of it, else
  the samples around t held or interpolated (constant outside the buffer's span). The
  tolerances decide between samples a keyframe's time left a rounding error apart."""
  n = times.shape[0]
  order = (newest + 1 + jnp.arange(n)) % n  # oldest first
  ts, vs = times[order], values[order]
  i = jnp.sum(ts < t) - 1  # the last sample strictly before t (-1: none)
  after = jnp.minimum(i + 1, n - 1)
  exact = (i + 1 < n) & (ts[after] - t <= MINVAL)
  if interp == 0 or n == 1:
    out = vs[jnp.clip(i, 0, n - 1)]
  else:
    lo = jnp.clip(i, 0, n - 2)
    hi = lo + 1
    h = ts[hi] - ts[lo]
    s = jnp.clip((t - ts[lo]) / jnp.where(h > 0, h, 1.0), 0.0, 1.0)
    if interp == 1:
      out = vs[lo] + s * (vs[hi] - vs[lo])
    else:
      def tangent(j):
        a, b = jnp.maximum(j - 1, 0), jnp.minimum(j + 1, n - 1)
        span = ts[b] - ts[a]
        inner = (j > 0) & (j < n - 1)
        return jnp.where(inner, (vs[b] - vs[a]) / jnp.where(inner, span, 1.0) * h, 0.0)

      s2, s3 = s * s, s * s * s
      out = ((2 * s3 - 3 * s2 + 1) * vs[lo] + (s3 - 2 * s2 + s) * tangent(lo)
             + (-2 * s3 + 3 * s2) * vs[hi] + (s3 - s2) * tangent(hi))
  out = jnp.where(exact, vs[after], jnp.where(i >= n - 1, vs[n - 1], out))
  return jnp.where(t <= ts[0] + MINVAL, vs[0], out)


def _read(buf, adr, n, dim, interp, t):
  """(k, dim) values of k buffers at times t (k,)."""
  _, newest, times, values = _fields(buf, adr, n, dim)
  return jax.vmap(lambda a, b, c, x: _read_one(a, b, c, x, interp))(times, values, newest, t)


def init(m: Model, dtype) -> jax.Array:
  """mj_resetData's history: zero values; newest index nsample - 1; actuator times
  -nsample*dt ... -dt; a sensor's times spaced by its period (dt when it has none) up to
  its phase (-period when 0), rounded up to multiples of dt; user slot the phase (0 for
  actuators)."""
  buf = jnp.zeros(m.nhistory, dtype)
  dt = m.opt.timestep
  for (kind, n, _, _), (ids, adr) in _plan(m).items():
    k = jnp.arange(n - 1, -1, -1, dtype=dtype)
    if kind == "ctrl":
      user, times = jnp.zeros(len(ids), dtype), -(k + 1)[None] * dt
    else:
      period = m.sensor_interval[ids, 0]
      period = jnp.where(period > 0, period, dt)
      phase = m.sensor_interval[ids, 1]
      user = jnp.where(phase != 0, phase, -period)
      # MuJoCo rounds up with a small tolerance (measured between 1e-13 and 1e-11 steps)
      times = jnp.ceil((user[:, None] - k[None] * period[:, None]) / dt - 1e-12) * dt
    buf = buf.at[adr].set(user).at[adr + 1].set(n - 1)
    buf = buf.at[adr[:, None] + 2 + np.arange(n)].set(jnp.broadcast_to(times, (len(ids), n)))
  return buf


def _ctrl_cols(m: Model, ids: np.ndarray, dim: int) -> np.ndarray:
  """(len(ids), dim) ctrl entries of the actuators ids."""
  return m.actuator_ctrladr[ids][:, None] + np.arange(dim)


def ctrl(m: Model, d: Data, ctrl: jax.Array) -> jax.Array:
  """mj_readCtrl for every actuator: ctrl, with delayed actuators' values read from their
  buffers at time - actuator_delay. A negative delay (MuJoCo 4.0 takes it) reads the newest
  sample, the previous step's ctrl."""
  ctrl = jnp.asarray(ctrl)
  for (kind, n, dim, interp), (ids, adr) in _plan(m).items():
    if kind == "ctrl":
      delay = m.actuator_delay[ids]
      old = _read(d.history, adr, n, dim, interp, d.time - delay)
      cols = _ctrl_cols(m, ids, dim)
      ctrl = ctrl.at[cols].set(jnp.where(delay[:, None] != 0, old, ctrl[cols]))
  return ctrl


def _due(m: Model, d: Data, ids, adr):
  """(k,) bool: interval sensors due at d.time (always, without an interval)."""
  period = m.sensor_interval[ids, 0]
  return (period <= 0) | (d.time >= d.history[adr] + period)


def _sensor_cols(m: Model, ids: np.ndarray, dim: int) -> np.ndarray:
  return m.sensor_adr[ids][:, None] + np.arange(dim)


def delay_sensors(m: Model, d: Data, stages: tuple[Stage, ...] | None = None) -> Data:
  """sensordata of sensors with a history: their buffer at time - delay when delayed, the
  newest sample when an interval sensor is not due, else the value just computed.
  stages: only the sensors whose sensor_needstage is one of these (None: all)."""
  if m.opt.disabled(DisableBit.SENSOR):
    return d
  data = d.sensordata
  for (kind, n, dim, interp), (ids, adr) in _plan(m).items():
    if stages is not None and kind == "sensor":
      keep = np.isin(np.asarray(m.sensor_needstage)[ids], [int(s) for s in stages])
      ids, adr = ids[keep], adr[keep]
    if kind != "sensor" or len(ids) == 0:
      continue
    cols = _sensor_cols(m, ids, dim)
    delay = m.sensor_delay[ids]
    old = _read(d.history, adr, n, dim, interp, d.time - delay)
    newest = _read(d.history, adr, n, dim, 0, jnp.full(len(ids), jnp.inf, d.time.dtype))
    fresh = data[cols]
    out = jnp.where((delay > 0)[:, None], old,
                    jnp.where(_due(m, d, ids, adr)[:, None], fresh, newest))
    data = data.at[cols].set(out)
  return d.replace(sensordata=data)


def _insert_one(times, values, newest, t, value):
  """mju_historyInsert of one buffer (times (n,), values (n, dim) physical): a sample newer
  than the newest is appended (the cursor advances over the oldest); one stamped exactly
  at a sample's time replaces its value; an older one (a keyframe's time, say) takes its
  place in time order, the older samples moving down over the oldest, which is dropped
  (or replaced, when t is older than all). Returns (times, values, newest) physical."""
  n = times.shape[0]
  order = (newest + 1 + jnp.arange(n)) % n  # oldest first
  ts, vs = times[order], values[order]
  append = t > ts[n - 1]
  match = ts == t
  older = jnp.sum(ts < t)
  at = jnp.where(jnp.any(match), jnp.argmax(match), jnp.maximum(older, 1) - 1)
  at = jnp.where(append, n - 1, at)
  shift = (jnp.arange(n) < at) & ~jnp.any(match)  # logical j takes j + 1
  src = jnp.minimum(jnp.arange(n) + shift, n - 1)
  new = jnp.arange(n) == at
  ts = jnp.where(new, t, ts[src])
  vs = jnp.where(new[:, None], value, vs[src])
  newest = jnp.where(append, (newest + 1) % n, newest)
  order = (newest + 1 + jnp.arange(n)) % n
  return times.at[order].set(ts), values.at[order].set(vs), newest


def push(m: Model, d: Data) -> jax.Array:
  """The history after a step from `d` (forward done, sensordata not yet delayed): ctrl
  and due sensors' values inserted with timestamp d.time (mju_historyInsert)."""
  buf = d.history
  for (kind, n, dim, _), (ids, adr) in _plan(m).items():
    if kind == "ctrl":
      value, due = d.ctrl[_ctrl_cols(m, ids, dim)], jnp.ones(len(ids), bool)
      user = buf[adr]
    else:
      if m.opt.disabled(DisableBit.SENSOR):
        continue
      value = d.sensordata[_sensor_cols(m, ids, dim)]
      due = _due(m, d, ids, adr)
      period = m.sensor_interval[ids, 0]
      user = jnp.where(due & (period > 0), buf[adr] + period, buf[adr])
    _, newest, times, values = _fields(buf, adr, n, dim)
    t = jnp.broadcast_to(d.time, (len(ids),)).astype(buf.dtype)
    new_t, new_v, new_c = jax.vmap(_insert_one)(times, values, newest, t,
                                                value.astype(buf.dtype))
    tcol = adr[:, None] + 2 + np.arange(n)
    vcol = adr[:, None, None] + 2 + n + dim * np.arange(n)[:, None] + np.arange(dim)
    buf = buf.at[adr].set(user)
    buf = buf.at[adr + 1].set(jnp.where(due, new_c, newest).astype(buf.dtype))
    buf = buf.at[tcol].set(jnp.where(due[:, None], new_t, times))
    buf = buf.at[vcol].set(jnp.where(due[:, None, None], new_v, values))
  return buf


# ---------------------------------------------------------------- MuJoCo's history API


def _buffer(m: Model, kind: str, i: int) -> tuple[int, int, int, int]:
  """(nsample, interp, dim, history address) of actuator or sensor i (a host int)."""
  hist, adr, dims, count = ((m.actuator_history, m.actuator_historyadr, m.actuator_ctrlnum,
                             m.nu) if kind == "actuator" else
                            (m.sensor_history, m.sensor_historyadr, m.sensor_dim, m.nsensor))
  i = int(i)
  if not 0 <= i < count:
    raise ValueError(f"invalid {kind} id {i} (the model has {count})")
  return int(hist[i, 0]), int(hist[i, 1]), int(dims[i]), int(adr[i])


def _read_object(m: Model, d: Data, kind: str, id: int, time, interp: int) -> jax.Array:
  """Actuator or sensor `id`'s buffer read at time - its delay (interp -1: its own); None
  where it has no buffer."""
  n, own, dim, adr = _buffer(m, kind, id)
  if n == 0:
    return None
  delay = (m.actuator_delay if kind == "actuator" else m.sensor_delay)[int(id)]
  t = jnp.reshape(jnp.asarray(time, d.history.dtype) - delay, (1,))
  return _read(d.history, np.array([adr]), n, dim, own if interp < 0 else interp, t)[0]


def read_ctrl(m: Model, d: Data, id: int, time, interp: int = -1) -> jax.Array:
  """mj_readCtrl: actuator `id`'s ctrl (ctrlnum,) as its delay sees it at `time`: the
  buffer's value at time - actuator_delay, held (interp 0), linear (1) or cubic (2); -1
  takes the actuator's own interp. Without a buffer, the current ctrl. `id` and `interp`
  are host ints (the buffer's size shapes the result); `time` may be traced."""
  out = _read_object(m, d, "actuator", id, time, interp)
  start, num = int(m.actuator_ctrladr[int(id)]), int(m.actuator_ctrlnum[int(id)])
  return d.ctrl[start:start + num] if out is None else out


def read_sensor(m: Model, d: Data, id: int, time, interp: int = -1) -> jax.Array:
  """mj_readSensor: sensor `id`'s value (dim,) in its history at time - sensor_delay (interp
  as read_ctrl); without a buffer, its current sensordata. Host `id` and `interp`."""
  out = _read_object(m, d, "sensor", id, time, interp)
  start, dim = int(m.sensor_adr[int(id)]), int(m.sensor_dim[int(id)])
  return d.sensordata[start:start + dim] if out is None else out


def _init_buffer(m: Model, d: Data, kind: str, id: int, times, values, user) -> Data:
  n, _, dim, adr = _buffer(m, kind, id)
  if n == 0:
    raise ValueError(f"{kind} {int(id)} has no history buffer")
  buf = jnp.asarray(d.history)
  values = jnp.asarray(values, buf.dtype)
  if values.size != n * dim:
    raise ValueError(f"{kind} {int(id)}'s buffer holds {n} samples of {dim}: got values "
                     f"{tuple(values.shape)}")
  values = values.reshape(n, dim)
  if times is None:
    # the stored samples' times and order stay: values go oldest first from the newest's
    # successor, where the ring buffer's oldest sample is (MuJoCo 4.0, probed)
    slot = (buf[adr + 1].astype(jnp.int32) + 1 + jnp.arange(n)) % n
  else:
    if not isinstance(times, jax.core.Tracer) and np.any(np.diff(np.asarray(times)) < MINVAL):
      raise ValueError(f"times must be strictly increasing, got {np.asarray(times)}")
    times = jnp.asarray(times, buf.dtype)
    if times.shape != (n,):
      raise ValueError(f"{kind} {int(id)}'s buffer holds {n} samples: got times "
                       f"{tuple(times.shape)}")
    buf = buf.at[adr + 1].set(n - 1).at[adr + 2:adr + 2 + n].set(times)
    slot = jnp.arange(n)
  buf = buf.at[adr].set(user)
  rows = adr + 2 + n + dim * slot[:, None] + np.arange(dim)
  return d.replace(history=buf.at[rows].set(values))


def init_ctrl_history(m: Model, d: Data, id: int, times, values) -> Data:
  """mj_initCtrlHistory: d with actuator `id`'s buffer set to `values` (nsample, ctrlnum)
  at `times` (nsample,), oldest first, strictly increasing; with times None the stored
  samples keep their times and `values` replace theirs, oldest first. The user slot is
  kept. Host `id`."""
  n, _, _, adr = _buffer(m, "actuator", id)
  user = d.history[adr] if n else 0.0
  return _init_buffer(m, d, "actuator", id, times, values, user)


def init_sensor_history(m: Model, d: Data, id: int, times, values, phase) -> Data:
  """mj_initSensorHistory: as init_ctrl_history for sensor `id`'s buffer (values (nsample,
  dim)), its user slot set to `phase` (an interval sensor's last computation time)."""
  return _init_buffer(m, d, "sensor", id, times, values, phase)
