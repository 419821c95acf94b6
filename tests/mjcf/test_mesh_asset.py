"""Mesh assets against MuJoCo 4.0: inline and file meshes, hulls, inertia modes, fitted geoms.

Every case compiles the same MJCF with jaxmj and mujoco and compares all model fields
(mujoco_compare: mesh_*, geom_*, body_* ...; mesh_graph exactly, hull-vertex numbering included).
Test mesh files are generated here (STL/OBJ/MSH bytes) or authored in models/assets/.
"""

import struct
import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import model_differences  # noqa: E402
from test_compile import check  # noqa: E402

import jaxmj  # noqa: E402

# A prism over a C-shaped outline (concave: the four inertia modes all differ).
C_VERT = ("0 0 0 3 0 0 3 1 0 1 1 0 1 2 0 3 2 0 3 3 0 0 3 0 "
          "0 0 1 3 0 1 3 1 1 1 1 1 1 2 1 3 2 1 3 3 1 0 3 1")
C_FACE = ("0 2 1 8 9 10 0 3 2 8 10 11 0 4 3 8 11 12 0 7 4 8 12 15 4 6 5 12 13 14 4 7 6 12 14 15 "
          "0 1 9 0 9 8 1 2 10 1 10 9 2 3 11 2 11 10 3 4 12 3 12 11 4 5 13 4 13 12 5 6 14 5 14 13 "
          "6 7 15 6 15 14 7 0 8 7 8 15")
CUBE_V = np.array([[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1],
                   [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]], float) * [0.3, 0.2, 0.1]
