"""Gravity compensation (mj_gravcomp) and fluid forces (mj_fluid: inertia-box and ellipsoid
models).

Both act on bodies and reach the dofs through the body Jacobian (mj_applyFT). The inertia-box
fluid model replaces each body by the uniform box with its mass and principal inertia and
applies, in the box frame (ximat at xipos), Stokes viscous drag (sphere of the box's mean
side) and quadratic drag proportional to the projected areas, with the medium moving at
opt.wind. A body with a geom of fluidshape="ellipsoid" (static body_fluidellipsoid) uses the
ellipsoid model instead: each of its geoms, as the ellipsoid of its semi-axes, gets in its
own frame (geom_xmat at geom_xpos) added-mass (potential flow), Magnus and Kutta lift,
viscous plus quadratic drag and drag torque, scaled by geom_fluid's interaction flag.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.constants import MINVAL
from jaxmj.platform import by_platform
from jaxmj.smooth import kinematics_tangent, rne
from jaxmj.types import Data, DisableBit, GeomType, Model


def semi_axes(gtype: np.ndarray, size, xp=np):
  """mju_geomSemiAxes for every geom: (ngeom, 3) from geom_type (ngeom,) and geom_size
  (ngeom, 3); xp is jax.numpy at run time and numpy in the compiler
  (mjcf/compile/fluid.py)."""
  s0, s1, s2 = size[:, 0], size[:, 1], size[:, 2]
  sphere = gtype == GeomType.SPHERE
  capsule = gtype == GeomType.CAPSULE
  cylinder = gtype == GeomType.CYLINDER
  round_ = sphere | capsule | cylinder
  ax2 = xp.where(sphere, s0, xp.where(capsule, s0 + s1, xp.where(cylinder, s1, s2)))
  return xp.stack([s0, xp.where(round_, s0, s1), ax2], axis=-1)


def apply_ft(m: Model, d: Data, force: jnp.ndarray, torque: jnp.ndarray,
             point: jnp.ndarray) -> jnp.ndarray:
  """mj_applyFT for every body at once: (nv,) generalized force of global force / torque
  (nbody, 3) acting at global points (nbody, 3) of each body."""
  offset = point - d.subtree_com[m.body_rootid]
  return rne.dof_project(m, d, jnp.concatenate([torque + jnp.cross(offset, force), force], -1))


def gravcomp(m: Model, d: Data) -> jnp.ndarray:
  """qfrc_gravcomp (nv,): -gravity * mass * gravcomp applied at each body's com; zero when
  the model was compiled without gravcomp (m.ngravcomp 0: MuJoCo's mj_gravcomp tests
  m->ngravcomp too, so a body_gravcomp set at run time on such a model acts in neither)."""
  if m.nv == 0 or m.ngravcomp == 0 or m.opt.disabled(DisableBit.GRAVITY):
    return jnp.zeros(m.nv, d.qvel.dtype)
  force = -m.opt.gravity[None] * (m.body_mass * m.body_gravcomp)[:, None]
  return apply_ft(m, d, force, jnp.zeros_like(force), d.xipos)


def _box(m: Model) -> jnp.ndarray:
  """(nbody, 3) sides of the uniform box with each body's mass and principal inertia."""
  i0, i1, i2 = m.body_inertia[:, 0], m.body_inertia[:, 1], m.body_inertia[:, 2]
  mass = jnp.where(m.body_mass < MINVAL, 1.0, m.body_mass)
  side = lambda a, b, c: jnp.sqrt(jnp.maximum(MINVAL, a + b - c) / mass * 6.0)
  return jnp.stack([side(i1, i2, i0), side(i0, i2, i1), side(i0, i1, i2)], axis=-1)


