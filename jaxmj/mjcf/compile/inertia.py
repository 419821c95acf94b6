"""Geom volumes and inertias, and body inertia from geoms, as MuJoCo's compiler computes them."""

from __future__ import annotations

import math

import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.mjcf.compile import frames
from jaxmj.types import GeomType

BODY_EIG_EPS = 4e-15  # the tolerance MuJoCo's body compiler gives mjuu_eig3
MESH_EIG_EPS = 1e-7  # and its mesh compiler
_COS45 = 0.707106781186548  # MuJoCo's quarter-turn constant (not sqrt(0.5) to the last bit)


def geom_volume(gtype: int, size) -> float:
  """Volume of a primitive geom of half-sizes `size` (planes have none), rounded as
  mjCGeom::GetVolume."""
  s0, s1, s2 = (float(x) for x in size[:3])
  pi = math.pi
  if gtype == GeomType.SPHERE:
    return 4 * pi * s0 * s0 * s0 / 3
  if gtype == GeomType.CAPSULE:
    return pi * (s0 * s0 * (2 * s1) + 4 * s0 * s0 * s0 / 3)
  if gtype == GeomType.CYLINDER:
    return pi * s0 * s0 * (2 * s1)
  if gtype == GeomType.ELLIPSOID:
    return 4 * pi * s0 * s1 * s2 / 3
  if gtype == GeomType.BOX:
    return s0 * s1 * s2 * 8
  return 0.0


def geom_inertia(gtype: int, size, mass: float) -> np.ndarray:
  """Principal moments (3,) of a solid primitive of `mass` about its centre, geom frame,
  rounded as mjCGeom::SetInertia."""
  s0, s1, s2 = (float(x) for x in size[:3])
  m = float(mass)
  if gtype == GeomType.SPHERE:
    return np.full(3, 2 * m * s0 * s0 / 5)
  if gtype == GeomType.CAPSULE:
    r, h = s0, 2 * s1
    # Split the mass between the cylinder and the two hemispherical caps by volume.
    sphere_mass = m * 4 * r / (4 * r + 3 * h)
    cyl_mass = m - sphere_mass
    lat = cyl_mass * (3 * r * r + h * h) / 12
    sphere = 2 * sphere_mass * r * r / 5
    lat += sphere + sphere_mass * h * (3 * r + 2 * h) / 8
    return np.array([lat, lat, cyl_mass * r * r / 2 + sphere])
  if gtype == GeomType.CYLINDER:
    r, h = s0, 2 * s1
    lat = m * (3 * r * r + h * h) / 12
    return np.array([lat, lat, m * r * r / 2])
  if gtype in (GeomType.ELLIPSOID, GeomType.BOX):
    a, b, c = s0 * s0, s1 * s1, s2 * s2
    d = 5 if gtype == GeomType.ELLIPSOID else 3
    return np.array([m * (b + c) / d, m * (a + c) / d, m * (a + b) / d])
  return np.zeros(3)


def _mulmat(a: list, b: list) -> list:
  """mjuu_mulmat: a @ b of row-major 3x3 lists, sums in index order."""
  return [a[3 * r] * b[c] + a[3 * r + 1] * b[3 + c] + a[3 * r + 2] * b[6 + c]
          for r in range(3) for c in range(3)]


def eig3(mat, eps: float = BODY_EIG_EPS) -> tuple[np.ndarray, np.ndarray]:
  """Eigenvalues and eigenvector-frame quaternion of a symmetric 3x3 matrix, as MuJoCo 4.0's
  mjuu_eig3 (read from libmujoco.so.4.0.0; 3.x differs): Jacobi rotations accumulated in a
  quaternion until the largest off-diagonal entry is at most max(4e-15, eps) times the
  largest |entry| of `mat`, each rotation from the half-angle tangent t / (1 + sqrt(1 + t^2))
  of tan(angle) = t; then a bubble sort into decreasing order by quarter turns, swapping
  moments that differ by more than max(1e-12, eps) times that largest |entry|. Rounded
  operation by operation, so the frame and its sign are bit-equal to MuJoCo's.

  eps: the compiler's tolerance, BODY_EIG_EPS for bodies and fullinertia, MESH_EIG_EPS for
  meshes.
  """
  m = [float(x) for x in np.asarray(mat, float).ravel()]
  scale = max(abs(x) for x in m)
  stop, gap = max(4e-15, eps) * scale, max(1e-12, eps) * scale
  quat = [1.0, 0.0, 0.0, 0.0]
  eigval = [m[0], m[4], m[8]]
  for _ in range(500):
    vec = frames.quat2mat(quat)
    vt = [vec[0], vec[3], vec[6], vec[1], vec[4], vec[7], vec[2], vec[5], vec[8]]
    d = _mulmat(_mulmat(vt, m), vec)
    eigval = [d[0], d[4], d[8]]
    if abs(d[1]) > abs(d[2]) and abs(d[1]) > abs(d[5]):
      rk, ck, rotk = 0, 1, 2
    elif abs(d[2]) > abs(d[5]):
      rk, ck, rotk = 0, 2, 1
    else:
      rk, ck, rotk = 1, 2, 0
    off = d[3 * rk + ck]
    if abs(off) <= stop:
      break
    tau = (d[4 * ck] - d[4 * rk]) / (2 * off)
    root = math.sqrt(1 + tau * tau)
    t = 1.0 / (tau + root) if tau >= 0 else -1.0 / (root - tau)
    half = t / (1 + math.sqrt(1 + t * t))  # tan(angle / 2)
    c = 1 / math.sqrt(1 + half * half)
    rot = [c, 0.0, 0.0, 0.0]
    rot[rotk + 1] = (half if rotk == 1 else -half) * c
    quat = frames.normvec(frames.mulquat(quat, rot))[0]
  for j in range(3):
    j1 = j % 2
    if eigval[j1] + gap < eigval[j1 + 1]:
      eigval[j1], eigval[j1 + 1] = eigval[j1 + 1], eigval[j1]
      turn = [_COS45, 0.0, 0.0, 0.0]
      turn[(j1 + 2) % 3 + 1] = _COS45
      quat = frames.normvec(frames.mulquat(quat, turn))[0]
  return np.array(eigval), np.array(quat)


