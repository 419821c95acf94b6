"""Quaternions, rotations and spatial algebra, on the last axis (leading axes broadcast).

Quaternions are (w, x, y, z). Spatial motion and force vectors are [angular(3), linear(3)].
Norms and normalizations are safe at zero: finite values and finite gradients, because
a NaN gradient from an unselected `where` branch poisons a whole rollout.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from jaxmj.constants import MINVAL
from jaxmj.platform import by_platform

# XLA:CPU fuses a concatenate with the ops around it only up to this many operands
# (kMaxConcatenateArguments, cpu_instruction_fusion.cc); a wider one runs on its own and
# makes a kernel of every operand's producer (17 for a stack of a body tree's rows).
_FUSED_CONCAT_MAX = 8


def stack(xs, axis: int = 0) -> jnp.ndarray:
  """jnp.stack(xs, axis), built of stacks of at most 8 operands, which XLA:CPU fuses with
  the ops that make them (one loop kernel). The groups are stacked on a new axis and
  reshaped, which XLA's simplifier does not merge back into one wide concatenate."""
  xs = list(xs)
  if len(xs) <= _FUSED_CONCAT_MAX:
    return jnp.stack(xs, axis)
  n, width = len(xs), _FUSED_CONCAT_MAX
  xs += [jnp.zeros_like(xs[0])] * (-n % width)
  groups = stack([jnp.stack(xs[i:i + width]) for i in range(0, len(xs), width)])
  flat = groups.reshape((groups.shape[0] * groups.shape[1],) + groups.shape[2:])
  return jnp.moveaxis(flat[:n], 0, axis)


def concatenate(xs, axis: int = 0) -> jnp.ndarray:
  """jnp.concatenate(xs, axis) of float arrays as one elementwise expression that XLA:CPU
  fuses with the ops making the parts, however many: each part padded with -0.0 to its
  place and the pads summed (x + -0.0 is x, bit for bit, -0.0 included). For parts that are
  concatenates themselves, which XLA would merge with the outer one into one wide one."""
  n, at, out = sum(x.shape[axis] for x in xs), 0, None
  for x in xs:
    w = x.shape[axis]
    cfg = [(0, 0, 0)] * x.ndim
    cfg[axis % x.ndim] = (at, n - at - w, 0)
    x = lax.pad(x, jnp.asarray(-0.0, x.dtype), cfg)
    out, at = x if out is None else out + x, at + w
  return out


def place(vals: jnp.ndarray, idx, n: int) -> jnp.ndarray:
  """(n, ...) zeros with the rows of vals (k, ...) at the distinct static indices idx (k,).
  Off the CPU as one static gather, which a GPU fuses with its consumer, where a scatter into
  zeros is a kernel of its own (and a copy where the zeros are shared); on the CPU the
  scatter, which XLA:CPU runs faster than a gather of batched data (MJX's humanoid at batch
  256: 1.11x the step's CPU time with gathers here and in `set_at`)."""
  def scatter(vals):
    return jnp.zeros((n,) + vals.shape[1:], vals.dtype).at[idx].set(vals, unique_indices=True)

  return by_platform(vals, cpu=scatter, default=lambda vals: place_gather(vals, idx, n))


def place_gather(vals: jnp.ndarray, idx, n: int) -> jnp.ndarray:
  """`place` as one static gather on every platform (vals (k, ...), idx (k,) distinct)."""
  at = np.full(n, len(idx))
  at[np.asarray(idx)] = np.arange(len(idx))
  return jnp.concatenate([vals, jnp.zeros((1,) + vals.shape[1:], vals.dtype)])[at]


def static_mask(n: int, idx) -> np.ndarray:
  """(n,) numpy bool, True at the static indices `idx` (any shape): the mask of a select
  that places values where a scatter would (see `place`), or a static set of rows (the
  solver's cone and noslip rows)."""
  mask = np.zeros(n, bool)
  mask[np.asarray(idx).reshape(-1)] = True
  return mask


