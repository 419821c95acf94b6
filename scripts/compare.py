"""Conformance report: compile MJCF (or URDF) files with jaxmj and with MuJoCo, compare every model
field both have, step both, and print a table per model.

For each file:
  compiled    "yes" if both compile; else which one failed and its message.
  fields      how many fields were compared, and how many differ beyond --atol (absolute,
              or relative to the field's largest entry when that exceeds 1).
  traj err    max |qpos_jaxmj - qpos_mujoco| over --steps steps of mj_step and jaxmj.step
              from the model's initial state (keyframe 0 with --key), zero controls; "-"
              when jaxmj cannot step the model (the reason is printed).
  ok          "yes"; "chaotic" when the trajectories part but MuJoCo is chaotic on this
              model (its own trajectory moves as far when its start is nudged by 1e-14,
              in the worst of eight directions)
              and every single jaxmj step taken from MuJoCo's state agrees within
              --traj-tol; "capped" when the trajectories part, the model caps its
              contacts as MJX does (max_contact_points, max_geom_pairs, <size
              nconmax>; MuJoCo reads none of them as a cap) and a cap binds, and the
              same model without its caps stays within --traj-tol of MuJoCo; else
              "NO". The measurements are printed below the table.
Each differing field is listed below the table with its worst error. Fields whose layout
is jaxmj's own by design (dense where MuJoCo is sparse, names, pointers) are not compared.

Run it on your own models to see what jaxmj supports; the exit status is 0 when every file
compiles in both, no field differs and every trajectory is within --traj-tol.

Usage:
  python scripts/compare.py DIR_OR_FILE [DIR_OR_FILE ...] [--steps 100] [--atol 1e-10]
      [--traj-tol 1e-6] [--key] [--float32] [--quiet]
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import os
import sys
import warnings

import numpy as np

from jaxmj.conformance import SPECIAL, float32_tol, single_step_error

# Fields compared by another route or kept in jaxmj's own layout by design.
SKIP = {
  "names",  # one buffer both ways, but MuJoCo pads it; the addresses are compared
  "opt",  # compared field by field below, as opt.<name>
  "stat",  # mjStatistic, compared field by field when jaxmj has it
}


@dataclasses.dataclass
class Report:
  path: str
  compiled: str = "yes"
  compared: int = 0
  differ: list = dataclasses.field(default_factory=list)  # (field, message)
  traj_err: float | None = None
  note: str = ""
  # measured only when traj_err exceeds the tolerance:
  mujoco_spread: float | None = None  # MuJoCo's own qpos change under a 1e-14 nudge
  step_err: float | None = None  # worst single jaxmj step from MuJoCo's state
  uncapped_err: float | None = None  # traj_err of the model without its contact caps

  def chaotic(self, traj_tol: float) -> bool:
    """The trajectories part only because MuJoCo itself amplifies round-off here."""
    return (self.traj_err is not None and self.traj_err > traj_tol
            and self.step_err is not None and self.step_err <= traj_tol
            and self.mujoco_spread is not None and self.mujoco_spread >= 0.1 * self.traj_err)

  def capped(self, traj_tol: float) -> bool:
    """The trajectories part only because a contact cap (which MuJoCo ignores) binds."""
    return (self.traj_err is not None and self.traj_err > traj_tol
            and self.uncapped_err is not None and self.uncapped_err <= traj_tol)

  def ok(self, traj_tol: float) -> bool:
    stepped = self.traj_err is not None and (
      self.traj_err <= traj_tol or self.chaotic(traj_tol) or self.capped(traj_tol))
    not_stepped = self.traj_err is None and not self.note  # --steps 0: fields only
    return self.compiled == "yes" and not self.differ and (stepped or not_stepped)

  def verdict(self, traj_tol: float) -> str:
    if not self.ok(traj_tol):
      return "NO"
    if self.capped(traj_tol):
      return "capped"
    return "chaotic" if self.chaotic(traj_tol) else "yes"


def find_files(args: list[str]) -> list[str]:
  """The .xml and .urdf files named, or found (recursively) under the directories named."""
  out = []
  for a in args:
    if os.path.isdir(a):
      out += sorted(f for ext in ("xml", "urdf")
                    for f in glob.glob(os.path.join(a, "**", f"*.{ext}"), recursive=True))
    elif os.path.exists(a):
      out.append(a)
    else:
      raise SystemExit(f"compare.py: no such file or directory: {a}")
  return out


def _close(ours: np.ndarray, ref: np.ndarray, atol: float) -> tuple[bool, float]:
  tol = float32_tol(ref, atol)
  ours, ref = ours.astype(float), ref.astype(float)
  if not ours.size:
    return True, 0.0
  both_nan = np.isnan(ours) & np.isnan(ref)
  err = np.where(both_nan, 0.0, np.abs(ours - ref))
  scale = max(1.0, float(np.nanmax(np.abs(ref))) if np.isfinite(ref).any() else 1.0)
  worst = float(np.nanmax(err)) if np.isfinite(err).all() else float("inf")
  return bool(np.all(err <= tol * scale)), worst


def compare_fields(m, mj, atol: float = 1e-10) -> tuple[int, list[tuple[str, str]]]:
  """(number of fields compared, [(field, what differs)]) over every numeric field that the
  jaxmj Model and the MjModel both have, plus the options."""
  pairs = [(f.name, getattr(m, f.name)) for f in dataclasses.fields(m) if f.name not in SKIP]
  pairs += [(f"opt.{f.name}", getattr(m.opt, f.name)) for f in dataclasses.fields(m.opt)]
  compared, differ = 0, []
  for name, ours in pairs:
    if name in SPECIAL:
      compared += 1
      err = SPECIAL[name](m, mj)
      if err:
        differ.append((name, err))
      continue
    owner, attr = (mj.opt, name[4:]) if name.startswith("opt.") else (mj, name)
    if not hasattr(owner, attr):
      continue
    ref = getattr(owner, attr)
    try:
      ours_a, ref_a = np.asarray(ours), np.asarray(ref)
    except (TypeError, ValueError):
      continue
    if ours_a.dtype.kind not in "biuf" or ref_a.dtype.kind not in "biuf":
      continue
    compared += 1
    if ours_a.size != ref_a.size:
      differ.append((name, f"shape {ours_a.shape} != {ref_a.shape}"))
      continue
    ok, worst = _close(ours_a.reshape(ref_a.shape), ref_a, atol)
    if not ok:
      differ.append((name, f"max error {worst:.3g}"))
  return compared, differ


def trajectory_error(m, mj, steps: int, key: bool) -> float:
  """max |qpos| difference over `steps` steps of both engines from the same initial state."""
  import jax
  import mujoco

  import jaxmj

  md = mujoco.MjData(mj)
  if key and mj.nkey:
    mujoco.mj_resetDataKeyframe(mj, md, 0)
    d = jaxmj.reset(m, 0)
  else:
    d = jaxmj.make_data(m)
  _, traj = jax.jit(lambda d: jaxmj.rollout(m, d, nstep=steps, fields=("qpos",)))(d)
  ours = np.asarray(traj["qpos"])
  worst = 0.0
  for t in range(steps):
    mujoco.mj_step(mj, md)
    worst = max(worst, float(np.max(np.abs(ours[t] - md.qpos), initial=0.0)))
  return worst


def uncapped(m):
  """`m` without MJX's contact caps (the custom numerics max_contact_points and
  max_geom_pairs, <size nconmax>): every candidate geom pair owns its slots, as every
  contact is kept in MuJoCo. None when `m` has no cap that binds."""
  from jaxmj.collision.plan import collision_plan
  from jaxmj.names import name2id

  if collision_plan(m)["capped"] is None:
    return None
  data = np.array(m.numeric_data, copy=True)
  for name in ("max_contact_points", "max_geom_pairs"):
    i = name2id(m, "numeric", name)
    if i >= 0:
      data[m.numeric_adr[i]] = -1
  return m.replace(numeric_data=data, nconmax=-1)


def _mujoco_start(mj, key: bool):
  import mujoco

  md = mujoco.MjData(mj)
  if key and mj.nkey:
    mujoco.mj_resetDataKeyframe(mj, md, 0)
  return md


def mujoco_spread(mj, steps: int, key: bool, nudge: float = 1e-14, tries: int = 8) -> float:
  """max |qpos| change of MuJoCo's own trajectory when every qpos and qvel entry of its
  start is moved by up to `nudge` (relative beyond 1): an alternating pattern, then
  `tries` - 1 random directions (seeded), the largest of them: the round-off MuJoCo
  itself amplifies. One direction can miss it: Playground's G1 on rough terrain moves 8.7e-4
  in 20 steps under three of six random nudges of 1e-15 and 7.6e-15 under another."""
  import mujoco

  reference = _mujoco_start(mj, key)
  ref = []
  for _ in range(steps):
    mujoco.mj_step(mj, reference)
    ref.append(reference.qpos.copy())
  rng = np.random.default_rng(0)
  worst = 0.0
  for k in range(tries):
    b = _mujoco_start(mj, key)
    signs = (np.where(np.arange(mj.nq + mj.nv) % 2, -1.0, 1.0) if k == 0
             else rng.uniform(-1.0, 1.0, mj.nq + mj.nv))
    b.qpos[:] += nudge * signs[:mj.nq] * np.maximum(1.0, np.abs(b.qpos))
    b.qvel[:] += nudge * signs[mj.nq:] * np.maximum(1.0, np.abs(b.qvel))
    for qpos in ref:
      mujoco.mj_step(mj, b)
      worst = max(worst, float(np.max(np.abs(qpos - b.qpos), initial=0.0)))
  return worst


def step_error(m, mj, steps: int, key: bool) -> float:
  """max |qpos| and |qvel| difference after one jaxmj.step taken from MuJoCo's full
  integration state, over `steps` steps of MuJoCo's trajectory."""
  import jaxmj

  d = jaxmj.reset(m, 0) if key and mj.nkey else jaxmj.make_data(m)
  return single_step_error(m, mj, _mujoco_start(mj, key), d, steps)[0]


