"""Textures on geoms, as MuJoCo's OpenGL renderer maps and filters them: a 2D texture on a
plane, a cube texture on a sphere, ellipsoid, box or cylinder.

A plane's texture coordinates (render_context.c makePlane, render_gl3.c settexture), in the
plane's frame (x, y) with half sizes (sx, sy):
  s = scl_x * (x + sx) / (2 sx)          t = scl_y * (1 - (y + sy) / (2 sy))
and along an infinite dimension (size 0) s = 0.5 scl_x x, t = -0.5 scl_y y, both shifted by
-0.5 when either dimension is infinite; scl is the material's texrepeat (1 where not
positive), times the size where texuniform. s runs along a texture row, t down its rows (row
0 of tex_data at t = 0), both repeating.

A cube texture is looked up by direction (OpenGL's cube map: the major axis picks one of the
six faces, +x -x +y -y +z -z in tex_data's order, or one image for all six, edges clamped):
the point in the geom's frame over its size (the unit shape MuJoCo draws scaled), or in
length units where texuniform.

The skybox (the model's first skybox texture) is a cube map too, looked up by the ray's
direction (x, z, -y) in the world frame (settexture's rotation about x), unlit.

Filtering is OpenGL's trilinear: bilinear within a level, linear between the two mipmap
levels around the pixel's footprint (log2 of the texels one pixel spans on the surface, the
larger of the image's two directions); the mipmaps average 2 x 2 texels. An sRGB texture is
sampled as linear values (mipmaps averaged in linear values). The lit colour is multiplied
by the texel's (GL_MODULATE). Texels are kept as bytes, as the model has them, and turned
into colours after the lookup.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from jaxmj.enums import GeomType
from jaxmj.types import Data, Model

_RGB = 1  # mjtTextureRole mjTEXROLE_RGB
_TEXTURE_2D, _SKYBOX = 0, 2  # mjtTexture
_SRGB = 2  # mjtColorSpace
# the geoms a cube texture is drawn on: the sizes scaling MuJoCo's unit shape, per axis
_CUBE_SCALE = {GeomType.SPHERE: (0, 0, 0), GeomType.ELLIPSOID: (0, 1, 2),
               GeomType.BOX: (0, 1, 2), GeomType.CYLINDER: (0, 0, 1)}
# OpenGL's cube map faces (+x, -x, +y, -y, +z, -z): (axis, sign) of s and t
_FACE_ST = np.array([[[2, -1], [1, -1]], [[2, 1], [1, -1]], [[0, 1], [2, 1]],
                     [[0, 1], [2, -1]], [[0, 1], [1, -1]], [[0, -1], [1, -1]]])


@dataclasses.dataclass(frozen=True)
class Textures:
  """The textured geoms among those drawn, and their textures' mipmaps (host arrays).
  slot (ngeom,): each geom's texture slot, -1 none; cube (ngeom,): a cube texture's; repeat
  (ngeom, 2): a plane's texrepeat (1 where not positive); uniform (ngeom,): texuniform;
  axes (ngeom, 3): which size scales each axis of a cube-textured shape; sky: the skybox's
  slot, -1 none; texels (T, 3) uint8: every level of every slot's mipmaps, row by row (a
  cube's six faces one below the other); srgb (slots,): texels sRGB-encoded; start, height,
  width (slots, levels): where each level is and its size (a cube's: one face's), a slot's
  last level repeated to the deepest slot's count."""
  slot: np.ndarray
  cube: np.ndarray
  repeat: np.ndarray
  uniform: np.ndarray
  axes: np.ndarray
  sky: int
  texels: np.ndarray
  srgb: np.ndarray
  start: np.ndarray
  height: np.ndarray
  width: np.ndarray


