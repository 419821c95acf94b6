"""<mesh builtin="..." params="...">: the meshes MuJoCo 4.0's compiler generates
(mjs_makeMesh), vertex for vertex and face for face, in float32 as MuJoCo stores them.

Supported: sphere, hemisphere, supersphere, supertorus, cone, wedge and plate (the wedge's and
plate's per-vertex tangent frames are normals, which jaxmj does not keep), and the flexcomp
generators grid, box, cylinder, ellipsoid, square and disc (meshgrid.py).
"""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.assets import meshgrid

_F32 = np.float32


def _sphere(subdiv: int):
  """Icosphere: an icosahedron, each subdivision splitting a triangle into four (float32
  arithmetic, as MuJoCo's)."""
  phi = _F32((1.0 + np.sqrt(5.0)) / 2.0)
  one = _F32(1.0)
  vert = [[-one, phi, 0], [one, phi, 0], [-one, -phi, 0], [one, -phi, 0],
          [0, -one, phi], [0, one, phi], [0, -one, -phi], [0, one, -phi],
          [phi, 0, -one], [phi, 0, one], [-phi, 0, -one], [-phi, 0, one]]
  norm = np.sqrt(1.0 + float(phi) * float(phi))
  vert = [[_F32(float(c) / norm) for c in v] for v in vert]
  face = [0, 11, 5, 0, 5, 1, 0, 1, 7, 0, 7, 10, 0, 10, 11, 1, 5, 9, 5, 11, 4, 11, 10, 2,
          10, 7, 6, 7, 1, 8, 3, 9, 4, 3, 4, 2, 3, 2, 6, 3, 6, 8, 3, 8, 9, 4, 9, 5, 2, 4, 11,
          6, 2, 10, 8, 6, 7, 9, 8, 1]
  face = [face[i:i + 3] for i in range(0, len(face), 3)]
  for _ in range(subdiv):
    cache: dict = {}
    new = []
    for a, b, c in face:
      ab, bc, ca = (_midpoint(vert, cache, *e) for e in ((a, b), (b, c), (c, a)))
      new += [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
    face = new
  return np.array(vert, _F32), np.array(face)


def _midpoint(vert: list, cache: dict, a: int, b: int) -> int:
  """Index of the unit-sphere midpoint of edge (a, b), appended to `vert` once."""
  key = (min(a, b), max(a, b))
  if key not in cache:
    m = [(vert[a][k] + vert[b][k]) / _F32(2.0) for k in range(3)]
    n = np.sqrt(m[0] * m[0] + m[1] * m[1] + m[2] * m[2])
    vert.append([c / n for c in m])
    cache[key] = len(vert) - 1
  return cache[key]


def _hemisphere(res: int):
  """Quad-projected hemisphere with a bottom cap (centre vertex last)."""
  pole = np.array([0.0, 0.0, 1.0])
  equator = np.array([[1.0, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0]])
  vert = [pole]
  for row in range(res + 1):
    factor = (row + 1) / (res + 1)
    for side in range(4):
      start = pole + factor * (equator[side] - pole)
      end = pole + factor * (equator[(side + 1) % 4] - pole)
      delta = (end - start) / (row + 1)
      for i in range(row + 1):
        p = start + i * delta
        vert.append(p / np.sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]))
  vert.append(np.zeros(3))
  face = [[0, 1, 2], [0, 2, 3], [0, 3, 4], [0, 4, 1]]
  for row in range(res):
    cur, ncur = 2 * row * (row + 1) + 1, 4 * (row + 1)
    nxt, nnxt = cur + ncur, 4 * (row + 2)
    for side in range(4):
      for i in range(row + 2):
        vc, vn = i + (row + 1) * side, i + (row + 2) * side
        face.append([cur + vc % ncur, nxt + vn % nnxt, nxt + (vn + 1) % nnxt])
        if i < row + 1:
          face.append([cur + vc % ncur, nxt + (vn + 1) % nnxt, cur + (vc + 1) % ncur])
  start, count = 2 * res * (res + 1) + 1, 4 * (res + 1)
  face += [[start + i, len(vert) - 1, start + (i + 1) % count] for i in range(count)]
  return np.array(vert).astype(_F32), np.array(face)


