"""Simulated actuator length ranges (mj_setLengthRange, jaxmj/dynamics/lengthrange.py) against
MuJoCo 4.0's compiler.

MuJoCo's ranges come from a 10 s simulation, so they are held to 1e-9 (absolute, lengths
~0.01-0.4; measured agreement ~1e-12): muscles on spatial tendons over unlimited hinges
(the range is the tendon's geometric extremes), a muscle on a fixed tendon whose joints
are limited (the extremes sit where the limit rows balance the push), a muscle on a
limited slide joint, and a given lengthrange kept (useexisting).
"""

import pytest

mujoco = pytest.importorskip("mujoco")

import numpy as np  # noqa: E402
from mujoco_compare import load_both  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.dynamics.lengthrange import step_times  # noqa: E402
from jaxmj.mjcf.errors import MJCFError  # noqa: E402

ARM = """
<mujoco>
  <compiler autolimits="true">{compiler}</compiler>
  <option integrator="{integ}"/>
  <worldbody>
    <site name="anchor" pos="0 0 .2"/>
    <body name="upper">
      <joint name="shoulder" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
      <site name="s_upper" pos=".15 0 .05"/>
      <body name="lower" pos=".3 0 0">
        <joint name="elbow" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .25 0 0" size=".03"/>
        <site name="hand" pos=".15 0 .02"/>
      </body>
    </body>
    <body name="finger" pos="0 1 0">
      <joint name="f1" axis="0 1 0" range="-30 60"/>
      <geom type="capsule" fromto="0 0 0 .1 0 0" size=".02"/>
      <body pos=".1 0 0">
        <joint name="f2" axis="0 1 0" range="0 90"/>
        <geom type="capsule" fromto="0 0 0 .1 0 0" size=".02"/>
      </body>
    </body>
    <body name="slider" pos="1 1 0">
      <joint name="slide" type="slide" axis="1 0 0" range="-.2 .3"/>
      <geom type="box" size=".05 .05 .05"/>
    </body>
  </worldbody>
  <tendon>
    <spatial name="t1"><site site="anchor"/><site site="s_upper"/></spatial>
    <spatial name="t2"><site site="s_upper"/><site site="hand"/></spatial>
    <fixed name="flex"><joint joint="f1" coef=".02"/><joint joint="f2" coef=".01"/></fixed>
  </tendon>
  <actuator>{actuators}</actuator>
</mujoco>
"""
MUSCLES = ('<muscle tendon="t1"/><muscle tendon="t2" lengthrange=".1 .2"/>'
           '<muscle tendon="flex"/><muscle joint="slide"/><motor joint="slide"/>')
TOL = 1e-9


def arm(compiler="", integ="Euler", actuators=MUSCLES) -> str:
  return ARM.format(compiler=compiler, integ=integ, actuators=actuators)


def test_simulated_lengthrange_matches_mujoco():
  m, mj = load_both(xml=arm())
  np.testing.assert_allclose(m.actuator_lengthrange, mj.actuator_lengthrange, rtol=0,
                             atol=TOL)
  np.testing.assert_array_equal(m.actuator_lengthrange[1], [0.1, 0.2])  # useexisting
  np.testing.assert_array_equal(m.actuator_lengthrange[4], [0, 0])  # motor: mode="muscle"


def test_step_count_follows_float_time_accumulation():
  """mj_step2 adds the timestep to time while time < inttotal: with rounding, 0.01 added
  1000 times stays below 10, so MuJoCo's default simulation takes 1001 steps."""
  assert len(step_times(0.01, 10.0)) == 1001
  assert len(step_times(0.1, 1.0)) == 11
  assert len(step_times(0.25, 1.0)) == 4  # exact in binary


@pytest.mark.slow
def test_options_and_implicit_integrator_match_mujoco():
  """maxforce, accel, timeconst, mode="all" (the motor too), useexisting off, implicit."""
  xml = arm('<lengthrange mode="all" useexisting="false" maxforce="3" accel="10" '
            'timeconst=".5" timestep=".005" inttotal="5" interval="1"/>', integ="implicit")
  m, mj = load_both(xml=xml)
  np.testing.assert_allclose(m.actuator_lengthrange, mj.actuator_lengthrange, rtol=0,
                             atol=TOL)


@pytest.mark.slow
@pytest.mark.parametrize("actuator,compiler,message", [
  ('<muscle joint="shoulder"/>', "", "did not converge"),
  ('<muscle tendon="t1"/>', '<lengthrange inttotal=".005"/>', "Invalid lengthrange"),
])
def test_failures_raise_as_in_mujoco(actuator, compiler, message):
  xml = arm(compiler, actuators=actuator)
  with pytest.raises(ValueError, match=message):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(MJCFError, match=message):
    jaxmj.Model.from_xml_string(xml)


@pytest.mark.slow
def test_bundled_arm26_fails_to_converge_exactly_like_mujoco():
  """mjx's arm26 (muscles on cylinder-wrapping tendons, no lengthrange): MuJoCo 4.0 itself
  rejects it, its shoulder extensor still moving over the last 2 s; jaxmj's simulation
  reaches the same numbers (printed to 6 digits)."""
  import os
  import re

  path = os.path.join(os.path.dirname(mujoco.__file__), "mjx", "test_data", "actuator",
                      "arm26.xml")
  numbers = lambda msg: [float(x) for x in re.findall(r"-?\d+\.\d+", msg)]
  with pytest.raises(ValueError, match="did not converge in actuator 1") as ref:
    mujoco.MjModel.from_xml_path(path)
  with pytest.raises(MJCFError, match="did not converge in actuator 1") as ours:
    jaxmj.Model.from_xml_path(path)
  assert numbers(str(ours.value).split("actuator 1")[1]) == numbers(
    str(ref.value).split("actuator 1")[1])
