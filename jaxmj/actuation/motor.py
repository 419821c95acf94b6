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
DC motor (one control per input, canonical order pos, vel, ff, voltage; or none): with a
controller input, the PID torque tau = kp (u_pos - length) + kd (u_vel - velocity) + u_ff
+ ki x_I (absent inputs read zero) is realised by V = R/K tau + K velocity clipped to
+-Vmax; the voltage input adds to that unclipped. Stateless, force = K/R (V - K velocity);
with the current state i (inductance), di/dt = (V/R - K/R velocity - i)/te and force = K i
one step ahead (actearly). Resistance grows with the temperature rise T, dT/dt =
(R i^2 - T/RT)/C. After the force limit, cogging A sin(Np length + phase) and LuGre
friction -(sigma0 z + sigma1 dz/dt), dz/dt = v - sigma0 |v| / g(v) z, are added. Slew
limiting acts on the first control; the integral integrates first control - length.
The three DC types also mix with the others in <general> (each computed as in
mj_fwdActuation): the DC dynamics' states with any gain, the DC gain (K/R or K, its input
the voltage) over any dynamics whose states match its parameters, the back-EMF bias
-gain K velocity after any gain.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.scan import cached_plan
from jaxmj.types import BiasType, DynType, GainType, Model

POS, VEL, FF, VOLTAGE = 1, 2, 4, 8  # mjtCtrlInput bits in actuator_ctrlspec
SLEW, INTEGRAL, TEMPERATURE, BRISTLE, CURRENT = range(5)


@cached_plan
def motor_plan(m) -> dict:
  """Static ids per family and the absolute act index of each state (na where absent).

  "pid": the PID actuators (gaintype pid). "dc": every actuator with a DC motor gain, bias
  or dynamics type, with a mask per type (MuJoCo mixes them freely with the other types) and
  the column in ctrl of each input (nu where absent: reads an appended zero).
  """
  out = {}
  pid = np.flatnonzero(m.actuator_gaintype == GainType.PID)
  dc = np.flatnonzero((m.actuator_gaintype == GainType.DCMOTOR)
                      | (m.actuator_dyntype == DynType.DCMOTOR)
                      | (m.actuator_biastype == BiasType.DCMOTOR))
  for name, ids in (("pid", pid), ("dc", dc)):
    if len(ids):
      slots = m.actuator_slots[ids]
      idx = np.where(slots >= 0, m.actuator_actadr[ids, None] + slots, m.na)
      spec = m.actuator_ctrlspec[ids]
      out[name] = dict(ids=ids, idx=idx, has=slots >= 0, spec=spec,
                       cols=_columns(m, ids, spec),
                       dyn=m.actuator_dyntype[ids] == DynType.DCMOTOR,
                       gain=m.actuator_gaintype[ids] == GainType.DCMOTOR,
                       bias=m.actuator_biastype[ids] == BiasType.DCMOTOR)
  return out


def _columns(m, ids: np.ndarray, spec: np.ndarray) -> np.ndarray:
  """(n, 5) int: the ctrl column of the first control and of the pos, vel, ff and voltage
  inputs (an actuator's controls are its inputs in canonical order); nu where absent."""
  adr, num = m.actuator_ctrladr[ids], m.actuator_ctrlnum[ids]
  out = np.full((len(ids), 5), m.nu)
  out[:, 0] = np.where(num > 0, adr, m.nu)
  col = adr.copy()
  for k, bit in enumerate((POS, VEL, FF, VOLTAGE)):
    on = (spec & bit) > 0
    out[:, k + 1] = np.where(on, col, m.nu)
    col = col + on
  return out


def state_at(act: jnp.ndarray, idx: np.ndarray) -> jnp.ndarray:
  return jnp.concatenate([act, jnp.zeros(1, act.dtype)])[idx]


def _slew(m: Model, has: np.ndarray, idx: np.ndarray, act, u, slewmax):
  """Rate-limited setpoint and the slew state's act_dot: |u - u_prev| <= slewmax h."""
  h = m.opt.timestep
  prev = state_at(act, idx[:, SLEW])
  step = slewmax * h
  eff = jnp.where(has[:, SLEW], jnp.clip(u, prev - step, prev + step), u)
  return eff, (eff - prev) / h


