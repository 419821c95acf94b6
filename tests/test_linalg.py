"""jaxmj.linalg's SPD solve against numpy, blocked (its column steps unrolled, or a loop per
block as on the CPU), in the large systems' blocks of up to SPD_LOOP_BLOCK_MAX, by Cholesky
(other platforms' form, and every platform's above SPD_CPU_ELIMINATION_MAX) and by the GPU's
Pallas kernel (interpreted here), float64."""

import jax
import numpy as np
import pytest

from jaxmj import linalg


def _spd(rng, n):
  a = rng.normal(size=(n, n))
  return a @ a.T + 0.1 * np.eye(n)


def _solvers(monkeypatch):
  """spd_solve blocked (n <= SPD_UNROLL_MAX, the default here; on the CPU a loop per block),
  blocked with every column step unrolled, in the large systems' looped blocks
  (n > SPD_UNROLL_MAX) and other platforms' Cholesky (called directly: the CPU runs the
  elimination)."""
  def looped(a, b):
    monkeypatch.setattr(linalg, "SPD_UNROLL_MAX", 0)
    try:
      return jax.jit(lambda a, b: linalg.spd_solve(a, b))(a, b)  # a new trace
    finally:
      monkeypatch.undo()
  return {"blocked": jax.jit(linalg.spd_solve),
          "unrolled": jax.jit(lambda a, b: linalg.spd_solve(a, b, unroll=True)),
          "looped": looped, "cholesky": jax.jit(cholesky), "pallas": jax.jit(pallas)}


def pallas(a, b):
  x, ok = linalg._gauss_jordan_solve(a, b.reshape(b.shape[0], -1), linalg.MINVAL)
  return x.reshape(b.shape), ok


def cholesky(a, b):
  x, ok = linalg._cholesky_solve(a, b.reshape(b.shape[0], -1), linalg.MINVAL)
  return x.reshape(b.shape), ok


@pytest.mark.parametrize("n,k", [(27, 0), (5, 5), (32, 2), (90, 1)])
def test_spd_solve_matches_numpy_unrolled_and_looped(n, k, monkeypatch):
  """Both forms to 1e-10 of numpy's solve, relative to the solution's size."""
  rng = np.random.default_rng(n)
  a = _spd(rng, n)
  b = rng.normal(size=(n,) if k == 0 else (n, k))
  want = np.linalg.solve(a, b)
  for name, solve in _solvers(monkeypatch).items():
    if name == "pallas" and n > linalg.PALLAS_PAD:
      continue
    x, ok = solve(a, b)
    assert bool(ok)
    assert np.shape(x) == want.shape
    err = np.max(np.abs(np.asarray(x) - want)) / np.max(np.abs(want))
    assert err <= 1e-10, f"{name}: off by {err:.3g}"


def test_spd_solve_reports_rank_loss_in_every_form(monkeypatch):
  rng = np.random.default_rng(0)
  a = _spd(rng, 6)
  a[2, :] = a[:, 2] = 0.0  # a zero pivot
  b = rng.normal(size=6)
  oks = [bool(solve(a, b)[1]) for solve in _solvers(monkeypatch).values()]
  assert oks == [False, False, False, False, False]


def test_pallas_solve_differentiates_as_the_elimination():
  """The kernel is never differentiated: its derivative solves again inside a linear solve
  (forward and reverse mode, vmapped), matching autodiff through the elimination."""
  rng = np.random.default_rng(3)
  a = np.stack([_spd(rng, 9) for _ in range(2)])
  b = rng.normal(size=(2, 9, 2))
  w = rng.normal(size=(9, 2))
  for solve in (pallas, lambda a, b: linalg.spd_solve(a, b, unroll=True)):
    loss = lambda a, b, solve=solve: jax.numpy.sum(w * jax.vmap(solve)(a, b)[0])  # noqa: E731
    ga, gb = jax.jit(jax.grad(loss, argnums=(0, 1)))(a, b)
    tangent = jax.jit(lambda a, b, solve=solve: jax.jvp(
      lambda a: jax.vmap(solve)(a, b)[0], (a,), (jax.numpy.ones_like(a),))[1])(a, b)
    if solve is pallas:
      got = ga, gb, tangent
    else:
      want = ga, gb, tangent
  for g, h in zip(got, want):
    np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_looped_block_steps_in_place_equal_the_column_steps_bit_for_bit(dtype):
  """The CPU's loop over a block's column steps (pivot row and column carried, the block
  updated in place) computes what a loop of `_reduce_column` steps does: the same bits and the
  same rank flag (unrolled, XLA fuses the steps and their round-off differs)."""
  rng = np.random.default_rng(1)
  a = _spd(rng, 12)
  blk = np.concatenate([a, rng.normal(size=(12, 3))], axis=1).astype(dtype)
  for mindiag in (linalg.MINVAL, float(np.sort(np.diag(a))[3])):  # rank test passing, failing
    def column_steps(x, mindiag=mindiag):
      return jax.lax.fori_loop(0, 12, lambda j, c: linalg._reduce_column(j, c, mindiag),
                               (x, True))
    in_place = jax.jit(lambda x, mindiag=mindiag: linalg._reduce_block_looped(x, True, mindiag))
    got, want = in_place(blk), jax.jit(column_steps)(blk)
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
    assert bool(got[1]) == bool(want[1])


def test_large_systems_take_cholesky_on_every_platform():
  """Above SPD_CPU_ELIMINATION_MAX spd_solve is Cholesky everywhere (its program does not grow
  with n, as the elimination's unrolled blocks do): the same solution as _cholesky_solve and
  numpy's, and the rank test on a singular system."""
  n = linalg.SPD_CPU_ELIMINATION_MAX + 1
  rng = np.random.default_rng(0)
  a, b = _spd(rng, n), rng.normal(size=(n, 2))
  x, ok = jax.jit(linalg.spd_solve)(a, b)
  assert bool(ok)
  np.testing.assert_array_equal(x, jax.jit(cholesky)(a, b)[0])
  np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=0, atol=1e-10 * np.abs(x).max())
  assert jax.jit(linalg.spd_solve)(np.zeros((n, n)), b)[1].item() is False
