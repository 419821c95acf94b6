"""Reflections in planes and boxes' top faces, as MuJoCo's OpenGL renderer draws them.

mjr_render (render_gl3.c) draws, for each geom whose material has reflectance > 0 (a plane,
or the +z face of a box) seen from its front, the other opaque geoms mirrored through it,
their colours times the reflectance (ambient, diffuse and emission; not the specular), lit
by the lights mirrored with them (the headlight stays in the camera's frame: mirrored
relative to the scene), without shadows, skybox or further reflections; the mirror's own
colour is then added (GL_ONE, GL_ONE) and the sum clamped. Here that is one reflected ray
per pixel whose nearest hit is on such a mirror, shaded as seen from the mirrored camera.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.enums import GeomType
from jaxmj.types import Data, Model


def mirrors(m: Model, ids: np.ndarray) -> np.ndarray | None:
  """Reflectance (ngeom,) of the drawn planes and boxes whose material reflects, 0 for
  every other geom; None where none does."""
  out = np.zeros(m.ngeom)
  for g in ids:
    mat = int(m.geom_matid[g])
    if mat >= 0 and int(m.geom_type[g]) in (GeomType.PLANE, GeomType.BOX):
      out[g] = float(m.mat_reflectance[mat])
  return out if (out > 0).any() else None


def reflected_rays(m: Model, d: Data, reflectance: np.ndarray, cam_pos, point, normal,
                   geomid, ray):
  """For hits at point (N, 3) with normals (N, 3) on geoms geomid (N,) of rays `ray` (N, 3)
  from cam_pos (3,): (on (N,) whether the hit is on a mirror's front face, the reflectance
  (N,), reflected rays' origins and directions (N, 3), the mirror's unit normal (N, 3) and a
  point on it (N, 3))."""
  dtype = point.dtype
  g = jnp.maximum(geomid, 0)
  refl = jnp.asarray(reflectance, dtype)[g]
  axis = d.geom_xmat[g][:, :, 2]  # the plane's normal, or the box's +z
  box = jnp.asarray(np.asarray(m.geom_type) == GeomType.BOX)[g]
  base = d.geom_xpos[g] + jnp.where(box, m.geom_size[g, 2], 0.0)[:, None] * axis
  front = jnp.sum(axis * (cam_pos - base), -1) > 0  # mjr_render's isBehind
  on_face = ~box | (jnp.sum(normal * axis, -1) > 1 - 1e-6)
  on = (geomid >= 0) & (refl > 0) & front & on_face
  direction = ray - 2 * jnp.sum(ray * axis, -1, keepdims=True) * axis
  origin = point + 1e-6 * float(m.stat.extent) * axis
  return on, refl, origin, direction, axis, base


def mirrored_camera(cam_pos, cam_mat, axis, base):
  """The camera (N, 3), (N, 3, 3) mirrored through planes of unit normals axis (N, 3)
  through points base (N, 3)."""
  pos = cam_pos - 2 * jnp.sum(axis * (cam_pos - base), -1, keepdims=True) * axis
  mat = cam_mat - 2 * axis[:, :, None] * jnp.einsum("nj,jk->nk", axis, cam_mat)[:, None, :]
  return pos, mat
