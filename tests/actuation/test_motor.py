"""PID and DC motor actuators (actuation/motor.py) held against mujoco 4.0.0: forces and act_dot
at random states, 200-step trajectories with actuator sensors under Euler and implicitfast
(1e-8), and gradients w.r.t. ctrl and the motor parameters against finite differences (of
mj_fwdActuation by default, of a rollout with --runslow). The compiler side is in
tests/mjcf/test_motor_compile.py."""

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from mujoco_compare import (  # noqa: E402
  FAST,
  assert_actuation_matches,
  assert_ctrl_rollout_matches,
  load_both,
  model_differences,
)

import jaxmj  # noqa: E402
from jaxmj.actuation.driver import fwd_actuation  # noqa: E402
from jaxmj.dynamics.forward import fwd_position, fwd_velocity  # noqa: E402

# Every state (slew, integral, temperature, bristle, current), each controller input, the
# force and voltage limits, cogging and LuGre friction, the pid type through <general>.
ACTUATORS = """
  <pid joint="h1" kp="10" kv="2" ki="3" imax=".2" slewmax="5" input="pos" posrange="-1 1"/>
  <pid joint="s1" kp="4" dampratio=".5" input="vel"/>
  <pid joint="s1" kp="2" kv="1" input="ff" forcerange="-1 1"/>
  <dcmotor joint="h2" motorconst=".5" resistance="2" input="pos" controller="10 3 1 20 .05 3"
           thermal="1 2 3 .004 25 20" inductance=".04" lugre="100 2 .1 .2 .05"
           cogging=".1 6 .3"/>
  <dcmotor joint="s2" motorconst=".5 .6" resistance="2" input="vel" controller="10 0 1 20 0 6"
           inductance="0 .01" saturation="0 0 50"/>
  <dcmotor joint="h3" nominal="12 1 100" saturation=".2" cogging=".05 4 0"/>
  <general joint="h3" gaintype="pid" dyntype="pid" biastype="affine" gainprm="1"
           biasprm="0 -2 -3" input="pos" actdim="1"/>
"""


def _model(integrator: str, actuators: str = ACTUATORS) -> str:
  return f"""
<mujoco>
  <option timestep="0.005" integrator="{integrator}">
    <flag constraint="disable"/>
  </option>
  <worldbody>
    <body><joint name="h1" axis="0 1 0" damping=".05"/><geom size=".1" pos=".2 0 0"/></body>
    <body pos="1 0 0"><joint name="s1" type="slide" axis="1 0 0"/><geom size=".1"/></body>
    <body pos="0 1 0"><joint name="h2" axis="1 0 0"/><geom size=".05 .1 .2" type="box"/></body>
    <body pos="1 1 0"><joint name="s2" type="slide" axis="0 0 1"/><geom size=".1"/></body>
    <body pos="2 0 0"><joint name="h3" axis="0 0 1"/><geom size=".1" pos="0 .3 0"/></body>
  </worldbody>
  <actuator>{actuators}</actuator>
  <sensor><actuatorfrc actuator="a3"/><jointactuatorfrc joint="h2"/></sensor>
</mujoco>"""


def _with_names(actuators: str) -> str:
  """The actuator list with names a0, a1, ... (the sensors read a3)."""
  parts = actuators.split("<")[1:]
  named = []
  for k, part in enumerate(parts):
    tag, rest = part.split(" ", 1)
    named.append(f'<{tag} name="a{k}" {rest}')
  return "".join(named)


@pytest.fixture(scope="module")
def euler():
  return load_both(xml=_model("Euler", _with_names(ACTUATORS)))


def test_model_compiles_as_mujoco(euler):
  m, mj = euler
  assert model_differences(m, mj) == []
  assert m.na == mj.na == 10
  np.testing.assert_array_equal(m.actuator_slots[3], [0, 1, 2, 3, 4])


