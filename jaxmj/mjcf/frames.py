"""Host-side frame algebra: the MJCF orientation forms, fromto, and frame composition.

Quaternions are (w, x, y, z) numpy arrays; everything here runs once, at compile time.
"""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.errors import MJCFError

MINVAL = 1e-15
_AXES = {"x": 0, "y": 1, "z": 2}


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


def rot_vec(q: np.ndarray, v: np.ndarray) -> np.ndarray:
  return quat_to_mat(q) @ v


def axis_angle(axis: np.ndarray, angle: float) -> np.ndarray:
  axis = normalize(np.asarray(axis, float))
  return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * axis])


def mat_to_quat(mat: np.ndarray) -> np.ndarray:
  """Unit quaternion of a rotation matrix, largest-component branch (as mju_mat2Quat)."""
  m = mat
  tr = m[0, 0] + m[1, 1] + m[2, 2]
  if tr > 0:
    s = np.sqrt(tr + 1.0) * 2
    q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
  elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
    s = np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2
    q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
  elif m[1, 1] > m[2, 2]:
    s = np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2
    q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
  else:
    s = np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2
    q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
  return normalize_quat(np.asarray(q))


def quat_z2vec(vec: np.ndarray) -> np.ndarray:
  """Quaternion rotating the z axis onto `vec` (mju_quatZ2Vec)."""
  v = normalize(np.asarray(vec, float))
  z = np.array([0.0, 0.0, 1.0])
  axis = np.cross(z, v)
  s = np.linalg.norm(axis)
  if s < MINVAL:
    return np.array([0.0, 1.0, 0.0, 0.0]) if v[2] < 0 else np.array([1.0, 0.0, 0.0, 0.0])
  return axis_angle(axis / s, np.arctan2(s, v[2]))


def orientation(values: dict, compiler: dict, node) -> np.ndarray:
  """The element's orientation as a unit quaternion from whichever single form it gives."""
  forms = ("quat", "axisangle", "euler", "xyaxes", "zaxis")
  given = [k for k in forms if values.get(k) is not None and k in node.attrs]
  if len(given) > 1:
    raise node.error(f"orientation given more than once: {', '.join(given)}", given[1])
  if not given:  # a default class's alternative form (e.g. euler) overrides its quat
    given = [k for k in forms[1:] if values.get(k) is not None][:1]
  deg = compiler["angle"] == "degree"
  if not given:
    q = values.get("quat")
    return normalize_quat(np.asarray(q, float)) if q is not None else np.array([1.0, 0, 0, 0])
  form = given[0]
  v = np.asarray(values[form], float)
  if form == "quat":
    if np.linalg.norm(v) < MINVAL:
      raise node.error("zero quaternion", "quat")
    return normalize_quat(v)
  if form == "axisangle":
    if np.linalg.norm(v[:3]) < MINVAL:
      raise node.error("axis of axisangle is zero", "axisangle")
    return axis_angle(v[:3], np.deg2rad(v[3]) if deg else v[3])
  if form == "euler":
    return euler(v, compiler["eulerseq"], deg, node)
  if form == "xyaxes":
    x = v[:3]
    if np.linalg.norm(x) < MINVAL:
      raise node.error("x axis of xyaxes is zero", "xyaxes")
    x = normalize(x)
    y = v[3:] - x * np.dot(x, v[3:])
    if np.linalg.norm(y) < MINVAL:
      raise node.error("xyaxes are parallel", "xyaxes")
    y = normalize(y)
    z = normalize(np.cross(x, y))
    return mat_to_quat(np.stack([x, y, z], axis=1))
  if np.linalg.norm(v) < MINVAL:
    raise node.error("zaxis is zero", "zaxis")
  return quat_z2vec(v)


def euler(angles: np.ndarray, seq: str, degrees: bool, node) -> np.ndarray:
  """Euler angles in sequence `seq`: lowercase axes rotate with the frame (intrinsic),
  uppercase stay fixed (extrinsic)."""
  if len(seq) != 3 or any(c.lower() not in _AXES for c in seq):
    raise MJCFError(f"invalid eulerseq {seq!r}: three of xyzXYZ", element="compiler",
                    attribute="eulerseq")
  q = np.array([1.0, 0.0, 0.0, 0.0])
  for c, a in zip(seq, angles):
    axis = np.zeros(3)
    axis[_AXES[c.lower()]] = 1.0
    r = axis_angle(axis, np.deg2rad(a) if degrees else a)
    q = quat_mul(q, r) if c.islower() else quat_mul(r, q)
  return normalize_quat(q)


def compose(pos_a, quat_a, pos_b, quat_b) -> tuple[np.ndarray, np.ndarray]:
  """Frame b expressed in a's parent: (pos_a + R_a pos_b, quat_a * quat_b)."""
  return pos_a + rot_vec(quat_a, pos_b), normalize_quat(quat_mul(quat_a, quat_b))
