"""Body mass and inertia inferred from geoms, as MuJoCo's compiler infers them, in pure JAX.

Where the compiler weighed a body's geoms (inertiafromgeom; Model.geom_inertiakind says which
geoms and how), a changed geom_size, geom_pos, geom_quat, geom_density or geom_mass (or
hfield_size, which sizes height fields) gives the body_mass, body_ipos, body_iquat and
body_inertia that recompiling the edited model gives.

Each geom's mass is its given mass or density x volume; its moments are those of the solid
primitive (a height field's geom box, a mesh's equivalent inertia box, whose volume and
half-sizes are compile-time constants: mesh geometry is host-side). One geom: the body takes
its frame and unsorted moments; several: the parallel-axis sum about their com, turned into
principal axes by MuJoCo's Jacobi eigensolver (mjuu_eig3: same pivots, same sort), so
body_iquat is the same frame with the same signs.
Not redone: bodies compiled with boundmass, boundinertia, balanceinertia or settotalmass,
fused (fusestatic), aligned (alignfree) or discardvisual bodies, and explicit <inertial>.
body_simple (static, from the compiled frames) is not re-derived; body_sameframe is static
too, but kinematics copies a body's frame as its com only while body_ipos and body_iquat
still say so (smooth/kinematics.py), so a com moved off the origin is composed there.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.constants import MINVAL
from jaxmj.types import GeomType, Model

_BODY_EIG_EPS = 4e-15  # the body compiler's mjuu_eig3 tolerance
_EIG_ITERATIONS = 32  # Jacobi sweeps of a 3x3: converged to 4e-15 in well under 20
_COS45 = 0.707106781186548  # MuJoCo's quarter-turn constant


def geom_volume(gtype: np.ndarray, size: jax.Array) -> jax.Array:
  """(n,) volume of primitives (type (n,), half-sizes (n, 3)) as mjCGeom::GetVolume; a
  height field's is its geom box's; 0 for planes and meshes."""
  s0, s1, s2 = size[:, 0], size[:, 1], size[:, 2]
  pi = np.pi
  return jnp.select(
    [gtype == GeomType.SPHERE, gtype == GeomType.CAPSULE, gtype == GeomType.CYLINDER,
     gtype == GeomType.ELLIPSOID, np.isin(gtype, (GeomType.BOX, GeomType.HFIELD))],
    [4 * pi * s0 * s0 * s0 / 3, pi * (s0 * s0 * (2 * s1) + 4 * s0 * s0 * s0 / 3),
     pi * s0 * s0 * (2 * s1), 4 * pi * s0 * s1 * s2 / 3, s0 * s1 * s2 * 8], 0.0)


def geom_moments(gtype: np.ndarray, size: jax.Array, mass: jax.Array) -> jax.Array:
  """(n, 3) principal moments about the centre, geom frame, of solid primitives of `mass`,
  as mjCGeom::SetInertia (height fields and mesh boxes: type BOX)."""
  s0, s1, s2 = size[:, 0], size[:, 1], size[:, 2]
  r, h = s0, 2 * s1
  sphere = 2 * mass * s0 * s0 / 5
  # capsule: the mass split between the cylinder and the two caps by volume
  cap_mass = mass * 4 * r / (4 * r + 3 * h)
  cyl_mass = mass - cap_mass
  cap = 2 * cap_mass * r * r / 5
  cap_lat = cyl_mass * (3 * r * r + h * h) / 12 + cap + cap_mass * h * (3 * r + 2 * h) / 8
  cyl_lat = mass * (3 * r * r + h * h) / 12
  a, b, c = s0 * s0, s1 * s1, s2 * s2

  def axes(d):
    return jnp.stack([mass * (b + c) / d, mass * (a + c) / d, mass * (a + b) / d], 1)

  col = lambda t: (gtype == t)[:, None]  # noqa: E731
  return jnp.select(
    [col(GeomType.SPHERE), col(GeomType.CAPSULE), col(GeomType.CYLINDER),
     col(GeomType.ELLIPSOID), np.isin(gtype, (GeomType.BOX, GeomType.HFIELD))[:, None]],
    [jnp.stack([sphere] * 3, 1), jnp.stack([cap_lat, cap_lat, cyl_mass * r * r / 2 + cap], 1),
     jnp.stack([cyl_lat, cyl_lat, mass * r * r / 2], 1), axes(5), axes(3)],
    jnp.zeros_like(size))


def _geom_mass_properties(m: Model, g: np.ndarray, size: jax.Array):
  """(mass (n,), moments (n, 3)) of the counted geoms g (compile order), sizes (ngeom, 3)."""
  mesh = m.geom_type[g] == GeomType.MESH
  shape_type = np.where(mesh, GeomType.BOX, m.geom_type[g])
  meshbox = m.geom_meshinertia[g]
  shape = jnp.where(mesh[:, None], meshbox[:, 1:], size[g])
  volume = jnp.where(mesh, meshbox[:, 0], geom_volume(shape_type, shape))
  mass = jnp.where(m.geom_inertiakind[g] == 2, m.geom_mass[g], m.geom_density[g] * volume)
  return mass, geom_moments(shape_type, shape, mass)


def inertia_from_geoms(m: Model) -> dict:
  """body_mass (nbody,), body_ipos (nbody, 3), body_inertia (nbody, 3), body_iquat
  (nbody, 4), body frame, with the bodies whose inertia the compiler inferred from geoms
  recomputed from geom_size (a height field's as set_const sizes it from hfield_size),
  geom_pos, geom_quat, geom_density and geom_mass. {} when no body's was inferred."""
  g = np.flatnonzero(m.geom_inertiakind)
  if not len(g):
    return {}
  gmass, moments = _geom_mass_properties(m, g, m.geom_size)
  body = m.geom_bodyid[g]
  bodies, count = np.unique(body, return_counts=True)
  out = dict(body_mass=m.body_mass, body_ipos=m.body_ipos, body_inertia=m.body_inertia,
             body_iquat=m.body_iquat)
  single = bodies[count == 1]
  if len(single):  # one geom: its frame and unsorted moments, as the compiler keeps them
    k = np.searchsorted(body, single)  # position of that body's geom in g
    out = _set(out, single, gmass[k], m.geom_pos[g[k]], moments[k], m.geom_quat[g[k]])
  multi = bodies[count > 1]
  if len(multi):
    seg = np.searchsorted(multi, body)
    keep = np.isin(body, multi)
    seg = np.where(keep, seg, len(multi))  # geoms of single-geom bodies into a spare segment
    mass, com, full = _combined(gmass, m.geom_pos[g], m.geom_quat[g], moments, seg,
                                len(multi) + 1)
    eigval, quat = jax.vmap(eig3)(full[:-1])
    empty = mass[:-1] < MINVAL
    out = _set(out, multi, jnp.where(empty, 0.0, mass[:-1]),
               jnp.where(empty[:, None], 0.0, com[:-1]), jnp.where(empty[:, None], 0.0, eigval),
               jnp.where(empty[:, None], jnp.array([1.0, 0, 0, 0]), quat))
  return out


def _set(out: dict, bodies, mass, ipos, inertia, iquat) -> dict:
  return dict(body_mass=out["body_mass"].at[bodies].set(mass),
              body_ipos=out["body_ipos"].at[bodies].set(ipos),
              body_inertia=out["body_inertia"].at[bodies].set(inertia),
              body_iquat=out["body_iquat"].at[bodies].set(iquat))


def _combined(mass, pos, quat, moments, seg, n):
  """Per segment: total mass (n,), com (n, 3) and the full inertia (n, 3, 3) about the com
  (mjCBody::InertiaFromGeom: each part's rotated moments plus its parallel-axis term)."""
  total = jax.ops.segment_sum(mass, seg, n)
  com = jax.ops.segment_sum(mass[:, None] * pos, seg, n) / jnp.maximum(total, MINVAL)[:, None]
  rot = math.quat_to_mat(quat)
  own = jnp.einsum("nij,nj,nkj->nik", rot, moments, rot)
  off = pos - com[seg]
  eye = jnp.eye(3, dtype=pos.dtype)
  parallel = mass[:, None, None] * (jnp.sum(off * off, -1)[:, None, None] * eye
                                    - off[:, :, None] * off[:, None, :])
  return total, com, jax.ops.segment_sum(own + parallel, seg, n)


def eig3(mat: jax.Array) -> tuple[jax.Array, jax.Array]:
  """Eigenvalues (3,) and eigenvector-frame quaternion (4,) of a symmetric 3x3, as MuJoCo
  4.0's mjuu_eig3 with the body compiler's tolerance: Jacobi rotations on the largest
  off-diagonal entry, accumulated in a quaternion from the identity, until that entry is at
  most 4e-15 of the largest |entry|; then sorted decreasing by quarter turns (moments within
  1e-12 of it keep their order). A fixed number of masked sweeps, so it jits and vmaps."""
  scale = jnp.max(jnp.abs(mat))
  stop, gap = _BODY_EIG_EPS * scale, 1e-12 * scale
  pairs = ((0, 1, 2), (0, 2, 1), (1, 2, 0))  # (row, column, rotation axis)

  def rotate(_, carry):
    quat, done = carry
    vec = math.quat_to_mat(quat)
    d = vec.T @ mat @ vec
    a01, a02, a12 = jnp.abs(d[0, 1]), jnp.abs(d[0, 2]), jnp.abs(d[1, 2])
    which = jnp.where((a01 > a02) & (a01 > a12), 0, jnp.where(a02 > a12, 1, 2))
    rk, ck, rotk = (jnp.asarray(np.array(p))[which] for p in zip(*pairs))
    off = d[rk, ck]
    done = done | (jnp.abs(off) <= stop)
    off = jnp.where(done, 1.0, off)
    tau = (d[ck, ck] - d[rk, rk]) / (2 * off)
    root = jnp.sqrt(1 + tau * tau)
    # MuJoCo's 1 / (tau + root) or -1 / (root - tau), with no infinite branch for grad
    t = jnp.where(tau >= 0, 1.0, -1.0) / (jnp.abs(tau) + root)
    half = t / (1 + jnp.sqrt(1 + t * t))  # tan(angle / 2)
    c = 1 / jnp.sqrt(1 + half * half)
    axis = jnp.zeros(3, mat.dtype).at[rotk].set(jnp.where(rotk == 1, half, -half) * c)
    new = math.normalize(math.quat_mul(quat, jnp.concatenate([c[None], axis])))
    return jnp.where(done, quat, new), done

  quat, _ = jax.lax.fori_loop(0, _EIG_ITERATIONS, rotate,
                              (jnp.array([1.0, 0, 0, 0], mat.dtype), jnp.asarray(False)))
  vec = math.quat_to_mat(quat)
  eigval = jnp.diagonal(vec.T @ mat @ vec)
  for j1 in (0, 1, 0):
    swap = eigval[j1] + gap < eigval[j1 + 1]
    turn = jnp.zeros(4, mat.dtype).at[0].set(_COS45).at[(j1 + 2) % 3 + 1].set(_COS45)
    eigval = jnp.where(swap, eigval.at[j1].set(eigval[j1 + 1]).at[j1 + 1].set(eigval[j1]),
                       eigval)
    quat = jnp.where(swap, math.normalize(math.quat_mul(quat, turn)), quat)
  return eigval, quat
