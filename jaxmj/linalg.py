"""Small dense linear algebra as plain jnp ops: the solvers' SPD solve and the implicit
integrator's LU solve.

SPD solves are written with plain jnp ops (Gauss-Jordan elimination without pivoting, one
fori_loop step per column) rather than jnp.linalg.cholesky / jax.scipy.linalg.cho_factor /
solve: the batched LAPACK path (potrf under vmap) has been seen to deadlock on XLA:CPU at large
batch sizes (MJX, batch 1024), and for the small nv of one world an O(n^3) column loop costs
little. For an SPD matrix the Gauss-Jordan pivots are exactly the Cholesky pivots (Schur
complements), so the elimination is as stable as Cholesky and needs no pivoting; a pivot below
`mindiag` is replaced by `mindiag`, as mju_cholFactor does. One loop (factor and solve fused)
instead of a factorization plus two triangular substitutions keeps XLA compile times low.

The implicit integrator's matrix M - h D is not symmetric; `lu_solve` eliminates it without
pivoting (it is close to SPD M), again as one loop of plain jnp ops.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmj.constants import MINVAL


# Up to this size the column loop is unrolled: measured on an H200 (MJX's humanoid, nv 27,
# batch 8192) the step ran 1.49x faster unrolled than as a fori_loop (2.44M vs 1.63M
# steps/s), where XLA fuses neighbouring columns and launches no per-column kernels. On the
# 2-core CPU (same model, float32, scripts/compile_stages.py --spd-unroll 0 32 --run-batch
# 256) unrolling costs compile time, 26.4 s of XLA CPU time for one step against 20.0 s,
# and halves the run time of a step of 256 worlds (76 ms against 162 ms): unrolled it stays.
SPD_UNROLL_MAX = 32


def spd_solve(a: jax.Array, b: jax.Array, mindiag: float = MINVAL, unroll: bool = False,
              exact: bool = True):
  """x = a^-1 b for SPD a (n, n); b (n,) or (n, k). Returns (x, full_rank).

  full_rank is False if a pivot fell below `mindiag` (mju_cholFactor's rank test). The column
  loop is unrolled with `unroll` or n <= SPD_UNROLL_MAX. `exact=False` (fast arithmetic)
  eliminates the unrolled loop's columns on only the part still read (`_eliminate_unrolled`):
  half the work, the same values up to where XLA fuses multiply-adds.
  """
  n = a.shape[0]
  vec = b.ndim == 1
  aug = jnp.concatenate([a, b[:, None] if vec else b], axis=1)
  idx = jnp.arange(n)

  def step(j, carry):
    aug, ok = carry
    row = aug[j]
    piv = row[j]
    ok = ok & (piv >= mindiag)
    row = jnp.where(jnp.arange(row.shape[0]) == j, 1.0, row / jnp.maximum(piv, mindiag))
    col = aug[:, j]
    aug = jnp.where((idx == j)[:, None], row[None, :], aug - col[:, None] * row[None, :])
    return aug, ok

  if not exact and (unroll or n <= SPD_UNROLL_MAX):
    x, ok = _eliminate_unrolled(aug, n, mindiag)
  elif unroll or n <= SPD_UNROLL_MAX:
    aug, ok = (aug, jnp.array(True))
    for j in range(n):
      aug, ok = step(j, (aug, ok))
    x = aug[:, n:]
  else:
    aug, ok = jax.lax.fori_loop(0, n, step, (aug, jnp.array(True)))
    x = aug[:, n:]
  return (x[:, 0] if vec else x), ok


def _eliminate_unrolled(aug: jax.Array, n: int, mindiag: float):
  """`spd_solve`'s column loop unrolled, on the columns still to be read.

  Once column j is eliminated nothing reads it again (the later steps read columns > j only),
  so step j carries aug[:, j + 1:] and the steps do half the work of the full matrix's. Each
  entry kept is computed by the same operations as in the full loop, but XLA fuses the
  smaller steps differently (a product may be contracted into its subtraction), so x can
  differ from the full loop's in the last bits: fast arithmetic only.
  """
  rest, ok = aug, jnp.array(True)
  idx = jnp.arange(n)
  for j in range(n):
    piv = rest[j, 0]
    ok = ok & (piv >= mindiag)
    row = rest[j, 1:] / jnp.maximum(piv, mindiag)
    rest = jnp.where((idx == j)[:, None], row[None, :],
                     rest[:, 1:] - rest[:, :1] * row[None, :])
  return rest, ok


def lu_solve(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
  """a^-1 b by LU without pivoting (a = M - h D is close to SPD M), as plain jnp ops."""
  n = a.shape[0]

  def eliminate(k, ab):
    piv = ab[k, k]
    factor = jnp.where(jnp.arange(n) > k, ab[:, k] / piv, 0.0)
    return ab - factor[:, None] * ab[k][None, :]

  ab = jax.lax.fori_loop(0, n, eliminate, jnp.concatenate([a, b[:, None]], axis=1))
  u, y = ab[:, :n], ab[:, n]

  def back(i, x):
    k = n - 1 - i
    return x.at[k].set((y[k] - u[k] @ x) / u[k, k])

  return jax.lax.fori_loop(0, n, back, jnp.zeros_like(b))
