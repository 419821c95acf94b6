"""Time integration: positions on the joint manifold and MuJoCo's semi-implicit Euler."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.actuation import derivative
from jaxmj.actuation import driver as actuation
from jaxmj.linalg import lu_solve
from jaxmj.platform import by_platform
from jaxmj.scan import cached_plan
from jaxmj.smooth import armature, com, mass, passive, rne, tendon
from jaxmj.smooth.qpos import integrate_pos, qpos_plan
from jaxmj.types import Data, DisableBit, Integrator, JointType, Model


def advance(m: Model, d: Data, qacc: jnp.ndarray, act_dot: jnp.ndarray | None = None) -> Data:
  """mj_advance: act, qvel, qpos and time one step ahead with acceleration qacc and
  activation derivative act_dot (default d.act_dot; see actuation.next_act)."""
  h = m.opt.timestep
  qvel = d.qvel + h * qacc
  return d.replace(
    act=actuation.next_act(m, d, act_dot),
    qvel=qvel,
    qpos=integrate_pos(m, d.qpos, qvel, h),
    time=d.time + h,
    qacc_warmstart=d.qacc,
  )


def euler(m: Model, d: Data) -> Data:
  """mj_Euler: semi-implicit Euler, with joint damping implicit unless eulerdamp is disabled.

  When some dof has damping D, the velocity update uses (M + h D)^-1 (qfrc_smooth +
  qfrc_constraint), which stays stable for stiff damping; as in MuJoCo this is not
  (M + h D)^-1 M qacc when the solver stopped before converging (a few CG or Newton
  iterations), where M qacc != qfrc_smooth + qfrc_constraint. Without damping: qacc.
  Whether some dof has damping is the model's (a value, unknown when tracing), so the factor
  and solve of M + h D are computed and a select keeps qacc where there is none. For a model
  compiled without damping (m.ndamped 0) they run on the CPU under a lax.cond instead, which
  skips them (box_stack, one world: 57 of the step's 522 kernels; in a rollout's gradient,
  their residuals and transposes too) and still applies damping set at run time (under a
  Model batched in it the cond is a select). Models compiled with damping keep the select:
  under the cond the derivatives of their solve cost more (transition Jacobians of
  models/humanoid.xml 1.11-1.18x). Off the CPU a conditional costs the host a read of its
  predicate: the select everywhere.
  Reads qacc, qM, qfrc_smooth, qfrc_constraint; writes qpos, qvel, time, qacc_warmstart.
  """
  qacc = d.qacc
  if m.nv and not m.opt.disabled(DisableBit.EULERDAMP | DisableBit.DAMPER):
    lin, poly = armature.dof_damping(m, d.qvel.dtype)
    damped = jnp.any(lin > 0) | jnp.any(poly != 0)
    damped_qacc = lambda: _damped_qacc(m, d, lin, poly, damped)  # noqa: E731
    if m.ndamped:
      qacc = damped_qacc()
    else:
      qacc = by_platform(cpu=lambda: jax.lax.cond(damped, damped_qacc, lambda: qacc),
                         default=damped_qacc)
  return advance(m, d, qacc)


def _damped_qacc(m: Model, d: Data, lin, poly, damped) -> jnp.ndarray:
  """mj_Euler's qacc: (M + h D)^-1 (qfrc_smooth + qfrc_constraint) where `damped`, else
  d.qacc. lin (nv,), poly (nv, 2): the dofs' damping; damped: a boolean scalar."""
  damping = m.opt.timestep * armature.damper_derivative(lin, poly, d.qvel)
  # the factor's own derivative is not needed: solve_m_tree differentiates through
  # (cinert, cdof, damping), and a tangent of qM + diag(damping) would be nv^2 entries
  ld, diag_inv = mass.factor(m, jax.lax.stop_gradient(d.qM + jnp.diag(damping)))
  qfrc = d.qfrc_smooth + d.qfrc_constraint
  if d.efc_J.shape[0]:
    return jnp.where(damped, mass.solve_m_tree(m, d, qfrc, ld, diag_inv, damping), d.qacc)
  # qacc is qacc_smooth: a tangent takes only the update's own solve (solve_m_tree_select)
  return mass.solve_m_tree_select(m, d, damped, qfrc, ld, diag_inv, damping, d.qacc)


# ------------------------------------------------------------------ RK4 and implicit

RK4_A = ((0.5,), (0.0, 0.5), (0.0, 0.0, 1.0))  # Butcher tableau of mj_RungeKutta(N = 4)
RK4_B = (1 / 6, 1 / 3, 1 / 3, 1 / 6)
RK4_C = (0.5, 0.5, 1.0)


