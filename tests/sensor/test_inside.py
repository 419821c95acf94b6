"""insidesite with enclosed="true" (directed Hausdorff distance) against mj_forward.

A free body carrying a sphere, a capsule, a box and a mesh moves through sphere, capsule,
box and cylinder sites: objects fully inside (negative), straddling and outside. jaxmj
evaluates the site's signed distance at the object's extreme points (exact); MuJoCo's
value on capsule and cylinder sites comes from an iterative search that can stop up to
~3e-4 short of the maximum, so those are held to that, from below.
"""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import assert_stage_matches, load_both  # noqa: E402

import jaxmj  # noqa: E402


def _pos_sensors(m, d):
  """Position-stage sensors after kinematics alone (all that these sensors read)."""
  return jaxmj.sensor_pos(m, jaxmj.smooth.kinematics.kinematics(m, d))

# sensors on box and sphere sites (and the plain insidesite): MuJoCo within 1e-6
EXACT = np.array([True, True, False, False, True, False, False, True])
XML = """
<mujoco>
  <asset><mesh name="tet" vertex="0 0 0  .1 0 0  0 .1 0  0 0 .1"/></asset>
  <worldbody>
    <site name="box" type="box" size=".5 .4 .3" euler="0 0 20"/>
    <site name="ball" type="sphere" size=".5"/>
    <site name="cap" type="capsule" size=".3 .3" euler="30 0 0"/>
    <site name="cyl" type="cylinder" size=".4 .3" pos=".1 0 0"/>
    <body name="b">
      <freejoint/>
      <geom name="s" type="sphere" size=".1"/>
      <geom name="c" type="capsule" size=".05 .1" pos=".1 0 0" euler="0 90 0"/>
      <geom name="m" type="mesh" mesh="tet" pos="0 .1 0"/>
      <site name="p" type="box" size=".1 .05 .08" pos="0 0 .1"/>
      <body name="child" pos="0 -.15 0">
        <geom name="k" type="box" size=".05 .05 .05"/>
      </body>
    </body>
  </worldbody>
  <sensor>
    <insidesite objtype="geom" objname="s" site="box" enclosed="true"/>
    <insidesite objtype="geom" objname="c" site="ball" enclosed="true"/>
    <insidesite objtype="geom" objname="m" site="cap" enclosed="true"/>
    <insidesite objtype="site" objname="p" site="cyl" enclosed="true"/>
    <insidesite objtype="body" objname="b" site="box" enclosed="true"/>
    <insidesite objtype="xbody" objname="b" site="cyl" enclosed="true"/>
    <insidesite objtype="geom" objname="k" site="cap" enclosed="true"/>
    <insidesite objtype="geom" objname="s" site="ball"/>
  </sensor>
</mujoco>"""


def test_enclosed_insidesite_matches_mj_forward():
  m, mj = load_both(xml=XML)
  assert m.unsupported == ()
  rng = np.random.default_rng(0)
  signs = set()

  def state(m, mj, seed):
    d = mujoco.MjData(mj)
    d.qpos[:3] = rng.normal(scale=0.3, size=3)
    q = rng.normal(size=4)
    d.qpos[3:7] = q / np.linalg.norm(q)
    return d

  def check(out, d, seed):
    signs.update(np.sign(d.sensordata[:7]))
    ours = np.asarray(out.sensordata)
    np.testing.assert_allclose(ours[EXACT], d.sensordata[EXACT], atol=1e-6, rtol=0)
    # on curved sites MuJoCo's search stops short of the maximum: a slight under-estimate
    curved = ~EXACT
    assert np.all(ours[curved] >= d.sensordata[curved] - 1e-9)
    np.testing.assert_allclose(ours[curved], d.sensordata[curved], atol=5e-4, rtol=0)

  assert_stage_matches((m, mj), _pos_sensors, mujoco.mj_forward, [], seeds=range(8),
                       state=state, check=check)
  assert signs == {-1.0, 1.0}