def set_at(x: jnp.ndarray, idx, vals: jnp.ndarray) -> jnp.ndarray:
  """x.at[idx].set(vals) for distinct static indices idx (k,) of x's first axis; vals (k, ...)
  cast to x's dtype. Off the CPU a static gather and a select (see `place`)."""
  mask = static_mask(len(x), idx).reshape((-1,) + (1,) * (x.ndim - 1))
  vals = vals.astype(x.dtype)
  return by_platform(
    x, vals, cpu=lambda x, vals: x.at[idx].set(vals, unique_indices=True),
    default=lambda x, vals: jnp.where(mask, place(vals, idx, len(x)), x))


def safe_norm(x: jnp.ndarray, axis: int = -1, keepdims: bool = False) -> jnp.ndarray:
  """Euclidean norm whose gradient at 0 is 0 instead of NaN."""
  sq = jnp.sum(x * x, axis=axis, keepdims=keepdims)
  nonzero = sq > 0
  return jnp.where(nonzero, jnp.sqrt(jnp.where(nonzero, sq, 1.0)), 0.0)


def normalize(x: jnp.ndarray, axis: int = -1) -> jnp.ndarray:
  """x / |x|, leaving vectors of norm below MINVAL unchanged."""
  n = safe_norm(x, axis=axis, keepdims=True)
  return jnp.where(n < MINVAL, x, x / jnp.where(n < MINVAL, 1.0, n))


def opaque_zero(x: jnp.ndarray) -> jnp.ndarray:
  """An unsigned-integer zero of x's width that the compiler cannot prove zero: the sign bit
  of x, which the caller knows is not negative (a sum of squares of traced data; never |x|,
  whose sign bit LLVM knows is clear, so that the guard folds away)."""
  u = jnp.uint64 if x.dtype == jnp.float64 else jnp.uint32
  return lax.shift_right_logical(lax.bitcast_convert_type(x, u), u(8 * x.dtype.itemsize - 1))


def nofma(p: jnp.ndarray, z: jnp.ndarray | None) -> jnp.ndarray:
  """Product p rounded on its own, never fused into the sum it feeds (z: `opaque_zero`).

  XLA contracts a*b + c into one fused multiply-add (one rounding where MuJoCo rounds
  twice); a bit-level identity the compiler cannot see through (p's bits or z) keeps p
  apart. Values and derivatives are p's. z=None: no guard.
  """
  return p if z is None else _nofma(p, z)


@jax.custom_jvp
def _nofma(p, z):
  return _guard(p, z)


@_nofma.defjvp
def _nofma_jvp(primals, tangents):
  return _nofma(*primals), tangents[0]


def _guard(p, z):
  return lax.bitcast_convert_type(lax.bitcast_convert_type(p, z.dtype) | z, p.dtype)


def nofma_all(ps, z: jnp.ndarray | None) -> list:
  """`nofma` of each of the products ps in one derivative rule (the component forms' many
  small products: a rule each would make tracing them the cost)."""
  return list(ps) if z is None else list(_nofma_all(tuple(ps), z))


@jax.custom_jvp
def _nofma_all(ps, z):
  return tuple(_guard(p, z) for p in ps)


@_nofma_all.defjvp
def _nofma_all_jvp(primals, tangents):
  return _nofma_all(*primals), tangents[0]


@jax.custom_jvp
def _normalize4(q: jnp.ndarray, z) -> jnp.ndarray:
  p = nofma(q * q, z)
  sq = (p[..., 0] + p[..., 1]) + (p[..., 2] + p[..., 3])
  n = jnp.sqrt(sq)[..., None]  # the rule below gives the derivative, finite at 0
  ident = jnp.zeros_like(q).at[..., 0].set(1.0)
  scaled = jnp.where(jnp.abs(n - 1.0) > MINVAL, q * (1.0 / n), q)
  return jnp.where(n < MINVAL, ident, scaled)


@_normalize4.defjvp
def _normalize4_jvp(primals, tangents):
  q, z = primals
  t = tangents[0]
  out = _normalize4(q, z)
  n = safe_norm(q, keepdims=True)
  ok = n >= MINVAL
  u = q / jnp.where(ok, n, 1.0)
  dt = (t - u * jnp.sum(u * t, axis=-1, keepdims=True)) / jnp.where(ok, n, 1.0)
  return out, jnp.where(ok, dt, 0.0)


