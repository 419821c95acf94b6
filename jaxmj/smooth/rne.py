"""Recursive Newton-Euler bias forces (mj_rne with zero acceleration) and applied body forces."""

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


def rne_post_constraint(m: Model, d: Data) -> Data:
  """mj_rnePostConstraint: cacc, cfrc_ext, cfrc_int with the final qacc (com frame).

  cacc includes gravity as an upward acceleration of the world. cfrc_ext holds xfrc_applied,
  contact forces (support.contact_forces), connect and weld constraint forces and spatial
  tendon forces (jaxmj/extforce.py) on each body, moved to the com-frame origin; cfrc_int
  is the force each body receives from its parent. Reads cdof, cdof_dot, cinert, cvel,
  qvel, qacc, xfrc_applied, contact, efc_force (and efc_J, tendon and actuator state).
  """
  from jaxmj.constraint import extforce
  from jaxmj.smooth.support import contact_forces

  plan = body_plan(m)
  dt = d.qvel.dtype
  gravity = jnp.zeros(3, dt) if m.opt.disabled(DisableBit.GRAVITY) else m.opt.gravity
  body_dof = jnp.asarray(plan["body_dof"], dt)
  cacc = body_dof @ (d.cdof_dot * d.qvel[:, None] + d.cdof * d.qacc[:, None])
  cacc = cacc.at[:, 3:].add(-gravity)

  com = d.subtree_com[m.body_rootid]
  force, torque = d.xfrc_applied[:, :3], d.xfrc_applied[:, 3:]
  cfrc_ext = jnp.concatenate([torque - jnp.cross(com - d.xipos, force), force], axis=-1)
  cfrc_ext = cfrc_ext.at[0].set(0.0)
  ncon = d.contact.dist.shape[0]
  if ncon and d.efc_force.shape[0]:
    local = contact_forces(m, d)
    frame = d.contact.frame
    fglob = jnp.einsum("cij,ci->cj", frame, local[:, :3])
    tglob = jnp.einsum("cij,ci->cj", frame, local[:, 3:])
    for geoms, sign in ((d.contact.geom1, -1.0), (d.contact.geom2, 1.0)):
      body = m.geom_bodyid[geoms]
      arm = com[body] - d.contact.pos
      wrench = jnp.concatenate([tglob - jnp.cross(arm, fglob), fglob], axis=-1)
      wrench = jnp.where((body > 0)[:, None], sign * wrench, 0.0)
      cfrc_ext = cfrc_ext.at[body].add(wrench)

  cfrc_ext = cfrc_ext + extforce.equality_wrenches(m, d) + extforce.tendon_wrenches(m, d)
  cfrc_ext = cfrc_ext.at[0].set(0.0)

  cfrc_body = math.inert_mul(d.cinert, cacc) + math.force_cross(
    d.cvel, math.inert_mul(d.cinert, d.cvel)) - cfrc_ext
  cfrc_body = cfrc_body.at[0].set(0.0)
  cfrc_int = jnp.asarray(plan["subtree"], dt) @ cfrc_body
  return d.replace(cacc=cacc, cfrc_ext=cfrc_ext, cfrc_int=cfrc_int)
