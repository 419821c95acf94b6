"""ray / multi_ray against mj_ray / mj_multiRay on primitive and mesh geoms."""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
from mujoco_compare import load_both  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.collision.ray import multi_ray, ray  # noqa: E402
from jaxmj.smooth.kinematics import kinematics  # noqa: E402

XML = """
<mujoco>
  <asset>
    <mesh name="tetra" vertex="0 0 0  0.6 0 0  0 0.5 0  0 0 0.7"/>
    <mesh name="prism" vertex="-.3 -.2 -.2  .3 -.2 -.2  0 .3 -.2  -.3 -.2 .2  .3 -.2 .2  0 .3 .2"/>
  </asset>
  <worldbody>
    <geom name="tetra" type="mesh" mesh="tetra" pos="-1 -1.2 0.5" euler="10 20 30"/>
    <body name="prism" pos="0.2 -1.5 1.5" euler="40 0 10">
      <geom name="prism" type="mesh" mesh="prism" group="2"/>
    </body>
    <geom name="plane" type="plane" size="3 3 0.1" group="1"/>
    <geom name="infinite" type="plane" size="0 0 0.1" pos="0 0 -1" euler="30 0 0" group="2"/>
    <geom name="invisible" type="sphere" size="0.4" pos="0 0 3" rgba="1 1 1 0"/>
    <body name="sphere" pos="0 0 1">
      <joint type="ball"/>
      <geom name="sphere" type="sphere" size="0.5"/>
    </body>
    <body name="capsule" pos="0 1.2 1" euler="30 50 0">
      <freejoint/>
      <geom name="capsule" type="capsule" size="0.25 0.5" group="3"/>
    </body>
    <body name="ellipsoid" pos="1.2 -1 0.8" euler="10 20 30">
      <geom name="ellipsoid" type="ellipsoid" size="0.3 0.5 0.2"/>
    </body>
    <body name="cylinder" pos="-1.2 0.3 0.9" euler="70 10 0">
      <joint axis="1 0 0"/>
      <geom name="cylinder" type="cylinder" size="0.3 0.4" group="4"/>
    </body>
    <body name="box" pos="1.2 1 1" euler="0 45 20">
      <joint type="slide"/>
      <geom name="box" type="box" size="0.5 0.25 0.3" group="5"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def scene():
  m, mj = load_both(xml=XML)
  d = mujoco.MjData(mj)
  d.qpos[:] = mj.qpos0
  mujoco.mj_forward(mj, d)
  dj = jax.jit(kinematics)(m, jaxmj.make_data(m).replace(qpos=d.qpos.copy()))
  return m, mj, d, dj


def _rays(n: int, seed: int):
  """Ray origins around the scene aimed near the geoms (hits and misses), some inside."""
  rng = np.random.default_rng(seed)
  pnt = rng.uniform([-2.5, -2.5, -0.5], [2.5, 2.5, 3.0], size=(n, 3))
  targets = np.array([[0, 0, 1], [0, 1.2, 1], [1.2, -1, 0.8], [-1.2, 0.3, 0.9], [1.2, 1, 1],
                      [-0.9, -1.0, 0.7], [0.2, -1.5, 1.5], [0.5, 0.5, 0.0]])
  aim = targets[rng.integers(len(targets), size=n)] + rng.normal(scale=0.4, size=(n, 3))
  vec = (aim - pnt) * rng.uniform(0.5, 2.0, size=(n, 1))  # non-unit on purpose
  inside = rng.integers(len(targets) - 1, size=n // 4)
  pnt[: n // 4] = targets[inside] + rng.normal(scale=0.05, size=(n // 4, 3))
  return pnt, vec


def _mj_ray(mj, d, p, v, geomgroup=None, flg_static=True, bodyexclude=-1):
  gid = np.zeros(1, np.int32)
  group = None if geomgroup is None else np.asarray(geomgroup, np.uint8)
  dist = mujoco.mj_ray(mj, d, p, v, group, flg_static, bodyexclude, gid)
  return dist, int(gid[0])


@pytest.mark.parametrize("options", [
  {},
  {"geomgroup": (1, 0, 1, 1, 0, 1), "bodyexclude": 1},
  {"geomgroup": (0, 1, 0, 0, 1, 1), "bodyexclude": 5, "flg_static": False},
], ids=["all", "geomgroup_bodyexclude", "no_static"])
def test_ray_matches_mj_ray(scene, options):
  m, mj, d, dj = scene
  pnt, vec = _rays(120, seed=len(str(options)))
  fn = jax.jit(jax.vmap(lambda p, v: ray(m, dj, p, v, **options)))
  dist, gid = (np.asarray(x) for x in fn(pnt, vec))
  hit_types = set()
  for k in range(len(pnt)):
    ref_dist, ref_gid = _mj_ray(mj, d, pnt[k], vec[k], **options)
    assert int(gid[k]) == ref_gid, k
    np.testing.assert_allclose(dist[k], ref_dist, atol=1e-9, rtol=1e-9)
    hit_types.add(int(mj.geom_type[ref_gid]) if ref_gid >= 0 else -1)
  if not options:
    assert {0, 2, 3, 4, 5, 6, 7, -1} <= hit_types  # every type hit, and some misses


def test_multi_ray_matches_mj_multi_ray(scene):
  m, mj, d, dj = scene
  rng = np.random.default_rng(3)
  pnt = np.array([0.3, -0.2, 2.4])
  vec = rng.normal(size=(200, 3))
  vec /= np.linalg.norm(vec, axis=1, keepdims=True)
  dist, gid = jax.jit(lambda v: multi_ray(m, dj, pnt, v, bodyexclude=2))(vec)
  ref_dist, ref_gid = np.zeros(len(vec)), np.zeros(len(vec), np.int32)
  mujoco.mj_multiRay(mj, d, pnt, vec.ravel(), None, 1, 2, ref_gid, ref_dist, None, len(vec),
                     mujoco.mjMAXVAL)
  np.testing.assert_array_equal(np.asarray(gid), ref_gid)
  np.testing.assert_allclose(dist, ref_dist, atol=1e-9, rtol=1e-9)


def test_ray_gradient_is_finite(scene):
  m, _, _, dj = scene
  # Obliquely onto the sphere: against central differences.
  pnt, vec = np.array([0.1, -0.2, 2.5]), np.array([0.1, 0.05, -1.0])
  f = jax.jit(lambda p: ray(m, dj, p, vec)[0])
  g = jax.grad(f)(pnt)
  fd = [(f(pnt + e) - f(pnt - e)) / 2e-6 for e in np.eye(3) * 1e-6]
  np.testing.assert_allclose(g, fd, atol=1e-6)


def test_equal_ray_options_share_one_trace_and_wrong_shapes_are_named(scene, monkeypatch):
  from jaxmj.collision import ray as ray_lib

  m, mj, d, dj = scene
  traces = []
  candidates = ray_lib.candidates
  monkeypatch.setattr(ray_lib, "candidates", lambda *a: traces.append(1) or candidates(*a))
  pnt, vec = np.array([0.3, -0.2, 2.4]), np.array([0.05, 0.02, -1.0])
  jax.clear_caches()  # no trace of an earlier test serves this model
  try:
    one = ray(m, dj, pnt, vec, geomgroup=[1, 1, 0, 1, 1, 1], bodyexclude=2)
    two = ray(m, dj, list(pnt), vec, geomgroup=np.array([1, 1, 0, 1, 1, 1]),
              bodyexclude=[2])
    assert len(traces) == 1
    fan = multi_ray(m, dj, pnt, np.stack([vec, -vec]), geomgroup=(1, 1, 0, 1, 1, 1),
                    bodyexclude=2)
    assert len(traces) == 2  # a fan is its own program
  finally:
    jax.clear_caches()  # nor does the counting trace serve later tests
  ref_dist, ref_gid = _mj_ray(mj, d, pnt, vec, geomgroup=(1, 1, 0, 1, 1, 1), bodyexclude=2)
  for dist, gid in (one, two, (fan[0][0], fan[1][0])):
    assert int(gid) == ref_gid
    np.testing.assert_allclose(dist, ref_dist, atol=1e-9, rtol=1e-9)
  with pytest.raises(ValueError, match=r"ray: vec must have shape \(3,\)"):
    ray(m, dj, pnt, np.stack([vec, vec]))
  with pytest.raises(ValueError, match=r"multi_ray: vec must have shape \(nray, 3\)"):
    multi_ray(m, dj, pnt, vec)


HFIELD = """
<mujoco>
  <asset>
    <hfield name="h" nrow="5" ncol="5" size="1 .8 .4 .2"
            elevation="0 1 2 1 0  1 3 2 2 1  0 2 5 3 1  2 1 3 1 0  1 0 1 2 3"/>
  </asset>
  <worldbody>
    <geom type="hfield" hfield="h" pos=".1 -.2 .3" euler="10 -20 30"/>
  </worldbody>
