"""Attaching PyMJCF models (seed 004): prefixes, attachment frames, scoped defaults, merged
options and assets, references across models; compositions compile in jaxmj to the arrays
mujoco compiles from the written XML."""

import copy

import numpy as np
import pytest
from mujoco_compare import model_differences
from test_element import same_model

import jaxmj
from jaxmj import mjcf

mujoco = pytest.importorskip("mujoco")


class Arm:
  """The seed's two-link arm."""

  def __init__(self, name):
    self.mjcf_model = mjcf.RootElement(model=name)
    self.upper_arm = self.mjcf_model.worldbody.add("body", name="upper_arm")
    self.shoulder = self.upper_arm.add("joint", name="shoulder", type="ball")
    self.upper_arm.add("geom", name="upper_arm", type="capsule", pos=[0, 0, -0.15],
                       size=[0.045, 0.15])
    self.forearm = self.upper_arm.add("body", name="forearm", pos=[0, 0, -0.3])
    self.elbow = self.forearm.add("joint", name="elbow", type="hinge", axis=[0, 1, 0])
    self.forearm.add("geom", name="forearm", type="capsule", pos=[0, 0, -0.15],
                     size=[0.045, 0.15])


class UpperBody:
  """The seed's torso with two arms attached at shoulder sites."""

  def __init__(self):
    self.mjcf_model = mjcf.RootElement()
    self.mjcf_model.worldbody.add("geom", name="torso", type="box", size=[0.15, 0.045, 0.25])
    left_shoulder_site = self.mjcf_model.worldbody.add("site", size=[1e-6] * 3,
                                                       pos=[-0.15, 0, 0.25])
    right_shoulder_site = self.mjcf_model.worldbody.add("site", size=[1e-6] * 3,
                                                        pos=[0.15, 0, 0.25])
    self.left_arm = Arm(name="left_arm")
    left_shoulder_site.attach(self.left_arm.mjcf_model)
    self.right_arm = Arm(name="right_arm")
    right_shoulder_site.attach(self.right_arm.mjcf_model)


def compiled(root):
  """(jaxmj Model from the object model, MjModel from its XML), checked equal to the jaxmj
  Model compiled from the same XML."""
  xml = root.to_xml_string()
  m = jaxmj.Model.from_mjcf(root)
  assert same_model(m, jaxmj.Model.from_xml_string(xml, assets=root.get_assets())) == []
  return m, mujoco.MjModel.from_xml_string(xml, root.get_assets())


def names(mj, kind, n):
  return [mujoco.mj_id2name(mj, getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}"), i)
          for i in range(n)]


def test_upper_body_composes_with_prefixed_names_and_matches_mujoco():
  body = UpperBody()
  m, mj = compiled(body.mjcf_model)
  assert model_differences(m, mj, atol=1e-10) == []
  assert names(mj, "body", mj.nbody) == [
    "world", "left_arm/", "left_arm/upper_arm", "left_arm/forearm", "right_arm/",
    "right_arm/upper_arm", "right_arm/forearm"]
  assert names(mj, "joint", mj.njnt) == ["left_arm/shoulder", "left_arm/elbow",
                                         "right_arm/shoulder", "right_arm/elbow"]
  # The arms themselves are untouched: names are scoped only when written.
  assert body.left_arm.shoulder.name == "shoulder"
  np.testing.assert_allclose(np.asarray(m.body_pos[1]), [-0.15, 0, 0.25])


