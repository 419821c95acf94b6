"""jaxmj.camera_image against mujoco.Renderer: depth and segmentation per pixel, RGB in mean
absolute error, for primitives, meshes and a heightfield, from model cameras (fovy and
intrinsics) and the free camera. Poses come from MuJoCo's mj_forward, so the images test the
camera alone."""

import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import jit_fast

import jaxmj
from jaxmj.collision.raycast import mesh_bvh

H, W = 24, 32
PRIMITIVES = """<mujoco><worldbody>
  <light pos="0 0 3" dir="0 0 -1" castshadow="false"/>
  <light pos="1 -1 2" dir="-.4 .4 -1" diffuse=".3 .3 .3"/>
  <camera name="front" pos="0 -2.2 1.2" xyaxes="1 0 0 0 .5 1" fovy="50"/>
  <camera name="sensor" pos="0.2 -2 1.4" xyaxes="1 0 0 0 .6 1" sensorsize="0.01 0.008"
          focal="0.008 0.009" principal="0.0005 -0.0003" resolution="32 24"/>
  <camera name="ortho" pos="0 -2.2 1.2" xyaxes="1 0 0 0 .5 1" fovy="1.6"
          projection="orthographic"/>
  <geom type="plane" size="2 2 .1" rgba=".3 .5 .3 1"/>
  <geom type="sphere" size=".25" pos="-.6 0 .3" rgba="1 0 0 1"/>
  <geom type="capsule" size=".1 .2" pos="0 0 .35" euler="30 0 0" rgba="0 1 0 1"/>
  <geom type="ellipsoid" size=".2 .1 .15" pos=".6 0 .3" rgba="0 0 1 1"/>
  <geom type="cylinder" size=".15 .1" pos="-.3 .5 .2" euler="0 20 0" rgba="1 1 0 1"/>
  <geom type="box" size=".15 .1 .2" pos=".3 .5 .25" euler="0 0 30" rgba="0 1 1 1"/>
  <geom type="sphere" size=".1" pos="0 -.5 .8" group="3"/>
  <geom type="sphere" size=".1" pos=".2 -.5 .8" rgba="1 1 1 0"/>
</worldbody></mujoco>"""
# Tolerances: depth relative (MuJoCo tessellates curved geoms and reads a 24-bit depth
# buffer) on pixels whose 3x3 neighbourhood has one geom in both images; segmentation on at
# least this share of all pixels; RGB mean absolute error over all pixels (values in [0, 1]).
DEPTH_RTOL, SEG_SHARE, RGB_MAE = 2e-2, 0.98, 0.02



def _load(xml_or_path):
  if "<" in xml_or_path:
    return mujoco.MjModel.from_xml_string(xml_or_path), jaxmj.Model.from_xml_string(xml_or_path)
  return mujoco.MjModel.from_xml_path(xml_or_path), jaxmj.Model.from_xml_path(xml_or_path)


def _posed(m, mjd):
  """jaxmj Data with MuJoCo's geom, camera and light poses."""
  return jaxmj.make_data(m).replace(
    geom_xpos=jnp.asarray(mjd.geom_xpos), geom_xmat=jnp.asarray(mjd.geom_xmat).reshape(-1, 3, 3),
    cam_xpos=jnp.asarray(mjd.cam_xpos), cam_xmat=jnp.asarray(mjd.cam_xmat).reshape(-1, 3, 3),
    light_xpos=jnp.asarray(mjd.light_xpos), light_xdir=jnp.asarray(mjd.light_xdir))


def _mujoco_images(mjm, mjd, cam):
  """rgb, depth, segmentation from mujoco.Renderer (shadows, reflections, skybox and haze
  off: the camera's options for those are tested on their own)."""
  out = {}
  with mujoco.Renderer(mjm, H, W) as r:
    def draw():
      r.update_scene(mjd, camera=cam)
      for flag in ("SHADOW", "REFLECTION", "SKYBOX", "HAZE"):
        r.scene.flags[getattr(mujoco.mjtRndFlag, "mjRND_" + flag)] = 0
      return r.render().copy()
    out["rgb"] = draw() / 255.0
    r.enable_depth_rendering()
    out["depth"] = draw()
    r.disable_depth_rendering()
    r.enable_segmentation_rendering()
    out["segmentation"] = draw()
  return out


