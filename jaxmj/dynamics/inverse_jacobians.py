"""Inverse-dynamics Jacobians (mjd_inverseFD's layout), exact by forward-mode autodiff.

MuJoCo C differentiates mj_inverse by finite differences (mjd_inverseFD); here the same
matrices come from one linearization of `inverse`, exact where the contact set does not
change, and jit / vmap over states. Inverse dynamics has no iterative solver (the
constraint forces follow from qacc in closed form), so there is no solver tolerance in them.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmj.actuation.driver import fwd_actuation
from jaxmj.dynamics.inverse import inverse
from jaxmj.dynamics.transition import central, split, tangents
from jaxmj.enums import Integrator
from jaxmj.smooth.qpos import integrate_pos
from jaxmj.types import Data, Model


class InverseJacobians(NamedTuple):
  """mjd_inverseFD's outputs, transposed as MuJoCo stores them: row i is the derivative
  w.r.t. coordinate i of qpos (in its tangent space: a free joint's 6 velocity directions,
  as mj_integratePos perturbs it), qvel or qacc.

  DfDq, DfDv, DfDa: (nv, nv), DfDq[i, j] = d qfrc_inverse[j] / d qpos_i.
  DsDq, DsDv, DsDa: (nv, nsensordata).
  DmDq: (nv, nv, nv), DmDq[i] = d qM / d qpos_i, dense (MuJoCo's (nv, nC) holds its
    compressed M's entries: row r's are DmDq[i][r, M_colind[M_rowadr[r]:][:M_rownnz[r]]]).
  """

  DfDq: jax.Array
  DfDv: jax.Array
  DfDa: jax.Array
  DsDq: jax.Array
  DsDv: jax.Array
  DsDa: jax.Array
  DmDq: jax.Array


def _inverse_outputs(m: Model, d: Data, flg_actuation: bool):
  """(dq, dv, da) -> (qfrc_inverse, sensordata, qM) of mj_inverse at d's state moved by dq
  (qpos's tangent space, by mj_integratePos), dv (qvel) and da (qacc); flg_actuation:
  qfrc_actuator (mj_fwdActuation at that state) subtracted from the force."""

  def f(dq, dv, da):
    qpos = integrate_pos(m, d.qpos, dq, 1.0)
    di = inverse(m, d.replace(qpos=qpos, qvel=d.qvel + dv, qacc=d.qacc + da))
    force = di.qfrc_inverse
    if flg_actuation:
      force = force - fwd_actuation(m, di).qfrc_actuator
    return force, di.sensordata, di.qM

  return f


def inverse_jacobians(m: Model, d: Data, eps: float | None = None,
                      flg_actuation: bool = False) -> InverseJacobians:
  """mjd_inverseFD's matrices at `d` (qpos, qvel, qacc, act, ctrl; one world: vmap for a
  batch), in its layout (InverseJacobians). eps None (default): exact, by forward mode
  through `inverse`, every direction's tangent in one vmapped batch; eps > 0: centred
  differences with that step (mjd_inverseFD takes forward differences), for comparison.
  flg_actuation (static): the force is qfrc_inverse - qfrc_actuator, as mjd_inverseFD's.
  Refuses RK4 and noslip, as MuJoCo does (no inverse is defined for them). Sensors of
  actuator forces read d.actuator_force, which mj_inverse does not compute: their rows are
  0 (mjd_inverseFD's, under flg_actuation, show what its earlier mj_fwdActuation calls left
  there)."""
  if m.opt.integrator == Integrator.RK4:
    raise ValueError("inverse_jacobians: the RK4 integrator is not supported (as in "
                     "mjd_inverseFD)")
  if m.opt.noslip_iterations:
    raise ValueError("inverse_jacobians: the noslip solver is not supported (as in "
                     "mjd_inverseFD)")
  f = _inverse_outputs(m, d, flg_actuation)
  nv, dt = m.nv, d.qvel.dtype
  if eps is None:
    zero = jnp.zeros(nv, dt)
    force, sensor, mass = tangents(f, (zero, zero, zero), None)
  else:
    force, sensor, mass = central(lambda x: f(*split(x, (nv, nv, nv))), 3 * nv, dt, eps)
  def by_input(x):  # rows of qpos, qvel and qacc directions
    return x[:nv], x[nv:2 * nv], x[2 * nv:]

  return InverseJacobians(*by_input(force), *by_input(sensor), mass[:nv])
