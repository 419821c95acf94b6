"""Mesh assets as MuJoCo 4.0's compiler processes them (host side, numpy + qhull).

Reading (inline vertex/face, binary STL, OBJ, MSH), the reference transform (refpos,
refquat, scale), the convex hull graph and its polygons (meshpoly.py), volume / centre of
mass / inertia in each of the four `inertia` modes, and the re-centring of the vertices into
the principal frame (mesh_pos/mesh_quat), following mjCMesh (user_mesh.cc) step by step.

The hull graph is qhull's, read from qhull's own lists as MuJoCo reads them (qhull.py: the
same qhull release and options), so the graph -- vertex numbering, neighbour order,
triangles and their orientation -- equals MuJoCo's entry for entry.
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.mjcf.assets import meshpoly, qhull
from jaxmj.mjcf.compile import frames, inertia

_IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


class MeshError(ValueError):
  """A mesh MuJoCo's compiler would reject; the caller names the element."""


@dataclasses.dataclass
class Mesh:
  """One compiled mesh (MuJoCo's mjCMesh after Process)."""

  vert: np.ndarray  # (nvert, 3) float64, mesh frame: centred at the com, principal axes
  face: np.ndarray  # (nface, 3) int32
  graph: np.ndarray | None  # MuJoCo's convex hull graph (int32), None when not built
  hull: np.ndarray  # (nhull,) int32  hull vertex ids
  pos: np.ndarray  # (3,)  mesh frame origin in the asset's (transformed) frame
  quat: np.ndarray  # (4,)  mesh frame orientation in the asset's frame
  scale: np.ndarray  # (3,)
  volume: float  # volume, or surface area for inertia="shell"
  boxsz: np.ndarray  # (3,)  half-sizes of the box with the mesh's unit-density inertia
  aamm: np.ndarray  # (6,)  bounding box (min, max) in the mesh frame
  poly: list  # vertex paths of the hull's polygons (meshpoly.py), [] without a hull graph
  polynormal: np.ndarray  # (npoly, 3)  polygon normals, mesh frame

  def size(self) -> np.ndarray:
    """geom_size of a mesh geom: the box's largest extent along each axis."""
    return np.maximum(np.abs(self.aamm[:3]), np.abs(self.aamm[3:]))


# ---------------------------------------------------------------- file formats


def load_stl(data: bytes, righthand: bool) -> tuple[np.ndarray, np.ndarray]:
  """Binary STL -> (vertices (3n, 3) float32 with repeats, faces (n, 3)), as mjCMesh::LoadSTL.

  MuJoCo reads binary STL only: ASCII files fail its size checks with the same messages.
  """
  if not data:
    raise MeshError("STL file is empty")
  if len(data) < 84:
    raise MeshError("invalid header in STL file")
  (nfaces,) = struct.unpack_from("<i", data, 80)
  if nfaces < 1 or nfaces > 200000:
    raise MeshError("number of faces should be between 1 and 200000 in STL file; perhaps "
                    "this is an ASCII file?")
  if nfaces * 50 != len(data) - 84:
    raise MeshError("STL file has wrong size; perhaps this is an ASCII file?")
  rec = np.frombuffer(data, np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]),
                      count=nfaces, offset=84)
  vert = rec["v"].reshape(-1, 3).astype(np.float32)
  if np.any(np.abs(vert) > 2.0**30):
    raise MeshError("vertex in STL file exceeds maximum bounds")
  face = np.arange(3 * nfaces, dtype=np.int32).reshape(-1, 3)
  if not righthand:
    face = face[:, [0, 2, 1]]
  return vert, face


def load_msh(data: bytes, righthand: bool) -> tuple[np.ndarray, np.ndarray]:
  """MuJoCo's binary MSH -> (vertices (n, 3) float32, faces (m, 3)); normals and texture
  coordinates are read past (they only matter for rendering)."""
  if not data:
    raise MeshError("MSH file is empty")
  if len(data) < 16:
    raise MeshError("missing header in MSH file")
  nv, nn, nt, nf = struct.unpack_from("<4i", data, 0)
  if nv < 4 or nf < 0 or nn < 0 or nt < 0 or (nn > 0 and nn != nv) or (nt > 0 and nt != nv):
    raise MeshError("invalid sizes in MSH file")
  if len(data) != 16 + 12 * (nv + nn + nf) + 8 * nt:
    raise MeshError("unexpected file size in MSH file")
  vert = np.frombuffer(data, "<f4", 3 * nv, 16).reshape(-1, 3).astype(np.float32)
  face = np.frombuffer(data, "<i4", 3 * nf, 16 + 12 * (nv + nn) + 8 * nt).reshape(-1, 3)
  face = face.astype(np.int32)
  if not righthand:
    face = face[:, [0, 2, 1]]
  return vert, face