def rk4(m: Model, d: Data, forward) -> Data:
  """mj_RungeKutta (N = 4): RK4 on (qpos, qvel, act), positions on the joint manifold.

  Ball and free rotations use MuJoCo 4.0's Munthe-Kaas form (stage velocities through
  dexp^-1, _dexpinv), 4th order on orientations too.

  `d` holds a completed forward pass (stage 1); `forward` recomputes the later stages
  (MuJoCo's mj_forwardSkip with skipsensor: fields only sensors write, sensordata, cacc,
  cfrc_int, cfrc_ext, stay stage 1's). Stage i sits at qpos = integrate(qpos0,
  h sum_j a_ij v_j), qvel = qvel0 + h sum_j a_ij a_j; the step combines the four stages with
  weights B. Writes qpos, qvel, act, time; as mj_RungeKutta, the other computed fields are
  the last stage's except qacc, the combined acceleration sum_i b_i a_i (qacc_warmstart is
  the last stage's qacc; measured, mujoco 4.0.0).
  """
  h = m.opt.timestep
  d0 = d
  # The three later stages are one lax.scan over the tableau's rows (zero-padded: a padded
  # term adds 0 * 0), so forward is compiled once for them instead of three times.
  a_rows = np.zeros((3, 3))
  for i, a in enumerate(RK4_A):
    a_rows[i, :len(a)] = a
  zeros = lambda x: jnp.zeros((3,) + x.shape, x.dtype)  # noqa: E731
  k0 = (d.qvel, d.qacc, d.act_dot)
  ks = tuple(zeros(x) for x in k0)  # stages 2-4's (velocity, acceleration, act_dot)

  def stage(carry, i):
    d, ks = carry
    a = jnp.asarray(a_rows, d0.qvel.dtype)[i]
    c = jnp.asarray(RK4_C, jnp.result_type(h))[i]
    dv, da, dact = (a[0] * x0 + jnp.tensordot(a[1:], k[:2], 1) for x0, k in zip(k0, ks))
    d = forward(m, d.replace(qpos=integrate_pos(m, d0.qpos, dv, h), qvel=d0.qvel + h * da,
                             act=d0.act + h * dact, time=d0.time + c * h))
    new = (_dexpinv(m, h * dv, d.qvel), d.qacc, d.act_dot)
    return (d, tuple(k.at[i].set(x) for k, x in zip(ks, new))), None

  (d, ks), _ = jax.lax.scan(stage, (d, ks), jnp.arange(3))
  v, a, ad = (RK4_B[0] * x0 + RK4_B[1] * k[0] + RK4_B[2] * k[1] + RK4_B[3] * k[2]
              for x0, k in zip(k0, ks))
  return d.replace(
    qpos=integrate_pos(m, d0.qpos, v, h), qvel=d0.qvel + h * a, qacc=a,
    act=actuation.next_act(m, d0, ad), time=d0.time + h, qacc_warmstart=d.qacc)


def _dexpinv(m: Model, theta: jnp.ndarray, qvel: jnp.ndarray) -> jnp.ndarray:
  """Munthe-Kaas stage velocity: on ball / free rotations the local angular velocity w seen
  from the stage's offset theta = h sum_j a_ij k_j (an so(3) vector) is mapped back to the
  algebra by the exact inverse differential of exp, as MuJoCo 4.0 does (the series cut after
  [theta, [theta, w]] / 12 was 5e-8 off per step at 20 rad/s and h = 0.01):
  k = w + [theta, w] / 2 + c(|theta|) [theta, [theta, w]], c(a) = (1 - (a/2) cot(a/2)) / a^2,
  its Taylor series below |theta| = 0.1 (no 0/0, exact to round-off). Linear dofs unchanged."""
  idx = qpos_plan(m)["quat_v"]
  if not len(idx):
    return qvel
  th, w = theta[idx], qvel[idx]
  c1 = jnp.cross(th, w)
  a2 = jnp.sum(th * th, axis=-1, keepdims=True)
  small = a2 < 1e-2
  a2_safe = jnp.where(small, 1.0, a2)
  half = 0.5 * jnp.sqrt(a2_safe)
  exact = (1.0 - half * jnp.cos(half) / jnp.sin(half)) / a2_safe
  series = 1 / 12 + a2 * (1 / 720 + a2 * (1 / 30240 + a2 / 1209600))
  k = w + 0.5 * c1 + jnp.where(small, series, exact) * jnp.cross(th, c1)
  return qvel.at[idx].set(k)


def deriv_smooth_vel(m: Model, d: Data, flg_bias: bool = False) -> jnp.ndarray:
  """mjd_smooth_vel (MJX's deriv_smooth_vel): the (nv, nv) derivative of the smooth forces
  with respect to qvel (see smooth_vel_derivative), dense, on a Data after `forward` (or
  fwd_velocity). flg_bias: include -d qfrc_bias / d qvel, as MuJoCo's implicit integrator
  does; without it (the default, MJX's) implicitfast's matrix."""
  return smooth_vel_derivative(m, d, bool(flg_bias))


