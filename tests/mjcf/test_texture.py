"""Textures and materials against MuJoCo 4.0: builtin textures byte for byte, PNG textures,
materials and the geom/site material ids. Visual only: no physics field may change."""

import io

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from test_compile import check  # noqa: E402

import jaxmj  # noqa: E402


def _model(asset: str, body: str = "") -> str:
  return (f"<mujoco><asset>{asset}</asset><worldbody><geom type='plane' size='1 1 1'/>"
          f"<body pos='0 0 1'><freejoint/><geom size='0.1'/>{body}</body></worldbody></mujoco>")


@pytest.mark.parametrize("ttype", ["2d", "cube", "skybox"])
@pytest.mark.parametrize("builtin", ["gradient", "checker", "flat"])
@pytest.mark.parametrize("mark", ["none", "edge", "cross"])
def test_builtin_textures(ttype, builtin, mark):
  asset = (f"<texture name='t' type='{ttype}' builtin='{builtin}' mark='{mark}' "
           "rgb1='0.9 0.2 0.1' rgb2='0.1 0.3 0.7' markrgb='1 1 0.5' width='7' height='5'/>")
  m, mj = check(_model(asset))
  np.testing.assert_array_equal(m.tex_data, mj.tex_data)


@pytest.mark.parametrize("ttype, shape, grid", [("2d", (3, 5, 3), None),
                                                ("cube", (4, 4, 3), None),
                                                ("skybox", (9, 12, 3), ("3 4", ".U..LFRB.D.."))])
def test_png_textures(ttype, shape, grid):
  from PIL import Image

  buf = io.BytesIO()
  Image.fromarray(np.random.default_rng(1).integers(0, 256, shape).astype(np.uint8)).save(
    buf, format="PNG")
  layout = f" gridsize='{grid[0]}' gridlayout='{grid[1]}'" if grid else ""
  asset = f"<texture name='t' type='{ttype}' file='img.png'{layout}/>"
  m, mj = check(_model(asset), assets={"img.png": buf.getvalue()})
  np.testing.assert_array_equal(m.tex_data, mj.tex_data)


def test_materials_and_ids():
  asset = ("<texture name='grid' type='2d' builtin='checker' width='4' height='4'/>"
           "<texture name='n' type='2d' builtin='flat' width='2' height='2'/>"
           "<material name='a' texture='grid' texrepeat='2 3' texuniform='true' rgba='1 0 0 1'"
           " emission='0.5' specular='0.3' shininess='0.7' reflectance='0.2'/>"
           "<material name='b' class='shiny'><layer texture='n' role='normal'/>"
           "<layer texture='grid' role='rgb'/></material>")
  body = "<geom size='0.05' pos='0.2 0 0' material='b'/><site name='s' material='a'/>"
  xml = _model(asset, body).replace(
    "<mujoco>", "<mujoco><default><default class='shiny'><material specular='0.9' "
    "metallic='0.4'/></default></default>")
  m, mj = check(xml)
  np.testing.assert_array_equal(m.geom_matid, mj.geom_matid)
  np.testing.assert_array_equal(m.site_matid, mj.site_matid)
  np.testing.assert_array_equal(m.mat_texid, mj.mat_texid)


def test_unknown_material_is_an_error():
  with pytest.raises(jaxmj.MJCFError, match="unknown material"):
    jaxmj.Model.from_xml_string(_model("", "<geom size='0.1' material='nope'/>"))


@pytest.mark.parametrize("kind, size", [("skybox", "width='8'"), ("cube", "width='6'"),
                                          ("2d", "width='9' height='5'")])
def test_random_marks_are_mujocos_pixels(kind, size):
  # MuJoCo's randomdot: std::mt19937_64 seeded 42, a draw per pixel (the whole 6-face column
  # of a cube or skybox at once)
  asset = (f"<texture name='t' type='{kind}' builtin='gradient' {size} mark='random' "
           "random='0.2' markrgb='1 1 1'/>")
  m = jaxmj.Model.from_xml_string(_model(asset))
  mj = mujoco.MjModel.from_xml_string(_model(asset))
  for name in ("tex_type", "tex_width", "tex_height", "tex_adr", "tex_nchannel"):
    np.testing.assert_array_equal(getattr(m, name), getattr(mj, name))
  np.testing.assert_array_equal(np.asarray(m.tex_data), mj.tex_data)
  assert np.sum(np.all(mj.tex_data.reshape(-1, 3) == 255, axis=1)) > 0


def test_the_texture_generator_is_mt19937_64():
  from jaxmj.mjcf.assets import mtrand

  # std::mt19937_64's default seed 5489: its first and 10000th outputs (the C++ standard)
  words = mtrand.mt19937_64(5489, 10000)
  assert int(words[0]) == 14514284786278117030 and int(words[-1]) == 9981545732273789042
  # drawn in chunks of blocks (bounded memory), the same sequence across their boundaries
  chunked = np.concatenate(list(mtrand._outputs(5489, 10000, chunk=3)))
  np.testing.assert_array_equal(chunked, words)


def test_texture_default_classes_as_mujoco():
  """MuJoCo 4.0's <default><texture>: a texture takes its class (or the main class)."""
  xml = ('<mujoco><default><texture builtin="checker" width="8" height="8"/><default '
         'class="t"><texture rgb1="1 0 0" builtin="flat" width="4" height="4" type="2d"/>'
         '</default></default><asset><texture name="a" class="t" embed="true"/><texture '
         'name="b" type="2d"/></asset><worldbody/></mujoco>')
  m, mj = jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
  np.testing.assert_array_equal(m.tex_width, mj.tex_width)
  np.testing.assert_array_equal(np.asarray(m.tex_data), mj.tex_data)
  with pytest.raises(jaxmj.MJCFError, match="embed='false'.* not supported by jaxmj"):
    jaxmj.Model.from_xml_string(xml.replace('embed="true"', 'embed="false"'))
