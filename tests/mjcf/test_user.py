"""`user` attributes and <size nuser_*> compile to mjModel's *_user arrays."""

import pytest

mujoco = pytest.importorskip("mujoco")

import numpy as np  # noqa: E402
from mujoco_compare import load_both, model_differences  # noqa: E402

import jaxmj  # noqa: E402

BODY = """<worldbody><body user="1 2"><joint user="3"/><geom size="1" user="1 2 3"/>
  <site user="4"/></body><camera user="1"/><camera/></worldbody>"""
FIELDS = ("body_user", "jnt_user", "geom_user", "site_user", "cam_user", "nuser_body",
          "nuser_jnt", "nuser_geom", "nuser_site", "nuser_cam")


@pytest.mark.parametrize("head", [
  "", '<size nuser_body="4" nuser_jnt="2" nuser_cam="3"/>',
  '<default><geom user="5 6"/><joint user="7"/></default>', '<size memory="1M"/>',
  '<size njmax="10" nconmax="5"/>',
])
def test_user_arrays_match_mujoco(head):
  m, mj = load_both(xml=f"<mujoco>{head}{BODY}</mujoco>")
  assert model_differences(m, mj) == []
  for name in FIELDS:
    assert np.array_equal(getattr(m, name), getattr(mj, name)), name


@pytest.mark.parametrize("size", ['nuser_geom="0"', 'nuser_body="1"', 'nuser_cam="0"'])
def test_too_many_user_values_is_an_error(size):
  xml = f"<mujoco><size {size}/>{BODY}</mujoco>"
  with pytest.raises(ValueError, match="more values than"):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match="more values than"):
    jaxmj.Model.from_xml_string(xml)


# Tendon and actuator user data also come from default classes (every actuator shortcut
# shares the class's actuator defaults); sensors have none.
ELEMENTS = """<default><tendon user="7 8"/><motor user="5"/>
  <default class="c"><general user="9 9 9"/></default></default>
<worldbody><site name="a"/><body><joint name="j"/><geom size=".1"/><site name="b" pos="1 0 0"/>
  </body></worldbody>
<tendon><spatial user="1 2"><site site="a"/><site site="b"/></spatial>
  <fixed><joint joint="j" coef="1"/></fixed></tendon>
<actuator><motor joint="j" user="1 2"/><motor joint="j"/><general joint="j"/>
  <position class="c" joint="j" kp="1"/></actuator>
<sensor><jointpos joint="j" user="1 2"/><jointvel joint="j"/></sensor>"""


@pytest.mark.parametrize("size", ["", 'nuser_tendon="3" nuser_actuator="4" nuser_sensor="2"'])
def test_tendon_actuator_sensor_user_match_mujoco(size):
  m, mj = load_both(xml=f"<mujoco><size {size}/>{ELEMENTS}</mujoco>")
  assert model_differences(m, mj) == []
  for kind in ("tendon", "actuator", "sensor"):
    assert getattr(m, f"nuser_{kind}") == getattr(mj, f"nuser_{kind}")
    assert np.array_equal(getattr(m, f"{kind}_user"), getattr(mj, f"{kind}_user")), kind


@pytest.mark.parametrize("size", ['nuser_tendon="1"', 'nuser_actuator="2"', 'nuser_sensor="0"'])
def test_too_many_tendon_actuator_sensor_user_values_is_an_error(size):
  xml = f"<mujoco><size {size}/>{ELEMENTS}</mujoco>"
  with pytest.raises(ValueError, match="more values than"):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match="more values than"):
    jaxmj.Model.from_xml_string(xml)
