"""Rangefinder data fields 'normal' and 'depth' against mj_forward (MuJoCo 4.0).

Rays from a swivelling site hit every primitive geom type and a mesh from outside, and a
surrounding box from inside: normals point out of the hit geom either way. A ray that
misses (the second site's) gives zeros.
"""

import jax
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import assert_stage_matches, load_both  # noqa: E402

import jaxmj  # noqa: E402


def _pos_sensors(m, d):
  """Position-stage sensors after kinematics alone (all that these sensors read)."""
  return jaxmj.sensor_pos(m, jaxmj.smooth.kinematics.kinematics(m, d))

XML = """
<mujoco>
  <asset><mesh name="tet" vertex="0 0 0  .4 0 0  0 .4 0  0 0 .4"/></asset>
  <worldbody>
    <geom type="plane" size="3 3 .1" pos="0 0 -1"/>
    <geom type="sphere" size=".3" pos="1 0 0"/>
    <geom type="capsule" size=".2 .3" pos="-1 0 0" euler="30 0 0"/>
    <geom type="ellipsoid" size=".2 .3 .4" pos="0 1 0"/>
    <geom type="cylinder" size=".3 .2" pos="0 -1 0" euler="0 50 0"/>
    <geom type="box" size=".2 .3 .4" pos="0 0 1" euler="10 20 30"/>
    <geom type="mesh" mesh="tet" pos=".7 .7 .3"/>
    <body name="probe">
      <joint name="yaw" axis="0 0 1"/>
      <joint name="pitch" axis="0 1 0"/>
      <geom type="sphere" size=".01" contype="0" conaffinity="0"/>
      <site name="s"/>
      <site name="t" pos="0 0 1" euler="0 30 0"/>
      <site name="u" pos="0 0 5"/>
    </body>
    <body name="shell" pos="0 0 .1">
      <geom type="box" size="2.5 2.5 2.5" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
  <sensor>
    <rangefinder site="s" data="dist point normal depth"/>
    <rangefinder site="t" data="normal"/>
    <rangefinder site="u" data="dist normal depth"/>
  </sensor>
</mujoco>"""


def test_rangefinder_normal_and_depth_match_mj_forward():
  m, mj = load_both(xml=XML)
  assert m.unsupported == ()
  rng = np.random.default_rng(0)

  def state(m, mj, seed):
    d = mujoco.MjData(mj)
    d.qpos[:] = rng.uniform(-np.pi, np.pi, size=2)
    return d

  assert_stage_matches((m, mj), _pos_sensors, mujoco.mj_forward, ["sensordata"],
                       seeds=range(16), tol=1e-9, state=state)


def _hfield_xml() -> str:
  rng = np.random.default_rng(3)
  elevation = " ".join(f"{x:.3f}" for x in rng.uniform(0.2, 1, 9 * 6))
  probes = "\n".join(f"""    <body name="{name}" pos="{pos}">
      <joint name="yaw{k}" axis="0 0 1"/>
      <joint name="pitch{k}" axis="0 1 0"/>
      <site name="{site}"/>
      <inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/>
    </body>""" for k, (name, pos, site) in enumerate(
    [("above", ".2 .1 1.2", "s"), ("beside", "2.2 .3 .25", "t"), ("below", "-.3 -.2 -.6", "u")]))
  return f"""
<mujoco>
  <asset><hfield name="h" nrow="9" ncol="6" size="1.5 1 .6 .2" elevation="{elevation}"/></asset>
  <worldbody>
    <geom type="hfield" hfield="h" euler="0 0 20"/>
{probes}
  </worldbody>
  <sensor>
    <rangefinder site="s" data="dist normal"/>
    <rangefinder site="t" data="dist normal"/>
    <rangefinder site="u" data="dist normal"/>
  </sensor>
</mujoco>"""


def test_rangefinder_normals_on_a_heightfield_match_mj_forward():
  """Rays from above (the surface's triangles), from beside the field, low (its elevation
  box's sides, under the edge's profile) and from below (the base box) give mj_rayHfield's
  normal, on a field with more rows than columns."""
  m, mj = load_both(xml=_hfield_xml())
  assert m.unsupported == ()
  rng = np.random.default_rng(0)

  def state(m, mj, seed):
    d = mujoco.MjData(mj)
    # yaw and pitch of each probe: down, level towards -x, up (a site's ray is its z axis)
    d.qpos[:] = rng.uniform([-np.pi, 2.6, -0.4, -1.7, -np.pi, -0.6],
                            [np.pi, 3.7, 0.4, -1.45, np.pi, 0.6])
    return d

  assert_stage_matches((m, mj), _pos_sensors, mujoco.mj_forward, ["sensordata"],
                       seeds=range(24), tol=1e-9, state=state)


