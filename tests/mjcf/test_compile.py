"""The MJCF compiler against MuJoCo: every model field jaxmj produces matches mjModel's.

Each case compiles the same MJCF with jaxmj and with the pinned mujoco and compares all
body_/jnt_/dof_/geom_/site_/tree_ fields, qpos0 and qpos_spring (tests/mujoco_compare.py),
and the <contact> fields (test_contact_pairs.contact_differences).
"""

import pytest

mujoco = pytest.importorskip("mujoco")

import glob  # noqa: E402
import os  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402
from conftest import MODELS  # noqa: E402
from mujoco_compare import load_both, model_differences  # noqa: E402
from test_contact_pairs import contact_differences  # noqa: E402

import jaxmj  # noqa: E402

# Fields are held to 1e-10 here; the compiled frames, masses and inertias (body_iquat from
# inertia.eig3 included, even with tied moments) are bit-equal, held in test_frames_bits.py.
# Large values (invweight0 and dof_M0 of light links, ~1e4) are held relative:
# model_differences' rule. Frames at qpos0
# that coincide with their body's or inertial frame within 1e-6 are copied, as
# mj_kinematics copies them (setconst honours sameframe), so cam_poscom0 and dof_length
# match too (they were 1e-9 and 5e-11 off when recomposed).


def differences(m, mj, atol=1e-10) -> list[str]:
  """model_differences and the <contact> fields (npair, nexclude, pair_*,
  exclude_signature) compared exactly."""
  return contact_differences(m, mj) + model_differences(m, mj, atol)


def check(xml: str, assets=None):
  """Compiles `xml` with both compilers and asserts the models agree; returns them."""
  if assets is None:
    m, mj = load_both(xml=xml)
  else:
    m = jaxmj.Model.from_xml_string(xml, assets=assets)
    mj = mujoco.MjModel.from_xml_string(xml, {k: v.encode() if isinstance(v, str) else v
                                               for k, v in assets.items()})
  assert differences(m, mj) == []
  return m, mj


def same_names(m, mj) -> None:
  for kind, n in (("body", mj.nbody), ("joint", mj.njnt), ("geom", mj.ngeom),
                  ("site", mj.nsite), ("key", mj.nkey)):
    objtype = mujoco.mju_str2Type(kind)
    for i in range(n):
      assert (jaxmj.id2name(m, kind, i) or "") == (mujoco.mj_id2name(mj, objtype, i) or ""), (
        kind, i)


def wrap(body: str, head: str = "") -> str:
  return f"<mujoco>{head}<worldbody>{body}</worldbody></mujoco>"


# ---------------------------------------------------------------- the repository's models


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(MODELS, "*.xml"))),
                         ids=os.path.basename)
def test_models(path):
  m, mj = load_both(path)
  assert differences(m, mj) == []
  same_names(m, mj)


# ---------------------------------------------------------------- inline cases

GEOM = '<geom type="box" size=".1 .2 .3"/>'  # asymmetric inertia, so frames show


def body(attrs: str, inner: str = "", joint: str = "<joint/>") -> str:
  return wrap(f'<body pos=".1 .2 .3" {attrs}>{joint}{inner or GEOM}</body>')


ORIENTATION = {
  "quat_unnormalized": body('quat="2 1 -.5 .3"'),
  "quat_negative_w": body('quat="-1 .2 .3 .4"'),
  "axisangle_degree": body('axisangle="1 2 3 45"'),
  "axisangle_radian": wrap('<body axisangle="1 2 3 .7"><joint/>' + GEOM + "</body>",
                           '<compiler angle="radian"/>'),
  "axisangle_unnormalized_axis": body('axisangle="0 0 5 -120"'),
  "euler_default_xyz": body('euler="10 20 30"'),
  "euler_radian": wrap('<body euler=".1 .2 .3"><joint/>' + GEOM + "</body>",
                       '<compiler angle="radian"/>'),
  "xyaxes_orthonormal": body('xyaxes="0 1 0 -1 0 0"'),
  "xyaxes_non_orthogonal": body('xyaxes="1 1 0 0 1 1"'),
  "xyaxes_unnormalized": body('xyaxes="3 0 0 0 0 5"'),
  "zaxis_general": body('zaxis="1 2 3"'),
  "zaxis_plus_z": body('zaxis="0 0 4"'),
  "zaxis_minus_z": body('zaxis="0 0 -1"'),
  "zaxis_x": body('zaxis="1 0 0"'),
  "geom_orientations": wrap(
    '<body><joint/><geom type="box" size=".1 .2 .3" quat="1 2 3 4"/>'
    '<geom type="box" size=".1 .2 .3" pos="1 0 0" axisangle="0 1 0 30"/>'
    '<geom type="box" size=".1 .2 .3" pos="0 1 0" euler="30 0 -60"/>'
    '<geom type="box" size=".1 .2 .3" pos="0 0 1" xyaxes="0 0 1 1 1 0"/>'
    '<geom type="box" size=".1 .2 .3" pos="1 1 0" zaxis="-1 0 -1"/></body>'),
  "site_orientations": wrap(
    '<body><joint/><geom size=".1"/><site quat="0 1 0 0"/><site axisangle="1 0 0 90"/>'
    '<site euler="1 2 3"/><site xyaxes="0 1 0 0 0 1"/><site zaxis="0 -1 0"/></body>'),
  "joint_axis_unnormalized": wrap(
    '<body><joint axis="1 2 3"/><joint type="slide" axis="0 0 -7"/>' + GEOM + "</body>"),
}


