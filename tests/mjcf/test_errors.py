"""Bad MJCF raises jaxmj's own MJCFError, located by file, line, element and attribute."""

import re
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import jaxmj
from jaxmj import MJCFError

mujoco = pytest.importorskip("mujoco")


def wrap(body: str = "", head: str = "", tail: str = "") -> str:
  """A model whose lines are: 1 <mujoco>, 2 head, 3 <worldbody>, 4 body, 5 </worldbody>,
  6 tail, 7 </mujoco>."""
  return f"<mujoco>\n{head}\n<worldbody>\n{body}\n</worldbody>\n{tail}\n</mujoco>"


GEOM = '<geom size=".1"/>'


def compile_file(tmp_path, xml: str, name: str = "model.xml"):
  path = tmp_path / name
  path.write_text(xml)
  return jaxmj.Model.from_xml_path(path), str(path)


def check_error(err: MJCFError, file, line, element, attribute, *phrases):
  """Asserts every location field, that the message shows them, and the phrases."""
  assert (err.file, err.line, err.element, err.attribute) == (file, line, element, attribute)
  text = str(err)
  if file is not None:
    assert str(file) in text
  if line is not None:
    assert f":{line}" in text
  if element is not None:
    assert f"<{element}>" in text
  if attribute is not None:
    assert f"'{attribute}'" in text
  for phrase in phrases:
    assert phrase in text, (phrase, text)


