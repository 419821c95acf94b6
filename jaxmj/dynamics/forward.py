"""The simulation recipe: forward, step and rollout, each a pure function of (Model, Data)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp

from jaxmj.actuation import driver as actuation
from jaxmj.actuation import history
from jaxmj.datacheck import check_data_shapes
from jaxmj.dynamics import autoreset, fwdinv, integrator
from jaxmj.dynamics import checkpoint as remat
from jaxmj.dynamics.carry_tangents import settle_carry_tangents
from jaxmj.dynamics.stages import (
  check_supported,
  full_precision,
  fwd_acceleration,
  fwd_constraint,
  fwd_position,
  fwd_velocity,
  run_stages,
)
from jaxmj.sensor import driver as sensor
from jaxmj.smooth import energy, plastic
from jaxmj.types import Data, EnableBit, Integrator, Model, Stage


@full_precision
def forward(m: Model, d: Data) -> Data:
  """mj_forward: every quantity that depends on the state, up to qacc. No integration."""
  return history.delay_sensors(m, _acceleration_stages(m, _step1(m, d)))


def _acceleration_stages(m: Model, d: Data) -> Data:
  """The stages after step1: actuation, smooth acceleration, constraints, their sensors."""
  return run_stages(m, d, ("mj_fwdActuation", actuation.fwd_actuation),
                    ("mj_fwdAcceleration", fwd_acceleration),
                    ("mj_fwdConstraint", fwd_constraint), ("mj_sensorAcc", sensor.sensor_acc))


def _compare_fwd_inv(m: Model, d: Data) -> Data:
  """The fwdinv flag's diagnostics: MuJoCo 4.0 computes them in mj_step and mj_step2
  before integrating, not in mj_forward."""
  return fwdinv.compare_fwd_inv(m, d) if m.opt.enabled(EnableBit.FWDINV) else d


def _forward_skip_sensor(m: Model, d: Data) -> Data:
  """mj_forwardSkip(skipsensor=1), RK4's later stages: forward without the sensors, so
  sensordata, cacc, cfrc_int and cfrc_ext keep the values they came in with."""
  d = fwd_velocity(m, fwd_position(m, d))
  if m.opt.enabled(EnableBit.ENERGY):
    d = energy.energy(m, d)
  return fwd_constraint(m, fwd_acceleration(m, actuation.fwd_actuation(m, d)))


@full_precision
def step(m: Model, d: Data) -> Data:
  """mj_step: forward, then integrate one timestep.

  A state that is NaN or beyond 1e10 in qpos, qvel or qacc counts in `warning` (BADQPOS,
  BADQVEL, BADQACC) instead of raising. Unless autoreset is disabled the world is then
  reset as MuJoCo resets it: a bad qpos or qvel before the step (which then runs from the
  reset state), a bad qacc after forward (the reset state is returned unintegrated, one
  step behind MuJoCo: autoreset.py). A diverged world in a batch never spreads NaN; with
  autoreset disabled it keeps the diverged values and only the counters tell.
  """
  d_in, reset = autoreset.check_state_read(m, d)
  d = _compare_fwd_inv(m, _acceleration_stages(m, _step1(m, d_in)))
  pushed = history.push(m, d)  # the samples of this step, read only by later steps
  d = history.delay_sensors(m, d)
  new = _advance(m, d, pushed, _integrator_name(m))
  return autoreset.check_step(m, d_in, d, new, reset)


def _integrator_name(m: Model, rk4: bool = True) -> str:
  """The MuJoCo function that integrates m's integrator (RK4 models with Euler where `rk4`
  is False: step2, as in MuJoCo, which cannot rerun forward there)."""
  if m.opt.integrator == Integrator.RK4 and rk4:
    return "mj_RungeKutta"
  if m.opt.integrator in (Integrator.IMPLICIT, Integrator.IMPLICITFAST):
    return "mj_implicit"
  return "mj_Euler"


_INTEGRATORS = {
  "mj_Euler": integrator.euler,
  "mj_implicit": integrator.implicit,
  "mj_RungeKutta": lambda m, d: integrator.rk4(m, d, _forward_skip_sensor),
}


def _advance(m: Model, d: Data, pushed: jnp.ndarray, name: str) -> Data:
  """MuJoCo's integrator `name` from a forward pass `d` (sensordata as forward leaves it),
  under that name as a named scope (profiles and HLO dumps, as run_stages); then the spring
  references yield at the new positions, and the history `pushed` (history.push of the
  computed sensor values) is stored."""
  with jax.named_scope(name):
    new = _INTEGRATORS[name](m, d)
  return plastic.update(m, d, new).replace(history=pushed)


def _integrate_after_forward(m: Model, d: Data, name: str) -> Data:
  """MuJoCo's integrator `name` called by the user on a Data that went through forward:
  the history records computed values, so sensors with a history are computed again
  (forward left their delayed or held values in sensordata), as mj_advance does."""
  fresh = sensor.sensor_fresh(m, d, acc=True)
  return _advance(m, d, history.push(m, fresh), name)


@full_precision
def euler(m: Model, d: Data) -> Data:
  """mj_Euler on a Data after `forward`: semi-implicit Euler (joint damping implicit unless
  eulerdamp is disabled), whatever integrator the model names. Advances qpos, qvel, act,
  time, qacc_warmstart, spring references and the history; no divergence check or reset
  (mj_step's, in `step`). With `forward` it is `step` for an Euler model."""
  return _integrate_after_forward(m, d, "mj_Euler")


@full_precision
def implicit(m: Model, d: Data) -> Data:
  """mj_implicit on a Data after `forward`: implicit-in-velocity Euler, the full derivative
  or implicitfast's as the model's integrator says (MuJoCo's mj_implicit refuses other
  integrators, and so does this). Advances what `euler` does."""
  if m.opt.integrator not in (Integrator.IMPLICIT, Integrator.IMPLICITFAST):
    raise ValueError(f"jaxmj.implicit: model {m.model_name!r} has integrator "
                     f"{Integrator(m.opt.integrator).name}; mj_implicit needs IMPLICIT or "
                     "IMPLICITFAST (use euler or rungekutta4, or set m.opt.integrator)")
  return _integrate_after_forward(m, d, "mj_implicit")


@full_precision
def rungekutta4(m: Model, d: Data) -> Data:
  """mj_RungeKutta(N=4) on a Data after `forward`: RK4 on (qpos, qvel, act), running forward
  (without sensors) at the three later stages, whatever integrator the model names.
  Advances what `euler` does; qacc becomes the stages' combined acceleration."""
  return _integrate_after_forward(m, d, "mj_RungeKutta")


# step for rollout's scan: reverse mode keeps fewer arrays per step (jaxmj/dynamics/checkpoint.py)
_lean_step = remat.lean_residuals(step)


@full_precision
def step1(m: Model, d: Data) -> Data:
  """mj_step1: the position and velocity stages of a step (with their sensors and energy),
  so a controller can read them and set ctrl before step2. Integrates nothing. As in
  MuJoCo, those sensors already report their delayed (or held interval) values, and a bad
  qpos or qvel is counted (and reset) here, as in step."""
  d = autoreset.check_state(m, d)
  return history.delay_sensors(m, _step1(m, d), (Stage.POS, Stage.VEL))


def _step1(m: Model, d: Data) -> Data:
  """step1 with every sensor's value as computed (what the history records)."""
  check_supported(m)
  d = run_stages(m, d, ("mj_fwdPosition", fwd_position), ("mj_sensorPos", sensor.sensor_pos),
                 ("mj_fwdVelocity", fwd_velocity), ("mj_sensorVel", sensor.sensor_vel))
  if m.opt.enabled(EnableBit.ENERGY):
    d = run_stages(m, d, ("mj_energy", energy.energy))
  return d


@full_precision
def step2(m: Model, d: Data) -> Data:
  """mj_step2: actuation, acceleration, constraint solve and acceleration sensors on a Data
  that went through step1, then integration. As in MuJoCo, RK4 cannot be split (its later
  stages rerun forward), so step2 integrates RK4 models with Euler. A bad qacc counts in
  `warning` and resets the world as in step (qpos and qvel were checked by step1).
  """
  d = _compare_fwd_inv(m, _acceleration_stages(m, sensor.sensor_fresh(m, d)))
  pushed = history.push(m, d)
  d = history.delay_sensors(m, d)
  return autoreset.check_acc(m, d, _advance(m, d, pushed, _integrator_name(m, rk4=False)))


def rollout(
  m: Model,
  d: Data,
  ctrl: jnp.ndarray | None = None,
  *,
  nstep: int | None = None,
  fields: Sequence[str] = ("time", "qpos", "qvel", "act"),
  checkpoint: bool | int | None = None,
) -> tuple[Data, dict[str, jnp.ndarray]]:
  """Steps `d` through a control sequence with one `lax.scan`, jitted.

  ctrl: (T, nu) controls applied before each step (`nstep`, if given too, must be T); or
  None with `nstep=T` (controls held).
  Returns the final Data and a dict of the named Data fields after each step, each (T, ...).
  Stacking only `fields` keeps memory at T x state size rather than T x all of Data.
  rollout compiles once per model structure, T, `fields` and `checkpoint` and reuses that
  on later calls (inside another jit, vmap or grad it is traced into the caller as any
  function is).

  checkpoint: for reverse mode through long horizons. None (default): the backward pass
  stores every step's residuals (memory ~ T). An int k: segments of k steps under
  `jax.checkpoint`, recomputed in the backward pass (memory ~ T / k carries + k steps;
  k = 1 rematerializes each step). True: k = ceil(sqrt(T)). Values are unchanged; the
  gradient costs one more forward pass. jaxmj/dynamics/checkpoint.py.
  """
  if ctrl is None and nstep is None:
    raise ValueError("rollout needs a ctrl sequence or nstep")
  ctrl = None if ctrl is None else jnp.asarray(ctrl)
  if ctrl is not None and nstep is not None and (ctrl.ndim < 1 or ctrl.shape[0] != nstep):
    raise ValueError(f"jaxmj.rollout: nstep={nstep}, but ctrl has shape {ctrl.shape}: one "
                     "control row per step; pass ctrl of shape (nstep, nu), or ctrl alone")
  return _rollout(m, d, ctrl, nstep, tuple(fields), checkpoint)


@functools.partial(jax.jit, static_argnames=("nstep", "fields", "checkpoint"))
def _rollout(m: Model, d: Data, ctrl, nstep, fields, checkpoint) -> tuple[Data, dict]:
  check_data_shapes(m, d, "rollout")
  if ctrl is None:
    ctrl = jnp.broadcast_to(d.ctrl, (nstep,) + d.ctrl.shape)
  elif ctrl.ndim != 2 or ctrl.shape[1] != m.nu:
    raise ValueError(f"jaxmj.rollout: ctrl has shape {ctrl.shape}, but model "
                     f"{m.model_name!r} needs (T, nu) = (T, {m.nu})")

  # one linearization of the step when the scan is differentiated, not three
  d = settle_carry_tangents(_lean_step, m, d, {".ctrl": ctrl}, quiet_consts=(".sensor_",))

  def body(carry, u):
    carry = _lean_step(m, carry.replace(ctrl=u))
    return carry, {f: getattr(carry, f) for f in fields}

  if checkpoint is None or checkpoint is False:
    return jax.lax.scan(body, d, ctrl)
  k = remat.segment_length(checkpoint, ctrl.shape[0])
  return remat.segmented_scan(body, d, ctrl, k)