@pytest.mark.parametrize("seq", ["xyz", "zyx", "XYZ", "ZYX", "xYz", "zxz", "XzX", "yxy",
                                 "xxy"])
def test_euler_sequences(seq):
  check(wrap('<body euler="20 -35 50"><joint/>' + GEOM + "</body>"
             '<body euler="90 90 90"><joint/>' + GEOM + "</body>",
             f'<compiler eulerseq="{seq}"/>'))


FRAMES = {
  "frame_in_world": wrap('<frame pos="1 0 0" euler="0 0 90"><body pos="0 1 0" euler="10 0 0">'
                         "<joint/>" + GEOM + "</body></frame>"),
  "nested_frames": wrap(
    '<body pos="0 0 1"><joint/><frame pos="1 0 0" axisangle="0 0 1 90">'
    '<frame pos="0 1 0" quat="1 1 0 0"><geom type="box" size=".1 .2 .3" pos=".1 0 0"/>'
    '<site pos="0 0 .1"/><body pos="0 .2 0" zaxis="1 1 1"><joint axis="1 0 0"/>'
    + GEOM + "</body></frame></frame>" + GEOM + "</body>"),
  "frame_childclass": wrap(
    '<frame childclass="red" pos="1 0 0"><body><joint/><geom/></body>'
    '<frame euler="0 90 0"><body><joint/><geom class="blue"/></body></frame></frame>'
    '<body pos="0 2 0"><joint/><geom size=".3"/></body>',
    '<default><default class="red"><geom size=".2" type="capsule" fromto="0 0 0 0 0 1"/>'
    '<joint type="slide" axis="1 1 0"/></default>'
    '<default class="blue"><geom type="box" size=".1 .1 .2"/></default></default>'),
  "frame_childclass_into_body": wrap(
    '<frame childclass="a"><body childclass="b"><joint/><geom/>'
    '<frame><body><joint/><geom/></body></frame></body><body><joint/><geom/></body></frame>',
    '<default><default class="a"><geom size=".1"/><joint axis="1 0 0"/></default>'
    '<default class="b"><geom size=".2 .1 .3" type="box"/><joint type="slide"/></default>'
    "</default>"),
}

FROMTO = {
  f"fromto_{t}_{i}": wrap(f'<body><joint/><geom type="{t}" size="{s}" fromto="{ft}"/>'
                          '<geom size=".05" pos="0 0 -1"/></body>')
  for t, s in (("capsule", ".1"), ("cylinder", ".1"), ("box", ".1"), ("ellipsoid", ".1"),
               ("box", ".1 .3 .7"), ("ellipsoid", ".2 .1"), ("capsule", ".1 5"))
  for i, ft in enumerate(("0 0 0 1 0 0", "1 2 3 -1 .5 2", "0 0 0 0 0 1", "0 0 1 0 0 0"))
}
FROMTO["fromto_sites"] = wrap(
  '<body><joint/><geom size=".1"/><site type="capsule" size=".1" fromto="0 0 0 1 1 0"/>'
  '<site type="box" size=".1" fromto="0 0 0 0 0 -1"/>'
  '<site type="cylinder" size=".1" fromto="1 0 0 0 1 0"/>'
  '<site type="ellipsoid" size=".1 .2" fromto="0 1 0 0 -1 1"/></body>')
FROMTO["fromto_single_geom_keeps_frame"] = wrap(
  '<body><joint/><geom type="capsule" size=".1" fromto="0 0 0 1 2 3"/></body>')

PRIMITIVES = {}
_SIZES = {"sphere": ".2", "capsule": ".1 .3", "cylinder": ".1 .3", "ellipsoid": ".1 .2 .3",
          "box": ".1 .2 .3"}
for _t, _s in _SIZES.items():
  PRIMITIVES[f"{_t}_density"] = wrap(
    f'<body><joint/><geom type="{_t}" size="{_s}" density="700" euler="10 20 30"/></body>')
  PRIMITIVES[f"{_t}_mass"] = wrap(
    f'<body><joint/><geom type="{_t}" size="{_s}" mass="3.5" pos=".1 0 0"/></body>')
  PRIMITIVES[f"{_t}_mixed"] = wrap(
    f'<body><joint/><geom type="{_t}" size="{_s}" mass="2"/>'
    f'<geom type="{_t}" size="{_s}" pos=".3 .1 0" euler="0 40 0" density="300"/>'
    f'<geom type="{_t}" size="{_s}" pos="0 -.4 .2" xyaxes="0 1 0 0 0 1"/></body>')
