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


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_component_forms_equal_stacked_forms_bit_for_bit(dtype):
  """The `_c` forms (vectors as lists of components) are the stacked functions' arithmetic:
  equal bits under the `nofma` guard, an unnormalized, a unit and a zero quaternion among Q."""
  rng = np.random.default_rng(1)
  q = rng.normal(size=(64, 4))
  q[1] /= np.linalg.norm(q[1])
  q[2] = 0.0
  q, p, v, mat = (jnp.asarray(x, dtype) for x in (q, rng.normal(size=(64, 4)),
                                                   rng.normal(size=(64, 3)),
                                                   rng.normal(size=(64, 9))))
  cols = lambda x: [x[:, i] for i in range(x.shape[1])]  # noqa: E731

  @jax.jit
  def both(q, p, v, mat):
    z = math.opaque_zero(jnp.sum(q * q))
    stacked = (math.quat_mul(q, p, z), math.rot_vec_quat(v, q, z),
               math.mat_vec3(mat.reshape(-1, 3, 3), v, z), math.quat_to_mat(q, z).reshape(-1, 9),
               math.normalize_quat(q, z))
    comps = (math.quat_mul_c(cols(q), cols(p), z), math.rot_vec_quat_c(cols(v), cols(q), z),
             math.mat_vec3_c(cols(mat), cols(v), z), math.quat_to_mat_c(cols(q), z),
             math.normalize_quat_c(cols(q), z))
    return stacked, tuple(jnp.stack(c, -1) for c in comps)

  for a, b in zip(*both(q, p, v, mat)):
    np.testing.assert_array_equal(a, b)


def test_component_normalization_derivative_matches_finite_differences():
  """normalize_quat_c is differentiated as q/|q| (as normalize_quat), zero at zero."""
  def fn(q):
    return jnp.stack(math.normalize_quat_c([q[:, i] for i in range(4)]), -1)

  _check(fn, (Q,), order=1)
  t = jax.jvp(fn, (jnp.zeros((1, 4)),), (jnp.ones((1, 4)),))[1]
  np.testing.assert_array_equal(t, 0.0)
