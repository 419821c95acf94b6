"""Armature and damping beyond the dofs' own: actuator reflection and tendon armature.

MuJoCo 4.0 reflects an actuator's armature, damping and dampingpoly, times gear[0]^2, onto
the joint (every dof of it) or tendon it drives (mj_actuatorArmature, mj_actuatorDamping;
the targets are the static jnt_actuatorid / tendon_actuatorid, see mjcf/armature.py).

A tendon with armature a (its own plus its actuators') is an inertia along its length:
kinetic energy a (ten_J qvel)^2 / 2. It adds a ten_J' ten_J to qM (mj_tendonArmature),
restricted to qM's tree sparsity as MuJoCo does: entries between dofs of different branches
are dropped. Its Coriolis term a (d/dt ten_J . qvel) ten_J' joins qfrc_bias (mj_tendonBias).
Fixed tendons have d/dt ten_J = 0; for a spatial tendon each straight segment between two
sites of different bodies contributes, with u the unit segment direction, L its length and
dv, da the relative velocity and velocity-product acceleration (qacc = 0) of its ends,
  d/dt ten_J . qvel = u . da + (|dv|^2 - (u . dv)^2) / L,   divided by the pulley divisor.
Geom wraps are rejected by the compiler, as by MuJoCo.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.constants import MINVAL
from jaxmj.scan import body_plan, cached_plan
from jaxmj.smooth import tendon
from jaxmj.types import Data, JointType, Model, TrnType

_NDOF = {JointType.FREE: 6, JointType.BALL: 3}


@cached_plan
def _plan(m) -> dict:
  """Static pairs (actuator, dof) and (actuator, tendon) of the reflecting actuators, the
  tendons with armature, and the site-site segments of those tendons whose ends move with
  different bodies (the only ones with a d/dt ten_J)."""
  jnt_act, jnt_dof, ten_act, ten_ten = [], [], [], []
  for k in range(m.nactuator):
    trn, target = m.actuator_trntype[k], int(m.actuator_trnid[k, 0])
    if trn in (TrnType.JOINT, TrnType.JOINTINPARENT) and m.jnt_actuatorid[target] != -1:
      n = _NDOF.get(int(m.jnt_type[target]), 1)
      jnt_act += [k] * n
      jnt_dof += range(m.jnt_dofadr[target], m.jnt_dofadr[target] + n)
    elif trn == TrnType.TENDON and m.tendon_actuatorid[target] != -1:
      ten_act.append(k)
      ten_ten.append(target)
  arm_ten = np.flatnonzero(m.tendon_hasarmature) if m.ntendon else np.zeros(0, int)
  seg = np.zeros(0, int)
  if len(arm_ten):
    p = tendon.path_plan(m)
    bodies = np.asarray(m.site_bodyid)[p.ss_site]
    seg = np.flatnonzero(np.isin(p.ss_ten, arm_ten) & (bodies[:, 0] != bodies[:, 1]))
  i32 = lambda v: np.asarray(v, np.int32)
  return {"jnt_act": i32(jnt_act), "jnt_dof": i32(jnt_dof), "ten_act": i32(ten_act),
          "ten_ten": i32(ten_ten), "arm_ten": i32(arm_ten), "seg": i32(seg)}


def _reflected(m: Model, act: np.ndarray, target: np.ndarray, n: int, dtype):
  """(armature (n,), damping (n,), dampingpoly (n, 2)) reflected by actuators `act` onto
  targets `target`: each actuator's values times its gear[0]^2, summed per target."""
  gear2 = m.actuator_gear[m.actuator_outadr[act], 0] ** 2
  arm = jnp.zeros(n, dtype).at[target].add(m.actuator_armature[act] * gear2)
  damp = jnp.zeros(n, dtype).at[target].add(m.actuator_damping[act] * gear2)
  poly = jnp.zeros((n, 2), dtype).at[target].add(m.actuator_dampingpoly[act] * gear2[:, None])
  return arm, damp, poly


def dof_damping(m: Model, dtype=jnp.float64) -> tuple[jnp.ndarray, jnp.ndarray]:
  """(nv,) linear and (nv, 2) quadratic, cubic damping of each dof: dof_damping plus what
  its joint's actuators reflect (mj_actuatorDamping on joints)."""
  p = _plan(m)
  _, damp, poly = _reflected(m, p["jnt_act"], p["jnt_dof"], m.nv, dtype)
  return m.dof_damping + damp, m.dof_dampingpoly + poly


def tendon_damping(m: Model, dtype=jnp.float64) -> tuple[jnp.ndarray, jnp.ndarray]:
  """(ntendon,) linear and (ntendon, 2) quadratic, cubic tendon damping, actuators' included."""
  p = _plan(m)
  _, damp, poly = _reflected(m, p["ten_act"], p["ten_ten"], m.ntendon, dtype)
  return m.tendon_damping + damp, m.tendon_dampingpoly + poly


def damper_force(b, poly, v):
  """MuJoCo's polynomial damper: -(b v + b2 v |v| + b3 v^3)."""
  return -(b * v + poly[..., 0] * v * jnp.abs(v) + poly[..., 1] * v * v * v)


def damper_derivative(b, poly, v):
  """d/dv of -damper_force (mjd_xPolyForce): b + 2 b2 |v| + 3 b3 v^2."""
  return b + 2 * poly[..., 0] * jnp.abs(v) + 3 * poly[..., 1] * v * v


