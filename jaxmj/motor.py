"""PID and DC motor actuators (MuJoCo 4.0's mjGAIN_PID / mjDYN_PID and mjGAIN_DCMOTOR /
mjBIAS_DCMOTOR / mjDYN_DCMOTOR): activation dynamics, forces and activation updates.

Their states live in the actuator's act block in the order slew, integral, temperature,
bristle, current, each present or not (Model.actuator_slots, fixed at compile time). Every
state a group lacks reads a zero appended after act and writes past the end of act_dot
(dropped), so each family is computed for all its actuators at once with no branching.

PID (one control per input, in the order pos, vel, ff; absent inputs read zero):
  force = kp u_pos + kv u_vel + u_ff + ki x_I + biasprm[0] + biasprm[1] length
          + biasprm[2] velocity   (biasprm = (0, -kp, -kv)),
  d x_I/dt = u_pos - length (not pushed past +-imax), |du_pos/dt| <= slewmax.
DC motor (one control): the terminal voltage V, or a position / velocity setpoint for a PID
torque controller, tau = kp (u_pos - length) + kd (u_vel - velocity) + ki x_I, realised by
V = R/K tau + K velocity clipped to +-Vmax. Stateless, force = K/R (V - K velocity); with
the current state i (inductance), di/dt = (V/R - K/R velocity - i)/te and force = K i one
step ahead (actearly). Resistance grows with the temperature rise T, dT/dt =
(R i^2 - T/RT)/C. After the force limit, cogging A sin(Np length + phase) and LuGre
friction -(sigma0 z + sigma1 dz/dt), dz/dt = v - sigma0 |v| / g(v) z, are added.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.scan import cached_plan
from jaxmj.types import GainType, Model

MINVAL = 1e-15
POS, VEL, FF = 1, 2, 4  # mjtCtrlInput bits in actuator_ctrlspec
SLEW, INTEGRAL, TEMPERATURE, BRISTLE, CURRENT = range(5)


@cached_plan
def motor_plan(m) -> dict:
  """Static ids per family and the absolute act index of each state (na where absent)."""
  out = {}
  for name, gain in (("pid", GainType.PID), ("dc", GainType.DCMOTOR)):
    ids = np.flatnonzero(m.actuator_gaintype == gain)
    if len(ids):
      slots = m.actuator_slots[ids]
      idx = np.where(slots >= 0, m.actuator_actadr[ids, None] + slots, m.na)
      out[name] = dict(ids=ids, idx=idx, has=slots >= 0, spec=m.actuator_ctrlspec[ids])
  return out


def _state(act: jnp.ndarray, idx: np.ndarray) -> jnp.ndarray:
  return jnp.concatenate([act, jnp.zeros(1, act.dtype)])[idx]


def _slew(m: Model, p: dict, act, u, slewmax):
  """Rate-limited setpoint and the slew state's act_dot: |u - u_prev| <= slewmax h."""
  h = m.opt.timestep
  prev = _state(act, p["idx"][:, SLEW])
  step = slewmax * h
  eff = jnp.where(p["has"][:, SLEW], jnp.clip(u, prev - step, prev + step), u)
  return eff, (eff - prev) / h


def _windup(rate, x, imax):
  """Integrator rate held at zero outward once |x| reaches imax (when imax > 0)."""
  on = imax > 0
  return jnp.where(on & (x >= imax), jnp.minimum(rate, 0.0),
                   jnp.where(on & (x <= -imax), jnp.maximum(rate, 0.0), rate))


def _scatter(act_dot, p: dict, rates) -> jnp.ndarray:
  """act_dot with each state's rate written where the actuator has that state."""
  for k, rate in rates.items():
    if p["has"][:, k].any():
      act_dot = act_dot.at[p["idx"][:, k]].set(rate, mode="drop")
  return act_dot


def _inputs(m: Model, p: dict, ctrl) -> tuple:
  """The pos, vel and ff controls (n,) of the actuators p["ids"] (0 where absent): an
  actuator's controls are its inputs in the order pos, vel, ff."""
  spec, adr = p["spec"], m.actuator_ctrladr[p["ids"]]
  padded = jnp.concatenate([ctrl, jnp.zeros(1, ctrl.dtype)])
  out, col = [], adr
  for bit in (POS, VEL, FF):
    on = (spec & bit) > 0
    out.append(padded[np.where(on, col, len(ctrl))])
    col = col + on
  return tuple(out)


