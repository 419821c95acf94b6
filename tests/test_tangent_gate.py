"""jaxmj/tangent_gate.py: a stage's tangent under a branch on its primal result. Where the
gate is open every mode of differentiation (jvp, grad, jacfwd, jacrev, under vmap and jit)
equals the ungated function's; where it is closed the tangent is zero; a contact-free fall,
whose collision and constraint-row tangents are skipped, still matches central differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmj
from jaxmj import tangent_gate
from jaxmj.tangent_gate import gated_tangent


def _stage(x, y):
  return {"a": jnp.sin(x) * y, "b": jnp.cos(x).sum(), "index": jnp.arange(3)}


def _loss(stage):
  def loss(x, y):
    out = stage(x, y)
    return (out["a"] ** 2).sum() + out["b"]
  return loss


PLAIN = _loss(_stage)
GATED = _loss(lambda x, y: gated_tangent(lambda out: jnp.any(out["a"] > 0), _stage, x, y))
X = jnp.array([0.3, 1.2, 2.0])
Y = jnp.array([1.0, 2.0, 3.0])


@pytest.mark.parametrize("mode", [jax.grad, jax.jacfwd, jax.jacrev])
def test_open_gate_differentiates_as_the_stage(mode):
  for argnums in (0, (0, 1)):
    np.testing.assert_allclose(jax.jit(mode(GATED, argnums))(X, Y), mode(PLAIN, argnums)(X, Y),
                               rtol=1e-6)


def test_open_gate_under_vmap_of_each_mode_and_mode_of_vmap():
  xb, yb = jnp.stack([X, 2 * X]), jnp.stack([Y, Y + 1])
  for mode in (jax.grad, jax.jacfwd, jax.jacrev):
    np.testing.assert_allclose(jax.vmap(mode(GATED))(xb, yb), jax.vmap(mode(PLAIN))(xb, yb),
                               rtol=1e-6)
  # y shared by the batch: its cotangent summed over the worlds
  np.testing.assert_allclose(jax.vmap(jax.grad(GATED, 1), (0, None))(xb, Y),
                             jax.vmap(jax.grad(PLAIN, 1), (0, None))(xb, Y), rtol=1e-6)
  np.testing.assert_allclose(
    jax.grad(lambda x: jax.vmap(GATED)(x, yb).sum())(xb),
    jax.grad(lambda x: jax.vmap(PLAIN)(x, yb).sum())(xb), rtol=1e-6)


def test_gate_is_one_branch_for_a_batch():
  """A world whose own predicate fails gets the tangent where another world's holds (the
  predicate is reduced over the batch), and a zero one where no world's holds."""
  apart = -jnp.abs(X)  # sin(x) * y < 0 with y > 0
  xb = jnp.stack([apart, X])
  np.testing.assert_allclose(jax.vmap(jax.grad(GATED))(xb, jnp.stack([Y, Y])),
                             jax.vmap(jax.grad(PLAIN))(xb, jnp.stack([Y, Y])), rtol=1e-6)
  g = jax.vmap(jax.grad(GATED))(jnp.stack([apart, apart]), jnp.stack([Y, Y]))
  np.testing.assert_array_equal(g, 0.0)


def test_closed_gate_tangent_is_zero():
  stage = lambda x: gated_tangent(lambda out: jnp.any(out > 10), jnp.sin, x)  # noqa: E731
  _, t = jax.jvp(stage, (X,), (jnp.ones(3),))
  np.testing.assert_array_equal(t, 0.0)
  np.testing.assert_array_equal(jax.grad(lambda x: stage(x).sum())(X), 0.0)
  np.testing.assert_array_equal(stage(X), jnp.sin(X))


def test_without_the_internals_the_stage_is_differentiated_as_it_is(monkeypatch):
  monkeypatch.setattr(tangent_gate, "_GATED", False)
  stage = lambda x: gated_tangent(lambda out: jnp.any(out > 10), jnp.sin, x)  # noqa: E731
  np.testing.assert_allclose(jax.grad(lambda x: stage(x).sum())(X), jnp.cos(X))


