"""The collision sensors (geomdist, geomnormal, geomfromto) and mj_geomDistance for them.

MuJoCo 4.0 (nativeccd, its default) measures pairs its collision table sends to the convex
collider, box-box included, with one GJK/EPA query cut off at distmax; every other pair
calls its collision function with margin = distmax and keeps the closest contact (pairs
without a collision function, plane-plane or heightfield-heightfield, read distmax). Here the
GJK/EPA pairs run through `convex.collide_convex` with margin = distmax: the core pass then
gives the exact separation below distmax, and EPA on the margin-inflated shapes the depth
of a penetration. Heightfield pairs run the heightfield collider (its prisms under the geom,
the first 50 contacts) with margin = distmax, over a window of cells sized for the sensor's
cutoff (Model.sensor_hfieldwindow). Pairs are grouped by collider, each group one vmapped
call.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.collision import hfield, mesh, primitive
from jaxmj.collision.ccd import convex
from jaxmj.collision.ccd.convex import collide_convex
from jaxmj.collision.mesh import pair_arguments
from jaxmj.collision.primitive import GeomFrame
from jaxmj.constants import MINVAL
from jaxmj.types import DisableBit, GeomType, ObjType

_CCD = "ccd"  # group key of the pairs MuJoCo measures with one GJK/EPA query
_HFIELD = "hfield"  # group key of the heightfield pairs
_NONE = "none"  # pairs MuJoCo has no collision function for: they read distmax


def _table() -> dict:
  """(type1, type2) -> _CCD, _HFIELD, _NONE, or (collider, takes_mesh_vertices)."""
  table = {k: (fn, False) for k, (fn, _) in primitive.COLLIDERS.items()}
  table.update({k: (fn, True) for k, (fn, _) in mesh.COLLIDERS.items()})
  for k in (*convex.CONVEX_PAIRS, *mesh.CONVEX_MESH_PAIRS, (GeomType.BOX, GeomType.BOX)):
    table[k] = _CCD
  table.update({(GeomType.HFIELD, t): _HFIELD for t in hfield.GEOM_TYPES})
  table.update({k: _NONE for k in ((GeomType.PLANE, GeomType.PLANE),
                                   (GeomType.PLANE, GeomType.HFIELD),
                                   (GeomType.HFIELD, GeomType.HFIELD))})
  return table


def _frames(m, d, ids):
  return GeomFrame(d.geom_xpos[ids], d.geom_xmat[ids], m.geom_size[ids])


def _ccd(m, d, a: np.ndarray, b: np.ndarray, distmax):
  """(dist, pos, normal) of GJK/EPA pairs, geom types traced: one compiled search.

  Each pair is queried twice in one vmapped call: with margin = distmax for a separation,
  and with no margin for a penetration, whose EPA must run on the shapes themselves (on
  margin-inflated shapes face-face contacts would report other, equally deep, witness
  points, and the depth only to the tolerance of EPA on rounded shapes)."""
  tol, iterations = m.opt.ccd_tolerance, m.opt.ccd_iterations
  n = len(a)
  a2, b2 = np.concatenate([a, a]), np.concatenate([b, b])
  verts = pair_arguments(m, "convex", a2, b2)

  def one(t1, t2, g1, g2, margin, *verts):
    v1, v2 = verts if verts else (None, None)
    dist, pos, frame = collide_convex(t1, t2, g1, g2, margin, tol, iterations=iterations,
                                      verts1=v1, verts2=v2)
    return dist, pos, frame[0]

  margin = jnp.concatenate([distmax, jnp.zeros_like(distmax)])
  dist, pos, normal = jax.vmap(one)(jnp.asarray(m.geom_type[a2]), jnp.asarray(m.geom_type[b2]),
                                    _frames(m, d, a2), _frames(m, d, b2), margin, *verts)
  deep = dist[n:] < 0
  pick = lambda x: jnp.where(deep.reshape((n,) + (1,) * (x.ndim - 1)), x[n:], x[:n])  # noqa: E731
  return pick(dist), pick(pos), pick(normal)


def _closest(cd, cpos, cframe):
  """(dist, pos, normal) of each pair's first contact of smallest distance (loop order)."""
  k = jnp.argmin(cd, axis=1)
  dist = jnp.take_along_axis(cd, k[:, None], 1)[:, 0]
  pos = jnp.take_along_axis(cpos, k[:, None, None], 1)[:, 0]
  normal = jnp.take_along_axis(cframe, k[:, None, None, None], 1)[:, 0, 0]
  return dist, pos, normal


def _hfield(m, d, a: np.ndarray, b: np.ndarray, distmax, window: tuple[int, int]):
  """(dist, pos, normal) of the closest of a heightfield collider's contacts (a: the
  heightfields): its prisms within `window` cells, searched with margin = distmax."""
  if min(window) == 0:  # a grid of one row or column: no prisms
    zeros = jnp.zeros((len(a), 3), distmax.dtype)
    return distmax, zeros, zeros
  return _closest(*hfield.collide(m, a, b, _frames(m, d, a), _frames(m, d, b), distmax, window))


def _collider(m, d, key, a: np.ndarray, b: np.ndarray, distmax):
  """(dist, pos, normal) of the closest contact of a primitive or plane-mesh collider."""
  fn, takes_mesh = _table()[key]
  extra = ()
  if takes_mesh:
    extra = pair_arguments(m, key, a, b)
  return _closest(*jax.vmap(fn)(_frames(m, d, a), _frames(m, d, b), distmax, *extra))