def load_obj(data: bytes, righthand: bool) -> tuple[np.ndarray, np.ndarray]:
  """Wavefront OBJ -> (vertices (n, 3) float32, faces (m, 3)), as tinyobjloader reads it for
  MuJoCo: every `v` line is a vertex; the faces are those of the first shape (a new shape
  starts at an `o` or `g` line once faces were read); quads split along the shorter diagonal;
  larger polygons are rejected as MuJoCo rejects them."""
  verts, faces, started = [], [], False
  for raw in data.decode("utf-8", "replace").splitlines():
    parts = raw.split("#", 1)[0].split()
    if not parts:
      continue
    key = parts[0]
    if key == "v":
      if len(parts) < 4:
        raise MeshError("could not parse OBJ file: a 'v' line needs 3 coordinates")
      verts.append([float(x) for x in parts[1:4]])
    elif key in ("o", "g") and faces:
      started = True
    elif key == "f" and not started:
      faces.extend(_obj_face(parts[1:], len(verts), verts))
  vert = np.asarray(verts, np.float32).reshape(-1, 3)
  face = np.asarray(faces, np.int32).reshape(-1, 3)
  if not righthand:
    face = face[:, [0, 2, 1]]
  return vert, face


def obj_texcoords_valid(data: bytes) -> bool:
  """False where MuJoCo warns that it discards an OBJ file's texture coordinates: the file has
  `vt` lines and some face vertex names none of them (texture coordinates are visual only;
  jaxmj does not keep them)."""
  lines = [raw.split("#", 1)[0].split() for raw in data.decode("utf-8", "replace").splitlines()]
  nvt = sum(1 for parts in lines if parts and parts[0] == "vt")
  for parts in (p for p in lines if nvt and p and p[0] == "f"):
    for item in parts[1:]:
      ref = (item.split("/") + [""])[1]
      k = int(ref) if ref.lstrip("-").isdigit() else 0
      if not (1 <= k <= nvt or -nvt <= k <= -1):
        return False
  return True


def _obj_face(items: list[str], nvert: int, verts: list) -> list[list[int]]:
  idx = []
  for it in items:
    i = int(it.split("/")[0])
    idx.append(i - 1 if i > 0 else nvert + i)
  if len(idx) < 3 or len(idx) > 4:
    raise MeshError("only tri or quad meshes are supported for OBJ")
  if len(idx) == 3:
    return [idx]
  p = np.asarray([verts[i] for i in idx], np.float32)
  d02 = np.sum((p[0] - p[2]) ** 2)
  d13 = np.sum((p[1] - p[3]) ** 2)
  if d02 < d13:
    return [[idx[0], idx[1], idx[2]], [idx[0], idx[2], idx[3]]]
  return [[idx[0], idx[1], idx[3]], [idx[1], idx[2], idx[3]]]


