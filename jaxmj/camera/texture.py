"""2D textures on planes, as MuJoCo's OpenGL renderer maps and filters them.

A plane's texture coordinates (render_context.c makePlane, render_gl3.c settexture), in the
plane's frame (x, y) with half sizes (sx, sy):
  s = scl_x * (x + sx) / (2 sx)          t = scl_y * (1 - (y + sy) / (2 sy))
and along an infinite dimension (size 0) s = 0.5 scl_x x, t = -0.5 scl_y y, both shifted by
-0.5 when either dimension is infinite; scl is the material's texrepeat (1 where not
positive), times the size where texuniform. s runs along a texture row, t down its rows (row
0 of tex_data at t = 0), both repeating. Filtering is OpenGL's trilinear (bilinear within a
level, linear between the two mipmap levels around the pixel's footprint, log2 of the texels
one pixel spans along the plane, the larger of the image's two directions); the mipmaps
average 2 x 2 texels. The lit colour is multiplied by the texel's (GL_MODULATE).
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from jaxmj.enums import GeomType
from jaxmj.types import Data, Model

_RGB = 1  # mjtTextureRole mjTEXROLE_RGB
_TEXTURE_2D = 0  # mjtTexture


@dataclasses.dataclass(frozen=True)
class PlaneTextures:
  """The textured planes among the drawn geoms, and their textures' mipmaps (host arrays).
  slot (ngeom,): each geom's texture slot, -1 none; repeat (ngeom, 2): the material's
  texrepeat (1 where not positive); uniform (ngeom,): its texuniform; texels (T, 3): every
  level of every slot's mipmaps, row by row; start, height, width (slots, levels): where
  each level is (a slot's last level repeated to the deepest slot's count)."""
  slot: np.ndarray
  repeat: np.ndarray
  uniform: np.ndarray
  texels: np.ndarray
  start: np.ndarray
  height: np.ndarray
  width: np.ndarray


def plane_textures(m: Model, ids: np.ndarray) -> PlaneTextures | None:
  """The 2D textures of the planes among geom ids `ids`, or None where none has one."""
  slot = np.full(m.ngeom, -1)
  repeat, uniform = np.ones((m.ngeom, 2)), np.zeros(m.ngeom, bool)
  slots = {}
  for g in ids:
    mat = int(m.geom_matid[g])
    if int(m.geom_type[g]) != GeomType.PLANE or mat < 0:
      continue
    tex = int(m.mat_texid[mat, _RGB])
    if tex < 0 or int(m.tex_type[tex]) != _TEXTURE_2D:
      continue
    slot[g] = slots.setdefault(tex, len(slots))
    rep = np.asarray(m.mat_texrepeat[mat], np.float64)
    repeat[g] = np.where(rep > 0, rep, 1.0)
    uniform[g] = bool(m.mat_texuniform[mat])
  if not slots:
    return None
  pyramids = [_mipmaps(_image(m, tex)) for tex in slots]
  levels = max(len(p) for p in pyramids)
  start, height, width = (np.zeros((len(pyramids), levels), np.int64) for _ in range(3))
  texels, at = [], 0
  for i, pyramid in enumerate(pyramids):
    for k in range(levels):
      level = pyramid[min(k, len(pyramid) - 1)]
      if k < len(pyramid):
        texels.append(level.reshape(-1, 3))
        start[i, k], at = at, at + level.shape[0] * level.shape[1]
      else:
        start[i, k] = start[i, k - 1]
      height[i, k], width[i, k] = level.shape[:2]
  return PlaneTextures(slot, repeat, uniform, np.concatenate(texels), start, height, width)


def _image(m: Model, tex: int) -> np.ndarray:
  """Texture `tex` as (height, width, 3) floats in [0, 1] (one channel: grey)."""
  h, w, c = (int(a[tex]) for a in (m.tex_height, m.tex_width, m.tex_nchannel))
  adr = int(m.tex_adr[tex])
  img = np.asarray(m.tex_data[adr:adr + h * w * c], np.float64).reshape(h, w, c) / 255.0
  return np.repeat(img, 3, -1) if c == 1 else img[..., :3]


def _mipmaps(img: np.ndarray) -> list[np.ndarray]:
  """img and its halvings down to one texel, each texel the mean of the 2 x 2 above it (an
  odd last row or column joins the pair before it)."""
  out = [img]
  while img.shape[0] > 1 or img.shape[1] > 1:
    h, w = max(img.shape[0] // 2, 1), max(img.shape[1] // 2, 1)
    rows = np.array_split(np.arange(img.shape[0]), h)
    cols = np.array_split(np.arange(img.shape[1]), w)
    img = np.stack([np.stack([img[r][:, c].mean((0, 1)) for c in cols]) for r in rows])
    out.append(img)
  return out


def _mapping(tex: PlaneTextures, size, g):
  """(scale, shift) (N, 2) of planes g (N,) of sizes `size` (ngeom, 3; a Model leaf): s =
  scale_x x + shift_x, t = scale_y y + shift_y in the plane's frame (see the module)."""
  size = size[g, :2]
  finite = size > 0
  scl = jnp.asarray(tex.repeat, size.dtype)[g]
  scl = jnp.where(jnp.asarray(tex.uniform)[g][:, None] & finite, scl * size, scl)
  half = jnp.where(finite, 2 * size, 1.0)
  scale = jnp.where(finite, scl / half, 0.5 * scl) * jnp.asarray([1.0, -1.0], size.dtype)
  shift = jnp.where(finite, scl / 2, 0.0) - jnp.where(finite.all(-1), 0.0, 0.5)[:, None]
  return scale, shift


