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


def test_unsupported_user_sizes_are_named():
  with pytest.raises(jaxmj.MJCFError, match="nuser_actuator is not supported"):
    jaxmj.Model.from_xml_string(f'<mujoco><size nuser_actuator="2"/>{BODY}</mujoco>')
