"""Joint and tendon limit sensors (jointlimitpos/vel/frc, tendonlimitpos/vel/frc): they
read the object's limit rows of the constraint (efc) arrays."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.constraint.layout import efc_layout
from jaxmj.types import ConstraintType


def limit(kind: ConstraintType, field: str):
  """Joint and tendon limit sensors: efc_pos - efc_margin, efc_vel or efc_force of the
  object's first active limit row (as MuJoCo's first matching row; a range narrower than
  2 * margin owns a lower and an upper row), 0 when none is active."""

  def fn(m, d, g):
    lay = efc_layout(m, d.contact.dim)
    rows = {}
    for r in np.flatnonzero(lay.efc_type == kind):
      rows.setdefault(int(lay.efc_id[r]), []).append(int(r))
    out = jnp.zeros(len(g.obj), d.qpos.dtype)
    for k in (1, 0):  # the first row wins: assign it last
      row = np.array([(rows.get(int(j), []) + [-1, -1])[k] for j in g.obj])
      if np.all(row < 0):
        continue
      r = np.maximum(row, 0)
      value = {"pos": d.efc_pos[r] - d.efc_margin[r], "vel": d.efc_vel[r],
               "frc": d.efc_force[r]}[field]
      out = jnp.where((row >= 0) & d.efc_active[r], value, out)
    return out[:, None]

  return fn
