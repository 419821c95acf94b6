"""Recursive Newton-Euler bias forces (mj_rne with zero acceleration) and applied body forces.

mj_rnePostConstraint, which needs the constraint forces, is constraint/extforce.py's.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.scan import body_plan
from jaxmj.smooth import com
from jaxmj.types import Data, DisableBit, Model


def rne(m: Model, d: Data) -> Data:
  """mj_rne(flg_acc=0): qfrc_bias, the Coriolis, centrifugal and gravity forces.

  Reads cinert, cvel, cdof, cdof_dot, qvel. Writes qfrc_bias. Gravity enters as an upward
  acceleration of the world, as in MuJoCo. Exact arithmetic: mj_rne's passes and products in
  its order (MuJoCo's bits; `_rne_ordered`); fast: products with the tree's 0/1 matrices, as
  the derivative always is.
  """
  gravity = jnp.zeros(3, d.qvel.dtype) if m.opt.disabled(DisableBit.GRAVITY) else m.opt.gravity
  if not m.opt.exact:
    cacc = _cacc_products(m, d.cdof_dot, d.qvel, gravity)
    return d.replace(qfrc_bias=dof_project(m, d, _body_force(d.cinert, cacc, d.cvel)))

  @jax.custom_jvp
  def exact(args, z):
    return _rne_ordered(m, *args, z)[0]

  @exact.defjvp
  def exact_jvp(primals, tangents):
    (args, z), (dargs, _) = primals, tangents
    qfrc, cacc, cfrc = _rne_ordered(m, *args, z)
    cdof, cdof_dot, qvel, cinert, cvel, gravity = args
    dcdof, dcdof_dot, dqvel, dcinert, dcvel, dgravity = dargs
    dcacc = jax.jvp(functools.partial(_cacc_products, m), (cdof_dot, qvel, gravity),
                    (dcdof_dot, dqvel, dgravity))[1]
    dcfrc_body = jax.jvp(_body_force, (cinert, cacc, cvel), (dcinert, dcacc, dcvel))[1]
    dcfrc = com.subtree_product(m, dcfrc_body)[m.dof_bodyid]
    return qfrc, jnp.sum(dcdof * cfrc[m.dof_bodyid] + cdof * dcfrc, -1)

  args = (d.cdof, d.cdof_dot, d.qvel, d.cinert, d.cvel, gravity)
  return d.replace(qfrc_bias=exact(args, math.opaque_zero(d.time * d.time)))


def _cacc_products(m: Model, cdof_dot, qvel, gravity) -> jnp.ndarray:
  """(nbody, 6) cacc: every dof's cdof_dot qvel summed down the tree, less gravity."""
  body_dof = jnp.asarray(body_plan(m)["body_dof"], qvel.dtype)
  return (body_dof @ (cdof_dot * qvel[:, None])).at[:, 3:].add(-gravity)


def _body_force(cinert, cacc, cvel):
  """cfrc_body (nbody, 6) = cinert cacc + cvel x* (cinert cvel)."""
  return math.inert_mul(cinert, cacc) + math.force_cross(cvel, math.inert_mul(cinert, cvel))


def _rne_ordered(m: Model, cdof, cdof_dot, qvel, cinert, cvel, gravity, z):
  """(qfrc_bias, cacc, cfrc): mj_rne(flg_acc=0) in MuJoCo's order of operations, products
  rounded on their own (z: `math.nofma`): the forward pass cacc = cacc_parent + cdof_dot qvel
  over each body's dofs (mju_mulDofVec), the body forces (mju_mulInertVec, mji_crossForce),
  the backward pass over the tree (the world takes nothing) and mji_dot6."""
  dt = qvel.dtype
  own = jnp.zeros((m.nbody, 6), dt)
  if m.nv:
    p = math.nofma(cdof_dot * qvel[:, None], z)  # (nv, 6)
    adr, num = np.maximum(m.body_dofadr, 0), np.asarray(m.body_dofnum)
    for k in range(int(num.max())):  # mju_mulMatTVec: the body's dofs left to right
      row = p[np.minimum(adr + k, m.nv - 1)]
      own = jnp.where((num > k)[:, None], own + row if k else row, own)
  root = jnp.concatenate([jnp.zeros(3, dt), -gravity.astype(dt)])
  cacc = com.path_sum(m.body_parentid, own, root)
  cfrc_body = math.inert_mul_nofma(cinert, cacc, z) + math.force_cross_nofma(
    cvel, math.inert_mul_nofma(cinert, cvel, z), z)
  cfrc = com.subtree_sum(m, cfrc_body, world=False)
  return math.dot6_nofma(cdof, cfrc[m.dof_bodyid], z), cacc, cfrc


def dof_project(m: Model, d: Data, cfrc_body: jnp.ndarray) -> jnp.ndarray:
  """(nv,) generalized force of spatial forces (nbody, 6) acting on each body (com frame)."""
  return jnp.sum(d.cdof * com.subtree_product(m, cfrc_body)[m.dof_bodyid], axis=-1)


def xfrc_accumulate(m: Model, d: Data) -> jnp.ndarray:
  """mj_xfrcAccumulate: (nv,) generalized force of xfrc_applied (force, torque at xipos)."""
  force, torque = d.xfrc_applied[:, :3], d.xfrc_applied[:, 3:]
  # Move the wrench from the body com to the com-frame origin of the body's tree.
  offset = d.xipos - d.subtree_com[m.body_rootid]
  cfrc = jnp.concatenate([torque + jnp.cross(offset, force), force], axis=-1)
  return dof_project(m, d, cfrc)

