"""MuJoCo 4.0's multiccd (collision/multiccd.py) against mujoco 4.0.0, float64.

Default tests run the multiccd stage alone from MuJoCo's own convex contact (the same XML with
mjDSBL_MULTICCD gives it), so no GJK/EPA program is compiled; slow tests run the whole convex
collider and trajectories. Geometry: a base geom whose upper face is at z = 0.05 and a top
geom in a free body (tests/collision/test_multicontact_survey.py's scenes).
"""

import functools

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from mujoco_compare import jit_fast as jit0  # noqa: E402
from test_multicontact_survey import CUBE, GEOMS  # noqa: E402  (the survey's scenes)

import jaxmj  # noqa: E402
from jaxmj import math  # noqa: E402
from jaxmj.collision import multiccd  # noqa: E402
from jaxmj.collision.primitive import GeomFrame  # noqa: E402

P = multiccd.NCAP


def scene(base, top, z, euler, margin=0.0, xy=".01 .02"):
  return f"""<mujoco><asset><mesh name="cube" vertex="{CUBE}" scale=".1 .1 .1"/>
    <mesh name="slab" vertex="{CUBE}" scale=".3 .3 .05"/></asset><worldbody>
    <geom {GEOMS[base]} margin="{margin}"/>
    <body pos="{xy} {z}" euler="{euler}"><freejoint/><geom {GEOMS[top]} margin="{margin}"/>
    </body></worldbody></mujoco>"""


def _mujoco(xml, multiccd_on=True):
  mj = mujoco.MjModel.from_xml_string(xml)
  if not multiccd_on:
    mj.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_MULTICCD)
  d = mujoco.MjData(mj)
  mujoco.mj_forward(mj, d)
  return mj, d


def _pair_rows(xmls):
  """Per scene: the pair's arguments (geom 1 and 2 in MuJoCo's order) and MuJoCo's contacts
  with and without multiccd."""
  rows, ref, single = [], [], []
  for xml in xmls:
    mj, d = _mujoco(xml)
    _, d1 = _mujoco(xml, multiccd_on=False)
    m = jaxmj.Model.from_xml_string(xml)
    g1, g2 = (int(g) for g in d1.contact[0].geom)
    frames = [(d.geom_xpos[g], d.geom_xmat[g].reshape(3, 3), mj.geom_size[g]) for g in (g1, g2)]
    polys = [tuple(x[0] for x in multiccd.mesh_polygons(m, np.array([g]), P)) + (_hull(m, g),)
             for g in (g1, g2)]
    rows.append((int(mj.geom_type[g1]), int(mj.geom_type[g2]), *frames[0], *frames[1],
                 d1.contact[0].frame[:3].copy(), mj.geom_margin[g1] + mj.geom_margin[g2],
                 abs(d1.contact[0].dist), *polys[0], *polys[1]))
    ref.append([(c.dist, c.pos.copy(), c.frame[:3].copy()) for c in d.contact[:d.ncon]])
    single.append(d1.ncon)
  return [np.stack([r[i] for r in rows]) for i in range(len(rows[0]))], ref, single


def _hull(m, g):
  """The geom's mesh hull vertices (MeshPolygons.hull), zeros for a geom that is no mesh."""
  return np.asarray(m.mesh_hullvert[max(int(m.geom_dataid[g]), 0)]) * (m.geom_type[g] == 7)


def around(normal, delta=1e-5):
  """Three support directions 120 degrees apart, delta off MuJoCo's normal: a stand-in for the
  vertices of EPA's final face (MuJoCo does not report them) that span any face flat to the
  contact and both sides of any edge or side parallel to it, and no more (tilts here are at
  least a degree; the whole collider with EPA's own face is test_collide_matches_mj_collision)."""
  e1 = jnp.cross(normal, jnp.where(jnp.abs(normal[0]) < 0.6, jnp.array([1.0, 0, 0]),
                                   jnp.array([0, 1.0, 0])))
  e1 = e1 / jnp.linalg.norm(e1)
  e2 = jnp.cross(normal, e1)
  t = np.radians([90.0, 210.0, 330.0])
  d = normal + delta * (np.cos(t)[:, None] * e1 + np.sin(t)[:, None] * e2)
  return d / jnp.linalg.norm(d, axis=1, keepdims=True)


@functools.cache
def _stage():
  def one(t1, t2, p1, m1, s1, p2, m2, s2, normal, margin, depth, *polys):
    return multiccd.polygon_contacts(
      t1, t2, GeomFrame(p1, m1, s1), GeomFrame(p2, m2, s2), normal, around(normal), margin,
      multiccd.MeshPolygons(*polys[:6]), multiccd.MeshPolygons(*polys[6:]), P, 3, depth)

  return jit0(jax.vmap(one))


