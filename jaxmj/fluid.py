"""Gravity compensation (mj_gravcomp) and fluid forces (mj_fluid, inertia-box model).

Both act on bodies and reach the dofs through the body Jacobian at the body's centre of
mass (mj_applyFT). The inertia-box fluid model replaces each body by the uniform box with
its mass and principal inertia and applies, in the box frame (ximat at xipos), Stokes
viscous drag (sphere of the box's mean side) and quadratic drag proportional to the
projected areas, with the medium moving at opt.wind.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math, rne
from jaxmj.types import Data, DisableBit, Model


def apply_ft(m: Model, d: Data, force: jnp.ndarray, torque: jnp.ndarray,
             point: jnp.ndarray) -> jnp.ndarray:
  """mj_applyFT for every body at once: (nv,) generalized force of global force / torque
  (nbody, 3) acting at global points (nbody, 3) of each body."""
  offset = point - d.subtree_com[m.body_rootid]
  return rne.dof_project(m, d, jnp.concatenate([torque + jnp.cross(offset, force), force], -1))


def gravcomp(m: Model, d: Data) -> jnp.ndarray:
  """qfrc_gravcomp (nv,): -gravity * mass * gravcomp applied at each body's com."""
  if m.nv == 0 or m.opt.disabled(DisableBit.GRAVITY):
    return jnp.zeros(m.nv, d.qvel.dtype)
  force = -m.opt.gravity[None] * (m.body_mass * m.body_gravcomp)[:, None]
  return apply_ft(m, d, force, jnp.zeros_like(force), d.xipos)


def _box(m: Model) -> jnp.ndarray:
  """(nbody, 3) sides of the uniform box with each body's mass and principal inertia."""
  i0, i1, i2 = m.body_inertia[:, 0], m.body_inertia[:, 1], m.body_inertia[:, 2]
  mass = jnp.where(m.body_mass < math.MINVAL, 1.0, m.body_mass)
  side = lambda a, b, c: jnp.sqrt(jnp.maximum(math.MINVAL, a + b - c) / mass * 6.0)
  return jnp.stack([side(i1, i2, i0), side(i0, i2, i1), side(i0, i1, i2)], axis=-1)


def _inertia_box(m: Model, d: Data) -> jnp.ndarray:
  """mj_inertiaBoxFluidModel for every body: (nv,) generalized fluid force."""
  rot = d.ximat
  offset = d.xipos - d.subtree_com[m.body_rootid]
  ang = d.cvel[:, :3]
  lin = d.cvel[:, 3:] + jnp.cross(ang, offset)
  lang = jnp.einsum("bji,bj->bi", rot, ang)
  llin = jnp.einsum("bji,bj->bi", rot, lin - m.opt.wind[None])
  box = _box(m)
  rho, mu = m.opt.density, m.opt.viscosity
  diam = jnp.mean(box, axis=-1, keepdims=True)
  torque = -jnp.pi * diam**3 * mu * lang
  force = -3.0 * jnp.pi * diam * mu * llin
  b0, b1, b2 = box[:, 0], box[:, 1], box[:, 2]
  area = jnp.stack([b1 * b2, b0 * b2, b0 * b1], axis=-1)
  force = force - 0.5 * rho * area * jnp.abs(llin) * llin
  arm = jnp.stack([b0 * (b1**4 + b2**4), b1 * (b0**4 + b2**4), b2 * (b0**4 + b1**4)], -1)
  torque = torque - rho * arm * jnp.abs(lang) * lang / 64.0
  keep = (m.body_mass >= math.MINVAL) & (np.asarray(m.body_weldid) > 0)
  force = jnp.where(keep[:, None], jnp.einsum("bij,bj->bi", rot, force), 0.0)
  torque = jnp.where(keep[:, None], jnp.einsum("bij,bj->bi", rot, torque), 0.0)
  return apply_ft(m, d, force, torque, d.xipos)


def fluid(m: Model, d: Data) -> jnp.ndarray:
  """qfrc_fluid (nv,), mj_fluid: zero when opt.density and opt.viscosity are 0 (every term
  carries one of them), so it is computed for every model with dofs."""
  if m.nv == 0:
    return jnp.zeros(m.nv, d.qvel.dtype)
  return _inertia_box(m, d)