def smooth_vel_derivative(m: Model, d: Data, bias: bool) -> jnp.ndarray:
  """mjd_smooth_vel: (nv, nv) derivative of the smooth forces w.r.t. qvel, in M's sparsity.

  d/dv of qfrc_passive (damping, fluid) + qfrc_actuator, minus qfrc_bias (RNE Coriolis and
  centrifugal terms) when `bias`; by forward-mode differentiation of those stages, so it is
  the exact derivative MuJoCo writes analytically (where MuJoCo drops a term, DC motor LuGre
  friction, actuation/derivative.py drops it too). Entries outside the tree sparsity of M
  (dofs neither ancestor nor descendant of each other) are dropped, as MuJoCo does.
  """
  def smooth(qvel):
    dv = tendon.velocity(m, com.com_vel(m, d.replace(qvel=qvel)))
    dv = passive.passive(m, actuation.velocity(m, dv))
    frc = dv.qfrc_passive
    if m.nactuator:
      frc = frc + actuation.fwd_actuation(m, dv).qfrc_actuator
    if bias:
      frc = frc - rne.rne(m, dv).qfrc_bias
    return frc

  deriv = jax.jacfwd(smooth)(d.qvel)
  # where MuJoCo drops terms: LuGre friction, so3 actuators at their force cap
  fixes = (derivative.dcmotor_correction(m, d), derivative.so3_correction(m, d)) if (
    m.nactuator) else ()
  for fix in fixes:
    deriv = deriv if fix is None else deriv + fix
  anc = np.asarray(m.dof_ancestor, bool)
  return jnp.where(anc | anc.T, deriv, 0.0)


def implicit(m: Model, d: Data) -> Data:
  """mj_implicit: implicit-in-velocity Euler.

  qacc = (M - h D)^-1 (qfrc_smooth + qfrc_constraint), D = smooth_vel_derivative: with the
  RNE derivative and an LU solve (implicit), or without it, symmetrized, through the
  tree-sparse L'DL (implicitfast). Under implicitfast, MuJoCo 4.0 treats a free joint whose
  subtree has no other joints (a free rigid body, free_rigid_dofs) apart: its 6x6 block
  keeps the bias derivative (Coriolis, centrifugal and gyroscopic terms, mjd_freeMhat) and
  is solved densely, so a spinning free body integrates as under implicit. Then
  mj_advance. Reads qM, qfrc_smooth, qfrc_constraint.
  """
  if m.nv == 0:
    return advance(m, d, d.qacc)
  fast = m.opt.integrator == Integrator.IMPLICITFAST
  h = m.opt.timestep
  deriv = smooth_vel_derivative(m, d, bias=not fast)
  force = d.qfrc_smooth + d.qfrc_constraint
  if not fast:
    return advance(m, d, lu_solve(d.qM - h * deriv, force))
  mat = d.qM - h * 0.5 * (deriv + deriv.T)
  ld, diag_inv = mass.factor(m, mat)
  qacc = mass.solve_factored(m, mat, ld, diag_inv, force)
  blocks, mhat = free_body_mhat(m, d, deriv, h)
  if len(blocks):
    qacc = qacc.at[blocks].set(jax.vmap(lu_solve)(mhat, force[blocks]))
  return advance(m, d, qacc)


def free_body_mhat(m: Model, d: Data, deriv: jnp.ndarray, h) -> tuple:
  """(blocks (k, 6) dof ids, mhat (k, 6, 6) or None): implicitfast's own matrix
  qM - h (deriv - d qfrc_bias / d qvel) on each free rigid body's dofs, which MuJoCo solves
  densely (mjd_freeMhat); `deriv` (nv, nv) is the velocity derivative used elsewhere."""
  blocks = free_rigid_dofs(m)
  if not len(blocks):
    return blocks, None
  rows = blocks[:, :, None], blocks[:, None, :]
  return blocks, d.qM[rows] - h * (deriv[rows] - _free_bias_derivative(m, d, blocks))


@cached_plan
def free_rigid_dofs(m) -> np.ndarray:
  """(k, 6) dof ids of the free joints whose subtrees have no other joints (a free rigid
  body, possibly with welded children: mj_isFreeBody)."""
  free = np.flatnonzero(np.asarray(m.jnt_type) == JointType.FREE)
  anc = np.asarray(m.dof_ancestor, bool)
  adr = [m.jnt_dofadr[j] for j in free if anc[:, m.jnt_dofadr[j]].sum() == 6]
  return (np.asarray(adr, np.int32).reshape(-1, 1) + np.arange(6, dtype=np.int32))


def _free_bias_derivative(m: Model, d: Data, blocks: np.ndarray) -> jnp.ndarray:
  """(k, 6, 6) d qfrc_bias / d qvel on each free rigid body's own dofs (mjd_freeBias_vel),
  by forward-mode differentiation of the RNE bias over those dofs only."""
  flat = blocks.reshape(-1)

  def bias(v):
    dv = com.com_vel(m, d.replace(qvel=d.qvel.at[flat].set(v)))
    return rne.rne(m, dv).qfrc_bias[flat]

  k = len(blocks)
  jac = jax.jacfwd(bias)(d.qvel[flat]).reshape(k, 6, k, 6)
  return jac[np.arange(k), :, np.arange(k), :]