def remove_repeated(vert: np.ndarray, face: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Merges bitwise-equal vertices, numbering them by first appearance (STL files)."""
  _, first, inverse = np.unique(vert, axis=0, return_index=True, return_inverse=True)
  order = np.argsort(first)  # unique rows renumbered by first appearance
  rank = np.empty_like(order)
  rank[order] = np.arange(len(order))
  return vert[np.sort(first)], rank[inverse.ravel()][face].astype(np.int32)


# ---------------------------------------------------------------- processing


def _seqsum(x: np.ndarray) -> np.ndarray:
  """Sum over axis 0 in sequence, as a C loop accumulates (np.sum sums pairwise): the last
  bits decide Jacobi pivots when principal moments are equal (a regular tetrahedron)."""
  return np.cumsum(x, axis=0)[-1] if len(x) else np.zeros(x.shape[1:])


def _triangles(vert: np.ndarray, face: np.ndarray):
  """Area (n,), unit normal (n, 3) and centre (n, 3) of each triangle, in the operation order
  of mjCMesh's triangle(): faces with |normal| < mjMINVAL get area 0."""
  v1, v2, v3 = vert[face[:, 0]], vert[face[:, 1]], vert[face[:, 2]]
  center = (v1 + v2 + v3) / 3
  b, c = v2 - v1, v3 - v1
  n = np.stack([b[:, 1] * c[:, 2] - b[:, 2] * c[:, 1], b[:, 2] * c[:, 0] - b[:, 0] * c[:, 2],
                b[:, 0] * c[:, 1] - b[:, 1] * c[:, 0]], axis=1)
  length = np.sqrt(_dot3(n, n))
  small = length < MINVAL
  normal = np.where(small[:, None], n, n / np.where(small, 1.0, length)[:, None])
  return np.where(small, 0.0, 0.5 * length), normal, center


def _dot3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def hull_graph(vert: np.ndarray, maxhullvert: int = -1) -> np.ndarray:
  """MuJoCo's convex hull graph of `vert` (n, 3) (mjCMesh::MakeGraph), qhull stopping after
  `maxhullvert` vertices when positive (MuJoCo's options Q9 TA<maxhullvert - 4>: TA counts
  the vertices added to the initial simplex):

  [numvert, numface, vert_edgeadr(numvert), vert_globalid(numvert),
   edge_localid(numvert + 3 numface), face_globalid(3 numface)]

  Hull vertices in qhull's vertex-list order; each one's edge list holds the other vertices
  of its neighbouring facets (in qhull's neighbour-set order, first occurrences, local ids)
  followed by -1; triangles in qhull's facet order, the first two swapped where qhull's
  toporient flag is set, which makes every normal point outward.
  """
  options = f"Q9 TA{maxhullvert - 4}" if maxhullvert > 0 else ""
  try:
    ids, nbrs, count, tri, top = qhull.hull(vert, options)
  except qhull.QhullError as e:
    raise MeshError(f"qhull error: {e}") from None
  nv, nf = len(ids), len(tri)
  face = np.where(top[:, None], tri[:, [1, 0, 2]], tri)
  local = np.full(len(vert), -1, np.int64)
  local[ids] = np.arange(nv)
  # candidates: each vertex's neighbouring facets' vertices in order, minus itself; the first
  # occurrence of each (vertex, neighbour) pair keeps its place
  owner = np.repeat(np.arange(nv), 3 * count)
  cand = local[tri[nbrs]].ravel()
  owner, cand = owner[cand != owner], cand[cand != owner]
  first = np.sort(np.unique(owner * nv + cand, return_index=True)[1])
  owner, cand = owner[first], cand[first]
  deg = np.bincount(owner, minlength=nv)
  adr = np.concatenate([[0], np.cumsum(deg + 1)[:-1]])
  edges = np.full(nv + len(cand), -1, np.int64)
  edges[adr[owner] + np.arange(len(cand)) - np.repeat(np.cumsum(deg) - deg, deg)] = cand
  if len(edges) != nv + 3 * nf:  # a closed triangulated surface; MuJoCo checks the same
    raise MeshError("wrong size in convex hull graph")
  return np.concatenate([[nv, nf], adr, ids, edges, face.ravel()]).astype(np.int32)


def graph_faces(graph: np.ndarray) -> np.ndarray:
  nv, nf = int(graph[0]), int(graph[1])
  return graph[2 + 3 * nv + 3 * nf:].reshape(-1, 3)


def graph_vertices(graph: np.ndarray) -> np.ndarray:
  nv = int(graph[0])
  return graph[2 + nv: 2 + 2 * nv]


def _hull_vertices(vert, graph) -> np.ndarray:
  """Hull vertex ids: the graph's, else a hull made only for jaxmj's padded hull field (all
  vertices when they span no volume: such a mesh never collides)."""
  if graph is None:
    try:
      graph = hull_graph(vert)
    except MeshError:
      return np.arange(len(vert), dtype=np.int32)
  return np.asarray(graph_vertices(graph), np.int32)


def _reference(vert: np.ndarray, refpos, refquat, scale) -> np.ndarray:
  """mjCMesh::ApplyTransformations: subtract refpos, rotate by refquat', then scale."""
  vert = vert - np.asarray(refpos, float)
  q = np.asarray(refquat, float)
  if np.any(q != _IDENTITY):
    vert = vert @ frames.quat_to_mat(q / np.linalg.norm(q))
  return vert * np.asarray(scale, float)


def _volume(vert, face, facecen, legacy: bool) -> tuple[float, np.ndarray]:
  """mjCMesh::ComputeVolume: volume and centroid of the pyramids from `facecen` to each
  face (signed unless legacy)."""
  area, normal, center = _triangles(vert, face)
  vol = _dot3(center - facecen, normal) * area / 3
  if legacy:
    vol = np.abs(vol)
  total = _seqsum(vol)
  com = _seqsum(vol[:, None] * (center * 3.0 / 4.0 + facecen / 4.0))
  return total, com / total if total >= MINVAL else com


_PAIRS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))