def _ours(xmls):
  args, ref, single = _pair_rows(xmls)
  use, dist, pos, frame = (np.asarray(x) for x in _stage()(*args))
  out = []
  for i in range(len(xmls)):
    k = dist[i] < 1e9
    out.append((bool(use[i]), dist[i][k], pos[i][k], frame[i][k, 0]))
  return out, ref, single


def placed(pos1, quat1, pos2, quat2):
  """testdata/model.xml's cylinder (geom 13, welded) and box (geom 15) at MuJoCo's state of a
  step of its rollout (tests/collision/test_bundled_contacts.py): the cylinder's side line lies
  across the box's face and over the face's edge, so the clipped edge is two points at that
  edge (a duplicate pair) and two above the face (dropped)."""
  return f"""<mujoco><asset><mesh name="cube" vertex="{CUBE}" scale=".1 .1 .1"/></asset>
    <worldbody><geom type="cylinder" size=".04 .316227766016838" pos="{pos1}" quat="{quat1}"/>
    <body pos="{pos2}" quat="{quat2}"><freejoint/><geom type="box" size=".05 .05 .05"/></body>
    </worldbody></mujoco>"""


# steps 83 and 82: at 83 the box face is within FACE_TOL of EPA's normal; at 82 it is 5.2
# degrees off, and MuJoCo takes it from the box corners of EPA's final face
STEP83 = placed("-0.49865272938417904 0.3998314779108548 0.6939733782969018",
                "0.7266193466265606 0.6486218706007791 -0.22652555980769337 0.0004060051087548046",
                "-0.5869822818144841 0.42158508790391136 0.7240000025123643",
                "0.9425072183039068 -0.12489606704446304 0.25575271995187976 -0.1751332695951067")
STEP82 = placed("-0.4986373877407541 0.3998313003615558 0.6939630310265783",
                "0.7266523724997975 0.6485647645508116 -0.22658317445856166 0.00037520107577649665",
                "-0.5864440709906507 0.4215689780909567 0.7254427083726641",
                "0.9397858991502874 -0.13115576493993242 0.2628035669317567 -0.17474242269481324")

def deep_box(pos, euler):
  """A box (.06 .08 .1) sunk deep into a cylinder disc (.3 .05) at random: EPA's final face has
  its three cylinder vertices on one cap, and MuJoCo clips the disc's side line by the box face
  at EPA's box corners that is perpendicular to it, though the cap faces the EPA normal."""
  return f"""<mujoco><asset><mesh name="cube" vertex="{CUBE}" scale=".1 .1 .1"/></asset>
    <worldbody><geom type="cylinder" size=".3 .05"/><body pos="{pos}" euler="{euler}"><freejoint/>
    <geom type="box" size=".06 .08 .1"/></body></worldbody></mujoco>"""


DEEP = [deep_box(*c) for c in [
  ("-.05 .218 .027", "86.4 266.9 242.8"), ("-.075 -.067 .01", "244.9 282.7 338.7"),
  (".104 -.249 .02", "157.2 73.2 117"), ("-.122 -.173 .055", "346.4 329.6 158.7"),
  (".198 -.015 -.011", "328 318.3 45.6"), ("-.052 .118 -.039", "85.2 177.7 275.6")]]

