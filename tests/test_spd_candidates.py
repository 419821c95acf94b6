"""scripts/spd_candidates.py's Pallas solve, run interpreted on the CPU: the kernel a GPU run
would time must solve the Newton step's systems as linalg.spd_solve does."""

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from conftest import ROOT

from jaxmj import linalg

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import spd_candidates  # noqa: E402


def test_pallas_solve_matches_the_elimination_and_its_rank_test():
  with jax.enable_x64(True):
    a, b = spd_candidates.systems(3, 27)
    a[2, 5, :] = a[2, :, 5] = 0.0  # a zero pivot: not full rank
    a, b = jnp.asarray(a), jnp.asarray(b)
    x, ok = jax.vmap(lambda a, b: spd_candidates.pallas_solve(a, b, interpret=True))(a, b)
    xr, okr = jax.vmap(linalg.spd_solve)(a, b)
    np.testing.assert_array_equal(ok, [True, True, False])
    np.testing.assert_array_equal(ok, okr)
    np.testing.assert_allclose(x[:2], xr[:2], rtol=1e-9, atol=1e-12)