PRIMITIVES["plane_in_world"] = wrap('<geom type="plane" size="1 2 .1"/>'
                                    '<geom type="plane" size="0 0 1" pos="0 0 -1"/>'
                                    '<body><joint/><geom size=".1"/></body>')
PRIMITIVES["plane_in_static_body"] = wrap(
  '<body pos="1 0 0"><geom type="plane" size="1 1 1" mass="3"/><geom size=".2"/></body>')
PRIMITIVES["zero_mass_visual_geom"] = wrap(
  '<body><joint/><geom type="capsule" size=".05" fromto="0 0 0 .5 0 0"/>'
  '<geom type="cylinder" size=".1 .05" mass="0" group="1"/></body>')
PRIMITIVES["tiny_mass_geoms_ignored"] = wrap(
  '<body><joint/><geom type="box" size=".3 .2 .1" euler="10 20 30"/>'
  '<geom size=".1" mass="1e-14" pos="1 0 0"/><geom size=".1" density="0" pos="0 1 0"/>'
  '</body>')
PRIMITIVES["small_mass_geom_counts"] = wrap(
  '<body><joint/><geom type="box" size=".3 .2 .1" euler="10 20 30"/>'
  '<geom size=".1" mass="1e-12" pos="1 0 0"/></body>')
PRIMITIVES["geom_contact_params"] = wrap(
  '<body><joint/><geom size=".1" contype="3" conaffinity="5" condim="6" priority="2" '
  'friction=".5 .02 .003" solmix=".3" solref=".01 .5" solimp=".8 .9 .01 .4 3" margin=".1" '
  'gap=".05" group="2" rgba="1 0 0 .5"/>'
  '<geom size=".1" friction=".7" solimp=".5 .6" condim="1" pos=".2 0 0"/>'
  '<geom size=".1" friction=".7 .1" condim="4" pos=".4 0 0"/></body>')

INERTIA = {
  "inertiafromgeom_true_overrides_inertial": wrap(
    '<body><joint/><inertial pos="1 0 0" mass="5" diaginertia="1 2 3"/>' + GEOM + "</body>",
    '<compiler inertiafromgeom="true"/>'),
  "inertiafromgeom_false": wrap(
    '<body><joint/><inertial pos="0 .1 0" mass="5" diaginertia="1 2 2"/>' + GEOM + "</body>"
    '<body pos="1 0 0">' + GEOM + "</body>", '<compiler inertiafromgeom="false"/>'),
  "inertiafromgeom_auto": wrap(
    '<body><joint/><inertial pos="0 .1 0" mass="5" diaginertia="1 2 2"/>' + GEOM + "</body>"
    '<body pos="1 0 0"><joint/>' + GEOM + "</body>", '<compiler inertiafromgeom="auto"/>'),
  "inertiafromgeom_true_without_geoms": wrap(
    '<body pos="1 2 3" euler="10 0 0"><joint/><inertial pos="0 0 0" mass="1" '
    'diaginertia="1 1 1"/><body><joint/>' + GEOM + "</body></body>",
    '<compiler inertiafromgeom="true"/>'),
  "inertiagrouprange": wrap(
    '<body><joint/><geom size=".1" group="0"/><geom size=".2" group="3" pos="1 0 0"/>'
    '<geom type="box" size=".1 .2 .3" group="5" pos="0 1 0"/></body>',
    '<compiler inertiagrouprange="2 5"/>'),
  "inertiagrouprange_single": wrap(
    '<body><joint/><geom size=".1" group="1"/><geom type="box" size=".1 .2 .3" group="2" '
    'pos="1 0 0" euler="0 0 30"/></body>', '<compiler inertiagrouprange="2 2"/>'),
  "boundmass_boundinertia": wrap(
    '<body><joint/><geom size=".01"/></body><body pos="1 0 0"><joint/>'
    '<inertial pos="0 0 0" mass=".0001" diaginertia="1e-6 2e-6 2.5e-6"/></body>'
    '<body pos="2 0 0"><joint/><geom type="box" size="1 2 3"/></body>',
    '<compiler boundmass=".5" boundinertia=".01"/>'),
  "balanceinertia": wrap(
    '<body><joint/><inertial pos="0 0 0" mass="1" diaginertia="1 1 3"/></body>'
    '<body pos="1 0 0"><joint/><inertial pos="0 0 0" mass="1" diaginertia="1 2 3"/></body>',
    '<compiler balanceinertia="true"/>'),
  "explicit_diaginertia_with_quat": wrap(
    '<body><joint/><inertial pos=".1 .2 .3" quat="1 2 3 4" mass="2" '
    'diaginertia=".1 .2 .25"/></body>'
    '<body pos="1 0 0"><joint/><inertial pos="0 0 0" euler="0 90 0" mass="1" '
    'diaginertia=".3 .2 .1"/></body>'
    '<body pos="2 0 0"><joint/><inertial pos="0 0 0" xyaxes="0 1 0 -1 0 0" mass="1" '
    'diaginertia=".1 .1 .1"/></body>'),
  "explicit_fullinertia": wrap(
    '<body><joint/><inertial pos=".1 0 0" mass="2" fullinertia=".3 .25 .2 .01 .02 .03"/>'
    '</body><body pos="1 0 0"><joint/><inertial pos="0 0 0" mass="1" '
    'fullinertia="1 1 1 0 0 0"/></body><body pos="2 0 0"><joint/><inertial pos="0 0 0" '
    'mass="1" fullinertia="1 1.2 1.4 .3 .05 -.2"/></body>'),
  "massless_moving_body_with_welded_mass": wrap(
    '<body><joint/><body><body pos="1 0 0"><geom size=".1"/></body></body></body>'
    '<body pos="0 2 0"><joint/><body><joint/><geom size=".1"/></body><body><geom size=".1"/>'
    '</body></body><body pos="0 4 0"><joint/><inertial pos="0 0 0" mass="1e-15" '
    'diaginertia="1e-15 1e-15 1e-15"/></body>'),
  "empty_bodies_keep_written_pose": wrap(
    '<body name="anchor" pos="-3 1 2" euler="10 20 30"/>'
    '<frame pos="1 1 1" euler="0 0 90"><body pos="-3 1 2" xyaxes="0 1 0 -1 0 0">'
    '<site/><body pos="1 0 0"><joint/>' + GEOM + "</body></body></frame>"
    '<body pos="0 0 1"><geom size=".1" mass="0"/></body>'),
  "boundmass_on_empty_body": wrap('<body pos="-3 1 2" euler="10 20 30"><joint/></body>',
                                  '<compiler boundmass=".1" boundinertia=".1"/>'),
}

