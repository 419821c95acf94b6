"""<compiler> options against mujoco 4.0 on small models; unsupported ones are named."""

import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import load_both, model_differences  # noqa: E402

import jaxmj  # noqa: E402

BODY = """<worldbody>
  <body pos="0 0 1"><joint range="-30 30"/><geom size=".1" group="1"/>
    <geom type="box" size=".01 .2 .3" pos="0 0 .3" group="4"/>
    <body pos=".4 0 0"><joint type="slide" range="-.1 .1"/>
      <inertial pos="0 0 0" mass="1e-4" diaginertia="1e-6 2e-6 2.5e-6"/></body>
    <body pos="0 .4 0"><joint axis="1 0 0"/><geom type="capsule" size=".01 .5"/></body>
  </body>
</worldbody>"""


@pytest.mark.parametrize("compiler", [
  "", 'boundmass="0.01"', 'boundinertia="0.001"', 'balanceinertia="true"',
  'boundmass="0.5" boundinertia="0.1" balanceinertia="true"', 'inertiagrouprange="0 3"',
  'inertiagrouprange="0 1"', 'usethread="false"', 'angle="radian"',
  'fusestatic="false" discardvisual="false" alignfree="false"',
])
def test_compiler_option_matches_mujoco(compiler):
  m, mj = load_both(xml=f"<mujoco><compiler {compiler}/>{BODY}</mujoco>")
  assert model_differences(m, mj) == []


@pytest.mark.parametrize("option", ["fusestatic", "discardvisual", "alignfree"])
def test_unsupported_compiler_option_is_named(option):
  with pytest.raises(jaxmj.MJCFError, match=f"{option}.*not supported by jaxmj yet"):
    jaxmj.Model.from_xml_string(f'<mujoco><compiler {option}="true"/>{BODY}</mujoco>')


def test_inertiagrouprange_leaving_a_moving_body_massless_fails_like_mujoco():
  xml = f'<mujoco><compiler inertiagrouprange="2 5"/>{BODY}</mujoco>'
  with pytest.raises(ValueError, match="mass and inertia"):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match="mass and inertia"):
    jaxmj.Model.from_xml_string(xml)


def test_urdf_is_named_as_unsupported(tmp_path):
  path = tmp_path / "arm.urdf"
  path.write_text('<robot name="r"><link name="base"/></robot>')
  with pytest.raises(jaxmj.MJCFError, match=r"URDF .* not supported by jaxmj yet"):
    jaxmj.Model.from_xml_path(path)
