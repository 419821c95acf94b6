"""How many contacts MuJoCo 4.0 returns for convex pairs resting flat on each other, and the
contact slots jaxmj's collision plan gives them (host-side only: no GJK/EPA compile).

MuJoCo 4.0's multiccd clips aligned features (box faces, mesh hull polygons, cylinder caps as
16-gons, capsule and cylinder side segments) into contact polygons of up to four points;
jaxmj's collision/multiccd.py reproduces it, and tests/collision/test_multiccd.py holds our
contacts for these very cases against MuJoCo's (counts, depths, positions). These measured
counts back convex.MUJOCO_MAX_CONTACTS.
"""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import jaxmj  # noqa: E402
from jaxmj.collision import multiccd  # noqa: E402
from jaxmj.collision.ccd import convex  # noqa: E402
from jaxmj.collision.driver import collision_plan  # noqa: E402
from jaxmj.types import GeomType  # noqa: E402

CUBE = "-1 -1 -1 1 -1 -1 -1 1 -1 1 1 -1 -1 -1 1 1 -1 1 -1 1 1 1 1 1"
GEOMS = {
  "slab": 'type="box" size=".3 .3 .05"', "disc": 'type="cylinder" size=".3 .05"',
  "mslab": 'type="mesh" mesh="slab"', "box": 'type="box" size=".1 .1 .1"',
  "cyl": 'type="cylinder" size=".1 .1"', "cap": 'type="capsule" size=".05 .1"',
  "mbox": 'type="mesh" mesh="cube"', "ell": 'type="ellipsoid" size=".1 .1 .1"',
}
# (base, top, height of the top geom's centre, its euler angles, MuJoCo's contact count):
# every top geom sinks 0.01 into the base's upper face (at z = 0.05)
CASES = [
  ("slab", "cyl", .14, "0 0 0", 4),  # cylinder cap on a box face
  ("slab", "cyl", .14, "0 0 17", 4),
  ("slab", "cyl", .14, "3 0 0", 4),  # tilted 3 degrees: still the whole cap polygon
  ("slab", "cyl", .14, "90 0 0", 2),  # cylinder lying on its side
  ("disc", "cyl", .14, "0 0 0", 4),  # cap on cap
  ("disc", "box", .14, "0 0 0", 4),
  ("disc", "cap", .09, "90 0 0", 2),  # capsule lying on a cylinder cap
  ("disc", "mbox", .14, "0 0 0", 4),
  ("mslab", "cyl", .14, "0 0 0", 4),
  ("mslab", "cap", .09, "90 0 0", 2),
  ("mslab", "mbox", .14, "0 0 30", 4),  # mesh box on a mesh slab
  ("slab", "mbox", .14, "0 0 30", 4),  # mesh box on a box
  ("mslab", "ell", .14, "0 0 0", 1),
]


def _xml(base, top, z, euler, margin):
  return f"""<mujoco><asset><mesh name="cube" vertex="{CUBE}" scale=".1 .1 .1"/>
    <mesh name="slab" vertex="{CUBE}" scale=".3 .3 .05"/></asset><worldbody>
    <geom {GEOMS[base]} margin="{margin}"/>
    <body pos=".01 .02 {z}" euler="{euler}"><freejoint/><geom {GEOMS[top]} margin="{margin}"/>
    </body></worldbody></mujoco>"""


@pytest.mark.parametrize("margin", [0.0, 0.02])
def test_flat_resting_contact_counts(margin):
  for base, top, z, euler, count in CASES:
    xml = _xml(base, top, z, euler, margin)
    mj = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(mj)
    mujoco.mj_forward(mj, d)
    assert d.ncon == count, (base, top, euler, margin, d.ncon)
    types = tuple(sorted(GeomType(int(t)) for t in mj.geom_type))
    assert count <= convex.MUJOCO_MAX_CONTACTS[types], (types, count)
    if count > 1:  # every point of MuJoCo's polygon is as deep as the face overlap allows
      assert all(c.dist < 0 for c in d.contact[:d.ncon])
    # jaxmj: the pair goes to the convex collider, with multiccd's four slots when it applies
    plan = collision_plan(jaxmj.Model.from_xml_string(xml))
    slots = multiccd.MAX_CONTACTS if multiccd.applies(*types) else 1
    assert count <= slots
    assert [(g["types"], g["slots"]) for g in plan["groups"]] == [("convex", slots)]
    assert np.all(plan["geom1"] == [0]) or np.all(plan["geom2"] == [0])