def test_forces_and_activation_rates_match_mujoco_at_random_states(euler):
  """mj_fwdActuation's outputs; the sensors that read them are held in the trajectories."""
  m, mj = euler
  assert_actuation_matches(m, mj)


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast"])
def test_trajectory_matches_mj_step(integrator):
  m, mj = load_both(xml=_model(integrator, _with_names(ACTUATORS)))
  assert_ctrl_rollout_matches(m, mj, [0.3, -0.1, 0.2, 0.05, -0.4], [0.5, -0.3, 1.0, 0.2, -0.7],
                              steps=200)


def _fd_check(f, x, mask, seed, eps=1e-6):
  """jax.grad of f at x (a tuple of arrays) against central differences along two random
  directions restricted to `mask` (the parameters f is smooth in)."""
  grad = jax.jit(jax.grad(f), compiler_options=FAST)(x)
  fj = jax.jit(f, compiler_options=FAST)
  rng = np.random.default_rng(seed)
  for _ in range(2):
    v = tuple(rng.normal(size=a.shape) * k for a, k in zip(x, mask))
    fd = (fj(tuple(a + eps * b for a, b in zip(x, v)))
          - fj(tuple(a - eps * b for a, b in zip(x, v)))) / (2 * eps)
    slope = sum(jnp.sum(g * b) for g, b in zip(grad, v))
    np.testing.assert_allclose(slope, fd, rtol=1e-5, atol=1e-8)


GRAD_ACTUATORS = ('<pid joint="h1" kp="10" kv="2" ki="3" slewmax="50" input="pos"/>'
                  '<dcmotor joint="h2" motorconst=".5" resistance="2" input="pos" '
                  'controller="10 3 1" inductance=".04" thermal="1 2 3 .004 25 20" '
                  'lugre="100 2 .1 .2 .05"/>')
# R, K and the controller's kp, ki, kd of the DC motor; ki of the PID (thresholds such as
# Vmax or imax switch behaviour on at zero, so they are left out)
GAIN_MASK = np.zeros((2, 10))
GAIN_MASK[0, 0] = 1
GAIN_MASK[1, [0, 1, 4, 5, 6]] = 1


def test_actuation_gradient_matches_finite_differences():
  m = jaxmj.Model.from_xml_string(_model("Euler", GRAD_ACTUATORS).replace(
    '<sensor><actuatorfrc actuator="a3"/><jointactuatorfrc joint="h2"/></sensor>', ""))
  d = jaxmj.make_data(m).replace(qpos=jnp.array([0.3, -0.1, 0.2, 0.05, -0.4]),
                                 qvel=jnp.array([0.5, -0.3, 1.0, 0.2, -0.7]),
                                 act=jnp.array([0.1, -0.2, 0.3, 0.2, -0.1, 0.4]))
  d = jax.jit(lambda m, d: fwd_velocity(m, fwd_position(m, d)), compiler_options=FAST)(m, d)

  def loss(x):
    out = fwd_actuation(m.replace(actuator_gainprm=x[1]), d.replace(ctrl=x[0]))
    return jnp.sum(out.qfrc_actuator ** 2) + 1e-4 * jnp.sum(out.act_dot ** 2)

  _fd_check(loss, (jnp.array([0.7, -0.4]), m.actuator_gainprm), (1.0, GAIN_MASK), seed=0)


@pytest.mark.slow
def test_rollout_gradient_matches_finite_differences():
  m = jaxmj.Model.from_xml_string(_model("implicitfast", GRAD_ACTUATORS).replace(
    '<sensor><actuatorfrc actuator="a3"/><jointactuatorfrc joint="h2"/></sensor>', ""))
  d = jaxmj.make_data(m).replace(qvel=jnp.array([0.5, -0.3, 1.0, 0.2, -0.7]))

  def loss(x):
    final, traj = jaxmj.rollout(m.replace(actuator_gainprm=x[1]), d, x[0])
    return jnp.sum(final.qpos ** 2) + jnp.sum(final.qvel ** 2) + jnp.sum(traj["act"] ** 2)

  ctrl = jnp.asarray(np.sin(np.arange(10)[:, None] * 0.3 + np.arange(m.nu)))
  _fd_check(loss, (ctrl, m.actuator_gainprm), (1.0, GAIN_MASK), seed=1)
