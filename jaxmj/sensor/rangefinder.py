"""Rangefinder sensors: rays along a site's z axis, and the surface normal at the hit.

The normal is the outward normal of the hit geom at the hit point, whichever side the ray
came from: each geom type has a function of the hit point in the geom's local frame (box
and mesh also look at which face the ray met first; a heightfield's normal comes from its
ray cast, which knows whether the surface, a side or the base was hit).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.collision.ray import (
  box_faces,
  candidates,
  cast,
  hfield_cast,
  mesh_triangles,
  triangle_hits,
)
from jaxmj.constants import MINVAL
from jaxmj.types import Data, GeomType, Model


def _unit(v):
  return v / jnp.sqrt(jnp.maximum(v @ v, MINVAL * MINVAL))


def _plane(size, h, p, v):
  return jnp.array([0.0, 0.0, 1.0], h.dtype)


def _sphere(size, h, p, v):
  return _unit(h)


def _ellipsoid(size, h, p, v):
  return _unit(h / (size * size))


def _capsule(size, h, p, v):
  return _unit(h - jnp.array([0.0, 0.0, 1.0]) * jnp.clip(h[2], -size[1], size[1]))


def _cylinder(size, h, p, v):
  radial = jnp.sqrt(h[0] * h[0] + h[1] * h[1])
  cap = jnp.abs(jnp.abs(h[2]) - size[1]) < jnp.abs(radial - size[0])
  side = _unit(h * jnp.array([1.0, 1.0, 0.0]))
  return jnp.where(cap, jnp.array([0.0, 0.0, 1.0]) * jnp.sign(h[2]), side)


def _box(size, h, p, v):
  k = jnp.argmin(box_faces(size, p, v))  # faces -x, +x, -y, +y, -z, +z
  return jnp.eye(3, dtype=h.dtype)[k // 2] * jnp.where(k % 2 == 0, -1.0, 1.0)


_NORMALS = {GeomType.PLANE: _plane, GeomType.SPHERE: _sphere, GeomType.CAPSULE: _capsule,
            GeomType.ELLIPSOID: _ellipsoid, GeomType.CYLINDER: _cylinder, GeomType.BOX: _box}


def _mesh(tri, p, v):
  """Normal of the first triangle the ray meets, from the faces' outward winding."""
  t = tri[jnp.argmin(triangle_hits(p, v, tri))]
  return _unit(jnp.cross(t[1] - t[0], t[2] - t[0]))


def hit_normal(m: Model, d: Data, ids: np.ndarray, pnt, vec, dist, geomid):
  """(3,) outward normal, global frame, of geom `geomid` (traced) at pnt + dist * vec;
  zeros when geomid < 0. ids: the static candidate geoms the ray was cast against."""
  out = jnp.zeros(3, pnt.dtype)
  for gtype in np.unique(m.geom_type[ids]):
    gtype = GeomType(int(gtype))
    sel = ids[m.geom_type[ids] == gtype]
    mat = d.geom_xmat[sel]
    lp = jnp.einsum("nji,nj->ni", mat, pnt - d.geom_xpos[sel])
    lv = jnp.einsum("nji,j->ni", mat, vec)
    h = lp + dist * lv
    if gtype == GeomType.MESH:
      local = jax.vmap(_mesh)(jnp.asarray(mesh_triangles(m, sel)), lp, lv)
    elif gtype == GeomType.HFIELD:
      local = hfield_cast(m, sel, lp, lv, normals=True)[1]
    elif gtype in _NORMALS:
      local = jax.vmap(_NORMALS[gtype])(m.geom_size[sel], h, lp, lv)
    else:
      raise NotImplementedError(f"rangefinder normals on {gtype.name.lower()} geoms are not "
                                "supported by jaxmj yet")
    world = jnp.einsum("nij,nj->ni", mat, local)
    mine = jnp.asarray(sel) == geomid
    out = out + jnp.sum(jnp.where(mine[:, None], world, 0.0), axis=0)
  return out


def rangefinder(m, d, g):
  """Site rangefinders: fields dist, dir, origin, point, normal, depth (= dist for a site)
  of the ray along the site's z axis, its own body excluded."""
  ids = candidates(m)
  pnt, vec = d.site_xpos[g.obj], d.site_xmat[g.obj][:, :, 2]
  exclude = jnp.asarray(m.site_bodyid[g.obj])
  dist, gid = jax.vmap(lambda p, v, b: cast(m, d, ids, p, v, b))(pnt, vec, exclude)
  hit = (dist >= 0)[:, None]
  unit = math.normalize(vec)
  fields = {0: dist[:, None], 1: jnp.where(hit, unit, 0.0), 2: pnt,
            3: jnp.where(hit, pnt + dist[:, None] * vec, 0.0), 5: dist[:, None]}
  if g.intprm[0] >> 4 & 1:
    normal = jax.vmap(lambda p, v, x, i: hit_normal(m, d, ids, p, v, x, i))(pnt, vec, dist, gid)
    fields[4] = jnp.where(hit, normal, 0.0)
  return jnp.concatenate([fields[k] for k in range(6) if g.intprm[0] >> k & 1], axis=-1)
