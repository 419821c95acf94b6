"""Host-side frame algebra: the MJCF orientation forms, fromto, and frame composition.

Quaternions are (w, x, y, z) numpy arrays; everything here runs once, at compile time.

The compiler's frames are rounded as MuJoCo's compiler rounds them: the `mjuu_*` helpers of
its user_util.cc, operation by operation in Python floats (IEEE doubles; the pinned
libmujoco.so.4.0.0 fuses no multiply-adds, and math.sin/cos/atan2 are the libm it calls), so
compiled quaternions and positions are bit-equal to mjModel's (tests/mjcf/test_frames_bits.py).
"""

from __future__ import annotations

import math

import numpy as np

from jaxmj.constants import EPS, MINVAL
from jaxmj.mjcf.errors import MJCFError

_AXES = {"x": 0, "y": 1, "z": 2}


# ---------------------------------------------------------------- MuJoCo's compiler arithmetic


def normvec(v) -> tuple[list, float]:
  """(v / |v|, |v|) as mjuu_normvec: |v|^2 summed in order; below mjEPS v stays as it is
  (norm 0); within mjEPS of 1 it is not divided."""
  nrm = 0.0
  for x in v:
    nrm += x * x
  if nrm < EPS:
    return [float(x) for x in v], 0.0
  nrm = math.sqrt(nrm)
  if abs(nrm - 1) > EPS:
    return [x / nrm for x in v], nrm
  return [float(x) for x in v], nrm


def mulquat(a, b) -> list:
  """mjuu_mulquat: the product a * b, normalized by normvec."""
  a0, a1, a2, a3 = (float(x) for x in a)
  b0, b1, b2, b3 = (float(x) for x in b)
  return normvec([a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3,
                  a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
                  a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1,
                  a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0])[0]


