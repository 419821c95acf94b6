"""mj_setConst on the device: the derived constants of a Model whose masses, inertias or
geometry changed, recomputed in pure JAX (jit, vmap over randomized models, grad).

Uses the runtime's own kinematics, com, tendon, mass and transmission stages at qpos0 (the
host compiler's bit-exact version is jaxmj/mjcf/compile/setconst.py, which the runtime does
not import).
Recomputed as mj_setConst (MuJoCo 4.0) does: body_subtreemass, dof_M0, body_invweight0,
dof_invweight0, tendon_length0, tendon_invweight0, actuator_acc0, cam_pos0, cam_poscom0,
cam_mat0, light_pos0, light_poscom0, light_dir0, dof_length, and geom_rbound/geom_aabb of
primitive geoms from geom_size and of height fields from hfield_size (with their geom_size).
Mesh bounds stay (they come from mesh_vert, host-side; mj_setConst leaves them too).
With from_geoms=True, before those, as recompiling would: body_mass, body_ipos,
body_inertia, body_iquat of the bodies whose inertia the compiler inferred from geoms
(geom_inertia.py says which).
`statistic` gives mjModel.stat as the compiler computes it (m.stat is static).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.actuation import driver as actuation
from jaxmj.constants import MINVAL
from jaxmj.dynamics.geom_inertia import inertia_from_geoms
from jaxmj.dynamics.stages import full_precision
from jaxmj.io import make_data
from jaxmj.smooth import com, kinematics, mass, tendon
from jaxmj.smooth.jac import jac
from jaxmj.types import GeomType, JointType, Model


@full_precision
def set_const(m: Model, from_geoms: bool = False) -> Model:
  """m with its derived constants recomputed from its current leaves (see module doc).

  from_geoms (static): first re-infer body_mass, body_ipos, body_inertia and body_iquat
  from the geoms of the bodies the compiler inferred them for (as recompiling the edited
  model would), so randomized geom sizes or densities move the masses; False (default, as
  mj_setConst): those body fields are taken as they are, so they can be randomized directly.
  """
  m = m.replace(**_geom_bounds(m))
  if from_geoms:
    m = m.replace(**inertia_from_geoms(m))
  d = _qpos0_data(m)
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
  changes.update(_camlight0(m, d), dof_length=_dof_length(m, _body_sizes(m, d)))
  return m.replace(**changes)


def _qpos0_data(m: Model):
  """Data at qpos0 (mocap bodies at their model poses) through kinematics and com_pos."""
  return com.com_pos(m, kinematics.kinematics(m, make_data(m)))


def _camlight0(m: Model, d) -> dict:
  """cam_pos0, cam_poscom0, cam_mat0, light_pos0, light_poscom0, light_dir0: each object's
  global pose at qpos0 as its body carries it, relative to the body origin and to the
  subtree com of its target (its own body without one), light_dir0 normalized, as
  mj_setConst."""
  out = {}
  if m.ncam:
    body, target = m.cam_bodyid, np.where(m.cam_targetbodyid >= 0, m.cam_targetbodyid,
                                          m.cam_bodyid)
    xmat = d.xmat[body]
    off = jnp.einsum("nij,nj->ni", xmat, m.cam_pos)
    pos = d.xpos[body] + off
    out.update(cam_pos0=off, cam_poscom0=pos - d.subtree_com[target],
               cam_mat0=(xmat @ math.quat_to_mat(m.cam_quat)).reshape(-1, 9))
  if m.nlight:
    body, target = m.light_bodyid, np.where(m.light_targetbodyid >= 0,
                                            m.light_targetbodyid, m.light_bodyid)
    xmat = d.xmat[body]
    off = jnp.einsum("nij,nj->ni", xmat, m.light_pos)
    pos = d.xpos[body] + off
    out.update(light_pos0=off, light_poscom0=pos - d.subtree_com[target],
               light_dir0=math.normalize(jnp.einsum("nij,nj->ni", xmat, m.light_dir)))
  return out


def _body_sizes(m: Model, d) -> jax.Array:
  """(nbody,) setStat's body length scale at qpos0: the largest com-to-anchor distance of
  the body's and its children's joints and the largest geom reach (rbound + distance from
  the com), floored at 1e-5; 0 for the world."""
  size = jnp.zeros(m.nbody, d.xipos.dtype)
  if m.njnt:
    jb = m.jnt_bodyid
    for body in (jb, m.body_parentid[jb]):
      size = size.at[body].max(_dist(d.xipos[body], d.xanchor))
  if m.ngeom:
    gb = m.geom_bodyid
    reach = m.geom_rbound + _dist(d.xipos[gb], d.geom_xpos)
    keep = (gb > 0) & (m.geom_rbound > 0)
    size = size.at[gb].max(jnp.where(keep, reach, 0.0))
  return size.at[0].set(0.0).at[1:].max(1e-5)


def _dist(a, b):
  return math.safe_norm(a - b, axis=-1)


def _dof_length(m: Model, size) -> jax.Array:
  """(nv,) mj_setConst's dof_length: 1 for translations, the body size for rotations."""
  rot = np.zeros(m.nv, bool)
  for t, a in zip(m.jnt_type, m.jnt_dofadr):
    n = {JointType.FREE: (3, 6), JointType.BALL: (0, 3), JointType.HINGE: (0, 1)}.get(t)
    if n:
      rot[a + n[0]:a + n[1]] = True
  return jnp.where(rot, size[m.dof_bodyid], 1.0)