def compare_file(path: str, steps: int, atol: float, key: bool,
                 traj_tol: float = 1e-6) -> Report:
  """Compiles `path` both ways, compares fields and trajectories."""
  import mujoco

  import jaxmj

  rep = Report(path)
  try:
    mj = mujoco.MjModel.from_xml_path(path)
  except Exception as e:  # noqa: BLE001 - any MuJoCo failure is reported, not raised
    rep.compiled = f"mujoco fails: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
    return rep
  try:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      m = jaxmj.Model.from_xml_path(path)
  except Exception as e:  # noqa: BLE001
    rep.compiled = f"jaxmj fails: {type(e).__name__}: {str(e).splitlines()[0]}"
    return rep
  rep.compared, rep.differ = compare_fields(m, mj, atol)
  if steps:
    try:
      rep.traj_err = trajectory_error(m, mj, steps, key)
      if rep.traj_err > traj_tol:
        rep.mujoco_spread = mujoco_spread(mj, steps, key)
        rep.step_err = step_error(m, mj, steps, key)
        free = uncapped(m)
        if free is not None:
          rep.uncapped_err = trajectory_error(free, mj, steps, key)
    except NotImplementedError as e:
      rep.note = str(e)
  return rep


def print_table(reports: list[Report], traj_tol: float, out=None) -> None:
  out = out or sys.stdout
  width = max([len("model")] + [len(os.path.basename(r.path)) for r in reports])
  out.write(f"{'model':<{width}}  {'compiled':<10}  {'fields':>13}  {'traj err':>9}  ok\n")
  for r in reports:
    name = os.path.basename(r.path)
    compiled = "yes" if r.compiled == "yes" else "no"
    fields = f"{len(r.differ)} of {r.compared} differ" if r.compiled == "yes" else "-"
    traj = "-" if r.traj_err is None else f"{r.traj_err:.2e}"
    out.write(f"{name:<{width}}  {compiled:<10}  {fields:>13}  {traj:>9}  "
              f"{r.verdict(traj_tol)}\n")
  for r in reports:
    lines = []
    if r.compiled != "yes":
      lines.append(r.compiled)
    lines += [f"{f}: {msg}" for f, msg in r.differ]
    if r.note:
      lines.append(f"step: {r.note}")
    if r.traj_err is not None and r.traj_err > traj_tol:
      lines.append(f"trajectory error {r.traj_err:.3g} > {traj_tol:g}")
      if r.mujoco_spread is not None:
        lines.append(f"MuJoCo alone moves {r.mujoco_spread:.3g} when its start is nudged "
                     f"by 1e-14 (the worst of 8 directions)")
      if r.step_err is not None:
        lines.append(f"worst single step from MuJoCo's state: {r.step_err:.3g}")
      if r.uncapped_err is not None:
        lines.append(f"a contact cap binds (MJX's max_contact_points / max_geom_pairs or "
                     f"<size nconmax>, which MuJoCo does not apply); without the caps "
                     f"the trajectory error is {r.uncapped_err:.3g}")
    if lines:
      out.write(f"\n{r.path}\n" + "".join(f"  {line}\n" for line in lines))


def main(argv: list[str] | None = None) -> int:
  p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  p.add_argument("paths", nargs="+",
                 help="MJCF or URDF files, or directories to search for *.xml and *.urdf")
  p.add_argument("--steps", type=int, default=100, help="steps to compare (0: fields only)")
  p.add_argument("--atol", type=float, default=1e-10, help="field tolerance")
  p.add_argument("--traj-tol", type=float, default=1e-6, help="trajectory tolerance")
  p.add_argument("--key", action="store_true", help="start from keyframe 0 when there is one")
  p.add_argument("--float32", action="store_true", help="run jaxmj in float32 (default 64)")
  p.add_argument("--quiet", action="store_true", help="print only the table")
  args = p.parse_args(argv)

  import jax

  jax.config.update("jax_enable_x64", not args.float32)
  reports = []
  for path in find_files(args.paths):
    if not args.quiet:
      print(f"comparing {path} ...", file=sys.stderr, flush=True)
    reports.append(compare_file(path, args.steps, args.atol, args.key, args.traj_tol))
  print_table(reports, args.traj_tol)
  return 0 if all(r.ok(args.traj_tol) for r in reports) else 1


if __name__ == "__main__":
  sys.exit(main())
