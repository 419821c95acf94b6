"""Tangents of the global frames in qpos, in closed form (the rigid-body Jacobian).

Differentiating mj_kinematics' composition (quaternion products level by level, each
product guarded against fused multiply-adds) costs every qpos tangent the whole pass again.
A tangent of qpos moves each body rigidly instead: body b turns with angular velocity w_b
and its points p move by v_b + w_b x p, where (w_b, v_b), its twist at the world origin,
is the sum over the dofs that move it of each dof's motion axis times the dof's velocity
(the dof velocities are qpos's tangent read in MuJoCo's tangent space: a quaternion's
tangent dq as 2 vec(conj(q) dq) / |q|^2 in the local frame, the derivative of its
normalization). Each tangent is a few small products and cross products; no Jacobian is
formed (reverse mode would form it in every step's forward pass).

Model leaves and mocap poses keep their derivatives: where they carry a tangent, that part
comes from the composition's own derivative.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from jaxmj import math
from jaxmj.loops import kept
from jaxmj.scan import body_plan, cached_plan
from jaxmj.types import JointType, Model

# The kinds of frame among kinematics' outputs (xpos, xquat, xmat, xipos, ximat, xanchor,
# xaxis, then geom and site pos, quat, mat), and whose twist moves them.
_KINDS = ("pos", "quat", "mat", "pos", "mat", "pos", "vec") + ("pos", "quat", "mat") * 2


@cached_plan
def _plan(m) -> dict:
  """Static per-dof and per-joint index sets.

  Per dof: `jnt`, `local` (its index in its joint), masks `hinge`, `slide`, `quat_rot`
  (ball and free rotational dofs: axes are columns of the joint's frame), `free_trans`.
  `scalar` (nv, nq): the dof velocity of hinge, slide and free translational dofs (their
  qpos entry); `quat_adr`, `quat_dof`: the quaternion's qpos address and first rotational
  dof of each ball and free joint; `quat_take` (4k, nq) and `quat_put` (nv, 3k) select
  their qpos entries and place their rotational dofs. `joint_dof` (njnt, nv): the dofs that
  move a joint's anchor and axis (those before it; a free joint's own translation moves its
  anchor).
  """
  jnt = np.asarray(m.dof_jntid, int)
  jtype = m.jnt_type[jnt]
  local = np.arange(m.nv) - m.jnt_dofadr[jnt]
  free = jtype == JointType.FREE
  free_trans = free & (local < 3)
  scalar = np.zeros((m.nv, m.nq))
  one = (jtype == JointType.HINGE) | (jtype == JointType.SLIDE) | free_trans
  scalar[np.flatnonzero(one), (m.jnt_qposadr[jnt] + local)[one]] = 1.0
  quat_jnt = np.flatnonzero((m.jnt_type == JointType.BALL) | (m.jnt_type == JointType.FREE))
  is_free = m.jnt_type[quat_jnt] == JointType.FREE
  anc = np.asarray(m.dof_ancestor, bool)
  joint_dof = anc[m.jnt_dofadr].copy()
  joint_dof[np.arange(m.njnt), m.jnt_dofadr] = False
  fj = np.flatnonzero(m.jnt_type == JointType.FREE)
  for k in range(3):
    joint_dof[fj, m.jnt_dofadr[fj] + k] = True
  quat_adr = m.jnt_qposadr[quat_jnt] + 3 * is_free
  quat_dof = m.jnt_dofadr[quat_jnt] + 3 * is_free
  nquat = len(quat_jnt)
  take = np.zeros((4 * nquat, m.nq))
  take[np.arange(4 * nquat), (quat_adr[:, None] + np.arange(4)).ravel()] = 1.0
  put = np.zeros((m.nv, 3 * nquat))
  put[(quat_dof[:, None] + np.arange(3)).ravel(), np.arange(3 * nquat)] = 1.0
  return {"jnt": jnt, "local": local % 3, "hinge": jtype == JointType.HINGE,
          "slide": jtype == JointType.SLIDE, "quat_rot": (jtype == JointType.BALL) | (
            free & (local >= 3)), "free_trans": free_trans, "scalar": scalar,
          "quat_adr": quat_adr, "quat_dof": quat_dof, "quat_take": take, "quat_put": put,
          "joint_dof": joint_dof.astype(np.float64)}


def _dof_axes(m: Model, xanchor, xaxis, jquat) -> jnp.ndarray:
  """(nv, 6) each dof's motion axis (w, v) at the world origin: a unit rate of the dof moves
  a point p by v + w x p. jquat (njnt, 4): the body's quaternion right after each joint."""
  p = _plan(m)
  jnt = p["jnt"]
  col = math.quat_to_mat(jquat)[jnt, :, p["local"]]  # (nv, 3)
  w = jnp.where(p["hinge"][:, None], xaxis[jnt], jnp.where(p["quat_rot"][:, None], col, 0.0))
  v = jnp.cross(xanchor[jnt], w)
  v = jnp.where(p["slide"][:, None], xaxis[jnt], v)
  v = jnp.where(p["free_trans"][:, None], np.eye(3)[p["local"]], v)
  return jnp.concatenate([w, v], axis=-1)