def test_site_attachment_frame_takes_the_site_pose():
  parent = mjcf.from_xml_string("""
    <mujoco model="parent"><worldbody><body>
      <geom name="foo" type="box" pos="-0.2 0 0.3" size="0.5 0.3 0.1"/>
      <site name="attachment_site" pos="1. 2. 3." quat="1. 0. 0. 1."/>
    </body></worldbody></mujoco>""")
  child = mjcf.from_xml_string("""
    <mujoco model="child"><worldbody>
      <geom name="bar" type="box" pos="0.5 0.25 1." size="0.1 0.2 0.3"/>
    </worldbody></mujoco>""")
  frame = parent.find("site", "attachment_site").attach(child)
  assert frame.parent is parent.worldbody.body[0]
  np.testing.assert_array_equal(frame.pos, [1, 2, 3])
  np.testing.assert_array_equal(frame.quat, [1, 0, 0, 1])
  xml = parent.to_xml_string()
  assert ('<body name="child/" pos="1.0 2.0 3.0" quat="1.0 0.0 0.0 1.0">' in xml)
  assert '<geom name="child/bar"' in xml
  m, mj = compiled(parent)
  assert model_differences(m, mj) == []
  # Elements of a child model are not in the parent's namespaces but can be reached.
  assert parent.find("geom", "bar") is None
  assert parent.find("geom", "child/bar") is child.find("geom", "bar")
  assert parent.find("attachment_frame", "child") is frame
  assert [g.name for g in parent.find_all("geom")] == ["foo", "bar"]
  assert [g.name for g in parent.find_all("geom", exclude_attachments=True)] == ["foo"]
  assert parent.find_all("body", exclude_attachments=True) == [parent.worldbody.body[0]]


def test_defaults_are_scoped_per_model():
  parent = mjcf.from_xml_string("""
    <mujoco model="parent"><default>
      <geom rgba="1. 0. 0. 1."/>
      <default class="green"><geom rgba="0. 1. 0. 1."/></default>
    </default>
    <worldbody>
      <geom name="red" size="0.1"/><geom name="green" class="green" size="0.1"/>
      <body name="b"><joint name="pj"/><geom size="0.1"/></body>
    </worldbody></mujoco>""")
  child = mjcf.from_xml_string("""
    <mujoco model="child"><default>
      <joint range="0. 1."/>
      <default class="stiff"><joint stiffness="0.1"/></default>
    </default>
    <worldbody><body name="c"><joint name="free_range"/><joint name="stiff" class="stiff"/>
      <geom name="plain" size="0.1"/></body></worldbody></mujoco>""")
  parent.find("body", "b").attach(child)
  xml = parent.to_xml_string()
  for cls in ('class="/"', 'class="green"', 'class="child/"', 'class="child/stiff"'):
    assert cls in xml
  m, mj = compiled(parent)
  assert model_differences(m, mj) == []
  geoms = names(mj, "geom", mj.ngeom)
  rgba = dict(zip(geoms, mj.geom_rgba))
  np.testing.assert_array_equal(rgba["red"], [1, 0, 0, 1])
  np.testing.assert_array_equal(rgba["green"], [0, 1, 0, 1])
  np.testing.assert_array_equal(rgba["child/plain"], [0.5, 0.5, 0.5, 1])  # not the parent's
  joints = names(mj, "joint", mj.njnt)
  rng = dict(zip(joints, mj.jnt_range))
  np.testing.assert_array_equal(rng["pj"], [0, 0])  # the child's default does not leak
  np.testing.assert_allclose(rng["child/free_range"], np.deg2rad([0, 1]))  # degrees
  stiff = dict(zip(joints, mj.jnt_stiffness))
  assert stiff["child/stiff"] == 0.1 and stiff["child/free_range"] == 0
  np.testing.assert_allclose(rng["child/stiff"], np.deg2rad([0, 1]))  # nested: inherits


def test_conflicting_global_options_are_reported():
  model_1, model_2 = mjcf.RootElement(model="one"), mjcf.RootElement(model="two")
  model_1.compiler.angle = "radian"
  model_2.compiler.angle = "degree"
  with pytest.raises(jaxmj.MJCFError, match="conflicting global option <compiler> angle"):
    model_1.attach(model_2)
  model_2.compiler.angle = "radian"
  model_2.option.timestep = 0.01
  model_1.attach(model_2)
  model_1.option.timestep = 0.02  # set after attaching: found when written
  with pytest.raises(jaxmj.MJCFError, match="timestep"):
    model_1.to_xml_string()
  model_1.option.timestep = 0.01
  model_2.option.flag.gravity = "disable"
  m = jaxmj.Model.from_mjcf(model_1)
  assert float(m.opt.timestep) == 0.01 and m.opt.disabled(jaxmj.DisableBit.GRAVITY)