def geom_textures(m: Model, ids: np.ndarray, skybox: bool = False,
                  pixel: float = 0.0) -> Textures | None:
  """The textures MuJoCo draws on the geoms among ids `ids` and, with `skybox`, its skybox
  (its mipmaps from the level whose texels are about `pixel` radians, a pixel's angle, the
  finer ones never sampled); None where there are none."""
  slot, cube = np.full(m.ngeom, -1), np.zeros(m.ngeom, bool)
  repeat, uniform = np.ones((m.ngeom, 2)), np.zeros(m.ngeom, bool)
  axes = np.zeros((m.ngeom, 3), np.int64)
  slots = {}
  for g in ids:
    mat, gtype = int(m.geom_matid[g]), int(m.geom_type[g])
    tex = int(m.mat_texid[mat, _RGB]) if mat >= 0 else -1
    if tex < 0:
      continue
    flat = int(m.tex_type[tex]) == _TEXTURE_2D
    if not (gtype == GeomType.PLANE if flat else gtype in _CUBE_SCALE):
      continue
    slot[g], cube[g] = slots.setdefault(tex, len(slots)), not flat
    rep = np.asarray(m.mat_texrepeat[mat], np.float64)
    repeat[g] = np.where(rep > 0, rep, 1.0)
    uniform[g] = bool(m.mat_texuniform[mat])
    axes[g] = _CUBE_SCALE.get(gtype, (0, 1, 2))
  skies = np.flatnonzero(np.asarray(m.tex_type) == _SKYBOX) if skybox else []
  sky = slots.setdefault(int(skies[0]), len(slots)) if len(skies) else -1
  if not slots:
    return None
  pyramids = [_mipmaps(_image(m, tex)) for tex in slots]
  if sky >= 0 and pixel > 0:  # a face spans a quarter turn: skip levels finer than a pixel/4
    skip = int(np.log2(max(pyramids[sky][0].shape[2] * pixel / (np.pi / 2), 1.0))) - 2
    pyramids[sky] = pyramids[sky][max(skip, 0):]
  srgb = np.array([int(m.tex_colorspace[tex]) == _SRGB for tex in slots])
  pyramids = [[_bytes(level, code) for level in p] for p, code in zip(pyramids, srgb)]
  levels = max(len(p) for p in pyramids)
  start, height, width = (np.zeros((len(pyramids), levels), np.int64) for _ in range(3))
  texels, at = [], 0
  for i, pyramid in enumerate(pyramids):
    for k in range(levels):
      faces = pyramid[min(k, len(pyramid) - 1)]  # (faces, h, w, 3)
      if k < len(pyramid):
        texels.append(faces.reshape(-1, 3))
        start[i, k], at = at, at + faces[..., 0].size
      else:
        start[i, k] = start[i, k - 1]
      height[i, k], width[i, k] = faces.shape[1:3]
  return Textures(slot, cube, repeat, uniform, axes, sky, np.concatenate(texels), srgb, start,
                  height, width)


def _image(m: Model, tex: int) -> np.ndarray:
  """Texture `tex` as (faces, height, width, 3) floats in [0, 1]: one face for a 2D texture,
  six for a cube (one image given for all six is repeated); one channel is grey; an sRGB
  one is decoded to linear values, as OpenGL samples an sRGB texture (MuJoCo's framebuffer
  does not encode them back: such a texture looks darker than its file)."""
  h, w, c = (int(a[tex]) for a in (m.tex_height, m.tex_width, m.tex_nchannel))
  adr = int(m.tex_adr[tex])
  img = np.asarray(m.tex_data[adr:adr + h * w * c], np.float64).reshape(h, w, c) / 255.0
  img = np.repeat(img, 3, -1) if c == 1 else img[..., :3]
  if int(m.tex_colorspace[tex]) == _SRGB:
    img = np.where(img <= 0.04045, img / 12.92, ((img + 0.055) / 1.055) ** 2.4)
  if int(m.tex_type[tex]) == _TEXTURE_2D:
    return img[None]
  return np.repeat(img[None], 6, 0) if h == w else img.reshape(6, w, w, 3)


def _mipmaps(img: np.ndarray) -> list[np.ndarray]:
  """img (faces, h, w, 3) and its halvings down to one texel, each texel the mean of the
  2 x 2 above it (an odd last row or column joins the pair before it)."""
  out = [img]
  while img.shape[1] > 1 or img.shape[2] > 1:
    img = _halved(_halved(img, 1), 2)
    out.append(img)
  return out


