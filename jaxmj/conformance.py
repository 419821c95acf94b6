"""Field comparisons with MuJoCo that need more than elementwise equality.

Shared by `scripts/compare.py` (the conformance report users run) and the tests. Each
function takes a jaxmj `Model` and a `mujoco.MjModel` compiled from the same file and
returns None when they agree, else a short description. `single_step_error` steps both
engines; it imports mujoco (a test-only dependency) when called, never on import.
"""

from __future__ import annotations

import numpy as np

from jaxmj.dynamics.forward import step
from jaxmj.state import State, set_state, state_size


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


def single_step_error(m, mj, md, d, nstep: int):
  """Steps MuJoCo's MjData `md` `nstep` times in place and, before each step, jaxmj once
  from md's full integration state (mjSTATE_INTEGRATION): (max |qpos| and |qvel|
  difference after a single step, jaxmj's last Data). `d` is any jaxmj Data of the model;
  only its fields outside the state are kept. For models where MuJoCo itself is chaotic,
  this is the measure that can still agree."""
  import jax
  import mujoco


  sig = int(State.INTEGRATION)
  size = mujoco.mj_stateSize(mj, sig)
  if size != state_size(m, sig):
    raise NotImplementedError(f"state sizes differ: MuJoCo {size}, jaxmj "
                              f"{state_size(m, sig)}")
  one = jax.jit(lambda d, s: step(m, set_state(m, d, s, sig)),
                compiler_options={"xla_backend_optimization_level": 0})
  state, worst = np.empty(size), 0.0
  for _ in range(nstep):
    mujoco.mj_getState(mj, md, state, sig)
    d = one(d, state.astype(d.qpos.dtype))
    mujoco.mj_step(mj, md)
    worst = max(worst, float(np.max(np.abs(np.asarray(d.qpos) - md.qpos), initial=0.0)),
                float(np.max(np.abs(np.asarray(d.qvel) - md.qvel), initial=0.0)))
  return worst, d