DEFAULTS = {
  "nested_classes": wrap(
    '<body childclass="arm"><joint/><geom/><body pos="1 0 0"><joint class="main"/>'
    '<geom class="fore"/><geom class="main" size=".3" pos="0 1 0"/></body></body>'
    '<body pos="0 3 0"><joint/><geom/></body>',
    '<default><geom size=".1" density="500"/><joint damping=".1"/>'
    '<default class="arm"><geom type="capsule" size=".2 .4"/><joint axis="1 0 0" '
    'armature=".3"/><default class="fore"><geom size=".1"/><joint type="slide"/>'
    "</default></default></default>"),
  "childclass_overridden_by_class": wrap(
    '<body childclass="a"><joint class="b"/><geom/><geom class="b" pos="1 0 0"/>'
    '<body childclass="b" pos="0 1 0"><joint/><geom/><geom class="a" pos="1 0 0"/></body>'
    "</body>",
    '<default><default class="a"><geom type="box" size=".1 .2 .3"/><joint axis="0 1 0" '
    'stiffness="2"/></default><default class="b"><geom size=".4"/><joint type="slide" '
    'damping="3"/></default></default>'),
  "partial_vectors_over_class": wrap(
    '<body><joint/><geom type="sphere" size=".05"/><geom pos="1 0 0"/>'
    '<geom class="c" friction=".3"/><geom class="c" solimp=".5"/><site size=".3"/>'
    '<site class="c" size=".2"/></body>',
    '<default><geom type="box" pos=".1 .2 .3" size=".1 .2 .3"/><site size=".1 .2 .3"/>'
    '<default class="c"><geom size=".2" friction=".4 .01 .001" solimp=".7 .8 .002"/>'
    '<site type="box" size=".4 .5"/></default></default>'),
  # MJCF's arities [1..2] and [1..5]: MuJoCo's own cards.xml writes solref=".5e-4"
  "partial_solref_friction_fluidcoef": wrap(
    '<geom name="p" type="plane" size="1 1 1" solref=".01"/>'
    '<body><joint range="-1 1" solreflimit=".03" solreffriction=".04"/>'
    '<geom name="s" size=".1" pos="0 0 .2" fluidcoef=".3"/>'
    '<geom class="c" pos=".3 0 .2" solref=".007"/></body>',
    '<option o_solref=".05" o_friction=".5"/><default><default class="c">'
    '<geom size=".1" solref=".01 .5"/></default></default>'
    '<contact><pair geom1="p" geom2="s" solref=".05" solreffriction=".06"/></contact>'),
  "class_on_site_and_freejoint": wrap(
    '<body><freejoint name="f"/><geom class="g"/><site class="s"/></body>',
    '<default><default class="g"><geom type="ellipsoid" size=".1 .2 .3"/></default>'
    '<default class="s"><site type="capsule" size=".1 .2" group="3"/></default></default>'),
  # a class's orientation, in any form, replaces its parent class's (whatever the form)
  "orientation_from_classes": wrap(
    '<body><freejoint/><geom/><geom class="q" pos="1 0 0"/><geom class="e" pos="0 1 0"/>'
    '<geom class="e" quat="0 1 0 0" pos="0 0 1"/><site/><site class="q"/></body>',
    '<default><geom type="box" size=".1 .2 .3" euler="0 0 30"/><site zaxis="1 1 0"/>'
    '<default class="q"><geom quat="0 0 1 0"/><site axisangle="1 0 0 20"/>'
    '<default class="e"><geom euler="0 40 0"/></default></default></default>'),
  "main_class_explicit": wrap(
    '<body childclass="x"><joint class="main"/><geom class="main"/></body>',
    '<default class="main"><geom size=".3"/><default class="x"><geom size=".1"/></default>'
    "</default>"),
}

