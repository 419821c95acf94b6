"""Mesh polygons as MuJoCo 4.0's compiler makes them (mjCMesh::MakePolygons, host side).

The convex hull's triangles are merged into the hull's flat sides (polygons), which the
multi-contact collision path uses (mesh_poly* fields, see types.Model). Step by step:

1. Each hull triangle (in graph order, vertices as read, before refpos/refquat/scale) is
   keyed by its normal's direction, rounded to 0.01 rad in azimuth and polar angle; all
   triangles with one key form one polygon (degenerate triangles are skipped). MuJoCo keeps
   the polygons in a std::unordered_map, so their order is the iteration order of the
   4.0.0 wheel's C++ library (libc++: the key's hash, bucket growth, list splicing on
   rehash); jaxmj reproduces that order exactly.
2. A polygon keeps its boundary half-edges: a triangle cancels the edges it shares
   (reversed) with the polygon and adds the rest; triangles that touch nothing yet form
   islands, merged when a later triangle connects them.
3. Each island's boundary is walked into a closed vertex path (counter-clockwise seen from
   outside, as the triangles are); paths with fewer than three vertices are dropped.
   Polygons come out in the map's order, paths in island order.
4. A mirroring scale (negative determinant) reverses each path after its first vertex
   (mesh.process does this, as it flips the hull's triangles).
5. Normals are recomputed in the final mesh frame (Newell's method over each path); the
   vertex -> polygon map lists, per vertex, the polygons whose path visits it.
"""

from __future__ import annotations

import math
import struct

import numpy as np

from jaxmj.constants import MINVAL

_ANGLE_TOL = 0.01  # rad, bucket size of the normal directions merged into one polygon


def _round(x: float) -> float:
  """std::round: halves away from zero."""
  r = float(math.trunc(x))
  return r + math.copysign(1.0, x) if abs(x - r) >= 0.5 else r


def _key(a, b, c) -> tuple[float, float] | None:
  """MuJoCo's MeshPolygonKey: the triangle's normal direction as rounded spherical angles
  (azimuth, polar) in units of 0.01 rad; None for a degenerate triangle (then skipped)."""
  ab = (b[0] - a[0], b[1] - a[1], b[2] - a[2])
  ac = (c[0] - a[0], c[1] - a[1], c[2] - a[2])
  n = (ab[1] * ac[2] - ab[2] * ac[1], ab[2] * ac[0] - ab[0] * ac[2],
       ab[0] * ac[1] - ab[1] * ac[0])
  nrm = math.sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2])
  if nrm < MINVAL:
    return None
  x, y, z = (c / nrm + 0.0 for c in n)  # + 0.0: atan2 sees +0 for -0
  if abs(z) > 1.0 - 1e-7:
    return 0.0, (_round(math.pi / _ANGLE_TOL) if z < 0 else 0.0)
  return _round(math.atan2(y, x) / _ANGLE_TOL), _round(math.acos(z) / _ANGLE_TOL)