def global_inertia(inertia, quat) -> list:
  """mjuu_globalinertia: principal moments in frame `quat` as (xx, yy, zz, xy, xz, yz)."""
  r = frames.quat2mat(quat)
  i0, i1, i2 = (float(x) for x in inertia)
  t = [r[0] * i0, r[3] * i0, r[6] * i0, r[1] * i1, r[4] * i1, r[7] * i1,
       r[2] * i2, r[5] * i2, r[8] * i2]
  return [r[0] * t[0] + r[1] * t[3] + r[2] * t[6], r[3] * t[1] + r[4] * t[4] + r[5] * t[7],
          r[6] * t[2] + r[7] * t[5] + r[8] * t[8], r[0] * t[1] + r[1] * t[4] + r[2] * t[7],
          r[0] * t[2] + r[1] * t[5] + r[2] * t[8], r[3] * t[2] + r[4] * t[5] + r[5] * t[8]]


def off_center(mass: float, d) -> list:
  """mjuu_offcenter: the parallel-axis term of `mass` at offset d, (xx, yy, zz, xy, xz, yz)."""
  x, y, z = (float(v) for v in d)
  m = float(mass)
  return [m * (y * y + z * z), m * (x * x + z * z), m * (x * x + y * y),
          -m * x * y, -m * x * z, -m * y * z]


def rotated_full(quat, m: np.ndarray) -> np.ndarray:
  """(xx, yy, zz, xy, xz, yz) of the symmetric 3x3 `m` turned by `quat` (R m R', rounded as
  mjuu_mulRMRT on mjuu_quat2mat of the normvec'd quat: how MuJoCo compiles a full inertia
  given in a rotated frame, e.g. a URDF <inertial> origin's rpy)."""
  r = frames.quat2mat(frames.normvec([float(x) for x in quat])[0])
  mm = [float(x) for x in np.asarray(m, float).ravel()]
  t = _mulmat(r, mm)
  out = [t[3 * i] * r[3 * j] + t[3 * i + 1] * r[3 * j + 1] + t[3 * i + 2] * r[3 * j + 2]
         for i in range(3) for j in range(3)]
  return np.array([out[0], out[4], out[8], out[1], out[2], out[5]])


def full_to_principal(full, eps: float = BODY_EIG_EPS) -> tuple[np.ndarray, np.ndarray]:
  """mjuu_fullInertia: (moments, frame) of an inertia given as (xx, yy, zz, xy, xz, yz)."""
  xx, yy, zz, xy, xz, yz = (float(v) for v in full)
  return eig3([xx, xy, xz, xy, yy, yz, xz, yz, zz], eps)


def combine(masses, positions, quats, inertias,
            fused: bool = False) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
  """Mass, com, principal inertia and principal frame of rigidly joined parts.

  Each part i has mass, centre `positions[i]`, principal frame `quats[i]` and moments
  `inertias[i]`, all in a common frame. Returns (mass, ipos, inertia(3), iquat). Rounded as
  mjCBody::InertiaFromGeom, or as mjCBody::AccumulateInertia when `fused` (which adds each
  part's two inertia terms before adding them to the total).
  """
  masses = [float(m) for m in masses]
  if len(masses) == 1 and not fused:
    # One part: MuJoCo keeps its frame and moments as they are (unsorted).
    return masses[0], np.asarray(positions[0], float), np.asarray(inertias[0], float), \
        np.asarray(quats[0], float)
  total, com = 0.0, [0.0, 0.0, 0.0]
  for m, p in zip(masses, positions):
    total += m
    com = [com[k] + m * float(p[k]) for k in range(3)]
  if total < MINVAL:
    return 0.0, np.zeros(3), np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
  com = [c / total for c in com]
  full = [0.0] * 6
  for m, p, q, inert in zip(masses, positions, quats, inertias):
    a = global_inertia(inert, q)
    b = off_center(m, [float(p[k]) - com[k] for k in range(3)])
    full = [full[k] + (a[k] + b[k]) if fused else full[k] + a[k] + b[k] for k in range(6)]
  eigval, iquat = full_to_principal(full)
  return total, np.array(com), eigval, iquat
