"""Textures in camera_image against mujoco.Renderer: 2D textures on planes (finite and
infinite planes, texrepeat, texuniform, a moved and turned plane, oblique views through the
mipmaps, an image file in linear and sRGB colour, the dm_control suite's grid floors) and
cube textures on primitives; and their gradients."""

import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from test_image import _load, _posed

import jaxmj

H, W = 48, 64
# mean absolute RGB error over the image, and the share of pixels off by more than 0.25 in a
# channel (the checks' edges, where OpenGL's rasterized texels and the rays' differ)
RGB_MAE, EDGE_SHARE = 0.02, 0.05


def _checker(size="2 2 .1", repeat="1 1", uniform="true", pos="0 0 0", euler="0 0 0",
             texels=64, camera='pos="0 0 5"', builtin="checker"):
  """A red and blue checker on a plane under a white ambient headlight (no shading)."""
  return f"""<mujoco><visual><headlight ambient="1 1 1" diffuse="0 0 0" specular="0 0 0"/>
</visual><asset><texture name="t" type="2d" builtin="{builtin}" rgb1="1 0 0" rgb2="0 0 1"
  width="{texels}" height="{texels}"/>
<material name="m" texture="t" texrepeat="{repeat}" texuniform="{uniform}" specular="0"/>
</asset><worldbody><geom type="plane" size="{size}" material="m" pos="{pos}" euler="{euler}"/>
<camera name="c" {camera} fovy="60"/></worldbody></mujoco>"""


def _rgb_error(xml_or_path, cam, skybox=False):
  mjm, m = _load(xml_or_path)
  mjd = mujoco.MjData(mjm)
  mujoco.mj_forward(mjm, mjd)
  with mujoco.Renderer(mjm, H, W) as r:
    r.update_scene(mjd, camera=cam)
    for flag in ("SHADOW", "REFLECTION", "SKYBOX", "HAZE"):
      r.scene.flags[getattr(mujoco.mjtRndFlag, "mjRND_" + flag)] = skybox and flag == "SKYBOX"
    ref = r.render() / 255.0
  ours = np.asarray(jaxmj.camera_image(m, _posed(m, mjd), cam, H, W, ("rgb",),
                                       skybox=skybox)["rgb"])
  err = np.abs(ours - ref)
  return err.mean(), (err.max(-1) > 0.25).mean()


@pytest.mark.parametrize("scene", [
  _checker(), _checker(size="2 3 .1", repeat="1.5 .7"), _checker(uniform="false", repeat="3 2"),
  _checker(size="0 0 .1"), _checker(size="0 2 .1"),
  _checker(pos=".3 .2 .1", euler="0 0 30", repeat="1 2"),
  _checker(size="5 5 .1", camera='pos="0 -4 2" xyaxes="1 0 0 0 .5 1"'),
  _checker(size="0 0 .1", texels=256, repeat="4 4", camera='pos="0 -4 1" xyaxes="1 0 0 0 .3 1"'),
  _checker(builtin="gradient", camera='pos="0 -3 2" xyaxes="1 0 0 0 .6 1"'),
], ids=["uniform", "repeat", "not-uniform", "infinite", "half-infinite", "moved", "oblique",
        "far-mipmaps", "gradient"])
def test_a_textured_plane_looks_as_in_mujocos_renderer(gl, scene):
  mae, edges = _rgb_error(scene, "c")
  assert mae < RGB_MAE and edges < EDGE_SHARE, (mae, edges)


@pytest.mark.parametrize("name, cam, skybox", [
  ("walker", 0, False), ("cartpole", 0, True), ("swimmer", 0, True), ("hopper", -1, True)])
def test_dm_control_scenes_look_as_in_mujocos_renderer(gl, name, cam, skybox):
  # untextured: 0.2-0.7 mean error; without the skybox (against MuJoCo's): 0.06-0.27
  suite = pytest.importorskip("dm_control.suite")
  path = os.path.join(os.path.dirname(suite.__file__), name + ".xml")
  mae, edges = _rgb_error(path, cam, skybox)
  assert mae < RGB_MAE and edges < EDGE_SHARE, (mae, edges)


def test_a_skybox_is_drawn_behind_everything_by_the_rays_direction(gl):
  # a gradient skybox (six faces) seen from a camera looking up and sideways, around a
  # sphere; in the soft image too
  xml = _checker(camera='pos="0 0 1" xyaxes="0 1 0 -.3 0 1"').replace(
    "</asset>", '<texture type="skybox" builtin="gradient" rgb1=".9 .6 .1" rgb2=".1 .2 .8" '
    'width="64" height="384"/></asset>').replace(
    "<camera", '<geom type="sphere" size=".3" pos="1.5 0 1.2"/><camera')
  mae, edges = _rgb_error(xml, "c", skybox=True)
  assert mae < RGB_MAE and edges < EDGE_SHARE, (mae, edges)
  m = jaxmj.Model.from_xml_string(xml)
  d = jax.jit(jaxmj.forward)(m, jaxmj.make_data(m))
  exact, soft = (np.asarray(jaxmj.camera_image(m, d, "c", 24, 32, ("rgb", "segmentation"),
                                               softness=s)["rgb"]) for s in (None, 1e-4))
  sky = np.asarray(jaxmj.camera_image(m, d, "c", 24, 32, ("segmentation",))[
    "segmentation"])[..., 0] < 0
  assert sky.mean() > 0.2 and exact[sky].max() > 0.5
  np.testing.assert_allclose(soft[sky], exact[sky], atol=1e-6)
  none = np.asarray(jaxmj.camera_image(m, d, "c", 24, 32, ("rgb",), skybox=False)["rgb"])
  assert np.all(none[sky] == 0)