def _interior(seg):
  """Pixels whose 3x3 neighbourhood shows one geom (edges excluded)."""
  ids = np.pad(seg[..., 0], 1, mode="edge")
  same = np.ones(seg.shape[:2], bool)
  for di in range(3):
    for dj in range(3):
      same &= ids[di:di + seg.shape[0], dj:dj + seg.shape[1]] == seg[..., 0]
  return same


@pytest.mark.parametrize("scene, cam", [
  (PRIMITIVES, 0), (PRIMITIVES, 1), (PRIMITIVES, -1), (PRIMITIVES, "ortho"),
  (PRIMITIVES.replace("<worldbody>", '<visual><global orthographic="true" fovy="2.5"/>'
                      "</visual><worldbody>"), -1),
  (os.path.join(MODELS, "mesh_drop.xml"), -1),
  (os.path.join(MODELS, "terrain.xml"), -1),
  (os.path.join(MODELS, "mesh_drop.xml"), "clusters"),
], ids=["primitives-fovy", "primitives-intrinsics", "primitives-free", "primitives-ortho",
        "primitives-free-ortho", "meshes", "hfield", "meshes-clusters"])
def test_images_match_mujocos_renderer(gl, patch_traced, scene, cam):
  if cam == "clusters":  # small meshes through the cluster traversal too
    patch_traced(mesh_bvh, "BRUTE_FORCE_FACES", 0)
    cam = -1
  mjm, m = _load(scene)
  mjd = mujoco.MjData(mjm)
  mujoco.mj_forward(mjm, mjd)
  ref = _mujoco_images(mjm, mjd, cam)
  ours = jit_fast(lambda d: jaxmj.camera_image(m, d, cam, H, W))(_posed(m, mjd))
  ours = {k: np.asarray(v) for k, v in ours.items()}
  assert ours["rgb"].shape == (H, W, 3) and ours["segmentation"].dtype == np.int32
  same = (ours["segmentation"] == ref["segmentation"]).all(-1)
  assert same.mean() >= SEG_SHARE, same.mean()
  inner = _interior(ref["segmentation"]) & _interior(ours["segmentation"]) & same
  assert inner.mean() > 0.5
  np.testing.assert_allclose(ours["depth"][inner], ref["depth"][inner], rtol=DEPTH_RTOL)
  assert np.abs(ours["rgb"] - ref["rgb"]).mean() < RGB_MAE
  seen = set(np.unique(ref["segmentation"][..., 0])) - {-1}
  assert seen == set(np.unique(ours["segmentation"][..., 0])) - {-1}


def test_hidden_groups_and_transparent_geoms_are_not_drawn():
  m = jaxmj.Model.from_xml_string(PRIMITIVES)
  d = jax.jit(jaxmj.forward)(m, jaxmj.make_data(m))
  seg = np.asarray(jaxmj.camera_image(m, d, 0, H, W, outputs=("segmentation",))[
    "segmentation"])
  assert not np.isin(seg[..., 0], [6, 7]).any()  # group 3, alpha 0
  seg3 = jaxmj.camera_image(m, d, 0, H, W, outputs=("segmentation",),
                            geomgroup=(1, 1, 1, 1, 0, 0))["segmentation"]
  assert np.isin(np.asarray(seg3)[..., 0], [6]).any()


