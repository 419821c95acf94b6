"""<pid> and <dcmotor> (jaxmj/mjcf/compile/motor.py) compiled as mujoco 4.0.0 compiles them: the
parameter layouts, values derived from a nominal operating point, saturation, inductance and
thermal constants, default classes, dampratio and inheritrange, the dcmotor's several or no
inputs and its types mixed with others in <general>; and the errors for what MuJoCo rejects
(each also rejected by mujoco 4.0.0 in tests/test_dcmotor_inputs.py)."""

import pytest

mujoco = pytest.importorskip("mujoco")

import numpy as np  # noqa: E402
from mujoco_compare import assert_compiles_alike_or_refused, load_both, model_differences  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.mjcf.errors import MJCFError  # noqa: E402

MODEL = """
<mujoco>
  <default>
    <default class="p"><pid kp="7" ki="2" imax="3" slewmax="1" kv="2" input="pos"/></default>
    <default class="d"><dcmotor resistance="3" motorconst=".1" inductance=".2"/></default>
  </default>
  <worldbody>
    <body><joint name="h1" axis="0 1 0" range="-30 30"/><geom size=".1" pos=".2 0 0"/></body>
    <body pos="1 0 0"><joint name="s1" type="slide" axis="1 0 0"/><geom size=".1"/></body>
    <body pos="0 1 0"><joint name="h2" axis="1 0 0"/><geom size=".05 .1 .2" type="box"/></body>
  </worldbody>
  <actuator>{}</actuator>
</mujoco>"""


@pytest.mark.parametrize("actuators", [
  # pid: gains, states, each single input, dampratio, ranges of the input, inheritrange
  '<pid joint="h1" kp="10" kv="2" ki="3" imax="4" slewmax="5" input="pos"/>'
  '<pid joint="s1" kp="10" dampratio="1" input="vel" velrange="-1 1"/>'
  '<pid joint="h2" input="ff" ffrange="-2 2" forcerange="-1 1"/>'
  '<pid joint="h1" input="pos" inheritrange="1"/>'
  '<pid joint="h2" kp="3" dampratio=".5" input="pos" posrange="-1 1" ctrlrange="-2 2"/>',
  # default classes: a shortcut inherits the parameters of a class of its own kind
  '<pid joint="h1" class="p"/><pid joint="s1" class="p" ki="0" slewmax="0" input="vel"/>'
  '<dcmotor joint="h2" class="d" resistance="6"/>'
  '<dcmotor joint="s1" class="d" input="pos" controller="1 2"/>',
  # dcmotor: K from Kt, Ke or the nominal speed, R from the stall torque; saturation,
  # inductance, thermal time constant, LuGre (dropped without sigma0), cogging, controller
  '<dcmotor joint="h1" nominal="12 1 100" motorconst=".05"/>'
  '<dcmotor joint="h2" motorconst=".05 .06" resistance="2" thermal="0 2 3" cogging="1 2 3"/>'
  '<dcmotor joint="s1" motorconst=".5" resistance="2" saturation="3 2 1" inductance=".01"/>'
  '<dcmotor joint="h1" motorconst=".5" resistance="2" saturation="0 2" lugre="0 1 2 3 4"/>'
  '<dcmotor joint="h2" nominal="12 0 100" resistance="2" thermal="1 2 3 4 5 6"'
  ' lugre="1 2 3 4 5"/>'
  '<dcmotor joint="s1" motorconst=".5" resistance="2" input="vel" controller="1 0 2 3 0 9"'
  ' inductance="0 .003" ctrlrange="-1 1"/>',
  # the types through <general>
  '<general joint="h1" gaintype="pid" dyntype="pid" biastype="affine" gainprm="1"'
  ' biasprm="0 -2 -3" input="pos" actdim="1"/>'
  '<general joint="s1" gaintype="dcmotor" dyntype="dcmotor" biastype="dcmotor"'
  ' gainprm="1 1" dynprm=".01" actearly="true"/>',
])
def test_shortcuts_compile_as_mujoco(actuators):
  m, mj = load_both(xml=MODEL.format(actuators))
  assert model_differences(m, mj) == []


