"""Spring plasticity and joint springdamper compiled as mujoco 4.0.0 compiles them
(jaxmj/mjcf/compile/plastic.py): springyield, plastic addresses, key_plastic, the initial plastic
state, springdamper's stiffness and damping, and MuJoCo's errors."""

import numpy as np
import pytest
from mujoco_compare import load_both, model_differences, mujoco

import jaxmj
from jaxmj import MJCFError

# Degrees (hinge and ball yields convert), a default class, every joint type that yields,
# a joint and a tendon without plasticity between them, a slack tendon range and keyframes
# that give none, a prefix, or all of the plastic values (ball quaternion renormalized).
PLASTIC = """
<mujoco>
  <default><default class="soft"><joint springyield="3"/></default></default>
  <worldbody>
    <site name="s0" pos="0 0 1"/>
    <body><joint name="h" class="soft" axis="0 1 0" stiffness="2" springref="10"/>
      <geom size=".1" pos=".5 0 0"/><site name="s1" pos=".5 0 0"/>
      <body pos=".5 0 0"><joint name="s" type="slide" stiffness="3" springyield=".2"
        springref=".1"/><geom size=".1"/></body>
    </body>
    <body pos="1 0 0"><joint name="e" stiffness="1"/><geom size=".1" pos=".3 0 0"/></body>
    <body pos="2 0 0"><joint type="ball" class="soft"/><geom size=".1" pos=".3 0 0"/></body>
    <body pos="3 0 0"><freejoint/><geom size=".1"/></body>
  </worldbody>
  <tendon>
    <spatial stiffness="5" springyield=".1"><site site="s0"/><site site="s1"/></spatial>
    <fixed stiffness="1"><joint joint="e" coef="1"/></fixed>
    <fixed stiffness="1" springyield=".05" springlength="0 .4"><joint joint="h" coef="2"/>
    </fixed>
  </tendon>
  <keyframe>
    <key/>
    <key plastic="0.3"/>
    <key plastic="0.3 0.4 2 1 0 0 1 2 3 4"/>
  </keyframe>
</mujoco>
"""


def test_plastic_fields_and_initial_state_equal_mujoco():
  m, mj = load_both(xml=PLASTIC)
  assert model_differences(m, mj) == []  # jnt_springyield, jnt_/tendon_plasticadr among them
  assert m.nplastic == mj.nplastic == 10
  np.testing.assert_allclose(m.key_plastic, mj.key_plastic, atol=1e-15)
  np.testing.assert_allclose(jaxmj.make_data(m).plastic, mujoco.MjData(mj).plastic, atol=1e-15)


def test_initial_plastic_follows_edited_spring_references_as_mj_resetData():
  m, mj = load_both(xml=PLASTIC)
  mj.qpos_spring[0] = 0.7
  mj.tendon_lengthspring[0] = [0.2, 0.5]
  m = m.replace(qpos_spring=m.qpos_spring.at[0].set(0.7),
                tendon_lengthspring=m.tendon_lengthspring.at[0].set(np.array([0.2, 0.5])))
  md = mujoco.MjData(mj)
  mujoco.mj_resetData(mj, md)
  np.testing.assert_allclose(jaxmj.make_data(m).plastic, md.plastic, atol=1e-15)


SPRINGDAMPER = """
<mujoco>
  <default><joint springdamper=".5 .8"/></default>
  <worldbody>
    <body><joint name="j" axis="0 1 0" armature=".3" stiffness="1 2 3" damping="4 5 6"/>
      <geom size=".1" pos="1 0 0" mass="2"/>
      <body pos="1 0 0"><joint type="slide" axis="1 0 0" springdamper=".2 1"/>
        <geom size=".1" mass="3"/></body>
      <body pos="0 0 1"><joint type="ball" springdamper=".3 2"/>
        <geom size=".1" pos=".5 0 0" mass="1"/></body>
    </body>
    <body pos="0 2 0"><joint type="free" springdamper="1 1"/><geom size=".1 .2 .3" type="box"/>
    </body>
    <body pos="0 -2 0"><joint springdamper="0 0" stiffness="7" damping="8"/>
      <geom size=".1" pos="1 0 0"/></body>
  </worldbody>
  <actuator><motor joint="j" armature=".4"/></actuator>
</mujoco>
"""


def test_springdamper_sets_stiffness_and_damping_as_mujoco():
  """timeconst and dampratio on the joint's inertia at qpos0 (1 / mean dof_invweight0):
  hinge with its own and an actuator's armature and polynomial terms (kept), slide, ball,
  free, and "0 0" (unset)."""
  m, mj = load_both(xml=SPRINGDAMPER)
  assert model_differences(m, mj) == []
  np.testing.assert_allclose(m.jnt_stiffness, mj.jnt_stiffness, rtol=1e-12)
  np.testing.assert_allclose(m.dof_damping, mj.dof_damping, rtol=1e-12)
  assert m.jnt_stiffness[4] == 7 and m.dof_damping[-1] == 8


def _body(joint: str) -> str:
  return f'<mujoco><worldbody><body>{joint}<geom size=".1"/></body></worldbody>{{}}</mujoco>'


ERRORS = {
  "joint_negative_yield": (_body('<joint springyield="-1"/>'), "joint", "springyield",
                           "cannot be negative"),
  "free_joint_yield": (_body('<joint type="free" springyield="1"/>'), "joint", "springyield",
                       "free joint"),
  "tendon_negative_yield": (_body('<joint name="j"/>').format(
    '<tendon><fixed springyield="-1"><joint joint="j" coef="1"/></fixed></tendon>'), "fixed",
    "springyield", "cannot be negative"),
  "springdamper_zero_timeconst": (_body('<joint springdamper="0 1"/>'), "joint",
                                  "springdamper", "must be positive"),
  "springdamper_negative_ratio": (_body('<joint springdamper="1 -1"/>'), "joint",
                                  "springdamper", "must be positive"),
  "key_plastic_too_long": (_body('<joint stiffness="1" springyield="1"/>').format(
    '<keyframe><key plastic="1 2"/></keyframe>'), "key", "plastic", "expected 1"),
  "key_plastic_without_plasticity": (_body("<joint/>").format(
    '<keyframe><key plastic="1"/></keyframe>'), "key", "plastic", "expected 0"),
}


@pytest.mark.parametrize("case", ERRORS.values(), ids=ERRORS.keys())
def test_plastic_errors_name_the_attribute_where_mujoco_rejects(case):
  xml, element, attribute, phrase = case
  xml = xml.replace("{}", "")
  with pytest.raises(ValueError):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(MJCFError) as info:
    jaxmj.Model.from_xml_string(xml)
  assert (info.value.element, info.value.attribute) == (element, attribute)
  assert phrase in str(info.value)