def _inertia_box(m: Model, d: Data) -> jnp.ndarray:
  """mj_inertiaBoxFluidModel for every body: (nv,) generalized fluid force."""
  rot = d.ximat
  offset = d.xipos - d.subtree_com[m.body_rootid]
  ang = d.cvel[:, :3]
  lin = d.cvel[:, 3:] + jnp.cross(ang, offset)
  lang = jnp.einsum("bji,bj->bi", rot, ang)
  llin = jnp.einsum("bji,bj->bi", rot, lin - m.opt.wind[None])
  box = _box(m)
  rho, mu = m.opt.density, m.opt.viscosity
  diam = jnp.mean(box, axis=-1, keepdims=True)
  torque = -jnp.pi * diam**3 * mu * lang
  force = -3.0 * jnp.pi * diam * mu * llin
  b0, b1, b2 = box[:, 0], box[:, 1], box[:, 2]
  area = jnp.stack([b1 * b2, b0 * b2, b0 * b1], axis=-1)
  force = force - 0.5 * rho * area * jnp.abs(llin) * llin
  arm = jnp.stack([b0 * (b1**4 + b2**4), b1 * (b0**4 + b2**4), b2 * (b0**4 + b1**4)], -1)
  torque = torque - rho * arm * jnp.abs(lang) * lang / 64.0
  box_bodies = (np.asarray(m.body_weldid) > 0) & ~np.asarray(m.body_fluidellipsoid, bool)
  keep = (m.body_mass >= MINVAL) & box_bodies
  force = jnp.where(keep[:, None], jnp.einsum("bij,bj->bi", rot, force), 0.0)
  torque = jnp.where(keep[:, None], jnp.einsum("bij,bj->bi", rot, torque), 0.0)
  return apply_ft(m, d, force, torque, d.xipos)


def _safe_sqrt(x: jnp.ndarray) -> jnp.ndarray:
  """sqrt with gradient 0 (not inf) at 0."""
  return jnp.where(x > 0, jnp.sqrt(jnp.where(x > 0, x, 1.0)), 0.0)


def _ellipsoid_local(ang: jnp.ndarray, lin: jnp.ndarray, axes: jnp.ndarray,
                     coef: jnp.ndarray, rho, mu) -> tuple[jnp.ndarray, jnp.ndarray]:
  """One geom's fluid (torque, force), each (3,), in its frame from its angular and linear
  velocity relative to the medium (3,), semi-axes (3,) and geom_fluid row (12,):
  mj_addedMassForces (without the qacc term, as MuJoCo) plus mj_viscousForces."""
  blunt, slender, angdrag, kutta, magnus = coef[1], coef[2], coef[3], coef[4], coef[5]
  lin_mom = rho * coef[6:9] * lin
  ang_mom = rho * coef[9:12] * ang
  torque = jnp.cross(lin_mom, lin) + jnp.cross(ang_mom, ang)
  force = jnp.cross(lin_mom, ang)

  volume = 4.0 / 3.0 * jnp.pi * axes[0] * axes[1] * axes[2]
  dmax, dmin = jnp.max(axes), jnp.min(axes)
  dmid = jnp.sum(axes) - dmax - dmin
  area_max = jnp.pi * dmax * dmid
  magnus_force = jnp.cross(ang, lin) * (magnus * rho * volume)
  # products of the other two semi-axes: the ellipsoid's section normal to each axis. The
  # projected area along the velocity is pi sqrt(proj_denom / proj_num), and the Kutta
  # circulation's cos(alpha) * area equals pi |section * v| / (|v| |normal|); MuJoCo 4.0
  # evaluates both scale-free (no mjMINVAL clamp on these small products), as here.
  section = jnp.stack([axes[1] * axes[2], axes[2] * axes[0], axes[0] * axes[1]])
  normal = section**2 * lin
  proj_denom = jnp.sum(normal**2)
  proj_num = jnp.sum((section * lin) ** 2)
  area_proj = jnp.pi * _safe_sqrt(proj_denom / jnp.where(proj_num > 0, proj_num, 1.0))
  speed = math.safe_norm(lin)
  denom = math.safe_norm(normal) * speed
  scale = jnp.pi * math.safe_norm(section * lin) / jnp.where(denom > 0, denom, 1.0)
  circ = jnp.cross(normal, lin) * (kutta * rho * scale)
  kutta_force = jnp.cross(circ, lin)

  sphere_d = 2.0 / 3.0 * jnp.sum(axes)
  inertia_max = 8.0 / 15.0 * jnp.pi * dmid * dmax**4
  other = jnp.maximum(jnp.roll(axes, -1), jnp.roll(axes, -2))
  inertia = 8.0 / 15.0 * jnp.pi * axes * other**4
  mom_visc = ang * (angdrag * inertia + slender * (inertia_max - inertia))
  drag_lin = mu * 3.0 * jnp.pi * sphere_d + rho * speed * (
    area_proj * blunt + slender * (area_max - area_proj))
  drag_ang = mu * jnp.pi * sphere_d**3 + rho * math.safe_norm(mom_visc)
  torque = torque - drag_ang * ang
  force = force + magnus_force + kutta_force - drag_lin * lin
  return coef[0] * torque, coef[0] * force