# (model, line, element, attribute, phrases): each raises when written to a file.
CASES = {
  "unknown_element": (wrap(f"<body><joint/>{GEOM}<foo/></body>"), 4, "foo", None,
                      ["unknown element"]),
  "unknown_attribute": (wrap('<body><joint/><geom size=".1" colour="red"/></body>'), 4, "geom",
                        "colour", ["unknown attribute"]),
  "malformed_number": (wrap('<body><joint/><geom size=".1" pos="1 x 3"/></body>'), 4, "geom",
                       "pos", ["malformed number", "1 x 3"]),
  "malformed_integer": (wrap('<body><joint/><geom size=".1" condim="3.0"/></body>'), 4, "geom",
                        "condim", ["malformed integer"]),
  "wrong_count": (wrap('<body><joint/><geom size=".1" pos="1 2"/></body>'), 4, "geom", "pos",
                  ["expected 3 values, got 2"]),
  "too_many_values": (wrap('<body><joint/><geom size=".1" friction="1 2 3 4"/></body>'), 4,
                      "geom", "friction", ["at most 3 values"]),
  "non_finite": (wrap('<body><joint/><geom size="nan"/></body>'), 4, "geom", "size",
                 ["non-finite"]),
  "bad_keyword": (wrap('<body><joint/><geom type="spheer" size=".1"/></body>'), 4, "geom",
                  "type", ["invalid keyword 'spheer'", "sphere"]),
  "bad_boolean": (wrap(f'<body mocap="yes">{GEOM}</body>'), 4, "body", "mocap",
                  ["invalid boolean 'yes'"]),
  "bad_boolean_compiler": (wrap(head='<compiler autolimits="1"/>'), 2, "compiler",
                           "autolimits", ["invalid boolean '1'"]),
  "missing_class": (wrap(f'<body><joint class="nope"/>{GEOM}</body>'), 4, "joint", "class",
                    ["unknown default class 'nope'"]),
  "missing_childclass": (wrap(f'<body childclass="nope"><joint/>{GEOM}</body>'), 4, "body",
                         "childclass", ["unknown default class 'nope'"]),
  "missing_frame_childclass": (wrap(f'<frame childclass="nope"><body><joint/>{GEOM}</body>'
                                    "</frame>"), 4, "frame", "childclass",
                               ["unknown default class 'nope'"]),
  "repeated_class": (wrap(head='<default><default class="a"/><default class="a"/></default>'),
                     2, "default", "class", ["repeated default class 'a'"]),
  "repeated_class_nested": (
    wrap(head='<default><default class="a"><default class="a"/></default></default>'),
    2, "default", "class", ["repeated default class 'a'"]),
  "renamed_main_class": (wrap(head='<default class="foo"/>'), 2, "default", "class",
                         ["'main' cannot be renamed"]),
  "repeated_body": (wrap(f'<body name="b"><joint/>{GEOM}</body><body name="b"><joint/>{GEOM}'
                         "</body>"), 4, "body", "name", ["repeated body name 'b'"]),
  "body_named_world": (wrap(f'<body name="world"><joint/>{GEOM}</body>'), 4, "body", "name",
                       ["repeated body name 'world'"]),
  "repeated_joint": (wrap(f'<body><joint name="j"/><joint name="j"/>{GEOM}</body>'), 4,
                     "joint", "name", ["repeated joint name 'j'"]),
  "repeated_geom": (wrap('<body><joint/><geom name="g" size=".1"/><geom name="g" size=".1"/>'
                         "</body>"), 4, "geom", "name", ["repeated geom name 'g'"]),
  "repeated_site": (wrap('<site name="s"/><site name="s"/>'), 4, "site", "name",
                    ["repeated site name 's'"]),
  "repeated_key": (wrap(tail='<keyframe><key name="k"/><key name="k"/></keyframe>'), 6, "key",
                   "name", ["repeated keyframe name 'k'"]),
  "tendon": (wrap(body='<body><joint name="j"/><geom size=".1"/></body>',
                  head='<size nuser_tendon="0"/>',
                  tail='<tendon><fixed user="1"><joint joint="j" coef="1"/></fixed></tendon>'),
             6, "fixed", "user", ["user has more values than nuser_tendon"]),
  "pid_actuator": (wrap(tail='<actuator><pid joint="j" input="vel pos"/></actuator>'), 6, "pid",
                   "input", ["inputs must be listed in canonical order"]),
  "orientation_actuator": (wrap(tail='<actuator><orientation joint="j"/></actuator>'), 6,
                           "orientation", "joint", ["unknown joint 'j'"]),
  "sensor": (wrap(tail='<sensor><user dim="1"/></sensor>'), 6, "user", None,
             ["not supported", "user sensors"]),
  "skin": (wrap(tail="<asset><skin/></asset>"), 6, "skin", None, ["Missing data in skin"]),
  "equality": (wrap(tail='<equality><flex flex="f"/></equality>'), 6, "flex", None,
               ["not supported", "flex equality"]),
  "deformable": (wrap(tail="<deformable/>"), 6, "deformable", None,
                 ["not supported", "deformable"]),
  "default_for_unsupported": (wrap(head="<default><flexcomp/></default>"), 2,
                              "flexcomp", None, ["not supported", "flex objects"]),
  "mesh_geom": (wrap('<geom type="mesh"/>'), 4, "geom", "mesh", ["must have a valid mesh"]),
  "hfield_geom": (wrap('<geom type="hfield"/>'), 4, "geom", "hfield",
                  ["must have a valid hfield"]),
  "unknown_mesh": (wrap('<geom type="mesh" mesh="m"/>'), 4, "geom", "mesh",
                   ["unknown mesh 'm'"]),
  "sdf_geom": (wrap('<geom type="sdf"/>'), 4, "geom", "type", ["'sdf' is not supported"]),
  "keyframe_qpos_too_long": (wrap(f"<body><joint/>{GEOM}</body>",
                                  tail='<keyframe><key qpos="1 2"/></keyframe>'), 6, "key",
                             "qpos", ["qpos has 2 values, expected 1"]),
  "keyframe_mpos_too_long": (wrap('<body mocap="true"/>',
                                  tail='<keyframe><key mpos="1 2 3 4"/></keyframe>'), 6, "key",
                             "mpos", ["mpos has 4 values, expected 3"]),
  "zero_joint_axis": (wrap(f'<body><joint axis="0 0 0"/>{GEOM}</body>'), 4, "joint", "axis",
                      ["axis is zero"]),
  "two_orientations": (wrap(f'<body quat="1 0 0 0" euler="0 0 0"><joint/>{GEOM}</body>'), 4,
                       "body", "euler", ["orientation given more than once"]),
  "zero_quaternion": (wrap(f'<body quat="0 0 0 0"><joint/>{GEOM}</body>'), 4, "body", "quat",
                      ["zero quaternion"]),
  "parallel_xyaxes": (wrap('<body><joint/><geom size=".1" xyaxes="1 0 0 2 0 0"/></body>'), 4,
                      "geom", "xyaxes", ["parallel"]),
  "free_joint_not_root": (wrap(f"<body><joint/>{GEOM}<body><freejoint/>{GEOM}</body></body>"),
                          4, "freejoint", None, ["children of the world"]),
  "free_type_not_root": (wrap(f'<body><joint/>{GEOM}<body><joint type="free"/>{GEOM}</body>'
                              "</body>"), 4, "joint", "type", ["children of the world"]),
  "free_joint_and_hinge": (wrap(f"<body><freejoint/><joint/>{GEOM}</body>"), 4, "freejoint",
                           None, ["cannot have other joints"]),
  "massless_moving_body": (wrap('<body name="b"><joint/></body>'), 4, "body", None,
                           ["mass and inertia of moving bodies"]),
  "massless_geoms": (wrap('<body><joint/><geom size=".1" mass="0"/></body>'), 4, "body", None,
                     ["mass and inertia of moving bodies"]),
  "negative_mass": (wrap('<body><joint/><geom size=".1" mass="-1"/>' + GEOM + "</body>"), 4,
                    "geom", "mass", ["non-negative"]),
  "limited_empty_range": (wrap(f'<body><joint range="1 1" limited="true"/>{GEOM}</body>'), 4,
                          "joint", "range", ["range[0] must be smaller than range[1]"]),
  "limited_reversed_range": (wrap(f'<body><joint type="slide" range="1 -1" limited="true"/>'
                                  f"{GEOM}</body>"), 4, "joint", "range",
                             ["range[0] must be smaller than range[1]"]),
  "ball_range_start": (wrap(f'<body><joint type="ball" range="10 20"/>{GEOM}</body>'), 4,
                       "joint", "range", ["range[0] must be 0"]),
  "autolimits_off_range": (wrap(f'<body><joint range="-1 1"/>{GEOM}</body>',
                                '<compiler autolimits="false"/>'), 4, "joint", "limited",
                           ["autolimits is disabled"]),
  "autolimits_off_range_from_class": (
    wrap(f"<body><joint/>{GEOM}</body>",
         '<compiler autolimits="false"/><default><joint range="-1 1"/></default>'),
    4, "joint", "limited", ["autolimits is disabled"]),
  "global_coordinates": (wrap(head='<compiler coordinate="global"/>'), 2, "compiler",
                         "coordinate", ["global coordinates"]),
  "bad_eulerseq": (wrap(f'<body euler="1 2 3"><joint/>{GEOM}</body>',
                        '<compiler eulerseq="xyw"/>'), 2, "compiler", "eulerseq",
                   ["invalid eulerseq"]),
  "plane_in_moving_body": (wrap(f'<body><joint/>{GEOM}<geom type="plane" size="1 1 1"/>'
                                "</body>"), 4, "geom", "type", ["static bodies"]),
  "mocap_not_child_of_world": (wrap(f'<body><joint/>{GEOM}<body mocap="true"/></body>'), 4,
                               "body", "mocap", ["children of the world body"]),
  "mocap_with_joint": (wrap(f'<body mocap="true"><joint/>{GEOM}</body>'), 4, "joint", None,
                       ["mocap bodies cannot have joints"]),
  "fromto_sphere": (wrap('<body><joint/><geom size=".1" fromto="0 0 0 1 1 1"/></body>'), 4,
                    "geom", "fromto", ["not allowed for type 'sphere'"]),
  "fromto_and_pos": (wrap('<body><joint/><geom type="capsule" size=".1" pos="1 0 0" '
                         'fromto="0 0 0 0 0 1"/></body>'), 4, "geom", "fromto",
                    ["fromto and a nonzero pos"]),
  "fromto_from_class_and_pos": (
    wrap('<body><joint/><geom type="capsule" size=".1" pos="1 0 0"/></body>',
         '<default><geom fromto="0 0 0 0 0 1"/></default>'), 4, "geom", "fromto",
    ["fromto and a nonzero pos"]),
  "fullinertia_and_orientation": (
    wrap('<body><joint/><inertial pos="0 0 0" mass="1" euler="0 0 90" '
         'fullinertia="1 1 1 0 0 0"/></body>'), 4, "inertial", "euler", ["fullinertia"]),
  "box_size_missing": (wrap('<body><joint/><geom type="box" size=".1 .1"/></body>'), 4, "geom",
                       "size", ["size 2 must be positive"]),
  "bad_condim": (wrap('<body><joint/><geom size=".1" condim="2"/></body>'), 4, "geom",
                 "condim", ["condim must be 1, 3, 4 or 6"]),
  "inertial_without_mass": (wrap('<body><joint/><inertial pos="0 0 0" diaginertia="1 1 1"/>'
                                 "</body>"), 4, "inertial", "mass",
                            ["missing required attribute 'mass'"]),
  "two_inertials": (wrap('<body><joint/><inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>'
                         '<inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/></body>'), 4,
                    "inertial", None, ["only once in <body>"]),
  "two_flags": (wrap(head='<option><flag contact="disable"/><flag gravity="disable"/></option>'),
                2, "flag", None, ["only once in <option>"]),
  "two_geoms_in_default": (wrap(head='<default><geom size=".1"/><geom/></default>'), 2, "geom",
                           None, ["only once in <default>"]),
  "name_in_default": (wrap(head='<default><joint name="j"/></default>'), 2, "joint", "name",
                      ["in a default class"]),
  "class_in_default": (wrap(head='<default><default class="a"><geom class="a"/></default>'
                              "</default>"), 2, "geom", "class", ["in a default class"]),
  "plane_without_spacing": (wrap('<geom type="plane" size="1 1 0"/>'), 4, "geom", "size",
                            ["size 2", "'plane'"]),
  "joint_in_world": (wrap("<joint/>"), 4, "joint", None,
                     ["world body cannot have joints", "not allowed inside <worldbody>"]),
  "freejoint_in_world": (wrap("<freejoint/>"), 4, "freejoint", None,
                         ["world body cannot have joints"]),
  "inertial_in_world": (wrap('<inertial pos="0 0 0" mass="1"/>'), 4, "inertial", None,
                        ["world body cannot have inertia", "not allowed inside <worldbody>"]),
  "not_mujoco_root": ("<notmujoco/>", 1, "notmujoco", None, ["root element must be <mujoco>"]),
  "springdamper": (wrap(f'<body><joint springdamper="0 1"/>{GEOM}</body>'), 4, "joint",
                   "springdamper", ["must be positive"]),
}


