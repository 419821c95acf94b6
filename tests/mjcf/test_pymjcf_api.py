"""PyMJCF's API beyond building and attaching (seed 004, and dm_control's behaviour where the
document is silent): renaming repeated and unnamed models, name scopes, traversal helpers,
commit_defaults, get_children / all_children, XML of subtrees and float formatting, export
with assets. Each behaviour test runs on `jaxmj.mjcf` and on `dm_control.mjcf` (when
installed) with the same assertions."""

import io
import logging
import os
import warnings
import zipfile

import numpy as np
import pytest
from lxml import etree
from test_attach import box_stl

import jaxmj
from jaxmj import mjcf as jaxmj_mjcf

mujoco = pytest.importorskip("mujoco")


def _dm_control_mjcf():
  """dm_control.mjcf (the reference where seed 004 is silent), or None when absent."""
  # Importing dm_control routes MuJoCo's warnings to logging and adds absl's handler to the
  # root logger: both are put back, for the other tests in this process.
  handler, log_handlers = mujoco.get_mju_user_warning(), logging.root.handlers[:]
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # its renderer's import warns without a display
    try:
      from dm_control import mjcf
    except ImportError:
      return None
    finally:
      mujoco.set_mju_user_warning(handler)
      logging.root.handlers[:] = log_handlers
  return mjcf


@pytest.fixture(params=["jaxmj", "dm_control"])
def mjcf(request):
  """The library under test: jaxmj.mjcf, or dm_control.mjcf as the reference."""
  if request.param == "jaxmj":
    return jaxmj_mjcf
  lib = _dm_control_mjcf()
  if lib is None:
    pytest.skip("dm_control is not installed")
  return lib


def part(mjcf, name=None):
  """A small model: a body with a hinge and a geom, a motor on the hinge."""
  root = mjcf.RootElement(model=name)
  body = root.worldbody.add("body", name="x")
  body.add("joint", name="j")
  body.add("geom", name="g", size=[0.1], pos=[1e-9, 0.1, 1 / 3])
  root.actuator.add("motor", name="m", joint="j")
  return root


# ------------------------------------------------------------------ renaming


def test_repeated_and_unnamed_models_get_numbered_names(mjcf):
  parent = part(mjcf, "p")
  kids = [part(mjcf, "b"), part(mjcf, "b"), part(mjcf, "b"), part(mjcf), part(mjcf),
          part(mjcf, "b_1")]
  for kid in kids:
    parent.attach(kid)
  names = ["b", "b_1", "b_2", "unnamed_model", "unnamed_model_1", "b_1_1"]
  assert [k.model for k in kids] == names
  assert [k.find("joint", "j").full_identifier for k in kids] == [n + "/j" for n in names]
  kids[1].detach()
  assert kids[1].model == "b_1"  # keeps the name it was given
  again = part(mjcf, "b")
  parent.attach(again)
  assert again.model == "b_1"  # the first free number
  with pytest.raises(ValueError):
    kids[0].model = "b_2"  # an attached model's name stays unique among its siblings
  assert kids[0].model == "b"


def test_copies_attached_below_different_models_keep_their_names(mjcf):
  scene = part(mjcf, "scene")
  a, b = part(mjcf, "a"), part(mjcf, "b")
  a.attach(part(mjcf, "tool"))
  b.attach(part(mjcf, "tool"))
  scene.attach(a)
  scene.attach(b)
  tools = [m.find("attachment_frame", "tool") for m in (a, b)]
  assert [t.full_identifier for t in tools] == ["a/tool/", "b/tool/"]


def test_renamed_copies_compile_as_mujoco_compiles_their_xml():
  from mujoco_compare import model_differences

  scene = jaxmj_mjcf.RootElement(model="scene")
  for i in range(3):
    scene.worldbody.add("site", name=f"s{i}", pos=[i, 0, 1]).attach(part(jaxmj_mjcf))
  xml = scene.to_xml_string()
  mj = mujoco.MjModel.from_xml_string(xml)
  assert model_differences(jaxmj.Model.from_mjcf(scene), mj) == []
  names = [mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_BODY, i) for i in range(mj.nbody)]
  assert names == ["world", "unnamed_model/", "unnamed_model/x", "unnamed_model_1/",
                   "unnamed_model_1/x", "unnamed_model_2/", "unnamed_model_2/x"]


# ------------------------------------------------------------------ scopes and identifiers


