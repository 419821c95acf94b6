"""Quaternions, rotations and spatial algebra, on the last axis (leading axes broadcast).

Quaternions are (w, x, y, z). Spatial motion and force vectors are [angular(3), linear(3)].
Norms and normalizations are safe at zero: finite values and finite gradients, because
a NaN gradient from an unselected `where` branch poisons a whole rollout.
"""

from __future__ import annotations

import jax.numpy as jnp

MINVAL = 1e-15  # mjMINVAL: below this a norm counts as zero


def safe_norm(x: jnp.ndarray, axis: int = -1, keepdims: bool = False) -> jnp.ndarray:
  """Euclidean norm whose gradient at 0 is 0 instead of NaN."""
  sq = jnp.sum(x * x, axis=axis, keepdims=keepdims)
  nonzero = sq > 0
  return jnp.where(nonzero, jnp.sqrt(jnp.where(nonzero, sq, 1.0)), 0.0)


def normalize(x: jnp.ndarray, axis: int = -1) -> jnp.ndarray:
  """x / |x|, leaving vectors of norm below MINVAL unchanged."""
  n = safe_norm(x, axis=axis, keepdims=True)
  return jnp.where(n < MINVAL, x, x / jnp.where(n < MINVAL, 1.0, n))


def normalize_quat(q: jnp.ndarray) -> jnp.ndarray:
  """Unit quaternion; a near-zero quaternion becomes the identity (mju_normalize4)."""
  n = safe_norm(q, keepdims=True)
  small = n < MINVAL
  ident = jnp.zeros_like(q).at[..., 0].set(1.0)
  return jnp.where(small, ident, q / jnp.where(small, 1.0, n))


