"""Colours of hit points under the model's lights, as MuJoCo's OpenGL renderer lights them.

OpenGL's fixed-function model (mjr_render): colour = emission + sum over lights of
attenuation * spot * (ambient * rgba + diffuse * rgba * max(n.l, 0)
+ specular * mat_specular * max(n.h, 0)^(128 shininess)), clipped to [0, 1]. The headlight
is a directional light along the camera's view; model lights are spot, directional or point
lights. A geom's rgba is its own unless it is MuJoCo's default grey and it has a material.
Shadows (optional) test a ray from the hit point to each shadow-casting model light.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.types import Data, Model

_DEFAULT_RGBA = (0.5, 0.5, 0.5, 1.0)
DIRECTIONAL = 1  # mjtLightType: spot 0, directional 1, point 2, image 3


def geom_materials(m: Model) -> tuple[np.ndarray, ...]:
  """Per geom: rgba (ngeom, 4), specular, shininess, emission (ngeom,), as mjv_addGeoms
  sets them (no material: specular 0.5, shininess 0.5, emission 0)."""
  rgba = np.array(m.geom_rgba, np.float64)
  spec = np.full(m.ngeom, 0.5)
  shin = np.full(m.ngeom, 0.5)
  emis = np.zeros(m.ngeom)
  mat = np.asarray(m.geom_matid)
  has = mat >= 0
  if has.any():
    default = np.all(np.isclose(rgba, _DEFAULT_RGBA), axis=1)
    rgba[has & default] = np.asarray(m.mat_rgba)[mat[has & default]]
    spec[has] = np.asarray(m.mat_specular)[mat[has]]
    shin[has] = np.asarray(m.mat_shininess)[mat[has]]
    emis[has] = np.asarray(m.mat_emission)[mat[has]]
  return rgba, spec, shin, emis


def _lights(m: Model, d: Data, cam_mat) -> list[dict]:
  """Active lights as arrays (L, ...): the headlight (if on) first, then model lights."""
  dtype = cam_mat.dtype
  hl = m.vis.headlight
  rows = []
  if int(hl["active"]):
    rows.append(dict(pos=jnp.zeros(3, dtype), dir=-cam_mat[..., 2], directional=True,
                     ambient=hl["ambient"], diffuse=hl["diffuse"], specular=hl["specular"],
                     att=(1.0, 0.0, 0.0), cutoff=180.0, exponent=0.0, shadow=False))
  for i in np.flatnonzero(np.asarray(m.light_active, bool)):
    rows.append(dict(pos=d.light_xpos[i], dir=d.light_xdir[i],
                     directional=int(m.light_type[i]) == DIRECTIONAL,
                     ambient=m.light_ambient[i], diffuse=m.light_diffuse[i],
                     specular=m.light_specular[i], att=m.light_attenuation[i],
                     cutoff=float(m.light_cutoff[i]), exponent=float(m.light_exponent[i]),
                     shadow=bool(m.light_castshadow[i])))
  return rows


def _length(v):
  """|v| over the last axis, at least 1e-15: a background pixel's point is the camera's
  (view 0), where a plain norm's gradient is NaN and would spread through the image's."""
  return jnp.sqrt(jnp.maximum(jnp.sum(v * v, -1), 1e-30))


def shade(m: Model, d: Data, cam_pos, cam_mat, point, normal, geomid, occluded=None,
          rgba=None, texture=None, tint=None):
  """RGB (N, 3) in [0, 1] at hit points point (N, 3) with unit normals (N, 3) of geoms
  geomid (N,) (-1: background, black). occluded: optional callable(origins (N, 3),
  directions (N, 3), max_dist (N,)) -> (N,) bool, for shadows. rgba: optional (ngeom, 4)
  colours (may be traced) in place of the model's and its materials' (alpha unused).
  texture: optional texel colours (N, 3) the lit colour is multiplied by (camera/texture.py,
  OpenGL's GL_MODULATE after its clamp). tint: optional (N,) factors of the colour (not of
  the specular highlight: a reflection's, camera/reflection.py). cam_pos, cam_mat may be
  per point, (N, 3) and (N, 3, 3) (a mirrored camera)."""
  model_rgba, spec, shin, emis = (jnp.asarray(a, point.dtype) for a in geom_materials(m))
  rgba = model_rgba if rgba is None else jnp.asarray(rgba, point.dtype)
  g = jnp.maximum(geomid, 0)
  base, spec, shin, emis = rgba[g, :3], spec[g], shin[g], emis[g]
  if tint is not None:
    base = base * tint[:, None]
  view = cam_pos - point
  view = view / _length(view)[:, None]
  colour = emis[:, None] * base
  for light in _lights(m, d, cam_mat):
    if light["directional"]:
      to_light = jnp.broadcast_to(-light["dir"], point.shape)
      dist = jnp.full(point.shape[0], jnp.inf, point.dtype)
      att = 1.0
    else:
      delta = light["pos"] - point
      dist = _length(delta)
      to_light = delta / dist[:, None]
      c0, c1, c2 = (float(a) for a in light["att"])
      att = 1.0 / (c0 + c1 * dist + c2 * dist * dist)
    spot = 1.0
    if light["cutoff"] < 180.0 and not light["directional"]:
      cos = jnp.sum(-to_light * light["dir"], -1)
      inside = cos >= np.cos(np.deg2rad(light["cutoff"]))
      spot = jnp.where(inside, jnp.maximum(cos, 0.0) ** light["exponent"], 0.0)
    ndotl = jnp.sum(normal * to_light, -1)
    half = to_light + view
    half = half / _length(half)[:, None]
    ndoth = jnp.maximum(jnp.sum(normal * half, -1), 0.0)
    lit = ndotl > 0
    if light["shadow"] and occluded is not None:
      lit = lit & ~occluded(point + 1e-6 * float(m.stat.extent) * normal, to_light, dist)
    amb, dif, spc = (jnp.asarray(light[k], point.dtype) for k in ("ambient", "diffuse",
                                                                  "specular"))
    term = (amb * base + jnp.where(lit, ndotl, 0.0)[:, None] * dif * base
            + jnp.where(lit, ndoth ** (128 * shin), 0.0)[:, None] * spc * spec[:, None])
    scale = jnp.broadcast_to(jnp.asarray(att * spot, point.dtype), dist.shape)
    colour = colour + scale[:, None] * term
  colour = jnp.clip(colour, 0.0, 1.0)
  if texture is not None:
    colour = colour * texture
  return jnp.where((geomid >= 0)[:, None], colour, 0.0)
