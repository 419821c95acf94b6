"""Mesh collisions (jaxmj.collision.mesh and the convex collider) against mj_collision.

Meshes collide as their convex hulls. Each case puts the two geoms on free bodies in a small
MJCF, runs mj_forward, and compares d.contact with our contacts for the pair; our hull
vertices are jaxmj's compiled `mesh_hullvert` rows, so the compiler is part of the test.
Configurations are random: penetrating, touching, separated inside the margin, separated
beyond it (the margin makes MuJoCo report contacts at positive distance).

Where MuJoCo's algorithm differs in kind, the test says so and compares less:
* plane-mesh: the whole contact set, order included, to 1e-12 (MuJoCo 4.0's rule: the
  support vertex, by hill climbing for meshes of >= 10 vertices, then up to three corners of
  the hull polygon through it facing the plane most, pruned to a quadrilateral).
* mesh vs capsule / cylinder / box / mesh: MuJoCo 4.0 replaces the EPA contact by polygon
  clipping points ("multicontact") when hull faces or edges are nearly aligned, which random
  point-cloud hulls often are. This test calls the single-contact convex collider (the EPA
  contact); the driver adds MuJoCo's multiccd points, held to 1e-8 on 132 random mesh scenes
  by test_multiccd.py::test_mesh_features_come_from_epa_vertices. Where MuJoCo returns one
  contact it must equal ours (1e-9 after EPA; sphere / capsule results come from GJK's
  closest points, which agree to its tolerance, as in test_convex.py). Where it returns
  several, our depth must be within 2e-3 of MuJoCo's deepest and our normal within 0.15 of
  its first contact's: the clipping takes the normal from a hull face within MuJoCo's
  alignment tolerance of the EPA direction (measured: <= 7e-4 in depth, <= 0.08 in normal).
"""


import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
from mujoco_compare import jit_fast as jit0  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.collision import mesh  # noqa: E402
from jaxmj.collision.ccd import convex  # noqa: E402
from jaxmj.collision.primitive import GeomFrame  # noqa: E402
from jaxmj.types import GeomType  # noqa: E402

BOX = "-.1 -.1 -.1  .1 -.1 -.1  -.1 .1 -.1  .1 .1 -.1  -.1 -.1 .1  .1 -.1 .1  -.1 .1 .1  .1 .1 .1"
_rng = np.random.default_rng(7)
CLOUD = " ".join(f"{x:.5f}" for x in (_rng.normal(size=(40, 3)) * [0.1, 0.07, 0.05]).ravel())
_ang = np.sort(_rng.uniform(0, 2 * np.pi, 9))
_rad = _rng.uniform(0.07, 0.12, 9)
PRISM9 = " ".join(f"{r * np.cos(a):.5f} {r * np.sin(a):.5f} {z}"
                  for a, r in zip(_ang, _rad) for z in (-0.05, 0.05))
OTHER = {"sphere": 'size=".06"', "capsule": 'size=".04 .08"', "ellipsoid": 'size=".05 .07 .09"',
         "cylinder": 'size=".05 .07"', "box": 'size=".05 .06 .07"', "mesh": 'mesh="cloud"'}
MARGIN = 0.01  # per geom


def _unit(rng, n):
  v = rng.normal(size=n)
  return v / np.linalg.norm(v)


def _quat(q):
  return " ".join(f"{x:.12f}" for x in q)


def _frame(m, d, g):
  return GeomFrame(np.asarray(d.geom_xpos[g]), np.asarray(d.geom_xmat[g]).reshape(3, 3),
                   np.asarray(m.geom_size[g]))