def _pid(m: Model, d, p: dict, ctrl, act_dot) -> tuple:
  """(force (n,), act_dot) of the PID actuators: kp u_pos + kv u_vel + u_ff + ki x_I + bias."""
  i = p["ids"]
  bias, kint, dyn = m.actuator_biasprm[i], m.actuator_gainprm[i, 0], m.actuator_dynprm[i]
  length, vel = d.actuator_length[i], d.actuator_velocity[i]
  upos, uvel, uff = _inputs(m, p, ctrl)
  u, slew_rate = _slew(m, p, d.act, upos, dyn[:, 1])
  x = _state(d.act, p["idx"][:, INTEGRAL])
  rate = _windup(u - length, x, dyn[:, 0])
  act_dot = _scatter(act_dot, p, {SLEW: slew_rate, INTEGRAL: rate})
  x = jnp.where(m.actuator_actearly[i], x + rate * m.opt.timestep, x)  # next step's
  force = (-bias[:, 1] * u - bias[:, 2] * uvel + uff + kint * x + bias[:, 0]
           + bias[:, 1] * length + bias[:, 2] * vel)
  return force, act_dot


def _resistance(gain, dyn, temp):
  """R at temperature rise temp: R (1 + alpha (T + T_ambient - T0)); R itself without."""
  return gain[:, 0] * (1 + gain[:, 2] * (temp + dyn[:, 4] - gain[:, 3]))


def _voltage(p: dict, gain, res, u, length, vel, x):
  """Terminal voltage: the control itself, or what makes the motor's torque K/R (V - K v)
  equal the PID torque kp (u_pos - length) + kd (u_vel - velocity) + ki x_I (the absent
  setpoint is zero), clipped to +-Vmax."""
  k, kp, ki, kd, vmax = gain[:, 1], gain[:, 4], gain[:, 5], gain[:, 6], gain[:, 7]
  pos, vel_in = p["spec"] == POS, p["spec"] == VEL
  torque = (kp * (jnp.where(pos, u, 0.0) - length) + kd * (jnp.where(vel_in, u, 0.0) - vel)
            + ki * x)
  volt = res / jnp.maximum(MINVAL, k) * torque + k * vel
  volt = jnp.where(vmax > 0, jnp.clip(volt, -vmax, vmax), volt)
  return jnp.where(pos | vel_in, volt, u)


def _stribeck(vel, bias):
  """LuGre steady friction g(v) = F_C + (F_S - F_C) exp(-(v / v_S)^2)."""
  ratio = vel / jnp.maximum(MINVAL, bias[:, 5])
  return bias[:, 3] + (bias[:, 4] - bias[:, 3]) * jnp.exp(-ratio * ratio)


def _dc(m: Model, d, p: dict, ctrl, act_dot) -> tuple:
  """(force before the force limit (n,), act_dot) of the DC motors (one control each)."""
  i, idx, has = p["ids"], p["idx"], p["has"]
  gain, dyn, bias = m.actuator_gainprm[i], m.actuator_dynprm[i], m.actuator_biasprm[i]
  length, vel = d.actuator_length[i], d.actuator_velocity[i]
  res0, k, te = gain[:, 0], gain[:, 1], dyn[:, 0]
  u, slew_rate = _slew(m, p, d.act, ctrl[m.actuator_ctrladr[i]], dyn[:, 7])
  x = _state(d.act, idx[:, INTEGRAL])
  rate_int = jnp.where(p["spec"] == POS, u - length, u)
  temp = _state(d.act, idx[:, TEMPERATURE])
  res = jnp.where(has[:, TEMPERATURE], _resistance(gain, dyn, temp), res0)
  volt = _voltage(p, gain, res0, u, length, vel, x)
  cur = _state(d.act, idx[:, CURRENT])
  amps = jnp.where(has[:, CURRENT], cur, (volt - k * vel) / res)
  safe_rt = jnp.where(has[:, TEMPERATURE], dyn[:, 2], 1.0)
  safe_c = jnp.where(has[:, TEMPERATURE], dyn[:, 3], 1.0)
  rate_temp = (res * amps * amps - temp / safe_rt) / safe_c
  z = _state(d.act, idx[:, BRISTLE])
  decay = -dyn[:, 5] * jnp.abs(vel) / jnp.maximum(MINVAL, _stribeck(vel, bias))
  didt = (volt / res - k / res * vel - cur) / jnp.where(has[:, CURRENT], te, 1.0)
  didt = jnp.where(dyn[:, 1] > 0, jnp.clip(didt, -dyn[:, 1], dyn[:, 1]), didt)
  act_dot = _scatter(act_dot, p, {SLEW: slew_rate, INTEGRAL: _windup(rate_int, x, dyn[:, 8]),
                                    TEMPERATURE: rate_temp, BRISTLE: decay * z + vel,
                                    CURRENT: didt})
  h = m.opt.timestep
  nxt = cur + didt * te * (1 - jnp.exp(-h / jnp.maximum(MINVAL, te)))
  gain_k = k / jnp.maximum(MINVAL, res)
  inp = jnp.where((p["spec"] == POS) | (p["spec"] == VEL), volt, u)
  force = jnp.where(has[:, CURRENT], k * nxt, gain_k * inp - gain_k * k * vel)
  return force, act_dot