def _inertia(vert, face, com, mode: str) -> tuple[float, np.ndarray]:
  """mjCMesh::ComputeInertia: (volume or area, 3x3 inertia about `com`) at unit density."""
  v = vert - com
  d, e, f = v[face[:, 0]], v[face[:, 1]], v[face[:, 2]]
  area, normal, center = _triangles(v, face)
  if mode == "shell":
    w, denom = area, 12.0
  else:
    w, denom = _dot3(center, normal) * area / 3, 20.0
    if mode == "legacy":
      w = np.abs(w)
  prod = []
  for a, b in _PAIRS:
    term = (2 * (d[:, a] * d[:, b] + e[:, a] * e[:, b] + f[:, a] * f[:, b])
            + d[:, a] * e[:, b] + d[:, b] * e[:, a] + d[:, a] * f[:, b] + d[:, b] * f[:, a]
            + e[:, a] * f[:, b] + e[:, b] * f[:, a])
    prod.append(_seqsum(w / denom * term))
  p = prod
  full = np.array([[p[1] + p[2], -p[3], -p[4]], [-p[3], p[0] + p[2], -p[5]],
                   [-p[4], -p[5], p[0] + p[1]]])
  return _seqsum(w), full


def _check_orientation(vert, face) -> None:
  """inertia="exact" needs consistently oriented faces: no directed edge twice."""
  area, _, _ = _triangles(vert, face)
  good = face[area > np.sqrt(MINVAL) / 2]
  half = np.concatenate([good[:, [0, 1]], good[:, [1, 2]], good[:, [2, 0]]])
  uniq, counts = np.unique(half, axis=0, return_counts=True)
  if np.any(counts > 1):
    v0, v1 = uniq[np.argmax(counts > 1)]
    raise MeshError("faces of mesh have inconsistent orientation. Please check the faces "
                    f"containing the vertices {v0 + 1} and {v1 + 1}.")