def _cube(geom, uniform="false", texture='width="32" height="32"'):
  """A red and blue cube checker (six faces) on one turned primitive."""
  return f"""<mujoco><visual><headlight ambient="1 1 1" diffuse="0 0 0" specular="0 0 0"/>
</visual><asset><texture name="t" type="cube" builtin="checker" rgb1="1 0 0" rgb2="0 0 1"
  {texture}/><material name="m" texture="t" texuniform="{uniform}" specular="0"/></asset>
<worldbody><geom {geom} material="m" euler="10 20 30"/>
<camera name="c" pos="0 -3 1.5" xyaxes="1 0 0 0 .5 1" fovy="45"/></worldbody></mujoco>"""


@pytest.mark.parametrize("scene", [
  _cube('type="sphere" size=".8"'), _cube('type="box" size=".6 .4 .5"'),
  _cube('type="box" size=".6 .4 .5"', uniform="true"),
  _cube('type="ellipsoid" size=".8 .5 .6"'), _cube('type="cylinder" size=".5 .6"'),
  _cube('type="sphere" size=".8"', texture='width="151" height="151" mark="cross"'),
  _cube('type="box" size=".6 .6 .6"', texture='width="32" height="192"').replace(
    "checker", "gradient"),
], ids=["sphere", "box", "box-uniform", "ellipsoid", "cylinder", "marked", "gradient"])
def test_a_cube_texture_looks_as_in_mujocos_renderer(gl, scene):
  mae, edges = _rgb_error(scene, "c")
  assert mae < RGB_MAE and edges < EDGE_SHARE, (mae, edges)


@pytest.mark.parametrize("colorspace", ["linear", "sRGB"])
def test_an_image_texture_looks_as_in_mujocos_renderer(gl, colorspace):
  # an sRGB texture is sampled as linear values and shown so: darker than its file
  control = pytest.importorskip("dm_control")
  png = os.path.join(os.path.dirname(control.__file__), "mjcf", "test_assets", "textures",
                     "deepmind.png")
  xml = _checker(uniform="false", camera='pos="0 0 4"').replace(
    'builtin="checker" rgb1="1 0 0" rgb2="0 0 1"\n  width="64" height="64"',
    f'file="{png}" colorspace="{colorspace}"')
  assert png in xml
  mae, edges = _rgb_error(xml, "c")
  assert mae < RGB_MAE and edges < EDGE_SHARE, (mae, edges)  # sRGB read as linear: 0.08


def test_a_textured_image_is_differentiable():
  # the camera's height moves where the rays meet a smooth (gradient) texture and changes
  # their footprint (mipmap level): the gradient matches central differences, and stays
  # finite over the whole image, background pixels included
  m = jaxmj.Model.from_xml_string(_checker(builtin="gradient", camera='pos="0 -3 2" '
                                           'xyaxes="1 0 0 0 .6 1"'))
  d = jax.jit(jaxmj.forward)(m, jaxmj.make_data(m))

  def patch(z):
    moved = d.replace(cam_xpos=d.cam_xpos.at[0, 2].set(z))
    return jaxmj.camera_image(m, moved, 0, 12, 16, ("rgb",))["rgb"][4:8, 6:10].sum()

  z = float(d.cam_xpos[0, 2])
  grad = float(jax.grad(patch)(z))
  eps = 1e-5
  fd = (float(patch(z + eps)) - float(patch(z - eps))) / (2 * eps)
  assert abs(grad) > 1e-3 and grad == pytest.approx(fd, rel=1e-4)
  full = jax.grad(lambda z: jaxmj.camera_image(
    m, d.replace(cam_xpos=d.cam_xpos.at[0, 2].set(z)), 0, 12, 16, ("rgb",))["rgb"].sum())(z)
  assert np.isfinite(float(full))


def test_textures_jaxmj_does_not_map_leave_the_material_colour():
  # a cube texture on a plane is not drawn (nor a 2D texture on a primitive, by the
  # primitives' own texture coordinates): the material's colour stays, as untextured
  plain = _checker().replace('material="m" ', 'rgba="1 1 1 1" ')
  cube = _checker().replace('type="2d"', 'type="cube"')
  images = []
  for xml in (plain, cube):
    m = jaxmj.Model.from_xml_string(xml)
    d = jax.jit(jaxmj.forward)(m, jaxmj.make_data(m))
    images.append(np.asarray(jaxmj.camera_image(m, d, 0, 12, 16, ("rgb",))["rgb"]))
  np.testing.assert_allclose(images[0], images[1], atol=1e-6)
  assert jnp.all(jnp.asarray(images[0]) >= 0)
