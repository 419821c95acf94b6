"""Heightfield collisions (mjc_ConvexHField): the heightfield as triangular prisms.

MuJoCo 4.0 cuts the heightfield cells under the other geom's bounding box into triangular
prisms (two per cell, from the base at -size[3] up to the surface) and runs its convex
collider (GJK/EPA, one contact) on each prism against the geom; every prism in contact gives
one contact, up to mjMAXCONPAIR = 50 per pair, in MuJoCo's loop order (rows, then columns,
then the two triangles). The normal is the GJK/EPA one: mujoco 4.0.0 does not apply the
surface-normal correction (mjc_fixNormal) of older sources here (measured: a capsule 0.2 deep
keeps its EPA normal, where the correction would flip it).

JAX structure: the window of cells under the geom moves with it, so its position is traced
and its size is static: `m.geom_hfieldwindow` (compiled from geom_rbound, the margins and
hfield_size) bounds how many grid columns / rows a geom's bounding box, grown by the margin,
can span. Every pair gets one slot
per prism of its window, slots outside the geom's box or past MuJoCo's 50 read dist = 1e10.
All heightfield pairs form one group with the geom types traced (a prism is a 6-vertex convex
mesh), and the driver runs the live prisms of all pairs through the GJK/EPA search in the
same loop as the convex group's near pairs (driver._run_searches): one compiled search for
both groups (dm_control's quadruped.xml compiled two, and its terrain group alone took 46 of
its step's 88 s of compile), and no search of a prism MuJoCo skips.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.collision import cull
from jaxmj.collision.ccd import convex
from jaxmj.collision.ccd import support as ccd_support
from jaxmj.collision.primitive import NO_CONTACT, GeomFrame
from jaxmj.types import GeomType

MAX_CONTACTS = 50  # mjMAXCONPAIR
# geom types colliding with heightfields (all through the prism decomposition)
GEOM_TYPES = (GeomType.SPHERE, GeomType.CAPSULE, GeomType.ELLIPSOID, GeomType.CYLINDER,
              GeomType.BOX, GeomType.MESH)


def cells_spanned(hsize, nrow: int, ncol: int, reach) -> np.ndarray:
  """(..., 2) int32 (columns, rows) of a heightfield's cells that a box of half-size `reach`
  (host numbers, any shape) can span: at most ceil(2 reach / cell) + 1 (MuJoCo floors one
  end and ceils the other), capped by the grid; zeros for a grid of one row or column.
  hsize: the heightfield's size (4,), host numbers. Host side: the compiler sizes
  geom_hfieldwindow and sensor_hfieldwindow with it, jaxmj.geom_distance its own windows."""
  reach = np.asarray(reach, float)
  out = np.zeros(reach.shape + (2,), np.int32)
  if nrow < 2 or ncol < 2:
    return out
  for axis, (half, n) in enumerate(((float(hsize[0]), ncol), (float(hsize[1]), nrow))):
    cell = 2 * half / (n - 1)
    out[..., axis] = np.minimum(np.ceil(2 * reach / cell - 1e-9).astype(np.int64) + 1, n - 1)
  return out


def slots(m, g2: np.ndarray) -> int:
  """Contact slots per pair of a heightfield group: two prisms per cell of the window."""
  cols, rows = np.max(m.geom_hfieldwindow[g2], axis=0)
  return max(1, 2 * int(cols) * int(rows))


def _local(mat, v, z):
  p = math.nofma(mat * v[:, None], z)
  return p[0] + p[1] + p[2]  # mat' v, summed as MuJoCo does


def _opaque(x, z, dtype):
  """x (as dtype) hidden from the compiler (z: `math.opaque_zero`). XLA turns a division by
  a constant or a broadcast into a multiplication by its reciprocal (one more rounding);
  MuJoCo divides."""
  return math.nofma(jnp.asarray(x, dtype), z)


def _mat_vec(mat, v):
  return mat[:, 0] * v[0] + mat[:, 1] * v[1] + mat[:, 2] * v[2]


def _prisms(hsize, heights, nrow, ncol, cmin, rmin, cols: int, rows: int, dtype, z):
  """Prism vertices (P, 6, 3) in the heightfield frame (bottom triangle at -size[3], then
  the top), in MuJoCo's loop order, and each prism's grid row r and column c (P,)."""
  i, j, k = np.meshgrid(np.arange(rows), np.arange(cols), np.arange(2), indexing="ij")
  i, j, k = (jnp.asarray(x.ravel()) for x in (i, j, k))
  r = rmin + i
  c = cmin + 1 + j
  # triangle k=0: (c-1, r+1), (c-1, r), (c, r+1); k=1: (c-1, r), (c, r+1), (c, r)
  dc = jnp.stack([jnp.stack([-1, -1, 0]), jnp.stack([-1, 0, 0])])[k]
  dr = jnp.stack([jnp.stack([1, 0, 1]), jnp.stack([0, 1, 0])])[k]
  pc = jnp.clip(c[:, None] + dc, 0, ncol - 1)
  pr = jnp.clip(r[:, None] + dr, 0, nrow - 1)
  # MuJoCo's grid arithmetic to the bit (the prisms' last bits decide exact support ties in
  # the search): true divisions, each product rounded on its own (z: `_pair_setup`)
  dx = 2 * hsize[0] / _opaque(ncol - 1, z, dtype)
  dy = 2 * hsize[1] / _opaque(nrow - 1, z, dtype)
  x = math.nofma(dx * pc, z) - hsize[0]
  y = math.nofma(dy * pr, z) - hsize[1]
  h = math.nofma(heights(pr * ncol + pc) * hsize[2], z)
  bottom = jnp.stack([x, y, jnp.broadcast_to(-hsize[3], x.shape)], axis=-1)
  top = jnp.stack([x, y, h], axis=-1)
  return jnp.concatenate([bottom, top], axis=1).astype(dtype), r, c


def _pair_setup(hf: GeomFrame, geom: GeomFrame, margin, type2, verts2, hsize, nrow, ncol, adr,
                rbound, data, *, cols: int, rows: int):
  """One heightfield-geom pair before the convex search: the geom in the heightfield frame
  (GeomFrame), the prisms of its window (P, 6, 3) and which of them MuJoCo tests (P,)."""
  dtype = geom.pos.dtype
  vec = geom.pos - hf.pos
  # a zero the compiler cannot fold (a sum of squares of traced data is never negative), for
  # the `math.nofma` guards and `_opaque` divisors that keep MuJoCo's rounding
  z = math.opaque_zero(vec[0] * vec[0] + vec[1] * vec[1] + vec[2] * vec[2])
  pos = _local(hf.mat, vec, z)
  p = math.nofma(hf.mat[:, :, None] * geom.mat[:, None, :], z)
  mat = p[0] + p[1] + p[2]  # mat1' mat2
  near = ~jnp.any(jnp.stack([hsize[0] < pos[0] - rbound - margin,
                             -hsize[0] > pos[0] + rbound + margin,
                             hsize[1] < pos[1] - rbound - margin,
                             -hsize[1] > pos[1] + rbound + margin,
                             hsize[2] < pos[2] - rbound - margin,
                             -hsize[3] > pos[2] + rbound + margin]))
  code = type2.astype(jnp.int32)
  rel = GeomFrame(pos, mat, geom.size)
  axes = jnp.concatenate([jnp.eye(3, dtype=dtype), -jnp.eye(3, dtype=dtype)])
  ext = jax.vmap(lambda d: ccd_support.support(code, rel, verts2, d, None)[0])(axes)
  hi, lo = jnp.diagonal(ext[:3]), jnp.diagonal(ext[3:])
  overlap = ~jnp.any(jnp.stack([lo[0] - margin > hsize[0], hi[0] + margin < -hsize[0],
                                lo[1] - margin > hsize[1], hi[1] + margin < -hsize[1],
                                lo[2] - margin > hsize[2], hi[2] + margin < -hsize[3]]))
  # the sub-grid under the geom's box grown by the margin (measured: mujoco 4.0 finds
  # contacts within the margin on prisms just outside the box)
  grid = lambda v, ax, n: (v + hsize[ax]) / _opaque(2 * hsize[ax], z, dtype) * (n - 1)
  cmin = jnp.maximum(0, jnp.floor(grid(lo[0] - margin, 0, ncol)))
  cmax = jnp.minimum(ncol - 1, jnp.ceil(grid(hi[0] + margin, 0, ncol)))
  rmin = jnp.maximum(0, jnp.floor(grid(lo[1] - margin, 1, nrow)))
  rmax = jnp.minimum(nrow - 1, jnp.ceil(grid(hi[1] + margin, 1, nrow)))
  cmin, cmax, rmin, rmax = (x.astype(jnp.int32) for x in (cmin, cmax, rmin, rmax))
  heights = lambda i: data[adr + i].astype(dtype)
  prism, r, c = _prisms(hsize, heights, nrow, ncol, cmin, rmin, cols, rows, dtype, z)
  inside = (r < rmax) & (c <= cmax)
  tall = ~jnp.all(prism[:, 3:, 2] + margin < lo[2], axis=1)  # MuJoCo's prism height test
  return rel, prism, near & overlap & inside & tall


def _prism_frame(p):
  """The search's frame of a prism (6, 3): its vertex centre (mjc_prism_center), where GJK
  starts; the vertices are points of the heightfield frame the search runs in."""
  dtype = p.dtype
  center = (p[0] + p[1] + p[2] + p[3] + p[4] + p[5]) * (1.0 / 6.0)
  return GeomFrame(center, jnp.eye(3, dtype=dtype), jnp.zeros(3, dtype))


def prism_stages(m, g1: np.ndarray, g2: np.ndarray, window: tuple[int, int] | None = None):
  """The group's collider in two stages around the GJK/EPA search, so that the driver can run
  that search in one call with the convex group's (one compiled search, not two).

  Returns (setup, contact, extra). setup(hf, geom, margin, type2, hsize, nrow, ncol, adr,
  rbound[, verts2]) (every argument with a leading pair axis; `extra` are the arguments after
  `margin`) -> (args, live): the search's per-prism arguments (a, b, margin, type1, type2,
  verts1, verts2), each (npair * P, ...), P = slots(m, g2), for `convex.convex_plan`, and
  which prisms MuJoCo tests (npair, P). contact(plans, args, live, hf) -> (dist (npair, P),
  pos (npair, P, 3), frame (npair, P, 3, 3)) from the search's plans of every prism (those of
  prisms not live may be anything). window: (columns, rows) of the cells searched (default
  the geoms' geom_hfieldwindow, sized for the collision margins)."""
  if window is None:
    window = np.max(m.geom_hfieldwindow[g2], axis=0)
  cols, rows = (int(x) for x in window)
  hid = m.geom_dataid[g1]
  has_mesh = bool(np.any(m.geom_type[g2] == GeomType.MESH))
  extra = [jnp.asarray(m.geom_type[g2]), m.hfield_size[hid], jnp.asarray(m.hfield_nrow[hid]),
           jnp.asarray(m.hfield_ncol[hid]), jnp.asarray(m.hfield_adr[hid]), m.geom_rbound[g2]]
  if has_mesh:
    is_mesh = jnp.asarray(m.geom_type[g2] == GeomType.MESH)[:, None, None]
    extra.append(jnp.where(is_mesh, m.mesh_hullvert[np.maximum(m.geom_dataid[g2], 0)], 0.0))
  pair_setup = functools.partial(_pair_setup, data=m.hfield_data, cols=cols, rows=rows)

  def setup(hf, geom, margin, type2, hsize, nrow, ncol, adr, rbound, verts2=None):
    rel, prism, live = jax.vmap(pair_setup)(hf, geom, margin, type2, verts2, hsize, nrow, ncol,
                                            adr, rbound)
    nprism = live.shape[1]
    per_prism = lambda x: None if x is None else jnp.repeat(x, nprism, axis=0)  # noqa: E731
    prism = prism.reshape(-1, 6, 3)
    code = per_prism(type2.astype(jnp.int32))
    args = (jax.vmap(_prism_frame)(prism), jax.tree.map(per_prism, rel), per_prism(margin),
            jnp.full(code.shape, convex.PRISM, jnp.int32), code, prism, per_prism(verts2))
    return args, live

  def contact(plans, args, live, hf):
    one = lambda plan, a, b, margin, t1, t2, v1, v2: convex.contact_from_plan(  # noqa: E731
      plan, t1, t2, a, b, margin, verts1=v1, verts2=v2)
    dist, lpos, lframe = jax.vmap(one)(plans, *args)
    npair, nprism = live.shape
    dist = dist.reshape(npair, nprism)
    found = live & (dist < 0.5 * NO_CONTACT)
    kept = found & (jnp.cumsum(found, axis=1) <= MAX_CONTACTS)
    # like MuJoCo, the search runs in the heightfield frame; results are mapped back
    to_global = jax.vmap(jax.vmap(_mat_vec, in_axes=(None, 0)))
    cpos = to_global(hf.mat, lpos.reshape(npair, nprism, 3)) + hf.pos[:, None]
    cframe = convex.make_frame(to_global(hf.mat, lframe[:, 0].reshape(npair, nprism, 3)))
    return jnp.where(kept, dist, NO_CONTACT), cpos, cframe

  return setup, contact, tuple(extra)


def collide(m, g1: np.ndarray, g2: np.ndarray, hf: GeomFrame, geom: GeomFrame, margin,
            window: tuple[int, int] | None = None):
  """The group's contacts with its prisms searched on their own (the driver merges them into
  the convex group's search instead): (dist (npair, P), pos (npair, P, 3), frame (npair, P,
  3, 3)), as prism_stages' contact; hf, geom, margin with a leading pair axis."""
  setup, contact, extra = prism_stages(m, g1, g2, window)
  args, live = setup(hf, geom, margin, *extra)
  search = convex.traced_types_search(m.opt.ccd_tolerance, m.opt.ccd_iterations)
  return contact(cull.near_only(search, live.reshape(-1), args), args, live, hf)

