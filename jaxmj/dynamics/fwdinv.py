"""The fwdinv flag: mj_compareFwdInv, forward dynamics checked against inverse dynamics.

After the forward constraint solve, inverse dynamics (mj_inverseSkip from the velocity
stage, no sensors) runs on the forward qacc, and

  solver_fwdinv[0] = |qfrc_constraint(forward) - qfrc_constraint(inverse)|
  solver_fwdinv[1] = |qfrc_applied + qfrc_actuator + J' xfrc_applied - qfrc_inverse|

both zero for an exactly solved forward problem. MuJoCo 4.0 runs it in mj_step and
mj_step2 before integrating, not in mj_forward (forward.step). As in MuJoCo, qfrc_inverse
and efc_state keep the inverse's values while efc_force and qfrc_constraint keep the
forward's; without any constraint row MuJoCo returns early, so qfrc_inverse keeps the value
it came in with.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxmj.dynamics import inverse
from jaxmj.math import safe_norm
from jaxmj.smooth import rne
from jaxmj.types import Data, EnableBit, Model


def compare_fwd_inv(m: Model, d: Data) -> Data:
  """mj_compareFwdInv on a Data after the forward acceleration stages; writes
  solver_fwdinv (2,), qfrc_inverse (nv,) and efc_state (nefc,)."""
  zero = jnp.zeros(2, d.qacc.dtype)
  if d.efc_J.shape[0] == 0:
    return d.replace(solver_fwdinv=zero)
  qforce = d.qfrc_applied + d.qfrc_actuator + rne.xfrc_accumulate(m, d)
  qacc = inverse.discrete_acc(m, d) if m.opt.enabled(EnableBit.INVDISCRETE) else d.qacc
  inv = inverse.inv_constraint(m, d.replace(qacc=qacc))
  qfrc_inverse = d.qM @ qacc + d.qfrc_bias - d.qfrc_passive - inv.qfrc_constraint
  stats = jnp.stack([safe_norm(d.qfrc_constraint - inv.qfrc_constraint),
                     safe_norm(qforce - qfrc_inverse)])
  rows = jnp.any(d.efc_active)
  return d.replace(
    solver_fwdinv=jnp.where(rows, stats, zero),
    qfrc_inverse=jnp.where(rows, qfrc_inverse, d.qfrc_inverse),
    efc_state=jnp.where(rows, inv.efc_state, d.efc_state),
  )
