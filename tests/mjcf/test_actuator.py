"""The actuator compiler against MuJoCo 4.0: every shortcut's expansion (directly and through
default classes), transmissions, limits, inheritrange, dampratio, acc0/length0, lengthrange.

Each case compiles the same MJCF with jaxmj and mujoco and compares every actuator_* field
(tests/mujoco_compare.PREFIXES) along with the rest of the model.
"""

import re

import pytest

mujoco = pytest.importorskip("mujoco")

import numpy as np  # noqa: E402
from test_compile import check  # noqa: E402

import jaxmj  # noqa: E402

ARM = """
<mujoco>
  <compiler autolimits="true"/>
  {head}
  <default>{default}</default>
  <worldbody>
    <site name="anchor" pos="0 .1 .3"/>
    <body name="upper">
      <joint name="shoulder" range="-60 90" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
      <site name="s_upper" pos=".15 0 .05"/>
      <body name="lower" pos=".3 0 0">
        <joint name="elbow" axis="0 1 0" range="-10 120"/>
        <geom type="capsule" fromto="0 0 0 .25 0 0" size=".03"/>
        <site name="hand" pos=".25 0 0" quat="0.9 0.1 0.3 0"/>
        <body name="wrist" pos=".25 0 0">
          <joint name="ball" type="ball"/>
          <geom size=".05" pos=".05 0 0"/>
          <site name="tip" pos=".1 0 0" euler="10 20 30"/>
        </body>
      </body>
    </body>
    <body name="slider" pos="1 0 0">
      <joint name="slide" type="slide" axis="1 0 0" range="-.2 .3"/>
      <geom type="box" size=".05 .05 .05"/>
      <site name="crank" pos="0 0 .2"/>
    </body>
    <body name="float" pos="0 1 1">
      <freejoint name="free"/>
      <geom size=".1"/>
      <site name="rotor" pos=".1 0 0" quat="0.7 0 0.7 0"/>
    </body>
  </worldbody>
  <actuator>{actuator}</actuator>
</mujoco>
"""


def arm(actuator: str, default: str = "", head: str = "") -> str:
  return ARM.format(actuator=actuator, default=default, head=head)


SHORTCUTS = {
  "motor": '<motor joint="shoulder" gear="2" ctrlrange="-1 1"/>',
  "motor_forcerange": '<motor joint="elbow" forcerange="-3 3"/>',
  "position": '<position joint="shoulder" kp="30" kv="2"/>',
  "position_dampratio": '<position joint="elbow" kp="30" dampratio="0.7"/>',
  "position_timeconst": '<position joint="shoulder" kp="5" timeconst="0.1"/>',
  "position_inheritrange": '<position joint="elbow" kp="5" inheritrange="0.9" gear="2"/>',
  "position_slide_inherit": '<position joint="slide" inheritrange="1.2"/>',
  "velocity": '<velocity joint="slide" kv="4"/>',
  "intvelocity": '<intvelocity joint="elbow" kp="8" actrange="-1 1"/>',
  "intvelocity_inherit": '<intvelocity joint="shoulder" kp="8" inheritrange="1" kv="1"/>',
  "damper": '<damper joint="elbow" kv="3" ctrlrange="0 2"/>',
  "cylinder": '<cylinder joint="slide" timeconst="0.3" area="2" bias="1 -2 3"/>',
  "cylinder_diameter": '<cylinder joint="slide" diameter="0.5" area="2"/>',
  "muscle": '<muscle joint="elbow" lengthrange="-0.1 1.5" force="20" timeconst=".02 .05"/>',
  "muscle_scale": ('<muscle joint="shoulder" lengthrange="0 1" range=".5 1.2" scale="300" '
                   'lmin=".4" lmax="1.8" vmax="2" fpmax="1.1" fvmax="1.4" tausmooth=".2"/>'),
  "adhesion": '<adhesion body="upper" ctrlrange="0 1" gain="5"/>',
  "general": ('<general joint="elbow" dyntype="filter" dynprm=".2" gaintype="affine" '
              'gainprm="1 2 3" biastype="affine" biasprm="4 5 6" ctrlrange="-1 1" '
              'forcerange="-5 5" actrange="-2 2" actearly="true" group="2"/>'),
  "general_integrator": '<general joint="shoulder" dyntype="integrator" actlimited="false"/>',
  "jointinparent_ball": '<motor jointinparent="ball" gear="1 2 3"/>',
  "ball": '<position joint="ball" gear="0 0 1" kp="3" dampratio="1"/>',
  "free": '<motor joint="free" gear="1 2 3 4 5 6"/>',
  "free_inparent": '<motor jointinparent="free" gear="1 0 0 0 1 1"/>',
  "site": '<motor site="tip" gear="1 0 0 0 0 1"/>',
  "refsite": '<position site="hand" refsite="anchor" gear="0 1 0 0 0 0" kp="4" dampratio="1"/>',
  "refsite_rot": '<motor site="tip" refsite="s_upper" gear="0 0 0 1 1 0"/>',
  "slidercrank": '<motor cranksite="s_upper" slidersite="crank" cranklength="1.1"/>',
  "negative_actdim": ('<general joint="elbow" dyntype="filter" actdim="-3"/>'
                      '<general joint="shoulder" actdim="-2"/>'),  # any negative: auto
  "pid_actdim_0": ('<general joint="elbow" gaintype="pid" biastype="affine" dyntype="pid" '
                   'gainprm="1" input="pos" actdim="0"/>'),  # a pid's 0 is auto too
  "pid_general_without_input": ('<general joint="elbow" gaintype="pid" biastype="affine" '
                                'gainprm="0" biasprm="0 -1 -.1" ctrlrange="-1 1"/>'),  # pos vel
  "negative_delay": ('<motor joint="elbow" delay="-.1" nsample="3"/>'
                     '<motor joint="slide" delay="-1"/>'),  # MuJoCo 4.0 takes it
}