def _windup(rate, x, imax):
  """Integrator rate held at zero outward once |x| reaches imax (when imax > 0)."""
  on = imax > 0
  return jnp.where(on & (x >= imax), jnp.minimum(rate, 0.0),
                   jnp.where(on & (x <= -imax), jnp.maximum(rate, 0.0), rate))


def _scatter(act_dot, has: np.ndarray, idx: np.ndarray, rates) -> jnp.ndarray:
  """act_dot with each state's rate written where the actuator has that state."""
  for k, rate in rates.items():
    if has[:, k].any():
      act_dot = act_dot.at[np.where(has[:, k], idx[:, k], len(act_dot))].set(rate, mode="drop")
  return act_dot


def _inputs(m: Model, p: dict, ctrl) -> tuple:
  """The pos, vel and ff controls (n,) of the PID actuators p["ids"] (0 where absent)."""
  padded = jnp.concatenate([ctrl, jnp.zeros(1, ctrl.dtype)])
  return tuple(padded[p["cols"][:, k]] for k in (1, 2, 3))


def _pid(m: Model, d, p: dict, ctrl, act_dot) -> tuple:
  """(force (n,), act_dot) of the PID actuators: kp u_pos + kv u_vel + u_ff + ki x_I + bias."""
  i = p["ids"]
  bias, kint, dyn = m.actuator_biasprm[i], m.actuator_gainprm[i, 0], m.actuator_dynprm[i]
  length, vel = d.actuator_length[i], d.actuator_velocity[i]
  upos, uvel, uff = _inputs(m, p, ctrl)
  u, slew_rate = _slew(m, p["has"], p["idx"], d.act, upos, dyn[:, 1])
  x = state_at(d.act, p["idx"][:, INTEGRAL])
  rate = _windup(u - length, x, dyn[:, 0])
  act_dot = _scatter(act_dot, p["has"], p["idx"], {SLEW: slew_rate, INTEGRAL: rate})
  x = jnp.where(m.actuator_actearly[i], x + rate * m.opt.timestep, x)  # next step's
  force = (-bias[:, 1] * u - bias[:, 2] * uvel + uff + kint * x + bias[:, 0]
           + bias[:, 1] * length + bias[:, 2] * vel)
  return force, act_dot


def resistance(gain, dyn, temp):
  """R at temperature rise temp: R (1 + alpha (T + T_ambient - T0)); R itself without."""
  return gain[:, 0] * (1 + gain[:, 2] * (temp + dyn[:, 4] - gain[:, 3]))


def _voltage(p: dict, gain, u, length, vel, x):
  """Terminal voltage (n,) from the (slewed) controls u (nu + 1,): with a controller input
  (pos, vel or ff), the voltage that makes the motor's torque K/R (V - K v) equal the PID
  torque kp (u_pos - length) + kd (u_vel - velocity) + u_ff + ki x_I (absent inputs read
  zero), clipped to +-Vmax; plus the voltage input unclipped. Zero without inputs."""
  k, kp, ki, kd, vmax = gain[:, 1], gain[:, 4], gain[:, 5], gain[:, 6], gain[:, 7]
  cols = p["cols"]
  torque = (kp * (u[cols[:, 1]] - length) + kd * (u[cols[:, 2]] - vel) + u[cols[:, 3]]
            + ki * x)
  volt = gain[:, 0] / jnp.maximum(MINVAL, k) * torque + k * vel
  volt = jnp.where(vmax > 0, jnp.clip(volt, -vmax, vmax), volt)
  return jnp.where((p["spec"] & (POS | VEL | FF)) > 0, volt, 0.0) + u[cols[:, 4]]


def stribeck(vel, bias):
  """LuGre steady friction g(v) = F_C + (F_S - F_C) exp(-(v / v_S)^2)."""
  ratio = vel / jnp.maximum(MINVAL, bias[:, 5])
  return bias[:, 3] + (bias[:, 4] - bias[:, 3]) * jnp.exp(-ratio * ratio)


