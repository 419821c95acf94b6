"""Skins against MuJoCo 4.0: inline and SKN-file skins compile to MuJoCo's skin_* fields
(bones bound to bodies, weights and bind quaternions normalized), names and file paths
included; they change nothing the runtime computes. Real models with skins (dm_control's
dog and rodent) are held in test_dm_control.py."""

import struct

import jax
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from test_compile import check, differences, same_names  # noqa: E402
from test_mesh_asset import CUBE_F, CUBE_V, stl_bytes  # noqa: E402

import jaxmj  # noqa: E402

# A two-link arm; its skin is a strip of 6 vertices, the middle pair shared by both bones
# with weights that do not sum to one, and bind quaternions that are not unit.
ARM = """<mujoco model="skinned arm">{head}
  <asset>
    <texture name="t" type="2d" builtin="checker" width="8" height="8"/>
    <material name="m" texture="t"/>
    {skins}
  </asset>
  <worldbody><geom type="plane" size="1 1 .1"/>
    <body name="upper" pos="0 0 1"><joint axis="0 1 0"/><geom type="capsule" size=".05 .2"/>
      <body name="lower" pos="0 0 -.4"><joint axis="0 1 0"/>
        <geom type="capsule" size=".05 .2"/></body></body>
  </worldbody>
</mujoco>"""
VERT = np.array([[-.1, 0, 1], [.1, 0, 1], [-.1, 0, .6], [.1, 0, .6], [-.1, 0, .2], [.1, 0, .2]])
TEXCOORD = np.array([[0, 0], [1, 0], [0, .5], [1, .5], [0, 1], [1, 1]])
FACE = np.array([[0, 1, 2], [1, 3, 2], [2, 3, 4], [3, 5, 4]])
BONES = [("upper", [0, 0, 1], [2, 0, 0, 0], [0, 1, 2, 3], [1, 1, .3, .7]),
         ("lower", [0, 0, .6], [.7, .1, 0, .7], [2, 3, 4, 5], [.9, .2, 2, 2])]


def _text(a) -> str:
  return " ".join(f"{x:.9g}" for x in np.ravel(a))


def inline_skin(name="strip", extra="") -> str:
  bones = "".join(f'<bone body="{b}" bindpos="{_text(p)}" bindquat="{_text(q)}" '
                  f'vertid="{_text(i)}" vertweight="{_text(w)}"/>' for b, p, q, i, w in BONES)
  return (f'<skin name="{name}" vertex="{_text(VERT)}" texcoord="{_text(TEXCOORD)}" '
          f'face="{_text(FACE)}" {extra}>{bones}</skin>')


def skn_bytes(texcoord=True) -> bytes:
  """mjCSkin::LoadSKN's format: four int32 sizes, vertices, texcoords, faces, then per
  bone a 40-byte body name, bindpos, bindquat, vertex count, ids and weights."""
  tex = TEXCOORD if texcoord else np.zeros((0, 2))
  out = struct.pack("<4i", len(VERT), len(tex), len(FACE), len(BONES))
  out += VERT.astype("<f4").tobytes() + tex.astype("<f4").tobytes()
  out += FACE.astype("<i4").tobytes()
  for body, pos, quat, ids, w in BONES:
    out += body.encode().ljust(40, b"\0") + np.asarray(pos + quat, "<f4").tobytes()
    out += struct.pack("<i", len(ids)) + np.asarray(ids, "<i4").tobytes()
    out += np.asarray(w, "<f4").tobytes()
  return out


def test_inline_skin_matches_mujoco():
  xml = ARM.format(head="", skins=inline_skin(extra='material="m" rgba="1 .5 .2 .8" '
                                                   'inflate=".01" group="2"'))
  m, mj = check(xml)
  same_names(m, mj)
  assert (m.nskin, m.nskinbone, m.nskinbonevert) == (1, 2, 8)
  assert jaxmj.id2name(m, "skin", 0) == "strip" and jaxmj.name2id(m, "skin", "strip") == 0
  total = np.zeros(len(VERT))
  np.add.at(total, m.skin_bonevertid, m.skin_bonevertweight)
  np.testing.assert_allclose(total, 1, rtol=1e-6)


def test_skin_files_with_meshes_before_them(tmp_path):
  """Two SKN skins (one without texcoords, one named by its file) after a file mesh, so
  texcoord addresses, names and their places in MuJoCo's paths buffer are all exercised."""
  (tmp_path / "parts").mkdir()
  (tmp_path / "parts" / "arm.skn").write_bytes(skn_bytes())
  (tmp_path / "parts" / "bare.skn").write_bytes(skn_bytes(texcoord=False))
  (tmp_path / "parts" / "cube.stl").write_bytes(stl_bytes(CUBE_V, CUBE_F))
  skins = ('<mesh file="cube.stl"/><skin name="a" file="arm.skn" material="m"/>'
           '<skin file="bare.skn"/>' + inline_skin("c"))
  (tmp_path / "arm.xml").write_text(ARM.format(head='<compiler meshdir="parts"/>',
                                               skins=skins))
  m = jaxmj.Model.from_xml_path(tmp_path / "arm.xml")
  mj = mujoco.MjModel.from_xml_path(str(tmp_path / "arm.xml"))
  assert differences(m, mj) == []
  same_names(m, mj)
  assert [jaxmj.id2name(m, "skin", i) for i in range(3)] == ["a", "bare", "c"]
  assert list(m.skin_texcoordadr) == [0, -1, 6]
  assert list(m.skin_pathadr) == list(mj.skin_pathadr) and m.skin_pathadr[2] == -1
  assert m.names == bytes(mj.names)  # skins' names between the meshes' and the textures'


