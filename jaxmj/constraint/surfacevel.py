"""Geom surface velocity (geom `surfacevel`, MuJoCo 4.0): conveyor belts and spinning pads.

A geom's surface moves with linear and angular velocity (lin, ang) given in the geom frame,
as if the body moved under it. At a contact, the surface velocity of geom2 relative to
geom1 at the contact point, v = (v2 - v1), w = (w2 - w1) with v_g = R_g lin_g + (R_g ang_g)
x (pos - geom_xpos_g), enters the contact's friction rows as a velocity offset: elliptic
rows t1, t2 and spin get v.t1, v.t2, w.n added to efc_vel; each pyramid edge
+-mu_k along friction direction k (k < 3) gets +-mu_k times the same component. efc_aref
follows from efc_vel, so friction drives the bodies toward the moving surface. Rolling
rows and the normal row are unchanged (measured on mujoco 4.0.0: MjContact.surfacevel
holds the three components).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.types import Data, Model


def contact_surfacevel(m: Model, d: Data) -> jnp.ndarray:
  """(ncon, 3) surface velocity of geom2 relative to geom1 in the contact frame:
  tangent1, tangent2 (linear) and normal spin (MjContact.surfacevel)."""
  con = d.contact

  def surface(g):
    mat = d.geom_xmat[g]
    lin = jnp.einsum("nij,nj->ni", mat, m.geom_surfacevel[g, :3])
    ang = jnp.einsum("nij,nj->ni", mat, m.geom_surfacevel[g, 3:])
    return lin + jnp.cross(ang, con.pos - d.geom_xpos[g]), ang

  (v1, w1), (v2, w2) = (surface(g) for g in con.geoms())
  v, w = v2 - v1, w2 - w1
  frame = con.frame
  return jnp.stack([jnp.sum(frame[:, 1] * v, -1), jnp.sum(frame[:, 2] * v, -1),
                    jnp.sum(frame[:, 0] * w, -1)], axis=-1)


def efc_vel_offset(m: Model, d: Data, lay):
  """(nefc,) surface-velocity term of efc_vel, or 0.0 when the model has none."""
  if not m.flg_surfacevel or lay.nc == 0:
    return 0.0
  con = d.contact
  sv = jnp.where(con.active[:, None], contact_surfacevel(m, d), 0.0)[lay.con_slot]
  friction = jnp.where(con.active[:, None], con.friction, 0.0)[lay.con_slot]
  rows = np.arange(lay.nc)
  # elliptic: row j (1 t1, 2 t2, 3 spin) takes component j - 1
  ell_k = np.clip(lay.con_j - 1, 0, 2)
  ell = np.where(lay.con_elliptic & (lay.con_j >= 1) & (lay.con_j <= 3), 1.0, 0.0)
  # pyramid: edge along friction direction k = con_edge, scaled by +-mu_k
  pyr_k = np.clip(lay.con_edge, 0, 2)
  pyr = np.where(lay.con_pyramid & (lay.con_edge >= 0) & (lay.con_edge <= 2),
                 lay.con_sign, 0.0)
  off = (ell * sv[rows, ell_k]
         + pyr * friction[rows, pyr_k] * sv[rows, pyr_k])
  return jnp.zeros(lay.nefc, sv.dtype).at[lay.contact0:].set(off)
