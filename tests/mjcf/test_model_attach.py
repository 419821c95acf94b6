"""MJCF's <asset><model> and <attach> against MuJoCo 4.0's reader: the copied subtree with its
default classes, assets, referencing elements and keyframes, angles across unit systems,
attachments inside attached models and under <replicate>, self-attachment, the conflict
policy, and the cases jaxmj refuses by name."""

import os
import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from conftest import MODELS  # noqa: E402
from mujoco_compare import model_differences, rollout_error  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.names import ObjType, id2name  # noqa: E402

ATTACH = os.path.join(MODELS, "attach")
KEY_FIELDS = ("key_time", "key_qpos", "key_qvel", "key_act", "key_ctrl", "key_mpos",
              "key_mquat")
NAMED = {"body": "nbody", "joint": "njnt", "geom": "ngeom", "site": "nsite", "camera": "ncam",
         "actuator": "nu", "sensor": "nsensor", "tendon": "ntendon", "equality": "neq",
         "key": "nkey", "mesh": "nmesh", "texture": "ntex", "material": "nmat",
         "pair": "npair", "exclude": "nexclude"}


def _load(path):
  with warnings.catch_warnings():  # the attach conflicts both report
    warnings.simplefilter("ignore")
    return jaxmj.Model.from_xml_path(path), mujoco.MjModel.from_xml_path(str(path))


def _names(m, mj, kind):
  objtype = getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}")
  n = getattr(mj, NAMED[kind])
  return ([id2name(m, ObjType[kind.upper()], i) or "" for i in range(n)],
          [mujoco.mj_id2name(mj, objtype, i) or "" for i in range(n)])


def assert_same_as_mujoco(m, mj):
  assert model_differences(m, mj, atol=1e-12) == []
  for f in KEY_FIELDS:
    np.testing.assert_allclose(np.asarray(getattr(m, f)), getattr(mj, f), rtol=0, atol=1e-12,
                               err_msg=f)
  for kind in NAMED:
    ours, theirs = _names(m, mj, kind)
    assert ours == theirs, kind


@pytest.mark.parametrize("name", ["scene.xml", "arm_gripper.xml"])
def test_attached_models_compile_as_mujoco(name):
  # scene.xml: a whole model that attaches two others itself, on a moving body; a body of
  # a model in radians under a rotated frame of one in degrees (and the reverse); copies
  # under <replicate>; a mocap target and keyframes in the parent and in the children; a
  # clock sensor in arm.xml, copied at every copy of every attachment (22 in scene.xml)
  m, mj = _load(os.path.join(ATTACH, name))
  assert_same_as_mujoco(m, mj)


CHILD = """<mujoco model="child">
<asset><material name="used" rgba="0 1 0 1"/><material name="unused"/>
  <texture name="t" builtin="checker" width="8" height="8" type="2d"/>
  <material name="mt" texture="t"/></asset>
<default><joint damping="0.3"/>
  <default class="c"><geom rgba="1 0 0 1" size=".1" material="used"/></default></default>
<worldbody>
  <body name="b" pos="0 0 1" euler="0 0 30">
    <joint name="j" type="hinge" range="-30 60" ref="10"/><geom class="c"/><site name="s"/>
    <body name="b2" pos=".2 0 0" axisangle="1 0 0 45">
      <joint name="j2" type="ball" range="0 50"/><geom size=".05" material="mt"/>
      <site name="s2"/></body>
  </body>
  <body name="other"><site name="so"/><joint name="jo"/><geom size=".1" pos="2 0 0"/></body>
</worldbody>
<tendon><fixed name="tin"><joint joint="j" coef="1"/></fixed>
  <spatial name="tout"><site site="s"/><site site="so"/></spatial>
  <spatial name="t2"><site site="s"/><site site="s2"/></spatial></tendon>
<sensor><jointpos name="sin" joint="j"/><jointpos name="sout" joint="jo"/>
  <framepos name="fp" objtype="site" objname="s" reftype="site" refname="so"/>
  <framepos name="fp2" objtype="site" objname="s2" reftype="xbody" refname="b"/>
  <subtreecom name="sw" body="world"/><tendonpos tendon="t2"/></sensor>
<equality><joint name="e" joint1="j" joint2="jo"/><connect name="c" body1="b2" anchor="0 0 0"/>
</equality>
<keyframe><key name="k" qpos="0.1 1 0 0 0 0.2" ctrl="0.5"/></keyframe>
<actuator><motor name="a" joint="j"/><position name="ao" joint="jo"/>
  <position joint="j" kp="3"/></actuator>
</mujoco>"""


