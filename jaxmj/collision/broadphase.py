"""Broadphase: MuJoCo's bounding-sphere filter (mj_filterSphere) on the static pair table.

The candidate pairs are fixed at compile time (driver._plan), so the filter cannot remove
work from the vmapped narrowphase; it marks pairs whose bounding spheres are out of reach
and the driver clears their slots. Reach is the distance the colliders look (margin + gap,
MuJoCo 4.0), so a pair the filter drops can never hold a contact: the filter changes no
result, it makes the "no contact" of far-apart pairs exact, whatever the collider returns
for shapes far outside its working range (e.g. GJK/EPA after its iteration cap).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.types import Data, GeomType, Model


def _plane_far(d: Data, plane: np.ndarray, other: np.ndarray, rbound, reach):
  """The other geom's bounding sphere lies above the plane beyond reach (planeGeomDist)."""
  normal = d.geom_xmat[plane][:, :, 2]
  offset = d.geom_xpos[other] - d.geom_xpos[plane]
  height = offset[:, 0] * normal[:, 0] + offset[:, 1] * normal[:, 1] + offset[:, 2] * normal[:, 2]
  return height > reach + rbound


def out_of_reach(m: Model, d: Data, g1, g2, reach, types=None) -> jnp.ndarray:
  """(npair,) bool: pairs MuJoCo's mj_filterSphere discards.

  g1, g2: (npair,) geom ids, static (numpy) or, with `types`, traced; types: their static
  geom types ((npair,) each; default read from m.geom_type at static g1, g2); reach:
  (npair,) margin + gap. Two geoms with bounding spheres (geom_rbound > 0) are out of reach
  when their centres are further apart than rbound1 + rbound2 + reach (compared squared, no
  square root: gradient-safe); a plane and a bounded geom when the geom's centre is above the
  plane by more than its rbound + reach. Pairs with no bound (rbound 0 and not a plane) are
  never discarded. The plane test runs on the pairs with a plane only (static positions):
  each pair's arithmetic is the same, the other pairs' frames are not read.
  """
  if types is None:
    types = np.asarray(m.geom_type)[g1], np.asarray(m.geom_type)[g2]
  r1, r2 = m.geom_rbound[g1], m.geom_rbound[g2]
  dif = d.geom_xpos[g1] - d.geom_xpos[g2]
  bound = r1 + r2 + reach
  apart = dif[:, 0] * dif[:, 0] + dif[:, 1] * dif[:, 1] + dif[:, 2] * dif[:, 2] > bound * bound
  far = (r1 > 0) & (r2 > 0) & apart
  for plane, other, rother, tplane in ((g1, g2, r2, types[0]), (g2, g1, r1, types[1])):
    at = np.flatnonzero(np.asarray(tplane) == GeomType.PLANE)
    if not at.size:
      continue
    above = (rother[at] > 0) & _plane_far(d, plane[at], other[at], rother[at], reach[at])
    if at.size < len(tplane):  # back to every pair: a static gather, False where no plane
      where = np.full(len(tplane), at.size)
      where[at] = np.arange(at.size)
      above = jnp.concatenate([above, jnp.zeros(1, bool)])[where]
    far = far | above
  return far
