"""What the primitive colliders (primitive.py, boxbox.py) share: the geom frame they read, the
contact tuple they return, MuJoCo's small vector routines in its order of operations, and the
helpers that keep XLA's compile time down (see primitive.py: `select_at`, `select_col`,
`next_of_3` index with selects instead of gathers, `materialize` stores a value once instead
of recomputing it in every kernel that reads it).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmj import math
from jaxmj.constants import MINVAL

NO_CONTACT = 1e10  # distance reported in unused slots
BIG = 1e30  # stands in for the +-inf of a C division by zero in min/compare chains


class GeomFrame(NamedTuple):
  """A geom's global frame and size, as mjGETINFO reads them."""

  pos: jax.Array  # (3,)  geom_xpos
  mat: jax.Array  # (3, 3)  geom_xmat, columns are the geom's local axes
  size: jax.Array  # (3,)  geom_size


Collision = tuple[jax.Array, jax.Array, jax.Array]


# ------------------------------------------------------------------------------------------
# small vector helpers, written out elementwise in MuJoCo's order of operations (mju_dot3,
# mju_mulMatVec3, ...): the same round-off as MuJoCo, and no reduced-precision matmuls.


@jax.custom_jvp
def dot3(a, b):
  return _dot3(a, b)


# The derivative rules below keep tangents whole where the operands have one shape: a slice
# of a tangent transposes to one pad per slice in reverse mode (on the CPU one op each).
@dot3.defjvp
def _dot3_jvp(primals, tangents):
  (a, b), (da, db) = primals, tangents
  if a.shape != b.shape:
    return dot3(a, b), _dot3(da, b) + _dot3(a, db)
  return dot3(a, b), jnp.sum(da * b + a * db, axis=0)


def _dot3(a, b):
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@jax.custom_jvp
def mat_vec3(mat, v):
  """mju_mulMatVec3: mat @ v."""
  return _mat_vec3(mat, v)


def _mat_vec3(mat, v):
  return mat[:, 0] * v[0] + mat[:, 1] * v[1] + mat[:, 2] * v[2]


@jax.custom_jvp
def mat_t_vec3(mat, v):
  """mju_mulMatTVec3: mat.T @ v."""
  return _mat_t_vec3(mat, v)


def _mat_t_vec3(mat, v):
  return mat[0] * v[0] + mat[1] * v[1] + mat[2] * v[2]


# The primal is formed by the elementwise arithmetic itself (not a nested call), which
# rollout's checkpoint policy recomputes rather than keeps (dynamics/checkpoint.py).
@mat_vec3.defjvp
def _mat_vec3_jvp(primals, tangents):
  (mat, v), (dmat, dv) = primals, tangents
  if mat.shape != (3, 3) or v.shape != (3,):
    return _mat_vec3(mat, v), _mat_vec3(dmat, v) + _mat_vec3(mat, dv)
  return _mat_vec3(mat, v), jnp.sum(dmat * v + mat * dv, axis=1)


@mat_t_vec3.defjvp
def _mat_t_vec3_jvp(primals, tangents):
  (mat, v), (dmat, dv) = primals, tangents
  if mat.shape != (3, 3) or v.shape != (3,):
    return _mat_t_vec3(mat, v), _mat_t_vec3(dmat, v) + _mat_t_vec3(mat, dv)
  return _mat_t_vec3(mat, v), jnp.sum(dmat * v[:, None] + mat * dv[:, None], axis=0)


@jax.custom_jvp
def cross3(a, b):
  return _cross3(a, b)


def _cross3(a, b):
  return jnp.stack(
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
  )


@cross3.defjvp
def _cross3_jvp(primals, tangents):
  # d(a x b) = a x db - b x da = [a] db - [b] da, [x]: x's cross-product matrix
  (a, b), (da, db) = primals, tangents
  if a.shape != (3,) or b.shape != (3,):
    return cross3(a, b), _cross3(da, b) + _cross3(a, db)
  return cross3(a, b), jnp.sum(math.skew(a) * db - math.skew(b) * da, axis=1)


