"""Bitwise survey of jaxmj's compiler against MuJoCo's: for every model in models/ and every MJCF
file in the installed mujoco's mjx/test_data and testdata (the set tests/mjcf/test_compile.py
compiles), each real Model field (and mjModel.stat) is compared entry by entry; per field, the
entries that are not bit-equal and the largest distance in units in the last place are printed.

  python scripts/compile_bits.py [field,field,...]

A distance across zero (e.g. 1e-17 against -1e-17) counts every double in between, so huge
ulp numbers with tiny values mean a sign flip of a near-zero entry.
"""

import glob
import os
import sys
import tempfile
import warnings
from collections import defaultdict

import jax
import mujoco
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
jax.config.update("jax_enable_x64", True)

from mujoco_compare import JAXMJ_ONLY, PREFIXES  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.conformance import SPECIAL  # noqa: E402


def _paths() -> list[str]:
  mj_dir = os.path.dirname(mujoco.__file__)
  paths = sorted(glob.glob(os.path.join(ROOT, "models", "*.xml")))
  return paths + sorted(p for folder in ("mjx/test_data", "testdata")
                        for p in glob.glob(os.path.join(mj_dir, folder, "**", "*.xml"),
                                           recursive=True))


def _ordered(x: np.ndarray) -> np.ndarray:
  """Integers in the order of the floats (adjacent floats differ by 1)."""
  if x.dtype == np.float32:
    i = x.view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7fffffff), i)
  i = x.astype(np.float64).view(np.int64)
  return np.where(i < 0, -(i & 0x7fffffffffffffff), i)


def survey(fields=None) -> dict:
  """{field: [entries, unequal, max ulp, max |diff|, models with a difference]}"""
  out = defaultdict(lambda: [0, 0, 0, 0.0, 0])
  for path in _paths():
    try:
      mj = mujoco.MjModel.from_xml_path(path)
      with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = jaxmj.Model.from_xml_path(path)
    except Exception:  # noqa: BLE001 - rejected by either compiler: not surveyed
      continue
    names = [f for f in type(m)._static_names + type(m)._leaf_names
             if f.startswith(PREFIXES) and f not in JAXMJ_ONLY] + ["qpos0", "qpos_spring"]
    pairs = [(name, getattr(m, name), getattr(mj, name, None)) for name in names]
    pairs += [(f"stat.{k}", getattr(m.stat, k), getattr(mj.stat, k))  # mjModel.stat
              for k in ("meaninertia", "meanmass", "meansize", "extent", "center")]
    for name, ours, ref in pairs:
      if (fields and name not in fields) or name in SPECIAL or ref is None:
        continue
      ref = np.asarray(ref)
      ours = np.asarray(ours)
      if ref.dtype.kind != "f" or not ref.size or ours.size != ref.size:
        continue
      ours = ours.reshape(ref.shape).astype(ref.dtype)
      ulp = np.abs(_ordered(ours) - _ordered(ref))
      row = out[name]
      row[0] += ref.size
      row[1] += int((ulp > 0).sum())
      row[2] = max(row[2], int(ulp.max()))
      row[3] = max(row[3], float(np.abs(ours.astype(float) - ref.astype(float)).max()))
      row[4] += bool((ulp > 0).any())
  return out


def main() -> None:
  fields = sys.argv[1].split(",") if len(sys.argv) > 1 else None
  os.chdir(tempfile.mkdtemp())  # mujoco may write MUJOCO_LOG.TXT
  rows = survey(fields)
  print(f"{'field':22s} {'entries':>8s} {'unequal':>8s} {'max ulp':>20s} {'max diff':>9s} models")
  for name, (n, bad, ulp, diff, models) in sorted(rows.items()):
    if bad:
      print(f"{name:22s} {n:8d} {bad:8d} {ulp:20d} {diff:9.2g} {models}")
  total, bad = sum(r[0] for r in rows.values()), sum(r[1] for r in rows.values())
  print(f"{bad} of {total} entries not bit-equal")


if __name__ == "__main__":
  main()