@pytest.mark.parametrize("name", sorted(SHORTCUTS))
def test_shortcut_matches_mujoco(name):
  check(arm(SHORTCUTS[name]))


def test_all_shortcuts_together_with_names():
  m, mj = check(arm("".join(v.replace(" ", f' name="a{k}" ', 1)
                            for k, v in enumerate(SHORTCUTS.values()))))
  for i in range(mj.nactuator):  # a pid takes two controls: nu > nactuator
    assert jaxmj.id2name(m, "actuator", i) == mujoco.mj_id2name(
      mj, mujoco.mjtObj.mjOBJ_ACTUATOR, i)
  assert jaxmj.name2id(m, "actuator", "a3") == 3


# (default class content, actuator elements): MuJoCo keeps one actuator spec per class; a
# shortcut starts over from pristine gains when its class was last written by another kind.
DEFAULTS = {
  "same_kind": ('<position kp="7" kv="2"/>', '<position joint="elbow"/>'),
  "general_reads_shortcut": ('<position kp="7" kv="2"/>', '<general joint="elbow"/>'),
  "other_kind_resets": ('<position kp="7" kv="2" timeconst="1"/>',
                        '<cylinder joint="slide"/><velocity joint="elbow"/>'),
  "common_attrs_carry": ('<motor gear="3" ctrlrange="-1 1"/><position kp="5"/>',
                         '<motor joint="elbow"/><position joint="shoulder"/>'),
  "general_then_position": ('<general gainprm="4 5" biastype="affine" biasprm="1 2 3" '
                            'dyntype="filter" dynprm="3"/>', '<position joint="elbow"/>'),
  "general_filterexact": ('<general dyntype="filterexact" dynprm="2" gainprm="5" '
                          'biastype="affine" biasprm="0 -5 -1"/>', '<position joint="elbow"/>'),
  "general_muscle": ('<general dyntype="muscle" dynprm="0.1 0.2 0.3" gaintype="muscle" '
                     'biastype="muscle" gainprm="0.5 1.5 100 7 .4 1.7 2 1.1 1.3"/>',
                     '<muscle joint="elbow" lengthrange="0 1"/>'),
  "muscle_kind": ('<muscle force="5" scale="3"/>',
                  '<muscle joint="elbow" lengthrange="0 1" range=".6 1.1"/>'),
  "damper_from_velocity": ('<velocity kv="3"/>', '<damper joint="elbow" ctrlrange="0 1"/>'),
  "damper_kind": ('<damper kv="3" ctrlrange="0 2"/>',
                  '<damper joint="elbow"/><velocity joint="shoulder"/>'),
  "cylinder_kind": ('<cylinder area="3" bias="1 1 1"/>',
                    '<cylinder joint="slide" timeconst="2"/>'),
  "adhesion_kind": ('<general gainprm="4"/>', '<adhesion body="upper" ctrlrange="0 1"/>'),
  "general_last_wins": ('<position kp="2"/><general ctrlrange="0 1"/>',
                        '<cylinder joint="slide"/>'),
  "motor_last_wins": ('<position kp="2"/><motor/>', '<position joint="elbow"/>'),
  "nested_classes": ('<position kp="9"/><default class="a"><general gainprm="2"/>'
                     '<default class="b"><position kv="1"/></default></default>',
                     '<position class="a" joint="elbow"/><position class="b" joint="slide"/>'
                     '<position joint="shoulder"/>'),
  "intvelocity_kind": ('<intvelocity kp="3" actrange="-1 1"/>', '<intvelocity joint="elbow"/>'),
}


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_default_cascade_matches_mujoco(name):
  default, actuators = DEFAULTS[name]
  check(arm(actuators, default=default))


