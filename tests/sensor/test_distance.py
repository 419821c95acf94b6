"""Collision sensors (distance, normal, fromto) on pairs with meshes, on the pairs MuJoCo
4.0 measures with GJK/EPA (box-box, ellipsoids, cylinders, meshes) and on heightfields,
against mj_forward.

The GJK/EPA search compiles slowly on CPU, so those pairs are slow tests; the plane-mesh
collider (no search) and the pairs with no collision function run in the default suite.
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


def _hfield_scene(sensors: str, nrow: int = 13, ncol: int = 11) -> str:
  """A heightfield in body "ground" (MuJoCo measures a body's heightfield geoms; it refuses
  a heightfield named as geom1 or geom2) and a free body "b" with a sphere and a mesh."""
  rng = np.random.default_rng(3)
  elevation = " ".join(f"{v:.3f}" for v in rng.uniform(0, 1, nrow * ncol))
  return f"""<mujoco><asset>
    <hfield name="h" nrow="{nrow}" ncol="{ncol}" size="1.5 1 .5 .2" elevation="{elevation}"/>
    <mesh name="tet" vertex="0 0 0  .2 0 0  0 .25 0  0 0 .15"/></asset><worldbody>
    <body name="ground" pos=".1 -.2 0" euler="0 0 20">
      <geom name="field" type="hfield" hfield="h"/></body>
    <body name="b" pos="0 0 1"><freejoint/><geom name="ball" size=".12"/>
      <geom name="tet" type="mesh" mesh="tet" pos=".15 0 0"/></body>
  </worldbody><sensor>{sensors}</sensor></mujoco>"""


@pytest.mark.slow
def test_heightfield_distances_match_mj_forward():
  """A body's heightfield geoms, both argument orders: MuJoCo runs the heightfield collider
  with margin = cutoff and keeps the closest of its first 50 contacts. Over the states:
  separated within the cutoff, penetrating, beyond it. With cutoff 2 most of the window's
  240 prisms are in reach and the nearest is seldom among the first 50: that sensor fails
  without MuJoCo's cap."""
  xml = _hfield_scene("""
    <distance body1="b" body2="ground" cutoff=".6"/>
    <distance body1="ground" body2="b" cutoff="0"/>
    <distance body1="b" body2="ground" cutoff="2"/>
    <fromto body1="ground" body2="b" cutoff=".6"/>
    <fromto body1="b" body2="ground" cutoff=".3"/>""")
  m, mj = load_both(xml=xml)
  assert m.unsupported == ()
  seen = set()

  def state(m, mj, seed):
    rng = np.random.default_rng(seed)
    d = mujoco.MjData(mj)
    d.qpos[:3] = rng.uniform([-1.4, -1.1, -0.2], [1.4, 1.1, 1.4])
    q = rng.normal(size=4)
    d.qpos[3:7] = q / np.linalg.norm(q)
    return d

  def check(d, md, seed):
    dist = md.sensordata[0]
    seen.add("beyond" if dist >= 0.6 else "inside" if dist < 0 else "near")

  assert_stage_matches((m, mj), _pos_sensors, mujoco.mj_forward, ["sensordata"],
                       seeds=range(8), tol=1e-9, rtol=1e-7, state=state, check=check)
  assert seen == {"beyond", "inside", "near"}


def test_heightfield_named_as_a_geom_is_refused_as_by_mujoco():
  for side in ("geom1", "geom2"):
    other = "geom2" if side == "geom1" else "geom1"
    xml = _hfield_scene(f'<distance {side}="field" {other}="ball"/>')
    with pytest.raises(ValueError, match="height fields are not supported"):
      mujoco.MjModel.from_xml_string(xml)
    refused = f"attribute '{side}': height fields are not supported"
    with pytest.raises(jaxmj.MJCFError, match=refused):
      jaxmj.Model.from_xml_string(xml)


def test_pairs_without_a_collision_function_read_the_cutoff():
  """Heightfield-heightfield and plane-heightfield pairs: MuJoCo has no collision function
  for them, so mj_geomDistance returns distmax (no search is compiled)."""
  xml = _hfield_scene("""<distance body1="ground" body2="other" cutoff=".4"/>
                         <fromto body1="other" body2="ground" cutoff=".4"/>""").replace(
    "</worldbody>", '<body name="other" pos="0 0 .1"><geom type="hfield" hfield="h"/>'
    '<geom type="plane" size="1 1 .1"/></body></worldbody>')
  _m, mj = load_both(xml=xml)
  assert_stage_matches(xml, _pos_sensors, mujoco.mj_forward, ["sensordata"], seeds=range(1),
                       tol=0.0)
  assert mj.nsensordata == 7


GEOM_DISTANCE_SCENE = """<mujoco><worldbody>
  <geom name="floor" type="plane" size="2 2 .1"/>
  <geom name="block" type="box" size=".1 .15 .1" pos=".5 .4 .1" euler="0 0 25"/>
  <body name="b" pos="0 0 .3"><freejoint/><geom name="ball" size=".1"/>
    <geom name="rod" type="capsule" size=".05 .1" pos=".3 0 0" euler="20 30 0"/></body>
</worldbody></mujoco>"""


