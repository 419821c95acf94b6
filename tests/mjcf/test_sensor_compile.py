"""<sensor> compiles to mjModel's sensor_* fields, and bad sensor MJCF is named precisely."""

import pytest

mujoco = pytest.importorskip("mujoco")

import numpy as np  # noqa: E402
from conftest import MODELS  # noqa: E402
from mujoco_compare import load_both, model_differences  # noqa: E402

import jaxmj  # noqa: E402

BODY = """
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <site name="ws" type="box" size=".5 .5 .5"/>
    <body name="b" pos="0 0 1">
      <joint name="hinge" range="-1 1"/>
      <joint name="ball" type="ball"/>
      <geom name="g" size=".1"/>
      <site name="s" pos=".1 0 0"/>
      <camera name="c1" resolution="8 6"/>
      <body name="c" pos=".3 0 0">
        <joint name="slide" type="slide" axis="1 0 0"/>
        <geom name="g2" type="box" size=".1 .05 .05"/>
        <site name="s2"/>
      </body>
    </body>
  </worldbody>"""


def wrap(sensors: str, extra: str = "") -> str:
  return f"<mujoco>{BODY}{extra}<sensor>{sensors}</sensor></mujoco>"


EVERY = """
  <touch site="s" name="touch"/><accelerometer site="s" cutoff="3"/><velocimeter site="s"/>
  <gyro site="s2" noise="0.1"/><force site="s2"/><torque site="s2" user="1 2 3"/>
  <magnetometer site="s"/><rangefinder site="s" data="dist dir point normal"/>
  <rangefinder camera="c1" data="origin depth"/>
  <jointpos joint="hinge"/><jointvel joint="slide"/><jointactuatorfrc joint="hinge"/>
  <ballquat joint="ball"/><ballangvel joint="ball"/><jointlimitpos joint="hinge"/>
  <jointlimitvel joint="hinge"/><jointlimitfrc joint="hinge"/>
  <framepos objtype="body" objname="c" reftype="site" refname="s"/>
  <framequat objtype="xbody" objname="b"/><framexaxis objtype="geom" objname="g2"/>
  <frameyaxis objtype="site" objname="s" reftype="xbody" refname="c"/>
  <framezaxis objtype="body" objname="b"/><framelinvel objtype="site" objname="s2"/>
  <frameangvel objtype="geom" objname="g" reftype="body" refname="c"/>
  <framelinacc objtype="xbody" objname="c"/><frameangacc objtype="site" objname="s"/>
  <subtreecom body="b"/><subtreelinvel body="world"/><subtreeangmom body="c" name="am"/>
  <insidesite objtype="geom" objname="g2" site="ws"/>
  <insidesite objtype="body" objname="c" site="ws" enclosed="true"/>
  <distance geom1="g" geom2="g2" cutoff="1"/><normal body1="b" geom2="floor"/>
  <fromto geom1="g" body2="c"/>
  <contact name="c1"/><contact geom1="g" num="3" data="found force dist pos" reduce="mindist"/>
  <contact body1="b" subtree2="c" data="linvel angvel"/>
  <contact site="ws" body2="c" reduce="netforce" data="force torque"/>
  <e_potential/><e_kinetic/><clock cutoff="5"/>
  <camprojection site="s2" camera="c1"/><framepos objtype="camera" objname="c1"/>
"""


def test_every_sensor_element_compiles_as_mujoco():
  m, mj = load_both(xml=wrap(EVERY))
  assert model_differences(m, mj) == []
  for i in range(mj.nsensor):
    assert (jaxmj.id2name(m, "sensor", i) or "") == (mujoco.mj_id2name(
      mj, mujoco.mjtObj.mjOBJ_SENSOR, i) or "")
  assert jaxmj.name2id(m, "sensor", "am") == mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_SENSOR,
                                                                 "am")


def test_tendon_and_actuator_sensors_compile_as_mujoco():
  extra = """<tendon><fixed name="t" range="-1 1"><joint joint="hinge" coef="1"/></fixed></tendon>
    <actuator><motor name="a" joint="hinge"/><motor name="at" tendon="t"/></actuator>"""
  sensors = """<tendonpos tendon="t"/><tendonvel tendon="t"/><tendonactuatorfrc tendon="t"/>
    <tendonlimitpos tendon="t"/><actuatorpos actuator="at"/><actuatorvel actuator="a"/>
    <actuatorfrc actuator="at"/>"""
  m, mj = load_both(xml=wrap(sensors, extra))
  assert model_differences(m, mj) == []


