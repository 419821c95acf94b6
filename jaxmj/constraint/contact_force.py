"""mj_contactForce: each contact's force and torque in its contact frame, from efc_force.

The solver's contact force is the cone force; with contact adhesion it carries the pull
shifted in (adhesion.py), and MuJoCo reports the net interface force, that force's normal
component less the contact's adhesion. An adhering contact in the gap layer reports its one
frictionless row's force less its adhesion; other contacts without rows, zeros.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.constraint.adhesion import contact_adhesion, gap_layer
from jaxmj.constraint.layout import efc_layout
from jaxmj.types import Cone, Data, Model


def decode_pyramid(pyramid: jnp.ndarray, mu: jnp.ndarray, dim: int) -> jnp.ndarray:
  """mju_decodePyramid: (..., dim) contact-frame force from the (..., 2(dim-1)) forces on
  the pyramid's edges; mu: (..., 5) friction coefficients."""
  if dim == 1:
    return pyramid[..., :1]
  normal = jnp.sum(pyramid, axis=-1, keepdims=True)
  tangent = (pyramid[..., 0::2] - pyramid[..., 1::2]) * mu[..., : dim - 1]
  return jnp.concatenate([normal, tangent], axis=-1)


def contact_forces(m: Model, d: Data) -> jnp.ndarray:
  """mj_contactForce for every contact slot: (ncon, 6) normal force, two tangential forces
  and three torques in the contact frame (zeros past `dim`, and for inactive slots); with
  contact adhesion the normal force is the net one, the cone force less the adhesion.

  Slots are fixed per model (each candidate geom pair owns its own), so the shape is static
  under jit; `d.contact.active` (ncon,) marks the slots in contact now, and outside jit
  `contact_forces(m, d)[d.contact.active]` lists only those, in the order of `d.contact`."""
  c = d.contact
  out = jnp.zeros((len(c.dim), 6), d.efc_force.dtype)
  pyramidal = m.opt.cone == Cone.PYRAMIDAL
  for dim in np.unique(c.dim):
    sel = np.flatnonzero(c.dim == dim)
    nrow = 2 * (dim - 1) if pyramidal and dim > 1 else dim
    rows = d.efc_force[c.efc_address[sel][:, None] + np.arange(nrow)]
    if pyramidal:
      force = decode_pyramid(rows, c.friction[sel], int(dim))
    else:
      force = rows
    out = out.at[sel, :dim].set(force)
  used = c.active
  if m.flg_adhesiongap and len(c.dim):  # an adhering gap-layer contact: its own row's force
    lay = efc_layout(m, c.dim)
    gap_row = np.zeros(len(c.dim), np.int64)
    gap_row[lay.con_slot[lay.con_gap]] = lay.contact0 + np.flatnonzero(lay.con_gap)
    gap = gap_layer(m, d)
    out = out.at[:, 0].set(jnp.where(gap, d.efc_force[gap_row], out[:, 0]))
    used = used | gap
  if m.flg_adhesion and len(c.dim):
    out = out.at[:, 0].add(-contact_adhesion(m, c).astype(out.dtype))
  return jnp.where(used[:, None], out, 0.0)


def contact_force(m: Model, d: Data, i) -> jnp.ndarray:
  """mj_contactForce: (6,) force and torque of contact slot `i` in its contact frame."""
  return contact_forces(m, d)[i]