def _halved(img: np.ndarray, axis: int) -> np.ndarray:
  n = img.shape[axis]
  starts = np.array([c[0] for c in np.array_split(np.arange(n), max(n // 2, 1))])
  counts = np.diff(np.append(starts, n)).reshape([-1 if a == axis else 1
                                                   for a in range(img.ndim)])
  return np.add.reduceat(img, starts, axis) / counts


def _bytes(linear: np.ndarray, srgb: bool) -> np.ndarray:
  """Linear colours as texels: bytes, sRGB-encoded where the texture is."""
  if srgb:
    linear = np.where(linear <= 0.0031308, 12.92 * linear,
                      1.055 * np.maximum(linear, 0) ** (1 / 2.4) - 0.055)
  return np.round(np.clip(linear, 0, 1) * 255).astype(np.uint8)


def _colours(texels, srgb, dtype):
  """Texel bytes (N, 3) as linear colours, sRGB-decoded where srgb (N,) (None: none is)."""
  c = texels.astype(dtype) / 255
  if srgb is None:
    return c
  return jnp.where(srgb[:, None], jnp.where(c <= 0.04045, c / 12.92,
                                            ((c + 0.055) / 1.055) ** 2.4), c)


def sky_colours(tex: Textures, ray, steps):
  """The skybox's colour (N, 3) along ray directions (N, 3) (world frame), whose
  neighbouring pixels' directions are `steps` (N, 2, 3) apart; None without a skybox."""
  if tex is None or tex.sky < 0:
    return None
  dtype = ray.dtype
  # settexture's skybox mapping: (s, t, r) = (x, z, -y)
  turn = jnp.asarray([[1.0, 0, 0], [0, 0, 1], [0, -1, 0]], dtype)
  direction, ddirection = ray @ turn.T, steps @ turn.T
  slot = jnp.full(ray.shape[0], tex.sky)
  st, face, span = _cube_lookup(direction, ddirection, jnp.asarray(tex.width, dtype)[slot, 0])
  return _trilinear(tex, slot, st, face, jnp.ones(ray.shape[0], bool), span)


def _cube_lookup(obj, dobj, width):
  """OpenGL's cube map: (st (N, 2), face (N,), texels a pixel spans squared (N,)) of
  directions obj (N, 3), neighbouring pixels' dobj (N, 2, 3) apart, faces `width` texels."""
  axis = jnp.argmax(jnp.abs(obj), -1)
  major = jnp.maximum(jnp.take_along_axis(jnp.abs(obj), axis[:, None], 1)[:, 0], 1e-30)
  negative = jnp.take_along_axis(obj, axis[:, None], 1)[:, 0] < 0
  face = 2 * axis + negative
  rule = jnp.asarray(_FACE_ST)[face]  # (N, 2 [s, t], 2 [axis, sign])
  sc_tc = jnp.take_along_axis(obj, rule[..., 0], 1) * rule[..., 1]
  # the step across the face: the part of dobj along the direction does not move the texel
  unit = obj / jnp.sqrt(jnp.maximum(jnp.sum(obj * obj, -1), 1e-30))[:, None]
  across = dobj - unit[:, None] * jnp.sum(dobj * unit[:, None], -1)[..., None]
  span = width * width * jnp.sum(jnp.square(across), -1).max(-1) / (4 * major * major)
  return 0.5 * (sc_tc / major[:, None] + 1), face, span


def _plane_mapping(tex: Textures, size, g):
  """(scale, shift) (N, 2) of planes g (N,) of sizes `size` (N, 3; a Model leaf's rows): s =
  scale_x x + shift_x, t = scale_y y + shift_y in the plane's frame (see the module)."""
  size = size[:, :2]
  finite = size > 0
  scl = jnp.asarray(tex.repeat, size.dtype)[g]
  scl = jnp.where(jnp.asarray(tex.uniform)[g][:, None] & finite, scl * size, scl)
  half = jnp.where(finite, 2 * size, 1.0)
  scale = jnp.where(finite, scl / half, 0.5 * scl) * jnp.asarray([1.0, -1.0], size.dtype)
  shift = jnp.where(finite, scl / 2, 0.0) - jnp.where(finite.all(-1), 0.0, 0.5)[:, None]
  return scale, shift


def texel_colours(tex: Textures, m: Model, d: Data, point, normal, geomid, ray, steps):
  """The texture colour (N, 3) at hit points (N, 3) with normals (N, 3) of geoms geomid
  (N,) (1 where untextured or -1), seen along ray directions `ray` (N, 3) whose neighbouring
  pixels' rays reach the hit's depth `steps` (N, 2, 3) apart (the footprint, before
  projection onto the surface); None where no geom is textured (the skybox alone). Only
  the mappings some geom uses are traced (planes', cubes')."""
  textured = tex.slot >= 0
  planes, cubes = bool((textured & ~tex.cube).any()), bool((textured & tex.cube).any())
  if not (planes or cubes):
    return None
  dtype = point.dtype
  g = jnp.maximum(geomid, 0)
  slot = jnp.asarray(tex.slot)[g]
  on = (geomid >= 0) & (slot >= 0)
  slot, cube = jnp.maximum(slot, 0), jnp.asarray(tex.cube)[g]
  rot = d.geom_xmat[g]  # (N, 3, 3), columns the geom's axes
  local = jnp.einsum("nji,nj->ni", rot, point - d.geom_xpos[g])
  # a pixel's footprint on the surface: each screen step slid along the ray onto the
  # tangent plane, in the geom's frame
  along = jnp.sum(normal * ray, -1)
  along = jnp.where(jnp.abs(along) > 1e-12, along, 1e-12)
  onto = steps - ray[:, None] * (jnp.einsum("nj,nkj->nk", normal, steps) / along[:, None])[
    ..., None]
  dlocal = jnp.einsum("nji,nkj->nki", rot, onto)  # (N, 2 steps, 3)
  size = m.geom_size[g]
  width = jnp.asarray(tex.width, dtype)[slot, 0]
  height = jnp.asarray(tex.height, dtype)[slot, 0]

  if planes:
    scale, shift = _plane_mapping(tex, size, g)
    st = scale * local[:, :2] + shift
    span = jnp.sum(jnp.square(dlocal[..., :2] * (scale * jnp.stack([width, height], -1))[
      :, None]), -1).max(-1)
    face = jnp.zeros(g.shape, jnp.int32)
  if cubes:
    unit = jnp.take_along_axis(size, jnp.asarray(tex.axes)[g], 1)
    unit = jnp.where(jnp.asarray(tex.uniform)[g][:, None] | (unit <= 0), 1.0, unit)
    st_cube, face_cube, span_cube = _cube_lookup(local / unit, dlocal / unit[:, None], width)
    if planes:
      st = jnp.where(cube[:, None], st_cube, st)
      span = jnp.where(cube, span_cube, span)
      face = jnp.where(cube, face_cube, face)
    else:
      st, span, face = st_cube, span_cube, face_cube
  colour = _trilinear(tex, slot, st, face, cube, span)
  return jnp.where(on[:, None], colour, 1.0)


def _trilinear(tex: Textures, slot, st, face, cube, span):
  """Colours (N, 3) of texture slots (N,) at st (N, 2) (on cube face `face` (N,) where
  `cube` (N,)), between the two mipmap levels around a pixel's span of `span` (N,) texels
  squared (a miss has no footprint: clamped, so no NaN gradient)."""
  lod = 0.5 * jnp.log2(jnp.maximum(span, 1e-30))
  nlevel = tex.start.shape[1]
  lod = jnp.clip(lod, 0.0, nlevel - 1)
  lo = jnp.floor(lod).astype(jnp.int32)
  hi = jnp.minimum(lo + 1, nlevel - 1)
  frac = (lod - lo)[:, None]
  return ((1 - frac) * _bilinear(tex, slot, lo, st, face, cube)
          + frac * _bilinear(tex, slot, hi, st, face, cube))


def _bilinear(tex: Textures, slot, level, st, face, cube):
  """Bilinear samples (N, 3) of mipmap `level` (N,) of texture slots (N,) at texture
  coordinates st (N, 2): repeating, or within cube face `face` (N,) with its edges clamped
  where `cube` (N,)."""
  dtype = st.dtype
  start = jnp.asarray(tex.start)[slot, level]
  h = jnp.asarray(tex.height)[slot, level]
  w = jnp.asarray(tex.width)[slot, level]
  x = st[:, 0] * w.astype(dtype) - 0.5
  y = st[:, 1] * h.astype(dtype) - 0.5
  x0, y0 = jnp.floor(x), jnp.floor(y)
  fx, fy = (x - x0)[:, None], (y - y0)[:, None]
  texels = jnp.asarray(tex.texels)
  srgb = jnp.asarray(tex.srgb)[slot] if tex.srgb.any() else None  # the decode costs

  def index(v, n):  # repeating (taken modulo before the cast) or clamped to the face
    n = n.astype(dtype)
    return jnp.where(cube, jnp.clip(v, 0, n - 1), jnp.mod(v, n)).astype(jnp.int32)

  def at(r, c):
    return _colours(texels[start + (face * h + index(r, h)) * w + index(c, w)], srgb, dtype)

  return ((1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1))
          + fy * ((1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1)))