def _write(folder, **files):
  for name, text in files.items():
    with open(os.path.join(folder, name), "w") as f:
      f.write(text)
  return os.path.join(folder, "parent.xml")


def test_only_elements_naming_the_copy_come_along(tmp_path):
  # the tendon, sensors, equality and actuator naming `other` (outside the copied body)
  # stay behind, so does the sensor naming the world; the unused material comes along;
  # the child's degrees are read as degrees in a parent in radians
  parent = _write(tmp_path, **{"child.xml": CHILD, "parent.xml": """<mujoco>
<compiler angle="radian"/><asset><model name="ch" file="child.xml"/></asset>
<default><geom rgba="0 0 1 1"/><joint armature="0.1"/></default>
<worldbody><body name="p"><joint name="pj"/><geom size=".2"/></body>
  <body name="q" pos="1 0 0"><attach model="ch" body="b" prefix="x_"/></body>
  <frame pos="0 1 0" euler="0 0 0.3"><attach model="ch" body="b" prefix="y_"/></frame>
</worldbody>
<actuator><motor name="pa" joint="pj"/></actuator>
<keyframe><key name="pk" qpos="0.7" ctrl="0.3"/></keyframe></mujoco>"""})
  m, mj = _load(parent)
  assert_same_as_mujoco(m, mj)
  assert _names(m, mj, "sensor")[0] == ["x_sin", "x_fp2", "", "y_sin", "y_fp2", ""]
  assert mj.jnt_range[1, 1] == pytest.approx(np.pi / 3)


def test_copies_under_replicate_share_classes_and_assets_and_the_first_takes_the_keys(
    tmp_path):
  parent = _write(tmp_path, **{"child.xml": CHILD, "parent.xml": """<mujoco>
<asset><model name="ch" file="child.xml"/></asset>
<worldbody><replicate count="3" offset="0 .5 0" euler="0 0 20" sep="-">
  <frame pos="1 0 0"><attach model="ch" body="b" prefix="r_"/></frame>
</replicate></worldbody></mujoco>"""})
  m, mj = _load(parent)
  assert_same_as_mujoco(m, mj)
  assert _names(m, mj, "key")[0] == ["r_k"]
  assert _names(m, mj, "material")[0] == ["r_used", "r_unused", "r_mt"]


def test_self_attachment_copies_a_body_with_its_actuator_and_sensor():
  # this model's classes and material stay shared; the key gives the copy's joint qpos0
  xml = """<mujoco><default><default class="c"><geom rgba="1 0 0 1" size=".1"/></default>
  </default><asset><material name="m"/></asset>
<worldbody><body name="b" pos="0 0 1" childclass="c"><joint name="j" ref=".2"/>
  <geom material="m"/><site name="s"/></body>
  <frame pos="1 0 0" euler="0 0 30"><attach body="b" prefix="x_"/></frame></worldbody>
<actuator><motor name="a" joint="j"/></actuator>
<sensor><jointpos joint="j" name="sj"/></sensor>
<keyframe><key name="k" qpos="0.5" ctrl="1"/></keyframe></mujoco>"""
  m, mj = jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
  assert_same_as_mujoco(m, mj)
  assert _names(m, mj, "actuator")[0] == ["a", "x_a"] and mj.nmat == 1


def test_a_string_with_its_child_in_assets_compiles_in_both_and_converts():
  xml = """<mujoco><asset><model name="ch" file="child.xml"/></asset>
<worldbody><attach model="ch" body="b" prefix="x_"/></worldbody></mujoco>"""
  m = jaxmj.Model.from_xml_string(xml, assets={"child.xml": CHILD})
  assert_same_as_mujoco(m, mujoco.MjModel.from_xml_string(xml, {"child.xml": CHILD.encode()}))
  mjm, _ = jaxmj.to_mujoco(m)  # MuJoCo compiles the kept source with the same assets
  assert mjm.nbody == m.nbody and mjm.nkey == 1


