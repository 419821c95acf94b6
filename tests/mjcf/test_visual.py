"""<visual> compiles to mjModel.vis and <statistic> / mj_setConst's scales to mjModel.stat;
neither changes the physics."""

import warnings

import pytest

mujoco = pytest.importorskip("mujoco")

import numpy as np  # noqa: E402
from mujoco_compare import load_both  # noqa: E402

import jaxmj  # noqa: E402

BODY = """<worldbody><geom type="plane" size="3 3 .1"/>
  <body pos="0 0 1"><joint/><geom size=".1"/><site pos="0 .5 0"/>
    <body pos=".4 0 0"><joint type="slide"/><geom type="box" size=".1 .2 .3"/></body></body>
</worldbody>"""
VISUAL = """<visual>
  <global fovy="30" orthographic="true" offwidth="100" ellipsoidinertia="true" azimuth="10"/>
  <quality shadowsize="1024" numslices="10"/><headlight active="0" diffuse="0.3 0.2 0.1"/>
  <map znear="0.1" fogend="20"/><scale com="0.7" frustum="3"/>
  <rgba fog="1 0 0 1" contactgap="0.1 0.2 0.3 0.4"/>
</visual><visual><global ipd="0.1"/></visual>"""


def _vis_differences(m, mj) -> list[str]:
  bad = []
  for sec in ("global_", "quality", "headlight", "map", "scale", "rgba"):
    for k, v in getattr(m.vis, sec).items():
      ref = getattr(getattr(mj.vis, sec), k)
      if k in ("bv", "bvactive") and np.size(ref) == 0:
        continue  # mujoco's Python binding shows these two as empty arrays
      if not np.allclose(np.asarray(v, float), np.asarray(ref, float), rtol=0, atol=1e-7):
        bad.append(f"{sec}.{k}: {v} != {ref}")
  return bad


@pytest.mark.parametrize("head", ["", VISUAL], ids=["defaults", "set"])
def test_visual_matches_mujoco(head):
  m, mj = load_both(xml=f"<mujoco>{head}{BODY}</mujoco>")
  assert _vis_differences(m, mj) == []


def _stat_differences(m, mj) -> list[str]:
  bad = [k for k in ("meaninertia", "meanmass", "meansize", "extent")
         if abs(getattr(m.stat, k) - getattr(mj.stat, k)) > 1e-10]
  if not np.allclose(m.stat.center, mj.stat.center, rtol=0, atol=1e-10):
    bad.append("center")
  return bad


@pytest.mark.parametrize("stat", ["", '<statistic meansize="3" center="1 2 3"/>',
                                  '<statistic extent="0.1" meanmass="2"/>'])
def test_statistic_matches_mujoco(stat):
  m, mj = load_both(xml=f"<mujoco>{stat}{BODY}</mujoco>")
  assert _stat_differences(m, mj) == []


def test_statistic_errors_and_warnings_follow_mujoco():
  with pytest.raises(jaxmj.MJCFError, match="extent must be strictly positive"):
    jaxmj.Model.from_xml_string(f'<mujoco><statistic extent="0"/>{BODY}</mujoco>')
  with pytest.warns(UserWarning, match="meaninertia"):
    m = jaxmj.Model.from_xml_string(f'<mujoco><statistic meaninertia="5"/>{BODY}</mujoco>')
  assert m.stat.meaninertia == 5.0


def test_visual_elements_do_not_change_the_physics():
  plain = jaxmj.Model.from_xml_string(f"<mujoco>{BODY}</mujoco>")
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    dressed = jaxmj.Model.from_xml_string(
      f"<mujoco>{VISUAL}<statistic meaninertia='3'/>"
      + BODY.replace('<joint/>', '<joint/><camera mode="track"/><light/>') + "</mujoco>")
  for name in ("body_mass", "body_inertia", "dof_invweight0", "qpos0", "geom_size"):
    np.testing.assert_array_equal(np.asarray(getattr(plain, name)),
                                  np.asarray(getattr(dressed, name)))


def test_object_model_keeps_visual_cameras_and_custom_data():
  from test_camlight import XML as CAMERAS
  from test_custom import XML as CUSTOM

  from jaxmj import mjcf

  for xml in (f"<mujoco>{VISUAL}{BODY}</mujoco>", CAMERAS, CUSTOM):
    direct = jaxmj.Model.from_xml_string(xml)
    built = jaxmj.Model.from_mjcf(mjcf.from_xml_string(xml))
    assert built.vis == direct.vis and built.stat == direct.stat
    assert (built.ncam, built.nlight, built.nnumeric, built.ntuple) == (
      direct.ncam, direct.nlight, direct.nnumeric, direct.ntuple)
    np.testing.assert_array_equal(built.tuple_objid, direct.tuple_objid)
    np.testing.assert_allclose(built.cam_mat0, direct.cam_mat0, atol=1e-12)


def test_geom_castshadow_through_defaults_and_shellinertia_refused_by_name():
  """castshadow is visual only (kept as geom_castshadow); MuJoCo 4.0's geom shellinertia
  changes mass and inertia and is refused by name when true."""
  xml = ('<mujoco><default><geom castshadow="false"/><default class="c"><geom '
         'castshadow="true"/></default></default><worldbody><geom size=".1"/><body>'
         '<freejoint/><geom class="c" size=".1"/><geom size=".1" shellinertia="{}"/></body>'
         '</worldbody></mujoco>')
  m, mj = load_both(xml=xml.format("false"))
  np.testing.assert_array_equal(m.geom_castshadow, mj.geom_castshadow)
  assert list(m.geom_castshadow) == [False, True, False]
  assert mujoco.MjModel.from_xml_string(xml.format("true")).body_mass[1] != mj.body_mass[1]
  with pytest.raises(jaxmj.MJCFError, match="shellinertia .* not supported by jaxmj"):
    jaxmj.Model.from_xml_string(xml.format("true"))


def test_mesh_site_refused_by_name():
  xml = ('<mujoco><asset><mesh name="m" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/></asset><worldbody>'
         '<body><freejoint/><geom size=".1"/><site type="mesh" mesh="m"/></body></worldbody>'
         '</mujoco>')
  assert mujoco.MjModel.from_xml_string(xml).site_type[0] == mujoco.mjtGeom.mjGEOM_MESH
  with pytest.raises(jaxmj.MJCFError, match="mesh sites are not supported by jaxmj"):
    jaxmj.Model.from_xml_string(xml)