# <contact>: references to missing geoms and bodies name the attribute that holds them.
# (A pair without geom1 or geom2 is the one case MuJoCo 4.0 compiles: it silently binds the
# empty name to some unnamed geom. jaxmj requires both, as MuJoCo's documentation does.)
PAIRED = '<geom name="floor" size=".1"/><body name="b"><joint/><geom name="g" size=".1"/></body>'
for _name, (_contact, _element, _attribute, _phrases) in {
  "pair_unknown_geom1": ('<pair geom1="nope" geom2="g"/>', "pair", "geom1",
                         ["unknown geom 'nope'"]),
  "pair_unknown_geom2": ('<pair geom1="g" geom2="nope"/>', "pair", "geom2",
                         ["unknown geom 'nope'"]),
  "pair_missing_geom1": ('<pair geom2="g"/>', "pair", "geom1",
                         ["missing required attribute 'geom1'"]),
  "pair_missing_geom2": ('<pair geom1="g"/>', "pair", "geom2",
                         ["missing required attribute 'geom2'"]),
  "pair_body_name_for_geom": ('<pair geom1="b" geom2="g"/>', "pair", "geom1",
                              ["unknown geom 'b'"]),
  "pair_bad_condim": ('<pair geom1="floor" geom2="g" condim="2"/>', "pair", "condim",
                      ["condim must be 1, 3, 4 or 6"]),
  "pair_too_much_friction": ('<pair geom1="floor" geom2="g" friction="1 2 3 4 5 6"/>', "pair",
                             "friction", ["at most 5 values"]),
  "pair_unknown_class": ('<pair class="nope" geom1="floor" geom2="g"/>', "pair", "class",
                         ["unknown default class 'nope'"]),
  "pair_repeated_name": ('<pair name="p" geom1="floor" geom2="g"/><pair name="p" '
                         'geom1="g" geom2="floor"/>', "pair", "name", ["repeated pair name 'p'"]),
  "pair_unknown_attribute": ('<pair geom1="floor" geom2="g" priority="1"/>', "pair",
                             "priority", ["unknown attribute"]),
  "exclude_unknown_body1": ('<exclude body1="nope" body2="b"/>', "exclude", "body1",
                            ["unknown body 'nope'"]),
  "exclude_unknown_body2": ('<exclude body1="b" body2="nope"/>', "exclude", "body2",
                            ["unknown body 'nope'"]),
  "exclude_missing_body1": ('<exclude body2="b"/>', "exclude", "body1",
                            ["missing required attribute 'body1'"]),
  "exclude_geom_name_for_body": ('<exclude body1="world" body2="g"/>', "exclude", "body2",
                                 ["unknown body 'g'"]),
  "exclude_repeated_name": ('<exclude name="e" body1="world" body2="b"/><exclude name="e" '
                            'body1="b" body2="b"/>', "exclude", "name",
                            ["repeated exclude name 'e'"]),
  "exclude_class": ('<exclude class="main" body1="world" body2="b"/>', "exclude", "class",
                    ["unknown attribute"]),
  "geom_in_contact": ('<geom size=".1"/>', "geom", None, ["not allowed inside <contact>"]),
}.items():
  CASES[_name] = (wrap(PAIRED, tail=f"<contact>{_contact}</contact>"), 6, _element, _attribute,
                  _phrases)
