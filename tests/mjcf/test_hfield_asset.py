"""Heightfield assets against MuJoCo 4.0: inline, PNG and binary elevation, geom sizes.

Each case compiles the same MJCF with jaxmj and mujoco and compares all model fields
(hfield_size/nrow/ncol/adr/data, geom_size/aabb/rbound/dataid, ...). PNG and binary files are
generated here.
"""

import io
import struct

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from test_compile import check  # noqa: E402

import jaxmj  # noqa: E402


def _model(asset: str, geoms: str = "<geom type='hfield' hfield='h'/>") -> str:
  return (f"<mujoco><asset>{asset}</asset><worldbody>{geoms}"
          "<body pos='0 0 2'><freejoint/><geom size='0.1'/></body></worldbody></mujoco>")


def _png(pixels: np.ndarray) -> bytes:
  from PIL import Image

  buf = io.BytesIO()
  Image.fromarray(pixels.astype(np.uint8)).save(buf, format="PNG")
  return buf.getvalue()


@pytest.mark.parametrize("size", ["1 2 3 0.5", "2 1 0.2 1", "0.5 0.5 1 0.1"])
def test_inline_elevation_is_flipped_and_normalized(size):
  asset = (f"<hfield name='h' nrow='3' ncol='4' size='{size}' "
           "elevation='1 2 3 4 5 6 7 8 9 10 11 12'/>")
  m, mj = check(_model(asset))
  # rows are stored bottom (last written) first, scaled to [0, 1]
  np.testing.assert_allclose(np.asarray(m.hfield_data)[:4], [8 / 11, 9 / 11, 10 / 11, 1.0],
                             rtol=1e-6)


def test_allocated_and_flat_fields_are_zero():
  asset = ("<hfield name='h' nrow='2' ncol='3' size='1 1 1 0.1'/>"
           "<hfield name='flat' nrow='2' ncol='2' elevation='3 3 3 3' size='1 1 1 0.1'/>")
  m, _ = check(_model(asset, "<geom type='hfield' hfield='h'/>"
                             "<geom type='hfield' hfield='flat' pos='3 0 0'/>"))
  assert m.nhfielddata == 10 and not np.any(np.asarray(m.hfield_data))


@pytest.mark.parametrize("kind", ["grey_png", "rgb_png", "binary"])
def test_elevation_files(kind):
  rng = np.random.default_rng(0)
  if kind == "grey_png":
    name, data = "terrain.png", _png(rng.integers(0, 256, (5, 7)))
  elif kind == "rgb_png":  # MuJoCo reads the red channel
    name, data = "terrain.png", _png(rng.integers(0, 256, (4, 6, 3)))
  else:
    name = "terrain.bin"
    data = struct.pack("<2i", 3, 5) + rng.normal(size=15).astype("<f4").tobytes()
  asset = f"<hfield name='h' file='{name}' size='1.5 1 0.4 0.2'/>"
  m, _ = check(_model(asset), assets={name: data})
  assert m.nhfield == 1


def test_hfield_geom_in_moving_body_gets_box_mass():
  xml = ("<mujoco><asset><hfield name='h' nrow='2' ncol='2' size='0.2 0.3 0.1 0.05'/></asset>"
         "<worldbody><body><freejoint/><geom type='hfield' hfield='h'/></body></worldbody>"
         "</mujoco>")
  check(xml)


@pytest.mark.parametrize("asset, message", [
  ("<hfield name='h' nrow='2' ncol='2' size='1 1 1 0'/>", "size"),
  ("<hfield name='h' nrow='2' ncol='2' elevation='1 2 3' size='1 1 1 1'/>", "elevation"),
  ("<hfield name='h' nrow='2' ncol='2' size='1 1 1 1'/><hfield name='h' nrow='2' ncol='2' "
   "size='1 1 1 1'/>", "repeated name"),
])
def test_hfield_errors_match_mujoco(asset, message):
  xml = _model(asset)
  with pytest.raises(ValueError):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match=message):
    jaxmj.Model.from_xml_string(xml)


def test_unknown_hfield_is_an_error():
  with pytest.raises(jaxmj.MJCFError, match="unknown hfield"):
    jaxmj.Model.from_xml_string(_model("<hfield name='h' nrow='2' ncol='2' size='1 1 1 1'/>",
                                       "<geom type='hfield' hfield='x'/>"))