CUBE_F = np.array([[0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
                   [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7]])


def _model(asset: str, body: str, head: str = "") -> str:
  return (f"<mujoco>{head}<asset>{asset}</asset><worldbody><geom type='plane' size='5 5 1'/>"
          f"<body pos='0 0 1'><freejoint/>{body}</body></worldbody></mujoco>")


def _points(seed: int, n: int) -> str:
  p = np.random.default_rng(seed).normal(size=(n, 3))
  return " ".join(f"{x:.9g}" for x in p.ravel())


def stl_bytes(vert, face) -> bytes:
  out = b"jaxmj test".ljust(80, b" ") + struct.pack("<i", len(face))
  for f in face:
    n = np.cross(vert[f[1]] - vert[f[0]], vert[f[2]] - vert[f[0]])
    out += struct.pack("<12fH", *n, *vert[f[0]], *vert[f[1]], *vert[f[2]], 0)
  return out


def obj_bytes(vert, face=None, quads=None) -> bytes:
  text = "# jaxmj test mesh\n" + "".join(f"v {x:.9g} {y:.9g} {z:.9g}\n" for x, y, z in vert)
  if quads is not None:
    text += "".join("f " + " ".join(str(i + 1) for i in q) + "\n" for q in quads)
  else:
    text += "".join(f"f {a}/1 {b} {c}\n" for a, b, c in face + 1)  # v/vt forms too
  return text.encode()


def msh_bytes(vert, face) -> bytes:
  return (struct.pack("<4i", len(vert), 0, 0, len(face)) + vert.astype("<f4").tobytes()
          + face.astype("<i4").tobytes())


def test_inline_meshes_and_hull_match_mujoco():
  asset = ("<mesh name='tet' vertex='0 0 0  1 0 0  0 1 0  0 0 1' scale='1 2 1'/>"
           "<mesh name='box' vertex='-1 -1 -1 1 -1 -1 1 1 -1 -1 1 -1 -1 -1 1 1 -1 1 1 1 1 -1 1 1"
           " 0 0 0.5' face='0 2 1 0 3 2 4 5 6 4 6 7 0 1 5 0 5 4 1 2 6 1 6 5 2 3 7 2 7 6 3 0 4"
           " 3 4 7'/>")
  body = ("<geom type='mesh' mesh='tet' pos='0.1 0 0'/>"
          "<geom type='mesh' mesh='box' euler='0 0 30' pos='0 0 1'/>")
  m, mj = check(_model(asset, body))
  assert m.nmesh == 2 and m.nmeshvert == 13 and m.nmeshface == 16
  np.testing.assert_array_equal(m.mesh_face, mj.mesh_face)  # the tetrahedron's: its hull
  np.testing.assert_array_equal(m.geom_dataid, mj.geom_dataid)


@pytest.mark.parametrize("mode", ["convex", "exact", "legacy", "shell"])
def test_inertia_modes_on_concave_mesh(mode):
  asset = (f"<mesh name='c' vertex='{C_VERT}' face='{C_FACE}' inertia='{mode}' "
           "scale='0.1 0.15 0.07' refpos='0.1 0.2 0.3' refquat='1 0.2 0.3 0.1'/>")
  m, mj = check(_model(asset, "<geom type='mesh' mesh='c' pos='0.1 0.2 0.3' euler='10 20 30'/>"))
  # the C prism's volume is 7 (its hull's 9) times the scale's determinant
  if mode in ("convex", "exact"):
    volume = {"convex": 9.0, "exact": 7.0}[mode] * 0.1 * 0.15 * 0.07
    np.testing.assert_allclose(m.body_mass[1], 1000 * volume, rtol=1e-12)


def test_point_cloud_gets_qhull_faces():
  asset = f"<mesh name='p' vertex='{_points(1, 30)}'/>"
  m, mj = check(_model(asset, "<geom type='mesh' mesh='p'/>"))
  np.testing.assert_array_equal(m.mesh_face, mj.mesh_face)  # hull triangles, in qhull order
  assert m.mesh_graphadr[0] == 0


def test_visual_mesh_has_no_hull_graph():
  asset = f"<mesh name='b' vertex='{' '.join(map(str, CUBE_V.ravel()))}' face='" + \
    " ".join(map(str, CUBE_F.ravel())) + "'/>"
  m, mj = check(_model(asset, "<geom type='mesh' mesh='b' contype='0' conaffinity='0'/>"))
  assert m.mesh_graphadr[0] == -1 and m.nmeshgraph == 0


@pytest.mark.parametrize("fmt", ["stl", "obj", "obj_quads", "msh"])
@pytest.mark.parametrize("scale", ["1 1 1", "1 -1.5 1"])
def test_mesh_files(fmt, scale):
  data = {"stl": lambda: stl_bytes(CUBE_V, CUBE_F), "obj": lambda: obj_bytes(CUBE_V, CUBE_F),
          "obj_quads": lambda: obj_bytes(CUBE_V, quads=[[0, 3, 2, 1], [4, 5, 6, 7],
                                                         [0, 1, 5, 4], [1, 2, 6, 5],
                                                         [2, 3, 7, 6], [3, 0, 4, 7]]),
          "msh": lambda: msh_bytes(CUBE_V, CUBE_F)}[fmt]()
  ext = fmt.split("_")[0]
  xml = _model(f"<mesh file='cube.{ext}' scale='{scale}'/>",
               "<geom type='mesh' mesh='cube'/>", "<compiler meshdir='meshes'/>")
  m, mj = check(xml, assets={f"meshes/cube.{ext}": data})
  assert m.nmeshvert == 8  # STL's repeated vertices are merged, as MuJoCo does


def test_strippath_and_assetdir():
  xml = _model("<mesh name='c' file='some/where/cube.stl'/>", "<geom type='mesh' mesh='c'/>",
               "<compiler strippath='true' assetdir='parts'/>")
  check(xml, assets={"parts/cube.stl": stl_bytes(CUBE_V, CUBE_F)})


def test_authored_obj_from_disk():
  m = jaxmj.Model.from_xml_path(__file__.rsplit("/tests/", 1)[0] + "/models/mesh_drop.xml")
  assert m.nmesh == 2 and m.mesh_facenum[1] == 8  # the wedge's quads split in two


@pytest.mark.parametrize("gtype", ["sphere", "capsule", "cylinder", "ellipsoid", "box"])
@pytest.mark.parametrize("fitaabb", ["false", "true"])
def test_primitives_fitted_to_mesh(gtype, fitaabb):
  asset = f"<mesh name='c' vertex='{C_VERT}' face='{C_FACE}' scale='0.1 0.2 0.05'/>"
  body = (f"<geom type='{gtype}' mesh='c' fitscale='1.1' euler='0 30 0'/>"
          "<geom type='mesh' mesh='c' pos='0 0 0.5'/>")
  m, mj = check(_model(asset, body, f"<compiler fitaabb='{fitaabb}'/>"))
  assert m.geom_dataid[1] == -1  # fitted primitives keep no mesh reference


def test_padded_hull_vertices():
  asset = (f"<mesh name='p' vertex='{_points(2, 25)}'/>"
           "<mesh name='t' vertex='0 0 0  1 0 0  0 1 0  0 0 1'/>")
  m, mj = check(_model(asset, "<geom type='mesh' mesh='p'/><geom type='mesh' mesh='t'/>"))
  hv = np.asarray(m.mesh_hullvert)
  assert hv.shape == (2, int(m.mesh_hullnum.max()), 3)
  for i in range(2):
    g = mj.mesh_graph[mj.mesh_graphadr[i]:]
    ids = np.sort(g[2 + g[0]: 2 + 2 * g[0]]) + mj.mesh_vertadr[i]
    n = m.mesh_hullnum[i]
    np.testing.assert_allclose(hv[i, :n], mj.mesh_vert[ids], atol=1e-12)
    np.testing.assert_array_equal(hv[i, n:], np.broadcast_to(hv[i, 0], hv[i, n:].shape))


def test_asset_names():
  xml = _model("<mesh name='tet' vertex='0 0 0 1 0 0 0 1 0 0 0 1'/>"
               "<hfield name='hf' nrow='2' ncol='2' size='1 1 1 1'/>"
               "<texture name='grid' type='2d' builtin='checker' width='4' height='4'/>"
               "<material name='red' texture='grid' rgba='1 0 0 1'/>",
               "<geom type='mesh' mesh='tet' material='red'/><site name='s' material='red'/>")
  m, mj = check(xml)
  for field in ("name_meshadr", "name_hfieldadr", "name_texadr", "name_matadr"):
    np.testing.assert_array_equal(getattr(m, field), getattr(mj, field))
  assert m.names == mj.names
  assert jaxmj.name2id(m, "mesh", "tet") == 0 and jaxmj.id2name(m, "hfield", 0) == "hf"
  assert jaxmj.name2id(m, "texture", "grid") == 0 and jaxmj.id2name(m, "material", 0) == "red"


@pytest.mark.parametrize("asset, body, assets, message", [
  ("<mesh name='a' file='a.stl'/>", "<geom type='mesh' mesh='a'/>",
   {"a.stl": b"solid a\nendsolid a\n" + b" " * 90}, "ASCII"),
  ("<mesh name='a' vertex='0 0 0 1 0 0 0 1 0'/>", "", None, "at least 4 vertices"),
  ("<mesh name='a' vertex='0 0 0 1 0 0 0 1 0 0 0 1'/>", "<geom type='mesh' mesh='b'/>", None,
   "unknown mesh"),
  ("<mesh name='a' vertex='0 0 0 1 0 0 0 1 0 0 0 1'/>",
   "<geom type='capsule' mesh='a' fromto='0 0 0 1 0 0'/>", None, "fromto"),
  ("<mesh name='a' vertex='0 0 0 1 0 0 0 1 0 0 0 1' face='0 1 2 0 1 3 0 3 2 1 2 3' "
   "inertia='exact'/>", "<geom type='mesh' mesh='a'/>", None, "inconsistent orientation"),
  # a flat point set: qhull's own message comes through (ctypes, mjcf/qhull.py)
  ("<mesh name='a' vertex='0 0 0 1 0 0 0 1 0 1 1 0 2 3 0'/>", "<geom type='mesh' mesh='a'/>",
   None, "qhull error: QH6154 Qhull precision error: Initial simplex is flat"),
])
def test_mesh_errors_match_mujoco(asset, body, assets, message):
  xml = _model(asset, body or "<geom size='0.1'/>")
  with pytest.raises(ValueError):
    mujoco.MjModel.from_xml_string(xml, assets or {})
  with pytest.raises(jaxmj.MJCFError, match=message):
    jaxmj.Model.from_xml_string(xml, assets=assets)


def test_hull_graph_equals_mujocos_entry_for_entry():
  """qhull's vertex-list numbering and neighbour-set order, also where qhull merged coplanar
  facets and triangulated the polygons (a grid on a box's faces), and on a cloud."""
  grid = np.stack(np.meshgrid(*[np.linspace(-1, 1, 4)] * 3), -1).reshape(-1, 3)
  cloud = 0.1 * np.random.default_rng(5).normal(size=(300, 3))
  for points in (grid * [0.3, 0.2, 0.1], cloud):
    text = " ".join(f"{x:.9g}" for x in points.ravel())
    m, mj = check(_model(f"<mesh name='p' vertex='{text}'/>", "<geom type='mesh' mesh='p'/>"))
    np.testing.assert_array_equal(m.mesh_graph, mj.mesh_graph)


def test_hull_graph_without_the_qhull_wheel_is_mujocos_up_to_numbering(monkeypatch):
  """Where cmeel-qhull cannot be used, scipy's qhull gives the same hull with a warning:
  same triangles (order and orientation, point ids) and each point's neighbour set."""
  from jaxmj.mjcf.assets import qhull

  def missing():
    raise ImportError("no cmeel-qhull")

  monkeypatch.setattr(qhull, "_lib", missing)
  qhull._warn_fallback.cache_clear()
  grid = np.stack(np.meshgrid(*[np.linspace(-1, 1, 4)] * 3), -1).reshape(-1, 3)
  text = " ".join(f"{x:.9g}" for x in (grid * [0.3, 0.2, 0.1]).ravel())
  xml = _model(f"<mesh name='p' vertex='{text}'/>", "<geom type='mesh' mesh='p'/>")
  with pytest.warns(UserWarning, match="numbering of hull vertices"):
    m = jaxmj.Model.from_xml_string(xml)
  mj = mujoco.MjModel.from_xml_string(xml)

  def parts(g):
    nv, nf = int(g[0]), int(g[1])
    adr, ids = g[2:2 + nv], g[2 + nv:2 + 2 * nv]
    edges, faces = g[2 + 2 * nv:2 + 3 * nv + 3 * nf], g[2 + 3 * nv + 3 * nf:]
    nbrs = {int(ids[i]): sorted(int(ids[e]) for e in edges[adr[i]:][:list(edges[adr[i]:])
                                                                     .index(-1)])
            for i in range(nv)}
    return nv, nf, nbrs, faces.tolist()

  assert parts(np.asarray(m.mesh_graph)) == parts(mj.mesh_graph)


def test_maxhullvert_mesh_matches_mujoco():
  """More cases in tests/mjcf/test_compiler_options.py."""
  xml = _model(f"<mesh name='p' vertex='{_points(4, 40)}' maxhullvert='8'/>",
               "<geom type='mesh' mesh='p'/>")
  check(xml)


def test_mesh_on_the_inertial_frame_is_copied_as_mujoco():
  """A 300-point cloud beside a tiny box: the mesh geom sits on the body's inertial frame
  within 1e-6 (geom_sameframe INERTIA), so MuJoCo copies xipos for it; dof_length (the
  body size at qpos0) was 5e-11 off when recomposed from geom_pos."""
  from mujoco_compare import model_differences

  pts = np.random.default_rng(0).normal(size=(300, 3)) * [1, 2, 3] + [.5, 0, 1]
  vert = " ".join(f"{x:.6f}" for x in pts.ravel())
  m, mj = check(f'<mujoco><asset><mesh name="c" vertex="{vert}"/></asset><worldbody><body>'
                '<freejoint/><geom type="box" size=".001 .001 .001" pos="3 0 0"/>'
                '<geom type="mesh" mesh="c"/></body></worldbody></mujoco>')
  assert list(m.geom_sameframe) == list(mj.geom_sameframe) == [3, 2]
  assert model_differences(m, mj, 1e-14) == []


_TET = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n"
_VT = "vt 0 0\nvt 1 0\nvt 0 1\n"
OBJ_TEXCOORDS = {  # OBJ text, whether MuJoCo warns that it discards the texture coordinates
  "none": (_TET + "f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n", False),
  "unreferenced": (_TET + _VT + "f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n", True),
  "referenced": (_TET + _VT + "f 1/1 3/2 2/3\nf 1/1 2/2 4/3\nf 1/1 4/2 3/3\nf 2/1 3/-1 4/3\n",
                 False),
  "out_of_range": (_TET + _VT + "f 1/1 3/2 2/9\nf 1/1 2/2 4/3\nf 1/1 4/2 3/3\nf 2/1 3/2 4/3\n",
                   True),
  "one_face_without": (_TET + _VT + "f 1/1 3/2 2/3\nf 1 2 4\nf 1/1 4/2 3/3\nf 2/1 3/2 4/3\n",
                       True),
  "references_but_no_vt": (_TET + "f 1/1 3/2 2/3\nf 1/1 2/2 4/3\nf 1/1 4/2 3/3\nf 2/1 3/2 4/3\n",
                           False),
}


@pytest.mark.parametrize("name", OBJ_TEXCOORDS)
def test_obj_texture_coordinate_warning_as_mujoco(name, tmp_path, capfd):
  text, warns = OBJ_TEXCOORDS[name]
  (tmp_path / "t.obj").write_text(text)
  xml = ('<mujoco><asset><mesh file="t.obj"/></asset><worldbody><body><freejoint/>'
         '<geom type="mesh" mesh="t"/></body></worldbody></mujoco>')
  (tmp_path / "m.xml").write_text(xml)
  mj = mujoco.MjModel.from_xml_path(str(tmp_path / "m.xml"))
  assert ("discarding texture coordinates" in "".join(capfd.readouterr())) == warns
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    m = jaxmj.Model.from_xml_path(tmp_path / "m.xml")
  assert any("discarding texture coordinates" in str(w.message) for w in caught) == warns
  assert model_differences(m, mj) == []