def test_shadows_darken_what_a_light_cannot_reach():
  xml = PRIMITIVES.replace('castshadow="false"', 'castshadow="true"')
  m = jaxmj.Model.from_xml_string(xml)
  d = jax.jit(jaxmj.forward)(m, jaxmj.make_data(m))
  render = jax.jit(lambda d, s: jaxmj.camera_image(m, d, 0, H, W, ("rgb",), shadows=s)["rgb"],
                   static_argnums=1)
  lit, shadowed = np.asarray(render(d, False)), np.asarray(render(d, True))
  assert np.all(shadowed <= lit + 1e-12)
  assert (shadowed.sum(-1) < lit.sum(-1) - 0.05).mean() > 0.02  # under the geoms


def test_unknown_outputs_and_cameras_are_refused_by_name():
  m = jaxmj.Model.from_xml_string(PRIMITIVES)
  d = jaxmj.make_data(m)
  with pytest.raises(ValueError, match="unknown outputs"):
    jaxmj.camera_image(m, d, 0, 4, 4, outputs=("normals",))
  with pytest.raises(ValueError, match="camera 5 does not exist"):
    jaxmj.camera_image(m, d, 5, 4, 4)
  with pytest.raises(ValueError, match="tile_candidates"):
    jaxmj.camera_image(m, d, 0, 4, 4, tile_candidates=0)


def test_vmap_over_worlds_and_camera_poses_equals_one_at_a_time():
  m = jaxmj.Model.from_xml_string(PRIMITIVES)
  d = jax.jit(jaxmj.forward)(m, jaxmj.make_data(m))
  shift = jnp.array([[0.0, 0.0, 0.0], [0.1, -0.2, 0.05]])
  worlds = jax.vmap(lambda s: d.replace(geom_xpos=d.geom_xpos + s))(shift)
  poses = jnp.stack([d.cam_xpos, d.cam_xpos + jnp.array([0.0, 0.3, 0.2])])  # (cams, ncam, 3)
  image = lambda d: jaxmj.camera_image(m, d, 0, 8, 12)  # noqa: E731
  per_cam = lambda d: jax.vmap(lambda p: image(d.replace(cam_xpos=p)))(poses)  # noqa: E731
  batch = jax.jit(jax.vmap(per_cam))(worlds)
  assert batch["rgb"].shape == (2, 2, 8, 12, 3)
  for w in range(2):
    for c in range(2):
      one = jax.jit(image)(jax.tree.map(lambda x, w=w: x[w], worlds).replace(cam_xpos=poses[c]))
      for k in one:
        np.testing.assert_allclose(batch[k][w, c], one[k], rtol=1e-12, atol=1e-12)
  assert np.any(np.asarray(batch["depth"][0, 0] != batch["depth"][1, 1]))


def test_a_camera_and_option_set_is_traced_once_by_name_or_id_list_or_tuple(monkeypatch):
  from jaxmj.collision.raycast import trace

  m = jaxmj.Model.from_xml_string(PRIMITIVES)
  d = jax.jit(jaxmj.forward)(m, jaxmj.make_data(m))
  traces = []
  nearest_hits = trace.nearest_hits
  monkeypatch.setattr(trace, "nearest_hits", lambda *a: traces.append(1) or nearest_hits(*a))
  jax.clear_caches()  # no trace of an earlier test serves this model
  try:
    first = jaxmj.camera_image(m, d, "front", H, W, ["depth", "rgb"], geomgroup=[1, 1, 1, 0])
    again = jaxmj.camera_image(m, d, 0, H, W, ("depth", "rgb"), geomgroup=(1, 1, 1, 0))
    jax.jit(lambda d: jaxmj.camera_image(m, d, 0, H, W, ("depth", "rgb"),
                                         geomgroup=(True, True, True, False)))(d)
    assert len(traces) == 1
    jaxmj.camera_image(m, d, 0, H, W, ("rgb", "depth"))  # another option set: its own trace
    assert len(traces) == 2
  finally:
    jax.clear_caches()  # nor does the counting trace serve later tests
  assert list(first) == ["depth", "rgb"]  # in the order asked
  for k in ("depth", "rgb"):
    np.testing.assert_array_equal(first[k], again[k])