class _Polygon:
  """MuJoCo's MeshPolygon: boundary half-edges of merged triangles, grouped in islands."""

  def __init__(self, v1: int, v2: int, v3: int):
    self.edges = [(v1, v2), (v2, v3), (v3, v1)]
    self.islands = [0, 0, 0]
    self.nisland = 1

  def _combine(self, a: int, b: int) -> int:
    lo, hi = min(a, b), max(a, b)
    self.islands = [lo if k == hi else k - 1 if k > hi else k for k in self.islands]
    return lo

  def _take(self, first: int, second: int) -> int | None:
    """Removes half-edge (first, second) if present; returns its island."""
    for i, e in enumerate(self.edges):
      if e == (first, second):
        del self.edges[i]
        return self.islands.pop(i)
    return None

  def insert(self, v1: int, v2: int, v3: int) -> None:
    island, add = -1, []
    for a, b in ((v1, v2), (v2, v3), (v3, v1)):
      found = self._take(b, a)
      if found is None:
        add.append((a, b))
      elif island == -1:
        island = found
      elif found != island:
        self.nisland -= 1
        island = self._combine(island, found)
    if island == -1:
      island = self.nisland
      self.nisland += 1
    self.edges += add
    self.islands += [island] * len(add)

  def paths(self) -> list[list[int]]:
    # no shortcut for three edges: the older published source read them as a triangle in
    # storage order, which reverses a fan of three triangles merged into one (MuJoCo 4.0
    # walks it: replicate/bunny.obj's polygon 303 faces out there, in MuJoCo 4.0 as here)
    e = self.edges
    out = []
    for i in range(self.nisland):
      start = next((j for j in range(len(e)) if self.islands[j] == i), None)
      if start is None:
        continue
      path = [e[start][0], e[start][1]]
      nxt = path[-1]
      for _ in range(len(e)):
        # MuJoCo's walk starts its search at the second edge (k = 1)
        k = next((k for k in range(1, len(e)) if self.islands[k] == i and e[k][0] == nxt),
                 None)
        if k is None:
          continue
        nxt = e[k][1]
        if nxt == path[0]:
          out.append(path)
          break
        path.append(nxt)
    return out


def _hash_double(x: float) -> int:
  """libc++'s std::hash<double> on 64 bits: the bit pattern (0 for +-0)."""
  return 0 if x == 0.0 else struct.unpack("<Q", struct.pack("<d", x))[0]


def _hash_pair(a: float, b: float) -> int:
  """mujoco::user::PairHash: boost's hash_combine of the two std::hash values (measured
  from the 4.0.0 binary)."""
  h1, h2 = _hash_double(a), _hash_double(b)
  return h1 ^ ((h2 + 0x9E3779B9 + (h1 << 6) + (h1 >> 2)) & 0xFFFFFFFFFFFFFFFF)


def _next_prime(n: int) -> int:
  while n > 2 and any(n % p == 0 for p in range(2, math.isqrt(n) + 1)):
    n += 1
  return n


class _Entry:
  __slots__ = ("value", "code", "next")

  def __init__(self, value, code: int):
    self.value, self.code, self.next = value, code, None


class _UnorderedMap:
  """Iteration order of libc++'s std::unordered_map (unique keys, max load factor 1; MuJoCo's
  wheels link libc++) after inserting keys one by one: one singly linked list, a key going to
  the front of its bucket's run, or to the very front when its bucket is empty; growing the
  bucket array (2, 5, 11, 23, ... primes) regroups the list by bucket."""

  def __init__(self):
    self.front = _Entry(None, 0)  # the list's before-begin node
    self.buckets: list = []  # per bucket: the entry before its first one
    self.size = 0

  def _bucket(self, code: int, n: int) -> int:
    return code & (n - 1) if n & (n - 1) == 0 else code % n

  def insert(self, value, code: int) -> None:
    n = len(self.buckets)
    if self.size + 1 > n:
      pow2 = n > 2 and n & (n - 1) == 0
      want = max(2 * n + (not pow2), self.size + 1)
      self._rehash(2 if want == 1 else want if want & (want - 1) == 0 else _next_prime(want))
    e, n = _Entry(value, code), len(self.buckets)
    b = self._bucket(code, n)
    prev = self.buckets[b]
    if prev is None:
      e.next, self.front.next = self.front.next, e
      self.buckets[b] = self.front
      if e.next is not None:
        self.buckets[self._bucket(e.next.code, n)] = e
    else:
      e.next, prev.next = prev.next, e
    self.size += 1

  def _rehash(self, n: int) -> None:
    """libc++'s __do_rehash for unique keys."""
    self.buckets = buckets = [None] * n
    pp, cp = self.front, self.front.next
    if cp is None:
      return
    phash = self._bucket(cp.code, n)
    buckets[phash] = pp
    pp, cp = cp, cp.next
    while cp is not None:
      chash = self._bucket(cp.code, n)
      if chash == phash:
        pp = cp
      elif buckets[chash] is None:
        buckets[chash], pp, phash = pp, cp, chash
      else:
        pp.next = cp.next
        cp.next = buckets[chash].next
        buckets[chash].next = cp
      cp = pp.next

  def __iter__(self):
    e = self.front.next
    while e is not None:
      yield e.value
      e = e.next