def test_state_slots_follow_the_parameters():
  m = jaxmj.Model.from_xml_string(MODEL.format(
    '<pid joint="h1" ki="1" input="pos"/><pid joint="s1" slewmax="1" ki="1" input="pos"/>'
    '<dcmotor joint="h2" motorconst=".5" resistance="2" inductance=".1" lugre="1 0 1"/>'))
  np.testing.assert_array_equal(m.actuator_slots, [[-1, 0, -1, -1, -1], [0, 1, -1, -1, -1],
                                                   [-1, -1, -1, 0, 1]])
  np.testing.assert_array_equal(m.actuator_actadr, [0, 1, 3])


@pytest.mark.parametrize("actuator, attribute, phrase", [
  ('<pid joint="h1" input="ff pos"/>', "input", "canonical order"),
  ('<pid joint="h1" input="pos voltage"/>', "input", "pid inputs are a subset of [pos, vel, ff]"),
  ('<pid joint="h1" input="vel" ki="1"/>', "input", "require the pos input"),
  ('<pid joint="h1" input="pos" kv="1" dampratio="1"/>', "kv", "cannot both be defined"),
  ('<pid joint="h1" input="pos" ki="-1"/>', "dyntype", "invalid actdim 0"),
  ('<pid joint="h1" input="pos" ki="1" imax="-1"/>', "imax", "must be non-negative"),
  ('<dcmotor joint="h1" motorconst="-1 2" resistance="1"/>', "motorconst", "non-negative"),
  ('<dcmotor joint="h1" motorconst="1" resistance="1" inductance="1 -1"/>', "inductance",
   "electrical time constant must be non-negative"),
  ('<dcmotor joint="h1" motorconst="1" resistance="1" thermal="0 0 5"/>', "thermal",
   "thermal resistance must be positive"),
  ('<dcmotor joint="h1" motorconst="1" resistance="-1" nominal="12 1 100"/>', "resistance",
   "resistance R must be positive"),
  ('<dcmotor joint="h1" motorconst=".1"/>', "resistance", "resistance R must be positive"),
  ('<dcmotor joint="h1" resistance="1"/>', "motorconst", "motor constant K must be positive"),
  ('<dcmotor joint="h1" motorconst=".1" resistance="1" thermal="1"/>', "thermal",
   "thermal capacitance must be positive"),
  ('<dcmotor joint="h1" motorconst=".1" resistance="1" controller="1"/>', "controller",
   "require a controller input"),
  ('<dcmotor joint="h1" motorconst=".1" resistance="1" input="vel" controller="1 1"/>',
   "controller", "integral gain requires the pos input"),
  ('<dcmotor joint="h1" motorconst=".1" resistance="1" input="vel pressure"/>', "input",
   "a subset of [pos, vel, ff, voltage]"),
  ('<dcmotor joint="h1" motorconst=".1" resistance="1" input="voltage pos"/>', "input",
   "canonical order"),
  ('<dcmotor joint="h1" motorconst=".1" resistance="1" input="none pos"/>', "input",
   "invalid keyword"),
  ('<dcmotor joint="h1" motorconst=".1" resistance="1" input="pos" controller="0 0 0 1"/>'
   '<dcmotor joint="h1" motorconst=".1" resistance="1" input="none" controller="0 0 0 1"/>',
   "controller", "slew rate limiting requires a controller input"),
  ('<general joint="h1" dyntype="pid" actdim="1"/>', "dyntype", "requires gaintype 'pid'"),
  ('<general joint="h1" gaintype="dcmotor" biastype="dcmotor" dyntype="dcmotor"/>',
   "actearly", "actearly cannot be false"),
  ('<general joint="h1" gaintype="dcmotor" actearly="true"/>', "dyntype",
   "inconsistent state array dimension in DC motor"),
  ('<general joint="h1" dyntype="dcmotor"/>', "actearly", "actearly cannot be false"),
  ('<general joint="h1" gaintype="dcmotor" dynprm="0" gainprm="1 1 0 0 1" input="voltage"/>',
   "gainprm", "controller gains require a controller input"),
  ('<general joint="h1" input="pos vel"/>', "input", "fixed and affine gains take one input"),
  ('<orientation joint="h1"/>', "joint", "requires a ball joint"),
])
def test_errors_name_the_element_and_attribute(actuator, attribute, phrase):
  with pytest.raises(MJCFError) as err:
    jaxmj.Model.from_xml_string(MODEL.format(actuator))
  assert phrase in str(err.value)
  if attribute is not None:
    assert f"attribute '{attribute}'" in str(err.value)