JOINTS = {
  "ref_springref_degree": wrap(
    '<body><joint ref="30" springref="-45" stiffness="2"/><joint type="slide" ref=".3" '
    'springref=".7"/>' + GEOM + "</body>"),
  "ref_springref_radian": wrap(
    '<body><joint ref=".3" springref="-.45"/>' + GEOM + "</body>",
    '<compiler angle="radian"/>'),
  "autolimits_from_default": wrap(
    '<body><joint/><joint class="r" axis="0 1 0"/><joint range="-10 10" limited="false" '
    'axis="1 0 0"/>' + GEOM +
    "</body>",
    '<default><joint range="-30 60"/><default class="r"><joint limited="false"/></default>'
    "</default>"),
  "autolimits_false_limited_explicit": wrap(
    '<body><joint range="-30 60" limited="true"/><joint range="-30 60" limited="false" '
    'axis="0 1 0"/><joint axis="1 0 0"/>' + GEOM + "</body>", '<compiler autolimits="false"/>'),
  "autolimits_false_zero_range": wrap(
    '<body><joint range="0 0"/>' + GEOM + "</body>",
    '<compiler autolimits="false"/><default><joint range="0 0"/></default>'),
  "autolimits_false_range_and_limited_from_default": wrap(
    '<body><joint/>' + GEOM + "</body>",
    '<compiler autolimits="false"/><default><joint range="-1 1" limited="true"/></default>'),
  "limited_false_keeps_degrees": wrap(
    '<body><joint range="-180 180" limited="false"/><joint type="ball" range="0 90" '
    'limited="false"/>' + GEOM + "</body>"),
  "limited_ranges_converted": wrap(
    '<body><joint range="-180 180"/><joint type="ball" range="0 90"/><joint type="slide" '
    'range="-1 2"/>' + GEOM + "</body>"),
  "all_joint_types": wrap(
    '<body><freejoint/>' + GEOM + '<body pos="0 0 1"><joint type="ball" pos=".1 0 0"/>'
    + GEOM + '<body pos="0 0 1"><joint type="slide" axis="0 1 0"/>' + GEOM +
    '<body pos="0 0 1"><joint type="hinge" axis="1 1 0" pos="0 0 .1"/>' + GEOM +
    "</body></body></body></body>"
    '<body pos="3 0 0"><joint type="free"/>' + GEOM + "</body>"),
  "multiple_joints_per_body": wrap(
    '<body><joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/>'
    '<joint type="hinge" axis="0 0 1"/>' + GEOM +
    '<body pos="1 0 0"><joint axis="1 0 0"/><joint axis="0 1 0"/>' + GEOM + "</body></body>"),
  "joint_parameters": wrap(
    '<body><joint group="2" stiffness="3" damping=".4" armature=".05" frictionloss=".1" '
    'margin=".01" solreflimit=".03 .8" solimplimit=".8 .9 .002" solreffriction=".04 .7" '
    'solimpfriction=".7 .8 .003 .2 3" actuatorfrcrange="-2 3" actuatorgravcomp="true" '
    'range="-1 1"/><joint actuatorfrclimited="false" actuatorfrcrange="-1 1"/>'
    + GEOM + "</body>"),
  "autolimits_improper_ranges": wrap(
    '<body><joint range="10 -10"/><joint type="slide" range="1 1" axis="1 0 0"/>'
    '<joint range="0 0" axis="0 1 0"/><joint range="-5 5" actuatorfrcrange="2 -2" '
    'axis="1 1 0"/>' + GEOM + '</body><body pos="1 0 0"><joint type="ball" range="0 0" '
    'limited="true"/>' + GEOM + "</body>"),
  "free_joint_ignores_limits_anchor_axis": wrap(
    '<body><joint type="free" limited="true" range="0 1" actuatorfrclimited="true" '
    'actuatorfrcrange="1 0" pos="1 2 3" axis="1 0 0"/>' + GEOM + "</body>"
    '<body pos="0 1 0"><joint type="ball" pos="1 2 3" axis="0 0 0"/>' + GEOM + "</body>"),
  "free_joint_range_without_autolimits": wrap(
    '<body><joint type="free" range="0 1"/>' + GEOM + "</body>",
    '<compiler autolimits="false"/>'),
  "freejoint_ignores_defaults": wrap(
    '<body><freejoint/>' + GEOM + '</body><body pos="1 0 0" childclass="c"><freejoint '
    'group="3"/>' + GEOM + '</body><body pos="2 0 0"><joint type="free"/>' + GEOM + "</body>",
    '<default><joint damping="2" armature=".1" stiffness="3" group="2"/><default class="c">'
    '<joint damping="1"/></default></default>'),
  "two_worldbodies_and_defaults": (
    '<mujoco><default><geom size=".1"/></default><default><joint axis="1 0 0"/></default>'
    '<worldbody><body><joint/><geom/></body></worldbody><worldbody><body name="b" '
    'pos="1 0 0"><joint/><geom type="box" size=".1 .2 .3"/></body></worldbody></mujoco>'),
  "mocap_bodies": wrap(
    '<body mocap="true" pos="1 2 3" euler="10 20 30">' + GEOM +
    '<body pos="0 0 1"><joint/>' + GEOM + "</body></body>"
    '<body mocap="true" pos="0 1 0"/><body><freejoint/>' + GEOM + "</body>"),
  "gravcomp": wrap('<body gravcomp=".5"><joint/>' + GEOM + '</body>'),
  "sites_partial_size": wrap(
    '<site pos="1 0 0"/><body><joint/>' + GEOM + '<site size=".1"/>'
    '<site type="capsule" size=".1"/><site type="box" size=".1 .2"/>'
    '<site type="ellipsoid" size=".1 .2 .3" group="4" rgba="0 1 0 1"/></body>'),
  "static_and_welded_bodies": wrap(
    '<body pos="0 0 1">' + GEOM + '<body pos="1 0 0">' + GEOM +
    '<body><joint/>' + GEOM + '<body pos="0 1 0">' + GEOM + "</body></body></body></body>"),
}