def forces(m: Model, d, ctrl, act_dot) -> tuple:
  """(ids, force (n,) before the force limit, act_dot (na,)) of every PID and DC motor
  actuator; ctrl (nu,) is the clamped control vector. Empty ids without them."""
  plan = motor_plan(m)
  ids, out = [], []
  for name, fn in (("pid", _pid), ("dc", _dc)):
    if name in plan:
      f, act_dot = fn(m, d, plan[name], ctrl, act_dot)
      ids.append(plan[name]["ids"])
      out.append(f)
  if not ids:
    return np.zeros(0, int), jnp.zeros(0), act_dot
  return np.concatenate(ids), jnp.concatenate(out), act_dot


def mechanical(m: Model, d, act_dot, force, enabled: np.ndarray) -> jnp.ndarray:
  """force (nactuator,) plus the DC motors' cogging and LuGre friction, added after the force
  limit (not subject to it); `enabled` (nactuator,) bool leaves disabled actuator groups out.
  `d` holds per-actuator lengths (actuation._per_actuator)."""
  plan = motor_plan(m)
  if "dc" not in plan:
    return force
  p = plan["dc"]
  i = p["ids"]
  bias, dyn = m.actuator_biasprm[i], m.actuator_dynprm[i]
  cog = bias[:, 0] * jnp.sin(bias[:, 1] * d.actuator_length[i] + bias[:, 2])
  z, zdot = _state(d.act, p["idx"][:, BRISTLE]), _state(act_dot, p["idx"][:, BRISTLE])
  fric = jnp.where(p["has"][:, BRISTLE], dyn[:, 5] * z + dyn[:, 6] * zdot, 0.0)
  return force.at[i].add(jnp.where(enabled[i], cog - fric, 0.0))


def next_act(m: Model, d, act, act_dot, new) -> jnp.ndarray:
  """`new` (na,), the Euler step of act, with the DC motor states MuJoCo integrates
  otherwise: the current exactly (filter), the bristle by zero-order hold, the integral
  clipped to +-imax (mj_nextActivation)."""
  plan = motor_plan(m)
  if "dc" not in plan:
    return new
  p = plan["dc"]
  i, idx = p["ids"], p["idx"]
  dyn, bias, vel = m.actuator_dynprm[i], m.actuator_biasprm[i], d.actuator_velocity[i]
  h = m.opt.timestep
  te = jnp.maximum(MINVAL, dyn[:, 0])
  cur = _state(act, idx[:, CURRENT]) + _state(act_dot, idx[:, CURRENT]) * te * (
    1 - jnp.exp(-h / te))
  a = -dyn[:, 5] * jnp.abs(vel) / jnp.maximum(MINVAL, _stribeck(vel, bias))
  exp_ah = jnp.exp(a * h)
  small = jnp.abs(a) <= MINVAL
  int_h = jnp.where(small, h, (exp_ah - 1) / jnp.where(small, 1.0, a))
  z = exp_ah * _state(act, idx[:, BRISTLE]) + int_h * vel
  imax = dyn[:, 8]
  x = _state(new, idx[:, INTEGRAL])
  x = jnp.where(imax > 0, jnp.clip(x, -imax, imax), x)
  return _scatter(new, p, {CURRENT: cur, BRISTLE: z, INTEGRAL: x})


def implicit_correction(m: Model, d) -> jnp.ndarray | None:
  """(nv, nv) to add to the exact d qfrc_actuator / d qvel to get MuJoCo's mjd_actuator_vel,
  which drops the bristle decay's velocity dependence in LuGre friction: its derivative of
  -sigma1 dz/dt is -sigma1, not -sigma1 (1 + z da/dv). None without LuGre states."""
  import jax

  plan = motor_plan(m)
  if "dc" not in plan or not plan["dc"]["has"][:, BRISTLE].any():
    return None
  p = plan["dc"]
  i = p["ids"]
  bias, dyn = m.actuator_biasprm[i], m.actuator_dynprm[i]

  def decay(v):
    return -dyn[:, 5] * jnp.abs(v) / jnp.maximum(MINVAL, _stribeck(v, bias))

  out = m.actuator_outadr[i]
  vel = d.actuator_velocity[out]
  slope = jax.jvp(decay, (vel,), (jnp.ones_like(vel),))[1]
  z = _state(d.act, p["idx"][:, BRISTLE])
  gap = jnp.where(p["has"][:, BRISTLE], dyn[:, 6] * slope * z, 0.0)
  moment = d.actuator_moment[out]
  return moment.T @ (gap[:, None] * moment)
