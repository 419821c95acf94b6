"""math.py's derivative rules (quat_mul, rot_vec_quat, quat_to_mat keep tangents whole, as
products with matrices of the primal values) against central finite differences, forward
and reverse, second order included, with and without the `nofma` guard and broadcasting."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

from jaxmj import math

RNG = np.random.default_rng(0)
Q = jnp.asarray(RNG.normal(size=(5, 4)))  # not unit: the rules hold off the unit sphere too
P = jnp.asarray(RNG.normal(size=(5, 4)))
V = jnp.asarray(RNG.normal(size=(5, 3)))


def _check(fn, args, order=2):
  check_grads(fn, args, order=order, modes=["fwd", "rev"], eps=1e-6, atol=1e-7, rtol=1e-7)


@pytest.mark.parametrize("guard", [False, True])
def test_quaternion_rules_match_finite_differences(guard):
  z = math.opaque_zero(jnp.sum(Q * Q)) if guard else None
  _check(lambda a, b: math.quat_mul(a, b, z), (Q, P))
  _check(lambda v, q: math.rot_vec_quat(v, q, z), (V, Q))
  _check(lambda q: math.quat_to_mat(q, z), (Q,))


def test_quaternion_rules_broadcast_like_the_functions():
  _check(lambda a, b: math.quat_mul(a, b), (Q[0], P), order=1)
  _check(lambda v, q: math.rot_vec_quat(v, q), (V[0], Q), order=1)
  _check(lambda v, q: math.rot_vec_quat(v, q), (V[:, None], Q[:, None, None]), order=1)
  out = jax.jvp(lambda a: math.quat_mul(a, P), (Q[0],), (Q[1],))[1]
  assert out.shape == (5, 4)


def test_place_and_set_at_are_scatters_into_zeros_and_x():
  rng = np.random.default_rng(0)
  idx = np.array([4, 0, 2])
  vals = jnp.asarray(rng.normal(size=(3, 2)))
  x = jnp.asarray(rng.normal(size=(6, 2)))
  np.testing.assert_array_equal(math.place(vals, idx, 6), jnp.zeros((6, 2)).at[idx].set(vals))
  np.testing.assert_array_equal(math.set_at(x, idx, vals), x.at[idx].set(vals))