CASES = {**ORIENTATION, **FRAMES, **FROMTO, **PRIMITIVES, **INERTIA, **DEFAULTS, **JOINTS}


@pytest.mark.parametrize("xml", CASES.values(), ids=CASES.keys())
def test_inline(xml):
  check(xml)


def test_settotalmass_warns_and_scales():
  xml = wrap('<body><joint/><geom size=".1"/></body><body pos="1 0 0"><joint/>'
             '<geom type="box" size=".1 .2 .3" density="300"/></body>',
             '<compiler settotalmass="7"/>')
  with pytest.warns(UserWarning, match="deprecated"):
    m, mj = check(xml)
  assert np.isclose(np.sum(m.body_mass), 7.0)


def test_compiler_warnings_point_at_the_users_call():
  xml = wrap('<body><freejoint/><geom size=".1"/></body>',
             '<compiler settotalmass="7"/><statistic meaninertia="2"/><size memory="1K"/>')
  with pytest.warns(UserWarning) as caught:
    jaxmj.Model.from_xml_string(xml)
  assert len(caught) == 3
  assert {w.filename for w in caught} == {__file__}  # not a line inside jaxmj's compiler


def test_keyframes():
  xml = wrap(
    '<body mocap="true" pos="1 0 0"/><body><freejoint/>' + GEOM + "</body>"
    '<body pos="0 0 1"><joint name="h"/><joint type="ball"/>' + GEOM + "</body>"
    '<body mocap="true" pos="0 1 0" quat="0 1 0 0"/>',
    '<size nkey="5"/>') + """
    <keyframe>
      <key name="home" time="1.5" qpos="1 2 3 1 0 0 0 .5 0 1 0 0" qvel="1 2 3 4 5 6 7 8 9 10"/>
      <key name="partial" qpos="1 2 3"/>
      <key mpos="1 1 1 2 2 2" mquat="0 1 0 0 1 0 0 0"/>
      <key qpos="0 0 0 2 0 0 0 0 0 0 3 0" mpos="7 8 9 10" mquat="0 0 2 0 1"/>
    </keyframe>"""
  xml = xml.replace("</mujoco>", "") + "</mujoco>"
  m, mj = check(xml)
  assert m.nkey == mj.nkey == 5  # more keys than written: the rest take the defaults
  for f in ("key_time", "key_qpos", "key_qvel", "key_act", "key_ctrl", "key_mpos",
            "key_mquat"):
    np.testing.assert_allclose(np.asarray(getattr(m, f)).reshape(getattr(mj, f).shape),
                               getattr(mj, f), atol=1e-12, err_msg=f)
  same_names(m, mj)
  d = jaxmj.reset(m, "partial")
  np.testing.assert_allclose(d.qpos, mj.key_qpos[1])
  d = jaxmj.reset(m, "home")
  assert float(d.time) == 1.5