def normalize_quat(q: jnp.ndarray, z: jnp.ndarray | None = None) -> jnp.ndarray:
  """Unit quaternion as mju_normalize4: q * (1/|q|), kept as is when |q| is within MINVAL
  of 1, the identity when |q| < MINVAL. Gradients are those of q/|q| (zero at the identity
  fallback), also where the value is kept. z: `nofma` guard (bit-equal to MuJoCo)."""
  return _normalize4(q, z)


def _products(a, b, z):
  """p(i, j) = a_i b_j over the last axes of a and b, each product rounded on its own
  (`nofma`): one outer product, read by slices (index gathers would not vectorize)."""
  outer = nofma(a[..., :, None] * b[..., None, :], z)
  lead = outer.ndim - 2
  # outer[..., i, j] as the slice and squeeze its indexing stages, without jnp's parsing of
  # the index (~60 us a read at trace time; a step reads ~800 of these)
  return lambda i, j: lax.squeeze(
    lax.slice(outer, (0,) * lead + (i, j), outer.shape[:lead] + (i + 1, j + 1)), (lead, lead + 1))


@jax.custom_jvp
def quat_mul(a: jnp.ndarray, b: jnp.ndarray, z: jnp.ndarray | None = None) -> jnp.ndarray:
  """Hamilton product a * b, in mju_mulQuat's order of operations:
  r0 = (a0b0 - a1b1) - (a2b2 + a3b3), r1 = (a0b1 + a1b0) + (a2b3 - a3b2),
  r2 = (a0b2 - a1b3) + (a2b0 + a3b1), r3 = (a0b3 + a1b2) + (a3b0 - a2b1)."""
  a, b = jnp.broadcast_arrays(a, b)
  return jnp.stack(_quat_mul_sums(_products(a, b, z)), axis=-1)


def _quat_mul_sums(p):
  """mju_mulQuat's four sums of the products p(i, j) = a_i b_j."""
  return [(p(0, 0) - p(1, 1)) - (p(2, 2) + p(3, 3)), (p(0, 1) + p(1, 0)) + (p(2, 3) - p(3, 2)),
          (p(0, 2) - p(1, 3)) + (p(2, 0) + p(3, 1)), (p(0, 3) + p(1, 2)) + (p(3, 0) - p(2, 1))]


@quat_mul.defjvp
def _quat_mul_jvp(primals, tangents):
  a, b, z = primals
  da, db, _ = tangents
  a, b, da, db = jnp.broadcast_arrays(a, b, da, db)
  return quat_mul(a, b, z), _linear(_quat_left(a), db) + _linear(_quat_right(b), da)


def _quat_left(a):
  """(..., 4, 4) matrix of quat_mul(a, .): quat_mul(a, b) = _quat_left(a) b."""
  a0, a1, a2, a3 = jnp.unstack(a, axis=-1)
  return _rows([[a0, -a1, -a2, -a3], [a1, a0, -a3, a2], [a2, a3, a0, -a1], [a3, -a2, a1, a0]])


def _quat_right(b):
  """(..., 4, 4) matrix of quat_mul(., b): quat_mul(a, b) = _quat_right(b) a."""
  b0, b1, b2, b3 = jnp.unstack(b, axis=-1)
  return _rows([[b0, -b1, -b2, -b3], [b1, b0, b3, -b2], [b2, -b3, b0, b1], [b3, b2, -b1, b0]])


def _rows(entries) -> jnp.ndarray:
  """A (..., r, c) matrix from nested lists of (...) entries."""
  return jnp.stack([jnp.stack(row, axis=-1) for row in entries], axis=-2)


def _linear(mat, t):
  """mat (..., r, c) applied to tangent t (..., c) by a product and a sum: the derivative
  rules of this module keep tangents whole, as a slice of a tangent transposes to one pad
  per slice in reverse mode (on the CPU one op each)."""
  return jnp.sum(mat * t[..., None, :], axis=-1)


