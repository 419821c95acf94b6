"""collision/common.py's dot3, cross3, normalize3, mat_vec3 and mat_t_vec3 derivative
rules (whole tangents where the operands have one shape, sliced otherwise) against central
finite differences, forward and reverse."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.test_util import check_grads

from jaxmj.collision import common

V = jnp.asarray(np.random.default_rng(1).normal(size=(4, 3)))


def _check(fn, args, order=2):
  check_grads(fn, args, order=order, modes=["fwd", "rev"], eps=1e-6, atol=1e-7, rtol=1e-7)


def test_dot3_and_cross3_rules_match_finite_differences():
  _check(common.dot3, (V[0], V[1]))
  _check(common.cross3, (V[0], V[1]))
  _check(jax.vmap(common.dot3), (V, V[::-1]))
  _check(jax.vmap(common.cross3), (V, V[::-1]))


def test_dot3_and_cross3_rules_with_unequal_shapes():
  _check(common.dot3, (V[0], V.T), order=1)  # (3,) with (3, 4): one dot per column
  _check(common.cross3, (V[0], V.T[:, :2]), order=1)


def test_normalize3_and_mat_vec3_rules_match_finite_differences():
  mat = V[1:].T
  _check(common.normalize3, (V[0],))
  _check(jax.vmap(common.normalize3), (V,))
  _check(common.mat_vec3, (mat, V[0]))
  _check(common.mat_t_vec3, (mat, V[0]))
  _check(jax.vmap(common.mat_vec3, (None, 0)), (mat, V))


def test_normalize3_rule_at_zero_is_finite_and_primal_unchanged():
  zero = jnp.zeros(3)
  (unit, norm), (dunit, dnorm) = jax.jvp(common.normalize3, (zero,), (V[0],))
  assert np.array_equal(unit, [1.0, 0.0, 0.0]) and norm == 0
  assert np.all(dunit == 0) and dnorm == 0
  assert np.all(np.isfinite(jax.grad(lambda v: jnp.sum(common.normalize3(v)[0]) +
                                     common.normalize3(v)[1])(zero)))


def test_take_rows_derivatives_are_the_select_chains_and_transpose_to_one_reduction():
  rng = np.random.default_rng(3)
  valid = jnp.asarray(rng.random((4, 16)) > 0.5)
  sel = jax.vmap(lambda v: common.first_k(v, 8)[0])(valid)
  x = jnp.asarray(rng.normal(size=(4, 16, 3)))
  def results(f):  # values, forward and reverse mode
    return (jax.vmap(f)(sel, x),
            jax.vmap(lambda s, x: jax.jvp(lambda x: f(s, x), (x,), (2 * x,))[1])(sel, x),
            jax.vmap(jax.grad(lambda s, x: jnp.sum(f(s, x) ** 3), 1))(sel, x))

  # against the bare select chain, differentiated by JAX itself
  for a, b in zip(results(common.take_rows), results(common._select_rows)):
    np.testing.assert_array_equal(a, b)
  check_grads(lambda x: common.take_rows(sel[0], x), (x[0],), order=2, modes=["fwd", "rev"])
  # reverse mode: one reduction over the picks, not one per row of x
  grad = jax.jit(jax.grad(lambda x: jnp.sum(common.take_rows(sel[0], x) ** 2)))
  assert grad.lower(x[0]).compile().as_text().count(" reduce(") == 1
