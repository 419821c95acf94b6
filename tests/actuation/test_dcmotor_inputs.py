"""MuJoCo 4.0's DC motor inputs and type mixing (actuation/motor.py, mjcf/compile/motor.py) held
against mujoco 4.0.0: <dcmotor> with several inputs (pos, vel, ff, voltage: one control each,
the voltage input added to the controller's clipped voltage), with none (a passive motor),
and <general> mixing the dcmotor gain, bias and dynamics types with the others. Compiled
fields, forces and activation rates at random states, 150-step trajectories with actuator
sensors under implicitfast and (--runslow) Euler (1e-8), d qfrc_actuator / d ctrl against finite
differences, and which combinations compile (the same ones as MuJoCo)."""

import pytest

mujoco = pytest.importorskip("mujoco")

import numpy as np  # noqa: E402
from mujoco_compare import (  # noqa: E402
  assert_actuation_matches,
  assert_compiles_alike_or_refused,
  assert_ctrl_jacobian_matches,
  assert_ctrl_rollout_matches,
  load_both,
  model_differences,
  random_state,
  to_jaxmj,
)

import jaxmj  # noqa: E402
from jaxmj.mjcf.errors import MJCFError  # noqa: E402

THERMAL = 'thermal="1 2 3 .004 25 20"'

# Several inputs with every state, none, and the voltage input beside a clipped controller.
MULTI = f"""
  <dcmotor name="m0" joint="h1" motorconst=".5" resistance="2" input="pos vel"
           controller="3 1 .7" ctrlrange="-2 2"/>
  <dcmotor name="m1" joint="s1" motorconst=".5" resistance="2" input="pos vel ff voltage"
           controller="3 1 .7 20 .3 4" {THERMAL} inductance=".04" lugre="100 2 .1 .2 .05"
           cogging=".1 6 .3"/>
  <dcmotor name="m2" joint="h2" motorconst=".5" resistance="2" input="none" {THERMAL}
           inductance=".04"/>
  <dcmotor name="m3" joint="h3" motorconst=".5" resistance="2" input="none" saturation=".3"
           cogging=".05 4 0"/>
  <dcmotor name="m4" joint="h1" motorconst=".5" resistance="2" input="vel ff"
           controller="3 0 .7 20 0 3" {THERMAL}/>
  <dcmotor name="m5" joint="s1" motorconst=".5" resistance="2" input="ff voltage"
           controller="3 0 .7 0 0 3"/>
"""
# <general> with a dcmotor type beside others: the DC dynamics under fixed and affine gains,
# the DC gain over none, filter, integrator and filterexact dynamics (their one state taking
# the slot the parameters give: current, temperature, integral), the DC bias after other
# gains, a passive DC motor, and LuGre states under a DC gain without the DC bias.
MIXED = """
  <general name="g0" joint="h1" gaintype="fixed" dyntype="dcmotor" gainprm="2 .5 0 0 3 1 .7"
           dynprm=".04 0 0 0 0 0 0 20" actearly="true" input="pos"/>
  <general name="g1" joint="s1" gaintype="affine" dyntype="dcmotor" biastype="affine"
           gainprm="2 .5 .1 0 3 1 .7" biasprm="1 2 3" dynprm="0 0 1 2 3" actearly="true"
           input="vel"/>
  <general name="g2" joint="h2" dyntype="dcmotor" biastype="dcmotor" gainprm="2 .5 0 0 0 1"
           dynprm="0 0 0 0 0 100 2 20" biasprm=".1 6 .3 .1 .2 .05" actearly="true"/>
  <general name="g3" joint="h3" gaintype="dcmotor" gainprm="2 .5 0 0 3 0 .7" dynprm="0"
           input="pos vel"/>
  <general name="g4" joint="s1" gaintype="dcmotor" dyntype="filter" biastype="affine"
           gainprm="2 .5" dynprm=".04" biasprm="1 2 3" input="vel voltage"/>
  <general name="g5" joint="h2" gaintype="dcmotor" dyntype="integrator" biastype="dcmotor"
           gainprm="2 .5 .004 20" dynprm="0 0 1 2 3" actearly="true"/>
  <general name="g6" joint="h1" gaintype="dcmotor" dyntype="filterexact" biastype="dcmotor"
           gainprm="2 .5 0 0 3 1" dynprm="0 0 0 0 0 0 0 0 .3" input="pos"/>
  <general name="g7" joint="s1" gaintype="affine" dyntype="integrator" biastype="dcmotor"
           gainprm="2 .5 .3" biasprm=".1 6 .3"/>
  <general name="g8" joint="h3" biastype="dcmotor" gainprm="2 .5" biasprm=".1 6 .3"
           dynprm="0"/>
  <general name="g9" joint="h3" gaintype="dcmotor" biastype="dcmotor" gainprm="2 .5"
           dynprm="0" input="none"/>
  <general name="g10" joint="h2" gaintype="dcmotor" dyntype="dcmotor" biastype="affine"
           gainprm="2 .5 0 0 .5" dynprm=".02 0 0 0 0 1 .05" biasprm="0 0 0 .1 .3 .2"
           actearly="true" input="vel"/>
"""
SENSORS = "".join(f'<actuatorfrc actuator="{a}"/>' for a in ("m1", "m2", "m3", "g2", "g5",
                                                              "g9"))