def _geom_distances_match(m, mj, pairs, distmax, box, seed, nstate=4):
  """geom_distance of `pairs` against mj_geomDistance at `nstate` random states of the free
  body (position uniform in box = (low, high), random orientation). Returns (the kinds of
  distance seen: beyond distmax, inside, near; the last state's Data)."""
  distmax = np.broadcast_to(distmax, (len(pairs),))
  rng = np.random.default_rng(seed)
  kinematics = jax.jit(jaxmj.kinematics)  # all the distance reads
  seen = set()
  for _ in range(nstate):
    md = mujoco.MjData(mj)
    md.qpos[:3] = rng.uniform(*box)
    q = rng.normal(size=4)
    md.qpos[3:7] = q / np.linalg.norm(q)
    mujoco.mj_forward(mj, md)
    d = kinematics(m, jaxmj.make_data(m).replace(qpos=md.qpos.copy()))
    dist, fromto = jaxmj.geom_distance(m, d, *zip(*pairs), distmax)
    for k, (a, b) in enumerate(pairs):
      ft = np.zeros(6)
      want = mujoco.mj_geomDistance(mj, md, a, b, distmax[k], ft)
      seen.add("beyond" if want >= distmax[k] else "inside" if want < 0 else "near")
      np.testing.assert_allclose(float(dist[k]), want, atol=1e-12)
      np.testing.assert_allclose(np.asarray(fromto[k]), ft, atol=1e-12)
  return seen, d


def test_geom_distance_matches_mj_geomDistance():
  """jaxmj.geom_distance, one pair and many, against mujoco.mj_geomDistance on primitive
  pairs (separated, penetrating, beyond distmax; both argument orders)."""
  m, mj = load_both(xml=GEOM_DISTANCE_SCENE)
  pairs = [(2, 0), (0, 3), (2, 1), (1, 3), (3, 2)]
  distmax = np.array([0.5, 0.5, 0.2, 1.0, 0.5])
  seen, d = _geom_distances_match(m, mj, pairs, distmax, ([-0.2, -0.2, 0.0], [0.6, 0.5, 0.4]),
                                  seed=0)
  assert seen == {"beyond", "inside", "near"}
  fromto = jaxmj.geom_distance(m, d, *zip(*pairs), distmax)[1]
  one, one_ft = jaxmj.geom_distance(m, d, 3, 2, 0.5)  # one pair: a scalar and a (6,)
  assert one.shape == () and one_ft.shape == (6,)
  np.testing.assert_allclose(np.asarray(one_ft), np.asarray(fromto[-1]), atol=1e-15)


def test_geom_distance_differentiates_and_refuses_bad_ids():
  m = jaxmj.Model.from_xml_string(GEOM_DISTANCE_SCENE)
  d0 = jaxmj.make_data(m)

  @jax.jit
  def dist(x):  # kinematics is all the distance reads
    d = jaxmj.smooth.kinematics.kinematics(m, d0.replace(qpos=d0.qpos.at[:3].set(x)))
    return jaxmj.geom_distance(m, d, 2, 1, 2.0)[0]

  x = np.array([0.1, 0.2, 0.35])
  grad = jax.jit(jax.grad(dist))(x)
  fd = [(dist(x + e) - dist(x - e)) / 2e-6 for e in 1e-6 * np.eye(3)]
  np.testing.assert_allclose(grad, fd, atol=1e-7)
  with pytest.raises(IndexError, match="geom2 9 is out of range"):
    jaxmj.geom_distance(m, d0, 0, 9)
  with pytest.raises(ValueError, match="2 and 1 ids"):
    jaxmj.geom_distance(m, d0, [0, 1], [2])


@pytest.mark.parametrize("distmax", [0.3, pytest.param(2.0, marks=pytest.mark.slow)])
def test_geom_distance_on_heightfield_pairs_matches_mj_geomDistance(distmax):
  """Heightfield pairs, both argument orders, against mj_geomDistance (the prisms under the
  geom, the closest of the first 50 contacts): separated, penetrating, beyond distmax; at
  distmax 2 the cap binds. The window is sized from distmax; a traced Model searches the
  whole grid, with the same result (slow)."""
  m, mj = load_both(xml=_hfield_scene('<distance body1="b" body2="ground"/>'))
  pairs = [(1, 0), (0, 1), (2, 0), (0, 2)]
  seen, d = _geom_distances_match(m, mj, pairs, distmax,
                                  ([-1.4, -1.1, -0.2], [1.4, 1.1, 1.4]), seed=1)
  # at distmax 2 no sampled state is beyond reach or penetrating: "near" is what it tests
  assert seen == ({"beyond", "inside", "near"} if distmax < 1 else {"near"})
  if distmax > 1:  # (slow) a traced Model at distmax 0.3: the whole grid, not 5 x 8 cells
    want = jaxmj.geom_distance(m, d, *zip(*pairs), 0.3)
    traced = jax.jit(lambda m, d: jaxmj.geom_distance(m, d, *zip(*pairs), 0.3))(m, d)
    for x, y in zip(traced, want):
      np.testing.assert_allclose(np.asarray(x), np.asarray(y), atol=1e-12)
