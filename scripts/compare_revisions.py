"""Bit-for-bit comparison of two git revisions: every bundled model rolled out at both.

    python scripts/compare_revisions.py OLD [NEW] [--steps 30] [--models NAME_OR_PATH...] [--jaxpr]

Each revision's `jaxmj` is exported (`git archive`) into a temporary directory and run in its
own subprocess, at float64 and at float32, on the same model files (this checkout's) from
the same start: make_data, a small random qvel and random controls in [-1, 1] (seeded;
the actuators clamp them to their ranges), `--steps` steps of `jaxmj.rollout`. The script
prints one row per model and dtype and exits non-zero unless qpos, qvel and act agree bit
for bit at every step. NEW defaults to the working tree (uncommitted edits included); a
revision is anything `git archive` takes. Use it around refactors that must not change
results (e.g. issue 17's layout redesign).

--jaxpr compares the traced programs instead: the text of `jax.make_jaxpr(jaxmj.step)` on
each model's make_data, no compile (seconds a model, where a rollout's compile takes
minutes). Equal programs give equal bits; a difference says only that the program changed
(an operation added, moved or renamed), for the rollouts to decide.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIELDS = ("qpos", "qvel", "act")

# Run inside the exported revision: argv = out.npz, dtype, steps, model files...
CHILD = r"""
import os, sys
import numpy as np
out, dtype, steps, paths = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
import jax
jax.config.update("jax_enable_x64", dtype == "float64")
import jax.numpy as jnp
import jaxmj

result = {}
for path in paths:
  name = os.path.basename(path)
  try:
    m = jaxmj.Model.from_xml_path(path)
    rng = np.random.default_rng(0)
    d = jaxmj.make_data(m)
    d = d.replace(qvel=jnp.asarray(0.1 * rng.standard_normal(m.nv), d.qvel.dtype))
    ctrl = jnp.asarray(rng.uniform(-1.0, 1.0, (steps, m.nu)), d.qvel.dtype)
    if steps == 0:  # --jaxpr: the traced step, as text
      result[f"{name}:jaxpr"] = np.array(str(jax.make_jaxpr(jaxmj.step)(m, d)))
      continue
    _, traj = jax.jit(jaxmj.rollout)(m, d, ctrl)
    for k in ("qpos", "qvel", "act"):
      result[f"{name}:{k}"] = np.asarray(traj[k])
  except Exception as e:  # reported, compared as a failure unless both revisions fail alike
    result[f"{name}:error"] = np.array(f"{type(e).__name__}: {e}"[:300])
  jax.clear_caches()
np.savez(out, **result)
"""


def export(rev: str, into: str) -> str:
  """The package at `rev` (or the working tree for None) as `into`/jaxmj; returns `into`."""
  os.makedirs(into, exist_ok=True)
  if rev is None:
    files = subprocess.run(["git", "-C", ROOT, "ls-files", "-co", "--exclude-standard",
                            "jaxmj"], check=True, capture_output=True, text=True).stdout.split()
    for f in files:
      dst = os.path.join(into, f)
      os.makedirs(os.path.dirname(dst), exist_ok=True)
      if os.path.exists(os.path.join(ROOT, f)):
        with open(os.path.join(ROOT, f), "rb") as src, open(dst, "wb") as out:
          out.write(src.read())
    return into
  archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "jaxmj"], check=True,
                           capture_output=True).stdout
  subprocess.run(["tar", "-x", "-C", into], input=archive, check=True)
  return into


def run(tree: str, dtype: str, steps: int, models: list[str], out: str) -> subprocess.Popen:
  env = dict(os.environ, PYTHONPATH=tree)
  # the test suite's fast compile flags (tests/conftest.py): both revisions compile alike
  env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()
  return subprocess.Popen([sys.executable, "-c", CHILD, out, dtype, str(steps), *models],
                          cwd=tree, env=env)


def bits_equal(a: np.ndarray, b: np.ndarray) -> bool:
  if a.shape != b.shape or a.dtype != b.dtype:
    return False
  if a.dtype.kind == "f":
    return np.array_equal(a.view(f"u{a.dtype.itemsize}"), b.view(f"u{b.dtype.itemsize}"))
  return np.array_equal(a, b)


def compare(old: dict, new: dict, models: list[str], fields=FIELDS) -> list[dict]:
  rows = []
  for path in models:
    name = os.path.basename(path)
    err_old, err_new = old.get(f"{name}:error"), new.get(f"{name}:error")
    if err_old is not None or err_new is not None:
      same = err_old is not None and err_new is not None and str(err_old) == str(err_new)
      rows.append({"model": name, "equal": same, "note": str(err_new or err_old)[:80]})
      continue
    diff = [f for f in fields if not bits_equal(old[f"{name}:{f}"], new[f"{name}:{f}"])]
    rows.append({"model": name, "equal": not diff, "note": ",".join(diff) or "bit-identical"})
  return rows


def model_path(arg: str) -> str:
  """A model file's absolute path: `arg` itself, or a bundled model named by its stem
  (`humanoid_floor` -> models/humanoid_floor.xml). A name that is neither stops the run: both
  revisions failing to read a file would otherwise compare as equal."""
  for path in (arg, os.path.join(ROOT, "models", arg), os.path.join(ROOT, "models", arg + ".xml")):
    if os.path.isfile(path):
      return os.path.abspath(path)
  sys.exit(f"compare_revisions: no model file {arg!r} (nor models/{arg}.xml)")


def main() -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("old")
  p.add_argument("new", nargs="?", default=None, help="default: the working tree")
  p.add_argument("--steps", type=int, default=30)
  p.add_argument("--models", nargs="+", default=sorted(glob.glob(os.path.join(ROOT, "models",
                                                                               "*.xml"))))
  p.add_argument("--dtypes", nargs="+", default=["float64", "float32"])
  p.add_argument("--jaxpr", action="store_true", help="compare traced programs, not rollouts")
  args = p.parse_args()
  steps, fields = (0, ("jaxpr",)) if args.jaxpr else (args.steps, FIELDS)
  models = [model_path(m) for m in args.models]
  failed = False
  with tempfile.TemporaryDirectory(prefix="compare_revisions_") as tmp:
    trees = {}
    for key, rev in (("old", args.old), ("new", args.new)):
      trees[key] = export(rev, os.path.join(tmp, key))
    for dtype in args.dtypes:
      outs = {k: os.path.join(tmp, f"{k}_{dtype}.npz") for k in trees}
      procs = {k: run(trees[k], dtype, steps, models, outs[k]) for k in trees}
      if any(proc.wait() for proc in procs.values()):
        print(f"{dtype}: a revision's run failed", file=sys.stderr)
        return 2
      with np.load(outs["old"]) as a, np.load(outs["new"]) as b:
        rows = compare(dict(a), dict(b), models, fields)
      for r in rows:
        print(f"{dtype:8s} {r['model']:24s} {'OK ' if r['equal'] else 'DIFF'} {r['note']}")
        failed |= not r["equal"]
      summary = {"dtype": dtype, "models": len(rows), "equal": sum(r["equal"] for r in rows)}
      print(json.dumps(summary))
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