def quat_mul(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
  """Hamilton product a * b."""
  aw, ax, ay, az = (a[..., i] for i in range(4))
  bw, bx, by, bz = (b[..., i] for i in range(4))
  return jnp.stack(
    [
      aw * bw - ax * bx - ay * by - az * bz,
      aw * bx + ax * bw + ay * bz - az * by,
      aw * by - ax * bz + ay * bw + az * bx,
      aw * bz + ax * by - ay * bx + az * bw,
    ],
    axis=-1,
  )


def quat_conj(q: jnp.ndarray) -> jnp.ndarray:
  return q * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def rot_vec_quat(v: jnp.ndarray, q: jnp.ndarray) -> jnp.ndarray:
  """Rotates v by unit quaternion q (mju_rotVecQuat)."""
  w = q[..., :1]
  u = q[..., 1:]
  t = 2.0 * jnp.cross(u, v)
  return v + w * t + jnp.cross(u, t)


def quat_to_mat(q: jnp.ndarray) -> jnp.ndarray:
  """Rotation matrix (..., 3, 3) of a unit quaternion."""
  w, x, y, z = (q[..., i] for i in range(4))
  ww, xx, yy, zz = w * w, x * x, y * y, z * z
  wx, wy, wz, xy, xz, yz = w * x, w * y, w * z, x * y, x * z, y * z
  return jnp.stack(
    [
      jnp.stack([ww + xx - yy - zz, 2 * (xy - wz), 2 * (xz + wy)], axis=-1),
      jnp.stack([2 * (xy + wz), ww - xx + yy - zz, 2 * (yz - wx)], axis=-1),
      jnp.stack([2 * (xz - wy), 2 * (yz + wx), ww - xx - yy + zz], axis=-1),
    ],
    axis=-2,
  )


def axis_angle_to_quat(axis: jnp.ndarray, angle: jnp.ndarray) -> jnp.ndarray:
  """Quaternion rotating by `angle` about unit `axis`; angle has the leading shape."""
  half = 0.5 * angle[..., None]
  return jnp.concatenate([jnp.cos(half), jnp.sin(half) * axis], axis=-1)


def quat_integrate(q: jnp.ndarray, omega: jnp.ndarray, dt) -> jnp.ndarray:
  """Rotates q by local angular velocity omega for time dt (mju_quatIntegrate).

  Uses sin(a/2)/|w| with a series near zero so the gradient at omega = 0 is exact.
  """
  sq = jnp.sum(omega * omega, axis=-1, keepdims=True)
  small = sq < 1e-16
  wnorm = jnp.sqrt(jnp.where(small, 1.0, sq))
  half = 0.5 * dt * wnorm
  # sin(half)/|w| and cos(half); near zero their Taylor series in half^2 = (dt/2)^2 |w|^2,
  # written with |w|^2 itself: sqrt has an infinite derivative at 0, so going through |w|
  # would give a NaN gradient at omega = 0 exactly.
  half_sq = 0.25 * dt * dt * jnp.where(small, sq, 0.0)
  scale = jnp.where(small, 0.5 * dt * (1.0 - half_sq / 6.0), jnp.sin(half) / wnorm)
  cos = jnp.where(small, 1.0 - half_sq / 2.0, jnp.cos(half))
  dq = jnp.concatenate([cos, scale * omega], axis=-1)
  return normalize_quat(quat_mul(q, dq))


def quat_to_axis_angle_vec(q: jnp.ndarray) -> jnp.ndarray:
  """Rotation vector (axis * angle, angle in [-pi, pi]) of a unit quaternion (mju_quat2Vel/dt).

  Gradient-safe at the identity, where the vector is zero.
  """
  w = q[..., :1]
  v = q[..., 1:]
  sin_half = safe_norm(v, keepdims=True)
  angle = 2.0 * jnp.arctan2(sin_half, w)
  angle = jnp.where(angle > jnp.pi, angle - 2.0 * jnp.pi, angle)
  small = sin_half < 1e-12
  # angle / sin(angle/2) -> 2 / w as the rotation vanishes.
  limit = 2.0 / jnp.where(w == 0, 1.0, w)
  factor = jnp.where(small, limit, angle / jnp.where(small, 1.0, sin_half))
  return factor * v


def quat_sub(qa: jnp.ndarray, qb: jnp.ndarray) -> jnp.ndarray:
  """3-vector rotation from qb to qa in qb's frame: qa = qb * exp(res) (mju_subQuat)."""
  return quat_to_axis_angle_vec(quat_mul(quat_conj(qb), qa))


def motion_cross(v: jnp.ndarray, m: jnp.ndarray) -> jnp.ndarray:
  """Spatial motion cross product v x m (mju_crossMotion)."""
  vw, vl = v[..., :3], v[..., 3:]
  mw, ml = m[..., :3], m[..., 3:]
  return jnp.concatenate([jnp.cross(vw, mw), jnp.cross(vw, ml) + jnp.cross(vl, mw)], axis=-1)


def force_cross(v: jnp.ndarray, f: jnp.ndarray) -> jnp.ndarray:
  """Spatial force cross product v x* f (mju_crossForce)."""
  vw, vl = v[..., :3], v[..., 3:]
  fw, fl = f[..., :3], f[..., 3:]
  return jnp.concatenate([jnp.cross(vw, fw) + jnp.cross(vl, fl), jnp.cross(vw, fl)], axis=-1)


def inert_mul(i: jnp.ndarray, v: jnp.ndarray) -> jnp.ndarray:
  """Spatial inertia (10-vector layout of `cinert`) times motion vector (mju_mulInertVec)."""
  ixx, iyy, izz, ixy, ixz, iyz = (i[..., k] for k in range(6))
  h = i[..., 6:9]
  mass = i[..., 9:10]
  w, lin = v[..., :3], v[..., 3:]
  rot = jnp.stack(
    [
      ixx * w[..., 0] + ixy * w[..., 1] + ixz * w[..., 2],
      ixy * w[..., 0] + iyy * w[..., 1] + iyz * w[..., 2],
      ixz * w[..., 0] + iyz * w[..., 1] + izz * w[..., 2],
    ],
    axis=-1,
  )
  return jnp.concatenate([rot + jnp.cross(h, lin), mass * lin - jnp.cross(h, w)], axis=-1)


def inert_com(
  inertia: jnp.ndarray, mat: jnp.ndarray, offset: jnp.ndarray, mass: jnp.ndarray
) -> jnp.ndarray:
  """Body inertia expressed about a point `offset` away from its com (mju_inertCom).

  inertia: (..., 3) principal moments; mat: (..., 3, 3) principal axes in global frame;
  offset: (..., 3) com minus reference point; mass: (...,). Returns the (..., 10) layout
  [Ixx, Iyy, Izz, Ixy, Ixz, Iyz, m*offset, m].
  """
  rot = jnp.einsum("...ij,...j,...kj->...ik", mat, inertia, mat)
  m = mass[..., None]
  d = offset
  d2 = jnp.sum(d * d, axis=-1, keepdims=True)
  full = rot + m[..., None] * (d2[..., None] * jnp.eye(3) - d[..., :, None] * d[..., None, :])
  return jnp.concatenate(
    [
      jnp.stack([full[..., 0, 0], full[..., 1, 1], full[..., 2, 2]], axis=-1),
      jnp.stack([full[..., 0, 1], full[..., 0, 2], full[..., 1, 2]], axis=-1),
      m * d,
      m,
    ],
    axis=-1,
  )
