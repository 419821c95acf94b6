"""The implicit derivative's contact-free shortcut (solver/driver.py, `solve_h`).

Where no constraint row has a Hessian weight the implicit derivative takes H = M and solves
with the mass matrix's factor instead of forming and inverting J' D J + M. Held against
central finite differences of a rollout in flight (rows present, none active), and under vmap
with a batch mixing a world in flight and one on the ground, where both take the general path
and each world's gradient must be its own (float64).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmj
from jaxmj.enums import ConstraintState
from jaxmj.loops import batch_any

# a ball and a limited two-link arm over a plane: contact and limit rows exist, and are
# inactive while the ball flies and the arm swings inside its range
XML = """<mujoco><option timestep="0.005"/><worldbody>
  <geom type="plane" size="3 3 .1"/>
  <body name="ball" pos="0 0 .6"><freejoint/><geom type="sphere" size=".1"/></body>
  <body pos="1 0 1.2">
    <joint type="hinge" axis="0 1 0" range="-60 60" damping=".1"/>
    <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
    <body pos=".3 0 0"><joint type="hinge" axis="0 1 0" range="-45 45"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/></body>
  </body></worldbody></mujoco>"""

NSTEP = 10
FD_EPS = 1e-6


@pytest.fixture(scope="module")
def case():
  """(model, initial Data, jitted value_and_grad of loss(qpos, qvel) w.r.t. qvel, the
  initial velocity), float64."""
  with jax.enable_x64(True):
    m = jaxmj.Model.from_xml_string(XML)
    d = jaxmj.make_data(m)
    vg = jax.jit(jax.value_and_grad(functools.partial(_loss, m, d), argnums=1, has_aux=True))
    yield m, d, vg, jnp.asarray(np.linspace(-0.5, 0.5, m.nv))


def _loss(m, d, qpos, qvel):
  """|qpos_T|^2 + |qvel_T|^2 after NSTEP steps, and every step's efc_state."""
  final, traj = jaxmj.rollout(m, d.replace(qpos=qpos, qvel=qvel), nstep=NSTEP,
                              fields=("efc_state",))
  return jnp.sum(final.qpos ** 2) + jnp.sum(final.qvel ** 2), traj["efc_state"]


def test_contact_free_gradient_matches_finite_differences(case):
  m, d, vg, qvel = case
  with jax.enable_x64(True):
    (_, states), g = vg(d.qpos, qvel)
    assert states.shape[1] > 0 and np.all(np.asarray(states) == ConstraintState.SATISFIED)
    fd = np.zeros(m.nv)
    for i in range(m.nv):
      e = FD_EPS * np.eye(m.nv)[i]
      fd[i] = (float(vg(d.qpos, qvel + e)[0][0]) - float(vg(d.qpos, qvel - e)[0][0])) / (
        2 * FD_EPS)
    np.testing.assert_allclose(g, fd, rtol=1e-7, atol=1e-8)


def test_batch_gradient_is_each_worlds_own(case):
  """One world in flight, one with the ball on the plane (rows with weights): vmapped
  together both take the general path, each world's gradient its own, as in a batch of two
  copies of that world (the flying pair takes the shortcut alone: equal up to round-off).
  One compiled program: each batch has the same shapes."""
  m, d, vg, qvel = case
  with jax.enable_x64(True):
    fly, ground = d.qpos, d.qpos.at[2].set(0.099)
    batched = jax.jit(jax.vmap(lambda q: vg(q, qvel)))
    ((_, states), mixed) = batched(jnp.stack([fly, ground]))
    states = np.asarray(states)
    assert np.all(states[0] == ConstraintState.SATISFIED)
    assert np.any(states[1] != ConstraintState.SATISFIED)
    for world, qpos in enumerate((fly, ground)):
      _, alone = batched(jnp.stack([qpos, qpos]))
      np.testing.assert_allclose(mixed[world], alone[0], rtol=1e-10, atol=1e-12)


def test_batch_any_reduces_over_the_batch_only():
  pred = jnp.array([False, True, False])
  assert bool(batch_any(pred[0])) is False
  np.testing.assert_array_equal(jax.vmap(batch_any)(pred), [True, True, True])
  np.testing.assert_array_equal(jax.vmap(batch_any)(jnp.zeros(3, bool)), [False] * 3)
  # nested vmaps (worlds, then a world's pairs): reduced over both axes, not the inner only
  one = jnp.zeros((2, 3), bool).at[0, 1].set(True)
  np.testing.assert_array_equal(jax.vmap(jax.vmap(batch_any))(one), np.ones((2, 3), bool))
  np.testing.assert_array_equal(jax.vmap(jax.vmap(batch_any))(~one & one), np.zeros((2, 3)))
  # a cond on it stays a branch under vmap (no select of both sides)
  f = lambda p, x: jax.lax.cond(batch_any(p), jnp.sin, jnp.cos, x)  # noqa: E731
  text = jax.jit(jax.vmap(f)).lower(pred, jnp.ones(3)).as_text()
  assert "case" in text and "select" not in text