def test_namescope_and_prefixed_identifiers(mjcf):
  p, c = part(mjcf, "p"), part(mjcf, "c")
  frame = p.find("body", "x").add("site", name="s", pos=[0, 0, 1]).attach(c)
  j = c.find("joint", "j")
  scope = j.namescope
  assert scope is c.namescope and scope.mjcf_model is c and scope.name == "c"
  assert scope.parent is p.namescope and scope.root is p.namescope
  assert scope.full_prefix() == "" and scope.full_prefix(p.namescope) == "c/"
  assert scope.full_prefix(p.namescope, as_list=True) == ["c"]
  assert j.prefixed_identifier(c.namescope) == "j"
  assert j.prefixed_identifier(p.namescope) == "c/j"
  assert j.full_identifier == "c/j" and p.find("joint", "j").full_identifier == "j"
  assert frame.full_identifier == "c/" and frame.prefixed_identifier(p.namescope) == "c/"
  assert p.worldbody.full_identifier == "world" and c.worldbody.full_identifier == "c/"
  assert p.namescope.has_identifier("namescope", "c")
  assert p.namescope.get("joint", "j") is p.find("joint", "j")


# ------------------------------------------------------------------ traversal helpers


def test_attachment_frames_and_free_joints_are_found(mjcf):
  arena = part(mjcf, "arena")
  robot = part(mjcf, "robot")
  assert arena.find("joint", "j").root is arena
  frame = arena.attach(robot)
  assert mjcf.get_attachment_frame(robot) is frame
  assert mjcf.traversal_utils.get_attachment_frame(robot) is arena.find(
    "attachment_frame", "robot")
  assert mjcf.get_frame_freejoint(robot) is None and mjcf.get_frame_joints(robot) == []
  free = frame.add("freejoint")
  assert mjcf.get_frame_freejoint(robot) is free
  assert mjcf.get_frame_joints(robot) == [free]
  other = part(mjcf, "other")
  joint = arena.attach(other).add("joint", type="slide", axis=[0, 0, 1])
  assert mjcf.get_frame_joints(other) == [joint] and mjcf.get_frame_freejoint(other) is None
  body = arena.worldbody.add("body", name="thrown")
  assert mjcf.get_freejoint(body) is None
  typed = body.add("joint", name="free", type="free")
  assert mjcf.get_freejoint(body) is typed
  assert mjcf.get_freejoint(arena.find("geom", "g")) is None
  assert mjcf.get_freejoint(arena.find("body", "x")) is None


DEFAULTS_XML = """
<mujoco model="d">
  <default>
    <joint damping="0.1" armature="0.01"/>
    <geom rgba="1 0 0 1" friction="0.5 0.005 0.0001"/>
    <motor ctrlrange="-1 1" ctrllimited="true"/>
    <default class="stiff">
      <joint stiffness="5" damping="0.3"/>
      <default class="stiffer"><joint stiffness="9"/><geom size="0.2"/></default>
    </default>
  </default>
  <worldbody>
    <body name="a" childclass="stiff">
      <joint name="ja"/>
      <geom name="ga" size="0.1"/>
      <body name="b" pos="0 0 -0.5">
        <joint name="jb" class="stiffer" damping="0.7"/>
        <geom name="gb" class="stiffer"/>
      </body>
    </body>
    <body name="c" pos="1 0 0"><joint name="jc"/><geom name="gc" size="0.1"/></body>
  </worldbody>
  <actuator><motor name="m" joint="jc" gear="3"/></actuator>
</mujoco>
"""


def _attributes(el) -> dict:
  """An element's attributes as plain Python values (the libraries' types differ)."""
  out = {}
  for k, v in el.get_attributes().items():
    k = "class" if k == "dclass" else k
    v = getattr(v, "full_identifier", v) if not isinstance(v, str) else v
    if isinstance(v, str | bool):
      out[k] = v
    else:
      out[k] = np.atleast_1d(np.asarray(v, float)).tolist()
  return out


def test_commit_defaults_writes_what_the_classes_give(mjcf):
  root = mjcf.from_xml_string(DEFAULTS_XML)
  root.find("body", "c").add("geom", name="gd", dclass=root.find("default", "stiffer"))
  for tag in ("joint", "geom", "actuator"):
    for el in root.find_all(tag):
      mjcf.commit_defaults(el)
  got = {el.name: _attributes(el) for t in ("joint", "geom", "actuator")
         for el in root.find_all(t)}
  assert got["ja"] == {"name": "ja", "damping": [0.3], "armature": [0.01],
                       "stiffness": [5.0]}
  assert got["jb"] == {"name": "jb", "class": "stiffer", "damping": [0.7],
                       "armature": [0.01], "stiffness": [9.0]}
  assert got["gb"]["size"] == [0.2] and got["gb"]["rgba"] == [1, 0, 0, 1]
  assert got["gd"]["size"] == [0.2] and got["gd"]["friction"] == [0.5, 0.005, 0.0001]
  assert got["m"]["ctrlrange"] == [-1, 1] and got["m"]["gear"] == [3.0]
  only = mjcf.from_xml_string(DEFAULTS_XML)
  jc = only.find("joint", "jc")
  mjcf.commit_defaults(jc, attributes=["armature"])
  assert _attributes(jc) == {"name": "jc", "armature": [0.01]}