def safe_sqrt(x):
  """sqrt with a zero gradient at 0 instead of inf (x >= 0)."""
  pos = x > 0
  return jnp.where(pos, jnp.sqrt(jnp.where(pos, x, 1.0)), 0.0)


def safe_div(a, b, fallback=0.0):
  """a / b, or `fallback` where b == 0 (gradient-safe)."""
  zero = b == 0
  return jnp.where(zero, fallback, a / jnp.where(zero, 1.0, b))


def recip(b, fallback=BIG):
  """1 / b as MuJoCo writes it (`x * (1/b)`), `fallback` where b == 0."""
  return safe_div(1.0, b, fallback)


@jax.custom_jvp
def normalize3(v):
  """mju_normalize3: (v / |v|, |v|); (1, 0, 0) where |v| < mjMINVAL."""
  norm = safe_sqrt(dot3(v, v))
  small = norm < MINVAL
  inv = 1.0 / jnp.where(small, 1.0, norm)
  unit = jnp.where(small, jnp.array([1.0, 0.0, 0.0], dtype=v.dtype), v * inv)
  return unit, norm


@normalize3.defjvp
def _normalize3_jvp(primals, tangents):
  # d|v| = v . dv / |v|, du = (dv - u d|v|) / |v| (0 where |v| < mjMINVAL, as the constant
  # (1, 0, 0) is; d|v| 0 at v = 0, safe_sqrt's). Reverse mode keeps (u, |v|), the nested
  # call's outputs (rollout's checkpoint policy keeps a call's), and its backward pass is a
  # few elementwise ops and one sum per tangent, where through sqrt, the division and the
  # selects it recomputed them and transposed each (the vmapped colliders' backward: 144 ->
  # 110 ops a step, humanoid_floor's rollout, for 11 more arrays kept)
  (v,), (dv,) = primals, tangents
  unit, norm = normalize3(v)
  small, pos = norm < MINVAL, norm > 0
  dnorm = jnp.where(pos, jnp.sum(v * dv, axis=0) / jnp.where(pos, norm, 1.0), 0.0)
  dunit = jnp.where(small, 0.0, (dv - unit * dnorm) * (1.0 / jnp.where(small, 1.0, norm)))
  return (unit, norm), (dunit, dnorm)


def make_frame(normal, tangent=None):
  """mju_makeFrame: rows [normal, tangent1, tangent2] from a normal and optional tangent.

  Without a usable tangent (|t|^2 < 0.25) the tangent starts as y = (0, 1, 0), or z where
  the normal is within 60 degrees of y; it is then made orthogonal to the normal.
  """
  n, _ = normalize3(normal)
  if tangent is None:
    tangent = jnp.zeros_like(n)
  undefined = dot3(tangent, tangent) < 0.25
  default = jnp.where(
    (n[1] < 0.5) & (n[1] > -0.5),
    jnp.array([0.0, 1.0, 0.0], dtype=n.dtype),
    jnp.array([0.0, 0.0, 1.0], dtype=n.dtype),
  )
  t = jnp.where(undefined, default, tangent)
  t = t - n * dot3(n, t)
  t, _ = normalize3(t)
  return jnp.stack([n, t, cross3(n, t)])


def first_k(valid, k: int):
  """(k, N) bool one-hot rows selecting the first k True entries of `valid` in order, and
  whether each row selects anything. `take_rows(sel, x)` gathers them."""
  # the running count as N adds that fuse, where cumsum is a reduce-window kernel of its own
  count, rank = jnp.zeros((), jnp.int32), []
  for v in valid.astype(jnp.int32):
    count = count + v
    rank.append(count - 1)
  rank = jnp.stack(rank)
  sel = valid[None, :] & (rank[None, :] == jnp.arange(k)[:, None])
  return sel, jnp.any(sel, axis=1)


