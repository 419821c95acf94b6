"""Per-tile culling (jaxmj/collision/raycast/cull.py) changes nothing in the images: a grid of many
primitives rendered with and without it, with candidate lists short enough to overflow, at
an image size that is not a whole number of tiles; and its gradients are the finite
differences'."""

import os
import sys

import jax
import numpy as np
import pytest
from conftest import ROOT

import jaxmj
from jaxmj.collision.raycast import cull

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import bench_camera  # noqa: E402

LOW_CAMERA = ('<camera name="low" pos="0 -1.6 .5" xyaxes="1 0 0 0 .3 1" fovy="60"/>'
              '<camera name="ortho" pos="0 -1.6 1" xyaxes="1 0 0 0 .6 1" fovy="1.4" '
              'projection="orthographic"/>')


def grid_xml():
  """bench_camera's grid of the five primitive types, 6 x 6, seen by a low camera and an
  orthographic one."""
  return bench_camera.grid_xml(6, camera=LOW_CAMERA)


@pytest.fixture(scope="module")
def grid():
  m = jaxmj.Model.from_xml_string(grid_xml())
  return m, jax.jit(jaxmj.forward)(m, jaxmj.make_data(m))


@pytest.mark.parametrize("cam, k", [(-1, 1), (-1, 3), ("low", 2), ("ortho", 2)])
def test_culled_images_equal_unculled_ones(grid, cam, k):
  m, d = grid
  h, w = 21, 30  # 3 x 4 tiles of 8, the last ones partly outside the image

  @jax.jit
  def images(d):
    return (jaxmj.camera_image(m, d, cam, h, w, tile=None),
            jaxmj.camera_image(m, d, cam, h, w, tile=8, tile_candidates=k))

  full, culled = images(d)
  np.testing.assert_array_equal(culled["segmentation"], full["segmentation"])
  np.testing.assert_allclose(culled["depth"], full["depth"], rtol=1e-12)
  np.testing.assert_allclose(culled["rgb"], full["rgb"], atol=1e-12)
  assert len(np.unique(full["segmentation"][..., 0])) > 10


def test_a_tile_sees_the_geoms_its_pixels_hit_and_few_others(grid):
  """Every geom a tile's pixels hit is among its candidates (conservative), and tiles list
  far fewer candidates than there are geoms (the culling culls)."""
  m, d = grid
  h = w = 32
  seg = np.asarray(jaxmj.camera_image(m, d, -1, h, w, ("segmentation",), tile=None)[
    "segmentation"])[..., 0]
  origin, local = (cull.to_tiles(a, 8) for a in jaxmj.camera.frustum.pixel_rays(m, -1, h, w))
  pos, mat = jaxmj.camera.frustum.camera_pose(m, d, -1)
  tiles = cull.Tiles(*cull.tile_planes(origin, local, False), 4, pos, mat)
  boxes = np.flatnonzero(m.geom_type == jaxmj.GeomType.BOX)
  order, count = cull.tile_candidates(tiles, jaxmj.GeomType.BOX, m.geom_size[boxes],
                                      d.geom_xpos[boxes])
  seen = cull.to_tiles(seg, 8)
  for t in range(len(count)):
    listed = set(boxes[np.asarray(order[t, :int(count[t])])])
    assert set(np.unique(seen[t])) & set(boxes) <= listed
  assert np.asarray(count).mean() < len(boxes) / 2


def test_gradients_through_culled_geoms_match_finite_differences(grid):
  """Depth over a patch of a box w.r.t. its position, with the boxes culled (one candidate
  per pass), against central differences."""
  m, d = grid
  seg = np.asarray(jaxmj.camera_image(m, d, "low", 48, 64, ("segmentation",))[
    "segmentation"])[..., 0]
  boxes = set(np.flatnonzero(m.geom_type == jaxmj.GeomType.BOX))
  # the first pixel whose 3x3 block shows one box
  i, j = next((i, j) for i in range(1, 47) for j in range(1, 63)
              if seg[i, j] in boxes and (seg[i - 1:i + 2, j - 1:j + 2] == seg[i, j]).all())
  g = int(seg[i, j])

  def depth(x):
    dd = d.replace(geom_xpos=d.geom_xpos.at[g].set(x))
    img = jaxmj.camera_image(m, dd, "low", 48, 64, ("depth",), tile_candidates=1)
    return img["depth"][i - 1:i + 2, j - 1:j + 2].sum()

  x = d.geom_xpos[g]
  value_and_grad = jax.jit(jax.value_and_grad(depth))  # one program for both
  grad = np.asarray(value_and_grad(x)[1])
  f, eps = lambda y: value_and_grad(y)[0], 1e-6
  fd = np.array([(f(x.at[a].add(eps)) - f(x.at[a].add(-eps))) / (2 * eps) for a in range(3)])
  assert np.abs(grad).max() > 1e-2
  np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-8)