# (scene, how to compare): "exact" same contacts in the same order to 1e-10; "set" same
# contacts in any order (edge ends ordered by EPA's vertex); "side" a cylinder side line, whose
# place along the surface comes from EPA's vertex (here the normal stands in: 1e-4), in any
# order or ("side_ordered") in MuJoCo's; "epa" features from the vertices of EPA's final face
# in a deep overlap, which `around` does not model (the whole collider only:
# test_collide_matches_mj_collision)
CASES = [
  (("disc", "box", .14, "3 0 0"), "exact"),  # box face on a cap, tilted: four depths
  (("disc", "box", .14, "0 0 5"), "exact"),
  (("disc", "box", -.14, "0 0 5"), "exact"),  # box under the disc: its top face
  (("disc", "box", .148, "3 0 0"), "exact"),  # two corners above the face are dropped
  (("disc", "box", .165, "3 0 0", .02), "exact"),  # apart, inside the margin: four points
  (("disc", "cyl", .14, "0 0 0"), "exact"),  # 16-gon inside a cap: MuJoCo's quadrilateral
  (("disc", "cyl", -.14, "0 0 0"), "exact"),  # top cap (clockwise from outside)
  (("slab", "mbox", .14, "2 1 30"), "exact"),
  (("mslab", "mbox", .14, "3 0 30"), "exact"),  # mesh face on mesh face
  (("mslab", "mbox", .14, "0 0 30", .02), "exact"),
  (("disc", "mbox", .14, "0 0 10"), "exact"),
  (("mslab", "box", .14, "0 0 30"), "exact"),
  (("disc", "cap", .09, "93 0 0"), "exact"),  # capsule segment on a cap
  (("mslab", "cap", .09, "87 0 0"), "exact"),
  # capsules with their cores apart, inside the margin: the segment moves out by radius plus
  # half the margin, then back by half the margin along the normal
  (("disc", "cap", .098, "92 0 20", .02), "exact"),
  (("disc", "cap", .104, "91 1 20", .02), "exact"),
  (("disc", "cap", .132, "93 0 20", .02), "exact"),
  (("disc", "cap", .137, "93 0 20", .02), "exact"),  # the far end beyond the margin
  (("mslab", "cap", .106, "87 0 40", .01), "exact"),
  (("disc", "box", .18, "45 0 0"), "set"),  # box edge on a cap (exactly parallel)
  (("mslab", "box", .18, "45 2 0"), "set"),  # box edge on a mesh face, 2 degrees
  (("mslab", "mbox", .18, "45 0 0"), "set"),  # mesh edge on a mesh face
  (("slab", "cyl", .14, "93 0 0"), "side"),  # cylinder side on a box face, 3 degrees
  (("mslab", "cyl", .14, "90 0 0"), "side"),
  (("mslab", "ell", .14, "0 0 0"), "none"),  # no flat feature: the convex contact stays
  # a cylinder side on a cap counts when the side cylinder's vertices span both its caps;
  # tilted, they lie on one cap, which it offers as its face, and the disc's own side line is
  # clipped by that cap to nothing
  (("disc", "cyl", .14, "90 0 0"), "side"),
  (("disc", "cyl", .14, "90.0001 0 30"), "side"),
  (("disc", "cyl", .14, "90.01 0 0"), "none"),
  (("disc", "cyl", .14, "93 0 0"), "none"),
  (("disc", "box", .18, "45 3 0"), "none"),
  (("slab", "cyl", .14, "98 0 0"), "none"),  # side beyond EDGE_TOL (5.1 degrees)
  (("disc", "box", .14, "6 0 0"), "set"),  # faces beyond FACE_TOL: the lower box edge
  (STEP83, "side_ordered"),  # a side line on a face and over its edge: a duplicate pair
  (STEP82, "side_ordered"),  # the box face 5.2 degrees off the normal, from EPA's corner
] + [(x, "epa") for x in DEEP]


def _xml(case):
  return case if isinstance(case, str) else scene(*case)


def _match(ours, theirs, how):
  use, dist, pos, normal = ours
  assert use and len(dist) == len(theirs)
  tol = 1e-4 if how.startswith("side") else 1e-10
  order = range(len(theirs))
  if how not in ("exact", "side_ordered"):  # pair each MuJoCo contact with our nearest one
    order = [int(np.argmin([np.abs(p - c[1]).max() for p in pos])) for c in theirs]
    assert sorted(order) == list(range(len(theirs)))
  for k, (d, p, n) in zip(order, theirs):
    assert abs(dist[k] - d) < tol and np.abs(pos[k] - p).max() < tol, (k, dist[k], d, pos[k], p)
    assert np.abs(normal[k] - n).max() < 1e-10


def _survey():
  from test_multicontact_survey import CASES as SURVEY

  return [(scene(base, top, z, euler, margin), count) for margin in (0.0, 0.02)
          for base, top, z, euler, count in SURVEY]


def _random_caps():
  """Cylinder caps (16-gons) sunk 2-20 mm into a box face, tilted up to 4.95 degrees (inside
  FACE_TOL) and turned at random: 20 inside the face, 20 hanging over its edges (clipped).
  MuJoCo keeps four of the polygon's 5-16 points; on a regular polygon many quadrilaterals tie
  and its round-off picks one."""
  rng = np.random.default_rng(7)
  out = []
  for k in range(40):
    lo, hi = (0.0, 0.15) if k < 20 else (0.15, 0.33)
    x, y = rng.uniform(lo, hi, 2) * rng.choice([-1, 1], 2)
    a, b = rng.uniform(-3.5, 3.5, 2) * (k % 4 != 0)  # every fourth one upright
    out.append(scene("slab", "cyl", .15 - rng.uniform(.002, .02), f"{a} {b} {rng.uniform(0, 360)}",
                     xy=f"{x} {y}"))
  return out


