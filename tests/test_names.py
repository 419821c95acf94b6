"""name2id / id2name for every object type and the names buffer, against mj_name2id /
mj_id2name and mjModel.names of mujoco 4.0.0."""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import jaxmj  # noqa: E402
from jaxmj import ObjType  # noqa: E402

XML = """<mujoco>
  <size nkey="3"/>
  <custom><numeric name="num" data="1 2"/><text name="txt" data="hi"/>
    <tuple name="tup"><element objtype="body" objname="b1"/></tuple></custom>
  <asset>
    <mesh name="tet" vertex="0 0 0 .1 0 0 0 .1 0 0 0 .1"/>
    <hfield name="hf" nrow="2" ncol="2" size="1 1 .1 .1"/>
    <texture name="chk" type="2d" builtin="checker" width="8" height="8"/>
    <material name="mat" texture="chk"/><material name="plain"/>
  </asset>
  <worldbody>
    <light name="sun" pos="0 0 3"/><light pos="0 1 3"/>
    <camera name="cam"/>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <geom type="hfield" hfield="hf" pos="5 0 0"/>
    <body name="b1" pos="0 0 1"><freejoint name="free"/><geom name="g1" size=".1"/>
      <site name="s1"/><site/>
      <body name="b2"><joint name="hinge"/><joint/><geom type="mesh" mesh="tet"/>
        <site name="s2" pos=".1 0 0"/></body>
    </body>
    <body><joint type="slide"/><geom size=".1" pos="1 0 0"/></body>
  </worldbody>
  <contact><pair name="p" geom1="floor" geom2="g1"/><pair geom1="floor" geom2="g1"/>
    <exclude name="ex" body1="b1" body2="b2"/></contact>
  <equality><connect name="eq" body1="b1" body2="b2" anchor="0 0 0"/></equality>
  <tendon><spatial name="ten"><site site="s1"/><site site="s2"/></spatial></tendon>
  <actuator><motor name="act" joint="hinge"/><motor tendon="ten"/></actuator>
  <sensor><jointpos name="sen" joint="hinge"/><touch site="s1"/></sensor>
  <keyframe><key name="home"/><key/></keyframe>
</mujoco>"""

COUNTS = {ObjType.BODY: "nbody", ObjType.XBODY: "nbody", ObjType.JOINT: "njnt",
          ObjType.DOF: "nv", ObjType.GEOM: "ngeom", ObjType.SITE: "nsite",
          ObjType.CAMERA: "ncam", ObjType.LIGHT: "nlight", ObjType.FLEX: "nflex",
          ObjType.MESH: "nmesh", ObjType.SKIN: "nskin", ObjType.HFIELD: "nhfield",
          ObjType.TEXTURE: "ntex", ObjType.MATERIAL: "nmat", ObjType.PAIR: "npair",
          ObjType.EXCLUDE: "nexclude", ObjType.EQUALITY: "neq", ObjType.TENDON: "ntendon",
          ObjType.ACTUATOR: "nu", ObjType.SENSOR: "nsensor", ObjType.NUMERIC: "nnumeric",
          ObjType.TEXT: "ntext", ObjType.TUPLE: "ntuple", ObjType.KEY: "nkey",
          ObjType.PLUGIN: "nplugin"}


@pytest.fixture(scope="module")
def models():
  return jaxmj.Model.from_xml_string(XML), mujoco.MjModel.from_xml_string(XML)


def test_every_object_type_is_covered():
  assert set(COUNTS) == set(ObjType) - {ObjType.UNKNOWN}


@pytest.mark.parametrize("objtype", COUNTS, ids=lambda t: t.name.lower())
def test_id2name_and_name2id_match_mujoco(models, objtype):
  m, mj = models
  mjtype = mujoco.mjtObj(int(objtype))
  n = getattr(mj, COUNTS[objtype])
  for i in range(n):
    name = mujoco.mj_id2name(mj, mjtype, i)
    assert jaxmj.id2name(m, objtype, i) == name, i
    assert jaxmj.id2name(m, objtype.name.lower(), i) == name, i
    if name is not None:
      assert jaxmj.name2id(m, objtype, name) == mujoco.mj_name2id(mj, mjtype, name)
  for name in ("nope", ""):
    assert jaxmj.name2id(m, objtype, name) == mujoco.mj_name2id(mj, mjtype, name) == -1
  with pytest.raises(IndexError):  # MuJoCo returns NULL out of range; jaxmj says so
    jaxmj.id2name(m, objtype, n)


def test_names_buffer_and_addresses_match_mujoco(models):
  m, mj = models
  assert bytes(m.names).rstrip(b"\0") == bytes(mj.names).rstrip(b"\0")
  for field in (f for f in dir(mj) if f.startswith("name_") and getattr(mj, f).size):
    np.testing.assert_array_equal(np.ravel(getattr(m, field)), np.ravel(getattr(mj, field)),
                                  err_msg=field)