def test_committed_defaults_compile_to_the_same_model():
  from mujoco_compare import model_differences

  root = jaxmj_mjcf.from_xml_string(DEFAULTS_XML)
  for el in root.find_all("joint") + root.find_all("geom") + root.find_all("actuator"):
    jaxmj_mjcf.commit_defaults(el)
  root.default.remove()
  for body in root.find_all("body"):
    body.childclass = None
  for el in root.find_all("joint") + root.find_all("geom"):
    el.dclass = None
  xml = root.to_xml_string()
  assert "default" not in xml
  mj = mujoco.MjModel.from_xml_string(DEFAULTS_XML)
  assert model_differences(jaxmj.Model.from_mjcf(root), mj) == []


# ------------------------------------------------------------------ children


def test_get_children_and_all_children(mjcf):
  p, c = part(mjcf, "p"), part(mjcf, "c")
  site = p.find("body", "x").add("site", name="s")
  frame = site.attach(c)
  x = p.find("body", "x")
  assert list(p.worldbody.get_children("body")) == [x]
  assert x.get_children("inertial") is None
  assert p.get_children("option") is p.option
  with pytest.raises(AttributeError, match="not a valid child"):
    p.worldbody.get_children("nope")
  assert [e.full_identifier for e in p.actuator.all_children()] == ["m", "c/m"]
  assert x.all_children()[-1] is frame  # the frame follows the site it is attached to
  assert [e.full_identifier for e in frame.all_children()] == ["c/x"]
  assert [e.full_identifier for e in p.worldbody.all_children()] == ["x"]


# ------------------------------------------------------------------ writing


def _tree(xml: str):
  """(tag, name, attributes but class) of every element, names of unnamed ones dropped
  (dm_control writes generated names for them)."""
  out = []
  for el in etree.fromstring(xml).iter():
    attrs = {k: v for k, v in el.attrib.items() if k not in ("class", "name")}
    name = el.get("name")
    out.append((el.tag, None if name is None or "unnamed" in name else name, attrs))
  return out


def test_subtree_xml_with_precision_and_zero_threshold(mjcf):
  p, c = part(mjcf, "p"), part(mjcf, "c")
  p.find("body", "x").add("site", name="s", pos=[0, 0, 1]).attach(c)
  body = p.find("body", "x")
  tree = _tree(body.to_xml_string(precision=3, zero_threshold=1e-6))
  assert tree == [
    ("body", "x", {}), ("joint", "j", {}), ("geom", "g", {"size": "0.1", "pos": "0 0.1 0.333"}),
    ("site", "s", {"pos": "0 0 1"}), ("body", "c/", {"pos": "0 0 1"}), ("body", "c/x", {}),
    ("joint", "c/j", {}), ("geom", "c/g", {"size": "0.1", "pos": "0 0.1 0.333"})]
  child = _tree(c.find("body", "x").to_xml_string(precision=17))
  assert child[2] == ("geom", "g", {"size": "0.10000000000000001",
                                   "pos": "1.0000000000000001e-09 0.10000000000000001 "
                                          "0.33333333333333331"})
  assert _tree(c.actuator.to_xml_string()) == [("actuator", None, {}),
                                               ("motor", "m", {"joint": "j"})]
  assert _tree(p.actuator.to_xml_string()) == [("actuator", None, {}),
                                               ("motor", "m", {"joint": "j"}),
                                               ("motor", "c/m", {"joint": "c/j"})]
  geoms = [t for t in _tree(p.to_xml_string(precision=4, zero_threshold=0.01))
           if t[0] == "geom"]
  assert [g[2]["pos"] for g in geoms] == ["0 0.1 0.3333"] * 2
  assert body.to_xml_string(self_only=True, pretty_print=False).endswith(">...</body>")


def test_default_precision_is_exact():
  root = part(jaxmj_mjcf)
  pos = etree.fromstring(root.to_xml_string()).find(".//geom").get("pos")
  assert np.array_equal(np.array(pos.split(), float), [1e-9, 0.1, 1 / 3])