@functools.cache
def _random_faces():
  """Face on face, tilted up to 3 degrees, turned at random, inside a face or over its edge:
  a mesh box, box or cylinder on a mesh slab or cylinder disc, and a mesh box or cylinder on a
  box slab (polygons of up to 32 points). Scenes where MuJoCo finds no contact are left out."""
  rng = np.random.default_rng(11)
  out = []
  for base, top in [("mslab", "mbox"), ("mslab", "box"), ("mslab", "cyl"), ("disc", "mbox"),
                    ("disc", "box"), ("disc", "cyl"), ("slab", "mbox"), ("slab", "cyl")]:
    for k in range(4):
      edge = k % 2 == 1
      x, y = (rng.uniform(.15, .33, 2) * rng.choice([-1, 1], 2) if edge
              else rng.uniform(-.1, .1, 2))
      a, b = rng.uniform(-3, 3, 2)
      xml = scene(base, top, .15 - rng.uniform(.002, .015), f"{a} {b} {rng.uniform(0, 360)}",
                  xy=f"{x} {y}")
      if _mujoco(xml, multiccd_on=False)[1].ncon:
        out.append(xml)
  return out


@functools.cache
def _all():
  """Our stage on CASES, the survey, the rim case and the random caps and faces, in one
  compiled call."""
  xmls = [_xml(c) for c, _ in CASES] + [x for x, _ in _survey()]
  xmls.append(scene("slab", "cyl", .14, "0 0 17"))
  return _ours(xmls + _random_caps() + _random_faces())


def test_polygon_contacts_match_mujoco():
  ours, ref, single = _all()
  for (case, how), o, r, s in zip(CASES, ours, ref, single):
    if how == "none":
      assert not o[0] and len(r) == s == 1, case
    elif how != "epa":
      _match(o, r, how)


def test_survey_counts_match_mujoco():
  """Every flat-resting case of the survey, with and without margin: MuJoCo's count (the
  contacts themselves are held above and in test_cylinder_cap_on_box_keeps_mujocos_points)."""
  ours, ref, _ = _all()
  n = len(CASES)
  for (_, count), o, r in zip(_survey(), ours[n:], ref[n:len(CASES) + len(_survey())]):
    assert len(r) == count
    assert (len(o[1]) if o[0] else 1) == count
    assert np.all(o[1] < 0) if o[0] else True


def test_cylinder_cap_on_box_keeps_mujocos_points():
  """A cap lying inside a box face (a regular 16-gon, whose quadrilaterals tie in exact
  arithmetic) and the 40 random caps: MuJoCo's four points (or fewer), in its order, to 1e-10.
  Ties go MuJoCo's way because the polygon and the areas are rounded as MuJoCo rounds them
  (its 15-digit cap tables, its clipping and area formulas, no fused multiply-adds), from
  MuJoCo's own geom frames."""
  ours, ref, _ = _all()
  n = len(CASES) + len(_survey())
  for i in range(n, n + 41):
    assert len(ref[i]) == 4 and ours[i][0]
    _match(ours[i], ref[i], "exact")


def test_random_face_pairs_match_mujoco():
  """_random_faces: MuJoCo's contacts (two to four, or its single contact where the faces do
  not align), in its order, to 1e-10."""
  ours, ref, single = _all()
  n = len(CASES) + len(_survey()) + 41
  assert len(ours) - n == len(_random_faces()) >= 24
  for o, r, s in zip(ours[n:], ref[n:], single[n:]):
    if o[0]:
      _match(o, r, "exact")
    else:
      assert len(r) == s == 1