@jax.custom_jvp
def take_rows(sel, x):
  """Rows of x (N, ...) picked by a one-hot selection (k, N) from `first_k` (0 where a row
  selects nothing), k <= N: a chain of N selects, exact and differentiable, which XLA fuses
  with its neighbours, where the product with the one-hot rows and its sum was a reduction
  of its own (XNNPACK's on the CPU: box_stack's clipping, 30 us a stage at batch 64)."""
  return _select_rows(sel, x)


def _select_rows(sel, x):
  out = jnp.zeros((sel.shape[0],) + x.shape[1:], x.dtype)
  for j, xj in enumerate(jnp.unstack(x)):
    out = jnp.where(sel[:, j].reshape((-1,) + (1,) * (x.ndim - 1)), xj, out)
  return out


def _spread_rows(sel, y):
  """take_rows' transpose: (k, ...) picks back onto the N rows, one masked sum over k."""
  mask = sel.reshape(sel.shape + (1,) * (y.ndim - 1))
  return jnp.sum(jnp.where(mask, y[:, None], 0), axis=0)


@take_rows.defjvp
def _take_rows_jvp(primals, tangents):
  """The tangent is the same chain of selects (forward mode: no reduction), declared a
  linear map whose transpose is `_spread_rows`: one fused reduction over the k picks, where
  the chain's own transpose (each x[j] broadcast over the k rows) took a reduction per row
  (box_stack's clipping backward: ~16 reduce kernels a stage). `custom_linear_solve` is how
  JAX 0.10 takes a custom transpose that vmap can batch; it wants the map square, so the
  picks ride in the first k of N rows."""
  sel, x = primals
  k, n = sel.shape
  pad = lambda y: jnp.concatenate([y, jnp.zeros((n - k,) + y.shape[1:], y.dtype)])  # noqa: E731
  dy = jax.lax.custom_linear_solve(
    lambda v: _spread_rows(sel, v[:k]), tangents[1], lambda _, b: pad(_select_rows(sel, b)),
    lambda _, c: _spread_rows(sel, c[:k]))
  return _select_rows(sel, x), dy[:k]


def select_at(x, i):
  """x[i] for a traced index i into the leading axis of x (an array or a list), as a chain of
  selects: elementwise code that XLA fuses with its neighbours, where a gather with a traced
  index is a kernel of its own (kernels dominate the compile time of these colliders)."""
  out = x[len(x) - 1]
  for k in range(len(x) - 2, -1, -1):
    out = jnp.where(i == k, x[k], out)
  return out


def next_of_3(i):
  """(i + 1) % 3 for a traced index, without an integer remainder (a kernel of its own)."""
  return jnp.where(i == 2, 0, i + 1)


def select_col(mat, k):
  """mat[:, k] for a traced k, by selects."""
  return select_at([mat[:, 0], mat[:, 1], mat[:, 2]], k)


def materialize(x, ref):
  """x, computed once: x divided by a one that XLA cannot prove to be one (one plus the sign bit
  of |ref|, which is clear even for a NaN; ref: any traced float scalar). An exact identity that
  XLA treats as expensive, so it stores x rather than recompute the ops behind it in every
  kernel that reads x: duplicated work, and not kernels, is most of these colliders' compile
  time. The derivative is x's."""
  u = jnp.uint64 if ref.dtype == jnp.float64 else jnp.uint32
  bits = jax.lax.bitcast_convert_type(jnp.abs(ref), u)
  one = (jax.lax.shift_right_logical(bits, u(8 * ref.dtype.itemsize - 1)) + 1).astype(x.dtype)
  return jax.lax.div(x, one)


def pack_slots(valid, dist, pos, frame) -> Collision:
  """Stacks per-slot results, putting NO_CONTACT where a slot holds no contact."""
  valid = jnp.asarray(valid)
  dist = jnp.where(valid, dist, NO_CONTACT)
  return dist, pos, frame
