"""Steps models with `jax.jit(jaxmj.step)` and prints a digest of each final state, so that
tests can run it in fresh processes (under different PYTHONHASHSEED values, with or without
`jax.clear_caches()`, in different model orders) and require the same bits every time.

    python tests/determinism_probe.py [--clear] [--nstep N] [--mujoco] MODEL [MODEL ...]

MODEL: an MJCF path, or `bundled:REL` for a file of the installed mujoco package (REL
relative to its folder; stepped as its supported subset when jaxmj lacks a feature, as
tests/collision/test_bundled_contacts.py does). Models are compiled and stepped in the
order given, all in this one process, so a model listed last is traced after the others.
Controls: 0.5 sin(3t + i) for actuator i, scaled into ctrlrange where it is limited.

Prints one line per model: `MODEL DIGEST MAXERR` (sha256 of qpos, qvel and act after N
steps; MAXERR: with --mujoco, the largest |qpos - mj_step's qpos| over the steps, else -),
or `MODEL SKIP REASON` when jaxmj (or mujoco) refuses the model.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import warnings

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import jaxmj  # noqa: E402
from jaxmj.dynamics.forward import check_supported  # noqa: E402


def controls(lo: np.ndarray, hi: np.ndarray, limited: np.ndarray, t: float) -> np.ndarray:
  """0.5 sin(3t + i) per actuator, mapped into [lo, hi] where the control is limited."""
  u = 0.5 * np.sin(3.0 * t + np.arange(len(lo)))
  return np.where(limited, lo + (u + 1.0) * 0.5 * (hi - lo), u)


def load(spec: str):
  """(jaxmj Model, MJCF text or path for mujoco) of a MODEL argument (see module doc)."""
  if not spec.startswith("bundled:"):
    m = jaxmj.Model.from_xml_path(spec)
    check_supported(m)
    return m, ("path", spec)
  import mujoco

  sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "mjcf"))
  from test_compile import _supported_subset

  path = os.path.join(os.path.dirname(mujoco.__file__), spec[len("bundled:"):])
  try:
    m = jaxmj.Model.from_xml_path(path)
    check_supported(m)
    return m, ("path", path)
  except (jaxmj.MJCFError, NotImplementedError):
    xml = _supported_subset(path)
    return jaxmj.Model.from_xml_string(xml), ("xml", xml)


def run(spec: str, nstep: int, step, with_mujoco: bool) -> str:
  try:
    m, source = load(spec)
  except (jaxmj.MJCFError, NotImplementedError, ValueError) as e:
    return f"SKIP {type(e).__name__}: {str(e).splitlines()[0][:80]}"
  md = None
  if with_mujoco:
    import mujoco

    kind, text = source
    try:
      mm = (mujoco.MjModel.from_xml_path(text) if kind == "path"
            else mujoco.MjModel.from_xml_string(text))
    except ValueError as e:
      return f"SKIP mujoco: {str(e).splitlines()[0][:80]}"
    md = mujoco.MjData(mm)
  lo, hi = np.asarray(m.actuator_ctrlrange, float).reshape(-1, 2).T
  limited = np.asarray(m.actuator_ctrllimited, bool)
  d = jaxmj.make_data(m)
  err = 0.0
  for k in range(nstep):
    ctrl = controls(lo, hi, limited, k * float(m.opt.timestep))
    d = step(m, d.replace(ctrl=jax.numpy.asarray(ctrl, d.qpos.dtype)))
    if md is not None:
      md.ctrl[:] = ctrl
      mujoco.mj_step(mm, md)
      err = max(err, float(np.max(np.abs(np.asarray(d.qpos) - md.qpos), initial=0.0)))
  digest = hashlib.sha256()
  for x in (d.qpos, d.qvel, d.act):
    digest.update(np.ascontiguousarray(np.asarray(x)).tobytes())
  tail = f"{err:.3e}" if md is not None else "-"
  return f"{digest.hexdigest()[:20]} {tail}"


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("models", nargs="+")
  parser.add_argument("--nstep", type=int, default=10)
  parser.add_argument("--clear", action="store_true", help="jax.clear_caches() first")
  parser.add_argument("--mujoco", action="store_true", help="also step mj_step beside")
  args = parser.parse_args(argv)
  if args.clear:
    jax.clear_caches()
  step = jax.jit(jaxmj.step)
  for spec in args.models:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore", UserWarning)  # visual-only approximations
      print(spec, run(spec, args.nstep, step, args.mujoco), flush=True)
  return 0


if __name__ == "__main__":
  sys.exit(main())