OPTIONS = {
  "defaults": "<option/>",
  "all_attributes": """<option timestep="0.005" impratio="2" tolerance="1e-6"
    ls_tolerance="0.02" noslip_tolerance="1e-5" ccd_tolerance="1e-5" sleep_tolerance="1e-2"
    gravity="0 -1 -2" wind="1 2 3" magnetic="0 0 1" density="1.2" viscosity="0.1"
    o_margin="0.01" o_solref="0.03 1.1" o_solimp="0.8 0.9 0.01 0.4 3"
    o_friction="1 2 3 4 5" integrator="RK4" cone="elliptic" jacobian="sparse" solver="CG"
    iterations="20" ls_iterations="10" noslip_iterations="3" ccd_iterations="20"
    sdf_iterations="5" sdf_initpoints="20" actuatorgroupdisable="0 2 5"/>""",
  "implicitfast_pgs_dense": '<option integrator="implicitfast" solver="PGS" '
                            'jacobian="dense" o_solimp=".5 .6"/>',
  "implicit": '<option integrator="implicit"/>',
  "disable_flags": "<option><flag " + " ".join(
    f'{n}="disable"' for n in ("constraint", "equality", "frictionloss", "limit", "contact",
                               "spring", "damper", "gravity", "clampctrl", "warmstart",
                               "filterparent", "actuation", "refsafe", "sensor", "midphase",
                               "eulerdamp", "autoreset", "nativeccd", "island", "multiccd"))
                   + "/></option>",
  "enable_flags": "<option><flag " + " ".join(
    f'{n}="enable"' for n in ("override", "energy", "fwdinv", "invdiscrete", "sleep",
                              "diagexact", "speculative")) + "/></option>",
  "flags_set_to_default": '<option><flag gravity="enable" energy="disable" '
                          'contact="disable"/></option>',
  "two_option_elements": '<option timestep=".01"/><option gravity="0 0 -1"><flag '
                         'contact="disable"/></option>',
}


@pytest.mark.parametrize("head", OPTIONS.values(), ids=OPTIONS.keys())
def test_options(head):
  m, mj = check(wrap('<body><joint/><geom size=".1"/></body>', head))
  for name in type(m.opt)._static_names + type(m.opt)._leaf_names:
    if name in ("grad", "grad_smoothing", "grad_smoothing_friction", "arithmetic",
                "jac_products"):  # jaxmj's own (types.py)
      continue
    ours, ref = getattr(m.opt, name), getattr(mj.opt, name)
    np.testing.assert_allclose(np.asarray(ours, float), np.asarray(ref, float), rtol=0,
                               atol=0, err_msg=name)


INCLUDED = """<mujoco>
  <default><geom type="box" size=".1 .2 .3"/></default>
  <worldbody><body name="inc" pos="0 0 1"><joint/><geom/></body></worldbody>
</mujoco>"""
INCLUDING = """<mujoco>
  <include file="part.xml"/>
  <worldbody><body pos="1 0 0"><joint axis="1 0 0"/><geom/></body></worldbody>
</mujoco>"""


def test_include_file(tmp_path):
  (tmp_path / "part.xml").write_text(INCLUDED)
  (tmp_path / "main.xml").write_text(INCLUDING)
  m, mj = load_both(tmp_path / "main.xml")
  assert differences(m, mj) == []
  assert m.nbody == 3


def test_include_nested_directory(tmp_path):
  (tmp_path / "sub").mkdir()
  (tmp_path / "sub" / "part.xml").write_text(INCLUDED)
  (tmp_path / "sub" / "mid.xml").write_text(
    '<mujoco><include file="part.xml"/><worldbody><body pos="2 0 0"><joint/><geom/></body>'
    "</worldbody></mujoco>")
  (tmp_path / "main.xml").write_text(INCLUDING.replace("part.xml", "sub/mid.xml"))
  try:
    mj = mujoco.MjModel.from_xml_path(str(tmp_path / "main.xml"))
  except ValueError as e:
    pytest.skip(f"mujoco resolves nested includes differently: {e}")
  m = jaxmj.Model.from_xml_path(tmp_path / "main.xml")
  assert differences(m, mj) == []


def test_include_from_assets():
  check(INCLUDING, assets={"part.xml": INCLUDED.encode()})