for _name, (_head, _element, _attribute, _phrases) in {
  "pair_geom1_in_default": ('<default><pair geom1="g"/></default>', "pair", "geom1",
                            ["in a default class"]),
  "pair_name_in_default": ('<default><pair name="p"/></default>', "pair", "name",
                           ["in a default class"]),
  "two_pairs_in_default": ('<default><pair/><pair/></default>', "pair", None,
                           ["only once in <default>"]),
  "exclude_in_default": ('<default><exclude/></default>', "exclude", None,
                         ["not allowed inside <default>"]),
  "contact_in_default": ('<default><contact/></default>', "contact", None,
                         ["not allowed inside <default>"]),
  "geom_too_much_surfacevel": ('<default><geom surfacevel="1 2 3 4 5 6 7"/></default>', "geom",
                               "surfacevel", ["at most 6 values"]),
}.items():
  CASES[_name] = (wrap(PAIRED, head=_head), 2, _element, _attribute, _phrases)
CASES["pair_in_worldbody"] = (wrap('<pair geom1="floor" geom2="floor"/>' + PAIRED), 4, "pair",
                              None, ["not allowed inside <worldbody>"])

# Assets are referred to by name: MuJoCo rejects one with neither a name nor a file to take
# it from (a skybox texture excepted).
UNNAMED_ASSETS = {
  "unnamed_mesh": ('<mesh vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>', "mesh", "mesh"),
  "unnamed_hfield": ('<hfield nrow="2" ncol="2" size="1 1 .1 .1"/>', "hfield", "height field"),
  "unnamed_texture": ('<texture type="2d" builtin="checker" width="8" height="8"/>', "texture",
                      "texture"),
  "unnamed_cube_texture": ('<texture type="cube" builtin="flat" width="8" height="8"/>',
                           "texture", "texture"),
  "unnamed_material": ("<material/>", "material", "material"),
  "empty_material_name": ('<material name=""/>', "material", "material"),
}
for _name, (_asset, _element, _what) in UNNAMED_ASSETS.items():
  CASES[_name] = (wrap(GEOM, head=f"<asset>{_asset}</asset>"), 2, _element, "name",
                  [f"empty name in {_what}"])