FALL = """<mujoco><option timestep="0.005"/><worldbody>
  <geom type="plane" size="3 3 .1"/>
  <body pos="0 0 1"><joint type="hinge" axis="0 1 0" range="-60 60" limited="true"/>
    <joint type="slide" axis="0 0 1"/><joint type="slide" axis="1 0 0"/>
    <geom type="capsule" fromto="0 0 0 .3 0 0" size=".05"/></body>
  </worldbody></mujoco>"""


def test_contact_free_fall_matches_central_differences():
  """A capsule falling clear of the floor and of its hinge's limit: every step's gates are
  closed (no contact in any slot, no constraint row active), and jvp and grad still equal
  central differences of the loss."""
  m = jaxmj.Model.from_xml_string(FALL)
  d = jaxmj.make_data(m)
  qvel = jnp.array([0.5, 0.2, 0.3])

  def loss(qvel):
    final, traj = jaxmj.rollout(m, d.replace(qvel=qvel), nstep=10)
    return jnp.sum(final.qpos ** 2) + jnp.sum(traj["qvel"] ** 2)

  _, traj = jaxmj.rollout(m, d.replace(qvel=qvel), nstep=10, fields=("efc_active",))
  assert traj["efc_active"].shape[1] > 0 and not bool(jnp.any(traj["efc_active"]))
  v = jnp.array([0.3, -0.7, 0.5])
  eps = 1e-6
  fd = (loss(qvel + eps * v) - loss(qvel - eps * v)) / (2 * eps)
  np.testing.assert_allclose(jax.jit(jax.grad(loss))(qvel) @ v, fd, rtol=1e-7)
  np.testing.assert_allclose(jax.jvp(loss, (qvel,), (v,))[1], fd, rtol=1e-7)


def test_a_scan_of_gated_stages_differentiates_under_vmap():
  # a stage output read from unbatched inputs alone ("c") is unbatched in the scan's body as
  # vmap stages it, and its tangent (the gate's linear call, batched) came batched: a scan of
  # steps under vmap failed in reverse mode (Brax's APG through jaxmj.envs)
  def stage(x, y, c):
    return {"a": jnp.sin(x) * y, "c": jnp.cos(c)}

  def loss(x, y, c):
    def body(carry, _):
      x, y = carry
      out = gated_tangent(lambda out: jnp.any(out["a"] > 0), stage, x, y, c)
      return (x + 0.1 * out["a"] * out["c"].sum(), y), None
    return jax.lax.scan(body, (x, y), length=3)[0][0].sum()

  plain = jax.grad(lambda y: jax.vmap(loss, (None, 0, None))(X, y, X).sum())
  ys = jnp.stack([Y, 2 * Y])
  each = np.stack([jax.grad(lambda y: loss(X, y, X))(y) for y in ys])
  np.testing.assert_allclose(jax.jit(plain)(ys), each, rtol=1e-6)


def test_a_vmapped_rollout_of_steps_with_constraint_rows_differentiates():
  # the cart-pole's rail limits make constraint rows (the gated make_constraint stage)
  from jaxmj import envs

  m = envs.load("CartpoleBalance").sys
  d = jaxmj.make_data(m)

  def final_qpos(ctrl):
    out = jax.lax.scan(lambda d, _: (jaxmj.step(m, d), None), d.replace(ctrl=ctrl), length=2)
    return out[0].qpos.sum()

  ctrls = jnp.array([[0.1], [-0.3]], d.ctrl.dtype)
  batched = jax.jit(jax.grad(lambda u: jax.vmap(final_qpos)(u).sum()))(ctrls)
  each = np.stack([jax.grad(final_qpos)(u) for u in ctrls])
  assert np.all(np.isfinite(batched)) and np.abs(each).max() > 0
  np.testing.assert_allclose(batched, each, rtol=1e-6, atol=1e-12)
