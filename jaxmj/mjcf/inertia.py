"""Geom volumes and inertias, and body inertia from geoms, as MuJoCo's compiler computes them."""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf import frames
from jaxmj.types import GeomType

_EIG_EPS = 1e-15 * 1000  # mju_eig3's threshold for distinct eigenvalues when sorting
_EIG_REL = 1e-15  # off-diagonal, relative to the largest diagonal entry, that stops it


def geom_volume(gtype: int, size: np.ndarray) -> float:
  """Volume of a primitive geom of half-sizes `size` (planes have none)."""
  r = size[0]
  if gtype == GeomType.SPHERE:
    return 4.0 / 3.0 * np.pi * r**3
  if gtype == GeomType.CAPSULE:
    return np.pi * r * r * 2.0 * size[1] + 4.0 / 3.0 * np.pi * r**3
  if gtype == GeomType.CYLINDER:
    return np.pi * r * r * 2.0 * size[1]
  if gtype == GeomType.ELLIPSOID:
    return 4.0 / 3.0 * np.pi * size[0] * size[1] * size[2]
  if gtype == GeomType.BOX:
    return 8.0 * size[0] * size[1] * size[2]
  return 0.0


def geom_inertia(gtype: int, size: np.ndarray, mass: float) -> np.ndarray:
  """Principal moments (3,) of a solid primitive of `mass` about its centre, geom frame."""
  r = size[0]
  if gtype == GeomType.SPHERE:
    return np.full(3, 0.4 * mass * r * r)
  if gtype == GeomType.CAPSULE:
    h = 2.0 * size[1]
    # Split the mass between the cylinder and the two hemispherical caps by volume.
    sphere_mass = mass * 4.0 * r / (4.0 * r + 3.0 * h)
    cyl_mass = mass - sphere_mass
    lat = cyl_mass * (3.0 * r * r + h * h) / 12.0
    lat += sphere_mass * (0.4 * r * r + 0.25 * h * h + 0.375 * h * r)
    return np.array([lat, lat, cyl_mass * r * r / 2.0 + sphere_mass * 0.4 * r * r])
  if gtype == GeomType.CYLINDER:
    h = 2.0 * size[1]
    lat = mass * (3.0 * r * r + h * h) / 12.0
    return np.array([lat, lat, mass * r * r / 2.0])
  if gtype == GeomType.ELLIPSOID:
    a, b, c = size[:3] ** 2
    return mass / 5.0 * np.array([b + c, a + c, a + b])
  if gtype == GeomType.BOX:
    a, b, c = size[:3] ** 2
    return mass / 3.0 * np.array([b + c, a + c, a + b])
  return np.zeros(3)


def eig3(mat: np.ndarray, stop_rel: float = _EIG_REL, sort_abs: float = _EIG_EPS,
         sort_rel: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
  """Eigenvalues (decreasing) and eigenvector frame quaternion of a symmetric 3x3 matrix.

  Jacobi rotations accumulated in a quaternion, then a sort by quarter turns, the procedure
  of MuJoCo's mju_eig3, so the principal-axis frame (and its sign) is MuJoCo's. The pinned
  MuJoCo iterates to full precision: the half-angle rotation is formed without the
  cancellation in sqrt(0.5 - 0.5 cos) (which cannot express angles below ~1e-8), and the
  iteration stops when the off-diagonal is negligible relative to the diagonal. This agrees
  with its mju_eig3 to ~1e-14 unless two moments (nearly) coincide, where the frame is
  ill-determined and depends on the exact rounding of every step.

  stop_rel: the iteration stops once the largest off-diagonal entry is at most stop_rel times
  the largest diagonal one. Two moments are swapped when they differ by more than sort_abs +
  sort_rel * (largest moment). (MuJoCo's mesh compiler uses 1e-7 for both relative values.)
  """
  quat = np.array([1.0, 0.0, 0.0, 0.0])
  for _ in range(500):
    vec = frames.quat_to_mat(quat)
    d = vec.T @ mat @ vec
    eigval = np.array([d[0, 0], d[1, 1], d[2, 2]])
    if abs(d[0, 1]) > abs(d[0, 2]) and abs(d[0, 1]) > abs(d[1, 2]):
      rk, ck, rotk = 0, 1, 2
    elif abs(d[0, 2]) > abs(d[1, 2]):
      rk, ck, rotk = 0, 2, 1
    else:
      rk, ck, rotk = 1, 2, 0
    off = d[rk, ck]
    if abs(off) <= stop_rel * np.abs(eigval).max() or off == 0:
      break
    tau = (d[ck, ck] - d[rk, rk]) / (2 * off)
    t = 1.0 / (tau + np.sqrt(1 + tau * tau)) if tau >= 0 else -1.0 / (-tau + np.sqrt(1 + tau * tau))
    c = 1.0 / np.sqrt(1 + t * t)
    rot = np.zeros(4)
    s = abs(t) * c / np.sqrt(2.0 * (1.0 + c))  # sin(angle / 2), from tan(angle) = t
    rot[rotk + 1] = -s if tau >= 0 else s
    if rotk == 1:
      rot[rotk + 1] = -rot[rotk + 1]
    rot[0] = np.sqrt(0.5 * (1.0 + c))  # cos(angle / 2)
    quat = frames.normalize_quat(frames.quat_mul(quat, frames.normalize_quat(rot)))
  gap = sort_abs + sort_rel * np.abs(eigval).max()
  for j in range(3):
    j1 = j % 2
    if eigval[j1] + gap < eigval[j1 + 1]:
      eigval[[j1, j1 + 1]] = eigval[[j1 + 1, j1]]
      turn = np.zeros(4)
      turn[0] = turn[(j1 + 2) % 3 + 1] = np.sqrt(0.5)
      quat = frames.normalize_quat(frames.quat_mul(quat, turn))
  return eigval, quat


def combine(masses, positions, quats, inertias) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
  """Mass, com, principal inertia and principal frame of rigidly joined parts.

  Each part i has mass, centre `positions[i]`, principal frame `quats[i]` and moments
  `inertias[i]`, all in a common frame. Returns (mass, ipos, inertia(3), iquat).
  """
  masses = np.asarray(masses, float)
  total = masses.sum()
  if total < frames.MINVAL:
    return 0.0, np.zeros(3), np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
  if len(masses) == 1:
    # One part: MuJoCo keeps its frame and moments as they are (unsorted).
    return total, np.asarray(positions[0], float), np.asarray(inertias[0], float), np.asarray(
      quats[0], float)
  com = (masses[:, None] * np.asarray(positions)).sum(0) / total
  full = np.zeros((3, 3))
  for m, p, q, inert in zip(masses, positions, quats, inertias):
    r = frames.quat_to_mat(q)
    d = p - com
    full += r @ np.diag(inert) @ r.T + m * (np.dot(d, d) * np.eye(3) - np.outer(d, d))
  eigval, iquat = eig3(full)
  return total, com, eigval, iquat
