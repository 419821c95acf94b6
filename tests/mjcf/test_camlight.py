"""<camera> and <light> compile to mjModel's cam_* / light_* fields, and their global poses
(mj_camlight) match mj_forward's in every mode."""

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from mujoco_compare import load_both, model_differences, random_state  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj import io  # noqa: E402
from jaxmj.smooth import camlight, com, kinematics  # noqa: E402


@jax.jit
def _poses(m, d):
  """The stages mj_camlight needs, then mj_camlight (as forward.fwd_position runs them)."""
  return camlight.camlight(m, com.com_pos(m, kinematics.kinematics(m, d)))

XML = """<mujoco><compiler angle="radian"/>
<default><camera fovy="50"/><light diffuse="0.5 0.4 0.3"/>
  <default class="c"><camera mode="trackcom" ipd="0.1"/><light castshadow="false"/></default>
</default>
<worldbody>
  <light name="sun" directional="true" pos="0 0 5" dir="0 1 -1"/>
  <camera name="fixed" pos="1 2 3" xyaxes="1 0 0 0 0.6 0.8"/>
  <camera name="world_tc" class="c" pos="0 -3 1" euler="1 0 0"/>
  <body name="a" pos="0 0 1">
    <freejoint/><geom size=".1" pos=".2 0 0"/>
    <frame pos="0.1 0 0" euler="0 0.3 0">
      <camera name="track" mode="track" pos="0 0 2" quat="1 0.2 0 0"/>
      <light name="spot" mode="targetbodycom" target="b" pos="0 0 1" dir="1 0 0"/>
    </frame>
    <body name="b" pos="0.3 0 0">
      <joint axis="0 1 0"/><geom type="capsule" size=".05 .2" euler="0 1 0"/>
      <camera name="tgt" mode="targetbody" target="a" pos="0.5 0.5 0.5" resolution="640 480"
              sensorsize="0.004 0.003" focalpixel="500 500" principalpixel="320 240"/>
      <camera name="tgtcom" mode="targetbodycom" target="world" pos="0 0.4 0"
              projection="orthographic" user="1 2 3"/>
      <light class="c" mode="track" type="point" attenuation="1 0.1 0" softness="0.5"/>
      <light mode="trackcom" intensity="3" bulbradius="0.1" range="4"/>
      <light mode="targetbody" target="a" pos="0 0 1" active="false" cutoff="30"/>
      <camera mode="track" output="depth rgb" focal="0.01 0.02" sensorsize="0.01 0.01"/>
    </body>
  </body>
</worldbody></mujoco>"""


def test_camera_and_light_fields_match_mujoco():
  m, mj = load_both(xml=XML)
  assert (m.ncam, m.nlight) == (6, 5)
  assert model_differences(m, mj) == []
  assert jaxmj.name2id(m, jaxmj.ObjType.CAMERA, "tgtcom") == 4
  assert jaxmj.name2id(m, jaxmj.ObjType.LIGHT, "spot") == 1


@pytest.mark.parametrize("seed", [0, 1])
def test_camera_and_light_poses_match_mj_forward(seed):
  m, mj = load_both(xml=XML)
  dj = random_state(m, mj, seed)
  mujoco.mj_forward(mj, dj)
  d = io.make_data(m).replace(qpos=jax.numpy.asarray(dj.qpos))
  d = _poses(m, d)
  for name in ("cam_xpos", "cam_xmat", "light_xpos", "light_xdir"):
    ours = np.asarray(getattr(d, name)).reshape(getattr(dj, name).shape)
    np.testing.assert_allclose(ours, getattr(dj, name), atol=1e-10, err_msg=name)


def test_zero_light_direction_is_an_error():
  with pytest.raises(jaxmj.MJCFError, match="zero direction"):
    jaxmj.Model.from_xml_string('<mujoco><worldbody><light dir="0 0 0"/></worldbody></mujoco>')


def test_unknown_camera_target_is_named():
  with pytest.raises(jaxmj.MJCFError, match="target"):
    jaxmj.Model.from_xml_string('<mujoco><worldbody><camera mode="targetbody" target="x"/>'
                                '</worldbody></mujoco>')


@pytest.mark.parametrize("visual", ["", '<visual><map znear="0.03"/></visual>'
                                        '<visual><map zfar="9"/></visual>'])
def test_camera_intrinsic_defaults_to_znear_like_mujoco(visual):
  """Without a sensor size, MuJoCo 4.0 sets a camera's focal lengths to the near clip plane
  (<visual><map znear>, wherever the section is); with one, they stay as written."""
  xml = ('<mujoco><worldbody><camera/><camera sensorsize="1 0"/><camera sensorsize="1 1" '
         'resolution="10 10" focal="1 2"/><body><geom size=".1"/></body></worldbody>'
         f"{visual}</mujoco>")
  m, mj = load_both(xml=xml)
  np.testing.assert_array_equal(np.asarray(m.cam_intrinsic), mj.cam_intrinsic)