def pair_distances(m, d, g1: np.ndarray, g2: np.ndarray, distmax,
                   hfield_window: tuple[int, int] = (0, 0)):
  """mj_geomDistance for pairs of geoms: (dist (n,), fromto (n, 6)); dist = distmax and
  fromto = 0 where the surfaces are farther apart than distmax. fromto runs from the
  nearest point on geom g1 to the one on g2 (through each other in penetration).
  hfield_window: (columns, rows) of heightfield cells searched around a geom measured
  against a heightfield (Model.sensor_hfieldwindow: enough for distmax up to the compiled
  cutoffs)."""
  dist = jnp.broadcast_to(distmax, g1.shape).astype(d.qpos.dtype)
  fromto = jnp.zeros(g1.shape + (6,), d.qpos.dtype)
  flip = m.geom_type[g1] > m.geom_type[g2]
  a, b = np.where(flip, g2, g1), np.where(flip, g1, g2)
  table = _table()
  groups: dict = {}
  for i, key in enumerate(zip(m.geom_type[a], m.geom_type[b])):
    key = (GeomType(int(key[0])), GeomType(int(key[1])))
    if key not in table:
      names = "-".join(t.name.lower() for t in key)
      raise NotImplementedError(f"geom distances (collision sensors, geom_distance) on {names} "
                                "geom pairs are not supported by jaxmj yet")
    group = table[key]
    if group == _NONE:
      continue
    groups.setdefault(group if isinstance(group, str) else key, []).append(i)
  if _CCD in groups and m.opt.disableflags & DisableBit.NATIVECCD:
    # MuJoCo then measures these pairs with libccd, whose distances differ (jaxmj/dynamics/flags.py)
    raise NotImplementedError("flag nativeccd disabled: geom distances (collision sensors, "
                              "geom_distance) on convex geom pairs are not supported by jaxmj")
  for key, sel in sorted(groups.items(), key=lambda kv: str(kv[0])):
    sel = np.array(sel)
    if key == _CCD:
      best, pos, normal = _ccd(m, d, a[sel], b[sel], dist[sel])
    elif key == _HFIELD:
      best, pos, normal = _hfield(m, d, a[sel], b[sel], dist[sel], hfield_window)
    else:
      best, pos, normal = _collider(m, d, key, a[sel], b[sel], dist[sel])
    normal = jnp.where(flip[sel][:, None], -normal, normal)
    half = 0.5 * best[:, None] * normal
    found = best < dist[sel]
    dist = dist.at[sel].set(jnp.where(found, best, dist[sel]))
    ft = jnp.concatenate([pos - half, pos + half], axis=-1)
    fromto = fromto.at[sel].set(jnp.where(found[:, None], ft, 0.0))
  return dist, fromto


def _body_geoms(m, objtype: int, oid: int) -> list[int]:
  if objtype == ObjType.GEOM:
    return [int(oid)]
  adr, num = int(m.body_geomadr[oid]), int(m.body_geomnum[oid])
  return list(range(adr, adr + num))


def collision(kind: str):
  """geomdist, geomnormal, geomfromto: the smallest signed distance over the geom pairs of
  the two geoms or bodies, searched up to the sensor's cutoff (MuJoCo's distmax)."""

  def fn(m, d, g):
    pairs, owner = [], []
    for k, (o, r) in enumerate(zip(g.obj, g.ref)):
      for x in _body_geoms(m, g.objtype, o):
        for y in _body_geoms(m, g.reftype, r):
          pairs.append((x, y))
          owner.append(k)
    n = len(g.obj)
    cutoff = m.sensor_cutoff[g.ids]
    if not pairs:
      dist, fromto = cutoff, jnp.zeros((n, 6), d.qpos.dtype)
    else:
      g1, g2 = (np.array(c) for c in zip(*pairs))
      owner = np.array(owner)
      window = tuple(int(x) for x in np.max(m.sensor_hfieldwindow[g.ids], axis=0))
      pd, pft = pair_distances(m, d, g1, g2, cutoff[owner], window)
      # First pair (in MuJoCo's loop order) attaining the smallest distance, per sensor.
      width = max(np.bincount(owner, minlength=n))
      slot = np.full((n, width), -1)
      for k in range(n):
        ids = np.flatnonzero(owner == k)
        slot[k, : len(ids)] = ids
      cand = jnp.where(slot >= 0, pd[np.maximum(slot, 0)], jnp.inf)
      best = jnp.argmin(cand, axis=1)
      pick = jnp.asarray(np.maximum(slot, 0))[jnp.arange(n), best]
      found = cand[jnp.arange(n), best] < cutoff
      dist = jnp.where(found, pd[pick], cutoff)
      fromto = jnp.where(found[:, None], pft[pick], 0.0)
    if kind == "dist":
      return dist[:, None]
    if kind == "fromto":
      return fromto
    diff = fromto[:, 3:] - fromto[:, :3]
    norm = jnp.sqrt(jnp.sum(diff * diff, -1, keepdims=True))
    return jnp.where(norm > MINVAL, diff / jnp.where(norm > MINVAL, norm, 1.0), 0.0)

  return fn
