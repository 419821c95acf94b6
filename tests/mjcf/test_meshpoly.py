"""Mesh polygons (mesh_poly* fields, mjcf/meshpoly.py) held equal to MuJoCo 4.0.0's."""

import itertools

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import load_both, model_differences  # noqa: E402

FIELDS = ("nmeshpoly", "nmeshpolyvert", "nmeshpolymap", "npolygonmax", "mesh_polynum",
          "mesh_polyadr", "mesh_polynormal", "mesh_polyvertadr", "mesh_polyvertnum",
          "mesh_polyvert", "mesh_polymapadr", "mesh_polymapnum", "mesh_polymap")
CUBE = "0 0 0 1 0 0 0 1 0 0 0 1 1 1 1 1 1 0 1 0 1 0 1 1"
TETRA = "0 0 0 1 0 0 0 1 0 0 0 1"


def model(assets: str, geoms: str) -> str:
  return f"<mujoco><asset>{assets}</asset><worldbody>{geoms}</worldbody></mujoco>"


def same_polygons(xml: str):
  m, mj = load_both(xml=xml)
  for f in FIELDS:
    ours, ref = np.asarray(getattr(m, f)), np.asarray(getattr(mj, f))
    assert ours.shape == ref.shape, f
    np.testing.assert_allclose(ours, ref, rtol=0, atol=1e-12, err_msg=f)
  assert model_differences(m, mj) == []
  return m


CASES = {
  # a cube's twelve hull triangles merge into six quads; a tetrahedron keeps its triangles
  "cube_and_tetrahedron": model(
    f'<mesh name="c" vertex="{CUBE}"/><mesh name="t" vertex="{TETRA}"/>',
    '<geom type="mesh" mesh="c"/><geom type="mesh" mesh="t"/>'),
  # octagons on top and bottom; the polygon order is MuJoCo's hash-map order
  "frustum": model('<mesh name="f" builtin="cone" params="8 0.5"/>',
                   '<geom type="mesh" mesh="f"/>'),
  # a mirroring scale reverses each path after its first vertex
  "mirrored_rotated": model('<mesh name="f" builtin="cone" params="8 0.5" scale="1 -1 2" '
                            'refquat="1 0.3 0 0.2"/>', '<geom type="mesh" mesh="f"/>'),
  # 320 triangles: the hash map grows through several bucket counts
  "icosphere": model('<mesh name="s" builtin="sphere" params="2" refpos=".1 0 0"/>',
                     '<geom type="mesh" mesh="s"/>'),
  # no hull graph (faces given, no colliding geom), no polygons and an empty vertex map
  "without_hull": model(f'<mesh name="c" vertex="{CUBE}"/><mesh name="t" vertex="{TETRA}" '
                        'face="0 2 1 0 1 3 0 3 2 1 2 3"/>',
                        '<geom type="mesh" mesh="t" contype="0" conaffinity="0"/>'
                        '<geom type="mesh" mesh="c"/>'),
}


@pytest.mark.parametrize("name", CASES)
def test_polygons_match_mujoco(name):
  same_polygons(CASES[name])


def test_cube_polygons_are_outward_quads():
  m = same_polygons(CASES["cube_and_tetrahedron"])
  assert m.mesh_polynum.tolist() == [6, 4] and m.npolygonmax == 4
  vert = np.asarray(m.mesh_vert, float)
  for p in range(6):
    ids = m.mesh_polyvert[m.mesh_polyvertadr[p]:][:m.mesh_polyvertnum[p]]
    n = m.mesh_polynormal[p]
    assert np.allclose(vert[ids] @ n, 0.5)  # all four corners on the face, normal outward
    # counter-clockwise seen from outside
    assert np.cross(vert[ids[1]] - vert[ids[0]], vert[ids[2]] - vert[ids[1]]) @ n > 0
  assert m.mesh_polymapnum[:8].tolist() == [3] * 8  # each corner is on three faces


def test_mesh_without_hull_has_no_polygons():
  m = same_polygons(CASES["without_hull"])
  assert m.mesh_polynum.tolist() == [6, 0] and m.mesh_polymapnum[8:].tolist() == [0] * 4


def test_a_fan_of_three_triangles_merged_into_one_stays_outward():
  # a tetrahedron whose top face has a vertex raised 1e-4 at its centre: the three hull
  # triangles around it share one normal key and merge into a triangle whose three boundary
  # edges are not stored in path order; read as if they were (the older published source's
  # shortcut) its normal pointed inward for 80 of the 120 vertex orders
  base = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, -1], [1 / 3, 1 / 3, 1e-4]])
  for perm in itertools.permutations(range(5)):
    verts = " ".join(repr(float(x)) for x in base[list(perm)].ravel())
    m = same_polygons(model(f'<mesh name="m" vertex="{verts}"/>',
                            '<body><freejoint/><geom type="mesh" mesh="m"/></body>'))
    assert list(m.mesh_polyvertnum) == [3, 3, 3, 3]