def test_include_any_root_element(tmp_path):
  """Fragments wrapped in <mujocoinclude> (as the Adroit and Shadow hands ship them) are
  spliced in where each <include> stands, in <default>, <worldbody>, a body, <equality> and
  <actuator> alike, and compile as MuJoCo compiles them."""
  parts = {
    "defaults.xml": '<default class="main"><geom type="capsule" size=".05 .2"/>'
                    '<joint damping=".1"/></default>',
    "arm.xml": '<body name="upper" pos="0 0 1"><joint name="shoulder"/><geom/>'
               '<body name="lower" pos="0 0 .4"><include file="wrist.xml"/></body></body>',
    "wrist.xml": '<joint name="elbow"/><geom/>',
    "eq.xml": '<joint joint1="shoulder" joint2="elbow" polycoef="0 .5 0 0 0"/>',
    "act.xml": '<motor joint="shoulder" gear="2"/><position joint="elbow" kp="10"/>',
  }
  for name, text in parts.items():
    (tmp_path / name).write_text(f"<mujocoinclude>{text}</mujocoinclude>")
  (tmp_path / "main.xml").write_text(
    '<mujoco><include file="defaults.xml"/><worldbody><geom type="plane" size="1 1 .1"/>'
    '<include file="arm.xml"/></worldbody><equality><include file="eq.xml"/></equality>'
    '<actuator><include file="act.xml"/></actuator></mujoco>')
  m, mj = load_both(tmp_path / "main.xml")
  assert differences(m, mj) == []
  same_names(m, mj)
  assert (m.nbody, m.neq, m.nu, m.jnt_type.size) == (3, 1, 2, 2)


# ---------------------------------------------------------------- MuJoCo's own test models

MJ_DIR = os.path.dirname(mujoco.__file__)
BUNDLED = sorted(os.path.relpath(p, MJ_DIR) for folder in ("mjx/test_data", "testdata")
                 for p in glob.glob(os.path.join(MJ_DIR, folder, "**", "*.xml"),
                                    recursive=True))

# Files using features jaxmj does not compile yet: the text the MJCFError must contain.
EXPECTED_UNSUPPORTED = {}


def test_bundled_files_found():
  assert len(BUNDLED) >= 30
  assert set(EXPECTED_UNSUPPORTED) <= set(BUNDLED)


@pytest.mark.parametrize("rel", BUNDLED)
def test_bundled(rel, tmp_path, monkeypatch):
  """The file compiles like MuJoCo (fields and names). A file listed in EXPECTED_UNSUPPORTED
  raises the listed MJCFError instead, and its supported subset (what jaxmj lacks stripped,
  both compilers given the same XML) still exercises the compiler on a real model."""
  monkeypatch.chdir(tmp_path)  # mujoco may write MUJOCO_LOG.TXT
  path = os.path.join(MJ_DIR, rel)
  try:
    mj = mujoco.MjModel.from_xml_path(path)
  except ValueError as e:
    pytest.skip(f"mujoco itself rejects this file: {str(e).splitlines()[0]}")
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)  # cameras and lights are skipped
    if rel in EXPECTED_UNSUPPORTED:
      with pytest.raises(jaxmj.MJCFError) as info:
        jaxmj.Model.from_xml_path(path)
      assert EXPECTED_UNSUPPORTED[rel] in str(info.value)
      xml = _supported_subset(path)
      try:
        mj = mujoco.MjModel.from_xml_string(xml)
      except ValueError as e:
        pytest.skip(f"mujoco rejects the stripped model: {str(e).splitlines()[0]}")
      m = jaxmj.Model.from_xml_string(xml)
    else:
      m = jaxmj.Model.from_xml_path(path)
  assert differences(m, mj) == []
  same_names(m, mj)


def _supported_subset(path: str):
  """The file with includes expanded and everything jaxmj cannot compile removed: unsupported
  elements, attributes outside the schema, mesh/hfield/sdf geoms, and keyframe controls."""
  from lxml import etree

  from jaxmj.mjcf.spec import schema

  def expand(file):
    root = etree.parse(file, etree.XMLParser(remove_comments=True)).getroot()
    for inc in list(root.iter("include")):
      parent, at = inc.getparent(), inc.getparent().index(inc)
      parent.remove(inc)
      for k, child in enumerate(expand(os.path.join(os.path.dirname(file), inc.get("file")))):
        parent.insert(at + k, child)
    return root

  def prune(el):
    for child in list(el):
      tag = schema.SCOPED.get((el.tag, child.tag), child.tag)  # e.g. spatial/site
      drop = (not isinstance(child.tag, str) or tag not in schema.ATTRS
              or (child.tag == "geom" and (child.get("type") in ("mesh", "hfield", "sdf")
                                           or (child.get("mesh") and not child.get("type")))))
      if drop:
        el.remove(child)
        continue
      for name in list(child.attrib):
        if name not in schema.ATTRS[tag] or (child.tag == "key" and name in ("ctrl",
                                                                             "act")):
          del child.attrib[name]
      prune(child)

  root = expand(path)
  prune(root)
  return etree.tostring(root).decode()
