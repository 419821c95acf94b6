"""mj_setLengthRange: actuator length ranges found by simulation, run with jaxmj's runtime.

When a muscle (or, per <compiler><lengthrange mode=...>, any actuator) has neither a given
lengthrange nor a usable joint/tendon limit, MuJoCo's compiler simulates the model with a
force along the actuator's moment pushing it one way, then the other, and records the
extreme lengths reached over the last `interval` seconds. This module runs that simulation
for all such actuators and both directions at once: one jitted `lax.scan` over the steps,
vmapped over (actuator, side).

The simulation, as in MuJoCo's mjCModel::LengthRange and evalAct:
- options: disableflags = frictionloss | contact | spring | damper | gravity | actuation
  (replacing the model's flags; enable flags kept), timestep = the lengthrange timestep
  when positive;
- each step starts from mj_resetData, scales qvel by exp(-h / max(0.01, timeconst)), runs
  step1, sets qfrc_applied = +-accel * moment / |M^-1 moment| (scaled down to maxforce
  when larger and maxforce > 0), reads actuator_length, then runs step2;
- steps continue while time < inttotal; lengths read at steps whose time after the step
  exceeds inttotal - interval give the range (min for side 0, max for side 1);
- errors: a reset during the simulation (diverged state), an empty range, or a side whose
  spread over the window exceeds tolrange times the range.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import io
from jaxmj.constants import MINVAL
from jaxmj.dynamics.forward import step1, step2
from jaxmj.smooth import mass
from jaxmj.types import DisableBit, Model

# The option flags MuJoCo's compiler sets for the lengthrange simulation.
LR_DISABLE = int(DisableBit.FRICTIONLOSS | DisableBit.CONTACT | DisableBit.SPRING
                 | DisableBit.DAMPER | DisableBit.GRAVITY | DisableBit.ACTUATION)


def step_times(timestep: float, inttotal: float) -> np.ndarray:
  """Simulation time after each step, accumulated in float64 exactly as mj_step2 does
  (time += timestep while time < inttotal)."""
  times, t = [], 0.0
  while t < inttotal:
    t += timestep
    times.append(t)
  return np.asarray(times)


def _simulation_model(m: Model, timestep: float) -> Model:
  opt = m.opt.replace(disableflags=LR_DISABLE)
  if timestep > 0:
    opt = opt.replace(timestep=jnp.asarray(timestep, m.opt.timestep.dtype))
  return m.replace(opt=opt)


def _lr_step(m: Model, d, index, sign, decay, accel, maxforce):
  """evalAct: one damped step pushing actuator `index` with sign +-1; returns (d, length)."""
  d = step1(m, d.replace(qvel=d.qvel * decay))
  moment = d.actuator_moment[index]
  nrm = jnp.linalg.norm(mass.solve_m(m, d, moment))
  frc = moment * (sign * accel / jnp.maximum(MINVAL, nrm))
  if maxforce > 0:
    nrm = jnp.linalg.norm(frc)
    frc = jnp.where(nrm > maxforce, frc * (maxforce / jnp.maximum(MINVAL, nrm)), frc)
  length = d.actuator_length[index]
  d = step2(m, d.replace(qfrc_applied=frc))
  return d, length


def simulate_lengths(m: Model, indices: np.ndarray, opts: dict) -> tuple[np.ndarray, ...]:
  """Lengths of the listed actuators over the lengthrange simulation.

  indices: (n,) actuator ids; opts: the <compiler><lengthrange> attributes. Returns
  lengths (n, 2, T) (side 0 pulls the length down, side 1 pushes it up), reset (n, 2)
  (the state diverged and the world was reset), and the times (T,) after each step.
  """
  sim = _simulation_model(m, opts["timestep"])
  h = float(sim.opt.timestep)
  times = step_times(h, opts["inttotal"])
  decay = float(np.exp(-h / max(0.01, opts["timeconst"])))
  accel, maxforce = float(opts["accel"]), float(opts["maxforce"])

  def run(index, sign):
    d0 = io.make_data(sim)

    def body(d, _):
      d, length = _lr_step(sim, d, index, sign, decay, accel, maxforce)
      return d, (length, d.time == 0)

    _, (lengths, reset) = jax.lax.scan(body, d0, None, length=len(times))
    return lengths, jnp.any(reset)

  both = jax.vmap(run, in_axes=(None, 0))
  batched = jax.jit(jax.vmap(both, in_axes=(0, None)))
  args = (jnp.asarray(np.asarray(m.actuator_outadr[np.asarray(indices, int)], np.int32)),
          jnp.array([-1.0, 1.0], sim.opt.timestep.dtype))
  # one call of a small scan: XLA's backend optimizations cost more than they save
  compiled = batched.lower(*args).compile({"xla_backend_optimization_level": 0})
  lengths, reset = compiled(*args)
  return np.asarray(lengths), np.asarray(reset), times


def length_ranges(m: Model, indices: np.ndarray, opts: dict) -> tuple[np.ndarray, list]:
  """actuator_lengthrange rows (n, 2) for the listed actuators, and one error message (or
  None) per actuator, as mj_setLengthRange decides them."""
  lengths, reset, times = simulate_lengths(m, indices, opts)
  window = times > opts["inttotal"] - opts["interval"]
  out = np.zeros((len(indices), 2))
  errors = []
  for k, i in enumerate(indices):
    seen = lengths[k][:, window]
    if not seen.shape[1]:
      seen = np.zeros((2, 1))  # MuJoCo's lmin = lmax = 0 when nothing was recorded
    lmin, lmax = seen.min(axis=1), seen.max(axis=1)
    out[k] = lmin[0], lmax[1]
    dif = out[k, 1] - out[k, 0]
    if reset[k].any():
      errors.append(f"Unstable lengthrange simulation in actuator {i}")
    elif dif <= 0:
      errors.append(f"Invalid lengthrange ({out[k, 0]:g}, {out[k, 1]:g}) in actuator {i}")
    elif np.any(lmax - lmin > opts["tolrange"] * dif):
      side = int(np.argmax(lmax - lmin > opts["tolrange"] * dif))
      errors.append(f"Lengthrange computation did not converge in actuator {i}: eval "
                    f"({lmin[side]:g}, {lmax[side]:g}), range ({out[k, 0]:g}, {out[k, 1]:g})")
    else:
      errors.append(None)
  return out, errors


def apply_pending(m: Model, pending: tuple[list[int], dict], nodes: list) -> Model:
  """The compiler's last step: `m` with the simulated actuator_lengthrange rows filled in.

  pending: (actuator ids, lengthrange options) from the actuator compiler; nodes: the
  actuators' MJCF elements, for errors (MJCFError naming the first failing actuator).
  """
  indices, opts = pending
  try:
    rows, errors = length_ranges(m, np.asarray(indices), opts)
  except NotImplementedError as e:
    raise nodes[indices[0]].error(f"muscle lengthrange simulation: {e}", None) from e
  for i, err in zip(indices, errors):
    if err is not None:
      raise nodes[i].error(err, None)
  lr = np.array(m.actuator_lengthrange, float)
  lr[m.actuator_outadr[np.asarray(indices)]] = rows  # the first output (so3: of three)
  return m.replace(actuator_lengthrange=jnp.asarray(lr, m.actuator_lengthrange.dtype))