def test_conflicting_child_options_warn_and_keep_the_parents(tmp_path):
  parent = _write(tmp_path, **{
    "child.xml": CHILD.replace("<asset>", '<option timestep="0.01" iterations="7"/><asset>'),
    "parent.xml": """<mujoco><option timestep="0.005"/>
<asset><model name="ch" file="child.xml"/></asset>
<worldbody><attach model="ch" body="b" prefix="x"/></worldbody></mujoco>"""})
  with pytest.warns(UserWarning, match="option timestep: parent has 0.005, child has 0.01"
                    ) as caught:
    m = jaxmj.Model.from_xml_path(parent)
  assert {w.filename for w in caught} == {__file__}  # the user's call, not the compiler's
  mj = mujoco.MjModel.from_xml_path(parent)
  assert (float(m.opt.timestep), m.opt.iterations) == (mj.opt.timestep, mj.opt.iterations)
  assert (mj.opt.timestep, mj.opt.iterations) == (0.005, 100)


def test_conflict_merge_takes_mujocos_field_by_field_rule(tmp_path):
  # minimum, maximum, or-ed flags, and fields only the child writes adopted
  parent = _write(tmp_path, **{"child.xml": """<mujoco>
<option timestep="0.001" tolerance="1e-9" ls_iterations="10" iterations="20"
  noslip_iterations="2" gravity="0 0 -10">
  <flag damper="disable" contact="enable" warmstart="disable"/></option>
<size nkey="1" nuserdata="5" nuser_body="2"/>
<worldbody><body name="b"><joint/><geom size="1"/></body></worldbody></mujoco>""",
                               "parent.xml": """<mujoco><compiler conflict="merge"/>
<option tolerance="1e-6" ls_iterations="3" gravity="0 0 -10">
  <flag contact="disable" energy="enable"/></option>
<size nkey="3" nuserdata="2"/><asset><model name="ch" file="child.xml"/></asset>
<worldbody><body name="p"><geom size="2"/><attach model="ch" body="b" prefix="c/"/></body>
</worldbody></mujoco>"""})
  m, mj = _load(parent)
  assert_same_as_mujoco(m, mj)
  for f in ("timestep", "tolerance", "ls_iterations", "iterations", "noslip_iterations",
            "disableflags", "enableflags"):
    assert getattr(m.opt, f) == getattr(mj.opt, f), f
  assert (mj.opt.timestep, mj.opt.iterations, mj.opt.ls_iterations) == (0.001, 20, 10)
  assert (m.nkey, m.nuserdata, m.nuser_body) == (mj.nkey, mj.nuserdata, mj.nuser_body)


@pytest.mark.parametrize("parent, child, message, mujoco_refuses", [
  ('<attach model="ch" body="b"/>', "", "missing required attribute 'prefix'", True),
  ('<attach model="nope" body="b" prefix="x"/>', "", "could not find model 'nope'", True),
  ('<attach model="ch" body="nope" prefix="x"/>', "", "could not find body 'nope'", True),
  ('<attach prefix="x"/>', "", "'body' or 'frame' attribute must be specified", True),
  ('<attach body="nope" prefix="x"/>', "", "could not find body 'nope' in the current", True),
  ('<attach model="ch" body="b" prefix="x"/>', '<compiler autolimits="false"/>',
   "compiler autolimits=False .* not supported by jaxmj yet", False),
  ('<attach model="ch" body="b" prefix="x"/>', '<option timestep="0.01"/>',
   "conflict with model 'ch' .*timestep: parent has 0.005, child has 0.01", True),
  ('<attach model="ch" body="b" prefix="x"/>', '<option gravity="0 0 -5"/>',
   r"conflict='merge'\): option gravity: parent has \[ 0\.  0\. -9\.\], child has", True),
])
def test_attach_errors_name_the_element_and_attribute(tmp_path, parent, child, message,
                                                     mujoco_refuses):
  policy = "merge" if "'merge'" in message else "error"
  path = _write(tmp_path, **{
    "child.xml": CHILD.replace("<asset>", child + "<asset>"),
    "parent.xml": f"""<mujoco><compiler conflict="{policy}"/>
<option timestep="0.005" gravity="0 0 -9"/>
<asset><model name="ch" file="child.xml"/></asset>
<worldbody><body name="b">{parent}</body></worldbody></mujoco>"""})
  with pytest.raises(jaxmj.MJCFError, match=message) as e:
    jaxmj.Model.from_xml_path(path)
  assert e.value.file.endswith(("parent.xml", "child.xml")) and e.value.line > 0
  if mujoco_refuses:
    with pytest.raises(ValueError):
      mujoco.MjModel.from_xml_path(path)


