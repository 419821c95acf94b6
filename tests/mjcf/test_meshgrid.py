"""Count/spacing builtin meshes (grid, box, cylinder, ellipsoid, square, disc; mjcf/meshgrid.py)
against MuJoCo 4.0.0: the generated vertices and triangles (MjSpec's uservert/userface) and
the compiled model (vertices, hull, polygons, inertia, fitted geoms)."""

import re

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import load_both, model_differences  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.mjcf.assets import meshgrid  # noqa: E402

# (builtin, params): surfaces (dim 2: shell inertia, a box/cylinder/ellipsoid without its
# top) and volumes (dim 3: the lattice or the surface points and the centre, hull faces)
MESHES = [("grid", "3 2 1 0.1 0.07 1 2"), ("grid", "3 2 4 0.1 0.07 0.05"),
          ("box", "3 2 4 0.1 0.07 0.05"), ("box", "3 3 2 0.1 0.07 0.05 2"),
          ("cylinder", "5 4 3 0.03 0.07 0.1"), ("cylinder", "4 4 3 0.1 0.1 0.1 2"),
          ("ellipsoid", "4 5 3 0.05 0.04 0.1"), ("ellipsoid", "4 4 4 0.1 0.1 0.1 2"),
          ("square", "3 4 1 0.1 0.05 1"), ("disc", "5 4 1 0.1 0.07 1")]


def _xml(meshes, free: bool = False) -> str:
  assets = "".join(f'<mesh name="m{i}" builtin="{b}" params="{p}"/>'
                   for i, (b, p) in enumerate(meshes))
  # flat meshes have no hull (so no colliding geom) and sit on the world: a free body with
  # a flat shell's inertia is exactly on MuJoCo's A + B >= C boundary
  geoms = "".join(f'<geom type="mesh" mesh="m{i}" contype="{int(free)}" conaffinity="0"/>'
                  for i in range(len(meshes)))
  body = f"<body><freejoint/>{geoms}</body>" if free else geoms
  return f"<mujoco><asset>{assets}</asset><worldbody>{body}</worldbody></mujoco>"


def test_generated_vertices_and_triangles_match_mujoco():
  spec = mujoco.MjSpec.from_string(_xml(MESHES))
  for (kind, params), ms in zip(MESHES, spec.meshes):
    vert, face, forced = meshgrid.make(kind, [float(x) for x in params.split()])
    np.testing.assert_array_equal(vert, np.asarray(ms.uservert, np.float32).reshape(-1, 3))
    np.testing.assert_array_equal(face, np.asarray(ms.userface).reshape(-1, 3))
    assert forced == ("shell" if len(face) else None)


def test_compiled_surfaces_match_mujoco():
  m, mj = load_both(xml=_xml(MESHES))
  assert model_differences(m, mj) == []


def test_volumes_collide_and_weigh_like_mujoco():
  volumes = [mp for mp in MESHES if mp[1].count(" ") == 5 and mp[0] not in ("square", "disc")]
  m, mj = load_both(xml=_xml(volumes, free=True))
  assert m.nmeshpoly > 0 and model_differences(m, mj) == []


@pytest.mark.parametrize("kind, params, message", [
  ("grid", "3 3 2 1 1 1 2", "Grid count must be 1 along dimensions beyond dim"),
  ("grid", "3 3 1 1 1 1 4", "Grid dim must be 2 or 3"),
  ("grid", "1 3 1 1 1 1 2", "Failed to create grid mesh"),
  ("box", "1 2 2 1 1 1", "Box/cylinder/ellipsoid count must be at least 2"),
  ("ellipsoid", "2 2 2 1 1 1 1", "Mesh dim must be 2 or 3 for box/cylinder/ellipsoid"),
  ("disc", "3 3 3 1 1 1", "Square/disc count[2] must be 1"),
  ("square", "3 3 1 1 1", "Square/disc mesh type requires 6 parameters"),
])
def test_bad_params_rejected_like_mujoco(kind, params, message):
  xml = (f'<mujoco><asset><mesh name="m" builtin="{kind}" params="{params}"/></asset>'
         '<worldbody><geom type="mesh" mesh="m" contype="0" conaffinity="0"/></worldbody>'
         '</mujoco>')
  with pytest.raises(ValueError, match=re.escape(message)):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match=re.escape(message)):
    jaxmj.Model.from_xml_string(xml)