def test_same_model_attached_twice_needs_a_copy():
  parent = mjcf.RootElement()
  arm = Arm("arm").mjcf_model
  parent.worldbody.add("site", name="a", pos=[1, 0, 0]).attach(arm)
  with pytest.raises(jaxmj.MJCFError, match="already attached.*copy"):
    parent.worldbody.add("site", name="b").attach(arm)
  twin = copy.deepcopy(arm)
  parent.find("site", "b").attach(twin)  # renamed as dm_control does
  assert twin.model == "arm_1" and arm.model == "arm"
  m, mj = compiled(parent)
  assert model_differences(m, mj) == []
  assert mj.nbody == 7 and "arm_1/elbow" in names(mj, "joint", mj.njnt)


def test_attachment_frame_takes_a_freejoint_and_detaches():
  arena = mjcf.RootElement(model="arena")
  arena.worldbody.add("geom", name="ground", type="plane", size=[10, 10, 1])
  robot = Arm("robot").mjcf_model
  frame = arena.attach(robot)
  frame.pos = [0, 0, 1]
  free = frame.add("freejoint")
  frame.add("inertial", pos=[0, 0, 0], mass=2.0, diaginertia=[0.1, 0.1, 0.1])
  with pytest.raises(AttributeError, match="not a valid child"):
    frame.add("geom", size=[0.1])
  m, mj = compiled(arena)
  assert model_differences(m, mj) == []
  assert mj.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE and mj.nq == 7 + 4 + 1
  assert arena.find_all("joint")[0] is free
  robot.detach()
  assert robot.attachment_frame is None and arena.find("attachment_frame", "robot") is None
  assert "robot" not in arena.to_xml_string()
  arena.attach(robot)  # free to attach again once detached
  assert arena.to_xml_string().count('name="robot/"') == 1


def test_nested_attachment_prefixes_compose():
  hand = mjcf.RootElement(model="hand")
  hand.worldbody.add("body", name="palm").add("geom", name="palm", size=[0.02])
  arm = Arm("arm")
  arm.forearm.add("site", name="wrist", pos=[0, 0, -0.3]).attach(hand)
  robot = mjcf.RootElement(model="robot")
  robot.attach(arm.mjcf_model)
  m, mj = compiled(robot)
  assert model_differences(m, mj) == []
  assert "arm/hand/palm" in names(mj, "body", mj.nbody)
  assert robot.find("geom", "arm/hand/palm") is hand.find("geom", "palm")
  assert hand.find("geom", "palm").full_identifier == "arm/hand/palm"
  assert jaxmj.name2id(m, "geom", hand.find("geom", "palm").full_identifier) >= 0
  with pytest.raises(jaxmj.MJCFError, match="inside itself"):
    hand.attach(robot)