</mujoco>
"""


def test_hfield_rays_match_mj_ray():
  """Rays onto the surface, the sides of the elevation box and the base."""
  m, mj = load_both(xml=HFIELD)
  d = mujoco.MjData(mj)
  mujoco.mj_forward(mj, d)
  dj = jax.jit(kinematics)(m, jaxmj.make_data(m))
  rng = np.random.default_rng(0)
  n = 300
  pnt = d.geom_xpos[0] + rng.normal(scale=1.5, size=(n, 3))
  aim = d.geom_xpos[0] + rng.uniform(-1, 1, size=(n, 3)) * [1.0, 0.8, 0.4]
  vec = aim - pnt
  # the Model is a jit argument: the field's elevations and sizes are traced leaves
  cast = jax.jit(jax.vmap(lambda m, p, v: ray(m, dj, p, v), in_axes=(None, 0, 0)))
  dist, gid = (np.asarray(x) for x in cast(m, pnt, vec))
  hits = 0
  for k in range(n):
    ref_dist, ref_gid = _mj_ray(mj, d, pnt[k], vec[k])
    assert int(gid[k]) == ref_gid, k
    np.testing.assert_allclose(dist[k], ref_dist, atol=1e-9, rtol=1e-9, err_msg=str(k))
    hits += ref_gid >= 0
  assert hits > n // 2


def _large_field(nrow: int, ncol: int) -> str:
  rng = np.random.default_rng(7)
  elevation = " ".join(f"{x:.3f}" for x in rng.uniform(0, 1, nrow * ncol))
  return f"""<mujoco><asset>
    <hfield name="h" nrow="{nrow}" ncol="{ncol}" size="3 2 .5 .1" elevation="{elevation}"/>
  </asset><worldbody>
    <geom type="hfield" hfield="h" pos=".2 -.1 .05" euler="3 -4 25"/>
  </worldbody></mujoco>"""


@pytest.mark.parametrize("nrow, ncol", [(41, 29), (29, 41), (2, 17)])
def test_rays_over_large_heightfields_match_mj_ray(nrow, ncol):
  """Only the cells a ray's segment crosses are tested (mj_rayHfield tests the segment's
  bounding rectangle of cells): rays from above, from inside the elevation box, grazing it
  nearly level in every direction, straight down, along the grid's axes, and low onto each
  side of the elevation box all hit what mj_ray hits, on fields longer along rows, along
  columns, and one cell wide."""
  m, mj = load_both(xml=_large_field(nrow, ncol))
  d = mujoco.MjData(mj)
  mujoco.mj_forward(mj, d)
  dj = jax.jit(kinematics)(m, jaxmj.make_data(m))
  rng = np.random.default_rng(1)
  center, mat = d.geom_xpos[0], d.geom_xmat[0].reshape(3, 3)
  local = lambda x: center + x @ mat.T  # noqa: E731
  n = 60
  above = local(rng.uniform(-1, 1, (n, 3)) * [3.5, 2.5, 0] + [0, 0, 1.5])
  inside = local(rng.uniform(-1, 1, (n, 3)) * [2.8, 1.8, 0] + [0, 0, 0.45])
  aims = local(rng.uniform(-1, 1, (n, 3)) * [3, 2, 0.25] + [0, 0, 0.25])
  angle = rng.uniform(0, 2 * np.pi, n)
  level = np.stack([np.cos(angle), np.sin(angle), rng.uniform(-0.08, -0.01, n)], -1) @ mat.T
  axes = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, -1]], float) @ mat.T
  # from outside each side, low, aimed across the field: below the side's profile they hit
  # the side (its profile read along that edge of the grid), above it the surface or nothing
  u = rng.uniform(-0.95, 0.95, (n, 1))
  z = rng.uniform(0.01, 0.26, (n, 1))
  side = np.concatenate([np.hstack([np.full((n, 1), 3.5), 2 * u, z]),
                         np.hstack([np.full((n, 1), -3.5), 2 * u, z]),
                         np.hstack([3 * u, np.full((n, 1), 2.5), z]),
                         np.hstack([3 * u, np.full((n, 1), -2.5), z])])
  across = side * [-1, -1, 1] + rng.normal(scale=0.2, size=side.shape) * [1, 1, 0.1]
  pnt = np.concatenate([above, inside, inside, above, np.repeat(inside[:5], 5, 0), local(side)])
  vec = np.concatenate([aims - above, rng.normal(size=(n, 3)), level,
                        np.broadcast_to(-mat[:, 2], (n, 3)), np.tile(axes, (5, 1)),
                        (across - side) @ mat.T])
  cast = jax.jit(jax.vmap(lambda m, p, v: ray(m, dj, p, v), in_axes=(None, 0, 0)))
  dist, gid = (np.asarray(x) for x in cast(m, pnt, vec))
  hits = 0
  for k in range(len(pnt)):
    ref_dist, ref_gid = _mj_ray(mj, d, pnt[k], vec[k])
    assert int(gid[k]) == ref_gid, k
    np.testing.assert_allclose(dist[k], ref_dist, atol=1e-9, rtol=1e-9, err_msg=str(k))
    hits += ref_gid >= 0
  assert hits > len(pnt) // 2
