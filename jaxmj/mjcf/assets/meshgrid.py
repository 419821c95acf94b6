"""<mesh builtin="grid|box|cylinder|ellipsoid|square|disc" params="count[3] spacing[3] [dim]">:
MuJoCo 4.0 builds these meshes with its flexcomp point generators (mjCFlexcomp::MakeGrid,
MakeBox, MakeSquare), vertex for vertex and triangle for triangle.

dim 2 gives a surface (triangles, shell inertia): a flat grid, a square or a disc, or a box,
cylinder or ellipsoid without its top (+z) side. dim 3 gives a volume: MuJoCo keeps the
generator's tetrahedra only in the spec, so the compiled mesh is the points (the grid's
lattice, or the surface points plus the centre) with the convex hull as faces.
"""

from __future__ import annotations

import math

import numpy as np

from jaxmj.constants import EPS, MINVAL

KINDS = ("grid", "box", "cylinder", "ellipsoid", "square", "disc")


class GridError(ValueError):
  """Bad params, with MuJoCo's message."""


def _normalize(p: list, n: int) -> None:
  """mjuu_normvec on the first n entries (left alone when shorter than mjMINVAL)."""
  nrm = math.sqrt(sum(p[i] * p[i] for i in range(n)))
  if nrm >= MINVAL:
    for i in range(n):
      p[i] /= nrm


def _grid(count, spacing, dim: int, disc: bool = False):
  """MakeGrid (dim 2 or 3): lattice points centred on the origin, x slowest, and for dim 2
  two triangles per cell (the tetrahedra of dim 3 are not kept)."""
  nx, ny, nz = count
  pts, tri = [], []
  for ix in range(nx):
    for iy in range(ny):
      if dim == 2:
        pos = (spacing[0] * (ix - 0.5 * (nx - 1)), spacing[1] * (iy - 0.5 * (ny - 1)))
        pts.append([pos[0], pos[1], 0.0])
        quad = [[0, 1, 2], [0, 2, 3]]
        # the disc flips the diagonal in two quadrants so the projection stays symmetric
        if disc and ((pos[0] < -EPS < pos[1]) or (pos[0] > -EPS > pos[1])):
          quad = [[0, 1, 3], [1, 2, 3]]
        if ix < nx - 1 and iy < ny - 1:
          v = [nz * ny * ix + nz * iy, nz * ny * (ix + 1) + nz * iy,
               nz * ny * (ix + 1) + nz * (iy + 1), nz * ny * ix + nz * (iy + 1)]
          tri += [[v[k] for k in q] for q in quad]
        continue
      for iz in range(nz):
        pts.append([spacing[0] * (ix - 0.5 * (nx - 1)), spacing[1] * (iy - 0.5 * (ny - 1)),
                    spacing[2] * (iz - 0.5 * (nz - 1))])
  return pts, tri


def _project(kind: str, count, spacing, ix: int, iy: int, iz: int) -> list:
  """BoxProject: box lattice coordinates to the box, cylinder or ellipsoid surface."""
  pos = [2.0 * i / (c - 1) - 1 for i, c in zip((ix, iy, iz), count)]
  size = [0.5 * s * (c - 1) for s, c in zip(spacing, count)]
  if kind == "cylinder":
    scale = max(abs(pos[0]), abs(pos[1]))
    _normalize(pos, 2)
    pos[0] *= size[0] * scale
    pos[1] *= size[1] * scale
    pos[2] *= size[2]
    return pos
  if kind == "ellipsoid":
    _normalize(pos, 3)
  return [pos[k] * size[k] for k in range(3)]


