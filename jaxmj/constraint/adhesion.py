"""Contact adhesion (geom / pair `adhesion`, MuJoCo 4.0): a constant pull across contacts.

Each contact with constraint rows pulls its two geoms together with force `a` along the
normal: qfrc_passive gets -a Jn' (Jn: the normal row of the contact Jacobian). The solver
works on the force plus the pull, f = f_net + a along the normal, so its friction cone and
unilateral bound hold for the shifted force: efc_aref of the contact's normal rows grows by
a R per unit of normal force they carry (elliptic / frictionless normal row: a; each of the
2 (condim - 1) pyramid edges: a / (2 (condim - 1))), which keeps qacc where it was and
reports efc_force as the shifted force (mj_contactForce subtracts a again).

a per contact: the explicit <pair>'s adhesion, else the higher-priority geom's, else the
sum of the two geoms' values (measured on mujoco 4.0.0).

With a gap, MuJoCo 4.0 lists contacts out to margin + gap; those beyond the margin have no
rows, except an adhering one (a > 0): it gets one frictionless row, whatever its condim and
cone, and pulls like the others. The row is a contact row like any (its aref from the
distance past the margin, shifted by a R): usually satisfied (force 0, the net force -a), it
turns active and pushes when the bodies approach fast enough (mujoco 4.0.0, probed). jaxmj
gives every slot of such a model that row too (layout.py's con_gap), used in the gap layer.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.collision.driver import contact_gaps, explicit_pair
from jaxmj.collision.plan import collision_plan
from jaxmj.data import Contact
from jaxmj.types import Data, Model


def pair_adhesion(m: Model, g1, g2, pair) -> jnp.ndarray:
  """(n,) adhesion of geom pairs g1, g2 with explicit <pair> index `pair` (-1: none; unused
  without pairs): the pair's, else the higher-priority geom's, else the sum. Static numpy or
  traced."""
  a1, a2 = m.geom_adhesion[g1], m.geom_adhesion[g2]
  static = isinstance(g1, np.ndarray)
  priority = m.geom_priority if static else jnp.asarray(m.geom_priority)
  p1, p2 = priority[g1], priority[g2]
  a = jnp.where(p1 > p2, a1, jnp.where(p2 > p1, a2, a1 + a2))
  if not m.npair:
    return a
  safe = np.maximum(pair, 0) if static else jnp.maximum(pair, 0)
  return jnp.where(pair >= 0, m.pair_adhesion[safe], a)


def slot_adhesion(m: Model) -> jnp.ndarray:
  """(ncon,) adhesion of every contact slot of the collision plan (pair_adhesion)."""
  out = [jnp.repeat(pair_adhesion(m, g["g1"], g["g2"], g["pair"]), g["slots"])
         for g in collision_plan(m)["groups"]]
  return jnp.concatenate(out) if out else jnp.zeros(0)


def contact_adhesion(m: Model, c: Contact) -> jnp.ndarray:
  """(ncon,) adhesion of every contact slot: slot_adhesion's where the slots' geoms are
  static; under a contact cap by the same rules from the geoms each slot holds now."""
  if c.geom is None:
    return slot_adhesion(m)
  g1, g2 = c.geoms()
  return pair_adhesion(m, g1, g2, explicit_pair(m, g1, g2) if m.npair else None)


def gap_layer(m: Model, d: Data) -> jnp.ndarray:
  """(ncon,) bool: the slots holding an adhering contact in its gap layer (includemargin <=
  dist < includemargin + gap, adhesion > 0), which MuJoCo 4.0 gives one frictionless row
  (dim 1, whatever its condim and cone) and whose pull enters qfrc_passive; all False
  unless m.flg_adhesiongap."""
  c = d.contact
  if not m.flg_adhesiongap:
    return jnp.zeros(c.dist.shape, bool)
  return (~c.active & (c.dist < c.includemargin + contact_gaps(m, c))
          & (contact_adhesion(m, c) > 0))


def efc_share(m: Model, d: Data, lay) -> jnp.ndarray | None:
  """(nefc,) normal force each row carries for its contact's adhesion (0 off contacts, on
  elliptic friction rows and on the rows a contact does not use: its cone's in the gap
  layer, its gap row below the margin); None when the model has no adhesion."""
  if not m.flg_adhesion or lay.nc == 0:
    return None
  slot = lay.con_slot
  dim = np.asarray(d.contact.dim)[slot]
  weight = np.where(lay.con_pyramid, 1.0 / (2 * np.maximum(dim - 1, 1)),
                    np.where(lay.con_j == 0, 1.0, 0.0))
  used = jnp.where(lay.con_gap, gap_layer(m, d)[slot], d.contact.active[slot])
  a = jnp.where(used, contact_adhesion(m, d.contact)[slot], 0.0)
  share = jnp.zeros(lay.nefc, a.dtype)
  return share.at[lay.contact0:].set(a * weight)