def test_history_fields_compile_as_mujoco():
  sensors = """<jointpos joint="hinge" nsample="3" interp="linear" delay="0.002"/>
    <accelerometer site="s" nsample="2" interp="cubic"/><clock/>"""
  m, mj = load_both(xml=wrap(sensors))
  assert model_differences(m, mj) == []


def test_sensors_model_compiles_as_mujoco():
  m, mj = load_both(f"{MODELS}/sensors.xml")
  assert model_differences(m, mj) == []
  assert m.nsensordata == mj.nsensordata > 0
  assert isinstance(m.sensor_cutoff, jaxmj.types.jax.Array)  # a leaf: vmappable


def test_no_sensors():
  m, mj = load_both(xml=f"<mujoco>{BODY}</mujoco>")
  assert m.nsensor == 0 and m.sensor_type.shape == (0,) and m.sensor_intprm.shape == (0, 3)
  d = jaxmj.make_data(m)
  assert d.sensordata.shape == (0,) and d.cacc.shape == (mj.nbody, 6)


@pytest.mark.parametrize("sensors, attribute, message", [
  ('<jointpos joint="nope"/>', "joint", "unknown joint 'nope'"),
  ("<gyro/>", "site", "missing required attribute 'site'"),
  ('<framezaxis objtype="site" objname="s" cutoff="1"/>', "cutoff", "axis or quaternion"),
  ('<framepos objname="s"/>', "objtype", "objtype and objname"),
  ('<framepos objtype="site" objname="s" refname="b"/>', "reftype", "together"),
  ('<rangefinder site="s" data="point dist"/>', "data", "order"),
  ('<contact data="found bogus"/>', "data", "unknown data type 'bogus'"),
  ('<distance geom1="g"/>', "geom2", "exactly one of geom2 and body2"),
  ('<distance geom1="g" body1="b" geom2="g2"/>', "body1", "at most one"),
  ('<contact num="0"/>', "num", "positive"),
  ('<clock name="x"/><clock name="x"/>', "name", "repeated sensor name 'x'"),
  ('<camprojection site="s" camera="cam"/>', "camera", "unknown camera 'cam'"),
  ('<rangefinder camera="c1" site="s"/>', "camera", "at most one of site and camera"),
  ('<jointpos joint="hinge" delay="0.01"/>', "delay", "nsample"),
  ('<jointpos joint="ball"/>', "joint", "slide or hinge"),
  ('<ballangvel joint="slide"/>', "joint", "must be ball"),
  ('<jointlimitfrc joint="slide"/>', "joint", "must be limited"),
])
def test_bad_sensors_are_named(sensors, attribute, message):
  xml = wrap(sensors)
  with pytest.raises(jaxmj.MJCFError, match=message) as info:
    jaxmj.Model.from_xml_string(xml)
  assert info.value.attribute == attribute
  with pytest.raises(ValueError):  # MuJoCo agrees the file is bad
    mujoco.MjModel.from_xml_string(xml)


def test_contact_section_takes_no_sensor_attributes():
  xml = f'<mujoco>{BODY}<contact geom1="g"/></mujoco>'
  with pytest.raises(jaxmj.MJCFError, match="unknown attribute 'geom1'"):
    jaxmj.Model.from_xml_string(xml)


@pytest.mark.parametrize("tag, what", [("user", "user sensors"), ("tactile", "tactile"),
                                       ("plugin", "plugins")])
def test_unsupported_sensor_elements(tag, what):
  with pytest.raises(jaxmj.MJCFError, match=what):
    jaxmj.Model.from_xml_string(wrap(f"<{tag}/>"))


def test_cutoff_and_noise_are_leaves():
  m = jaxmj.Model.from_xml_string(wrap(EVERY))
  np.testing.assert_allclose(m.sensor_noise[3], 0.1)
  np.testing.assert_allclose(m.sensor_cutoff[1], 3.0)