def _aux_c(w: float, m: float) -> float:
  return float(np.copysign(abs(np.cos(w)) ** m, np.cos(w)))


def _aux_s(w: float, m: float) -> float:
  return float(np.copysign(abs(np.sin(w)) ** m, np.sin(w)))


def _supersphere(res: int, e: float, n: float):
  vert = [[0.0, 0.0, -1.0]]
  for i in range(1, res):
    v = -np.pi / 2 + i * np.pi / res
    for j in range(res):
      u = -np.pi + j * 2 * np.pi / res
      vert.append([_aux_c(v, n) * _aux_c(u, e), _aux_c(v, n) * _aux_s(u, e), _aux_s(v, n)])
  vert.append([0.0, 0.0, 1.0])
  face = [[0, 1 + (j + 1) % res, 1 + j] for j in range(res)]
  for i in range(res - 2):
    for j in range(res):
      v1, v2 = 1 + i * res + j, 1 + i * res + (j + 1) % res
      v4, v3 = 1 + (i + 1) * res + j, 1 + (i + 1) * res + (j + 1) % res
      face += [[v1, v2, v4], [v2, v3, v4]]
  last = 1 + (res - 2) * res
  face += [[last + j, last + (j + 1) % res, len(vert) - 1] for j in range(res)]
  return np.array(vert).astype(_F32), np.array(face)


def _supertorus(res: int, radius: float, s: float, t: float):
  vert, face = [], []
  for i in range(res):
    for j in range(res):
      u, v = 2 * np.pi * i / res, 2 * np.pi * j / res
      vert.append([(1 + radius * _aux_c(v, s)) * _aux_c(u, t),
                   (1 + radius * _aux_c(v, s)) * _aux_s(u, t), radius * _aux_s(v, s)])
  for i in range(res):
    for j in range(res):
      i1, j1 = (i + 1) % res, (j + 1) % res
      v1, v2, v3, v4 = i * res + j, i1 * res + j, i1 * res + j1, i * res + j1
      face += [[v1, v2, v4], [v2, v3, v4]]
  return np.array(vert).astype(_F32), np.array(face)


def _cone(nedge: int, radius: float):
  """Vertices only (the faces are the convex hull's)."""
  vert = [[np.cos(2 * i * np.pi / nedge), np.sin(2 * i * np.pi / nedge), -1.0]
          for i in range(nedge)]
  if radius > 0:
    vert += [[radius * np.cos(2 * i * np.pi / nedge), radius * np.sin(2 * i * np.pi / nedge),
              1.0] for i in range(nedge, 2 * nedge)]
  else:
    vert.append([0.0, 0.0, 1.0])
  return np.array(vert).astype(_F32), np.zeros((0, 3), int)


def _edges(n: int, fov: float, gamma: float) -> np.ndarray:
  """Bin edges over [-1, 1] (accumulated like MuJoCo's LinSpace), foveated, times fov."""
  out, x, step = [], -1.0, 2.0 / n
  for _ in range(n + 1):
    out.append(x)
    x += step
  out = np.array(out)
  if gamma:
    out = gamma * out**5 + (1 - gamma) * out
  return out * (fov * np.pi / 180)


def _wedge(nx: int, ny: int, fov_x: float, fov_y: float, gamma: float):
  """Vertices only: bin centres of a unit spherical wedge (azimuth, elevation)."""
  xe, ye = _edges(nx, fov_x, gamma), _edges(ny, fov_y, gamma)
  vert = []
  for i in range(nx):
    a = 0.5 * (xe[i + 1] + xe[i])
    for j in range(ny):
      e = 0.5 * (ye[j + 1] + ye[j])
      vert.append([np.cos(e) * np.sin(a), np.sin(e), -np.cos(e) * np.cos(a)])
  return np.array(vert).astype(_F32), np.zeros((0, 3), int)


