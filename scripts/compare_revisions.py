"""Bit-for-bit comparison of two git revisions: every bundled model rolled out at both.

    python scripts/compare_revisions.py OLD [NEW] [--steps 30] [--models NAME_OR_PATH...] [--jaxpr]
                                        [--batch B [--batch-steps 20]]

Each revision's `jaxmj` is exported (`git archive`) into a temporary directory and run in its
own subprocess, at float64 and at float32, on the same model files (this checkout's) from
the same start: make_data, a small random qvel and random controls in [-1, 1] (seeded;
the actuators clamp them to their ranges), `--steps` steps of `jaxmj.rollout`. The script
prints one row per model and dtype (the fields that differ, the first step whose state
differs, counted from 1, and the largest difference) and exits non-zero unless qpos, qvel and
act agree bit for bit at every step. NEW defaults to the working tree (uncommitted edits
included); a revision is anything `git archive` takes. Use it around refactors that must not
change results (e.g. issue 17's layout redesign).

That rollout is one world, unvmapped, compiled at `--xla_backend_optimization_level=0`: a
change can keep its bits and still change a vmapped program's (the change a3dd82b reverted:
humanoid_floor's float32 bits from a batch's second step). --batch B adds rows `batch B`: B
worlds from MuJoCo's state after 200 mj_step calls, qvel perturbed by N(0, 0.01^2) per world,
random controls in [-1, 1], `--batch-steps` calls of `jax.jit(jax.vmap(jaxmj.step))` compiled
with the default XLA flags (the program a training loop runs; its compile is the slower one).

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

SETTLE = 200  # mj_step calls before a batch starts: contacts made, the solver busy

# Run inside the exported revision: argv = out.npz, dtype, steps, batch, model files...
# batch 0: one world through jaxmj.rollout; batch B: B worlds through jit(vmap(jaxmj.step)).
CHILD = r"""
import os, sys
import numpy as np
out, dtype, steps, batch, paths = (sys.argv[1], sys.argv[2], int(sys.argv[3]),
                                   int(sys.argv[4]), sys.argv[5:])
import jax
jax.config.update("jax_enable_x64", dtype == "float64")
import jax.numpy as jnp
import jaxmj


def batch_rollout(path):
  import mujoco
  mj = mujoco.MjModel.from_xml_path(path)
  md = mujoco.MjData(mj)
  for _ in range(SETTLE):
    mujoco.mj_step(mj, md)
  mujoco.mj_forward(mj, md)
  m = jaxmj.Model.from_xml_path(path)
  d = jaxmj.make_data(m)
  cast = lambda x: jnp.asarray(x, d.qvel.dtype)
  d = d.replace(qpos=cast(md.qpos), act=cast(md.act), qacc_warmstart=cast(md.qacc_warmstart),
                time=cast(md.time))
  rng = np.random.default_rng(1)
  qvel = cast(md.qvel + 0.01 * rng.standard_normal((batch, m.nv)))
  ctrl = cast(rng.uniform(-1.0, 1.0, (steps, batch, m.nu)))
  db = jax.vmap(lambda v: d.replace(qvel=v))(qvel)
  step = jax.jit(jax.vmap(lambda m, d, u: jaxmj.step(m, d.replace(ctrl=u)), in_axes=(None, 0, 0)))
  traj = {k: [] for k in ("qpos", "qvel", "act")}
  for u in ctrl:
    db = step(m, db, u)
    for k in traj:
      traj[k].append(np.asarray(getattr(db, k)))
  return {k: np.stack(v) for k, v in traj.items()}

""".replace("SETTLE", str(SETTLE)) + r"""

result = {}
for path in paths:
  name = os.path.basename(path)
  try:
    if batch:
      for k, v in batch_rollout(path).items():
        result[f"{name}:{k}"] = v
      continue
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


def run(tree: str, dtype: str, steps: int, batch: int, models: list[str],
        out: str) -> subprocess.Popen:
  env = dict(os.environ, PYTHONPATH=tree)
  if not batch:  # the test suite's fast compile flags (tests/conftest.py)
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()
  return subprocess.Popen([sys.executable, "-c", CHILD, out, dtype, str(steps), str(batch),
                           *models], cwd=tree, env=env)


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
    note = ",".join(diff) + where(old, new, name, diff) if diff else "bit-identical"
    rows.append({"model": name, "equal": not diff, "note": note})
  return rows


def where(old: dict, new: dict, name: str, fields: list[str]) -> str:
  """' from step N, max |diff| X' over `fields` (trajectories (steps, ...), step N counted from
  1), or '' where they cannot be compared so (a shape or dtype changed, the jaxpr text)."""
  first, most = None, 0.0
  for f in fields:
    a, b = old[f"{name}:{f}"], new[f"{name}:{f}"]
    if a.shape != b.shape or a.dtype != b.dtype or a.dtype.kind != "f" or a.ndim == 0:
      return ""
    u = f"u{a.dtype.itemsize}"
    differs = (a.view(u) != b.view(u)).reshape(len(a), -1).any(axis=1)
    first = min(first or len(a), int(np.argmax(differs)) + 1)
    most = max(most, float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))))
  return f" from step {first}, max |diff| {most:.3g}"


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
  p.add_argument("--batch", type=int, default=0, metavar="B", help="also B vmapped worlds "
                 "from perturbed settled states, default XLA flags")
  p.add_argument("--batch-steps", type=int, default=20)
  args = p.parse_args()
  if args.jaxpr and args.batch:
    p.error("--jaxpr compares programs, --batch rollouts: one at a time")
  steps, fields = (0, ("jaxpr",)) if args.jaxpr else (args.steps, FIELDS)
  runs = [("", steps, 0)] + ([(f"batch {args.batch}", args.batch_steps, args.batch)]
                             if args.batch else [])
  models = [model_path(m) for m in args.models]
  failed = False
  with tempfile.TemporaryDirectory(prefix="compare_revisions_") as tmp:
    trees = {}
    for key, rev in (("old", args.old), ("new", args.new)):
      trees[key] = export(rev, os.path.join(tmp, key))
    for dtype in args.dtypes:
      for label, n, batch in runs:
        outs = {k: os.path.join(tmp, f"{k}_{dtype}_{batch}.npz") for k in trees}
        procs = {k: run(trees[k], dtype, n, batch, models, outs[k]) for k in trees}
        if any(proc.wait() for proc in procs.values()):
          print(f"{dtype} {label}: a revision's run failed", file=sys.stderr)
          return 2
        with np.load(outs["old"]) as a, np.load(outs["new"]) as b:
          rows = compare(dict(a), dict(b), models, fields)
        kind = f"{dtype} {label}".strip()
        for r in rows:
          print(f"{kind:16s} {r['model']:24s} {'OK ' if r['equal'] else 'DIFF'} {r['note']}",
                flush=True)
          failed |= not r["equal"]
        summary = {"dtype": dtype, "models": len(rows), "equal": sum(r["equal"] for r in rows)}
        if batch:
          summary.update(batch=batch, steps=n)
        print(json.dumps(summary), flush=True)
  return 1 if failed else 0


if __name__ == "__main__":
  sys.exit(main())
