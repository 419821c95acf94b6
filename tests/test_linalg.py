"""jaxmj.linalg's SPD solve against numpy, in both arithmetic modes (float64)."""

import jax
import numpy as np
import pytest

from jaxmj import linalg


def _spd(rng, n):
  a = rng.normal(size=(n, n))
  return a @ a.T + 0.1 * np.eye(n)


@pytest.mark.parametrize("n,k", [(27, 0), (5, 5), (32, 2)])
def test_spd_solve_matches_numpy_in_both_modes(n, k):
  """The fast form (unrolled columns eliminated on the part still read) solves the same
  system: both modes to 1e-10 of numpy's solve, relative to the solution's size."""
  rng = np.random.default_rng(n)
  a = _spd(rng, n)
  b = rng.normal(size=(n,) if k == 0 else (n, k))
  want = np.linalg.solve(a, b)
  for exact in (True, False):
    x, ok = jax.jit(lambda a, b: linalg.spd_solve(a, b, exact=exact))(a, b)
    assert bool(ok)
    err = np.max(np.abs(np.asarray(x) - want)) / np.max(np.abs(want))
    assert err <= 1e-10, f"exact={exact}: off by {err:.3g}"


def test_fast_spd_solve_reports_rank_loss_as_exact_does():
  rng = np.random.default_rng(0)
  a = _spd(rng, 6)
  a[2, :] = a[:, 2] = 0.0  # a zero pivot
  b = rng.normal(size=6)
  oks = [bool(linalg.spd_solve(a, b, exact=exact)[1]) for exact in (True, False)]
  assert oks == [False, False]