def skew(u):
  """(..., 3, 3) cross-product matrix of u (..., 3): skew(u) v = u x v."""
  u0, u1, u2 = jnp.unstack(u, axis=-1)
  zero = jnp.zeros_like(u0)
  return _rows([[zero, -u2, u1], [u2, zero, -u0], [-u1, u0, zero]])


@jax.custom_jvp
def cross(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
  """a x b over the last axis (..., 3): jnp.cross's values, with a derivative that keeps
  tangents whole (jnp.cross's own slices each transpose to a pad in reverse mode)."""
  return jnp.cross(a, b)


@cross.defjvp
def _cross_jvp(primals, tangents):
  # d(a x b) = a x db - b x da = [a] db - [b] da
  (a, b), (da, db) = primals, tangents
  return cross(a, b), _linear(skew(a), db) - _linear(skew(b), da)


@jax.custom_jvp
def cross_nofma(a: jnp.ndarray, b: jnp.ndarray, z: jnp.ndarray) -> jnp.ndarray:
  """a x b over the last axis (..., 3) as mju_cross rounds it: each product on its own (z:
  `nofma` guard). Derivatives as jnp.cross's (cheaper in forward mode than `cross`'s rule,
  which XLA:CPU broadcasts over every tangent)."""
  p = _products(a, b, z)
  return jnp.stack([p(1, 2) - p(2, 1), p(2, 0) - p(0, 2), p(0, 1) - p(1, 0)], axis=-1)


@cross_nofma.defjvp
def _cross_nofma_jvp(primals, tangents):
  (a, b, z), (da, db, _) = primals, tangents
  return cross_nofma(a, b, z), jnp.cross(da, b) + jnp.cross(a, db)


def quat_conj(q: jnp.ndarray) -> jnp.ndarray:
  return q * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


@jax.custom_jvp
def rot_vec_quat(v: jnp.ndarray, q: jnp.ndarray, z: jnp.ndarray | None = None) -> jnp.ndarray:
  """Rotates v by unit quaternion q: v + 2 u x t, t = w v + u x v, u = q[1:], in
  mju_rotVecQuat's order of operations (t0 = (w v0 + u1 v2) - u2 v1, r0 = u1 t2 - u2 t1,
  then (r0 + r0) + v0, ...)."""
  v, q = jnp.broadcast_arrays(v, q[..., :1])[0], jnp.broadcast_arrays(q, v[..., :1])[0]
  t = jnp.stack(_rot_t(_products(q, v, z)), axis=-1)
  r = jnp.stack(_rot_r(_products(q, t, z)), axis=-1)
  return (r + r) + v


def _rot_t(p):
  """mju_rotVecQuat's t = w v + u x v from p(i, j) = q_i v_j."""
  return [(p(0, 0) + p(2, 2)) - p(3, 1), (p(0, 1) + p(3, 0)) - p(1, 2),
          (p(0, 2) + p(1, 1)) - p(2, 0)]


def _rot_r(p):
  """mju_rotVecQuat's u x t from p(i, j) = q_i t_j."""
  return [p(2, 2) - p(3, 1), p(3, 0) - p(1, 2), p(1, 1) - p(2, 0)]


@rot_vec_quat.defjvp
def _rot_vec_quat_jvp(primals, tangents):
  # f = v + 2 u x t, t = w v + u x v (q = (w, u)), differentiated with whole tangents:
  # df = (I + 2w[u] + 2[u]^2) dv + 2 (u x v) dw - 2 ([t] + [u][v]) du, [a]: a's cross-product
  # matrix, [a][b] = b a^T - (a.b) I.
  v, q, z = primals
  dv, dq, _ = tangents
  v, dv = (jnp.broadcast_arrays(x, q[..., :1])[0] for x in (v, dv))
  q, dq = (jnp.broadcast_arrays(x, v[..., :1])[0] for x in (q, dq))
  w, u = q[..., :1, None], q[..., 1:]
  t = q[..., :1] * v + jnp.cross(u, v)
  eye = jnp.eye(3, dtype=v.dtype)
  uu = u[..., :, None] * u[..., None, :] - jnp.sum(u * u, -1)[..., None, None] * eye
  uv = v[..., :, None] * u[..., None, :] - jnp.sum(u * v, -1)[..., None, None] * eye
  jv = eye + 2 * w * skew(u) + 2 * uu
  jq = jnp.concatenate([2 * jnp.cross(u, v)[..., None], -2 * (skew(t) + uv)], axis=-1)
  return rot_vec_quat(v, q, z), _linear(jv, dv) + _linear(jq, dq)


def mat_vec3(mat: jnp.ndarray, v: jnp.ndarray, z: jnp.ndarray | None = None) -> jnp.ndarray:
  """(..., 3, 3) matrix times (..., 3) vector, each row summed left to right (mju_mulMatVec3)."""
  p = nofma(mat * v[..., None, :], z)
  return (p[..., 0] + p[..., 1]) + p[..., 2]


@jax.custom_jvp
def quat_to_mat(q: jnp.ndarray, z: jnp.ndarray | None = None) -> jnp.ndarray:
  """Rotation matrix (..., 3, 3) of a unit quaternion, in mju_quat2Mat's order of operations:
  diagonal (ww - yy) + (xx - zz), (ww + yy) - (xx + zz), (ww - yy) - (xx - zz); off-diagonal
  twice (xy - wz) and so on."""
  # fast arithmetic stacks the entries flat: XLA:CPU then computes each entry's products in
  # that entry's own kernel, fused into its sums as they have always rounded (camlight's
  # frames); `stack` fuses the entries into one kernel with the products apart
  entries = quat_to_mat_entries(q, z)
  mat = jnp.stack(entries, axis=-1) if z is None else stack(entries, axis=-1)
  return mat.reshape(q.shape[:-1] + (3, 3))


@quat_to_mat.defjvp
def _quat_to_mat_jvp(primals, tangents):
  q, z = primals
  w, x, y, zz = jnp.unstack(q + q, axis=-1)  # each entry's gradient, (w, x, y, z) order
  jac = _rows([[w, x, -y, -zz], [-zz, y, x, -w], [y, zz, w, x],
               [zz, y, x, w], [w, -x, y, -zz], [-x, -w, zz, y],
               [-y, zz, -w, x], [x, w, zz, y], [w, -x, -y, zz]])
  dmat = _linear(jac, tangents[0])
  return quat_to_mat(q, z), dmat.reshape(q.shape[:-1] + (3, 3))


def quat_to_mat_entries(q: jnp.ndarray, z: jnp.ndarray | None = None) -> list[jnp.ndarray]:
  """`quat_to_mat`'s nine entries, row-major, each of q's leading shape (unstacked)."""
  return _quat_to_mat_sums(_products(q, q, z))


def _quat_to_mat_sums(p):
  """mju_quat2Mat's nine entries from the products p(i, j) = q_i q_j."""
  ww, xx, yy, zz = p(0, 0), p(1, 1), p(2, 2), p(3, 3)
  xy, wz, xz, wy, yz, wx = p(1, 2), p(0, 3), p(1, 3), p(0, 2), p(2, 3), p(0, 1)
  off = [xy - wz, xz + wy, xy + wz, yz - wx, xz - wy, yz + wx]
  off = [x + x for x in off]
  return [(ww - yy) + (xx - zz), off[0], off[1],
          off[2], (ww + yy) - (xx + zz), off[3],
          off[4], off[5], (ww - yy) - (xx - zz)]


# Component forms: a vector is a sequence of arrays of one leading shape, one per component,
# and each function is the stacked one's arithmetic, bit for bit. A GPU compiler fuses a
# chain of them into one kernel; the stacked forms end every product in a concatenate (the
# stack), which XLA's GPU fusion leaves as a kernel of its own when the next product reads
# all of it (mj_kinematics on MJX's humanoid: 36 of its 62 kernels on an H200).


def _pairs(a, b, z):
  """p(i, j) = a_i b_j of component sequences, each product rounded on its own (`nofma`)."""
  products = nofma_all([x * y for x in a for y in b], z)
  return lambda i, j: products[i * len(b) + j]


def quat_mul_c(a, b, z: jnp.ndarray | None = None) -> list:
  """quat_mul of component sequences (4 arrays each)."""
  return _quat_mul_sums(_pairs(a, b, z))


def rot_vec_quat_c(v, q, z: jnp.ndarray | None = None) -> list:
  """rot_vec_quat of component sequences (v: 3 arrays, q: 4)."""
  r = _rot_r(_pairs(q, _rot_t(_pairs(q, v, z)), z))
  return [(x + x) + y for x, y in zip(r, v)]


def mat_vec3_c(mat, v, z: jnp.ndarray | None = None) -> list:
  """mat_vec3 of component sequences (mat: 9 arrays row-major, v: 3)."""
  p = nofma_all([mat[i] * v[i % 3] for i in range(9)], z)
  return [(p[3 * i] + p[3 * i + 1]) + p[3 * i + 2] for i in range(3)]


def quat_to_mat_c(q, z: jnp.ndarray | None = None) -> list:
  """quat_to_mat's nine entries (row-major) of a component sequence (4 arrays)."""
  return _quat_to_mat_sums(_pairs(q, q, z))


@jax.custom_jvp
def _normalize4_c(q, z):
  p = nofma_all([x * x for x in q], z)
  n = jnp.sqrt((p[0] + p[1]) + (p[2] + p[3]))
  inv = 1.0 / n
  scaled = [jnp.where(jnp.abs(n - 1.0) > MINVAL, x * inv, x) for x in q]
  return tuple(jnp.where(n < MINVAL, float(i == 0), x) for i, x in enumerate(scaled))


@_normalize4_c.defjvp
def _normalize4_c_jvp(primals, tangents):
  q, z = primals
  t = tangents[0]
  sq = sum(x * x for x in q)
  ok = sq >= MINVAL * MINVAL
  n = jnp.sqrt(jnp.where(ok, sq, 1.0))
  u = [x / n for x in q]
  ut = sum(a * b for a, b in zip(u, t))
  return _normalize4_c(q, z), tuple(jnp.where(ok, (b - a * ut) / n, 0.0) for a, b in zip(u, t))


def normalize_quat_c(q, z: jnp.ndarray | None = None) -> list:
  """normalize_quat of a component sequence (4 arrays), with its derivative."""
  return list(_normalize4_c(tuple(q), z))


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


def motion_cross_nofma(v: jnp.ndarray, m: jnp.ndarray, z: jnp.ndarray) -> jnp.ndarray:
  """`motion_cross` as mji_crossMotion rounds it: its sums in its order, each product on its
  own (z: `nofma` guard)."""
  p = _products(v, m, z)
  return jnp.stack([
    p(1, 2) - p(2, 1), p(2, 0) - p(0, 2), p(0, 1) - p(1, 0),
    (p(1, 5) - p(2, 4)) + (p(4, 2) - p(5, 1)),
    (p(2, 3) - p(0, 5)) + (p(5, 0) - p(3, 2)),
    (p(0, 4) - p(1, 3)) + (p(3, 1) - p(4, 0)),
  ], axis=-1)


def force_cross_nofma(v: jnp.ndarray, f: jnp.ndarray, z: jnp.ndarray) -> jnp.ndarray:
  """`force_cross` as mji_crossForce rounds it (z: `nofma` guard)."""
  p = _products(v, f, z)
  return jnp.stack([
    (p(1, 2) - p(2, 1)) + (p(4, 5) - p(5, 4)),
    (p(2, 0) - p(0, 2)) + (p(5, 3) - p(3, 5)),
    (p(0, 1) - p(1, 0)) + (p(3, 4) - p(4, 3)),
    p(1, 5) - p(2, 4), p(2, 3) - p(0, 5), p(0, 4) - p(1, 3),
  ], axis=-1)


def dot6_nofma(a: jnp.ndarray, b: jnp.ndarray, z: jnp.ndarray) -> jnp.ndarray:
  """(...,) a . b over the last axis (..., 6) as mji_dot6 sums it, products rounded on their
  own (z: `nofma` guard)."""
  p = nofma(a * b, z)
  return ((p[..., 0] + p[..., 2]) + (p[..., 1] + p[..., 3])) + (p[..., 4] + p[..., 5])


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


# mju_mulInertVec's 24 products (inertia entry, vector entry)
_INERT_PAIRS = ((0, 0), (3, 1), (4, 2), (8, 4), (7, 5), (3, 0), (1, 1), (5, 2), (8, 3), (6, 5),
                (4, 0), (5, 1), (2, 2), (7, 3), (6, 4), (8, 1), (7, 2), (9, 3), (6, 2), (8, 0),
                (9, 4), (7, 0), (6, 1), (9, 5))


@jax.custom_jvp
def inert_mul_nofma(i: jnp.ndarray, v: jnp.ndarray, z: jnp.ndarray) -> jnp.ndarray:
  """`inert_mul` in mju_mulInertVec's order of operations, each product rounded on its own
  (z: `nofma` guard); derivatives as `inert_mul`'s (its slices would each transpose
  to a pad in reverse mode). Its 24 products alone: `_products`' outer product makes sixty
  (crb and qM 1.12x slower); under one guard rule (`nofma_all`): a rule each was most of its
  tracing time."""
  iu, vu = jnp.unstack(i, axis=-1), jnp.unstack(v, axis=-1)
  prod = dict(zip(_INERT_PAIRS, nofma_all([iu[a] * vu[b] for a, b in _INERT_PAIRS], z)))
  p = lambda a, b: prod[a, b]  # noqa: E731
  return jnp.stack([
    (((p(0, 0) + p(3, 1)) + p(4, 2)) - p(8, 4)) + p(7, 5),
    (((p(3, 0) + p(1, 1)) + p(5, 2)) + p(8, 3)) - p(6, 5),
    (((p(4, 0) + p(5, 1)) + p(2, 2)) - p(7, 3)) + p(6, 4),
    (p(8, 1) - p(7, 2)) + p(9, 3),
    (p(6, 2) - p(8, 0)) + p(9, 4),
    (p(7, 0) - p(6, 1)) + p(9, 5),
  ], axis=-1)


@inert_mul_nofma.defjvp
def _inert_mul_nofma_jvp(primals, tangents):
  (i, v, z), (di, dv, _) = primals, tangents
  return inert_mul_nofma(i, v, z), inert_mul(di, v) + inert_mul(i, dv)


def inert_com(
  inertia: jnp.ndarray, mat: jnp.ndarray, offset: jnp.ndarray, mass: jnp.ndarray,
  z: jnp.ndarray | None = None,
) -> jnp.ndarray:
  """Body inertia expressed about a point `offset` away from its com (mju_inertCom).

  inertia: (..., 3) principal moments; mat: (..., 3, 3) principal axes in global frame;
  offset: (..., 3) com minus reference point; mass: (...,); z: `nofma`'s guard (None: none).
  Returns the (..., 10) layout [Ixx, Iyy, Izz, Ixy, Ixz, Iyz, m*offset, m].

  MuJoCo's terms in MuJoCo's order, elementwise: mat diag(inertia) mat' entry by entry and the
  parallel-axis terms as MuJoCo writes them (Ixx += m (dy^2 + dz^2), not m |d|^2 - m dx^2, which
  rounds differently); as products and a reduction XLA:CPU also ran a slower library kernel.
  """
  # tmp[k, b] = mat[b, k] inertia[k]; entry (a, b) of the rotated inertia: sum_k mat[a, k] tmp[k, b]
  tmp = jnp.swapaxes(mat, -1, -2) * inertia[..., :, None]
  pairs = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))
  p = nofma(jnp.stack([mat[..., a, :] * tmp[..., :, b] for a, b in pairs], axis=-2), z)
  rot = (p[..., 0] + p[..., 1]) + p[..., 2]
  m = mass[..., None]
  d = offset
  sq = nofma(d * d, z)
  x, y, w = sq[..., 0], sq[..., 1], sq[..., 2]
  diag = rot[..., :3] + nofma(m * jnp.stack([y + w, x + w, x + y], axis=-1), z)
  md = m * d
  cross = jnp.stack([md[..., 0] * d[..., 1], md[..., 0] * d[..., 2], md[..., 1] * d[..., 2]], -1)
  off = rot[..., 3:] - nofma(cross, z)
  return jnp.concatenate([diag, off, md, m], axis=-1)