def test_export_with_assets_writes_a_loadable_model(mjcf, tmp_path):
  stl = box_stl()
  root = mjcf.from_xml_string("""
    <mujoco model="part"><asset><mesh name="cube" file="cube.stl" scale="0.1 0.1 0.1"/></asset>
    <worldbody><body name="b"><freejoint/><geom type="mesh" mesh="cube"/></body></worldbody>
    </mujoco>""", assets={"cube.stl": stl})
  mjcf.export_with_assets(root, str(tmp_path / "out"))
  files = sorted(os.listdir(tmp_path / "out"))
  assert files[1] == "part.xml" and files[0].startswith("cube-") and files[0].endswith(".stl")
  mj = mujoco.MjModel.from_xml_path(str(tmp_path / "out" / "part.xml"))
  assert mj.nmesh == 1 and mj.nbody == 2
  with pytest.raises(ValueError, match="xml"):
    mjcf.export_with_assets(root, str(tmp_path), "part.txt")
  mjcf.export_with_assets(root, str(tmp_path / "named"), "robot.xml", precision=5)
  assert sorted(os.listdir(tmp_path / "named"))[1] == "robot.xml"
  path = mjcf.export_with_assets_as_zip(root, str(tmp_path / "zip"))
  assert path == os.path.join(str(tmp_path / "zip"), "part.zip")
  with zipfile.ZipFile(path) as zf:
    names = sorted(zf.namelist())
    assert names == ["part/" + f for f in files]
    xml = zf.read("part/part.xml").decode()
    assets = {n.split("/")[1]: zf.read(n) for n in names if not n.endswith(".xml")}
  assert mujoco.MjModel.from_xml_string(xml, assets).nmesh == 1


def test_exported_asset_names_match_dm_control(tmp_path):
  dm = _dm_control_mjcf()
  if dm is None:
    pytest.skip("dm_control is not installed")
  written = []
  for i, lib in enumerate((jaxmj_mjcf, dm)):
    root = lib.from_xml_string(
      '<mujoco model="m"><asset><mesh file="cube.stl"/></asset></mujoco>',
      assets={"cube.stl": box_stl()})
    lib.export_with_assets(root, str(tmp_path / str(i)))
    written.append(sorted(os.listdir(tmp_path / str(i))))
  assert written[0] == written[1]


def test_io_reads_with_the_documented_names(tmp_path):
  path = tmp_path / "robot.xml"
  path.write_text(DEFAULTS_XML)
  a, b = jaxmj_mjcf.from_xml_file(str(path)), jaxmj_mjcf.from_file(io.StringIO(DEFAULTS_XML))
  assert a.is_same_as(b)


# ------------------------------------------------------------------ the same code, both libraries


def composed_scene(mjcf):
  """A composition written once for either library: repeated and unnamed parts, frames
  after their sites, nested attachment, scoped defaults, references across models."""
  def arm(name=None):
    root = mjcf.RootElement(model=name)
    root.default.joint.damping = 0.3
    root.default.add("default", dclass="stiff").joint.stiffness = 2.0
    upper = root.worldbody.add("body", name="upper")
    upper.add("joint", name="shoulder", type="ball")
    upper.add("geom", type="capsule", fromto=[0, 0, 0, 0, 0, -0.3], size=[0.04])
    fore = upper.add("body", name="fore", pos=[0, 0, -0.3])
    elbow = fore.add("joint", name="elbow", axis=[0, 1, 0], dclass="stiff")
    fore.add("geom", size=[0.05], pos=[0, 0, -0.3])
    fore.add("site", name="tip", pos=[0, 0, -0.35])
    root.actuator.add("position", joint=elbow, kp=5.0)
    root.sensor.add("jointpos", joint=elbow)
    return root

  top = mjcf.RootElement(model="scene")
  top.default.geom.rgba = [1, 0, 0, 1]
  top.worldbody.add("geom", type="plane", size=[5, 5, 0.1])
  torso = top.worldbody.add("body", name="torso", pos=[0, 0, 1])
  torso.add("freejoint")
  torso.add("geom", type="box", size=[0.1, 0.1, 0.2])
  sites = [torso.add("site", name=f"s{i}", pos=[0.2 * i - 0.1, 0, 0.2]) for i in range(2)]
  torso.add("body", name="head", pos=[0, 0, 0.3]).add("geom", size=[0.08])
  arms = [arm("arm"), arm("arm"), arm()]
  sites[0].attach(arms[0])
  sites[1].attach(arms[1])
  frame = top.worldbody.add("site", pos=[1, 0, 1]).attach(arms[2])
  frame.add("freejoint")
  frame.add("inertial", pos=[0, 0, 0], mass=1.0, diaginertia=[0.1, 0.1, 0.1])
  hand = mjcf.RootElement(model="hand")
  hand.worldbody.add("body", name="palm").add("geom", size=[0.02])
  arms[0].find("site", "tip").attach(hand)
  cable = top.tendon.add("spatial", name="cable")
  cable.add("site", site=sites[0])
  cable.add("site", site=arms[1].find("site", "tip"))
  top.actuator.add("motor", name="pull", tendon=cable)
  top.sensor.add("jointpos", name="elbow_1", joint=arms[1].find("joint", "elbow"))
  return top