@pytest.mark.parametrize("name", UNNAMED_ASSETS)
def test_unnamed_asset_is_mujocos_error(name):
  xml, *_, phrases = CASES[name]
  with pytest.raises(ValueError, match=phrases[0]):
    mujoco.MjModel.from_xml_string(xml)
  sky = '<texture type="skybox" builtin="gradient" width="8" height="8"/>'
  mujoco.MjModel.from_xml_string(wrap(GEOM, head=f"<asset>{sky}</asset>"))
  jaxmj.Model.from_xml_string(wrap(GEOM, head=f"<asset>{sky}</asset>"))


_I = '<inertial pos="0 0 0" mass="{}" diaginertia="{}"/>'.format
# Moving bodies MuJoCo rejects as massless: neither the body nor a body welded to it has
# mass and all three moments >= 1e-15 (mass in a child behind another joint does not count).
for _name, _body in {
  "massless_behind_hinge": '<body><joint/><body pos="0 0 -1"><joint/>' + GEOM + "</body></body>",
  "massless_behind_slide": ('<body><joint type="slide"/><body pos="0 0 -1"><joint type="slide" '
                            'axis="1 0 0"/>' + GEOM + "</body></body>"),
  "zero_moment": "<body><joint/>" + _I(1, "1 1 0") + "</body>",
  "tiny_moments": "<body><joint/>" + _I(1, "1e-16 1e-16 1e-16") + "</body>",
  "mass_and_moments_split": ("<body><joint/>" + _I(1, "0 0 0") + '<body pos="1 0 0">'
                             + _I(0, "1 1 1") + "</body></body>"),
}.items():
  CASES[_name] = (wrap(_body), 4, "body", None, ["mass and inertia of moving bodies"])


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_error_in_file(case, tmp_path):
  xml, line, element, attribute, phrases = case
  with pytest.raises(MJCFError) as info:
    compile_file(tmp_path, xml)
  check_error(info.value, str(tmp_path / "model.xml"), line, element, attribute, *phrases)