def quat2mat(q) -> list:
  """mjuu_quat2mat: row-major 3x3 rotation (9 floats) of a unit quaternion."""
  q0, q1, q2, q3 = (float(x) for x in q)
  if q0 == 1 and q1 == 0 and q2 == 0 and q3 == 0:
    return [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
  q00, q01, q02, q03 = q0 * q0, q0 * q1, q0 * q2, q0 * q3
  q11, q12, q13, q22, q23, q33 = q1 * q1, q1 * q2, q1 * q3, q2 * q2, q2 * q3, q3 * q3
  return [q00 + q11 - q22 - q33, 2 * (q12 - q03), 2 * (q13 + q02),
          2 * (q12 + q03), q00 - q11 + q22 - q33, 2 * (q23 - q01),
          2 * (q13 - q02), 2 * (q23 + q01), q00 - q11 - q22 + q33]


def mulvecmat(v, mat) -> list:
  """mjuu_mulvecmat: mat (row-major 9) times v."""
  v0, v1, v2 = (float(x) for x in v)
  return [mat[0] * v0 + mat[1] * v1 + mat[2] * v2, mat[3] * v0 + mat[4] * v1 + mat[5] * v2,
          mat[6] * v0 + mat[7] * v1 + mat[8] * v2]


def rotquat(v, q) -> list:
  """mjuu_rotVecQuat: v rotated by the unit quaternion q (v + 2 q x (q x v + w v))."""
  v0, v1, v2 = (float(x) for x in v)
  q0, q1, q2, q3 = (float(x) for x in q)
  if v0 == 0 and v1 == 0 and v2 == 0:
    return [0.0, 0.0, 0.0]
  if q0 == 1 and q1 == 0 and q2 == 0 and q3 == 0:
    return [v0, v1, v2]
  t0 = q0 * v0 + q2 * v2 - q3 * v1
  t1 = q0 * v1 + q3 * v0 - q1 * v2
  t2 = q0 * v2 + q1 * v1 - q2 * v0
  return [v0 + 2 * (q2 * t2 - q3 * t1), v1 + 2 * (q3 * t0 - q1 * t2),
          v2 + 2 * (q1 * t1 - q2 * t0)]


def frameaccum(pos, quat, cpos, cquat) -> tuple[np.ndarray, np.ndarray]:
  """mjuu_frameaccum: the child frame (cpos, cquat) expressed in the parent of (pos, quat)."""
  vec = mulvecmat(cpos, quat2mat(quat))
  return (np.array([pos[0] + vec[0], pos[1] + vec[1], pos[2] + vec[2]], float),
          np.array(mulquat(quat, cquat)))


def z2quat(vec) -> np.ndarray:
  """mjuu_z2quat: the minimal rotation taking the z axis to `vec` (a unit vector)."""
  v0, v1, v2 = (float(x) for x in vec)
  axis, s = normvec([0.0 * v2 - 1.0 * v1, 1.0 * v0 - 0.0 * v2, 0.0 * v1 - 0.0 * v0])
  if s < 1e-10:
    axis = [1.0, 0.0, 0.0]
  half = math.atan2(s, v2) / 2
  return np.array([math.cos(half), axis[0] * math.sin(half), axis[1] * math.sin(half),
                   axis[2] * math.sin(half)])


def frame2quat(x, y, z) -> np.ndarray:
  """mjuu_frame2quat: quaternion of the frame with axes x, y, z (largest-component branch)."""
  m = [[float(c) for c in x], [float(c) for c in y], [float(c) for c in z]]  # m[col][row]
  q = [0.0] * 4
  if m[0][0] + m[1][1] + m[2][2] > 0:
    q[0] = 0.5 * math.sqrt(1 + m[0][0] + m[1][1] + m[2][2])
    q[1] = 0.25 * (m[1][2] - m[2][1]) / q[0]
    q[2] = 0.25 * (m[2][0] - m[0][2]) / q[0]
    q[3] = 0.25 * (m[0][1] - m[1][0]) / q[0]
  elif m[0][0] > m[1][1] and m[0][0] > m[2][2]:
    q[1] = 0.5 * math.sqrt(1 + m[0][0] - m[1][1] - m[2][2])
    q[0] = 0.25 * (m[1][2] - m[2][1]) / q[1]
    q[2] = 0.25 * (m[1][0] + m[0][1]) / q[1]
    q[3] = 0.25 * (m[2][0] + m[0][2]) / q[1]
  elif m[1][1] > m[2][2]:
    q[2] = 0.5 * math.sqrt(1 - m[0][0] + m[1][1] - m[2][2])
    q[0] = 0.25 * (m[2][0] - m[0][2]) / q[2]
    q[1] = 0.25 * (m[1][0] + m[0][1]) / q[2]
    q[3] = 0.25 * (m[2][1] + m[1][2]) / q[2]
  else:
    q[3] = 0.5 * math.sqrt(1 - m[0][0] - m[1][1] + m[2][2])
    q[0] = 0.25 * (m[0][1] - m[1][0]) / q[3]
    q[1] = 0.25 * (m[2][0] + m[0][2]) / q[3]
    q[2] = 0.25 * (m[2][1] + m[1][2]) / q[3]
  return np.array(normvec(q)[0])


def fromto(ft) -> tuple[np.ndarray, np.ndarray, float]:
  """(pos, quat, half length) of a geom or site placed by fromto, as mjCGeom::Compile: the
  z axis along from - to (the sign matters for iquat)."""
  a, b = [float(x) for x in ft[:3]], [float(x) for x in ft[3:6]]
  vec, n = normvec([a[0] - b[0], a[1] - b[1], a[2] - b[2]])
  pos = np.array([(a[0] + b[0]) / 2, (a[1] + b[1]) / 2, (a[2] + b[2]) / 2])
  return pos, z2quat(vec), n / 2


def _radians(a: float, degrees: bool) -> float:
  return a / 180.0 * math.pi if degrees else float(a)


# ---------------------------------------------------------------- plain numpy helpers
# (for compile-time values with no MuJoCo rounding to follow; the constants mj_setConst
# derives with the engine's own arithmetic are rounded as the engine does in engine0.py)


def quat_mul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  aw, ax, ay, az = a
  bw, bx, by, bz = b
  return np.array([
    aw * bw - ax * bx - ay * by - az * bz,
    aw * bx + ax * bw + ay * bz - az * by,
    aw * by - ax * bz + ay * bw + az * bx,
    aw * bz + ax * by - ay * bx + az * bw,
  ])


def normalize(v: np.ndarray) -> np.ndarray:
  n = np.linalg.norm(v)
  return v / n if n >= MINVAL else v


def normalize_quat(q: np.ndarray) -> np.ndarray:
  n = np.linalg.norm(q)
  return q / n if n >= MINVAL else np.array([1.0, 0.0, 0.0, 0.0])


def quat_to_mat(q: np.ndarray) -> np.ndarray:
  w, x, y, z = q
  return np.array([
    [w * w + x * x - y * y - z * z, 2 * (x * y - w * z), 2 * (x * z + w * y)],
    [2 * (x * y + w * z), w * w - x * x + y * y - z * z, 2 * (y * z - w * x)],
    [2 * (x * z - w * y), 2 * (y * z + w * x), w * w - x * x - y * y + z * z],
  ])


def orientation(values: dict, compiler: dict, node, normalize: bool = True) -> np.ndarray:
  """The element's orientation as a unit quaternion from whichever single form it gives,
  rounded as MuJoCo's ResolveOrientation. A quat is normalized by normvec, unless not
  `normalize`: MuJoCo normalizes the quat of a frame, site or camera only after composing it
  with its enclosing frame (see `placed`)."""
  forms = ("quat", "axisangle", "euler", "xyaxes", "zaxis")
  given = [k for k in forms if values.get(k) is not None and k in node.attrs]
  if len(given) > 1:
    raise node.error(f"orientation given more than once: {', '.join(given)}", given[1])
  if not given:  # a default class's alternative form (e.g. euler) overrides its quat
    given = [k for k in forms[1:] if values.get(k) is not None][:1]
  deg = compiler["angle"] == "degree"
  keep = unit_quat if normalize else (lambda q: np.asarray(q, float))
  if not given:
    q = values.get("quat")
    return keep(q) if q is not None else np.array([1.0, 0, 0, 0])
  form = given[0]
  v = [float(x) for x in values[form]]
  if form == "quat":
    if np.linalg.norm(v) < MINVAL:
      raise node.error("zero quaternion", "quat")
    return keep(v)
  if form == "axisangle":
    axis, n = normvec(v[:3])
    if n < MINVAL:
      raise node.error("axis of axisangle is zero", "axisangle")
    half = _radians(v[3], deg) * 0.5
    return np.array([math.cos(half), *(math.sin(half) * a for a in axis)])
  if form == "euler":
    return euler(v, compiler["eulerseq"], deg, node)
  if form == "xyaxes":
    x, n = normvec(v[:3])
    if n < MINVAL:
      raise node.error("x axis of xyaxes is zero", "xyaxes")
    d = x[0] * v[3] + x[1] * v[4] + x[2] * v[5]
    y, n = normvec([v[3] - x[0] * d, v[4] - x[1] * d, v[5] - x[2] * d])
    if n < MINVAL:
      raise node.error("xyaxes are parallel", "xyaxes")
    z = normvec([x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2],
                 x[0] * y[1] - x[1] * y[0]])[0]
    return frame2quat(x, y, z)
  z, n = normvec(v)
  if n < MINVAL:
    raise node.error("zaxis is zero", "zaxis")
  return z2quat(z)