def _plate(nx: int, ny: int):
  """A grid of cell centres on z = -1 (shell inertia)."""
  dx, dy = 2.0 / nx, 2.0 / ny
  vert = [[-1 + (i + 0.5) * dx, -1 + (j + 0.5) * dy, -1.0] for i in range(nx) for j in range(ny)]
  face = []
  for i in range(1, nx):
    for j in range(1, ny):
      a, b, c, d = (i - 1) * ny + j - 1, i * ny + j - 1, (i - 1) * ny + j, i * ny + j
      face += [[a, b, c], [d, c, b]]
  return np.array(vert).astype(_F32), np.array(face).reshape(-1, 3)


def _int_param(p, lo: int, hi: int | None, what: str) -> int:
  k = int(p)
  if k < lo or (hi is not None and k > hi):
    raise ValueError(f"{what} must be at least {lo}" + (f" and at most {hi}" if hi is not None
                                                        else ""))
  return k


_COUNTS = {"sphere": 1, "hemisphere": 1, "supersphere": 3, "supertorus": 4, "cone": 2,
           "wedge": 5, "plate": 2}


def make(node, kind: str, params) -> tuple[np.ndarray, np.ndarray, str | None]:
  """(vertices (n, 3) float32, faces (m, 3), forced inertia mode or None) of builtin mesh
  `kind`; `node` (the <mesh>) names errors."""
  if kind in meshgrid.KINDS:
    try:
      return meshgrid.make(kind, [] if params is None else [float(x) for x in params])
    except meshgrid.GridError as e:
      raise node.error(str(e), "params") from None
  if kind == "none":
    raise node.error("Unsupported mesh type", "builtin")
  if kind not in _COUNTS:
    raise node.error(f"invalid keyword: '{kind}'", "builtin")
  p = [] if params is None else [float(x) for x in params]
  if len(p) != _COUNTS[kind]:
    raise node.error(f"{kind} mesh type requires {_COUNTS[kind]} parameter"
                     + "s" * (_COUNTS[kind] > 1), "params")
  try:
    if kind == "sphere":
      return (*_sphere(_int_param(p[0], 0, 4, "sphere subdivision")), None)
    if kind == "hemisphere":
      return (*_hemisphere(_int_param(p[0], 0, 10, "hemisphere resolution")), None)
    if kind == "supersphere":
      if p[1] < 0 or p[2] < 0:
        raise ValueError("supersphere 'e' and 'n' cannot be negative")
      return (*_supersphere(_int_param(p[0], 3, None, "supersphere resolution"), p[1], p[2]),
              None)
    if kind == "supertorus":
      if not 0 < p[1] <= 1 or p[2] <= 0 or p[3] <= 0:
        raise ValueError("supertorus needs radius in (0, 1] and positive 's' and 't'")
      return (*_supertorus(_int_param(p[0], 3, None, "supertorus resolution"), *p[1:]), None)
    if kind == "cone":
      return (*_cone(_int_param(p[0], 3, None, "cone nvert"), p[1]), None)
    if kind == "wedge":
      if not (0 < p[2] <= 180 and 0 < p[3] <= 90 and 0 <= p[4] <= 1):
        raise ValueError("wedge needs fov[0] in (0, 180], fov[1] in (0, 90], gamma in [0, 1]")
      return (*_wedge(_int_param(p[0], 1, None, "wedge resolution"),
                      _int_param(p[1], 1, None, "wedge resolution"), *p[2:]), None)
    return (*_plate(_int_param(p[0], 1, None, "plate resolution"),
                    _int_param(p[1], 1, None, "plate resolution")), "shell")
  except ValueError as e:
    raise node.error(str(e), "params") from None

