"""Field comparisons with MuJoCo that need more than elementwise equality.

Shared by `scripts/compare.py` (the conformance report users run) and the tests. Each
function takes a jaxmj `Model` and a `mujoco.MjModel` compiled from the same file and
returns None when they agree, else a short description; nothing here imports mujoco.
"""

from __future__ import annotations

import numpy as np


def cam_fovy_difference(m, mj) -> str | None:
  """A camera with a sensor size gets its fovy from float32 intrinsics: equal to float32
  precision (MuJoCo's own rounding differs between focal and focalpixel)."""
  ours, ref = np.asarray(m.cam_fovy, float), mj.cam_fovy
  tol = np.where(np.all(mj.cam_sensorsize > 0, axis=1), 1e-6 * np.abs(ref), 1e-10)
  if ours.shape != ref.shape or np.any(np.abs(ours - ref) > tol):
    return f"differs: {ours} != {ref}"
  return None


# Fields compared by a function of (jaxmj Model, MjModel) -> error text or None.
SPECIAL = {"cam_fovy": cam_fovy_difference}


def float32_tol(ref: np.ndarray, atol: float) -> np.ndarray:
  """MuJoCo's float32 fields: rounding of the double value may differ by an ulp."""
  if ref.dtype == np.float32:
    return np.maximum(atol, 2.5e-7 * np.maximum(1.0, np.abs(ref.astype(float))))
  return np.asarray(atol)