def test_vertex_indices_and_dimensions_follow_mujocos_support_functions():
  """mjc_boxSupport's corner bits and mjc_cylinderSupport's cap (local z < 0: 1, the bottom),
  and simplexDim over the first n vertices, its second distinct vertex swapped in; boxNormals
  and geomEdgeNormals from them."""
  rot = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])  # 90 degrees about z
  box = GeomFrame(jnp.zeros(3), jnp.asarray(rot), jnp.array([.1, .2, .3]))
  cyl = GeomFrame(jnp.zeros(3), jnp.eye(3), jnp.array([.1, .2, 0]))
  dirs = jnp.asarray([[1.0, 1, 1], [1, 1, -1], [-1, 1, 1]])  # local (1 -1 1), (1 -1 -1), (1 1 1)
  flat = jnp.asarray([[1.0, 0, 1e-9], [0, 1, -1e-9], [1, 1, 0]])

  @jit0
  def probe(dirs, flat):
    b3 = multiccd._simplex(multiccd._BOX, box, dirs, 3, None)
    b2 = multiccd._simplex(multiccd._BOX, box, dirs.at[1].set(dirs[0]), 3, None)
    b1 = multiccd._simplex(multiccd._BOX, box, dirs, 1, None)
    c2 = multiccd._simplex(multiccd._CYL, cyl, flat, 3, None)
    c1 = multiccd._simplex(multiccd._CYL, cyl, flat.at[1, 2].set(1e-9), 3, None)
    z = math.opaque_zero(cyl.size[0])
    return (b3, b2, b1.dim, multiccd._box_normals(box, b2), c2,
            multiccd._normals(multiccd._CYL, cyl, c2, None, z)[1],
            multiccd._edges(multiccd._CYL, cyl, c2, flat[0], None, 0.0, None, z), c1.dim,
            multiccd._normals(multiccd._CYL, cyl, c1, None, z))

  b3, b2, b1dim, (normals, count, tags), c2, c2count, (ends, unit, n), c1dim, c1n = probe(
    dirs, flat)
  assert [int(b3.dim), *map(int, b3.idx), *map(int, b3.first)] == [3, 5, 1, 7, 5, 1]
  assert [int(b2.dim), *map(int, b2.first)] == [2, 5, 7]  # simplexDim's swap
  assert int(count) == 2 and list(map(int, tags[:2])) == [0, 4]  # +x then +z, y not shared
  np.testing.assert_allclose(normals[:2], [rot[:, 0], rot[:, 2]])
  assert int(b1dim) == 1
  assert [int(c2.dim), *map(int, c2.idx)] == [2, 0, 1, 0] and int(c2count) == 0  # no cap
  np.testing.assert_allclose(ends[0], [[.1, 0, .2], [.1, 0, -.2]], atol=1e-12)
  assert int(n) == 1 and np.allclose(unit[0], [0, 0, -1])  # the side line, to the other cap
  assert int(c1dim) == 1 and int(c1n[1]) == 1 and np.allclose(c1n[0][0], [0, 0, 1])


def test_polygon_contacts_gradient_is_finite_and_matches_differences():
  """A box face tilted by 3 degrees on a cap: every depth grows with the box's height at
  cos(3 deg) (the depth is measured along the box face's normal)."""
  args, _, _ = _pair_rows([scene("disc", "box", .14, "3 0 0")])
  args = [jnp.asarray(a[0]) for a in args]

  def depths(z):
    p2 = args[5].at[2].add(z)
    return multiccd.polygon_contacts(args[0], args[1], GeomFrame(*args[2:5]),
                                     GeomFrame(p2, *args[6:8]), args[8], args[8], args[9])[1]

  jac = jax.jit(jax.jacfwd(depths))(0.0)
  np.testing.assert_allclose(np.asarray(jac), np.full(4, np.cos(np.radians(3))), atol=1e-9)
  np.testing.assert_allclose(np.asarray(jax.jit(depths)(1e-4) - jax.jit(depths)(0.0)) / 1e-4,
                             np.asarray(jac), atol=1e-6)


def test_plan_gives_multiccd_pairs_four_slots():
  from jaxmj.collision.driver import collision_plan

  for top, slots in (("cyl", 4), ("ell", 1)):
    m = jaxmj.Model.from_xml_string(scene("disc", top, .14, "0 0 0"))
    assert [(g["types"], g["slots"]) for g in collision_plan(m)["groups"]] == [("convex", slots)]
  m = jaxmj.Model.from_xml_string(scene("disc", "cyl", .14, "0 0 0").replace(
    "<worldbody>", '<option><flag multiccd="disable"/></option><worldbody>'))
  assert collision_plan(m)["groups"][0]["slots"] == 1


# ------------------------------------------------------------------------------------------
# the whole collider and trajectories (GJK/EPA compiles: slow)


def random_overlaps(seed, n=120):
  """n random overlaps, alternately a cylinder (.06 .1) on a box slab and a box (.06 .08 .1) in
  a cylinder disc, turned at random and sunk up to 0.09 deep (the survey of the module
  docstring: seeds 5 and 9); scenes where MuJoCo finds no contact are left out."""
  rng = np.random.default_rng(seed)
  base = {"box": 'type="box" size=".3 .3 .05"', "disc": 'type="cylinder" size=".3 .05"'}
  top = {"cyl": 'type="cylinder" size=".06 .1"', "box": 'type="box" size=".06 .08 .1"'}
  out = []
  while len(out) < n:
    b, t = [("box", "cyl"), ("disc", "box")][len(out) % 2]
    x, y, z = rng.uniform(-.25, .25), rng.uniform(-.25, .25), rng.uniform(-.04, .08)
    euler = " ".join(str(e) for e in rng.uniform(0, 360, 3))
    xml = f"""<mujoco><asset><mesh name="cube" vertex="{CUBE}" scale=".1 .1 .1"/></asset>
      <worldbody><geom {base[b]}/><body pos="{x} {y} {z}" euler="{euler}"><freejoint/>
      <geom {top[t]}/></body></worldbody></mujoco>"""  # the unused mesh: CASES' array shapes
    if _mujoco(xml)[1].ncon:
      out.append(xml)
  return out