def test_the_same_code_compiles_alike_in_both_libraries():
  """The composition written once compiles in jaxmj to the arrays, and the names, that
  MuJoCo compiles from dm_control's XML of it."""
  from mujoco_compare import model_differences

  dm = _dm_control_mjcf()
  if dm is None:
    pytest.skip("dm_control is not installed")
  ours = composed_scene(jaxmj_mjcf)
  m = jaxmj.Model.from_mjcf(ours)
  ref = mujoco.MjModel.from_xml_string(composed_scene(dm).to_xml_string())
  assert model_differences(m, ref) == []
  for kind, count in (("body", ref.nbody), ("joint", ref.njnt), ("geom", ref.ngeom),
                      ("site", ref.nsite), ("actuator", ref.nu), ("sensor", ref.nsensor),
                      ("tendon", ref.ntendon)):
    objtype = getattr(mujoco.mjtObj, f"mjOBJ_{kind.upper()}")
    assert [jaxmj.id2name(m, kind, i) for i in range(count)] == [
      mujoco.mj_id2name(ref, objtype, i) for i in range(count)], kind


def test_attachment_frame_joints_are_named_after_the_frame(mjcf):
  scene, child = part(mjcf, "scene"), part(mjcf, "c")
  frame = scene.attach(child)
  free = frame.add("freejoint")
  assert free.full_identifier == "c/"
  other = part(mjcf, "d")
  slide = scene.attach(other).add("joint", name="j", type="slide")  # 'j' is free here
  assert slide.full_identifier == "d/j/" and scene.find("joint", "j").full_identifier == "j"
  names = [el.get("name") for el in etree.fromstring(scene.to_xml_string()).iter(
    "joint", "freejoint")]
  assert names == ["j", "c/", "c/j", "d/j/", "d/j"]


# ------------------------------------------------------------------ reading


READ_XML = """<mujoco model="r">
  <default><default class="c"><geom rgba="0 1 0 1"/></default></default>
  <worldbody><body name="b"><joint name="j"/><geom name="g" size="1" class="c"/></body>
  </worldbody>
  <actuator><motor name="m" joint="j"/><motor name="lost" joint="nowhere"/></actuator>
  <sensor><framepos name="f" objtype="body" objname="b"/></sensor>
</mujoco>"""


def test_read_references_follow_renames(mjcf):
  root = mjcf.from_xml_string(READ_XML)
  joint, body = root.find("joint", "j"), root.find("body", "b")
  assert root.find("actuator", "m").joint is joint
  assert root.find("sensor", "f").objname is body
  assert root.find("actuator", "lost").joint == "nowhere"  # names of nothing stay names
  root.find("actuator", "lost").remove()  # jaxmj refuses to write a dangling name
  joint.name = "k"
  assert _tree(root.actuator.to_xml_string())[1][2]["joint"] == "k"
  kept = mjcf.from_xml_string(READ_XML, resolve_references=False)
  assert kept.find("actuator", "m").joint == "j"


def test_composed_xml_reads_back_with_escaped_separators(mjcf):
  p, c = part(mjcf, "p"), part(mjcf, "c")
  p.attach(c)
  again = mjcf.from_xml_string(p.to_xml_string(), escape_separators=True)
  assert again.find("joint", "c\\j") is not None
  assert again.find("actuator", "c\\m").joint is again.find("joint", "c\\j")
  with pytest.raises(ValueError):
    mjcf.from_xml_string(p.to_xml_string())  # '/' is PyMJCF's own separator


def test_asset_files_named_later_are_read_from_the_model_directory(mjcf, tmp_path):
  (tmp_path / "cube.stl").write_bytes(box_stl())
  for root in (mjcf.RootElement(model_dir=str(tmp_path)),
               mjcf.RootElement(assets={"cube.stl": box_stl()}),
               mjcf.from_xml_string("<mujoco/>", model_dir=str(tmp_path))):
    mesh = root.asset.add("mesh", name="cube", file="cube.stl")
    assert mesh.file.contents == box_stl() and mesh.file.extension == ".stl"