def test_references_stay_right_through_attachment():
  arm = Arm("arm")
  arm.mjcf_model.actuator.add("motor", name="elbow_motor", joint=arm.elbow, gear=[2.0])
  arm.mjcf_model.contact.add("exclude", body1="upper_arm", body2=arm.forearm)
  arm.mjcf_model.contact.add("exclude", body1="world", body2="upper_arm")
  arm.mjcf_model.sensor.add("framepos", name="base", objtype="body", objname="world")
  tip = arm.forearm.add("site", name="tip", pos=[0, 0, -0.3])
  scene = mjcf.RootElement(model="scene")
  anchor = scene.worldbody.add("site", name="anchor", pos=[0.5, 0, 0])
  scene.attach(arm.mjcf_model)
  scene.actuator.add("position", name="shoulder_servo", joint=arm.elbow, kp=10)
  spatial = scene.tendon.add("spatial", name="cable")
  spatial.add("site", site=anchor)
  spatial.add("site", site=tip)
  scene.sensor.add("jointpos", name="elbow_angle", joint=arm.elbow)
  xml = scene.to_xml_string()
  assert 'joint="arm/elbow"' in xml and '<site site="arm/tip"/>' in xml
  assert 'body1="arm/upper_arm" body2="arm/forearm"' in xml
  assert 'body1="arm/" body2="arm/upper_arm"' in xml  # the child's world is its frame
  assert 'objtype="body" objname="arm/"' in xml
  mj = mujoco.MjModel.from_xml_string(xml)
  assert names(mj, "actuator", mj.nu) == ["shoulder_servo", "arm/elbow_motor"]
  assert mj.actuator_trnid[1, 0] == mj.actuator_trnid[0, 0] == mujoco.mj_name2id(
    mj, mujoco.mjtObj.mjOBJ_JOINT, "arm/elbow")
  assert mj.ntendon == 1 and mj.nexclude == 2
  arm.elbow.name = "renamed"  # the references follow
  assert 'joint="arm/renamed"' in scene.to_xml_string()


def family_differences(m, mj, prefixes) -> list[str]:
  """Fields of the families `prefixes` (in both models) that differ beyond 1e-10."""
  bad = []
  for name in type(m)._static_names + type(m)._leaf_names:
    if name.startswith(prefixes) and hasattr(mj, name):
      ours, ref = np.asarray(getattr(m, name), float), np.asarray(getattr(mj, name), float)
      if ours.size != ref.size or not np.allclose(ours.reshape(ref.shape), ref, atol=1e-10):
        bad.append(name)
  return bad


def test_compiled_references_across_models_match_mujoco():
  arm = Arm("arm")
  tip = arm.forearm.add("site", name="tip", pos=[0, 0, -0.3])
  arm.mjcf_model.actuator.add("motor", name="m", joint=arm.elbow, gear=[2.0])
  arm.mjcf_model.sensor.add("jointpos", name="q", joint=arm.elbow)
  arm.mjcf_model.contact.add("exclude", body1="upper_arm", body2=arm.forearm)
  arm.mjcf_model.tendon.add("fixed", name="coupling").add("joint", joint=arm.elbow, coef=0.5)
  scene = mjcf.RootElement(model="scene")
  anchor = scene.worldbody.add("site", name="anchor", pos=[0.5, 0, 0])
  scene.attach(arm.mjcf_model)
  cable = scene.tendon.add("spatial", name="cable", stiffness=[10.0])
  cable.add("site", site=anchor)
  cable.add("site", site=tip)  # a site of the attached arm
  scene.equality.add("joint", name="lock", joint1=arm.elbow)
  scene.actuator.add("motor", name="pull", tendon=cable)
  scene.sensor.add("tendonpos", name="len", tendon="cable")
  m, mj = compiled(scene)
  assert model_differences(m, mj) == []
  for name in ("nu", "nsensor", "nexclude", "ntendon", "nwrap", "neq"):
    assert getattr(m, name) == getattr(mj, name)
  assert family_differences(m, mj, ("actuator_", "sensor_", "tendon_", "wrap_", "eq_")) == []
  assert names(mj, "tendon", mj.ntendon) == ["cable", "arm/coupling"]


def test_default_elements_as_classes_and_removing_a_frame_frees_its_model():
  part = mjcf.RootElement(model="part")
  soft = part.default.add("default", dclass="soft")
  soft.geom.rgba = [0, 0, 1, 1]
  part.worldbody.add("geom", name="g", size=[0.1], dclass=soft)
  scene = mjcf.RootElement(model="scene")
  holder = scene.worldbody.add("body", name="holder")
  holder.attach(part)
  assert 'class="part/soft"' in scene.to_xml_string()
  _, mj = compiled(scene)
  np.testing.assert_array_equal(mj.geom_rgba[0], [0, 0, 1, 1])
  holder.remove()
  assert part.attachment_frame is None and "part" not in scene.to_xml_string()
  scene.attach(part)