@pytest.mark.slow
def test_trajectory_of_an_attached_scene_follows_mj_step():
  m, mj = _load(os.path.join(ATTACH, "scene.xml"))
  err, *_ = rollout_error(m, mj, 40, key=1)
  assert err < 1e-12


def test_pymjcf_refuses_mjcf_attach_by_name_and_points_to_its_own():
  from jaxmj import mjcf

  with pytest.raises(jaxmj.MJCFError, match="<model> is compiled by jaxmj.Model.from_xml_"):
    mjcf.from_path(os.path.join(ATTACH, "scene.xml"))
  with pytest.raises(AttributeError, match="attach models with RootElement.attach"):
    mjcf.RootElement().worldbody.add("attach", model="arm", prefix="a")


OUTSIDE = """<mujoco model="outside">
<worldbody>
  <body name="base" pos="0 0 1"><joint name="j0"/><geom size=".05"/><site name="s0"/></body>
  <body name="b" pos="0 0 1"><joint name="j" axis="0 1 0"/><geom size=".05"/><site name="s1"/>
  </body>
</worldbody>
<tendon><fixed name="t"><joint joint="j0" coef="1"/><joint joint="j" coef="2"/></fixed>
  <spatial name="sp"><site site="s0"/><site site="s1"/></spatial></tendon>
<contact><exclude body1="base" body2="b"/></contact>
<equality><joint joint1="j0" joint2="j"/></equality>
<sensor><jointpos joint="j" name="jp"/>
  <framepos objtype="site" objname="s1" reftype="site" refname="s0" name="fp"/></sensor>
</mujoco>"""


def test_a_copy_names_the_parents_elements_parsed_before_it_by_their_plain_names(tmp_path):
  # MuJoCo's per-kind rule (replicate.namespaced): the tendons (one path element copied,
  # one the parent's j0 or s0), the exclude and the two-sided sensor come along where the
  # parent's base was parsed before the attachment (p_), not where it comes after (r_); the
  # equality needs both joints in the copy
  parent = _write(tmp_path, **{"child.xml": OUTSIDE, "parent.xml": """<mujoco>
<asset><model name="c" file="child.xml"/></asset>
<worldbody>
  <frame pos="0 2 0"><attach model="c" body="b" prefix="r_"/></frame>
  <body name="base" pos="0 0 1"><joint name="j0"/><geom size=".05"/><site name="s0"/></body>
  <frame pos="0 1 0"><attach model="c" body="b" prefix="p_"/></frame>
</worldbody></mujoco>"""})
  m, mj = _load(parent)
  assert_same_as_mujoco(m, mj)
  assert _names(m, mj, "tendon")[0] == ["p_t", "p_sp"] and mj.nexclude == 1
  assert _names(m, mj, "sensor")[0] == ["r_jp", "p_jp", "p_fp"] and mj.neq == 0


def test_self_attachment_copies_the_subtree_as_expanded_so_far_and_what_names_it():
  # y_ copies `outer` with the x_ copy inside it, and copies x_'s actuator and sensors
  # again; each kind's naming rule as above; the key is read against the final model
  xml = OUTSIDE.replace("</worldbody>", """
  <body name="outer" pos="1 0 0"><geom size=".1"/><attach body="b" prefix="x_"/></body>
  <frame pos="0 2 0"><attach body="outer" prefix="y_"/></frame></worldbody>
<actuator><motor joint="j" name="a"/></actuator>
<keyframe><key name="k" qpos="0.1 0.2 0.3" ctrl="1 2"/></keyframe>""").replace(
    '<jointpos joint="j" name="jp"/>', '<jointpos joint="j" name="jp"/><actuatorfrc '
    'actuator="a" name="af"/>')
  m, mj = jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
  assert_same_as_mujoco(m, mj)
  assert _names(m, mj, "joint")[0] == ["j0", "j", "x_j", "y_x_j"]
  assert _names(m, mj, "actuator")[0] == ["a", "x_a", "y_x_a"]
  assert _names(m, mj, "tendon")[0] == ["t", "sp", "x_t", "x_sp", "y_x_t", "y_x_sp"]
  assert mj.nsensor == 9 and mj.nexclude == 3