def _xml(integrator: str = "Euler", actuators: str = MULTI + MIXED) -> str:
  return f"""
<mujoco>
  <option timestep="0.005" integrator="{integrator}">
    <flag constraint="disable"/>
  </option>
  <worldbody>
    <body><joint name="h1" axis="0 1 0" damping=".05"/><geom size=".1" pos=".2 0 0"/></body>
    <body pos="1 0 0"><joint name="s1" type="slide" axis="1 0 0"/><geom size=".1"/></body>
    <body pos="0 1 0"><joint name="h2" axis="1 0 0"/><geom size=".05 .1 .2" type="box"/></body>
    <body pos="2 0 0"><joint name="h3" axis="0 0 1"/><geom size=".1" pos="0 .3 0"/></body>
  </worldbody>
  <actuator>{actuators}</actuator>
  <sensor>{SENSORS}<jointactuatorfrc joint="h2"/><jointactuatorfrc joint="s1"/></sensor>
</mujoco>"""


@pytest.fixture(scope="module")
def euler():
  return load_both(xml=_xml())


def test_inputs_and_mixed_types_compile_as_mujoco(euler):
  m, mj = euler
  assert model_differences(m, mj) == []
  assert (m.nu, m.na) == (mj.nu, mj.na) == (22, 24)
  np.testing.assert_array_equal(m.actuator_ctrlnum[:6], [2, 4, 0, 0, 2, 2])


def test_forces_and_activation_rates_match_mujoco_at_random_states(euler):
  m, mj = euler
  assert_actuation_matches(m, mj, ctrl_scale=2.0)


# implicitfast also holds MuJoCo's velocity derivative of the mixed types (motor.py's
# implicit_correction); Euler, which only repeats the forces, runs with --runslow
@pytest.mark.parametrize("integrator", [pytest.param("Euler", marks=pytest.mark.slow),
                                        "implicitfast"])
def test_trajectory_matches_mj_step(integrator, euler):
  m, mj = euler if integrator == "Euler" else load_both(xml=_xml(integrator))
  assert_ctrl_rollout_matches(m, mj, [0.3, -0.1, 0.2, -0.4], [0.5, -0.3, 1.0, -0.7], steps=150)


def test_control_jacobian_matches_finite_differences(euler):
  m, mj = euler
  dm = random_state(m, mj, 5)
  rng = np.random.default_rng(5)
  dm.ctrl[:] = rng.uniform(-1, 1, mj.nu)
  dm.act[:] = rng.normal(size=mj.na) * 0.2
  mujoco.mj_forward(mj, dm)
  d = to_jaxmj(m, dm).replace(act=dm.act.copy())
  assert_ctrl_jacobian_matches(m, mj, dm, d)


