"""Recursive Newton-Euler bias forces (mj_rne with zero acceleration) and applied body forces.

mj_rnePostConstraint, which needs the constraint forces, is constraint/extforce.py's.
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxmj import math
from jaxmj.scan import body_plan
from jaxmj.types import Data, DisableBit, Model


def rne(m: Model, d: Data) -> Data:
  """mj_rne(flg_acc=0): qfrc_bias, the Coriolis, centrifugal and gravity forces.

  Reads cinert, cvel, cdof, cdof_dot, qvel. Writes qfrc_bias. Gravity enters as an upward
  acceleration of the world, as in MuJoCo.
  """
  gravity = jnp.zeros(3, d.qvel.dtype) if m.opt.disabled(DisableBit.GRAVITY) else m.opt.gravity
  body_dof = jnp.asarray(body_plan(m)["body_dof"], d.qvel.dtype)
  cacc = body_dof @ (d.cdof_dot * d.qvel[:, None])
  cacc = cacc.at[:, 3:].add(-gravity)
  cfrc_body = math.inert_mul(d.cinert, cacc) + math.force_cross(
    d.cvel, math.inert_mul(d.cinert, d.cvel)
  )
  return d.replace(qfrc_bias=dof_project(m, d, cfrc_body))


def dof_project(m: Model, d: Data, cfrc_body: jnp.ndarray) -> jnp.ndarray:
  """(nv,) generalized force of spatial forces (nbody, 6) acting on each body (com frame)."""
  subtree = jnp.asarray(body_plan(m)["subtree"], cfrc_body.dtype)
  cfrc = subtree @ cfrc_body
  return jnp.sum(d.cdof * cfrc[m.dof_bodyid], axis=-1)


def xfrc_accumulate(m: Model, d: Data) -> jnp.ndarray:
  """mj_xfrcAccumulate: (nv,) generalized force of xfrc_applied (force, torque at xipos)."""
  force, torque = d.xfrc_applied[:, :3], d.xfrc_applied[:, 3:]
  # Move the wrench from the body com to the com-frame origin of the body's tree.
  offset = d.xipos - d.subtree_com[m.body_rootid]
  cfrc = jnp.concatenate([torque + jnp.cross(offset, force), force], axis=-1)
  return dof_project(m, d, cfrc)

