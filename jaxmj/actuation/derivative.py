"""Where MuJoCo's actuator velocity derivative (mjd_actuator_vel, read by the implicit
integrators) departs from the exact derivative of mj_fwdActuation: each function returns the
(nv, nv) correction to add to the exact d qfrc_actuator / d qvel, or None when it is exact.
dynamics/integrator.py's smooth_vel_derivative adds them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.actuation import driver as actuation
from jaxmj.actuation import motor, orientation
from jaxmj.actuation.motor import BRISTLE, TEMPERATURE
from jaxmj.constants import MINVAL
from jaxmj.types import Data, DisableBit, Model


def dcmotor_correction(m: Model, d: Data) -> jnp.ndarray | None:
  """(nv, nv) to add to the exact d qfrc_actuator / d qvel to get MuJoCo's mjd_actuator_vel
  for the DC motor types (None when it is exact). MuJoCo drops the bristle decay's velocity
  dependence in LuGre friction (its derivative of -sigma1 dz/dt is -sigma1, not -sigma1
  (1 + z da/dv)); for a DC bias after another gain it takes the DC motor's back-EMF slope
  -K^2 / R, whatever the gain, and the friction slope only with a DC gain (even with no DC
  bias adding the friction); and for a DC dynamics under another
  gain it ignores how the next state (the gain's input) moves with velocity. Each is a
  per-actuator slope on the actuator's own velocity: the correction is moment' diag(gap)
  moment."""
  plan = motor.motor_plan(m)
  if "dc" not in plan:
    return None
  p = plan["dc"]
  gaps = [g for g in (_lugre_gap(m, d, p), _mixed_gap(m, d, p)) if g is not None]
  if not gaps:
    return None
  moment = d.actuator_moment[m.actuator_outadr[p["ids"]]]
  return moment.T @ (sum(gaps)[:, None] * moment)


def _lugre_gap(m: Model, d, p: dict):
  on = (p["bias"] | p["gain"]) & p["has"][:, BRISTLE]
  if not on.any():
    return None
  i = p["ids"]
  bias, dyn = m.actuator_biasprm[i], m.actuator_dynprm[i]

  def decay(v):
    return -dyn[:, 5] * jnp.abs(v) / jnp.maximum(MINVAL, motor.stribeck(v, bias))

  vel = d.actuator_velocity[m.actuator_outadr[i]]
  slope = jax.jvp(decay, (vel,), (jnp.ones_like(vel),))[1]
  z = motor.state_at(d.act, p["idx"][:, BRISTLE])
  # MuJoCo's slope is -sigma1 exactly when the gain is a DC motor's, whether or not the bias
  # (which adds the friction) is
  exact = jnp.where(p["bias"], -dyn[:, 6] * (1 + slope * z), 0.0)
  return jnp.where(on, jnp.where(p["gain"], -dyn[:, 6], 0.0) - exact, 0.0)


def _mixed_gap(m: Model, d, p: dict):
  """MuJoCo's slope minus the exact one for the DC bias and dynamics under other gains."""
  i = p["ids"]
  stateful = m.actuator_actnum[i] > 0
  bias_on, dyn_on = p["bias"] & ~p["gain"], p["dyn"] & stateful & ~p["gain"]
  if not (bias_on.any() or dyn_on.any()):
    return None
  out = m.actuator_outadr[i]
  gprm, dyn = m.actuator_gainprm[i], m.actuator_dynprm[i]
  ln, vel, ones = d.actuator_length[out], d.actuator_velocity[out], jnp.ones(len(i))
  gain, slope = jnp.zeros(len(i)), jnp.zeros(len(i))
  for t in np.unique(m.actuator_gaintype[i][~p["gain"]]):
    fn = actuation.GAINS[t]
    g, dg = jax.jvp(lambda v, fn=fn: fn(gprm, ln, v, m.actuator_lengthrange[out],
                                        m.actuator_acc0[out]), (vel,), (ones,))
    on = m.actuator_gaintype[i] == t
    gain, slope = jnp.where(on, g, gain), jnp.where(on, dg, slope)
  k = gprm[:, 1]
  res = jnp.where(p["has"][:, TEMPERATURE], motor.resistance(gprm, dyn, motor.state_at(
    d.act, p["idx"][:, TEMPERATURE])), gprm[:, 0])
  gap = jnp.where(bias_on & (dyn[:, 0] <= 0),
                  -k * k / jnp.maximum(MINVAL, res) + (gain + slope * vel) * k, 0.0)
  if dyn_on.any():
    gap = gap - jnp.where(dyn_on, gain * _next_state_slope(m, d, i, out, vel), 0.0)
  return gap


def _next_state_slope(m: Model, d, i: np.ndarray, out: np.ndarray, vel) -> jnp.ndarray:
  """d (next value of the last state) / d velocity (n,) of the actuators i under DC motor
  dynamics: how the input of a gain reading act (actearly) moves with velocity."""
  controls = actuation.clamped_ctrl(m, d, actuation.act_plan(m, m.opt.disableactuator))[0]
  last = np.where(m.actuator_actnum[i] > 0, m.actuator_actadr[i] + m.actuator_actnum[i] - 1,
                  m.na)
  base = d.replace(actuator_length=d.actuator_length[m.actuator_outadr],
                   actuator_velocity=d.actuator_velocity[m.actuator_outadr])

  def nxt(v):
    dv = base.replace(actuator_velocity=base.actuator_velocity.at[i].set(v))
    act_dot, _ = motor.dynamics(m, dv, controls, jnp.zeros(m.na))
    new = d.act + act_dot * m.opt.timestep
    return motor.state_at(motor.next_act(m, dv, d.act, act_dot, new), last)

  return jax.jvp(nxt, (vel,), (jnp.ones_like(vel),))[1]


def so3_correction(m: Model, d: Data) -> jnp.ndarray | None:
  """(nv, nv) to add to the exact d qfrc_actuator / d qvel to get MuJoCo's mjd_actuator_vel,
  which gives each so3 actuator the velocity derivative biasprm[2] I, or none when its norm
  cap binds. None without so3 actuators or with actuation off.

  "Binds", as probed in mujoco 4.0.0: forcelimited and the norm of the capped actuator_force
  >= forcerange[1], so a capped force whose norm rounds just below the cap keeps the term
  (3 to 16% of capped states in our probes). That test is rounding noise: in float64, one
  ulp more or less in one component of an uncapped force flips it for ~25% of capped forces
  (measured on random forces). jaxmj's so3 forces agree with MuJoCo's to a few ulps but not
  bit for bit (quaternion log/exp go through XLA's own atan2, sin and cos, not libm's), so
  that rounding cannot be reproduced; deciding by the uncapped
  norm > forcerange[1] (drop whenever capped) agrees with MuJoCo more often (87-97% of capped
  states against 81-94% for MuJoCo's own rule on jaxmj's bits), and is used."""
  ids = orientation.so3_ids(m)
  if not len(ids) or m.opt.disabled(DisableBit.ACTUATION):
    return None
  plan = actuation.act_plan(m, m.opt.disableactuator)
  controls, _ = actuation.clamped_ctrl(m, d, plan)
  act = actuation.gain_act(m, plan, actuation.per_actuator(m, d), d.act_dot)
  out = orientation.rows(m, ids, m.actuator_outadr)
  limited = np.asarray(m.actuator_forcelimited)

  def force(vel, limit):
    dv = d.replace(actuator_velocity=d.actuator_velocity.at[out].set(vel))
    return orientation.forces(m, dv, controls, act, limit)

  vel = d.actuator_velocity[out]
  exact = jax.jacfwd(lambda v: force(v, limited))(vel)  # (n * 3, n * 3), block diagonal
  free = force(vel, np.zeros_like(limited)).reshape(-1, orientation.NOUT)
  at_cap = limited[ids] & (math.safe_norm(free) > m.actuator_forcerange[ids, 1])
  slope = jnp.where(at_cap, 0.0, m.actuator_biasprm[ids, 2])
  on = jnp.asarray(~np.isin(ids, plan["disabled"]), vel.dtype)
  nout = orientation.NOUT
  gap = jnp.repeat(on, nout)[:, None] * (jnp.diag(jnp.repeat(slope, nout)) - exact)
  moment = d.actuator_moment[out]
  return moment.T @ gap @ moment