def _quat_rates(m: Model, qpos):
  """(k, 3, 4) per quaternion q (ball, free) the map from its tangent dq to the local angular
  velocity 2 vec(conj(q) dq) / |q|^2 (the derivative of its normalization included)."""
  p = _plan(m)
  q = qpos[p["quat_adr"][:, None] + np.arange(4)]  # (k, 4)
  u = q[:, 1:]
  # vec(conj(q) dq) = q0 dv - dq0 u - u x dv
  g = jnp.concatenate([-u[:, :, None], q[:, 0, None, None] * jnp.eye(3) - math.skew(u)], 2)
  return g * (2.0 / jnp.sum(q * q, -1))[:, None, None]


def _dof_velocities(m: Model, rates, dq):
  """(nv,) the dof velocities of a qpos tangent dq (nq,): its scalar entries, and per
  quaternion its local angular velocity (`rates`: _quat_rates). Constant selections as
  products, so that reverse mode keeps no scatter and transposes each to one product."""
  p = _plan(m)
  dv = jnp.asarray(p["scalar"], dq.dtype) @ dq
  k = len(p["quat_adr"])
  if not k:
    return dv
  dquat = (jnp.asarray(p["quat_take"], dq.dtype) @ dq).reshape(k, 4)
  w = jnp.einsum("kij,kj->ki", rates, dquat)
  return dv + jnp.asarray(p["quat_put"], dq.dtype) @ w.reshape(-1)


def _moved(kind: str, x, t):
  """Tangent of x (a frame part, kind _KINDS) moved by twists t (n, 6) (one per row)."""
  w = t[:, :3]
  if kind == "pos":
    return t[:, 3:] + math.cross(w, x)
  if kind == "vec":
    return math.cross(w, x)
  if kind == "quat":
    return 0.5 * math.quat_mul(jnp.concatenate([jnp.zeros_like(w[:, :1]), w], -1), x)
  return jnp.cross(w[:, :, None], x, axis=-2)  # [w]x mat, column by column


def _qpos_tangent(m: Model, axes, rates, out, dq):
  """Tangents of kinematics' outputs for a qpos tangent dq (nq,), linear in dq: the dofs'
  twists (`axes` (nv, 6) times their velocities) summed over the dofs that move each body
  and joint frame. Applied to dq rather than formed as a (6, nq) Jacobian per body: reverse
  mode then forms nothing per step in its forward pass, and transposes a few products."""
  twist = axes * _dof_velocities(m, rates, dq)[:, None]  # (nv, 6)
  tb = jnp.asarray(body_plan(m)["body_dof"], dq.dtype) @ twist
  tj = jnp.asarray(_plan(m)["joint_dof"], dq.dtype) @ twist
  owner = [None] * 5 + [None, None] + [m.geom_bodyid] * 3 + [m.site_bodyid] * 3
  tans = []
  for i, (kind, x) in enumerate(zip(_KINDS, out)):
    t = tj if i in (5, 6) else tb if owner[i] is None else tb[np.asarray(owner[i], int)]
    tans.append(_moved(kind, x, t))
  return tuple(tans)


def symbolic_zero(t) -> bool:
  """Whether a custom_jvp(symbolic_zeros=True) rule's tangent is a symbolic zero."""
  return isinstance(t, SymbolicZero)


def instantiate(t):
  """A symbolic zero as an array (integer leaves' tangents are float0)."""
  if not symbolic_zero(t):
    return t
  return np.zeros(t.shape, t.dtype) if t.dtype == jax.dtypes.float0 else jnp.zeros(t.shape,
                                                                                   t.dtype)


def frames(fn, m: Model, qpos, mocap_pos, mocap_quat, time):
  """fn(m, qpos, mocap_pos, mocap_quat, time) = (kinematics' outputs, per joint the body's
  quaternion right after it), its outputs differentiated in qpos by the rigid-body
  Jacobian and in everything else by fn's own derivative."""
  if not m.nv:
    return fn(m, qpos, mocap_pos, mocap_quat, time)[0]

  @jax.custom_jvp
  def kin(m, qpos, mocap_pos, mocap_quat, time):
    return fn(m, qpos, mocap_pos, mocap_quat, time)[0]

  def kin_jvp(primals, tangents):
    # kept: the twists read the frames, which rematerializing reverse mode would rebuild
    # level by level from the composition's products (loops.kept)
    out, jquat = kept(fn(*primals))
    dm, dq, *rest = tangents
    if symbolic_zero(dq):
      tan = tuple(jnp.zeros_like(x) for x in out)
    else:
      mp = primals[0]
      axes = _dof_axes(mp, out[5], out[6], jquat)
      tan = _qpos_tangent(mp, axes, _quat_rates(mp, primals[1]), out, dq)
    leaves = jax.tree.leaves((dm, rest), is_leaf=symbolic_zero)
    if not all(map(symbolic_zero, leaves)):
      inst = jax.tree.map(instantiate, (dm, rest), is_leaf=symbolic_zero)
      _, extra = jax.jvp(lambda m, *a: fn(m, primals[1], *a)[0], (primals[0],) + primals[2:],
                         (inst[0],) + tuple(inst[1]))
      tan = tuple(a + b for a, b in zip(tan, extra))
    return out, tan

  kin.defjvp(kin_jvp, symbolic_zeros=True)
  return kin(m, qpos, mocap_pos, mocap_quat, time)
