"""The stages of a forward pass, each the sequence of its pipeline steps as MuJoCo's
engine_forward.c orders them: mj_fwdPosition, mj_fwdVelocity, mj_fwdAcceleration,
mj_fwdConstraint (mj_fwdActuation is actuation/driver.py's fwd_actuation). forward.py
composes them into forward, step, step1 and step2; inverse.py reuses the position and
velocity stages.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxmj.actuation import driver as actuation
from jaxmj.collision import driver
from jaxmj.constraint import driver as constraint
from jaxmj.dynamics import flags
from jaxmj.smooth import armature, camlight, com, kinematics, mass, passive, rne, tendon
from jaxmj.solver import driver as solver
from jaxmj.solver import noslip
from jaxmj.types import Data, Model


def check_supported(m: Model) -> None:
  """Raises NotImplementedError naming each feature of `m` the runtime cannot simulate yet.

  Each entry of `m.unsupported` is (feature, disable bits): the feature is active unless
  one of those bits is set in `opt.disableflags`. Option flags jaxmj cannot honour are
  read from `m.opt` itself (flags.py), so flags switched after compiling count too.
  """
  active = [name for name, bits in m.unsupported if not m.opt.disableflags & bits]
  active += flags.unsupported(m)
  if active:
    raise NotImplementedError(
      f"model {m.model_name!r} uses features jaxmj cannot simulate yet: {'; '.join(active)}"
    )


def fwd_position(m: Model, d: Data) -> Data:
  """Position-dependent stages: kinematics, com, inertia and its factorization, collision."""
  d = kinematics.kinematics(m, d)
  d = com.com_pos(m, d)
  d = camlight.camlight(m, d)
  d = tendon.tendon(m, d)
  d = mass.crb(m, d)
  d = mass.factor_m(m, d)
  d = driver.collision(m, d)
  return actuation.transmission(m, d)


def fwd_velocity(m: Model, d: Data) -> Data:
  """Velocity-dependent stages: com velocities, passive and bias forces, constraint rows
  (their reference accelerations need qvel, as in mj_referenceConstraint)."""
  d = com.com_vel(m, d)
  d = tendon.velocity(m, d)
  d = actuation.velocity(m, d)
  d = passive.passive(m, d)
  d = armature.tendon_bias(m, rne.rne(m, d))
  return constraint.make_constraint(m, d) if d.efc_J.shape[0] else d


def fwd_acceleration(m: Model, d: Data) -> Data:
  """mj_fwdAcceleration: qfrc_smooth and qacc_smooth (applied, passive, bias, actuator)."""
  qfrc_smooth = (
    d.qfrc_passive - d.qfrc_bias + d.qfrc_applied + d.qfrc_actuator
    + rne.xfrc_accumulate(m, d)
  )
  return d.replace(qfrc_smooth=qfrc_smooth, qacc_smooth=mass.solve_m(m, d, qfrc_smooth))


def fwd_constraint(m: Model, d: Data) -> Data:
  """mj_fwdConstraint: qacc from the constraint solver, or qacc_smooth without rows."""
  if d.efc_J.shape[0] == 0:
    return d.replace(qacc=d.qacc_smooth, qfrc_constraint=jnp.zeros_like(d.qacc_smooth))
  return noslip.noslip(m, solver.solve(m, d))
