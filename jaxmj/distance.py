"""mj_geomDistance as a public function: the signed distance between two geoms, for costs
that keep bodies apart (trajectory optimization) and for queries in a notebook.

The geoms' types decide which collider measures them (sensor/distance.py, MuJoCo 4.0's
choice), so the ids are static: one trace per set of pairs, distmax and the state traced.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.collision.hfield import GEOM_TYPES, cells_spanned
from jaxmj.datacheck import checks_data
from jaxmj.dynamics.stages import traced_once
from jaxmj.sensor.distance import pair_distances
from jaxmj.tracing_gc import relaxes_gc
from jaxmj.types import GeomType, Model


def _distances(m, d, geom1: tuple, geom2: tuple, distmax, window: tuple[int, int]):
  return pair_distances(m, d, np.array(geom1, np.int64), np.array(geom2, np.int64), distmax,
                        window)


_distances.__name__ = "geom_distance"  # what the Model and Data checks' errors name

_jitted = traced_once(relaxes_gc(checks_data(_distances)),
                      static_argnames=("geom1", "geom2", "window"))


def _hfield_window(m, g1: tuple, g2: tuple, distmax) -> tuple[int, int]:
  """(columns, rows) of heightfield cells searched around the geoms measured against a
  heightfield: the cells a geom's bounding sphere grown by distmax can span (the collision
  sensors' sizing), from the Model's and distmax's values where they are concrete; where one
  is traced (a Model or distmax passed through jit or vmap) the whole grid, which gives the
  same result (cells outside the geom's box are masked) at more cost. (0, 0): no such pair."""
  hf = m.geom_type == GeomType.HFIELD
  # the pairs the heightfield collider measures (plane-heightfield reads distmax)
  pairs = [(a, b, k) for k, (a, b) in enumerate(zip(g1, g2))
           if hf[a] != hf[b] and GeomType(int(m.geom_type[b if hf[a] else a])) in GEOM_TYPES]
  if not pairs:
    return (0, 0)
  values = (m.geom_rbound, m.hfield_size, distmax)
  concrete = not any(isinstance(x, jax.core.Tracer) for x in values)
  if concrete:
    rbound, size = np.asarray(m.geom_rbound), np.asarray(m.hfield_size)
    reach = np.broadcast_to(np.asarray(distmax, float), (len(g1),))
  out = np.zeros(2, np.int32)
  for a, b, k in pairs:
    field, other = (a, b) if hf[a] else (b, a)
    hid = int(m.geom_dataid[field])
    nrow, ncol = int(m.hfield_nrow[hid]), int(m.hfield_ncol[hid])
    if concrete:
      span = cells_spanned(size[hid], nrow, ncol, rbound[other] + max(reach[k], 0.0))
    else:
      span = np.array([ncol - 1, nrow - 1]) if min(nrow, ncol) >= 2 else np.zeros(2, np.int32)
    out = np.maximum(out, span)
  return int(out[0]), int(out[1])


def _ids(m, name: str, ids) -> tuple:
  arr = np.asarray(ids)
  if arr.ndim > 1 or not np.issubdtype(arr.dtype, np.integer):
    raise TypeError(f"geom_distance: {name} must be a geom id or a sequence of geom ids, got "
                    f"{ids!r}")
  bad = arr[(arr < 0) | (arr >= m.ngeom)]
  if bad.size:
    raise IndexError(f"geom_distance: {name} {int(bad[0])} is out of range (0 to "
                     f"{m.ngeom - 1})")
  return tuple(int(i) for i in np.atleast_1d(arr))


def geom_distance(m, d, geom1, geom2, distmax=1.0):
  """mj_geomDistance: the smallest signed distance between geoms geom1 and geom2 (negative in
  penetration), searched up to distmax, and fromto (6,): the nearest point on geom1, then
  the one on geom2 (world frame), zeros when nothing is within distmax (dist = distmax).

  geom1, geom2: geom ids (host ints), or equal-length sequences of ids for many pairs in one
  call (then dist (n,) and fromto (n, 6)); they are static. distmax: a scalar or one per
  pair, traced. Reads d.geom_xpos and d.geom_xmat (after kinematics, e.g. `forward`).
  Differentiable in d and m.

  A pair with a heightfield is measured as MuJoCo measures it (its prisms under the geom,
  the closest of the first 50 contacts with margin = distmax), over the cells the geom's
  bounding sphere grown by distmax can span: sized from the Model's and distmax's values,
  so called with a traced Model or distmax (inside jit or vmap) it searches the whole grid,
  same result, more work; close over the Model and pass distmax as a number to keep it small.
  """
  if not isinstance(m, Model):
    raise TypeError(f"jaxmj.geom_distance: expected a jaxmj.Model as the first argument, got "
                    f"{type(m).__name__}")
  g1, g2 = _ids(m, "geom1", geom1), _ids(m, "geom2", geom2)
  if len(g1) != len(g2):
    raise ValueError(f"geom_distance: geom1 and geom2 have {len(g1)} and {len(g2)} ids")
  window = _hfield_window(m, g1, g2, distmax)
  dist, fromto = _jitted(m, d, geom1=g1, geom2=g2, distmax=jnp.asarray(distmax), window=window)
  if np.ndim(geom1) == 0 and np.ndim(geom2) == 0:
    return dist[0], fromto[0]
  return dist, fromto