def _sub(p: dict, mask: np.ndarray) -> dict:
  """The entries of plan p for the actuators in mask."""
  return {k: v[mask] for k, v in p.items()}


def _dc_rates(m: Model, d, p: dict, u, act_dot) -> tuple:
  """(act_dot, u) with the states of the DC motor dynamics p (mj_fwdActuation's
  mjDYN_DCMOTOR): the slewed first control written into u (nu + 1,)."""
  i, idx, has = p["ids"], p["idx"], p["has"]
  gain, dyn, bias = m.actuator_gainprm[i], m.actuator_dynprm[i], m.actuator_biasprm[i]
  length, vel = d.actuator_length[i], d.actuator_velocity[i]
  k, te = gain[:, 1], dyn[:, 0]
  first = p["cols"][:, 0]
  eff, slew_rate = _slew(m, has, idx, d.act, u[first], dyn[:, 7])
  if has[:, SLEW].any():
    u = u.at[np.where(has[:, SLEW], first, len(u))].set(eff, mode="drop")
  x = state_at(d.act, idx[:, INTEGRAL])
  temp = state_at(d.act, idx[:, TEMPERATURE])
  res = jnp.where(has[:, TEMPERATURE], resistance(gain, dyn, temp), gain[:, 0])
  volt = _voltage(p, gain, u, length, vel, x)
  cur = state_at(d.act, idx[:, CURRENT])
  amps = jnp.where(has[:, CURRENT], cur, (volt - k * vel) / res)
  safe_rt = jnp.where(has[:, TEMPERATURE], dyn[:, 2], 1.0)
  safe_c = jnp.where(has[:, TEMPERATURE], dyn[:, 3], 1.0)
  rate_temp = (res * amps * amps - temp / safe_rt) / safe_c
  z = state_at(d.act, idx[:, BRISTLE])
  decay = -dyn[:, 5] * jnp.abs(vel) / jnp.maximum(MINVAL, stribeck(vel, bias))
  didt = (volt / res - k / res * vel - cur) / jnp.where(has[:, CURRENT], te, 1.0)
  didt = jnp.where(dyn[:, 1] > 0, jnp.clip(didt, -dyn[:, 1], dyn[:, 1]), didt)
  act_dot = _scatter(act_dot, has, idx, {
    SLEW: slew_rate, INTEGRAL: _windup(eff - length, x, dyn[:, 8]),
    TEMPERATURE: rate_temp, BRISTLE: decay * z + vel, CURRENT: didt})
  return act_dot, u


def dynamics(m: Model, d, controls, act_dot) -> tuple:
  """(act_dot (na,), controls (nu,)): the rates of the DC motor dynamics' states, and the
  clamped controls with each slew-limited first control replaced by its limited value (which
  the gain stage then reads, as MuJoCo does). `d` holds per-actuator lengths."""
  plan = motor_plan(m)
  if "dc" not in plan or not plan["dc"]["dyn"].any():
    return act_dot, controls
  p = _sub(plan["dc"], plan["dc"]["dyn"])
  u = jnp.concatenate([controls, jnp.zeros(1, controls.dtype)])
  act_dot, u = _dc_rates(m, d, p, u, act_dot)
  return act_dot, u[:-1]


def _dc_force(m: Model, d, p: dict, controls, gain, bias, inp):
  """gain * input + bias (n,) of the actuators p with any DC motor type: the DC gain is K with
  a current state (whose next value the input then is) and K / R otherwise, its input the
  terminal voltage; the DC bias is the back-EMF -gain K velocity without a current state."""
  i, idx, has = p["ids"], p["idx"], p["has"]
  gprm, dyn = m.actuator_gainprm[i], m.actuator_dynprm[i]
  k, stateless = gprm[:, 1], dyn[:, 0] <= 0
  if p["gain"].any():
    u = jnp.concatenate([controls, jnp.zeros(1, controls.dtype)])
    temp = state_at(d.act, idx[:, TEMPERATURE])
    res = jnp.where(has[:, TEMPERATURE], resistance(gprm, dyn, temp), gprm[:, 0])
    volt = _voltage(p, gprm, u, d.actuator_length[i], d.actuator_velocity[i],
                    state_at(d.act, idx[:, INTEGRAL]))
    gain = jnp.where(p["gain"], jnp.where(stateless, k / jnp.maximum(MINVAL, res), k), gain)
    inp = jnp.where(p["gain"] & stateless, volt, inp)
  if p["bias"].any():
    bias = jnp.where(p["bias"], jnp.where(stateless, -gain * k * d.actuator_velocity[i], 0.0),
                     bias)
  return gain * inp + bias