@pytest.mark.slow
def test_collide_matches_mj_collision():
  """multiccd.collide (GJK/EPA, then the stage) on every CASES scene and 240 random deep
  overlaps: MuJoCo's contacts, CASES in its order, the deep ones in any order (which end of a
  side line comes first follows the order of EPA's final face's vertices, round-off). Cylinder side
  lines go through EPA's first vertex, which matches MuJoCo's to ~1e-7 under vmap (measured
  2.8e-7), so they (and the overlaps' polygons) are held to 1e-6; a kept EPA contact on a
  cylinder to 1e-5 (convex.py's accuracy on curved shapes, see test_convex.py); the rest to
  1e-9. The overlaps' features come from EPA's final face (its vertex indices): all 240 counts
  are MuJoCo's (before MuJoCo 4.0's rules were decoded, with EPA's box corners alone, 3 were
  not), their contacts to 1e-6 (1e-5 a single one) but for at most two (see below)."""
  overlaps = random_overlaps(5) + random_overlaps(9)
  xmls = [_xml(c) for c, _ in CASES] + overlaps
  hows = [how for _, how in CASES] + ["overlap"] * len(overlaps)
  (dist, pos, frame), ref = _collide_all(xmls)
  off = 0
  for i, (xml, how, r) in enumerate(zip(xmls, hows, ref)):
    k = dist[i] < 1e9
    case = CASES[i][0] if i < len(CASES) else xml
    assert k.sum() == len(r), case
    tol = {"side": 1e-6, "side_ordered": 1e-6, "none": 1e-5}.get(how, 1e-9)
    order = range(len(r))
    if how in ("overlap", "epa"):  # a side line starts at EPA's first vertex: either end
      order = [int(np.argmin([np.abs(p - c[1]).max() for p in pos[i][k]])) for c in r]
      assert sorted(order) == list(range(len(r))), case
    if how == "overlap":
      tol = 1e-6 if len(r) > 1 else 1e-5
      err = max(max(abs(dist[i][k][j] - c[0]), np.abs(pos[i][k][j] - c[1]).max(),
                    np.abs(frame[i][k][j][0] - c[2]).max()) for j, c in zip(order, r))
      assert err < 1e-3, (case, err)
      off += err > tol
      continue
    for j, c in zip(order, r):
      dd, pp, ff = dist[i][k][j], pos[i][k][j], frame[i][k][j]
      assert abs(dd - c[0]) < tol and np.abs(pp - c[1]).max() < tol, (case, dd, c[0], pp, c[1])
      assert np.abs(ff[0] - c[2]).max() < 1e-6, case
  # measured: none with XLA's default compile; one with the suite's fast-compile flags, a
  # cylinder side line 3e-4 along the surface (EPA's final face, hence its first vertex, under
  # other round-off)
  assert off <= 2, off


WHEEL = """<mujoco><worldbody><geom type="box" size="1 1 .1" pos="0 0 -.1"/>
  <body pos="0 0 .099" euler="90 0 0"><freejoint/><geom type="cylinder" size=".1 .05"/>
  </body></worldbody></mujoco>"""
MESHES = f"""<mujoco><asset><mesh name="cube" vertex="{CUBE}" scale=".1 .1 .1"/>
  <mesh name="slab" vertex="{CUBE}" scale=".5 .5 .05"/></asset><worldbody>
  <geom type="mesh" mesh="slab" pos="0 0 -.05"/>
  <body pos=".05 -.03 .099" euler="0 0 25"><freejoint/><geom type="mesh" mesh="cube"/></body>
  </worldbody></mujoco>"""


CAPSULE_MARGIN = """<mujoco><worldbody><geom type="cylinder" size=".3 .05" margin=".01"/>
  <body pos=".01 .02 .102" euler="92 0 20"><freejoint/>
  <geom type="capsule" size=".05 .1" margin=".01"/></body></worldbody></mujoco>"""


@pytest.mark.slow
@pytest.mark.parametrize("xml,nstep", [(WHEEL, 40), (MESHES, 40), (CAPSULE_MARGIN, 200)],
                         ids=["wheel", "mesh_box", "capsule_margin"])