def _ellipsoid(m: Model, d: Data) -> jnp.ndarray:
  """mj_ellipsoidFluidModel for every geom of the ellipsoid-model bodies: (nv,) force."""
  geoms = np.flatnonzero(np.asarray(m.body_fluidellipsoid, bool)[m.geom_bodyid])
  if not len(geoms):
    return jnp.zeros(m.nv, d.qvel.dtype)
  body = np.asarray(m.geom_bodyid)[geoms]
  rot, pos = d.geom_xmat[geoms], d.geom_xpos[geoms]
  offset = pos - d.subtree_com[m.body_rootid[body]]
  ang = d.cvel[body, :3]
  lin = d.cvel[body, 3:] + jnp.cross(ang, offset)
  lang = jnp.einsum("gji,gj->gi", rot, ang)
  llin = jnp.einsum("gji,gj->gi", rot, lin - m.opt.wind[None])
  axes = semi_axes(np.asarray(m.geom_type)[geoms], m.geom_size[geoms], jnp)
  torque, force = jax.vmap(_ellipsoid_local, in_axes=(0, 0, 0, 0, None, None))(
    lang, llin, axes, m.geom_fluid[geoms], m.opt.density, m.opt.viscosity)
  keep = (m.body_mass[body] >= MINVAL)[:, None]
  force = jnp.where(keep, jnp.einsum("gij,gj->gi", rot, force), 0.0)
  torque = jnp.where(keep, jnp.einsum("gij,gj->gi", rot, torque), 0.0)
  # wrenches about the tree's com-frame origin add up per body before the dof projection
  cfrc = jnp.concatenate([torque + jnp.cross(offset, force), force], axis=-1)
  cfrc_body = jnp.zeros((m.nbody, 6), cfrc.dtype).at[body].add(cfrc)
  return rne.dof_project(m, d, cfrc_body)


def fluid(m: Model, d: Data) -> jnp.ndarray:
  """qfrc_fluid (nv,), mj_fluid: zero when opt.density and opt.viscosity are 0, as MuJoCo
  skips mj_fluid then (they are the model's values, unknown when tracing). On the CPU the
  forces are computed under a lax.cond on them (MJX's humanoid, no medium: 1.1 ms of a
  ~50 ms step at 1024 worlds, 12 of the step's 675 kernels at one world); off the CPU a
  conditional costs the host a read of its predicate, so the forces are computed and are 0
  (every term carries the density or the viscosity). The derivative, unless in the medium
  itself, is taken under a lax.cond on them too: without a medium a tangent then costs
  nothing where it took the body forces' derivatives and their dof projection, all zero."""
  if m.nv == 0:
    return jnp.zeros(m.nv, d.qvel.dtype)

  def forces(m, d):
    return _inertia_box(m, d) + _ellipsoid(m, d)

  def medium(m):
    return (m.opt.density > 0) | (m.opt.viscosity > 0)

  def forces_in_medium(m, d):
    zeros = lambda m, d: jnp.zeros(m.nv, d.qvel.dtype)  # noqa: E731
    return by_platform(cpu=lambda: jax.lax.cond(medium(m), forces, zeros, m, d),
                       default=lambda: forces(m, d))

  @jax.custom_jvp
  def fluid_forces(m, d):
    return forces_in_medium(m, d)

  def fluid_forces_jvp(primals, tangents):
    out = forces_in_medium(*primals)
    dm = tangents[0]
    full = jax.tree.map(kinematics_tangent.instantiate, tangents,
                        is_leaf=kinematics_tangent.symbolic_zero)
    tangent = lambda: jax.jvp(forces, primals, full)[1]  # noqa: E731
    if not (kinematics_tangent.symbolic_zero(dm.opt.density)
            and kinematics_tangent.symbolic_zero(dm.opt.viscosity)):
      return out, tangent()  # at density 0 too, where the medium's derivative is not 0
    return out, jax.lax.cond(medium(primals[0]), tangent, lambda: jnp.zeros_like(out))

  fluid_forces.defjvp(fluid_forces_jvp, symbolic_zeros=True)
  return fluid_forces(m, d)
