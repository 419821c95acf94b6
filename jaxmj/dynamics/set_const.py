"""mj_setConst on the device: the derived constants of a Model whose masses, inertias or
geometry changed, recomputed in pure JAX (jit, vmap over randomized models, grad).

Uses the runtime's own kinematics, com, tendon, mass and transmission stages at qpos0 (the
host compiler's bit-exact version is jaxmj/mjcf/compile/setconst.py, which the runtime does
not import).
Recomputed: body_subtreemass, dof_M0, body_invweight0, dof_invweight0, tendon_length0,
tendon_invweight0, actuator_acc0 (as mj_setConst), and geom_rbound and geom_aabb of primitive
geoms from geom_size (as the compiler: mj_setConst leaves them). Not yet recomputed (left as
they are): cam/light *0, stat, inertia inferred from geoms, mesh and height-field bounds.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.actuation import driver as actuation
from jaxmj.constants import MINVAL
from jaxmj.io import make_data
from jaxmj.smooth import com, kinematics, mass, tendon
from jaxmj.smooth.jac import jac
from jaxmj.types import GeomType, JointType, Model


def set_const(m: Model) -> Model:
  """m with its derived constants recomputed from its current leaves (see module doc)."""
  d = make_data(m)
  d = com.com_pos(m, kinematics.kinematics(m, d))
  d = tendon.tendon(m, d)
  d = mass.factor_m(m, mass.crb(m, d))
  d = actuation.transmission(m, d)
  nv = m.nv
  minv = jax.vmap(lambda x: mass.solve_m(m, d, x))(jnp.eye(nv, dtype=d.qM.dtype))
  inv_mass = 1.0 / jnp.maximum(MINVAL, m.body_mass)
  changes = dict(
    body_subtreemass=com.subtree_mass(m),
    dof_M0=_dof_m0(m, d),
    body_invweight0=_body_invweight0(m, d, minv, inv_mass),
    dof_invweight0=_dof_invweight0(m, minv, inv_mass),
  )
  if m.ntendon:
    changes.update(tendon_length0=d.ten_length,
                   tendon_invweight0=jnp.einsum("tn,nk,tk->t", d.ten_J, minv, d.ten_J))
  if m.nu:
    moment = d.actuator_moment @ minv  # rows: M^-1 moment_i (minv is symmetric)
    changes.update(actuator_acc0=jnp.linalg.norm(moment, axis=1))
  changes.update(_geom_bounds(m))
  return m.replace(**changes)


def _geom_bounds(m: Model) -> dict:
  """geom_rbound (bounding-sphere radius) and geom_aabb (local box: center 0, half-sizes) of
  spheres, capsules, cylinders, ellipsoids and boxes from geom_size; other types keep theirs."""
  if not m.ngeom:
    return {}
  s = m.geom_size
  t = m.geom_type
  r, h = s[:, 0], s[:, 1]
  norm = jnp.sqrt(jnp.sum(s * s, axis=1))
  rbound = jnp.select(
    [t == GeomType.SPHERE, t == GeomType.CAPSULE, t == GeomType.CYLINDER,
     t == GeomType.ELLIPSOID, t == GeomType.BOX],
    [r, r + h, jnp.sqrt(r * r + h * h), jnp.max(s, axis=1), norm], m.geom_rbound)
  half = jnp.select(
    [(t == GeomType.SPHERE)[:, None], (t == GeomType.CAPSULE)[:, None],
     (t == GeomType.CYLINDER)[:, None], np.isin(t, (GeomType.ELLIPSOID, GeomType.BOX))[:, None]],
    [jnp.stack([r, r, r], 1), jnp.stack([r, r, r + h], 1), jnp.stack([r, r, h], 1), s],
    m.geom_aabb[:, 3:])
  primitive = np.isin(t, (GeomType.SPHERE, GeomType.CAPSULE, GeomType.CYLINDER,
                          GeomType.ELLIPSOID, GeomType.BOX))[:, None]
  aabb = jnp.where(primitive, jnp.concatenate([jnp.zeros_like(half), half], 1), m.geom_aabb)
  return dict(geom_rbound=rbound, geom_aabb=aabb)


def _dof_m0(m: Model, d):
  """mj_setConst's dof_M0: the diagonal of the rigid-body inertia plus dof armature (no
  actuator or tendon armature), from the composite inertias at qpos0."""
  if not m.nv:
    return jnp.zeros(0, d.qM.dtype)
  force = math.inert_mul(d.crb[m.dof_bodyid], d.cdof)
  return jnp.sum(force * d.cdof, axis=1) + m.dof_armature


def _body_invweight0(m: Model, d, minv, inv_mass):
  """(nbody, 2): mean diagonal of J M^-1 J' of the body's com, translation and rotation."""
  bodies = np.arange(1, m.nbody)
  if not len(bodies) or not m.nv:
    return jnp.zeros((m.nbody, 2), d.qM.dtype)
  jacp, jacr = jax.vmap(lambda p, b: jac(m, d, p, b))(d.xipos[bodies], bodies)
  trn = jnp.einsum("bin,nk,bik->b", jacp, minv, jacp) / 3
  rot = jnp.einsum("bin,nk,bik->b", jacr, minv, jacr) / 3
  w = jnp.stack([trn, rot], axis=1)
  simple = (m.body_simple[bodies] == 2)[:, None]
  w = jnp.where(simple, jnp.stack([inv_mass[bodies], jnp.zeros_like(trn)], axis=1), w)
  w = jnp.where((m.body_weldid[bodies] == 0)[:, None], 0.0, w)
  return jnp.zeros((m.nbody, 2), w.dtype).at[1:].set(w)


def _dof_invweight0(m: Model, minv, inv_mass):
  """(nv,): M^-1's diagonal, averaged over a ball joint's dofs and over each half (translation,
  rotation) of a free joint's; 1 / mass for the dofs of diagonal-mass bodies."""
  nv = m.nv
  if not nv:
    return jnp.zeros(0, minv.dtype)
  # static averaging matrix: dof i takes the mean over its group
  avg = np.eye(nv)
  for j, t in enumerate(m.jnt_type):
    a = m.jnt_dofadr[j]
    groups = {JointType.FREE: [(a, 3), (a + 3, 3)], JointType.BALL: [(a, 3)]}.get(t, [])
    for start, n in groups:
      avg[start:start + n, start:start + n] = 1.0 / n
  w = jnp.asarray(avg, minv.dtype) @ jnp.diag(minv)
  simple = m.body_simple[m.dof_bodyid] == 2
  return jnp.where(simple, inv_mass[m.dof_bodyid], w)
