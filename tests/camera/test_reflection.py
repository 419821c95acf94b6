"""Reflections in camera_image against mujoco.Renderer's: a mirror plane, a mirror box's top
face, under model lights and under the headlight alone, and a textured mirror."""

import mujoco
import numpy as np
import pytest
from test_image import _posed

import jaxmj

H, W = 48, 64
RGB_MAE, EDGE_SHARE = 0.008, 0.01  # without the reflections: 0.008-0.013, 3-4% of pixels


def _scene(mirror='type="plane" size="3 3 .1"', light='<light pos="1 -1 3" dir="-.3 .3 -1"/>',
           material=""):
  return f"""<mujoco><asset>{material}<material name="mirror" reflectance=".8"
  rgba=".2 .2 .3 1"/></asset><worldbody>{light}<geom {mirror} material="mirror"/>
<geom type="sphere" size=".4" pos="0 0 .7" rgba="1 .2 .1 1"/>
<geom type="box" size=".3 .2 .25" pos=".9 .4 .5" euler="0 0 30" rgba=".1 .9 .2 1"/>
<camera name="c" pos="0 -3.5 1.2" xyaxes="1 0 0 0 .35 1" fovy="45"/></worldbody></mujoco>"""


def _errors(xml, reflections):
  mjm, m = mujoco.MjModel.from_xml_string(xml), jaxmj.Model.from_xml_string(xml)
  mjd = mujoco.MjData(mjm)
  mujoco.mj_forward(mjm, mjd)
  with mujoco.Renderer(mjm, H, W) as r:
    r.update_scene(mjd, camera="c")
    for flag in ("SHADOW", "HAZE"):
      r.scene.flags[getattr(mujoco.mjtRndFlag, "mjRND_" + flag)] = 0
    ref = r.render() / 255.0
  ours = np.asarray(jaxmj.camera_image(m, _posed(m, mjd), "c", H, W, ("rgb",),
                                       reflections=reflections)["rgb"])
  err = np.abs(ours - ref)
  return err.mean(), (err.max(-1) > 0.25).mean()


@pytest.mark.parametrize("xml", [
  _scene(), _scene(mirror='type="box" size="2 2 .1" pos="0 0 -.1"'), _scene(light=""),
  _scene(material='<texture name="t" type="2d" builtin="checker" rgb1=".8 .8 .8" '
         'rgb2=".3 .3 .3" width="64" height="64"/>').replace(
    'name="mirror"', 'name="mirror" texture="t" texrepeat="2 2" texuniform="true"'),
], ids=["plane", "box", "headlight", "textured"])
def test_a_mirror_shows_the_scene_as_mujocos_renderer_does(gl, xml):
  mae, edges = _errors(xml, True)
  assert mae < RGB_MAE and edges < EDGE_SHARE, (mae, edges)
  assert _errors(xml, False)[1] > 3 * edges  # the reflection is what it checks