def _plane_cases(rng, verts, n, flat=False):
  """(xml, mjData) with a mesh resting near a plane: tilted by up to ~3 degrees (several
  vertices near the plane) or, flat, by a quarter turn (faces parallel to the plane: ties
  among support vertices), at heights from penetrating to beyond the margin."""
  out = []
  for i in range(n):
    q = np.concatenate([[1.0], rng.normal(scale=0.03, size=3)])
    if flat:
      q = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 0, 1, 0], [0, 0, 0, 1]][i % 4], float)
    z = rng.uniform(-0.015, 0.03)
    xml = f"""<mujoco><asset><mesh name="m" vertex="{verts}"/></asset><worldbody>
      <geom type="plane" size="2 2 .1" margin="{MARGIN}"/>
      <body pos="0 0 0" quat="{_quat(q / np.linalg.norm(q))}"><freejoint/>
        <geom type="mesh" mesh="m" margin="{MARGIN}"/></body></worldbody></mujoco>"""
    mj = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mj)
    mujoco.mj_forward(mj, d)
    # put the lowest hull vertex at height z
    verts_w = mj.mesh_vert.astype(float) @ d.geom_xmat[1].reshape(3, 3).T + d.geom_xpos[1]
    d.qpos[2] = z - verts_w[:, 2].min()
    mujoco.mj_forward(mj, d)
    out.append((xml, mj, d))
  return out


def test_plane_mesh_matches_mj_collision():
  """Box (8 vertices: exhaustive support), a nonagon prism and a point cloud (hill climbing),
  tilted and flat; more than four hull vertices are often below the margin."""
  rng = np.random.default_rng(0)
  shapes = {"box": BOX, "nonagon_prism": PRISM9, "cloud": CLOUD}
  cases = [(k, *c) for k, (name, verts) in enumerate(shapes.items())
           for c in _plane_cases(rng, verts, 16) + _plane_cases(rng, verts, 8, flat=True)]
  # one model holding the three meshes: one compiled collider for all cases
  assets = "".join(f'<mesh name="{name}" vertex="{v}"/>' for name, v in shapes.items())
  geoms = "".join(f'<geom type="mesh" mesh="{name}"/>' for name in shapes)
  m = jaxmj.Model.from_xml_string(f"""<mujoco><asset>{assets}</asset><worldbody>
    <geom type="plane" size="1 1 .1"/>{geoms}</worldbody></mujoco>""")
  args = mesh.pair_arguments(m, (GeomType.PLANE, GeomType.MESH), np.zeros(len(cases), int),
                             np.array([1 + k for k, *_ in cases]))
  stack = lambda fs: GeomFrame(*(np.stack(x) for x in zip(*fs)))
  planes = stack([_frame(mj, d, 0) for _, _, mj, d in cases])
  meshes = stack([_frame(mj, d, 1) for _, _, mj, d in cases])
  plane_mesh = jit0(jax.vmap(mesh.plane_mesh, in_axes=(0, 0, None, 0, 0, 0)))
  dist, pos, frame = (np.asarray(x) for x in plane_mesh(planes, meshes, 2 * MARGIN, *args))
  counts = set()
  for i, (k, _, _, d) in enumerate(cases):
    ours = np.where(dist[i] < 1e9)[0]
    assert len(ours) == d.ncon, (k, i, len(ours), d.ncon)
    counts.add(d.ncon)
    for n, j in enumerate(ours):
      c = d.contact[n]
      np.testing.assert_allclose(dist[i, j], c.dist, atol=1e-12, err_msg=f"{k} {i}")
      np.testing.assert_allclose(pos[i, j], c.pos, atol=1e-12, err_msg=f"{k} {i}")
      np.testing.assert_allclose(frame[i, j], c.frame.reshape(3, 3), atol=1e-12)
  assert counts == {0, 1, 2, 3, 4}, counts


def _pair_cases(rng, n):
  """Random placements of each convex type against the point-cloud hull mesh."""
  cases = []
  for t in OTHER:
    for k in range(n):
      u = _unit(rng, 3)
      p2 = u * rng.uniform(0.02, 0.2)
      xml = f"""<mujoco><asset><mesh name="cloud" vertex="{CLOUD}"/></asset><worldbody>
        <body><freejoint/><geom type="mesh" mesh="cloud" margin="{MARGIN * (k % 2)}"/></body>
        <body pos="{p2[0]:.9f} {p2[1]:.9f} {p2[2]:.9f}" quat="{_quat(_unit(rng, 4))}">
          <freejoint/><geom type="{t}" {OTHER[t]} margin="{MARGIN * (k % 2)}"/></body>
        </worldbody></mujoco>"""
      mj = mujoco.MjModel.from_xml_string(xml)
      d = mujoco.MjData(mj)
      mujoco.mj_forward(mj, d)
      cases.append((t, xml, mj, d))
  return cases