@pytest.mark.parametrize("name", ["unknown_attribute", "repeated_geom", "tendon",
                                  "zero_joint_axis", "bad_eulerseq"])
def test_error_in_string(name):
  xml, line, element, attribute, phrases = CASES[name]
  with pytest.raises(MJCFError) as info:
    jaxmj.Model.from_xml_string(xml)
  check_error(info.value, "<string>", line, element, attribute, *phrases)


@pytest.mark.parametrize("name,what", [("joint_in_world", "joints"),
                                       ("freejoint_in_world", "joints"),
                                       ("inertial_in_world", "inertia")])
def test_world_body_errors_give_mujocos_reason(name, what):
  xml = CASES[name][0]
  with pytest.raises(ValueError, match=f"World body cannot have {what}"):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(MJCFError, match=f"the world body cannot have {what}"):
    jaxmj.Model.from_xml_string(xml)


def test_mjcf_error_is_value_error_and_exported():
  assert issubclass(MJCFError, ValueError)
  assert jaxmj.MJCFError is MJCFError


def test_xml_syntax_error(tmp_path):
  xml = "<mujoco>\n<worldbody>\n<body>\n</worldbody>\n</mujoco>"
  with pytest.raises(MJCFError) as info:
    compile_file(tmp_path, xml)
  err = info.value
  assert err.file == str(tmp_path / "model.xml")
  assert err.line == 4  # where lxml found the mismatched end tag
  assert "XML syntax error" in str(err) and f"model.xml:{err.line}" in str(err)


def test_missing_file(tmp_path):
  path = str(tmp_path / "nope.xml")
  with pytest.raises(MJCFError, match="cannot read file") as info:
    jaxmj.Model.from_xml_path(path)
  assert info.value.file == path


def test_include_missing_file(tmp_path):
  with pytest.raises(MJCFError) as info:
    compile_file(tmp_path, wrap(head='<include file="nope.xml"/>'))
  check_error(info.value, str(tmp_path / "model.xml"), 2, "include", "file",
              "cannot read included file 'nope.xml'")


def test_include_cycle(tmp_path):
  (tmp_path / "a.xml").write_text('<mujoco>\n<include file="b.xml"/>\n</mujoco>')
  (tmp_path / "b.xml").write_text('<mujoco>\n\n<include file="a.xml"/>\n</mujoco>')
  with pytest.raises(MJCFError) as info:
    jaxmj.Model.from_xml_path(tmp_path / "a.xml")
  err = info.value
  check_error(err, str(tmp_path / "b.xml"), 3, "include", "file", "include cycle")
  assert re.search(r"a\.xml.*b\.xml.*a\.xml", str(err)), str(err)


def test_include_self(tmp_path):
  (tmp_path / "a.xml").write_text('<mujoco>\n<include file="a.xml"/>\n</mujoco>')
  with pytest.raises(MJCFError, match="include cycle") as info:
    jaxmj.Model.from_xml_path(tmp_path / "a.xml")
  assert info.value.line == 2


