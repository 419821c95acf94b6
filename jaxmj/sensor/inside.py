"""insidesite sensors: is an object's frame inside a site (mju_insideGeom), and, with
enclosed="true", how far an object juts out of a site.

The enclosed value is the directed Hausdorff distance max_{x in object} sd_site(x), sd_site
the site's signed distance (negative inside). sd_site is convex, so the maximum over a
convex object is reached at its extreme points: a box's or mesh's vertices, and for a
sphere (capsule) its centre (segment ends) plus the radius, since sd_site grows at unit
rate away from the site. Body objects take the maximum over their geoms (xbody: the
subtree's).

Enclosed sites: sphere, capsule, box, cylinder. Objects: sphere, capsule, box and mesh
geoms or sites; other shapes (ellipsoids, cylinders as objects, ellipsoid sites) are
refused.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.scan import body_plan
from jaxmj.sensor.objects import frame, mat_t_vec
from jaxmj.types import GeomType, ObjType

SITE_TYPES = (GeomType.SPHERE, GeomType.CAPSULE, GeomType.BOX, GeomType.CYLINDER)
OBJECT_TYPES = (GeomType.SPHERE, GeomType.CAPSULE, GeomType.BOX, GeomType.MESH)
_CORNERS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)


def inside_geom(geom_type, size, p):
  """mju_insideGeom: () bool, is local point p (3,) inside a sphere, capsule, ellipsoid,
  cylinder or box of the given type (traced) and size (3,)."""
  r2 = size[0] * size[0]
  xy = p[0] ** 2 + p[1] ** 2
  capsule = (xy + jnp.maximum(jnp.abs(p[2]) - size[1], 0.0) ** 2) <= r2
  tests = {
    GeomType.SPHERE: p @ p <= r2,
    GeomType.CAPSULE: capsule,
    GeomType.ELLIPSOID: jnp.sum((p / size) ** 2) <= 1.0,
    GeomType.CYLINDER: (xy <= r2) & (jnp.abs(p[2]) <= size[1]),
    GeomType.BOX: jnp.all(jnp.abs(p) <= size),
  }
  out = jnp.zeros((), bool)
  for t, v in tests.items():
    out = jnp.where(geom_type == t, v, out)
  return out


def insidesite(m, d, g):
  """(n, 1) insidesite: 1 where the object's frame origin is inside the site, else 0; with
  enclosed="true" (intprm[0]) the object's distance outside the site (`enclosed`)."""
  if g.intprm[0]:
    return enclosed(m, d, g)
  pos, _ = frame(m, d, g.objtype, g.obj)
  local = mat_t_vec(d.site_xmat[g.ref], pos - d.site_xpos[g.ref])
  inside = jax.vmap(inside_geom)(jnp.asarray(m.site_type[g.ref]), m.site_size[g.ref], local)
  return inside.astype(pos.dtype)[:, None]


def _norm(v):
  return jnp.sqrt(jnp.maximum(jnp.sum(v * v, -1), 1e-30))


def _sd(site_type, size, p):
  """Signed distance of local point p (3,) to a site of the given type and size."""
  sphere = _norm(p) - size[0]
  capsule = _norm(p - jnp.array([0.0, 0.0, 1.0]) * jnp.clip(p[2], -size[1], size[1])) - size[0]
  q = jnp.abs(p) - size
  box = _norm(jnp.maximum(q, 0.0)) * jnp.any(q > 0) + jnp.minimum(jnp.max(q), 0.0)
  c = jnp.stack([_norm(p[:2]) - size[0], jnp.abs(p[2]) - size[1]])
  cylinder = _norm(jnp.maximum(c, 0.0)) * jnp.any(c > 0) + jnp.minimum(jnp.max(c), 0.0)
  out = sphere
  for t, v in ((GeomType.CAPSULE, capsule), (GeomType.BOX, box), (GeomType.CYLINDER, cylinder)):
    out = jnp.where(site_type == t, v, out)
  return out


def _shape(m, objtype: int, oid: int):
  """(geom type, size (3,), mesh id) of a geom or site object."""
  if objtype == ObjType.GEOM:
    return GeomType(int(m.geom_type[oid])), m.geom_size[oid], int(m.geom_dataid[oid])
  return GeomType(int(m.site_type[oid])), m.site_size[oid], -1


