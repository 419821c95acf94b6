"""Gradients of camera_image where the image is smooth: depth and shading of a patch of
pixels that stays on one surface, w.r.t. geom positions and sizes, against central finite
differences (float64)."""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxmj
from jaxmj.collision.raycast import mesh_bvh

XML = """<mujoco><worldbody>
  <light pos=".5 -1 2" dir="-.2 .4 -1" castshadow="false"/>
  <camera name="c" pos="0 -2 .5" xyaxes="1 0 0 0 0 1" fovy="40"/>
  <geom type="plane" size="2 2 .1"/>
  <geom name="ball" type="sphere" size=".3" pos="0 0 .5" rgba=".8 .3 .2 1"/>
  <geom name="box" type="box" size=".2 .2 .2" pos=".8 .3 .5" euler="0 0 20"/>
  <geom name="octa" type="mesh" mesh="octa" pos="-.8 .3 .5" euler="10 20 0"/>
</worldbody><asset><mesh name="octa" scale=".3 .3 .4"
  vertex="1 0 0  -1 0 0  0 1 0  0 -1 0  0 0 1  0 0 -1"/></asset></mujoco>"""
H, W = 24, 32


def _scene():
  m = jaxmj.Model.from_xml_string(XML)
  mjm = mujoco.MjModel.from_xml_string(XML)
  mjd = mujoco.MjData(mjm)
  mujoco.mj_forward(mjm, mjd)
  d = jaxmj.make_data(m).replace(
    geom_xpos=jnp.asarray(mjd.geom_xpos), geom_xmat=jnp.asarray(mjd.geom_xmat).reshape(-1, 3, 3),
    cam_xpos=jnp.asarray(mjd.cam_xpos), cam_xmat=jnp.asarray(mjd.cam_xmat).reshape(-1, 3, 3),
    light_xpos=jnp.asarray(mjd.light_xpos), light_xdir=jnp.asarray(mjd.light_xdir))
  return m, d


def _patch(seg, geom):
  """A 3x3 block of pixels well inside `geom`'s silhouette."""
  ids = seg[..., 0] == geom
  rows, cols = np.nonzero(ids)
  i, j = int(np.median(rows)), int(np.median(cols))
  assert ids[i - 1:i + 2, j - 1:j + 2].all()
  return slice(i - 1, i + 2), slice(j - 1, j + 2)


def _check(f, x, eps=1e-6, rtol=1e-5):
  """jax.jacrev(f) at x against central differences; f: (n,) -> (k,)."""
  x = jnp.asarray(x, jnp.float64)
  jac = np.asarray(jax.jit(jax.jacrev(f))(x))
  f = jax.jit(f)
  fd = np.stack([(f(x.at[i].add(eps)) - f(x.at[i].add(-eps))) / (2 * eps)
                 for i in range(x.size)], -1)
  assert np.abs(jac).max(-1).min() > 1e-3  # every output moves
  np.testing.assert_allclose(jac, fd, rtol=rtol, atol=1e-6 * np.abs(fd).max())


@pytest.mark.parametrize("bvh", [False, True], ids=["triangles", "clusters"])
def test_depth_and_shading_gradients_match_finite_differences(patch_traced, bvh):
  """Depth and RGB sums over a patch w.r.t. a geom's position and size (reverse mode; for
  the mesh, through both the all-triangles test and the cluster traversal)."""
  if bvh:
    patch_traced(mesh_bvh, "BRUTE_FORCE_FACES", 0)
  m, d = _scene()
  seg = np.asarray(jax.jit(lambda d: jaxmj.camera_image(m, d, 0, H, W))(d)["segmentation"])
  for name in (("octa",) if bvh else ("ball", "box", "octa")):
    g = jaxmj.name2id(m, jaxmj.ObjType.GEOM, name)
    rows, cols = _patch(seg, g)

    def sums(x, g=g, rows=rows, cols=cols):
      dd = d.replace(geom_xpos=d.geom_xpos.at[g].set(x[:3]))
      mm = m.replace(geom_size=m.geom_size.at[g].set(x[3:])) if x.size > 3 else m
      img = jaxmj.camera_image(mm, dd, 0, H, W, ("rgb", "depth"))
      return jnp.stack([img["depth"][rows, cols].sum(), img["rgb"][rows, cols].sum()])

    # a mesh's size is its vertices; a box's size moves its front face, not its shading
    x = d.geom_xpos[g] if name == "octa" else jnp.concatenate([d.geom_xpos[g],
                                                               m.geom_size[g]])
    _check(sums if name != "box" else (lambda x: sums(x)[:1]), x)
