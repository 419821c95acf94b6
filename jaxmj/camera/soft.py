"""Soft silhouettes: images whose pixels move smoothly as geoms cross them (camera_image's
softness), so gradients flow across silhouette edges too.

Each primitive geom (sphere, capsule, ellipsoid, cylinder, box) covers each pixel by
alpha = sigmoid(-miss / softness), where miss is the smallest signed distance from the
pixel's ray line to the geom's surface (min over t of the geom's signed distance function
at p + t v: negative where the ray goes through the geom, zero at the exact silhouette;
the ellipsoid's is its scaled-sphere approximation). Its layer sits at the ray's hit
distance where it is hit, else at the closest approach t*, and is shaded there. Layers and
an opaque one holding the exact hit of every other geom (planes, meshes, heightfields) are
composited front to back: weight alpha x the transmittance of the layers in front, the
rest to the background. As softness -> 0 this is the exact image; at softness > 0 it is
biased: silhouettes blur over a band of about +-4 softness (metres of miss distance), in
which the geom is partly transparent (50% at the exact edge), geoms thinner than a few
softness show what lies behind them, and every primitive costs every pixel (no culling).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.camera import shade
from jaxmj.collision import ray as ray_lib
from jaxmj.collision.raycast import cull, trace
from jaxmj.types import Data, GeomType, Model

GOLDEN_STEPS = 48  # interval shrinks 0.618^48 ~ 1e-10 of the bounding sphere's width


def _norm(x):
  return jnp.sqrt(jnp.maximum(x @ x, 1e-30))


def _sdf_sphere(size, q):
  return _norm(q) - size[0]


def _sdf_capsule(size, q):
  return _norm(q - jnp.array([0.0, 0.0, 1.0]) * jnp.clip(q[2], -size[1], size[1])) - size[0]


# Elementwise maxima and minima: a reduction's gradient divides by the count of entries
# equal to the result, which XLA's unoptimized CPU code can make 0.
def _sdf_ellipsoid(size, q):
  return (_norm(q / size) - 1.0) * jnp.minimum(jnp.minimum(size[0], size[1]), size[2])


def _sdf_cylinder(size, q):
  d = jnp.stack([_norm(q[:2]) - size[0], jnp.abs(q[2]) - size[1]])
  return _norm(jnp.maximum(d, 0.0)) + jnp.minimum(jnp.maximum(d[0], d[1]), 0.0)


def _sdf_box(size, q):
  d = jnp.abs(q) - size
  return _norm(jnp.maximum(d, 0.0)) + jnp.minimum(jnp.maximum(jnp.maximum(d[0], d[1]), d[2]),
                                                  0.0)


SDF = {GeomType.SPHERE: _sdf_sphere, GeomType.CAPSULE: _sdf_capsule,
       GeomType.ELLIPSOID: _sdf_ellipsoid, GeomType.CYLINDER: _sdf_cylinder,
       GeomType.BOX: _sdf_box}


def _golden_min(f, lo, hi):
  """Minimizer of the convex f on [lo, hi] by golden-section search (no gradients)."""
  r = (np.sqrt(5.0) - 1) / 2

  def step(_, s):
    a, b = s
    c, e = b - r * (b - a), a + r * (b - a)
    left = f(c) < f(e)
    return jnp.where(left, a, c), jnp.where(left, e, b)

  a, b = jax.lax.fori_loop(0, GOLDEN_STEPS, step, (lo, hi))
  return (a + b) / 2


def _layer(gtype, size, radius, p, v):
  """One geom, one ray (local frame): its signed miss distance, layer distance t and
  whether the ray hits it."""
  f = lambda t: SDF[gtype](size, p + t * v)  # noqa: E731
  sg = jax.lax.stop_gradient
  fs = lambda t: SDF[gtype](sg(size), sg(p) + t * sg(v))  # noqa: E731
  vv = sg(v @ v)
  tc, half = sg(-(p @ v)) / vv, sg(radius) / jnp.sqrt(vv)
  ts = _golden_min(fs, jnp.maximum(tc - half, 0.0), jnp.maximum(tc + half, 0.0))
  # One Newton step from the minimizer: t's value stays, its gradient is the implicit
  # function theorem's (zero where f is flat along the ray there).
  d1, d2 = jax.grad(f)(ts), jax.grad(jax.grad(f))(ts)
  t = ts - jnp.where(d2 > 1e-12, d1 / jnp.where(d2 > 1e-12, d2, 1.0), 0.0)
  hit = ray_lib.RAY_FUNCS[gtype](size, p, v)
  return f(ts), jnp.where(jnp.isfinite(hit), hit, t), jnp.isfinite(hit)


def _type_layers(m: Model, d: Data, sel, gtype, pnt, vec, softness):
  """alpha, distance (N, G), normal (N, G, 3) global, of the geoms sel of one type."""
  mat, pos, size = d.geom_xmat[sel], d.geom_xpos[sel], m.geom_size[sel]
  radius = cull.bounding_radius(gtype, size)
  pnt = jnp.broadcast_to(pnt, vec.shape)
  lp = jnp.einsum("gji,gnj->gni", mat, pnt[None] - pos[:, None])  # (G, N, 3)
  lv = jnp.einsum("gji,nj->gni", mat, vec)
  one = jax.vmap(_layer, (None, None, None, 0, 0))
  miss, dist, hit = jax.vmap(one, (None, 0, 0, 0, 0))(gtype, size, radius, lp, lv)
  q = lp + dist[..., None] * lv
  local_n = jax.vmap(jax.vmap(trace.NORMALS[gtype], (None, 0)))(size, q)
  normal = trace.unit(jnp.einsum("gij,gnj->gni", mat, local_n))
  # Where the ray misses, the outward normal at the closest approach is square to the ray
  # (the silhouette's); a hit's faces the ray as trace.py's.
  normal = jnp.where((hit & (jnp.sum(normal * vec, -1) > 0))[..., None], -normal, normal)
  return jax.nn.sigmoid(-miss / softness).T, dist.T, normal.swapaxes(0, 1)


def soft_image(m: Model, d: Data, ids: np.ndarray, pnt, vec, cam_pos, cam_mat,
               softness: float, far: float, tiles=None, rgba=None, occluded=None,
               texture=None, background=None):
  """Depth (N,) and RGB (N, 3) of camera rays from pnt ((3,) or (N, 3)) along vec (N, 3)
  with soft silhouettes of the primitives among geom ids `ids`, seen by the camera at
  cam_pos, cam_mat (tiles, rgba, occluded: as for trace.nearest_hits and shade.shade).
  texture: optional callable(point (M, 3), normal (M, 3), geomid (M,), ray (M, 3), depth
  (M,)) -> texel colours (M, 3) or None (image.py). background: optional colours (N, 3)
  behind every layer (the skybox)."""
  soft_types = tuple(SDF)
  alphas, dists, normals, geoms = [], [], [], []
  for gtype in soft_types:
    sel = ids[m.geom_type[ids] == gtype]
    if len(sel):
      a, z, n = _type_layers(m, d, sel, gtype, pnt, vec, softness)
      alphas.append(a), dists.append(z), normals.append(n)
      geoms.append(np.broadcast_to(sel, a.shape))
  rest = ids[~np.isin(m.geom_type[ids], soft_types)]
  hard = trace.nearest_hits(m, d, rest, pnt, vec, tiles)
  hit = hard.geomid >= 0
  alphas.append(hit[:, None].astype(vec.dtype))
  dists.append(jnp.where(hit, hard.dist, far)[:, None])
  normals.append(hard.normal[:, None])
  geoms.append(hard.geomid[:, None])
  alpha, dist, normal = (jnp.concatenate(x, 1) for x in (alphas, dists, normals))
  geom = jnp.concatenate([jnp.asarray(g, jnp.int32) for g in geoms], 1)  # (N, L)
  order = jnp.argsort(jax.lax.stop_gradient(dist), axis=1)
  alpha, dist, geom = (jnp.take_along_axis(x, order, 1) for x in (alpha, dist, geom))
  normal = jnp.take_along_axis(normal, order[..., None], 1)
  through = jnp.cumprod(1 - alpha, 1)
  weight = alpha * jnp.concatenate([jnp.ones_like(through[:, :1]), through[:, :-1]], 1)
  origin = jnp.broadcast_to(pnt, vec.shape)[:, None]
  point = origin + jnp.minimum(dist, far)[..., None] * vec[:, None]
  flat = point.reshape(-1, 3), normal.reshape(-1, 3), geom.reshape(-1)
  texels = None if texture is None else texture(
    *flat, jnp.repeat(vec, alpha.shape[1], 0), jnp.minimum(dist, far).reshape(-1))
  colour = shade.shade(m, d, cam_pos, cam_mat, *flat, occluded, rgba,
                       texels).reshape(*alpha.shape, 3)
  depth = jnp.sum(weight * jnp.minimum(dist, far), 1) + through[:, -1] * far
  rgb = jnp.sum(weight[..., None] * colour, 1)
  if background is not None:
    rgb = rgb + through[:, -1:] * background
  return depth, rgb