def test_error_inside_included_file(tmp_path):
  (tmp_path / "part.xml").write_text(
    '<mujoco>\n<worldbody>\n<body>\n<joint/>\n<geom size=".1" pos="1 2"/>\n</body>\n'
    "</worldbody>\n</mujoco>")
  with pytest.raises(MJCFError) as info:
    compile_file(tmp_path, wrap(head='<include file="part.xml"/>'))
  check_error(info.value, str(tmp_path / "part.xml"), 5, "geom", "pos", "expected 3 values")


@pytest.mark.parametrize("part, line, element, attribute, phrase", [
  ('<body name="b">\n<joint/>\n<geom size=".1"/>\n</body>', 3, "body", "name",
   "repeated body name 'b'"),
  ('<body>\n<joint axis="0 0 0"/>\n<geom size=".1"/>\n</body>', 4, "joint", "axis",
   "axis is zero"),
  ("<body>\n<joint/>\n</body>", 3, "body", None, "mass and inertia"),
])
def test_compile_error_inside_included_file(tmp_path, part, line, element, attribute, phrase):
  # errors found after parsing, on the whole tree, still point into the included file
  (tmp_path / "part.xml").write_text(f"<mujoco>\n<worldbody>\n{part}\n</worldbody>\n</mujoco>")
  with pytest.raises(MJCFError) as info:
    compile_file(tmp_path, wrap(f'<body name="b"><joint/>{GEOM}</body>',
                                tail='<include file="part.xml"/>'))
  check_error(info.value, str(tmp_path / "part.xml"), line, element, attribute, phrase)


def test_syntax_error_inside_included_file(tmp_path):
  (tmp_path / "part.xml").write_text("<mujoco>\n<worldbody>\n<body>\n</mujoco>")
  with pytest.raises(MJCFError, match="XML syntax error") as info:
    compile_file(tmp_path, wrap(head='<include file="part.xml"/>'))
  assert info.value.file == str(tmp_path / "part.xml")
  assert info.value.line == 4


def test_included_assets_error_names_the_include():
  with pytest.raises(MJCFError) as info:
    jaxmj.Model.from_xml_string(wrap(head='<include file="part.xml"/>'),
                                assets={"part.xml": "<mujoco><worldbody><foo/></worldbody>"
                                                    "</mujoco>"})
  assert info.value.element == "foo" and info.value.line == 1
  assert info.value.file.endswith("part.xml")


def test_missing_keyframe_name():
  m = jaxmj.Model.from_xml_string(wrap(f'<body><joint/>{GEOM}</body>',
                                       tail='<keyframe><key name="home"/></keyframe>'))
  jaxmj.reset(m, "home")
  with pytest.raises(KeyError, match="nope"):
    jaxmj.reset(m, "nope")
  with pytest.raises(IndexError):
    jaxmj.reset(m, 3)


def test_cameras_lights_and_visual_compile_without_warnings(tmp_path):
  xml = wrap(f'<body><joint/>{GEOM}<camera name="c" pos="0 0 1"/></body>'
             '<light pos="0 0 3"/>', head='<visual><global fovy="40"/></visual>')
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    m, _ = compile_file(tmp_path, xml)
  assert (m.nbody, m.ngeom, m.ncam, m.nlight) == (2, 1, 1, 1)
  assert m.vis.global_["fovy"] == 40.0


# ---------------------------------------------------------------- fuzzing

VALID = """<mujoco model="fuzz">
  <compiler angle="degree" autolimits="true"/>
  <option timestep="0.005"><flag contact="disable"/></option>
  <size nkey="2"/>
  <default>
    <geom type="capsule" size=".05 .2" density="500"/>
    <default class="arm"><joint axis="0 1 0" range="-90 90" damping=".1"/></default>
  </default>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <site name="origin" pos="0 0 0"/>
    <body name="torso" pos="0 0 1" euler="0 10 0">
      <freejoint name="root"/>
      <geom name="torso" type="box" size=".2 .1 .3"/>
      <frame pos=".1 0 0" quat="1 0 0 .2">
        <body name="upper" pos="0 .2 0" childclass="arm">
          <joint name="shoulder"/>
          <geom fromto="0 0 0 0 0 -.4"/>
          <body name="lower" pos="0 0 -.4">
            <joint name="elbow" type="slide" axis="0 0 1" range="-.1 .1"/>
            <inertial pos="0 0 -.1" mass=".5" diaginertia=".01 .01 .002"/>
            <site name="hand" pos="0 0 -.3" size=".02"/>
          </body>
        </body>
      </frame>
    </body>
    <body name="target" mocap="true" pos="1 0 1"><geom type="sphere" size=".05"/></body>
  </worldbody>
  <contact>
    <pair name="feet" geom1="floor" geom2="torso" condim="4" friction=".8 .7" margin=".01"/>
    <exclude name="arm" body1="upper" body2="torso"/>
  </contact>
  <keyframe><key name="home" qpos="0 0 1 1 0 0 0 10 0"/></keyframe>
</mujoco>"""