_PIDG = '<general joint="h1" gaintype="pid" biastype="affine" gainprm="0" biasprm="0 -1 -1" '
_DCG = '<general joint="h1" gaintype="dcmotor" gainprm="1 1" dynprm="0" '


@pytest.mark.parametrize("actuator", [
  # a pid's ctrlrange / ctrllimited (posrange) is its pos control's, dropped without it;
  # velrange and ffrange limit their controls when lo < hi, whatever ctrllimited says
  _PIDG + 'input="pos vel" ctrlrange="-1 1"/>', _PIDG + 'input="pos vel" velrange="-1 1"/>',
  _PIDG + 'input="vel ff" ctrlrange="-1 1" ffrange="-2 2" ctrllimited="false"/>',
  '<pid joint="h1" input="vel ff" ctrlrange="-1 1"/>',
  '<pid joint="h1" input="vel ff" ctrllimited="true" ctrlrange="-1 1" velrange="-2 2"/>',
  '<pid joint="h1" input="vel ff" ctrllimited="true" velrange="-1 1"/>',
  '<pid joint="h1" input="pos vel ff" ctrlrange="-1 1" ctrllimited="false" velrange="-1 1"/>',
  '<pid joint="h1" input="vel" velrange="-1 1" ctrllimited="false"/>',
  '<pid joint="h1" input="pos vel" ctrllimited="true" posrange="-1 1" velrange="2 -2"/>',
  '<pid joint="h1" input="pos vel" ctrllimited="true" posrange="-1 1" ctrlrange="-2 2"/>',
  '<pid joint="h1" ctrllimited="true"/>', '<pid joint="h1" forcelimited="true"/>',
  # a dcmotor's ctrlrange is shared by its controls, and checked even without any
  _DCG + 'input="pos vel" ctrlrange="-1 1"/>', _DCG + 'input="pos vel" velrange="-1 1"/>',
  _DCG + 'input="none" ctrllimited="true"/>',
  '<dcmotor joint="h1" motorconst="1" resistance="1" input="pos vel" ctrllimited="true"/>',
  '<dcmotor joint="h1" motorconst="1" resistance="1" input="none" ctrllimited="true"'
  ' ctrlrange="-1 1"/>',
  # limited force and activation ranges need lo < hi
  '<motor joint="h1" forcelimited="true" forcerange="1 1"/>',
  '<dcmotor joint="h1" motorconst="1" resistance="1" saturation="-1 2"/>',
  # values MuJoCo 4.0 takes, ignores or derives: a passive motor without K, a thermal model
  # off unless RT, C or its time constant is positive, negative limits dropped
  '<dcmotor joint="h1" resistance=".5" input="none"/>',
  '<dcmotor joint="h1" motorconst="1" resistance="1" thermal="0 -1 0 1 2 3"/>',
  '<dcmotor joint="h1" motorconst="1" resistance="1" thermal="2 -1 3"/>',
  '<dcmotor joint="h1" motorconst="1" resistance="1" thermal="0 3 6 .1 .2 .3"/>',
  '<dcmotor joint="h1" motorconst="1" resistance="1" thermal="-2 3 5"/>',
  '<dcmotor joint="h1" motorconst="1" resistance="1" saturation="0 0 -1" input="pos"'
  ' controller="1 0 0 0 0 -1"/>',
  '<dcmotor joint="h1" motorconst="0 2" resistance="1" inductance="2 3"/>',
  '<pid joint="h1" ki="-1" imax="2" slewmax="1"/>', '<pid joint="h1" imax="-1"/>',
  '<general joint="h1" dyntype="integrator" actlimited="true"/>',
])
def test_ranges_and_values_compile_as_mujoco_or_are_refused_alike(actuator):
  assert_compiles_alike_or_refused(MODEL.format(actuator))