def _parts(m, objtype: int, oid: int) -> list[tuple[int, int]]:
  """(ObjType.GEOM or SITE, id) shapes that make up the sensed object."""
  if objtype in (ObjType.GEOM, ObjType.SITE):
    return [(objtype, oid)]
  bodies = [oid]
  if objtype == ObjType.XBODY:
    bodies = list(np.flatnonzero(np.asarray(body_plan(m)["subtree"])[oid] > 0))
  return [(int(ObjType.GEOM), g) for b in bodies
          for g in range(int(m.body_geomadr[b]), int(m.body_geomadr[b] + m.body_geomnum[b]))]


def check(m, objtype: int, oid: int, site: int) -> None:
  """Raises NotImplementedError for shapes this module cannot measure."""
  st = GeomType(int(m.site_type[site]))
  if st not in SITE_TYPES:
    raise NotImplementedError(f"insidesite enclosed='true' in {st.name.lower()} sites is not "
                              "supported by jaxmj yet")
  for kind, i in _parts(m, objtype, oid):
    t = _shape(m, kind, i)[0]
    if t not in OBJECT_TYPES:
      raise NotImplementedError(f"insidesite enclosed='true' of {t.name.lower()} objects is "
                                "not supported by jaxmj yet")


def _extreme_points(m, kind: int, i: int, width: int):
  """(local points (width, 3), the first repeated as padding; radius) of one shape."""
  t, size, mesh = _shape(m, kind, i)
  zero = jnp.zeros((), size.dtype)
  if t == GeomType.SPHERE:
    pts, radius = jnp.zeros((1, 3), size.dtype), size[0]
  elif t == GeomType.CAPSULE:
    pts, radius = jnp.array([[0.0, 0.0, -1.0], [0.0, 0.0, 1.0]]) * size[1], size[0]
  elif t == GeomType.BOX:
    pts, radius = jnp.asarray(_CORNERS) * size, zero
  else:
    pts, radius = jnp.asarray(m.mesh_hullvert[mesh])[: int(m.mesh_hullnum[mesh])], zero
  pad = jnp.broadcast_to(pts[:1], (width - pts.shape[0], 3))
  return jnp.concatenate([pts, pad]), radius


def _npoints(m, kind: int, i: int) -> int:
  t, _, mesh = _shape(m, kind, i)
  return {GeomType.SPHERE: 1, GeomType.CAPSULE: 2, GeomType.BOX: 8}.get(
    t, int(m.mesh_hullnum[mesh]) if mesh >= 0 else 1)


def enclosed(m, d, g):
  """(n, 1) directed Hausdorff distance of each sensor's object from its site."""
  entries = []
  for k, (o, site) in enumerate(zip(g.obj, g.ref)):
    check(m, g.objtype, int(o), int(site))
    entries += [(k, kind, i, int(site)) for kind, i in _parts(m, g.objtype, int(o))]
  width = max(_npoints(m, e[1], e[2]) for e in entries)
  shapes = [_extreme_points(m, e[1], e[2], width) for e in entries]
  pts = jnp.stack([p for p, _ in shapes]).astype(d.qpos.dtype)
  radius = jnp.stack([r for _, r in shapes]).astype(d.qpos.dtype)
  owner, kind, oid, site = (np.array([e[c] for e in entries]) for c in range(4))
  is_geom = jnp.asarray(kind == ObjType.GEOM)[:, None]
  pos = jnp.where(is_geom, d.geom_xpos[np.where(kind == ObjType.GEOM, oid, 0)],
                  d.site_xpos[np.where(kind == ObjType.SITE, oid, 0)])
  mat = jnp.where(is_geom[..., None], d.geom_xmat[np.where(kind == ObjType.GEOM, oid, 0)],
                  d.site_xmat[np.where(kind == ObjType.SITE, oid, 0)])
  world = pos[:, None] + jnp.einsum("eij,ekj->eki", mat, pts)
  local = jnp.einsum("eji,ekj->eki", d.site_xmat[site], world - d.site_xpos[site][:, None])
  sd = jax.vmap(lambda t, s, p: jax.vmap(lambda q: _sd(t, s, q))(p))(
    jnp.asarray(m.site_type[site]), m.site_size[site], local)
  value = jnp.max(sd, axis=1) + radius
  per = jnp.where(jnp.asarray(owner[None] == np.arange(len(g.obj))[:, None]), value[None],
                  -jnp.inf)
  return jnp.max(per, axis=1)[:, None]