def _inertia_terms(m: Model, ten_J: jnp.ndarray, dtype):
  """The actuators' armature on joint dofs (nv,) and the tendon armature term
  a ten_J' ten_J (nv, nv) in qM's tree sparsity; None where the model has none."""
  p = _plan(m)
  arm = None
  if len(p["jnt_act"]):
    arm = _reflected(m, p["jnt_act"], p["jnt_dof"], m.nv, dtype)[0]
  ten, tendon_term = p["arm_ten"], None
  if len(ten):
    jac = ten_J[ten]
    tree = np.asarray(m.dof_ancestor, bool)
    tendon_term = jnp.where(tree | tree.T, jac.T @ (tendon_armature(m, dtype)[ten, None] * jac),
                            0.0)
  return arm, tendon_term


def add_inertia(m: Model, d: Data, qm: jnp.ndarray) -> jnp.ndarray:
  """qM (nv, nv) plus the actuators' armature on joint dofs (part of mj_crb in MuJoCo) and
  the tendon armature term a ten_J' ten_J in qM's sparsity (mj_tendonArmature).

  Reads ten_J. Returns qm itself for models without either."""
  arm, tendon_term = _inertia_terms(m, d.ten_J, qm.dtype)
  if arm is not None:
    qm = qm + jnp.diag(arm)
  if tendon_term is not None:
    qm = qm + tendon_term
  return qm


def mul_inertia(m: Model, ten_J: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
  """add_inertia's terms times x (nv,), without adding them to a matrix. ten_J: (ntendon, nv)."""
  arm, tendon_term = _inertia_terms(m, ten_J, x.dtype)
  out = jnp.zeros_like(x)
  if arm is not None:
    out = out + arm * x
  if tendon_term is not None:
    out = out + tendon_term @ x
  return out


def tendon_armature(m: Model, dtype=jnp.float64) -> jnp.ndarray:
  """(ntendon,) tendon_armature plus the armature its actuators reflect."""
  p = _plan(m)
  arm, _, _ = _reflected(m, p["ten_act"], p["ten_ten"], m.ntendon, dtype)
  return m.tendon_armature + arm


def tendon_bias(m: Model, d: Data) -> Data:
  """mj_tendonBias: qfrc_bias += ten_J' (armature * d/dt ten_J . qvel).

  Reads ten_J, site_xpos, subtree_com, cvel, cdof_dot, qvel (after rne).
  """
  p = _plan(m)
  if not len(p["arm_ten"]):
    return d
  coef = tendon_armature(m, d.qvel.dtype) * jdot_qvel(m, d)
  ten = p["arm_ten"]
  return d.replace(qfrc_bias=d.qfrc_bias + coef[ten] @ d.ten_J[ten])


def jdot_qvel(m: Model, d: Data) -> jnp.ndarray:
  """(ntendon,) d/dt ten_J . qvel of the tendons with armature (zero for the others): the
  tendon's length acceleration at qacc = 0 (mj_tendonDot . qvel)."""
  p = _plan(m)
  out = jnp.zeros(m.ntendon, d.qvel.dtype)
  seg = p["seg"]
  if not len(seg):
    return out
  path = tendon.path_plan(m)
  sites = path.ss_site[seg]
  x0, x1 = d.site_xpos[sites[:, 0]], d.site_xpos[sites[:, 1]]
  v0, a0 = _point_motion(m, d, m.site_bodyid[sites[:, 0]], x0)
  v1, a1 = _point_motion(m, d, m.site_bodyid[sites[:, 1]], x1)
  dif = x1 - x0
  norm = math.safe_norm(dif)
  far = norm >= MINVAL
  safe = jnp.where(far, norm, 1.0)
  u = jnp.where(far[:, None], dif / safe[:, None], jnp.array([1.0, 0.0, 0.0], dif.dtype))
  dv = v1 - v0
  along = jnp.sum(u * dv, axis=-1)
  turn = jnp.where(norm > MINVAL, (jnp.sum(dv * dv, axis=-1) - along * along) / safe, 0.0)
  value = jnp.sum(u * (a1 - a0), axis=-1) + turn
  divisor = tendon.pulley_divisor(m.wrap_prm, path.ss_div[seg], jnp)
  return out.at[path.ss_ten[seg]].add(value / divisor)


def _point_motion(m: Model, d: Data, body: np.ndarray, x: jnp.ndarray):
  """Velocity and velocity-product acceleration (qacc = 0) of points x (n, 3) fixed to
  `body` (n,), world frame: v = v_c + w x r, a = a_c + alpha x r + w x v with r = x - c and
  c the com of the body's tree (cvel's origin); (alpha, a_c) = sum cdof_dot qvel."""
  r = x - d.subtree_com[m.body_rootid[body]]
  w, vc = d.cvel[body, :3], d.cvel[body, 3:]
  v = vc + jnp.cross(w, r)
  moves = jnp.asarray(body_plan(m)["body_dof"][body], d.qvel.dtype)
  acc = moves @ (d.cdof_dot * d.qvel[:, None])
  a = acc[:, 3:] + jnp.cross(acc[:, :3], r) + jnp.cross(w, v)
  return v, a