def test_fuzz_base_model_compiles():
  jaxmj.Model.from_xml_string(VALID)
  mujoco.MjModel.from_xml_string(VALID)


_ATTR = re.compile(r'\s([a-z_]+)="([^"]*)"')
_ELEMENT = re.compile(r"<(\w+)\b[^<>]*/>")
_GARBAGE = st.one_of(
  st.text(alphabet=" 0123456789.-+eEinfaxyz,<>&;'\"", max_size=12),
  st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=7).map(
    lambda v: " ".join(map(str, v))),
  st.sampled_from(["", "true", "false", "auto", "sphere", "main", "arm", "nope", "0 0 0",
                   "1 0 0 0", "-1", "1e400"]),
)


def _mutate(text: str, data) -> str:
  kind = data.draw(st.sampled_from(["delete", "duplicate", "garble", "garble", "swap"]))
  if kind == "duplicate":
    matches = list(_ELEMENT.finditer(text))
    m = data.draw(st.sampled_from(matches))
    return text[:m.end()] + m.group(0) + text[m.end():]
  matches = list(_ATTR.finditer(text))
  m = data.draw(st.sampled_from(matches))
  if kind == "delete":
    return text[:m.start()] + text[m.end():]
  if kind == "swap":  # an attribute name that is valid elsewhere
    other = data.draw(st.sampled_from(matches)).group(1)
    return text[:m.start(1)] + other + text[m.end(1):]
  value = data.draw(_GARBAGE).replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
  return text[:m.start(2)] + value + text[m.end(2):]


@settings(max_examples=60, deadline=2000, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_fuzz_mutations_raise_only_mjcf_error(data):
  xml = VALID
  for _ in range(data.draw(st.integers(1, 3))):
    xml = _mutate(xml, data)
  try:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      jaxmj.Model.from_xml_string(xml)
  except MJCFError as e:
    assert e.msg  # located errors carry a message


EMPTY_NUMBERS = {  # attribute left empty (or blank): MuJoCo compiles it as not given
  "option_timestep": ('<option timestep=""/>', GEOM),
  "body_pos": ("", '<body pos=" "><joint/><geom size=".1"/></body>'),
  "joint_range_and_damping": ("", '<body><joint range="" damping=" "/><geom size=".1"/></body>'),
  "geom_mass": ("", '<body><joint/><geom size=".1" mass=""/></body>'),
  "statistic_center": ('<statistic center=""/>', GEOM),
  "size_nuser_body": ('<size nuser_body=""/>', GEOM),
  "default_class": ('<default><joint range=""/></default>', '<body><joint/>' + GEOM + "</body>"),
}


@pytest.mark.parametrize("name", EMPTY_NUMBERS)
def test_empty_numeric_attribute_is_not_given_as_mujoco(name):
  head, body = EMPTY_NUMBERS[name]
  from mujoco_compare import load_both, model_differences

  m, mj = load_both(xml=wrap(body, head=head))
  assert model_differences(m, mj) == []
  assert float(m.opt.timestep) == mj.opt.timestep


def test_a_composite_is_refused_as_mujoco_4_refuses_it():
  with pytest.raises(jaxmj.MJCFError, match=r"<composite>: element <composite> "
                     r"\(composite objects, which MuJoCo 4.0 no longer reads either\)"):
    jaxmj.Model.from_xml_string('<mujoco><worldbody><composite type="cable"/></worldbody>'
                                '</mujoco>')
