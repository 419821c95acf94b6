"""The jaxmj.mjcf object model (PyMJCF, seed 004): building, attribute access, find, errors,
round trips through XML, and compiling the object model directly."""

import copy
import glob
import io
import os
import warnings

import numpy as np
import pytest
from conftest import MODELS

import jaxmj
from jaxmj import mjcf
from jaxmj.mjcf.compose import write

mujoco = pytest.importorskip("mujoco")

SEED_XML = """
<mujoco model="test">
  <default>
    <default class="brick">
      <geom rgba="1 0 0 1"/>
    </default>
  </default>
  <worldbody>
    <body name="foo">
      <freejoint/>
      <inertial pos="0 0 0" mass="1"/>
      <body name="bar">
        <joint name="my_hinge" type="hinge"/>
        <geom name="my_geom" pos="0 1 2" class="brick"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def same_model(a, b) -> list[str]:
  """Names of Model fields (static and leaves, option included) that differ between a, b."""
  bad = []
  for name in type(a)._static_names + type(a)._leaf_names:
    x, y = getattr(a, name), getattr(b, name)
    if name == "opt":
      if any(not np.array_equal(np.asarray(getattr(x, f)), np.asarray(getattr(y, f)))
             for f in type(x)._static_names + type(x)._leaf_names):
        bad.append(name)
    elif isinstance(x, tuple | str | bytes | int):
      if x != y:
        bad.append(name)
    elif not np.array_equal(np.asarray(x), np.asarray(y)):
      bad.append(name)
  return bad


# ------------------------------------------------------------------ creating and reading


def test_root_element_and_add_print_like_the_seed():
  root = mjcf.RootElement()
  assert repr(root) == "MJCF Element: <mujoco/>"
  box = root.worldbody.add("geom", name="my_box", type="box", pos=[0, 0.1, 0])
  assert repr(box) == 'MJCF Element: <geom name="my_box" type="box" pos="0.0 0.1 0.0"/>'
  assert box.parent is root.worldbody and box.root is root
  assert isinstance(root, mjcf.Element)


def test_from_path_file_and_string_read_the_same_tree(tmp_path):
  path = tmp_path / "seed.xml"
  path.write_text(SEED_XML)
  a = mjcf.from_path(path)
  with open(path) as f:
    b = mjcf.from_file(f)
  c = mjcf.from_xml_string(SEED_XML)
  d = mjcf.from_file(io.StringIO(SEED_XML))
  assert isinstance(a, mjcf.RootElement)
  assert a.is_same_as(b) and a.is_same_as(c) and a.is_same_as(d)


def test_attribute_access_is_typed_and_ignores_defaults():
  root = mjcf.from_xml_string(SEED_XML)
  my_geom = root.worldbody.body["foo"].body["bar"].geom["my_geom"]
  assert my_geom.name == "my_geom"
  assert isinstance(my_geom.pos, np.ndarray) and my_geom.pos.dtype == np.float64
  np.testing.assert_array_equal(my_geom.pos, [0.0, 1.0, 2.0])
  assert my_geom.dclass == "brick" and getattr(my_geom, "class") == "brick"
  np.testing.assert_array_equal(root.default.default["brick"].geom.rgba, [1, 0, 0, 1])
  assert my_geom.rgba is None
  assert root.worldbody.body["foo"].inertial.mass == 1.0


def test_attributes_are_set_and_deleted():
  root = mjcf.from_xml_string(SEED_XML)
  my_geom = root.find("geom", "my_geom")
  my_geom.pos = [1, 2, 3]
  np.testing.assert_array_equal(my_geom.pos, [1.0, 2.0, 3.0])
  my_geom.quat = [0, 1, 0, 0]
  np.testing.assert_array_equal(my_geom.quat, [0.0, 1.0, 0.0, 0.0])
  del my_geom.quat
  assert my_geom.quat is None
  my_geom.type = "capsule"
  my_geom.dclass = "brick"
  root.find("joint", "my_hinge").range = [-1, 1]
  my_geom.contype = 3
  assert my_geom.contype == 3 and isinstance(my_geom.contype, int)


def test_schema_violations_raise_at_once():
  root = mjcf.from_xml_string(SEED_XML)
  my_geom = root.find("geom", "my_geom")
  with pytest.raises(AttributeError, match="poss"):
    _ = my_geom.poss
  with pytest.raises(AttributeError, match="poss"):
    my_geom.poss = 1
  with pytest.raises(ValueError, match="pos"):
    my_geom.pos = "invalid"
  with pytest.raises(ValueError, match="expected 3 values"):
    my_geom.pos = [1, 2, 3, 4, 5, 6]
  with pytest.raises(ValueError, match="keyword"):
    my_geom.type = "cube"
  with pytest.raises(ValueError, match="integers"):
    my_geom.contype = 1.5
  with pytest.raises(ValueError, match="required"):
    del root.find("body", "foo").inertial.mass
  with pytest.raises(AttributeError, match="not a valid child"):
    root.worldbody.add("joint")
  with pytest.raises(AttributeError, match="bogus"):
    root.worldbody.add("geom", bogus=1)
  with pytest.raises(ValueError, match="expected at most 3"):
    root.worldbody.add("geom", size=[1, 2, 3, 4])
  with pytest.raises(ValueError, match="already has"):
    root.find("body", "foo").add("inertial", pos=[0, 0, 0], mass=1)
  with pytest.raises(ValueError, match="read-only"):
    my_geom.pos[0] = 5  # arrays are checked when set, so in-place edits are refused
  assert [g.name for g in root.find_all("geom")] == ["my_geom"]  # failed adds left nothing


def test_parse_errors_name_file_line_element_and_attribute(tmp_path):
  path = tmp_path / "bad.xml"
  path.write_text('<mujoco>\n<worldbody>\n<geom size="1" poss="1 2 3"/>\n</worldbody>\n</mujoco>')
  with pytest.raises(jaxmj.MJCFError, match=r"bad.xml:3: <geom> attribute 'poss'"):
    mjcf.from_path(path)
  with pytest.raises(jaxmj.MJCFError, match=r"<string>:1: <geom> attribute 'size'"):
    mjcf.from_xml_string('<mujoco><worldbody><geom size="a"/></worldbody></mujoco>')
  with pytest.raises(jaxmj.MJCFError, match="repeated|duplicate geom name 'a'"):
    mjcf.from_xml_string('<mujoco><worldbody><geom name="a" size="1"/><geom name="a" '
                         'size="1"/></worldbody></mujoco>')
  with pytest.raises(jaxmj.MJCFError, match=r"<composite> is not in jaxmj's schema"):
    mjcf.from_xml_string("<mujoco><worldbody><composite/></worldbody></mujoco>")


def test_identifiers_are_unique_per_namespace():
  root = mjcf.from_xml_string(SEED_XML)
  foo = root.find("body", "foo")
  with pytest.raises(ValueError, match="duplicate geom name 'my_geom'"):
    root.worldbody.add("geom", name="my_geom")
  foo.add("geom", name="foo", size=[0.1])  # a geom may share a body's name
  with pytest.raises(ValueError, match="duplicate geom name"):
    root.find("geom", "foo").name = "my_geom"
  with pytest.raises(ValueError, match="duplicate default name 'brick'"):
    root.default.add("default", dclass="brick")
  with pytest.raises(ValueError, match="'/' is not allowed"):
    foo.add("geom", name="a/b")
  root.find("geom", "foo").remove()
  foo.add("geom", name="foo", size=[0.1])  # a removed element frees its name


# ------------------------------------------------------------------ find


def test_find_and_find_all_in_document_order():
  root = mjcf.from_xml_string(SEED_XML)
  assert root.find("geom", "my_geom") is root.worldbody.body["foo"].body["bar"].geom[0]
  joints = root.find_all("joint")
  assert len(joints) == 2
  assert joints[0] is root.worldbody.body["foo"].freejoint
  assert joints[1] is root.worldbody.body["foo"].body["bar"].joint[0]
  assert root.find("body", "nope") is None
  assert [d.dclass for d in root.find_all("default")] == ["brick"]
  bar = root.find("body", "bar")
  assert bar.find_all("joint") == [joints[1]]
  assert root.worldbody.find_all("body", immediate_children_only=True) == [root.find("body",
                                                                                    "foo")]


def test_sections_share_one_namespace():
  root = mjcf.RootElement()
  body = root.worldbody.add("body", name="b")
  hinge = body.add("joint", name="hinge")
  body.add("geom", size=[0.1])
  root.actuator.add("position", name="act", joint=hinge)
  with pytest.raises(ValueError, match="duplicate actuator name 'act'"):
    root.actuator.add("velocity", name="act", joint=hinge)
  assert [a.tag for a in root.find_all("actuator")] == ["position"]


# ------------------------------------------------------------------ references


def test_references_are_elements_and_follow_renames():
  root = mjcf.from_xml_string(SEED_XML)
  hinge = root.find("joint", "my_hinge")
  act = root.actuator.add("velocity", joint=hinge)
  assert act.joint is hinge
  hinge.name = "renamed"
  assert 'joint="renamed"' in root.to_xml_string()
  with pytest.raises(ValueError, match="refers to a joint"):
    act.joint = root.find("geom", "my_geom")
  with pytest.raises(ValueError, match="'/' is not allowed"):
    act.joint = "other/joint"


def test_dangling_references_fail_when_written_or_compiled():
  root = mjcf.from_xml_string(SEED_XML)
  hinge = root.find("joint", "my_hinge")
  root.contact.add("exclude", body1=root.find("body", "foo"), body2="bar")
  root.sensor.add("jointpos", joint=hinge)
  hinge.remove()
  with pytest.raises(jaxmj.MJCFError, match="dangling reference"):
    root.to_xml_string()
  with pytest.raises(jaxmj.MJCFError, match="dangling reference"):
    jaxmj.Model.from_mjcf(root)
  root2 = mjcf.from_xml_string(SEED_XML)
  root2.sensor.add("jointpos", joint="missing")
  with pytest.raises(jaxmj.MJCFError, match="no joint named 'missing'"):
    root2.to_xml_string()
  root3 = mjcf.from_xml_string(SEED_XML)
  root3.find("geom", "my_geom").dclass = "nope"
  with pytest.raises(jaxmj.MJCFError, match="no default class 'nope'"):
    root3.to_xml_string()
  other = mjcf.RootElement(model="other")
  joint = other.worldbody.add("body").add("joint", name="j")
  root4 = mjcf.from_xml_string(SEED_XML)
  root4.sensor.add("jointpos", joint=joint)  # in a model that is not attached
  with pytest.raises(jaxmj.MJCFError, match="not in this model"):
    root4.to_xml_string()


def test_unnamed_reference_targets_get_generated_names():
  """As dm_control: an unnamed joint (body, geom, site, ...) is written with a generated
  name that references use; an unnamed material has none, so a reference to it fails."""
  root = mjcf.RootElement()
  body = root.worldbody.add("body")
  joint = body.add("joint")
  geom = body.add("geom", size=[0.1])
  root.sensor.add("jointpos", joint=joint)
  xml = root.to_xml_string()
  assert '<joint name="//unnamed_joint_0"/>' in xml and 'joint="//unnamed_joint_0"' in xml
  assert mujoco.MjModel.from_xml_string(xml).sensor_objid[0] == 0
  geom.material = root.asset.add("material")
  with pytest.raises(jaxmj.MJCFError, match="unnamed <material>"):
    root.to_xml_string()


# ------------------------------------------------------------------ round trips and compiling


MODEL_FILES = sorted(glob.glob(os.path.join(MODELS, "*.xml")))


@pytest.mark.parametrize("path", MODEL_FILES, ids=os.path.basename)
def test_round_trip_gives_an_equal_tree_and_model(path):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    root = mjcf.from_path(path)
    xml = root.to_xml_string()
    assets = root.get_assets()
    again = mjcf.from_xml_string(xml, assets=assets)
    assert root.is_same_as(again)
    assert again.to_xml_string() == xml
    assert same_model(jaxmj.Model.from_mjcf(root),
                      jaxmj.Model.from_xml_string(xml, assets=assets)) == []
    reference = jaxmj.Model.from_xml_path(path)
  mj = mujoco.MjModel.from_xml_string(xml, assets)
  assert mj.nbody == reference.nbody and mj.njnt == reference.njnt


def test_written_xml_loads_in_mujoco_with_the_same_arrays():
  from mujoco_compare import model_differences

  root = mjcf.from_path(os.path.join(MODELS, "humanoid.xml"))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    m = jaxmj.Model.from_mjcf(root)
  mj = mujoco.MjModel.from_xml_string(root.to_xml_string())
  assert model_differences(m, mj) == []


def test_from_mjcf_equals_compiling_the_written_xml_for_a_built_model():
  root = mjcf.RootElement(model="built")
  root.option.timestep = 0.005
  root.option.flag.contact = "disable"
  root.default.joint.damping = 0.3
  root.default.add("default", dclass="heavy").geom.density = 3000
  body = root.worldbody.add("body", name="b", pos=[0, 0, 1])
  body.add("joint", name="hinge", axis=[0, 1, 0])
  body.add("geom", dclass="heavy", type="capsule", fromto=[0, 0, 0, 0.3, 0, 0], size=[0.05])
  body.add("site", name="tip", pos=[0.3, 0, 0])
  root.keyframe.add("key", name="bent", qpos=[0.4])
  xml = root.to_xml_string()
  m = jaxmj.Model.from_mjcf(root)
  assert same_model(m, jaxmj.Model.from_xml_string(xml)) == []
  assert float(m.opt.timestep) == 0.005 and float(m.dof_damping[0]) == 0.3


def test_deepcopy_is_an_independent_model():
  root = mjcf.from_xml_string(SEED_XML)
  twin = copy.deepcopy(root)
  twin.find("geom", "my_geom").pos = [9, 9, 9]
  np.testing.assert_array_equal(root.find("geom", "my_geom").pos, [0, 1, 2])
  assert twin.find("geom", "my_geom").root is twin


def test_write_node_tree_carries_scoped_tags_for_the_compiler():
  root = mjcf.RootElement()
  body = root.worldbody.add("body", name="b")
  body.add("geom", size=[0.1])
  a = body.add("site", name="a")
  c = root.worldbody.add("site", name="c", pos=[0, 0, 1])
  spatial = root.tendon.add("spatial", name="t")
  spatial.add("site", site=a)
  spatial.add("site", site=c)
  assert [s.tag for s in spatial.site] == ["site", "site"]
  node = write.to_node(root)
  tendon = next(n for n in node.children if n.tag == "tendon")
  assert [n.tag for n in tendon.children[0].children] == ["spatial/site", "spatial/site"]
  assert '<site site="a"/>' in root.to_xml_string()


def test_compile_errors_locate_built_elements():
  root = mjcf.RootElement(model="bad")
  root.worldbody.add("body", name="b").add("joint", name="j")
  with pytest.raises(jaxmj.MJCFError, match=r"<mjcf model bad>/worldbody/body\[b\]: <body>: "
                                            "mass and inertia"):
    jaxmj.Model.from_mjcf(root)
  with pytest.raises(AttributeError, match=r"<composite> \(composite objects, which MuJoCo "
                                           r"4.0 no longer reads either, not in jaxmj's "):
    root.worldbody.add("composite")


def test_includes_are_expanded_from_the_assets_dict():
  root = mjcf.from_xml_string(
    '<mujoco><include file="part.xml"/></mujoco>',
    assets={"part.xml": '<mujoco><worldbody><geom name="g" size="0.1"/></worldbody></mujoco>'})
  assert root.find("geom", "g") is not None
  assert "include" not in root.to_xml_string()