CAMERA_XML = """
<mujoco>
  <asset>
    <mesh name="tet" vertex="0 0 0  .3 0 0  0 .3 0  0 0 .3"/>
    <hfield name="h" nrow="3" ncol="3" size=".5 .5 .2 .05" elevation="0 1 0 1 0 1 0 1 0"/>
  </asset>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <geom type="sphere" size=".3" pos="0 0 .3"/>
    <geom type="box" size=".1 .2 .3" pos=".6 .2 .3" euler="10 20 30"/>
    <geom type="capsule" size=".1 .2" pos="-.6 .2 .3" euler="40 0 0"/>
    <geom type="cylinder" size=".15 .1" pos="-.3 -.4 .2"/>
    <geom type="ellipsoid" size=".1 .2 .15" pos=".3 -.4 .2"/>
    <geom type="mesh" mesh="tet" pos="0 .6 .1"/>
    <geom type="hfield" hfield="h" pos=".9 .9 0"/>
    <body name="rig" pos="0 -1.5 1.2">
      <freejoint/>
      <geom size=".05"/>
      <camera name="fovy" xyaxes="1 0 0 0 .7 .7" resolution="8 6" fovy="60"/>
      <camera name="ortho" xyaxes="1 0 0 0 .7 .7" resolution="8 6" fovy="2.5"
              projection="orthographic"/>
      <camera name="intrinsics" xyaxes="1 0 0 0 .6 .8" resolution="8 6" sensorsize=".01 .008"
              focal=".008 .009" principal=".0005 -.0003"/>
      <camera name="wide" xyaxes="1 0 0 0 .6 .8" resolution="5 3" fovy="4"
              projection="orthographic"/>
    </body>
  </worldbody>
  <sensor>
    <rangefinder camera="fovy" data="dist dir origin point normal depth"/>
    <rangefinder camera="ortho" data="dist dir origin point normal depth"/>
    <rangefinder camera="intrinsics" data="dist dir origin point normal depth"/>
    <rangefinder camera="wide" data="dist point depth" cutoff="2"/>
    <rangefinder camera="fovy" data="depth"/>
  </sensor>
</mujoco>"""


def test_camera_rangefinders_match_mj_forward():
  """A depth image per camera (perspective from fovy and from intrinsics, orthographic: rays
  from the pixel centres of the image plane), every field, pixels row by row, misses off the
  floor's edge and the camera's own body excluded; a cutoff clamps every value."""
  m, mj = load_both(xml=CAMERA_XML)
  assert m.unsupported == () and list(m.sensor_dim) == list(mj.sensor_dim) == [
    8 * 6 * 14, 8 * 6 * 14, 8 * 6 * 14, 5 * 3 * 5, 8 * 6]
  rng = np.random.default_rng(1)

  def state(m, mj, seed):
    d = mujoco.MjData(mj)
    q = rng.normal(0, 0.3, 4) + [3, 0, 0, 0]
    d.qpos[:] = np.concatenate([[0, -1.5, 1.2] + rng.normal(0, 0.2, 3), q / np.linalg.norm(q)])
    return d

  def sensors(m, d):  # camera poses need mj_camlight too
    return jaxmj.sensor_pos(m, jaxmj.camlight(m, jaxmj.com_pos(m, jaxmj.kinematics(m, d))))

  assert_stage_matches((m, mj), sensors, mujoco.mj_forward, ["sensordata"],
                       seeds=range(6), tol=1e-12, state=state)


def test_camera_depth_images_carry_gradients():
  """A depth image's derivative w.r.t. the camera's position (through the rays' hits, the
  misses' constant -1 aside) is its central finite differences'."""
  depth_only = "\n".join(line for line in CAMERA_XML.splitlines()
                         if "<rangefinder" not in line or "dist dir" not in line)
  m = jaxmj.Model.from_xml_string(depth_only)  # the orthographic and the fovy camera's
  assert m.nsensor == 2
  d0 = jaxmj.make_data(m)
  cols = np.arange(m.nsensordata)

  def depth(x):
    d = jaxmj.kinematics(m, d0.replace(qpos=d0.qpos.at[:3].add(x)))
    return jaxmj.sensor_pos(m, jaxmj.camlight(m, jaxmj.com_pos(m, d))).sensordata[cols].sum()

  x = np.array([0.01, -0.02, 0.03])
  grad = jax.jit(jax.grad(depth))(x)
  f = jax.jit(depth)
  eps = 1e-6
  fd = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(3)]
  assert np.abs(grad).min() > 1
  np.testing.assert_allclose(grad, fd, rtol=1e-6)