def unit_quat(q) -> np.ndarray:
  """A written quaternion normalized as MuJoCo's compiler does (normvec)."""
  return np.array(normvec([float(x) for x in q])[0])


def euler(angles, seq: str, degrees: bool, node) -> np.ndarray:
  """Euler angles in sequence `seq`: lowercase axes rotate with the frame (intrinsic),
  uppercase stay fixed (extrinsic); each turn is multiplied in by mulquat, as MuJoCo."""
  if len(seq) != 3 or any(c.lower() not in _AXES for c in seq):
    raise MJCFError(f"invalid eulerseq {seq!r}: three of xyzXYZ", element="compiler",
                    attribute="eulerseq")
  q = [1.0, 0.0, 0.0, 0.0]
  for c, a in zip(seq, angles):
    half = _radians(a, degrees) / 2
    rot = [math.cos(half), 0.0, 0.0, 0.0]
    rot[_AXES[c.lower()] + 1] = math.sin(half)
    q = mulquat(q, rot) if c.islower() else mulquat(rot, q)
  return np.array(normvec(q)[0])


def placed(fpos, fquat, pos, quat) -> tuple[np.ndarray, np.ndarray]:
  """A frame, site or camera pose (its quat as written) in its enclosing frame, then
  normalized: mjCFrame/mjCSite/mjCCamera::Compile."""
  pos, quat = compose(fpos, fquat, pos, quat)
  return pos, unit_quat(quat)


def light(fpos, fquat, pos, direction) -> tuple[np.ndarray, np.ndarray, float]:
  """(pos, unit dir, |dir| or 0 when below mjEPS) of a light in its enclosing frame, as
  mjCLight::Compile: the frame turns the direction as written (rotVecQuat), then normvec."""
  pos = compose(fpos, fquat, pos, [1.0, 0.0, 0.0, 0.0])[0]
  if not (not np.any(fpos) and np.array_equal(fquat, [1.0, 0.0, 0.0, 0.0])):
    direction = rotquat(direction, fquat)
  d, n = normvec([float(x) for x in direction])
  return pos, np.array(d), n


def inverse(pos, quat) -> tuple[np.ndarray, np.ndarray]:
  """mjuu_frameinvert: the frame undoing (pos, quat)."""
  neg = [float(quat[0]), -float(quat[1]), -float(quat[2]), -float(quat[3])]
  return -np.array(mulvecmat(pos, quat2mat(neg))), np.array(neg)


def compose(pos_a, quat_a, pos_b, quat_b) -> tuple[np.ndarray, np.ndarray]:
  """Frame b expressed in a's parent (mjuu_frameaccum). The identity frame a (no enclosing
  <frame>, where MuJoCo composes nothing) leaves b as it is."""
  if not np.any(pos_a) and np.array_equal(quat_a, [1.0, 0.0, 0.0, 0.0]):
    return np.asarray(pos_b, float), np.asarray(quat_b, float)
  return frameaccum(pos_a, quat_a, pos_b, quat_b)