def _box(kind: str, count, spacing, dim: int):
  """MakeBox: the surface points (bottom and top, then the y sides, then the x sides; the
  top is left out for dim 2) after a centre point (dim 3), and for dim 2 the triangles."""
  nx, ny, nz = count
  pts = [[0.0, 0.0, 0.0]] if dim == 3 else []
  idx = {}
  open2 = dim == 2

  def add(ix, iy, iz):
    idx[ix, iy, iz] = len(pts) - (dim == 3)
    pts.append(_project(kind, count, spacing, ix, iy, iz))

  for iz in range(0, nz, nz - 1):
    for ix in range(nx):
      for iy in range(ny):
        if not (open2 and iz != 0):
          add(ix, iy, iz)
  for iy in range(0, ny, ny - 1):
    for ix in range(nx):
      for iz in range(nz):
        if iz > 0 and (open2 or iz < nz - 1):
          add(ix, iy, iz)
  for ix in range(0, nx, nx - 1):
    for iy in range(1, ny - 1):
      for iz in range(nz):
        if iz > 0 and (open2 or iz < nz - 1):
          add(ix, iy, iz)
  if dim == 3:
    return pts, []
  tri = []
  for ix in range(nx - 1):  # bottom (iz = 0)
    for iy in range(ny - 1):
      tri += [[idx[ix, iy, 0], idx[ix + 1, iy + 1, 0], idx[ix + 1, iy, 0]],
              [idx[ix, iy, 0], idx[ix, iy + 1, 0], idx[ix + 1, iy + 1, 0]]]
  for iy in range(0, ny, ny - 1):
    x0, dx = (0, 1) if iy == 0 else (1, -1)
    for ix in range(nx - 1):
      for iz in range(nz - 1):
        a, b = idx[ix + x0, iy, iz], idx[ix + x0 + dx, iy, iz]
        c, d = idx[ix + x0 + dx, iy, iz + 1], idx[ix + x0, iy, iz + 1]
        tri += [[a, b, c], [a, c, d]]
  for ix in range(0, nx, nx - 1):
    y0, dy = (0, 1) if ix != 0 else (1, -1)
    for iy in range(ny - 1):
      for iz in range(nz - 1):
        a, b = idx[ix, iy + y0, iz], idx[ix, iy + y0 + dy, iz]
        c, d = idx[ix, iy + y0 + dy, iz + 1], idx[ix, iy + y0, iz + 1]
        tri += [[a, b, c], [a, c, d]]
  return pts, tri


def _square(kind: str, count, spacing):
  """MakeSquare: a flat grid, projected onto a disc (an ellipse of the grid's half-sizes)."""
  pts, tri = _grid(count, spacing, 2, disc=kind == "disc")
  if kind == "disc":
    size = (0.5 * spacing[0] * (count[0] - 1), 0.5 * spacing[1] * (count[1] - 1))
    for p in pts:
      scale = max(abs(p[0]), abs(p[1]))
      _normalize(p, 2)
      p[0] *= size[0] * scale
      p[1] *= size[1] * scale
  return pts, tri


def make(kind: str, p: list) -> tuple[np.ndarray, np.ndarray, str | None]:
  """(vertices (n, 3) float32, faces (m, 3), forced inertia mode) of a count/spacing builtin;
  raises GridError with MuJoCo's message."""
  flat = kind in ("square", "disc")
  if flat and len(p) != 6:
    raise GridError("Square/disc mesh type requires 6 parameters (count[3], spacing[3])")
  if not flat and len(p) not in (6, 7):
    which = "Grid" if kind == "grid" else "Box/cylinder/ellipsoid"
    raise GridError(f"{which} mesh type requires 6 or 7 parameters (count[3], spacing[3], "
                    "[dim])")
  count, spacing = [int(x) for x in p[:3]], [float(x) for x in p[3:6]]
  dim = 2 if flat else int(p[6]) if len(p) == 7 else 3
  if kind == "grid":
    if min(count) < 1:
      raise GridError("Grid count must be positive")
    if dim not in (2, 3):
      raise GridError("Grid dim must be 2 or 3")
    if dim == 2 and count[2] != 1:
      raise GridError("Grid count must be 1 along dimensions beyond dim")
    if count[0] < 2 or count[1] < 2 or (dim == 3 and count[2] < 2):
      raise GridError("Failed to create grid mesh")  # no cell
    pts, tri = _grid(count, spacing, dim)
  elif flat:
    if count[2] != 1:
      raise GridError("Square/disc count[2] must be 1")
    if min(count) < 1:
      raise GridError("Count must be positive")
    pts, tri = _square(kind, count, spacing)
    if not tri:
      raise GridError("Failed to create square/disc mesh")
  else:
    if min(count) < 2:
      raise GridError("Box/cylinder/ellipsoid count must be at least 2")
    if dim not in (2, 3):
      raise GridError("Mesh dim must be 2 or 3 for box/cylinder/ellipsoid")
    pts, tri = _box(kind, count, spacing, dim)
  vert = np.asarray(pts, np.float64).astype(np.float32).reshape(-1, 3)
  return vert, np.asarray(tri, np.int64).reshape(-1, 3), "shell" if dim == 2 else None
