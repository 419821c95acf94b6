"""Sample histories of controls and sensors (mjData.history): delays and sensor intervals.

An actuator or sensor with `nsample` > 0 owns a ring buffer in `d.history` at its
actuator_historyadr / sensor_historyadr, laid out as MuJoCo 4.0 does:
[user slot, index of the newest sample, nsample times, nsample values (dim each)]. The
user slot holds a sensor's last computation time (its interval phase); 0 for actuators.

* A step pushes the current ctrl, and the freshly computed sensor values, stamped with the
  time at which the step started (`push`, after forward; sensors with an interval only
  when due: time >= last + period, which advances last by one period).
* With a positive delay, the actuator reads its ctrl (`ctrl`) and the sensor reports
  (`delay_sensors`) the buffer's value at time - delay, read before this step's push (so
  the least effective delay is one timestep). Interval sensors without delay report their
  newest sample when not due.
* Reading (mj_readCtrl / mj_readSensor): zero-order hold, linear, or cubic Hermite with
  Catmull-Rom tangents (zero at the ends), constant outside the buffer's time span.

The buffers are fixed-size: pushes and reads index them with the traced newest index.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.scan import cached_plan
from jaxmj.types import Data, DisableBit, Model

MINVAL = 1e-15  # mjMINVAL: a sample stamped this close after the read time still counts


@cached_plan
def _plan(m) -> dict:
  """Static groups of buffers with the same (nsample, dim, interp): actuators and sensors."""
  groups = {}
  for kind, hist, adr, dims in (
      ("ctrl", m.actuator_history, m.actuator_historyadr, np.ones(m.nu, np.int32)),
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
  """(dim,) value of one buffer at time t (times (n,), values (n, dim))."""
  n = times.shape[0]
  order = (newest + 1 + jnp.arange(n)) % n  # oldest first
  ts, vs = times[order], values[order]
  k = jnp.sum(ts <= t + MINVAL)  # samples at or before t (MuJoCo's tolerance)
  if interp == 0 or n == 1:
    return vs[jnp.clip(k - 1, 0, n - 1)]
  lo = jnp.clip(k - 1, 0, n - 2)
  hi = lo + 1
  h = ts[hi] - ts[lo]
  s = jnp.clip((t - ts[lo]) / jnp.where(h > 0, h, 1.0), 0.0, 1.0)
  if interp == 1:
    out = vs[lo] + s * (vs[hi] - vs[lo])
  else:
    def tangent(i):
      a, b = jnp.maximum(i - 1, 0), jnp.minimum(i + 1, n - 1)
      span = ts[b] - ts[a]
      inner = (i > 0) & (i < n - 1)
      return jnp.where(inner, (vs[b] - vs[a]) / jnp.where(inner, span, 1.0) * h, 0.0)

    s2, s3 = s * s, s * s * s
    out = ((2 * s3 - 3 * s2 + 1) * vs[lo] + (s3 - 2 * s2 + s) * tangent(lo)
           + (-2 * s3 + 3 * s2) * vs[hi] + (s3 - s2) * tangent(hi))
  return jnp.where(k <= 0, vs[0], jnp.where(k >= n, vs[n - 1], out))


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


def ctrl(m: Model, d: Data, ctrl: jax.Array) -> jax.Array:
  """mj_readCtrl for every actuator: ctrl, with delayed actuators' values read from their
  buffers at time - actuator_delay."""
  ctrl = jnp.asarray(ctrl)
  for (kind, n, dim, interp), (ids, adr) in _plan(m).items():
    if kind == "ctrl":
      delay = m.actuator_delay[ids]
      old = _read(d.history, adr, n, dim, interp, d.time - delay)[:, 0]
      ctrl = ctrl.at[ids].set(jnp.where(delay > 0, old, ctrl[ids]))
  return ctrl


def _due(m: Model, d: Data, ids, adr):
  """(k,) bool: interval sensors due at d.time (always, without an interval)."""
  period = m.sensor_interval[ids, 0]
  return (period <= 0) | (d.time >= d.history[adr] + period)


def _sensor_cols(m: Model, ids: np.ndarray, dim: int) -> np.ndarray:
  return m.sensor_adr[ids][:, None] + np.arange(dim)


def delay_sensors(m: Model, d: Data) -> Data:
  """sensordata of sensors with a history: their buffer at time - delay when delayed, the
  newest sample when an interval sensor is not due, else the value just computed."""
  if m.opt.disabled(DisableBit.SENSOR):
    return d
  data = d.sensordata
  for (kind, n, dim, interp), (ids, adr) in _plan(m).items():
    if kind != "sensor":
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


def push(m: Model, d: Data) -> jax.Array:
  """The history after a step from `d` (forward done, sensordata not yet delayed): ctrl
  and due sensors' values appended with timestamp d.time."""
  buf = d.history
  for (kind, n, dim, _), (ids, adr) in _plan(m).items():
    if kind == "ctrl":
      value, due = d.ctrl[ids][:, None], jnp.ones(len(ids), bool)
      user = buf[adr]
    else:
      if m.opt.disabled(DisableBit.SENSOR):
        continue
      value = d.sensordata[_sensor_cols(m, ids, dim)]
      due = _due(m, d, ids, adr)
      period = m.sensor_interval[ids, 0]
      user = jnp.where(due & (period > 0), buf[adr] + period, buf[adr])
    newest = buf[adr + 1].astype(jnp.int32)
    slot = jnp.where(due, (newest + 1) % n, newest)
    tcol = adr + 2 + slot
    vcol = (adr + 2 + n + dim * slot)[:, None] + np.arange(dim)
    buf = buf.at[adr].set(user).at[adr + 1].set(slot.astype(buf.dtype))
    buf = buf.at[tcol].set(jnp.where(due, d.time, buf[tcol]))
    buf = buf.at[vcol].set(jnp.where(due[:, None], value.astype(buf.dtype), buf[vcol]))
  return buf