@pytest.mark.slow  # its own GJK/EPA compile; test_convex.py covers mesh-sphere/ellipsoid
def test_mesh_convex_pairs_match_mj_collision():
  rng = np.random.default_rng(1)
  cases = _pair_cases(rng, 12)
  m = jaxmj.Model.from_xml_string(cases[0][1])
  hull = np.asarray(m.mesh_hullvert[0])
  rows = []
  for _, _, mj, d in cases:
    g1, g2 = (0, 1) if mj.geom_type[0] <= mj.geom_type[1] else (1, 0)
    rows.append((mj.geom_type[g1], mj.geom_type[g2], _frame(mj, d, g1), _frame(mj, d, g2),
                 2 * mj.geom_margin[0]))
  stack = lambda fs: GeomFrame(*(np.stack(x) for x in zip(*fs)))
  fn = jit0(jax.vmap(lambda t1, t2, a, b, mg: convex.collide_convex(
    t1, t2, a, b, mg, 1e-6, iterations=35, verts1=hull, verts2=hull)))
  dist, pos, frame = (np.asarray(x) for x in fn(
    np.array([r[0] for r in rows]), np.array([r[1] for r in rows]), stack([r[2] for r in rows]),
    stack([r[3] for r in rows]), np.array([r[4] for r in rows])))
  single = multi = 0
  for i, (t, _, _, d) in enumerate(cases):
    ours = dist[i] < 1e9
    assert ours == (d.ncon > 0), f"{t} case {i}: contact {ours}, MuJoCo ncon {d.ncon}"
    if d.ncon == 1:
      single += 1
      c = d.contact[0]
      gjk = t in ("sphere", "capsule") or rows[i][4] > 0
      tol = dict(dist=1e-7, normal=1e-4, pos=1e-5) if gjk else dict(dist=1e-9, normal=1e-9,
                                                                     pos=1e-9)
      assert abs(dist[i] - c.dist) < tol["dist"], (t, i)
      assert np.abs(pos[i] - c.pos).max() < tol["pos"], (t, i)
      assert np.abs(frame[i] - c.frame.reshape(3, 3)).max() < tol["normal"], (t, i)
    elif d.ncon > 1:
      multi += 1
      deepest = min(c.dist for c in d.contact[:d.ncon])
      assert abs(dist[i] - deepest) < 2e-3, (t, i)
      assert np.abs(frame[i, 0] - d.contact[0].frame[:3]).max() < 0.15, (t, i)
  assert single >= 20 and multi >= 5


def test_mesh_on_plane_through_the_driver():
  xml = f"""<mujoco><asset><mesh name="m" vertex="{BOX}"/></asset><worldbody>
    <geom type="plane" size="2 2 .1"/>
    <body pos="0 0 .095" euler="1 -.5 0"><freejoint/><geom type="mesh" mesh="m"/></body>
    </worldbody></mujoco>"""
  m, mj = jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
  d = mujoco.MjData(mj)
  mujoco.mj_forward(mj, d)
  from jaxmj.collision.driver import collision
  from jaxmj.smooth.kinematics import kinematics

  out = jit0(lambda m, d: collision(m, kinematics(m, d)))(m, jaxmj.make_data(m))
  c = out.contact
  act = np.asarray(c.active)
  assert act.sum() == d.ncon
  for k, j in enumerate(np.where(act)[0]):
    np.testing.assert_allclose(np.asarray(c.dist)[j], d.contact[k].dist, atol=1e-12)
    np.testing.assert_allclose(np.asarray(c.pos)[j], d.contact[k].pos, atol=1e-12)
