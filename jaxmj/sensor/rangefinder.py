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
from jaxmj.collision.common import normalize3
from jaxmj.collision.ray import (
  box_faces,
  candidates,
  cast,
  hfield_cast,
  mesh_triangles,
  triangle_hits,
)
from jaxmj.collision.raycast import trace
from jaxmj.constants import MINVAL
from jaxmj.types import Data, GeomType, Model, ObjType


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


def _camera_pixel_rays(m: Model, cams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Static per-pixel ray constants of cameras `cams` (n,), all of one resolution (W, H), as
  mju_camIntrinsics and mju_camPixelRay compute them: (n, H * W, 3) perspective directions
  (px / fx, -py / fy, -1) and orthographic origin offsets (px / fx, -py / fy, 0) * fovy / 2,
  camera frame, pixels row by row from the top left. fx, fy: from the intrinsics over the
  sensor size (in float32, as MuJoCo's float fields compute them) when both sizes are set,
  else from fovy and the height; orthographic cameras map the image onto [-1, 1]."""
  width, height = (int(v) for v in m.cam_resolution[cams[0]])
  w, h = float(width), float(height)
  size = np.asarray(m.cam_sensorsize, np.float32)[cams]
  intrinsic = np.asarray(m.cam_intrinsic, np.float32)[cams]
  fovy = np.asarray(m.cam_fovy, np.float64)[cams]
  physical = (size[:, 0] != 0) & (size[:, 1] != 0)
  safe = np.where(size == 0, np.float32(1), size)
  focal = intrinsic[:, :2] / safe * np.array([width, height], np.float32)
  centre = intrinsic[:, 2:] / safe * np.array([width, height], np.float32)
  square = 0.5 / np.tan(fovy * np.pi / 360.0) * h
  ortho = np.asarray(m.cam_projection)[cams] != 0
  fx = np.where(ortho, w / 2.0, np.where(physical, focal[:, 0], square))
  fy = np.where(ortho, h / 2.0, np.where(physical, focal[:, 1], square))
  cx = np.where(ortho, w / 2.0, np.where(physical, centre[:, 0], w / 2.0))
  cy = np.where(ortho, h / 2.0, np.where(physical, centre[:, 1], h / 2.0))
  row, col = (a.ravel().astype(np.float64) for a in np.indices((height, width)))
  px = col + 0.5 - cx[:, None]
  py = row + 0.5 - cy[:, None]
  x, y = px / fx[:, None], -py / fy[:, None]
  direction = np.stack([x, y, -np.ones_like(x)], -1)
  half = (fovy / 2)[:, None]
  offset = np.stack([x * half, y * half, np.zeros_like(x)], -1)
  return direction, offset


def _camera_rangefinder(m, d, g):
  """Camera rangefinders (one ray per pixel, the camera's body excluded), as MuJoCo's depth
  image: a perspective camera's rays leave its position along unit directions through the
  pixel centres; an orthographic camera's leave the pixel centres on its image plane
  (height fovy, in length units) along -z. Fields per pixel, pixels row by row; depth is the
  distance along the optical axis (-1 for a miss). The rays go through the camera image's
  tile culling (collision/raycast): casting every pixel against every geom made
  humanoid_floor's step with a 32 x 24 depth camera 6.6x slower (scripts/bench_rangefinder.py,
  README)."""
  ids = candidates(m)
  cams = np.asarray(g.obj)
  direction, offset = _camera_pixel_rays(m, cams)
  pos, mat = d.cam_xpos[cams], d.cam_xmat[cams]
  z = math.opaque_zero(pos[0, 0] * pos[0, 0]) if m.opt.exact else None
  rotate = jax.vmap(lambda r, v: math.mat_vec3(r, v, z), (None, 0))
  width, height = (int(v) for v in m.cam_resolution[cams[0]])
  npix = width * height
  pnts, vecs, hits = [], [], []
  for i, cam in enumerate(cams):  # each camera's image culled per tile, its body excluded
    orthographic = bool(m.cam_projection[cam] != 0)
    if orthographic:  # from the pixel centres along -z
      pnt = pos[i] + rotate(mat[i], jnp.asarray(offset[i], pos.dtype))
      vec = jnp.broadcast_to(-mat[i, :, 2], (npix, 3))
      origins = offset[i]
    else:  # perspective: from the camera through the pixel centres, unit directions
      pnt = jnp.broadcast_to(pos[i], (npix, 3))
      vec = jax.vmap(lambda v: normalize3(v)[0])(
        rotate(mat[i], jnp.asarray(direction[i], pos.dtype)))
      origins = np.zeros_like(offset[i])
    image = lambda x: x.reshape(height, width, 3)  # noqa: E731
    hits.append(trace.image_hits(
      m, d, ids[m.geom_bodyid[ids] != m.cam_bodyid[cam]], pos[i], mat[i], image(origins),
      image(direction[i]), image(pnt) if orthographic else pos[i], image(vec), orthographic))
    pnts.append(pnt)
    vecs.append(vec)
  pnt, vec = jnp.stack(pnts), jnp.stack(vecs)
  dist = jnp.stack([jnp.where(jnp.isfinite(h.dist), h.dist, -1.0) for h in hits])
  gid = jnp.stack([h.geomid for h in hits])
  hit = (dist >= 0)[..., None]
  point = jnp.where(hit, pnt + math.nofma(vec * dist[..., None], z), 0.0)
  along = math.nofma((point - pos[:, None]) * mat[:, None, :, 2], z)
  along = (along[..., 0] + along[..., 1]) + along[..., 2]
  fields = {0: dist[..., None], 1: jnp.where(hit, vec, 0.0), 2: pnt, 3: point,
            5: jnp.where(hit, -along[..., None], -1.0)}
  if g.intprm[0] >> 4 & 1:
    normal = jax.vmap(jax.vmap(lambda p, v, x, i: hit_normal(m, d, ids, p, v, x, i)))(
      pnt, vec, dist, gid)
    fields[4] = jnp.where(hit, normal, 0.0)
  out = jnp.concatenate([fields[k] for k in range(6) if g.intprm[0] >> k & 1], axis=-1)
  return out.reshape(len(cams), -1)


def rangefinder(m, d, g):
  """Rangefinders. On a site: fields dist, dir, origin, point, normal, depth (= dist) of the
  ray along the site's z axis, its own body excluded. On a camera: _camera_rangefinder."""
  if g.objtype == ObjType.CAMERA:
    return _camera_rangefinder(m, d, g)
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
