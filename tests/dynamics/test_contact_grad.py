"""Reverse-mode gradients through contact dynamics equal central finite differences.

A ball bounces on a plane (soft, underdamped contact: it leaves the floor again) and a box
slides on a plane with friction, both under the Newton solver at MuJoCo's default
`opt.iterations` (100) and `ls_iterations` (50). The dynamics are smooth in the initial
velocity only while each step's set of active contacts (and of sticking/sliding friction
rows) stays the same, so every finite-difference probe first checks that the perturbed
trajectories have the nominal contact and constraint-state sequences. The gradient is
jaxmj's default: the solver's implicit-function derivative at its (100-iteration) result.

The 100-step cases check the full gradient (every qvel component) and are slow; the
default suite runs 20-30 steps along two random directions (compile time dominates).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mujoco_compare import FAST as _FAST

import jaxmj

FD_EPS = 1e-6
RTOL = 1e-4

BALL_XML = """<mujoco><option timestep="0.005"/><worldbody>
  <geom type="plane" size="3 3 .1" friction=".7 .01 .001"/>
  <body pos="0 0 .2"><freejoint/>
    <geom type="sphere" size=".1" solref=".02 .1" density="500"/></body>
  </worldbody></mujoco>"""

# a flat box at its resting height, low friction: it slides through the whole horizon (its
# corners chatter by ~50 um, as in MuJoCo, so the contact set varies from step to step)
BOX_XML = """<mujoco><option timestep="0.002"/><worldbody>
  <geom type="plane" size="3 3 .1" friction=".05 .01 .001"/>
  <body pos="0 0 .019999863" euler="0 0 15"><freejoint/>
    <geom type="box" size=".1 .1 .02" friction=".05 .01 .001"/></body>
  </worldbody></mujoco>"""

# initial velocities: the ball is thrown down and sideways with spin, the box sideways
BALL_QVEL = np.array([0.8, -0.3, -1.5, 2.0, 1.0, -3.0])
BOX_QVEL = np.array([1.0, 0.3, 0.0, 0.0, 0.0, 0.2])



def _rollout(m, nstep):
  def run(d, qvel):
    final, traj = jaxmj.rollout(m, d.replace(qvel=qvel), nstep=nstep,
                                fields=("qpos", "efc_state", "contact"))
    return final, traj["efc_state"], traj["contact"].active
  return run


def _setup(xml, qvel, nstep, proj_seed=0):
  m = jaxmj.Model.from_xml_string(xml)
  d = jaxmj.make_data(m)
  rng = np.random.default_rng(proj_seed)
  proj = jnp.asarray(rng.normal(size=m.nq + m.nv))
  run = _rollout(m, nstep)

  def loss(qvel):
    final, states, active = run(d, qvel)
    return jnp.dot(proj, jnp.concatenate([final.qpos, final.qvel])), (states, active)

  # one compiled function serves the gradient and the probes: a second compile of the
  # rollout would cost more than the probes' extra backward passes
  fn = jax.jit(jax.value_and_grad(loss, has_aux=True), compiler_options=_FAST)
  return fn, jnp.asarray(qvel)


def _check(xml, qvel, nstep, ndir=None):
  """jax.grad of the loss against central differences, along every unit vector of qvel
  (ndir None) or along `ndir` random directions. Returns the active-contact history."""
  value_and_grad, qvel = _setup(xml, qvel, nstep)
  value = lambda v: value_and_grad(v)[0]
  (_, (states, active)), g = value_and_grad(qvel)
  g = np.asarray(g)
  assert np.all(np.isfinite(g))
  rng = np.random.default_rng(1)
  dirs = np.eye(len(g)) if ndir is None else rng.normal(size=(ndir, len(g)))
  fd = np.zeros(len(dirs))
  for i, e in enumerate(dirs):
    (fp, (sp, ap)), (fm, (sm, am)) = value(qvel + FD_EPS * e), value(qvel - FD_EPS * e)
    # the contact set and every row's solver state are those of the nominal trajectory
    for s, a in ((sp, ap), (sm, am)):
      np.testing.assert_array_equal(np.asarray(a), np.asarray(active))
      np.testing.assert_array_equal(np.asarray(s), np.asarray(states))
    fd[i] = (float(fp) - float(fm)) / (2 * FD_EPS)
  np.testing.assert_allclose(dirs @ g, fd, rtol=RTOL, atol=RTOL * np.max(np.abs(fd)))
  return np.asarray(active)


def _bounced(active):
  """The ball touched the floor and left it again within the horizon."""
  touching = active.any(axis=1)
  first = np.argmax(touching)
  return touching.any() and not touching[first:].all()


def test_bouncing_ball_gradient_matches_finite_differences_short():
  assert _bounced(_check(BALL_XML, BALL_QVEL, 30, ndir=2))


def test_sliding_box_gradient_matches_finite_differences_short():
  active = _check(BOX_XML, BOX_QVEL, 20, ndir=2)
  assert active.any(axis=1).mean() > 0.5


@pytest.mark.slow
def test_bouncing_ball_gradient_matches_finite_differences_100_steps():
  assert _bounced(_check(BALL_XML, BALL_QVEL, 100))


@pytest.mark.slow
def test_sliding_box_gradient_matches_finite_differences_100_steps():
  active = _check(BOX_XML, BOX_QVEL, 100)
  assert active.any(axis=1).mean() > 0.5