def test_the_parents_keys_are_read_against_the_model_with_its_copies(tmp_path):
  # as a plain model's: in the final joint order, the entries left out take qpos0
  parent = _write(tmp_path, **{"child.xml": OUTSIDE, "parent.xml": """<mujoco>
<asset><model name="c" file="child.xml"/></asset>
<worldbody><body name="p1"><joint name="pj1"/><geom size=".1"/></body>
  <frame><attach model="c" body="b" prefix="x_"/></frame>
  <body name="p2"><joint name="pj2" ref="10"/><geom size=".1"/></body></worldbody>
<keyframe><key name="k" qpos="0.1 0.2"/></keyframe></mujoco>"""})
  m, mj = _load(parent)
  assert_same_as_mujoco(m, mj)
  np.testing.assert_allclose(mj.key_qpos, [[0.1, 0.2, np.radians(10)]])


def test_elements_naming_what_an_attachment_in_a_replicate_brings_are_copied_with_it(
    tmp_path):
  # MuJoCo attaches while it reads the replicate, so the parent's actuator and sensors
  # naming the attached joint and site follow each copy (r_j0, r_j1), the originals go
  child = OUTSIDE[:OUTSIDE.index("<tendon>")] + "</mujoco>"
  parent = _write(tmp_path, **{"child.xml": child, "parent.xml": """<mujoco>
<asset><model name="c" file="child.xml"/></asset>
<worldbody><replicate count="2" offset=".5 0 0">
  <frame><attach model="c" body="b" prefix="r_"/></frame></replicate></worldbody>
<actuator><motor joint="r_j" name="a"/></actuator>
<sensor><jointpos joint="r_j" name="s"/><framepos objtype="site" objname="r_s1" name="f"/>
</sensor></mujoco>"""})
  m, mj = _load(parent)
  assert_same_as_mujoco(m, mj)
  assert _names(m, mj, "actuator")[0] == ["a0", "a1"]
  assert _names(m, mj, "sensor")[0] == ["s0", "f0", "s1", "f1"]


def test_an_attachment_in_a_replicate_brings_its_elements_with_each_copy(tmp_path):
  # MuJoCo attaches once, into the subtree it then copies: the child's actuators and sensors
  # sit among the parent's, copy by copy; its clock is copied at every copy as the parent's
  # is; its key and ctrl go to the first copy; nested replicates and a later attachment
  child = """<mujoco><worldbody><body name="b"><joint name="j"/><geom size=".1"/>
  <body name="c" pos="0 0 .3"><joint name="j2" type="slide"/><geom size=".1"/></body></body>
</worldbody>
<tendon><fixed name="t"><joint joint="j" coef="1"/><joint joint="j2" coef="2"/></fixed></tendon>
<actuator><motor joint="j" name="m"/><motor tendon="t" name="mt"/></actuator>
<sensor><clock name="ck"/><jointpos joint="j" name="jp"/><actuatorfrc actuator="mt" name="af"/>
</sensor><keyframe><key name="k" qpos="0.3 0.4" ctrl="1 2"/></keyframe></mujoco>"""
  parent = _write(tmp_path, **{"child.xml": child, "parent.xml": """<mujoco>
<asset><model name="c" file="child.xml"/></asset>
<worldbody><body name="p"><joint name="pj"/><geom size=".1"/></body>
  <replicate count="2" offset=".5 0 0"><replicate count="2" offset="0 .5 0" sep="_">
    <frame><attach model="c" body="b" prefix="r_"/></frame></replicate></replicate>
  <frame pos="0 0 2"><attach model="c" body="b" prefix="z_"/></frame></worldbody>
<sensor><jointpos joint="r_j" name="s"/><clock name="t"/></sensor>
<actuator><motor joint="pj" name="a"/><motor joint="r_j2" name="b"/></actuator>
<keyframe><key name="pk" qpos="0.1 0.2"/></keyframe></mujoco>"""})
  m, mj = _load(parent)
  assert_same_as_mujoco(m, mj)
  assert _names(m, mj, "actuator")[0][:7] == ["a", "b_00", "r_m_00", "r_mt_00", "b_10",
                                              "r_m_10", "r_mt_10"]
  np.testing.assert_array_equal(mj.key_ctrl[1], [0, 0, 1, 2] + [0] * 11)