def forces(m: Model, d, controls, act_dot, gain, bias, inp) -> tuple:
  """(force (nactuator,) before the force limits, act_dot (na,)): gain * inp + bias from the
  type tables (nactuator,), with the PID actuators' forces and states and the DC motor
  gains, inputs and biases put in. `controls` (nu,) come from `dynamics`."""
  plan = motor_plan(m)
  force = gain * inp + bias
  if "pid" in plan:
    f, act_dot = _pid(m, d, plan["pid"], controls, act_dot)
    force = force.at[plan["pid"]["ids"]].set(f)
  if "dc" in plan:
    i = plan["dc"]["ids"]
    force = force.at[i].set(_dc_force(m, d, plan["dc"], controls, gain[i], bias[i], inp[i]))
  return force, act_dot


def mechanical(m: Model, d, act_dot, force, enabled: np.ndarray) -> jnp.ndarray:
  """force (nactuator,) plus the DC motors' cogging and LuGre friction, added after the force
  limit (not subject to it); `enabled` (nactuator,) bool leaves disabled actuator groups out.
  `d` holds per-actuator lengths (actuation._per_actuator)."""
  plan = motor_plan(m)
  if "dc" not in plan:
    return force
  if not plan["dc"]["bias"].any():
    return force
  p = _sub(plan["dc"], plan["dc"]["bias"])
  i = p["ids"]
  bias, dyn = m.actuator_biasprm[i], m.actuator_dynprm[i]
  cog = bias[:, 0] * jnp.sin(bias[:, 1] * d.actuator_length[i] + bias[:, 2])
  z, zdot = state_at(d.act, p["idx"][:, BRISTLE]), state_at(act_dot, p["idx"][:, BRISTLE])
  fric = jnp.where(p["has"][:, BRISTLE], dyn[:, 5] * z + dyn[:, 6] * zdot, 0.0)
  return force.at[i].add(jnp.where(enabled[i], cog - fric, 0.0))


def next_act(m: Model, d, act, act_dot, new) -> jnp.ndarray:
  """`new` (na,), the Euler step of act, with the DC motor states MuJoCo integrates
  otherwise: the current exactly (filter), the bristle by zero-order hold, the integral
  clipped to +-imax (mj_nextActivation)."""
  plan = motor_plan(m)
  if "dc" not in plan or not plan["dc"]["dyn"].any():
    return new
  p = _sub(plan["dc"], plan["dc"]["dyn"])
  i, idx = p["ids"], p["idx"]
  dyn, bias, vel = m.actuator_dynprm[i], m.actuator_biasprm[i], d.actuator_velocity[i]
  h = m.opt.timestep
  te = jnp.maximum(MINVAL, dyn[:, 0])
  cur = state_at(act, idx[:, CURRENT]) + state_at(act_dot, idx[:, CURRENT]) * te * (
    1 - jnp.exp(-h / te))
  a = -dyn[:, 5] * jnp.abs(vel) / jnp.maximum(MINVAL, stribeck(vel, bias))
  exp_ah = jnp.exp(a * h)
  small = jnp.abs(a) <= MINVAL
  int_h = jnp.where(small, h, (exp_ah - 1) / jnp.where(small, 1.0, a))
  z = exp_ah * state_at(act, idx[:, BRISTLE]) + int_h * vel
  imax = dyn[:, 8]
  x = state_at(new, idx[:, INTEGRAL])
  x = jnp.where(imax > 0, jnp.clip(x, -imax, imax), x)
  return _scatter(new, p["has"], idx, {CURRENT: cur, BRISTLE: z, INTEGRAL: x})