_DC = '<dcmotor joint="h1" motorconst=".5" resistance="2" '


def _gen(**attrs) -> str:
  """A <general> on h1 with R = 2, K = .5, no DC states and actearly unless overridden."""
  attrs = {"gainprm": "2 .5", "dynprm": "0", "actearly": "true", **attrs}
  return "<general joint=\"h1\" " + " ".join(f'{k}="{v}"' for k, v in attrs.items()) + "/>"


@pytest.mark.parametrize("actuator", [
  _DC + 'input="pos vel ff voltage"/>', _DC + 'input="none" ctrlrange="-1 1"/>',
  _DC + 'input="ff" controller="1 0 1"/>', _DC + 'input="voltage" controller="0 0 0 0 1 2"/>',
  _DC + 'input="vel" controller="0 0 0 1"/>',
  _DC + 'input="vel" controller="0 1"/>', _DC + 'input="none" controller="1"/>',
  _DC + 'input="voltage pos"/>', _DC + 'input="pos pos"/>', _DC + 'input="vel pressure"/>',
  _DC + 'input="none pos"/>', _DC + 'input="ff voltage" controller="0 0 0 3"/>',
  _gen(gaintype="dcmotor", input="none"), _gen(gaintype="dcmotor", input="none", dynprm="1"),
  _gen(gaintype="dcmotor", dyntype="filter", dynprm=".1", input="pos vel"),
  _gen(gaintype="dcmotor", dyntype="filter", dynprm="0 0 1 1"),
  _gen(gaintype="dcmotor", dyntype="filter", dynprm=".1 0 1 1"),
  _gen(gaintype="dcmotor", dynprm=".1"),
  _gen(gaintype="dcmotor", gainprm="2 .5 0 0 1"),
  _gen(gaintype="dcmotor", gainprm="2 .5 0 0 -1", input="voltage"),
  _gen(gaintype="dcmotor", gainprm="2 .5 0 0 0 1", input="vel"),
  _gen(gaintype="dcmotor", gainprm="2 .5 0 0 0 1", input="pos"),
  _gen(gaintype="dcmotor", dynprm="0 0 0 0 0 0 0 1", input="pos"),
  _gen(gaintype="dcmotor", dynprm="0 0 0 0 0 0 0 0 1", input="voltage"),
  _gen(dyntype="dcmotor", gainprm="2 .5 0 0 1 1", input="vel"),
  _gen(dyntype="dcmotor", dynprm="0 0 0 0 0 0 0 1"), _gen(dyntype="dcmotor", input="voltage"),
  _gen(dyntype="dcmotor", actearly="false"),
  _gen(gaintype="dcmotor", actearly="false", input="pos vel"),
  _gen(biastype="dcmotor", input="pos vel"), _gen(biastype="dcmotor", dyntype="filter"),
  _gen(gaintype="dcmotor", dyntype="pid"),
  _gen(gaintype="pid", dyntype="dcmotor", biastype="affine"),
  _gen(gaintype="muscle", biastype="dcmotor", input="pos"),
])
def test_the_combinations_mujoco_accepts_compile(actuator):
  # MuJoCo checks the state count at run time
  assert_compiles_alike_or_refused(_xml(actuators=actuator).replace(SENSORS, ""), forward=True)


@pytest.mark.parametrize("actuator, phrase", [
  (_gen(gaintype="dcmotor", dyntype="integrator", dynprm=".1", input="pos vel"),
   "several dcmotor inputs"),
  (_gen(gaintype="dcmotor", dyntype="filter", dynprm=".1", input="none"), "no control to read"),
  (_gen(biastype="dcmotor", dyntype="filter", dynprm="1 0 0 0 0 1"), "LuGre friction"),
])
def test_what_reads_outside_the_actuator_in_mujoco_is_refused(actuator, phrase):
  with pytest.raises(MJCFError, match=phrase):
    jaxmj.Model.from_xml_string(_xml(actuators=actuator).replace(SENSORS, ""))