def polygons(vert: np.ndarray, faces: np.ndarray) -> list[list[int]]:
  """Vertex paths (ids into `vert`) of the polygons merged from the hull triangles `faces`
  (m, 3), with `vert` (n, 3) the vertices as read (mjCMesh::MakePolygons)."""
  v = np.asarray(vert, np.float64).tolist()
  groups: dict = {}
  order = _UnorderedMap()
  for a, b, c in np.asarray(faces, np.int64).tolist():
    key = _key(v[a], v[b], v[c])
    if key is None:
      continue
    key = (key[0] + 0.0, key[1] + 0.0)  # -0.0 and 0.0 are one key (== and std::hash agree)
    if key in groups:
      groups[key].insert(a, b, c)
    else:
      groups[key] = _Polygon(a, b, c)
      order.insert(groups[key], _hash_pair(*key))
  return [p for poly in order for p in poly.paths() if len(p) >= 3]


def _newell(pts) -> tuple[float, float, float]:
  """Newell's normal of a closed polygon, summed edge by edge in path order, normalized
  ((1, 0, 0) when degenerate)."""
  x = y = z = 0.0
  for (ax, ay, az), (bx, by, bz) in zip(pts, pts[1:] + pts[:1]):
    x += (ay - by) * (az + bz)
    y += (az - bz) * (ax + bx)
    z += (ax - bx) * (ay + by)
  nrm = math.sqrt(x * x + y * y + z * z)
  return (1.0, 0.0, 0.0) if nrm < MINVAL else (x / nrm, y / nrm, z / nrm)


def normals(vert: np.ndarray, paths: list[list[int]]) -> np.ndarray:
  """(npoly, 3) unit normals of the paths over the final `vert` (n, 3)
  (mjCMesh::MakePolygonNormals; MuJoCo 4.0.0 uses Newell's method over the whole path:
  measured bit for bit, unlike the first-three-vertices normal of older releases)."""
  v = np.asarray(vert, np.float64).tolist()
  return np.array([_newell([v[i] for i in p]) for p in paths], np.float64).reshape(-1, 3)


def fields(meshes) -> dict:
  """mesh_poly* Model fields (MuJoCo's layout, see types.Model) of compiled meshes, each with
  `vert` (n, 3), `poly` (list of vertex paths) and `polynormal` (npoly, 3)."""
  polys = [m.poly for m in meshes]
  pnum = np.array([len(p) for p in polys], np.int32)
  flat = [path for p in polys for path in p]
  vnum = np.array([len(path) for path in flat], np.int32)
  maps, mapnum = [], []
  for m, p in zip(meshes, polys):
    per_vert = [[] for _ in range(len(m.vert))]
    for i, path in enumerate(p):
      for vid in path:
        per_vert[vid].append(i)
    mapnum += [len(x) for x in per_vert]
    maps += [i for x in per_vert for i in x]
  mapnum = np.array(mapnum, np.int32)
  cum = lambda n: (np.cumsum(n) - n).astype(np.int32)
  return {
    "nmeshpoly": len(flat), "nmeshpolyvert": int(vnum.sum()), "nmeshpolymap": len(maps),
    "npolygonmax": int(vnum.max()) if len(flat) else 0,
    "mesh_polynum": pnum, "mesh_polyadr": cum(pnum),
    "mesh_polynormal": (np.concatenate([m.polynormal for m in meshes]) if meshes
                        else np.zeros((0, 3))).reshape(-1, 3),
    "mesh_polyvertadr": cum(vnum), "mesh_polyvertnum": vnum,
    "mesh_polyvert": np.array([vid for path in flat for vid in path], np.int32),
    "mesh_polymapadr": cum(mapnum), "mesh_polymapnum": mapnum,
    "mesh_polymap": np.array(maps, np.int32),
  }