def test_skin_changes_no_computation():
  """Skin fields are static and read by no stage: the position stages (all a skin could
  follow) trace to the same program."""
  with_skin = jaxmj.Model.from_xml_string(ARM.format(head="", skins=inline_skin()))
  without = jaxmj.Model.from_xml_string(ARM.format(head="", skins=""))
  jaxpr = lambda m: str(jax.make_jaxpr(jaxmj.fwd_position)(m, jaxmj.make_data(m)))  # noqa: E731
  assert jaxpr(with_skin) == jaxpr(without)


def test_discardvisual_keeps_skins_without_materials():
  check(ARM.format(head='<compiler discardvisual="true"/>',
                   skins=inline_skin(extra='material="m"')))


@pytest.mark.parametrize("file", [False, True])
def test_fusestatic_keeps_the_bodies_bones_follow(file):
  """A jointless body would fuse into its parent, but not while a bone follows it."""
  skins = '<skin file="arm.skn"/>' if file else inline_skin()
  xml = ARM.format(head='<compiler fusestatic="true"/>', skins=skins).replace(
    '<body name="lower" pos="0 0 -.4"><joint axis="0 1 0"/>', '<body name="lower" pos="0 0 -.4">')
  m, _ = check(xml, assets={"arm.skn": skn_bytes()})
  assert m.nbody == 3 and list(m.skin_bonebodyid) == [1, 2]


@pytest.mark.parametrize("skin, message", [
  (inline_skin().replace('body="lower"', 'body="nobody"'), "unknown body 'nobody' in skin"),
  (inline_skin(extra='material="nomat"'), "unknown material 'nomat' in skin"),
  (inline_skin(extra='group="6"'), "skin group must be between 0 and 5"),
  (inline_skin().replace('vertweight="0.9 0.2 2 2"', 'vertweight="0.9 0.2 2 0"'),
   "vertex 5 must have positive total weight in skin"),
  (inline_skin().replace('vertid="2 3 4 5"', 'vertid="2 3 4 6"'), "vertid 6 out of range"),
  (inline_skin().replace('face="0 1 2', 'face="0 1'), "Face data must be multiple of 3"),
  (inline_skin(extra='file="x.skn"'), "Both skin data and file were specified"),
  ('<skin file="x.obj"/>', "Unknown skin file type"),
  ('<skin name="s"/>', "Missing data in skin"),
])
def test_skin_errors(skin, message):
  """jaxmj refuses what MuJoCo refuses, with its reason."""
  xml = ARM.format(head="", skins=skin)
  with pytest.raises(ValueError):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match=message):
    jaxmj.Model.from_xml_string(xml)


def test_truncated_skn_file():
  xml = ARM.format(head="", skins='<skin file="arm.skn"/>')
  with pytest.raises(jaxmj.MJCFError, match="insufficient vertex data for bone 1 in SKN"):
    jaxmj.Model.from_xml_string(xml, assets={"arm.skn": skn_bytes()[:-8]})


def test_an_attached_models_skin_file_binds_the_renamed_bodies():
  """The SKN file names its bones' bodies; attached under a name scope they are
  'arm/upper', 'arm/lower', and the written file says so (as dm_control writes it)."""
  from jaxmj import mjcf

  arm = mjcf.from_xml_string(ARM.format(head="", skins='<skin name="s" file="arm.skn"/>'),
                             assets={"arm.skn": skn_bytes()})
  arm.model = "arm"
  scene = mjcf.RootElement(model="scene")
  scene.attach(arm)
  m = jaxmj.Model.from_mjcf(scene)
  mj = mujoco.MjModel.from_xml_string(scene.to_xml_string(), scene.get_assets())
  assert differences(m, mj) == []
  assert [jaxmj.id2name(m, "body", i) for i in m.skin_bonebodyid] == ["arm/upper", "arm/lower"]


def test_an_attached_skin_bone_name_too_long_for_the_file_is_refused():
  from jaxmj import mjcf

  arm = mjcf.from_xml_string(ARM.format(head="", skins='<skin name="s" file="arm.skn"/>'),
                             assets={"arm.skn": skn_bytes()})
  arm.model = "a_model_name_far_too_long_for_skin_files"
  scene = mjcf.RootElement(model="scene")
  scene.attach(arm)
  with pytest.raises(jaxmj.MJCFError, match="longer than a skin file holds"):
    jaxmj.Model.from_mjcf(scene)
