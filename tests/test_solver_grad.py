"""opt.grad: the unrolled solver derivative matches the simulated trajectory at few iterations.

A box slides and spins on a plane for 20 steps with the solver stopped early (Newton 1
iteration, CG 2, PGS 3): the simulated trajectory is then not the converged one, and the
gradient of a projection of the final state w.r.t. the initial velocity is held against
central finite differences of that trajectory (every constraint row's state unchanged by the
probes). opt.grad="unrolled" matches to 1e-6; "implicit" (the default, the derivative of the
converged optimum) is measurably off, which is why the option exists (measured: 55%, 81% and
61% for the three solvers).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmj
from jaxmj.types import Solver

XML = """<mujoco><option timestep="0.005"/><worldbody>
  <geom type="plane" size="3 3 .1" friction=".5 .01 .001"/>
  <body pos="0 0 .0495" euler="0 0 15"><freejoint/>
    <geom type="box" size=".1 .1 .05"/></body>
  </worldbody></mujoco>"""

QVEL = np.array([1.0, 0.3, -0.2, 0.5, -0.4, 0.2])
FD_EPS = 1e-6
NSTEP = 20


def _gradient_error(solver: Solver, iterations: int, grad: str) -> float:
  """max |grad - fd| / max |fd| over the six initial-velocity components."""
  m0 = jaxmj.Model.from_xml_string(XML)
  m = m0.replace(opt=m0.opt.replace(solver=solver, iterations=iterations, grad=grad))
  d = jaxmj.make_data(m)
  proj = jnp.asarray(np.random.default_rng(0).normal(size=m.nq + m.nv))

  def loss(qvel):
    final, traj = jaxmj.rollout(m, d.replace(qvel=qvel), nstep=NSTEP, fields=("efc_state",))
    return proj @ jnp.concatenate([final.qpos, final.qvel]), traj["efc_state"]

  fn = jax.jit(jax.value_and_grad(loss, has_aux=True))
  qvel = jnp.asarray(QVEL)
  (_, states), g = fn(qvel)
  assert np.all(np.isfinite(g))
  fd = np.zeros(len(QVEL))
  for i in range(len(QVEL)):
    e = FD_EPS * np.eye(len(QVEL))[i]
    (fp, sp), _ = fn(qvel + e)
    (fm, sm), _ = fn(qvel - e)
    np.testing.assert_array_equal(sp, states)
    np.testing.assert_array_equal(sm, states)
    fd[i] = (float(fp) - float(fm)) / (2 * FD_EPS)
  return float(np.max(np.abs(np.asarray(g) - fd)) / np.max(np.abs(fd)))


CASES = [(Solver.NEWTON, 1), pytest.param(Solver.CG, 2, marks=pytest.mark.slow),
         pytest.param(Solver.PGS, 3, marks=pytest.mark.slow)]


@pytest.mark.parametrize("solver,iterations", CASES)
def test_unrolled_gradient_matches_simulated_trajectory(solver, iterations):
  assert _gradient_error(solver, iterations, "unrolled") < 1e-6


@pytest.mark.slow
@pytest.mark.parametrize("solver,iterations", [(Solver.NEWTON, 1), (Solver.PGS, 3)])
def test_implicit_gradient_is_that_of_the_converged_solve(solver, iterations):
  assert _gradient_error(solver, iterations, "implicit") > 0.1


def test_unknown_grad_option_is_refused():
  m = jaxmj.Model.from_xml_string(XML)
  m = m.replace(opt=m.opt.replace(grad="exact"))
  with pytest.raises(ValueError, match="opt.grad"):
    jax.eval_shape(jaxmj.forward, m, jaxmj.make_data(m))