def _geom_bounds(m: Model) -> dict:
  """geom_rbound (bounding-sphere radius) and geom_aabb (local box: center, half-sizes) of
  primitive geoms from geom_size, and of height fields from hfield_size (which also sets
  their geom_size), as the compiler and mj_setConst; planes and meshes keep theirs."""
  if not m.ngeom:
    return {}
  t = m.geom_type
  s = m.geom_size
  hf = t == GeomType.HFIELD
  if hf.any():
    h = m.hfield_size[np.where(hf, m.geom_dataid, 0)]
    s = jnp.where(hf[:, None], jnp.stack([h[:, 0], h[:, 1], 0.25 * h[:, 2] + 0.5 * h[:, 3]], 1), s)
  else:
    h = jnp.ones((m.ngeom, 4), s.dtype)
  r, hh = s[:, 0], s[:, 1]
  rbound = jnp.select(
    [t == GeomType.SPHERE, t == GeomType.CAPSULE, t == GeomType.CYLINDER,
     t == GeomType.ELLIPSOID, t == GeomType.BOX, hf],
    [r, r + hh, jnp.sqrt(r * r + hh * hh), jnp.max(s, axis=1), math.safe_norm(s, axis=1),
     jnp.sqrt(h[:, 0] ** 2 + h[:, 1] ** 2 + jnp.maximum(h[:, 2] ** 2, h[:, 3] ** 2))],
    m.geom_rbound)
  zero = jnp.zeros_like(r)
  aabb = jnp.select(
    [(t == GeomType.SPHERE)[:, None], (t == GeomType.CAPSULE)[:, None],
     (t == GeomType.CYLINDER)[:, None], np.isin(t, (GeomType.ELLIPSOID, GeomType.BOX))[:, None],
     hf[:, None]],
    [jnp.stack([zero, zero, zero, r, r, r], 1), jnp.stack([zero, zero, zero, r, r, r + hh], 1),
     jnp.stack([zero, zero, zero, r, r, hh], 1), jnp.concatenate([jnp.zeros_like(s), s], 1),
     jnp.stack([zero, zero, (h[:, 2] - h[:, 3]) / 2, h[:, 0], h[:, 1],
                (h[:, 2] + h[:, 3]) / 2], 1)],
    m.geom_aabb)
  return dict(geom_size=s, geom_rbound=rbound, geom_aabb=aabb)


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


def total_mass(m: Model) -> jax.Array:
  """mj_getTotalmass: the sum of the bodies' masses (the world's excluded)."""
  return jnp.sum(m.body_mass[1:])


def set_total_mass(m: Model, mass) -> Model:
  """mj_setTotalmass: m with every body's mass and inertia scaled by one factor, so that the
  masses sum to `mass` (traced: vmap over randomized totals, grad). As in MuJoCo the
  derived constants are left for `set_const` to recompute (set_const(set_total_mass(m, x)))."""
  scale = jnp.maximum(MINVAL, mass / jnp.maximum(MINVAL, total_mass(m)))
  scale = jnp.where(jnp.arange(m.nbody) > 0, scale, 1.0)
  return m.replace(body_mass=m.body_mass * scale, body_inertia=m.body_inertia * scale[:, None])


def statistic(m: Model) -> dict:
  """mjModel.stat as MuJoCo's compiler computes it at qpos0 from m's current leaves:
  meaninertia (mean diagonal of qM), meanmass and meansize (means over the bodies but the
  world), extent (largest side of the box around bodies, joints, sites and geom bounding
  spheres, at least 2 meansize) as () arrays, center (3,) of that box.

  <statistic> overrides are not known here. m.stat is static renderer data (no physics
  effect; mj_setConst leaves it too), so set_const does not write it: store concrete values
  with m.replace(stat=jaxmj.visual.Statistic(...)).
  """
  m = m.replace(**_geom_bounds(m))
  d = mass.crb(m, tendon.tendon(m, _qpos0_data(m)))
  dt = d.xipos.dtype
  size = _body_sizes(m, d)
  out = dict(meaninertia=jnp.asarray(1.0, dt), meanmass=jnp.asarray(1.0, dt),
             meansize=jnp.asarray(0.2, dt))
  if m.nbody > 1:
    out.update(meansize=jnp.mean(size[1:]), meanmass=jnp.mean(m.body_mass[1:]))
  if m.nv:
    out.update(meaninertia=jnp.mean(jnp.diag(d.qM)))
  lo, hi = _bounding_box(m, d)
  extent = jnp.where(hi[0] > lo[0], jnp.maximum(1e-5, jnp.max(hi - lo)), 2.0)
  out.update(extent=jnp.maximum(extent, 2 * out["meansize"]), center=(lo + hi) / 2)
  return out


def _bounding_box(m: Model, d) -> tuple[jax.Array, jax.Array]:
  """(lo, hi) (3,) of body origins and coms, joint anchors, sites and geom bounding spheres;
  a plane counts with a tenth of its larger half-size (0.01 if infinite)."""
  rbound = m.geom_rbound
  if m.ngeom:
    s = m.geom_size
    plane = (m.geom_type == GeomType.PLANE) & (rbound <= 0)
    sized = jnp.any(s[:, :2] != 0, axis=1)
    rbound = jnp.where(plane, jnp.where(sized, 0.1 * jnp.max(s[:, :2], axis=1), 0.01), rbound)
  points = jnp.concatenate([d.xpos[1:], d.xipos[1:], d.xanchor, d.site_xpos])
  r = rbound[:, None]
  lo = jnp.min(jnp.concatenate([points, d.geom_xpos - r, jnp.full((1, 3), 1e10, r.dtype)]), 0)
  hi = jnp.max(jnp.concatenate([points, d.geom_xpos + r, jnp.full((1, 3), -1e10, r.dtype)]), 0)
  return lo, hi
