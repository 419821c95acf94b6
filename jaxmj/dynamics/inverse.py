"""Inverse dynamics: mj_inverse, the generalized force that produces a given qacc.

qfrc_inverse = M qacc + qfrc_bias - qfrc_passive - qfrc_constraint, where the constraint
force comes from MuJoCo's inverse constraint problem: with qacc known, every row's force
is the analytic minimizer at jar = J qacc - aref (mj_invConstraint, the same per-row
update as the primal solvers), no iteration. After `forward`, `inverse` returns the applied
forces qfrc_applied + qfrc_actuator + J' xfrc_applied (to solver tolerance when
constraints are active).

With the invdiscrete flag, qacc is read as the discrete-time acceleration of one step,
(qvel_next - qvel) / h, and first mapped to the continuous-time qacc the integrator's
velocity update implies (mj_discreteAcc), so the forward step -> inverse round trip returns
the applied forces under Euler with implicit damping, implicit and implicitfast.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.dynamics import integrator
from jaxmj.dynamics.stages import check_supported, full_precision, fwd_position, fwd_velocity
from jaxmj.sensor import driver as sensor
from jaxmj.smooth import armature, mass
from jaxmj.solver import problem
from jaxmj.types import Cone, Data, DisableBit, EnableBit, Integrator, Model


def inv_constraint(m: Model, d: Data) -> Data:
  """mj_invConstraint: efc_force, efc_state and qfrc_constraint for the given qacc.

  Reads qacc, efc_J, efc_D, efc_R, efc_aref, efc_frictionloss, efc_type, efc_active and
  (elliptic cones) the contact friction.
  """
  nefc = d.efc_J.shape[0]
  if nefc == 0 or m.opt.disabled(DisableBit.CONSTRAINT):
    return d.replace(qfrc_constraint=jnp.zeros_like(d.qacc),
                     efc_force=jnp.zeros_like(d.efc_force))
  cones, fric, mu = problem.cone_layout(np.zeros(0), np.zeros(0)), None, None
  con = d.contact
  if m.opt.cone == Cone.ELLIPTIC and len(con.dim):
    sel = np.asarray(con.dim) > 1
    cones = problem.cone_layout(np.asarray(con.efc_address)[sel], np.asarray(con.dim)[sel])
    fric = con.friction[jnp.asarray(np.flatnonzero(sel))]
    mu = fric[:, 0] * jnp.sqrt(1.0 / jnp.maximum(MINVAL, m.opt.impratio))
  zero = jnp.zeros_like(d.qacc)
  p = problem.make_problem(d.qM, zero, zero, d.efc_J, d.efc_D, d.efc_R, d.efc_aref,
                      d.efc_frictionloss, d.efc_type, d.efc_active, cones, fric, mu)
  upd = problem.constraint_update(p, p.J @ d.qacc - p.aref)
  return d.replace(efc_force=upd.force, efc_state=upd.state,
                   qfrc_constraint=p.J.T @ upd.force)


def discrete_acc(m: Model, d: Data) -> jnp.ndarray:
  """mj_discreteAcc: (nv,) continuous-time qacc M^-1 A qacc from the discrete-time d.qacc,
  A being the matrix the integrator's velocity update inverts (integrator.euler and
  integrator.implicit): Euler M + h diag(damping derivative) (unless eulerdamp or the
  damper is disabled), implicit M - h qDeriv, implicitfast M - h sym(qDeriv) with the free
  rigid bodies' own 6x6 blocks (bias derivative included). RK4 has no such inverse.

  Reads qM, qLD, qvel, qacc and the velocity-stage fields qDeriv depends on.
  """
  h, integ = m.opt.timestep, m.opt.integrator
  if integ == Integrator.RK4:
    raise NotImplementedError("discrete inverse dynamics (invdiscrete) is not supported by "
                              "the RK4 integrator (as in MuJoCo)")
  if m.nv == 0:
    return d.qacc
  if integ == Integrator.EULER:
    if m.opt.disabled(DisableBit.EULERDAMP | DisableBit.DAMPER):
      return d.qacc
    damping = armature.damper_derivative(*armature.dof_damping(m, d.qvel.dtype), d.qvel)
    return d.qacc + mass.solve_m(m, d, h * damping * d.qacc)
  fast = integ == Integrator.IMPLICITFAST
  deriv = integrator.smooth_vel_derivative(m, d, bias=not fast)
  if fast:
    deriv = 0.5 * (deriv + deriv.T)
  qfrc = (d.qM - h * deriv) @ d.qacc
  blocks, mhat = integrator.free_body_mhat(m, d, deriv, h) if fast else ((), None)
  if len(blocks):
    qfrc = qfrc.at[blocks].set(jnp.einsum("kij,kj->ki", mhat, d.qacc[blocks]))
  return mass.solve_m(m, d, qfrc)


@full_precision
def inverse(m: Model, d: Data) -> Data:
  """mj_inverse: qfrc_inverse (nv,) from qpos, qvel and qacc (with their sensors).

  Reads qpos, qvel, qacc (and act, mocap poses); writes every position and velocity
  quantity forward computes, efc_force, qfrc_constraint and qfrc_inverse. Position and
  velocity stages are forward's; the inverse-only part is discrete_acc (invdiscrete flag),
  inv_constraint and the final balance. Under invdiscrete the constraint forces, the
  balance and the acceleration sensors use the continuous-time qacc, and d.qacc is
  returned unchanged, as in MuJoCo.
  """
  check_supported(m)
  qacc = d.qacc
  d = fwd_position(m, d)
  d = sensor.sensor_pos(m, d)
  d = fwd_velocity(m, d)
  d = sensor.sensor_vel(m, d)
  if m.opt.enabled(EnableBit.INVDISCRETE):
    d = d.replace(qacc=discrete_acc(m, d))
  d = inv_constraint(m, d)
  qfrc = d.qM @ d.qacc + d.qfrc_bias - d.qfrc_passive - d.qfrc_constraint
  d = d.replace(qfrc_inverse=qfrc)
  return sensor.sensor_acc(m, d).replace(qacc=qacc)
