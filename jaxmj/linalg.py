"""Small dense linear algebra as plain jnp ops: the solvers' SPD solve and the implicit
integrator's LU solve.

SPD solves are written with plain jnp ops (Gaussian elimination without pivoting) rather
than jnp.linalg.cholesky / jax.scipy.linalg.cho_factor / solve where they can be: the batched
LAPACK path (potrf under vmap) has been seen to deadlock on XLA:CPU at large batch sizes (MJX,
batch 1024), and for the small nv of one world an O(n^3) elimination costs little. For an SPD
matrix the elimination's pivots are exactly the Cholesky pivots (Schur complements), so it is
as stable as Cholesky and needs no pivoting; a pivot below `mindiag` is replaced by
`mindiag`, as mju_cholFactor does. Small systems (the Newton step of most models) run a
blocked elimination with back substitution in blocks of SPD_BLOCK, their column steps a loop
on the CPU and unrolled on TPUs, and on GPUs one Pallas kernel of Gauss-Jordan steps per
world (`_gauss_jordan_solve`); larger ones on the CPU in a few large blocks whose column
steps loop, and off the CPU (GPUs) by Cholesky, which XLA batches into cuSOLVER / cuBLAS
calls (`_cholesky_solve`).

The implicit integrator's matrix M - h D is not symmetric; `lu_solve` eliminates it without
pivoting (it is close to SPD M), again as one loop of plain jnp ops.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.platform import by_platform, traces_for_gpu

# Up to this size the elimination's column steps are unrolled on TPUs (GPUs: the Pallas
# kernel below, since 2026-12-04); measured on an H200
# (MJX's humanoid, nv 27, batch 8192; Gauss-Jordan column by column, before the blocked form)
# the step ran 1.49x faster unrolled than as a fori_loop (2.44M vs 1.63M steps/s: each loop
# trip syncs with the host) and 1.19x faster than with cuSOLVER's Cholesky (2.05M), in one run.
# Above it GPUs factor by Cholesky (`_cholesky_solve`; not measured on a GPU: its launches
# against two loops of 24 trips for box_pile's nv 48, scripts/gpu_hlo.py).
SPD_UNROLL_MAX = 32


def spd_solve(a: jax.Array, b: jax.Array, mindiag: float = MINVAL, unroll: bool = False):
  """x = a^-1 b for SPD a (n, n); b (n,) or (n, k). Returns (x, full_rank).

  full_rank is False if a pivot fell below `mindiag` (mju_cholFactor's rank test). With
  `unroll`, a blocked elimination with every column step unrolled (`_eliminate_blocked`).
  Else for n <= SPD_UNROLL_MAX blocks of SPD_BLOCK whose column steps loop on the CPU, on a
  GPU one Pallas kernel (`_gauss_jordan_solve`), elsewhere (TPUs) unrolled; above, on the CPU
  blocks of up to SPD_LOOP_BLOCK_MAX whose steps loop, elsewhere Cholesky (`_cholesky_solve`);
  above SPD_CPU_ELIMINATION_MAX Cholesky everywhere.
  """
  n = a.shape[0]
  vec = b.ndim == 1
  b = b[:, None] if vec else b
  # blocks of SPD_BLOCK, or for large systems the fewest equal ones of <= SPD_LOOP_BLOCK_MAX
  size = (SPD_BLOCK if unroll or n <= SPD_UNROLL_MAX else
          -(-n // -(-n // SPD_LOOP_BLOCK_MAX)))
  eliminate = lambda a, b, unroll: _eliminate_blocked(  # noqa: E731
    jnp.concatenate([a, b], axis=1), n, mindiag, unroll, size)
  if unroll:
    x, ok = eliminate(a, b, True)
  elif n > SPD_CPU_ELIMINATION_MAX:
    x, ok = _cholesky_solve(a, b, mindiag)
  elif n > SPD_UNROLL_MAX:
    x, ok = by_platform(a, b, cpu=functools.partial(eliminate, unroll=False),
                        default=functools.partial(_cholesky_solve, mindiag=mindiag))
  elif traces_for_gpu() and n <= PALLAS_PAD and b.shape[1] <= PALLAS_PAD:  # held in registers
    x, ok = _gauss_jordan_solve(a, b, mindiag)
  else:
    x, ok = by_platform(a, b, cpu=functools.partial(eliminate, unroll=False),
                        default=functools.partial(eliminate, unroll=True))
  return (x[:, 0] if vec else x), ok


# On a GPU a small system is solved by one Triton kernel per world (Pallas): Gauss-Jordan on the
# system padded to PALLAS_PAD x PALLAS_PAD, held in registers, with the elimination's pivot
# floor and rank test. XLA fuses no two column steps of the unrolled elimination (each reads
# the last one's row and column at every position), so it ran one or two kernels a column,
# each streaming the batch's matrices through memory: on an H200 (2026-12-04, batch 8192,
# n 27, float32, scripts/spd_candidates.py) 0.328 ms in 49 kernels, this kernel 0.227 ms,
# cuSOLVER's Cholesky 0.339 ms, errors alike (6.5e-4 to 7.4e-4 of the float64 solution).
# Elsewhere (the CPU running the GPU's forms: tests, exports) the same kernel runs interpreted.
PALLAS_PAD = 32


def _gauss_jordan_kernel(a_ref, b_ref, x_ref, ok_ref, *, n: int, mindiag: float):
  """[a | b] (PALLAS_PAD, PALLAS_PAD) and (PALLAS_PAD, k), a's padding the identity, reduced
  to [I | x] column by column; ok_ref (1, 1) is 0 once a pivot fell below mindiag."""
  a, b = a_ref[...], b_ref[...]
  r = jax.lax.broadcasted_iota(jnp.int32, a.shape, 0)
  c = jax.lax.broadcasted_iota(jnp.int32, a.shape, 1)
  rb = jax.lax.broadcasted_iota(jnp.int32, b.shape, 0)
  ok = jnp.ones((1, 1), a.dtype)
  for j in range(n):  # rows and columns by masked sums: Triton has no dynamic indexing
    row = jnp.sum(jnp.where(r == j, a, 0.0), axis=0, keepdims=True)  # (1, PAD)
    col = jnp.sum(jnp.where(c == j, a, 0.0), axis=1, keepdims=True)  # (PAD, 1)
    brow = jnp.sum(jnp.where(rb == j, b, 0.0), axis=0, keepdims=True)  # (1, k)
    piv = jnp.sum(jnp.sum(jnp.where((r == j) & (c == j), a, 0.0), axis=0, keepdims=True),
                  axis=1, keepdims=True)  # (1, 1)
    floor = jnp.maximum(piv, mindiag)
    row, brow = row / floor, brow / floor
    ok = jnp.where(piv >= mindiag, ok, 0.0)
    a = jnp.where(r == j, row, a - col * row)
    b = jnp.where(rb == j, brow, b - col * brow)
  x_ref[...] = b
  ok_ref[...] = ok


def _gauss_jordan_call(a: jax.Array, b: jax.Array, mindiag: float, interpret: bool):
  """(x (n, k), full_rank) by `_gauss_jordan_kernel`, b (n, k), n <= PALLAS_PAD."""
  from jax.experimental import pallas as pl

  n, nrhs = b.shape
  k = 1 << (nrhs - 1).bit_length()  # Triton blocks are powers of two
  ap = jnp.eye(PALLAS_PAD, dtype=a.dtype).at[:n, :n].set(a)
  bp = jnp.zeros((PALLAS_PAD, k), a.dtype).at[:n, :nrhs].set(b)
  params = {}
  if not interpret:
    from jax.experimental.pallas import triton as plt

    compiler_params = getattr(plt, "CompilerParams", None) or plt.TritonCompilerParams  # jax<0.5
    params["compiler_params"] = compiler_params(num_warps=1)
  x, ok = pl.pallas_call(
    functools.partial(_gauss_jordan_kernel, n=n, mindiag=mindiag),
    out_shape=(jax.ShapeDtypeStruct((PALLAS_PAD, k), a.dtype),
               jax.ShapeDtypeStruct((1, 1), a.dtype)),
    interpret=interpret, **params)(ap, bp)
  return x[:n, :nrhs], ok[0, 0] > 0


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def _gauss_jordan_solve(a: jax.Array, b: jax.Array, mindiag: float):
  """(x (n, k), full_rank) of a x = b by the Pallas kernel: Triton where the program is
  lowered for CUDA, interpreted elsewhere."""
  return jax.lax.platform_dependent(
    a, b, cuda=functools.partial(_gauss_jordan_call, mindiag=mindiag, interpret=False),
    default=functools.partial(_gauss_jordan_call, mindiag=mindiag, interpret=True))


@_gauss_jordan_solve.defjvp
def _gauss_jordan_solve_jvp(mindiag, primals, tangents):
  # dx = a^-1 (db - da x), by the same kernel inside a linear solve that reverse mode
  # transposes to itself (a is symmetric): the kernel is never differentiated
  (a, b), (da, db) = primals, tangents
  x, ok = _gauss_jordan_solve(a, b, mindiag)
  dx = jax.lax.custom_linear_solve(
    lambda v: _matmul(a, v), db - _matmul(da, x),
    lambda _, rhs: _gauss_jordan_solve(a, rhs, mindiag)[0], symmetric=True)
  return (x, ok), (dx, np.zeros(np.shape(ok), jax.dtypes.float0))


# Off the CPU systems larger than SPD_UNROLL_MAX take a Cholesky factor and two triangular
# solves: under vmap XLA batches them into cuSOLVER's potrf and cuBLAS's trsm. H200 target
# (scripts/gpu_hlo.py, batch 8192, float32): for nv 48 (box_pile) 8 kernels and no loops,
# against two loops of 24 trips (each a host sync on a GPU); for nv 27 it would be 6 kernels
# against the unrolled elimination's 46, but the one H200 run that compared them had the
# unrolled solve faster (SPD_UNROLL_MAX), so small systems keep it until a GPU says. Unlike
# mju_cholFactor (and the elimination), a pivot below mindiag is not raised to mindiag: a
# matrix that is not numerically SPD gives NaN (and full_rank False) instead of a solution
# of huge entries.
def _cholesky_solve(a: jax.Array, b: jax.Array, mindiag: float):
  """(x (n, k), full_rank) of a x = b, a (n, n) SPD, b (n, k), by Cholesky."""
  chol = jnp.linalg.cholesky(a, symmetrize_input=False)
  y = jax.lax.linalg.triangular_solve(chol, b, left_side=True, lower=True)
  x = jax.lax.linalg.triangular_solve(chol, y, left_side=True, lower=True, transpose_a=True)
  piv = jnp.diagonal(chol)
  return x, jnp.all(piv * piv >= mindiag)


# Columns per block of the blocked elimination (`_eliminate_blocked`): one trailing update
# per block as a matrix product. MJX's humanoid (nv 27, batch 256, float32, 2-core CPU), the
# SPD solve alone: 1.3 ms of CPU per batch at 9 (5: 1.5, 14: 1.6), as LAPACK's batched
# Cholesky (1.3); column by column (LDL') 2.5 ms, Gauss-Jordan on the whole matrix 4.2 ms.
SPD_BLOCK = 9
# Systems larger than SPD_UNROLL_MAX on the CPU: the fewest equal blocks of at most this many
# columns, each block's column steps a loop. 256 SPD systems of 108 (04_humanoids'
# nv), float32, 2-core CPU, the solve alone: 26 ms of CPU in blocks of 36, 40-68 ms in blocks
# of 9-32, 128 ms as one loop of Gauss-Jordan steps over the whole matrix (before);
# 64: 17 ms in two blocks of 32, 25 ms in blocks of 16; 160: 113 ms in blocks of 40. With the
# block updated in place (`_reduce_block_looped`), 128 systems: 40 still the best bound, flat
# from 24 (nv 48: 2.1 ms in blocks of 24, 2.4 in one of 48; 108: 9.4-9.8 ms in blocks of
# 22-36, 13 in blocks of 54, 36 in one; 160: 38-40 ms in blocks of 23-40, 48-52 above).
SPD_LOOP_BLOCK_MAX = 40
# Above this size the CPU takes Cholesky (LAPACK) too: the elimination's blocks are unrolled at
# trace time, so its program grows with n (a solve of 2700, MuJoCo's 100_humanoids.xml: 29 s
# to compile and 528 ms a solve, LAPACK 0.3 s and 114 ms; 270: 1.7 s and 1.4 ms against 0.3 s
# and 0.7 ms; float32, one system, 2-core CPU, 2026-12-07). Measured alone LAPACK was faster
# from 48 up too (256 systems of 108: 62.8 against 28.9 ms of CPU), but the bundled and
# tested models up to here keep their bits and mju_cholFactor's pivot floor until the
# whole step says so (a pivot below mindiag gives NaN here, see _cholesky_solve).
SPD_CPU_ELIMINATION_MAX = 256


def _eliminate_blocked(aug: jax.Array, n: int, mindiag: float, unroll: bool, size: int):
  """Blocked Gaussian elimination of aug = [a | b] (n, n + k) without pivoting, then block
  back substitution; the blocks unrolled, their column steps too with `unroll`, else a loop
  (`_reduce_block_looped`).

  Each block of `size` rows (the last may be smaller) is reduced by
  Gauss-Jordan on its own columns to [I | T], T = A11^-1 [A12 | b1], and the trailing rows
  take its Schur complement [A22 | b2] - A21 T in one matrix product; the block's pivots are
  those of Cholesky (Schur complements), the rank test's. Back substitution: x1 = T_b - T_A
  x2, block by block from the last.
  """
  rest, ok, tops = aug, jnp.array(True), []
  m = n
  while m > 0:
    k = min(size, m)
    if unroll:
      blk, ok = _reduce_block_unrolled(rest[:k], ok, mindiag)
    else:
      blk, ok = _reduce_block_looped(rest[:k], ok, mindiag)
    tops.append(blk[:, k:])  # (k, m - k + nrhs)
    if m > k:
      rest = rest[k:, k:] - _matmul(rest[k:, :k], tops[-1])
    m -= k
  nrhs = aug.shape[1] - n
  x = tops[-1]
  for top in tops[-2::-1]:
    x = jnp.concatenate([top[:, -nrhs:] - _matmul(top[:, :-nrhs], x), x])
  return x, ok


def _reduce_column(j, carry, mindiag: float):
  """Gauss-Jordan step on column j of a block (k, c): row j divided by its pivot, every other
  row less its multiple; ok is False once a pivot falls below `mindiag`."""
  blk, ok = carry
  row, ok = _pivot_row(blk[j], j, ok, mindiag)
  rows = jnp.arange(blk.shape[0])[:, None]
  return jnp.where(rows == j, row[None, :], blk - blk[:, j][:, None] * row[None, :]), ok


def _pivot_row(row, j, ok, mindiag: float):
  """Row j of a block divided by its pivot row[j] (floored at `mindiag`), and the rank test."""
  piv = row[j]
  return row / jnp.maximum(piv, mindiag), ok & (piv >= mindiag)


# A block's column steps as a loop on the CPU: unrolled, XLA:CPU fuses three steps per kernel
# and each step's elements are recomputed for every later step that reads them (the Newton
# step's SPD solve of MJX's humanoid, batch 256: 2.2 -> 1.95-2.1 ms of CPU alone, the same
# bits). The loop carries the step's pivot row and column beside the block, and a step writes
# its pivot row by a dynamic_update_slice after the elementwise update of every row: so the
# block is updated in place. `_reduce_column` in a loop read row j and column j of the block
# it was rewriting, and XLA copied the whole block every step (SPD solve alone, 128 systems of
# 108, float32: 21-25 -> 9.5-13 ms of CPU; the same bits).
def _reduce_block_looped(blk, ok, mindiag: float):
  def step(j, carry):
    blk, ok, row, col = carry  # row j and column j of blk
    row, ok = _pivot_row(row, j, ok, mindiag)
    blk = jax.lax.dynamic_update_slice(blk - col[:, None] * row[None, :], row[None, :], (j, 0))
    nxt = jnp.minimum(j + 1, blk.shape[0] - 1)
    return blk, ok, blk[nxt], blk[:, nxt]

  return jax.lax.fori_loop(0, blk.shape[0], step, (blk, ok, blk[0], blk[:, 0]))[:2]


def _reduce_block_unrolled(blk, ok, mindiag: float):
  for j in range(blk.shape[0]):
    blk, ok = _reduce_column(j, (blk, ok), mindiag)
  return blk, ok


def _matmul(a: jax.Array, b: jax.Array) -> jax.Array:
  """a @ b in full precision: on GPUs XLA's default for float32 products may round the
  operands to TensorFloat-32 (10-bit mantissa), too coarse for an elimination's updates."""
  return jnp.matmul(a, b, precision=jax.lax.Precision.HIGHEST)


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