def test_child_keyframes_are_refused():
  scene = mjcf.RootElement()
  arm = Arm("arm")
  arm.mjcf_model.keyframe.add("key", name="k", qpos=[1, 0, 0, 0, 0.5])
  scene.attach(arm.mjcf_model)
  with pytest.raises(jaxmj.MJCFError, match="keyframes of attached model 'arm'"):
    scene.to_xml_string()


def test_assets_merge_without_duplicates():
  stl = box_stl()
  part = mjcf.from_xml_string("""
    <mujoco model="part"><asset><mesh file="cube.stl" scale="0.1 0.1 0.1"/></asset>
    <worldbody><body name="b"><geom type="mesh" mesh="cube"/></body></worldbody>
    </mujoco>""", assets={"cube.stl": stl})
  scene = mjcf.RootElement(model="scene")
  scene.worldbody.add("site", name="s1", pos=[0, 0, 1]).attach(part).add("freejoint")
  twin = copy.deepcopy(part)
  twin.model = "part2"
  scene.worldbody.add("site", name="s2", pos=[1, 0, 1]).attach(twin).add("freejoint")
  assets = scene.get_assets()
  assert list(assets.values()) == [stl]  # one file for both copies
  xml = scene.to_xml_string()
  assert 'name="part/cube"' in xml and 'mesh="part2/cube"' in xml
  m, mj = compiled(scene)
  assert mj.nmesh == 2 and mj.ngeom == 2
  assert model_differences(m, mj) == []


def box_stl() -> bytes:
  """A unit cube as binary STL."""
  import struct

  v = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
  faces = [(0, 2, 1), (1, 2, 3), (4, 5, 6), (5, 7, 6), (0, 1, 4), (1, 5, 4), (2, 6, 3),
           (3, 6, 7), (0, 4, 2), (2, 4, 6), (1, 3, 5), (3, 7, 5)]
  out = bytearray(80) + struct.pack("<I", len(faces))
  for f in faces:
    out += struct.pack("<3f", 0, 0, 0)
    for i in f:
      out += struct.pack("<3f", *v[i])
    out += struct.pack("<H", 0)
  return bytes(out)


def test_attaching_inside_a_frame_composes_the_frame_pose():
  scene = mjcf.RootElement(model="scene")
  frame = scene.worldbody.add("frame", name="mount", pos=[0, 0, 1], euler=[0, 0, 90])
  arm = Arm("arm")
  holder = frame.attach(arm.mjcf_model)
  holder.quat = [0, 1, 0, 0]
  m, mj = compiled(scene)
  assert model_differences(m, mj) == []
  np.testing.assert_allclose(mj.body_pos[1], [0, 0, 1])
  np.testing.assert_allclose(mj.body_quat[1], np.array([0, 1, 1, 0]) / np.sqrt(2), atol=1e-12)


def test_attached_free_joints_are_refused_with_the_remedy():
  part = mjcf.RootElement(model="part")
  body = part.worldbody.add("body", name="b")
  body.add("freejoint")
  body.add("geom", size=[0.1])
  scene = mjcf.RootElement(model="scene")
  frame = scene.attach(part)
  with pytest.raises(jaxmj.MJCFError, match=r"free joint.*attach\(\.\.\.\)\.add\('freejoint'\)"):
    scene.to_xml_string()
  body.freejoint.remove()
  frame.add("freejoint")
  m, mj = compiled(scene)
  assert model_differences(m, mj) == [] and mj.nq == 7


def test_site_pose_from_a_default_class_is_refused():
  scene = mjcf.RootElement(model="scene")
  scene.default.site.pos = [0, 0, 1]
  site = scene.worldbody.add("site", name="s")
  with pytest.raises(jaxmj.MJCFError, match="default classes may set its pose"):
    site.attach(Arm("arm").mjcf_model)