def test_lengthrange_from_limits():
  check(arm('<muscle joint="elbow"/><muscle joint="slide" gear="-2"/>',
            head='<compiler><lengthrange uselimit="true"/></compiler>'))


def test_keyframe_ctrl_and_act():
  xml = arm('<motor joint="elbow"/><intvelocity joint="shoulder" actrange="-1 1"/>')
  xml = xml.replace("</mujoco>", '<keyframe><key ctrl="1 2" act=".5"/></keyframe></mujoco>')
  m, mj = check(xml)
  np.testing.assert_array_equal(m.key_ctrl, mj.key_ctrl)
  np.testing.assert_array_equal(m.key_act, mj.key_act)


ERRORS = {
  "no_target": ('<motor/>', "exactly one transmission target"),
  "two_targets": ('<motor joint="elbow" site="tip"/>', "several transmission targets"),
  "unknown_joint": ('<motor joint="nope"/>', "unknown joint 'nope'"),
  "kv_and_dampratio": ('<position joint="elbow" kv="1" dampratio="1"/>', "kv and dampratio"),
  "damper_no_range": ('<damper joint="elbow"/>', "invalid control range"),
  "actrange_without_state": ('<general joint="elbow" actrange="0 1"/>', "dyntype is 'none'"),
  "inherit_and_range": ('<position joint="elbow" inheritrange="1" ctrlrange="0 1"/>',
                        "inheritrange"),
  "refsite_not_site": ('<motor joint="elbow" refsite="tip"/>', "refsite"),
  "user_gain": ('<general joint="elbow" gaintype="user"/>', "gaintype 'user'"),
  "repeated_name": ('<motor name="a" joint="elbow"/><motor name="a" joint="slide"/>',
                    "repeated actuator name"),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_actuator_is_an_error_naming_it(name):
  act, msg = ERRORS[name]
  with pytest.raises(jaxmj.MJCFError, match=msg) as info:
    jaxmj.Model.from_xml_string(arm(act))
  assert info.value.line is not None


def test_plain_pid_takes_two_controls_as_mujoco():
  m, _ = check(arm('<pid joint="elbow"/>'))  # input "pos vel": nu 2, one actuator
  assert (m.nu, m.nactuator, m.nout) == (2, 1, 1)


def test_actuator_armature_and_damping_targets_match_mujoco():
  """jnt_actuatorid: the one actuator reflecting armature/damping onto the joint, -2 for
  several, -1 when none does (a plain motor does not count). The run time is held in
  tests/test_armature.py."""
  m, _ = check(arm('<motor joint="elbow" gear="3" armature=".2" damping="1 .1 .01"/>'
                   '<motor joint="elbow" gear="2" damping=".5"/><motor joint="shoulder"/>'
                   '<motor joint="ball" gear="2 0 0 0 0 0" armature=".1"/>'))
  assert list(m.jnt_actuatorid) == [-1, -2, 3, -1, -1]
  assert m.unsupported == ()


# (default class, actuators, attribute, message): mujoco 4.0.0 refuses each too. The input
# keywords are checked when read, in every element and default class (even an unused one),
# before anything else: "pos pos" is a duplicate even where only one input is allowed.
MUJOCO_ERRORS = {
  "actdim_1_stateless": ("", '<general joint="elbow" actdim="1"/>', "actdim",
                         "invalid actdim 1 in stateless actuator"),
  "actdim_2_stateless": ("", '<general joint="elbow" actdim="2"/>', "actdim",
                         "actdim > 1 is only allowed for dyntype 'user', 'dcmotor' and 'pid'"),
  "actdim_2_filter": ("", '<general joint="elbow" dyntype="filter" actdim="2"/>', "actdim",
                      "actdim > 1 is only allowed"),
  "actdim_0_filter": ("", '<general joint="elbow" dyntype="muscle" actdim="0"/>', "actdim",
                      "invalid actdim 0 in stateful actuator"),
  "actdim_pid": ("", '<general joint="elbow" gaintype="pid" biastype="affine" dyntype="pid" '
                 'gainprm="1" input="pos" actdim="2"/>', "actdim",
                 "pid controller states require matching actdim"),
  "input_duplicate": ("", '<general joint="elbow" input="pos pos"/>', "input",
                      "duplicate keyword 'pos'"),
  "input_duplicate_first": ("", '<general joint="elbow" input="vel pos pos bogus"/>', "input",
                            "duplicate keyword 'pos'"),
  "input_duplicate_pid": ("", '<pid joint="elbow" input="pos vel vel"/>', "input",
                          "duplicate keyword 'vel'"),
  "input_duplicate_dcmotor": ("", '<dcmotor joint="elbow" motorconst="1" resistance="1" '
                              'input="ff ff"/>', "input", "duplicate keyword 'ff'"),
  "input_duplicate_so3": ("", '<orientation joint="ball" input="pos pos"/>', "input",
                          "duplicate keyword 'pos'"),
  "input_standalone_twice": ("", '<orientation joint="ball" input="quat quat"/>', "input",
                             "invalid keyword 'quat'"),
  "input_unknown": ("", '<general joint="elbow" input="pos Vel"/>', "input",
                    "invalid keyword 'Vel'"),
  "input_order": ("", '<general joint="elbow" input="vel pos"/>', "input", "canonical order"),
  "input_in_unused_default": ('<default class="c"><general input="voltage voltage"/></default>',
                              '<motor joint="elbow"/>', "input", "duplicate keyword"),
  # several faults at once: the first in mjCActuator::Compile's order wins
  "dcmotor_actdim_before_actearly": (
    "", '<general joint="elbow" dyntype="dcmotor" gaintype="dcmotor" biastype="dcmotor" '
    'gainprm="1 1" actearly="false" actdim="3"/>', "actdim", "DC motor parameters"),
  "ranges_before_actearly": (
    "", '<general joint="elbow" dyntype="dcmotor" gaintype="dcmotor" biastype="dcmotor" '
    'gainprm="1 1" ctrlrange="1 0" ctrllimited="true"/>', "ctrlrange", "invalid control range"),
  "force_before_control_range": (
    "", '<general joint="elbow" ctrlrange="1 0" ctrllimited="true" forcerange="1 0" '
    'forcelimited="true" actdim="2"/>', "forcerange", "invalid force range"),
  "actrange_before_actdim": ("", '<general joint="elbow" actrange="0 1" actlimited="true" '
                             'actdim="1"/>', "actrange", "actrange specified but dyntype is"),
  "pid_dyntype_before_actearly": ("", '<general joint="elbow" dyntype="dcmotor" gaintype="pid" '
                                  'biastype="affine"/>', "dyntype",
                                  "pid requires dyntype 'none' or 'pid'"),
  "pid_body": ("", '<general body="upper" gaintype="pid" biastype="affine" gainprm="0"/>',
               "body", "pid cannot use body transmission"),
  "pid_slewmax": ("", '<general joint="elbow" gaintype="pid" biastype="affine" dyntype="pid" '
                  'gainprm="1" dynprm="0 -1"/>', "dynprm",
                  "slewmax (dynprm[1]) must be non-negative"),
  "pid_states_need_pos": ("", '<general joint="elbow" gaintype="pid" biastype="affine" '
                          'dyntype="pid" gainprm="0" dynprm="0 1" input="vel"/>', "input",
                          "pid controller states require the pos input"),
  "dcmotor_controller_needs_K": (
    "", '<general joint="elbow" dyntype="dcmotor" gaintype="dcmotor" biastype="dcmotor" '
    'gainprm="1 0" input="pos" actearly="true"/>', "gainprm",
    "dcmotor controller inputs require a positive motor constant"),
  "armature_on_site": ("", '<general site="tip" armature="1"/>', "armature",
                       "armature requires joint or tendon transmission"),
  "damping_on_body": ("", '<general body="upper" damping="0 1"/>', "damping",
                      "damping requires joint or tendon transmission"),
  "so3_dyntype_before_gain": ("", '<general site="tip" refsite="hand" gaintype="so3" '
                              'biastype="so3" dyntype="filter" gainprm="1" biasprm="0 2"/>',
                              "dyntype", "so3 requires dyntype 'none' or 'integrator'"),
  "so3_actdim_before_input": ("", '<general site="tip" refsite="hand" gaintype="so3" '
                              'biastype="so3" dyntype="integrator" gainprm="1" biasprm="0 -1" '
                              'actdim="2" input="quat"/>', "actdim",
                              "so3 integrator requires actdim 3"),
  "history_needs_input": ("", '<dcmotor joint="elbow" motorconst="1" resistance="1" '
                          'input="none" nsample="2"/>', "nsample",
                          "history and delay require an input"),
}


@pytest.mark.parametrize("name", sorted(MUJOCO_ERRORS))
def test_errors_and_their_order_match_mujoco(name):
  default, act, attribute, msg = MUJOCO_ERRORS[name]
  xml = arm(act, default=default)
  with pytest.raises(jaxmj.MJCFError, match=re.escape(msg)) as info:
    jaxmj.Model.from_xml_string(xml)
  assert info.value.line is not None and info.value.attribute == attribute
  with pytest.raises(ValueError, match=re.escape(msg.split(" '")[0])):  # MuJoCo: '(null)'
    mujoco.MjModel.from_xml_string(xml)