def test_resting_trajectory_matches_mj_step(xml, nstep):
  """A cylinder wheel sunk 1 mm into a box floor (2 contacts; one contact drifted 0.13 in
  qpos over these 40 steps), a mesh cube on a mesh slab (4 contacts), and a capsule tilted 2
  degrees settling on a cylinder cap from inside the margin (2 contacts whose points move with
  the margin; measured 3e-16 over 200 steps)."""
  from mujoco_compare import rollout_error

  m, mj = jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
  err, final, dm, ncon = rollout_error(m, mj, nstep)
  assert min(ncon) >= 2 and int(np.asarray(final.contact.active).sum()) == dm.ncon
  assert err < 1e-6, err


_rng = np.random.default_rng(7)
CLOUD = " ".join(f"{x:.5f}" for x in (_rng.normal(size=(40, 3)) * [0.1, 0.07, 0.05]).ravel())
_ang, _rad = np.sort(_rng.uniform(0, 2 * np.pi, 9)), _rng.uniform(.07, .12, 9)
PRISM9 = " ".join(f"{r * np.cos(a):.5f} {r * np.sin(a):.5f} {z}"
                  for a, r in zip(_ang, _rad) for z in (-.05, .05))
MESH_TOPS = {"capsule": 'type="capsule" size=".04 .08"', "box": 'type="box" size=".05 .06 .07"',
             "prism": 'type="mesh" mesh="prism"', "cube": 'type="mesh" mesh="cube"'}


def mesh_scenes(seed, pairs, n, placed=None):
  """n random placements (or the one `placed`: pos and quat strings) per (mesh, top, margin,
  distance range) of `pairs`, every scene with the same mesh assets (one compiled collider for
  all); scenes without contact left out."""
  rng = np.random.default_rng(seed)
  out = []
  for mesh, top, margin, lo, hi in pairs:
    for _ in range(n):
      u = rng.normal(size=3)
      p = u / np.linalg.norm(u) * rng.uniform(lo, hi)
      q = rng.normal(size=4)
      at = placed or dict(pos=" ".join(f"{x:.9f}" for x in p),
                          quat=" ".join(f"{x:.12f}" for x in q))
      xml = f"""<mujoco><asset><mesh name="cloud" vertex="{CLOUD}"/>
        <mesh name="prism" vertex="{PRISM9}"/><mesh name="cube" vertex="{CUBE}" scale=".1 .1 .1"/>
        </asset><worldbody><body><freejoint/>
        <geom type="mesh" mesh="{mesh}" margin="{margin}"/></body>
        <body pos="{at['pos']}" quat="{at['quat']}">
        <freejoint/><geom {MESH_TOPS[top]} margin="{margin}"/></body></worldbody></mujoco>"""
      if _mujoco(xml)[1].ncon:
        out.append(xml)
  return out


def _collide_all(xmls):
  """multiccd.collide on each scene's pair (one vmapped call): (dist, pos, frame) and MuJoCo's
  contacts."""
  args, ref, _ = _pair_rows(xmls)
  verts = []
  for xml in xmls:
    m = jaxmj.Model.from_xml_string(xml)
    _, d1 = _mujoco(xml, multiccd_on=False)
    verts.append([_hull(m, g) for g in d1.contact[0].geom])

  def one(t1, t2, p1, m1, s1, p2, m2, s2, margin, v1, v2, *polys):
    return multiccd.collide(t1, t2, GeomFrame(p1, m1, s1), GeomFrame(p2, m2, s2), margin,
                            1e-6, iterations=35, verts1=v1, verts2=v2,
                            poly1=multiccd.MeshPolygons(*polys[:6]),
                            poly2=multiccd.MeshPolygons(*polys[6:]), npoly=P)

  v1, v2 = (np.stack([v[i] for v in verts]) for i in range(2))
  out = jit0(jax.vmap(one))(*args[:8], args[9], v1, v2, *args[11:])
  return [np.asarray(x) for x in out], ref


def _errors(dist, pos, frame, ref):
  """Per scene: None where the counts differ, else the largest difference of the contacts
  (MuJoCo's, each paired with our nearest one)."""
  out = []
  for i, r in enumerate(ref):
    k = dist[i] < 1e9
    if k.sum() != len(r):
      out.append(None)
      continue
    order = [int(np.argmin([np.abs(p - c[1]).max() for p in pos[i][k]])) for c in r]
    out.append(max(max(abs(dist[i][k][j] - c[0]), np.abs(pos[i][k][j] - c[1]).max(),
                       np.abs(frame[i][k][j][0] - c[2]).max()) for j, c in zip(order, r)))
  return out


