"""Collision sensors (distance, normal, fromto) on pairs with meshes and on the pairs MuJoCo
4.0 measures with GJK/EPA (box-box, ellipsoids, cylinders, meshes), against mj_forward.

The GJK/EPA search compiles slowly on CPU, so those pairs are a slow test; the plane-mesh
collider (no search) runs in the default suite.
"""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import assert_stage_matches, load_both  # noqa: E402

import jaxmj  # noqa: E402


def _pos_sensors(m, d):
  """Position-stage sensors after kinematics alone (all that these sensors read)."""
  return jaxmj.sensor_pos(m, jaxmj.smooth.kinematics.kinematics(m, d))

MESH = '<asset><mesh name="tet" vertex="0 0 0  .2 0 0  0 .2 0  0 0 .2"/></asset>'


def _compare(xml: str, nstate: int, atol: float):
  m, mj = load_both(xml=xml)
  assert m.unsupported == ()
  rng = np.random.default_rng(0)

  def state(m, mj, seed):
    d = mujoco.MjData(mj)
    d.qpos[:] = mj.qpos0
    d.qpos[:3] += rng.normal(scale=0.1, size=3)
    q = d.qpos[3:7] + rng.normal(scale=0.5, size=4)
    d.qpos[3:7] = q / np.linalg.norm(q)
    return d

  assert_stage_matches((m, mj), _pos_sensors, mujoco.mj_forward, ["sensordata"],
                       seeds=range(nstate), tol=atol, rtol=1e-7, state=state)


def test_plane_mesh_distance_matches_mj_forward():
  xml = f"""<mujoco>{MESH}<worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body name="b" pos="0 0 .1"><freejoint/><geom name="tet" type="mesh" mesh="tet"/></body>
  </worldbody><sensor>
    <distance geom1="tet" geom2="floor" cutoff=".5"/>
    <normal geom1="floor" geom2="tet" cutoff=".5"/>
    <fromto geom1="tet" geom2="floor" cutoff=".5"/>
    <distance body1="b" body2="world" cutoff=".05"/>
  </sensor></mujoco>"""
  _compare(xml, 4, 1e-12)


@pytest.mark.slow
def test_convex_pair_distances_match_mj_forward():
  """Separated and penetrating pairs, both argument orders, a body-level sensor."""
  xml = f"""<mujoco>{MESH}<worldbody>
    <geom name="box" type="box" size=".1 .2 .15" euler="10 20 30"/>
    <geom name="ell" type="ellipsoid" size=".1 .2 .15" pos=".45 .1 0"/>
    <geom name="cyl" type="cylinder" size=".1 .2" pos="-.4 .1 .2" euler="0 40 0"/>
    <body name="b" pos=".1 .1 .22"><freejoint/>
      <geom name="cube" type="box" size=".08 .08 .08"/>
      <geom name="tet" type="mesh" mesh="tet" pos="0 .2 0"/>
    </body>
  </worldbody><sensor>
    <distance geom1="box" geom2="ell" cutoff="1"/>
    <fromto geom1="ell" geom2="box" cutoff="1"/>
    <fromto geom1="cyl" geom2="box" cutoff="1"/>
    <fromto geom1="tet" geom2="box" cutoff="1"/>
    <normal geom1="box" geom2="tet" cutoff="1"/>
    <fromto geom1="cube" geom2="box" cutoff="1"/>
    <distance geom1="box" geom2="cube" cutoff="1"/>
    <distance geom1="tet" geom2="ell" cutoff="1"/>
    <fromto body1="b" geom2="cyl" cutoff="1"/>
  </sensor></mujoco>"""
  _compare(xml, 3, 1e-6)