def texel_colours(tex: PlaneTextures, m: Model, d: Data, point, geomid, ray, steps):
  """The texture colour (N, 3) at hit points (N, 3) of geoms geomid (N,) (1 where untextured
  or -1), seen along ray directions `ray` (N, 3) whose neighbouring pixels' rays reach the
  hit's depth `steps` (N, 2, 3) apart (the footprint, before projection onto the plane)."""
  dtype = point.dtype
  g = jnp.maximum(geomid, 0)
  slot = jnp.asarray(tex.slot)[g]
  on = (geomid >= 0) & (slot >= 0)
  slot = jnp.maximum(slot, 0)
  rot = d.geom_xmat[g]  # (N, 3, 3), columns the plane's axes
  local = jnp.einsum("nji,nj->ni", rot, point - d.geom_xpos[g])[:, :2]
  scale, shift = _mapping(tex, m.geom_size, g)
  st = scale * local + shift  # (N, 2)
  # a pixel's footprint on the plane: each screen step slid along the ray onto the plane
  normal = rot[:, :, 2]
  along = jnp.sum(normal * ray, -1)
  along = jnp.where(jnp.abs(along) > 1e-12, along, 1e-12)
  onto = steps - ray[:, None] * (jnp.einsum("nj,nkj->nk", normal, steps) / along[:, None])[
    ..., None]
  dlocal = jnp.einsum("nji,nkj->nki", rot, onto)[..., :2]  # (N, 2 steps, 2)
  size = jnp.stack([jnp.asarray(tex.width, dtype)[slot, 0],
                    jnp.asarray(tex.height, dtype)[slot, 0]], -1)  # texels along s, t
  # texels a pixel spans, squared (a miss has no footprint: clamped, so no NaN gradient)
  span = jnp.sum(jnp.square(dlocal * (scale * size)[:, None]), -1).max(-1)
  lod = 0.5 * jnp.log2(jnp.maximum(span, 1e-30))
  nlevel = tex.start.shape[1]
  lod = jnp.clip(lod, 0.0, nlevel - 1)
  lo = jnp.floor(lod).astype(jnp.int32)
  hi = jnp.minimum(lo + 1, nlevel - 1)
  frac = (lod - lo)[:, None]
  colour = (1 - frac) * _bilinear(tex, slot, lo, st) + frac * _bilinear(tex, slot, hi, st)
  return jnp.where(on[:, None], colour, 1.0)


def _bilinear(tex: PlaneTextures, slot, level, st):
  """Bilinear, repeating samples (N, 3) of mipmap `level` (N,) of texture slots (N,) at
  texture coordinates st (N, 2)."""
  dtype = st.dtype
  start = jnp.asarray(tex.start)[slot, level]
  h = jnp.asarray(tex.height)[slot, level]
  w = jnp.asarray(tex.width)[slot, level]
  x = st[:, 0] * w.astype(dtype) - 0.5
  y = st[:, 1] * h.astype(dtype) - 0.5
  x0, y0 = jnp.floor(x), jnp.floor(y)
  fx, fy = (x - x0)[:, None], (y - y0)[:, None]
  texels = jnp.asarray(tex.texels, dtype)

  def at(r, c):  # repeating: the index taken modulo the level's size before the cast
    r = jnp.mod(r, h.astype(dtype)).astype(jnp.int32)
    c = jnp.mod(c, w.astype(dtype)).astype(jnp.int32)
    return texels[start + r * w + c]

  return ((1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1))
          + fy * ((1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1)))
