"""rollout(checkpoint=...): same values and gradients as the plain scan, less memory.

The gradient itself is held to finite differences elsewhere (test_batch_grad.py); here the
checkpointed rollout is held to the plain one, whose gradient that test checks. Memory is
XLA's own account of the compiled gradient's temporaries (memory_analysis).
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import MODELS
from jax.extend import core as jcore

import jaxmj
from jaxmj.dynamics import checkpoint as remat

NSTEP = 7  # not a multiple of the segment length: the remainder segment runs too


def _loss(m, d, checkpoint, nstep=NSTEP):
  def loss(qvel):
    final, traj = jaxmj.rollout(m, d.replace(qvel=qvel), nstep=nstep, checkpoint=checkpoint)
    return jnp.sum(final.qpos ** 2) + jnp.sum(traj["qvel"] ** 2)
  return loss


@pytest.fixture(scope="module")
def pendulum():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "double_pendulum.xml"))
  d = jaxmj.make_data(m).replace(qvel=jnp.asarray([0.5, -1.0]))
  return m, d


def test_checkpointed_rollout_has_the_plain_values_and_gradient(pendulum):
  m, d = pendulum
  plain = jax.jit(jax.value_and_grad(_loss(m, d, None)))(d.qvel)
  value, grad = jax.jit(jax.value_and_grad(_loss(m, d, True)))(d.qvel)  # segments 3, 3, 1
  np.testing.assert_allclose(value, plain[0], rtol=1e-13)
  np.testing.assert_allclose(grad, plain[1], rtol=1e-12)


def _toy_temp_bytes(k, nstep):
  """Temporaries of the gradient of a scan whose steps keep a (256,) residual each."""
  def body(c, u):
    c = jnp.sin(c) * u + c
    return c, c[0]

  def loss(c0):
    xs = jnp.ones((nstep, 1))
    c, ys = jax.lax.scan(body, c0, xs) if k is None else remat.segmented_scan(body, c0, xs, k)
    return jnp.sum(c) + jnp.sum(ys)

  c0 = jnp.zeros(256)
  return jax.jit(jax.grad(loss)).lower(c0).compile().memory_analysis().temp_size_in_bytes


def test_checkpointed_gradient_memory_grows_like_sqrt_of_the_horizon():
  plain = [_toy_temp_bytes(None, t) for t in (100, 1600)]
  ckpt = [_toy_temp_bytes(remat.segment_length(True, t), t) for t in (100, 1600)]
  assert plain[1] > 10 * plain[0]  # linear in T
  assert ckpt[1] < 6 * ckpt[0]  # ~sqrt(T): 4x for 16x the steps
  assert ckpt[1] < plain[1] / 8


def test_segment_lengths_and_checks(pendulum):
  assert [remat.segment_length(True, t) for t in (1, 4, 5, 1000)] == [1, 2, 3, 32]
  final, traj = remat.segmented_scan(lambda c, u: (c + u, c), 0.0, jnp.arange(7.0), 3)
  assert float(final) == 21.0 and traj.tolist() == [0, 0, 1, 3, 6, 10, 15]
  m, d = pendulum
  with pytest.raises(ValueError, match="checkpoint"):
    jaxmj.rollout(m, d, nstep=3, checkpoint=0)


@pytest.mark.slow
def test_humanoid_floor_gradient_through_1000_steps_is_finite_in_bounded_memory():
  """Contacts at default solver settings; plain reverse mode would keep ~1000 steps'
  residuals (241 MiB of temporaries at float32, scripts/bench_grad_memory.py)."""
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "humanoid_floor.xml"))
  d = jaxmj.make_data(m)
  grad = jax.jit(jax.grad(_loss(m, d, True, nstep=1000)))
  compiled = grad.lower(d.qvel).compile()
  assert compiled.memory_analysis().temp_size_in_bytes < 64 * 2**20
  assert np.all(np.isfinite(compiled(d.qvel + 0.1)))


def _eqns(jaxpr):
  """Every equation of `jaxpr` and of the jaxprs nested in it."""
  for eqn in jaxpr.eqns:
    yield eqn
    for sub in jcore.jaxprs_in_params(eqn.params):
      yield from _eqns(sub)


def _outer_scans(jaxpr, length):
  """The bodies of the scans of `length` trips not nested in another scan: a rollout's
  forward and backward scans (the colliders run scans of their own)."""
  out = []
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "scan":
      out += [eqn.params["jaxpr"].jaxpr] if eqn.params["length"] == length else []
    else:
      for sub in jcore.jaxprs_in_params(eqn.params):
        out += _outer_scans(sub, length)
  return out


# a box on a plane: the solver (Newton at 100 iterations: a while loop); an ellipsoid, a
# cylinder and a mesh on a plane: the near-pair search, GJK, EPA, the mesh hill climb too
_LOOP_SCENES = {
  "solver": """<geom type="plane" size="1 1 1"/>
    <body pos="0 0 0.05"><freejoint/><geom type="box" size="0.05 0.05 0.05"/></body>""",
  "colliders": """<geom type="plane" size="5 5 .1"/>
    <body pos="0 0 .06"><freejoint/><geom type="ellipsoid" size=".1 .08 .06"/></body>
    <body pos=".5 0 .3"><freejoint/><geom type="cylinder" size=".1 .05"/></body>
    <body pos="0 .5 .3"><freejoint/><geom type="mesh" mesh="m"/></body>""",
}


@pytest.mark.parametrize("scene", sorted(_LOOP_SCENES))
def test_rollout_gradient_keeps_while_loop_results_instead_of_rerunning_them(scene):
  """jax.checkpoint recomputes a while loop's outputs in the backward pass whatever its
  policy; loops.kept names them so that they are kept instead: the backward scan of a
  rollout runs no solver iterations and no collision search (only the forward scan does)."""
  m = jaxmj.Model.from_xml_string(f"""<mujoco><asset><mesh name="m"
    vertex="0 0 0 .1 0 0 0 .1 0 0 0 .1 .1 .1 .1"/></asset>
    <worldbody>{_LOOP_SCENES[scene]}</worldbody></mujoco>""")
  d = jaxmj.make_data(m)
  jaxpr = jax.make_jaxpr(jax.grad(_loss(m, d, None, nstep=2)))(d.qvel).jaxpr
  forward, backward = _outer_scans(jaxpr, 2)
  loops = lambda jx: sum(e.primitive.name == "while" for e in _eqns(jx))  # noqa: E731
  assert loops(forward) > (1 if scene == "colliders" else 0)
  assert loops(backward) == 0