def eig3(mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Principal moments and axes as MuJoCo 4.0's compiler finds a mesh's: inertia.eig3 with
  the mesh tolerance 1e-7 (it stops early, and nearly equal moments, as a regular
  dodecahedron's, stay unsorted)."""
  return inertia.eig3(mat, inertia.MESH_EIG_EPS)


def _to_frame(d: np.ndarray, quat) -> np.ndarray:
  """Offsets d (n, 3) in the frame of `quat`: mjuu_quat2mat's matrix, transposed, times each
  row, summed in MuJoCo's order (a BLAS product rounds differently)."""
  r = frames.quat2mat(quat)
  x, y, z = d[:, 0], d[:, 1], d[:, 2]
  return np.stack([r[0] * x + r[3] * y + r[6] * z, r[1] * x + r[4] * y + r[7] * z,
                   r[2] * x + r[5] * y + r[8] * z], axis=1)


def process(vert32: np.ndarray, face: np.ndarray, *, scale, refpos, refquat, mode: str,
            needhull: bool, maxhullvert: int = -1) -> Mesh:
  """mjCMesh::Process on float32 vertices `vert32` (n, 3) and faces (m, 3) (may be empty)."""
  vert = np.asarray(vert32, np.float32).astype(np.float64).reshape(-1, 3)
  face = np.asarray(face, np.int32).reshape(-1, 3)
  if len(vert) < 4:
    raise MeshError("at least 4 vertices required")
  if face.size and (face.min() < 0 or face.max() >= len(vert)):
    bad = int(np.flatnonzero((face.ravel() < 0) | (face.ravel() >= len(vert)))[0])
    raise MeshError(f"in face {bad // 3}, vertex index {face.ravel()[bad]} does not exist")
  if mode == "exact" and face.size:
    _check_orientation(vert, face)
  # MuJoCo builds the graph (on the vertices as read) for meshes that collide or need it
  # for inertia or faces; a mirroring scale then flips its triangles to stay outward.
  graph = hull_graph(vert, maxhullvert) if (needhull or mode == "convex" or not face.size) \
    else None
  poly = [] if graph is None else meshpoly.polygons(vert, graph_faces(graph))
  if graph is not None and np.prod(scale) < 0:
    tri = graph_faces(graph)
    tri[:] = tri[:, [0, 2, 1]]
    poly = [p[:1] + p[:0:-1] for p in poly]  # MuJoCo reverses each path after its first vertex
  if not face.size:
    face = graph_faces(graph).copy()
  hull = _hull_vertices(vert, graph)
  vert = _reference(vert, refpos, refquat, scale)
  area, _, center = _triangles(vert, face)
  total_area = _seqsum(area)
  if total_area < MINVAL:
    raise MeshError("mesh surface area is too small")
  facecen = _seqsum(area[:, None] * center) / total_area
  vface = graph_faces(graph) if mode == "convex" else face
  if mode == "shell":
    com = _seqsum(area[:, None] * (center * 3.0 / 4.0 + facecen / 4.0)) / total_area
  else:
    vol, com = _volume(vert, vface, facecen, mode == "legacy")
    if vol < MINVAL:
      if vol < 0:
        raise MeshError("mesh volume is negative (misoriented triangles)")
      raise MeshError("mesh volume is too small. Try setting inertia to shell")
  volume, full = _inertia(vert, face if mode == "shell" else vface, com, mode)
  eigval, quat = eig3(full)
  if eigval[2] <= 0:
    raise MeshError("eigenvalue of mesh inertia must be positive")
  e0, e1, e2 = eigval
  tol = lambda c: c * (1.0 - 1e-6) - 1e-9
  if e0 + e1 < tol(e2) or e0 + e2 < tol(e1) or e1 + e2 < tol(e0):
    raise MeshError("eigenvalues of mesh inertia violate A + B >= C")
  boxsz = 0.5 * np.sqrt(6 * np.array([e1 + e2 - e0, e0 + e2 - e1, e0 + e1 - e2]) / volume)
  vert = _to_frame(vert - com, quat)
  aamm = np.concatenate([np.minimum(vert.min(0), 1e10), np.maximum(vert.max(0), -1e10)])
  return Mesh(vert=vert, face=face, graph=graph, hull=hull, pos=com, quat=quat,
              scale=np.asarray(scale, float), volume=float(volume), boxsz=boxsz, aamm=aamm,
              poly=poly, polynormal=meshpoly.normals(vert, poly))


# ---------------------------------------------------------------- fitted primitives


def fit_geom(mesh: Mesh, gtype: str, fitaabb: bool, fitscale: float):
  """mjCMesh::FitGeom: (size (3,), centre (3,) of the primitive in the mesh frame).

  Without fitaabb the primitive matches the mesh's equivalent inertia box and sits at the
  mesh frame origin; with fitaabb it is the smallest one around the mesh's bounding box.
  """
  size = np.zeros(3)
  center = np.zeros(3)
  if not fitaabb:
    b = mesh.boxsz
    if gtype == "sphere":
      size[0] = (b[0] + b[1] + b[2]) / 3
    elif gtype == "capsule":
      size[0] = (b[0] + b[1]) / 2
      size[1] = max(0.0, b[2] - size[0] / 2)
    elif gtype == "cylinder":
      size[:2] = (b[0] + b[1]) / 2, b[2]
    elif gtype in ("ellipsoid", "box"):
      size[:] = b
    else:
      raise MeshError(f"invalid geom type '{gtype}' in fitting mesh")
    return size * fitscale, center
  lo, hi = mesh.aamm[:3], mesh.aamm[3:]
  center = (lo + hi) / 2
  half = hi - center
  if gtype == "sphere":
    size[0] = half.max()
  elif gtype in ("capsule", "cylinder"):
    size[0] = max(half[0], half[1])
    size[1] = half[2] - (size[0] if gtype == "capsule" else 0.0)
  elif gtype in ("ellipsoid", "box"):
    size[:] = half
  else:
    raise MeshError(f"invalid geom type '{gtype}' in fitting mesh")
  return size * fitscale, center