# a capsule over a mesh cube, apart, inside the margin, its GJK simplex on a cube face 13
# degrees off the contact normal: MuJoCo 4.0 clips the capsule line by that face (two contacts
# along the face normal; features from the normal gave one contact with another normal)
CAPSULE_OVER_CUBE = dict(pos="-0.105795815 -0.157845679 -0.116712164",
                         quat="0.119426972870 0.841544599267 0.134086643394 0.509470958601")


@pytest.mark.slow
def test_mesh_features_come_from_epa_vertices():
  """Meshes take their multiccd features from the vertices of EPA's final face (GJK's final
  simplex when apart), through mesh_polymap (meshNormals, geomEdgeNormals): CAPSULE_OVER_CUBE
  and 132 scenes of a capsule inside the margin of a mesh or in it, and of mesh-mesh and
  box-mesh overlaps: MuJoCo's contacts (paired in any order: the ends of a clipped edge follow
  the order of EPA's final face's vertices) to 1e-8 (measured 6.4e-9). With features from the
  contact normal and the capsule line through the surface point along it, 7 of the 132 counts
  differed and 22 scenes were off by up to 6e-3."""
  pairs = [("cloud", "capsule", .01, .08, .22), ("cube", "capsule", .01, .08, .22),
           ("prism", "prism", 0.0, 0.0, .12), ("cloud", "box", 0.0, 0.0, .12)]
  xmls = mesh_scenes(3, pairs, 35)
  one = mesh_scenes(0, [("cube", "capsule", .03, 0, 0)], 1, CAPSULE_OVER_CUBE)
  (dist, pos, frame), ref = _collide_all(one + xmls)
  err = _errors(dist, pos, frame, ref)
  assert len(ref[0]) == 2 and err[0] < 1e-9, err[0]
  err = err[1:]
  assert None not in err, [i for i, e in enumerate(err) if e is None]
  assert max(err) < 1e-8, sorted(err)[-5:]


def test_face_pair_is_the_first_aligned_not_the_most_opposed():
  """alignedFaces takes the first pair (geom 1's faces, then geom 2's) below -FACE_TOL. On
  MuJoCo's model/cube (bevelled cubes, step 13: a cube's corner against its neighbour's edge,
  faces tilted 5.7e-5 rad) the bevels along the edge are parallel, more opposed than the
  tilted contact faces; MuJoCo clips the contact faces (four contacts), where picking the
  most opposed pair clipped the bevels to nothing and kept one contact. The normals are
  that state's (geom 1: the faces through its corner; geom 2: the two through its edge)."""
  s, h = 5.72796603e-05, np.sqrt(0.5)
  r3 = np.sqrt(1 / 3)
  n1 = jnp.array([[0, 0, 1], [0, -h, h], [h, 0, h], [r3, -r3, r3]])
  n2 = jnp.array([[-s, 0, -np.sqrt(1 - s * s)], [0, h, -h], [h, 0, -h], [r3, r3, -r3]])
  u = jnp.array([s, 0, np.sqrt(1 - s * s)])
  edges = jnp.zeros((4, 3))
  ff, ef12, ef21, i, j, _ = multiccd._select(n1, 4, n2, 2, edges, 0, edges, 0, 1, 2, u, 1e-6)
  assert bool(ff) and not bool(ef12) and not bool(ef21)
  assert (int(i), int(j)) == (0, 0)
  assert float(n1[1] @ n2[1]) < float(n1[0] @ n2[0])  # the bevels are the more opposed


# a superellipsoid mesh resting on a box face by its pole, where 32 triangles meet (MuJoCo's
# model/surfacevel/carousel.xml, a bag on a belt at step 17)
POLE_ON_BOX = """<mujoco><asset>
  <mesh name="bag" builtin="supersphere" params="32 .6 .45" scale=".15 .1 .065"/></asset>
  <worldbody><geom type="box" size=".74 .3 .06"/>
  <body pos=".44015033 -.00000573 .12416777"
        quat=".996194458 .000112786732 -.000684462473 -.0871557223">
    <freejoint/><geom type="mesh" mesh="bag"/></body>
  </worldbody></mujoco>"""


def test_a_mesh_vertex_offers_its_polygon_turned_most_toward_the_other_geom():
  """EPA's final face holds one mesh vertex (the pole): of the polygons through it MuJoCo
  4.0 clips the one turned most toward the box along the witness difference (a later one
  only where it beats the earlier by more than mjMINVAL), not the first in mesh_polymap that
  passes the alignment test (all 32 do): the contacts' normal is that polygon's. Before,
  the contacts were 0.054 off."""
  (dist, pos, frame), ref = _collide_all([POLE_ON_BOX])
  assert len(ref[0]) == 3
  err = _errors(dist, pos, frame, ref)
  assert None not in err and max(err) < 1e-9, err
