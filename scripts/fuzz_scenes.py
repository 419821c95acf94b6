"""Random small MJCF scenes stepped by jaxmj and by MuJoCo, compared step by step (float64).

Each scene mixes geom types (plane, sphere, capsule, ellipsoid, cylinder, box, a small inline
mesh), joints (free, ball, hinge, slide) with limits, damping, armature, friction loss and
springs, equality constraints (connect, weld, joint), fixed and spatial tendons with limits,
motor / position / velocity actuators under random controls, and random options (solver,
cone, iterations down to 1, line search iterations, integrator, impratio, noslip, condim,
margin / gap, solref incl. negative (direct stiffness, damping), solimp).

The comparison is teacher-forced: before every step jaxmj gets MuJoCo's state (qpos, qvel,
act, qacc_warmstart, ctrl, time), both take one step, and qpos / qvel must agree within
`tol` * max(1, |MuJoCo's value|). A step beyond that is a mismatch; it is then checked for
chaos: MuJoCo steps the same state nudged by 1e-12 a few times, and when its own result
moves by at least the error, the disagreement is within MuJoCo's sensitivity (ties,
discontinuities) and not counted as a bug. Otherwise the scene is reported with the step,
the forces that differ (smooth or constraint) and both contact lists.

Usage:
  python scripts/fuzz_scenes.py [--seeds 0:50] [--steps 30] [--tol 1e-8] [--show]
  python scripts/fuzz_scenes.py --seed 7 --xml        # print scene 7's XML
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import numpy as np

if __name__ == "__main__" and not os.environ.get("JAXMJ_FUZZ_XLA_OPT"):
  # Compiling dominates: one jit per scene (tests/conftest.py explains the flags).
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                             + " --xla_backend_optimization_level=0"
                             + " --xla_cpu_use_fusion_emitters=false").strip()

import jax  # noqa: E402
import mujoco  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.mjcf.errors import MJCFError  # noqa: E402

jax.config.update("jax_enable_x64", True)

GEOMS = ("sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh")
MESH = ("-.05 -.04 -.03  .05 -.04 -.03  .05 .04 -.03  -.05 .04 -.03  "
        "-.04 -.03 .04  .04 -.03 .04  .04 .03 .04  -.04 .03 .04")


def _f(*x) -> str:
  return " ".join(f"{v:.4g}" for v in x)


def _unit(rng) -> np.ndarray:
  v = rng.normal(size=3)
  return v / np.linalg.norm(v)


@dataclasses.dataclass
class _Scene:
  rng: np.random.Generator  # structure: types, counts, which attributes
  v: np.random.Generator  # values: sizes, poses, gains, solver parameters
  bodies: list = dataclasses.field(default_factory=list)  # body names
  scalar_joints: list = dataclasses.field(default_factory=list)  # (name, type)
  sites: list = dataclasses.field(default_factory=list)
  nbody: int = 0
  ngeom: int = 0
  njnt: int = 0


def _geom(s: _Scene, ind: str, types=GEOMS) -> str:
  r, v = s.rng, s.v
  t = str(r.choice(types))
  size = {"sphere": _f(v.uniform(.03, .1)),
          "capsule": _f(v.uniform(.02, .06), v.uniform(.03, .1)),
          "ellipsoid": _f(*v.uniform(.03, .1, 3)),
          "cylinder": _f(v.uniform(.03, .08), v.uniform(.02, .08)),
          "box": _f(*v.uniform(.03, .1, 3)),
          "mesh": ""}[t]
  a = [f'type="{t}"', f'size="{size}"' if size else 'mesh="hull"']
  if r.random() < .5:
    a.append(f'pos="{_f(*v.uniform(-.05, .05, 3))}"')
  if r.random() < .5:
    a.append(f'quat="{_f(*v.normal(size=4))}"')
  if r.random() < .6:
    a.append(f'condim="{r.choice([1, 3, 4, 6])}"')
  if r.random() < .3:
    a.append(f'friction="{_f(v.uniform(.1, 1.5), v.uniform(0, .05), v.uniform(0, .01))}"')
  if r.random() < .2:
    margin = v.uniform(.001, .03)
    a.append(f'margin="{margin:.4g}" gap="{v.uniform(0, margin):.4g}"')
  if r.random() < .25:
    a.append(f'solref="{_f(*v.choice([(.01, 1), (.005, .5), (-2000, -20), (-500, -5)]))}"')
  if r.random() < .2:
    lo = v.uniform(.5, .95)
    a.append(f'solimp="{_f(lo, v.uniform(lo, .999), v.uniform(.0005, .01))}"')
  if r.random() < .3:
    a.append(f'density="{v.uniform(200, 3000):.4g}"')
  s.ngeom += 1
  return f'{ind}<geom {" ".join(a)}/>\n'


def _joint(s: _Scene, ind: str, kind: str) -> str:
  r, v = s.rng, s.v
  s.njnt += 1
  name = f"j{s.njnt}"
  a = [f'name="{name}"', f'type="{kind}"']
  if kind in ("hinge", "slide"):
    a.append(f'axis="{_f(*_unit(v))}"')
    if r.random() < .3:
      a.append(f'pos="{_f(*v.uniform(-.05, .05, 3))}"')
    if r.random() < .5:
      lo, hi = (-v.uniform(.05, 1.5), v.uniform(.05, 1.5))
      if kind == "slide":
        lo, hi = lo / 5, hi / 5
      a.append(f'limited="true" range="{_f(lo, hi)}"')
      if r.random() < .3:
        a.append(f'margin="{v.uniform(0, .05):.4g}"')
      if r.random() < .3:
        a.append(f'solreflimit="{_f(*v.choice([(.01, 1), (-3000, -30)]))}"')
    s.scalar_joints.append((name, kind))
  elif kind == "ball" and r.random() < .4:
    a.append(f'limited="true" range="0 {v.uniform(.2, 1.2):.4g}"')
  if kind != "free":
    if r.random() < .3:
      a.append(f'damping="{v.uniform(0, .5):.4g}"')
    if r.random() < .3:
      a.append(f'armature="{v.uniform(0, .05):.4g}"')
    if r.random() < .3:
      a.append(f'frictionloss="{v.uniform(0, .3):.4g}"')
    if r.random() < .25:
      a.append(f'stiffness="{v.uniform(0, 3):.4g}"')
      if kind in ("hinge", "slide"):
        a.append(f'springref="{v.uniform(-.5, .5):.4g}"')
  elif r.random() < .2:
    a.append(f'damping="{v.uniform(0, .1):.4g}"')
  return f'{ind}<joint {" ".join(a)}/>\n'


def _body(s: _Scene, ind: str, depth: int, pos) -> str:
  r, v = s.rng, s.v
  s.nbody += 1
  name = f"b{s.nbody}"
  s.bodies.append(name)
  out = f'{ind}<body name="{name}" pos="{_f(*pos)}">\n'
  i2 = ind + "  "
  if depth == 0 and r.random() < .45:
    out += _joint(s, i2, "free")
  else:
    n = r.choice([1, 1, 1, 2])
    for i in range(n):  # MuJoCo refuses a ball joint followed by another joint
      out += _joint(s, i2, str(r.choice(["hinge", "hinge", "slide", "ball"][:3 + (i == n - 1)])))
  for _ in range(r.choice([1, 1, 2])):
    out += _geom(s, i2)
  if r.random() < .4:
    site = f"s{len(s.sites)}"
    s.sites.append(site)
    out += f'{i2}<site name="{site}" pos="{_f(*v.uniform(-.05, .05, 3))}"/>\n'
  if depth < 2 and r.random() < .35:
    out += _body(s, i2, depth + 1, v.uniform(-.15, .15, 3))
  return out + f"{ind}</body>\n"


def _option(r, v) -> str:
  a = [f'timestep="{v.choice([.002, .005, .01])}"',
       f'solver="{r.choice(["Newton", "CG", "PGS"])}"',
       f'cone="{r.choice(["pyramidal", "elliptic"])}"',
       f'iterations="{r.choice([1, 2, 3, 5, 20, 100])}"',
       f'ls_iterations="{r.choice([1, 3, 10, 50])}"',
       f'integrator="{r.choice(["Euler", "implicit", "implicitfast", "RK4"])}"']
  if r.random() < .3:
    a.append(f'impratio="{v.choice([2, 5, 10])}"')
  if r.random() < .2:
    a.append(f'noslip_iterations="{r.choice([1, 3, 10])}"')
  if r.random() < .2:
    a.append('tolerance="0"')
  return f'  <option {" ".join(a)}/>\n'


def _equality(s: _Scene) -> str:
  r, v, out = s.rng, s.v, ""
  for _ in range(r.choice([0, 0, 1, 2])):
    kind = r.choice(["connect", "weld", "joint"])
    ref = ""
    if r.random() < .3:
      ref = f' solref="{_f(*v.choice([(.02, 1), (-1000, -10)]))}"'
    if kind == "joint" and len(s.scalar_joints) >= 1:
      js = r.choice(len(s.scalar_joints), size=min(2, len(s.scalar_joints)), replace=False)
      j2 = f' joint2="{s.scalar_joints[js[1]][0]}"' if len(js) == 2 and r.random() < .7 else ""
      poly = _f(v.uniform(-.1, .1), v.uniform(-1, 1), v.uniform(-.2, .2), 0, 0)
      out += f'    <joint joint1="{s.scalar_joints[js[0]][0]}"{j2} polycoef="{poly}"{ref}/>\n'
    elif kind in ("connect", "weld"):
      b1 = r.choice(s.bodies)
      b2 = r.choice(["world"] + [b for b in s.bodies if b != b1])
      if kind == "connect":
        out += (f'    <connect body1="{b1}" body2="{b2}" '
                f'anchor="{_f(*v.uniform(-.05, .05, 3))}"{ref}/>\n')
      else:
        out += f'    <weld body1="{b1}" body2="{b2}"{ref}/>\n'
  return f"  <equality>\n{out}  </equality>\n" if out else ""


def _tendon(s: _Scene) -> str:
  r, v, out = s.rng, s.v, ""
  if s.scalar_joints and r.random() < .35:
    js = r.choice(len(s.scalar_joints), size=min(2, len(s.scalar_joints)), replace=False)
    lim = ""
    if r.random() < .7:
      lim = f' limited="true" range="{_f(-v.uniform(.05, .8), v.uniform(.05, .8))}"'
    extra = f' damping="{v.uniform(0, .3):.3g}"' if r.random() < .3 else ""
    out += f'    <fixed name="tf"{lim}{extra}>\n'
    for j in js:
      out += f'      <joint joint="{s.scalar_joints[j][0]}" coef="{v.uniform(-1.5, 1.5):.3g}"/>\n'
    out += "    </fixed>\n"
  if len(s.sites) >= 1 and r.random() < .4:
    a = r.choice(s.sites)
    b = r.choice([x for x in s.sites if x != a] + ["s_world"])
    lim = ""
    if r.random() < .7:
      lim = f' limited="true" range="0 {v.uniform(.1, .6):.3g}"'
    extra = f' stiffness="{v.uniform(0, 5):.3g}"' if r.random() < .3 else ""
    out += (f'    <spatial name="ts"{lim}{extra}>\n      <site site="{a}"/>\n'
            f'      <site site="{b}"/>\n    </spatial>\n')
  return f"  <tendon>\n{out}  </tendon>\n" if out else ""


def _actuator(s: _Scene) -> str:
  r, v, out = s.rng, s.v, ""
  for name, _ in s.scalar_joints:
    if r.random() > .4:
      continue
    kind = r.choice(["motor", "position", "velocity"])
    rng = ' ctrlrange="-1 1" ctrllimited="true"' if r.random() < .5 else ""
    gain = {"motor": f'gear="{v.uniform(.1, 2):.3g}"',
            "position": f'kp="{v.uniform(1, 20):.3g}"',
            "velocity": f'kv="{v.uniform(.1, 2):.3g}"'}[kind]
    out += f'    <{kind} joint="{name}" {gain}{rng}/>\n'
  return f"  <actuator>\n{out}  </actuator>\n" if out else ""


def random_scene(seed: int, variant: int = 0) -> str:
  """A small random MJCF scene: its structure (types, counts, options that jaxmj compiles
  into the program) from `seed`, its numbers from (`seed`, `variant`), so the variants of
  a seed share one compiled step."""
  r, v = np.random.default_rng(seed), np.random.default_rng([seed, variant])
  s = _Scene(r, v)
  body = ""
  for _ in range(r.choice([1, 2, 2, 3])):
    body += _body(s, "    ", 0, (v.uniform(-.2, .2), v.uniform(-.2, .2), v.uniform(.05, .3)))
  world = ""
  if r.random() < .85:
    world += '    <geom name="floor" type="plane" size="1 1 .1"'
    if r.random() < .3:
      world += f' condim="{r.choice([1, 3, 4, 6])}"'
    world += "/>\n"
  if r.random() < .25:
    world += f'    <geom type="box" size=".1 .1 .05" pos="{_f(v.uniform(-.2, .2), 0, .05)}"/>\n'
  world += '    <site name="s_world" pos="0 0 .5"/>\n'
  return ('<mujoco>\n  <compiler angle="radian"/>\n' + _option(r, v)
          + f'  <asset>\n    <mesh name="hull" vertex="{MESH}"/>\n  </asset>\n'
          + f"  <worldbody>\n{world}{body}  </worldbody>\n"
          + _equality(s) + _tendon(s) + _actuator(s) + "</mujoco>\n")


def box_hinge_scene(seed: int, variant: int = 0) -> str:
  """The reported lead's family: a box on a limited hinge and a free box under CG with 1-3
  iterations, falling onto a plane (structure from `seed`, numbers from the variant)."""
  r, v = np.random.default_rng(seed), np.random.default_rng([seed, variant])
  lo, hi = -v.uniform(.05, .8), v.uniform(.05, .8)
  return f"""<mujoco>
  <compiler angle="radian"/>
  <option solver="CG" iterations="{r.choice([1, 2, 3])}" ls_iterations="{r.choice([3, 10, 50])}"
          cone="{r.choice(["pyramidal", "elliptic"])}"/>
  <worldbody>
    <geom type="plane" size="1 1 .1"/>
    <body pos="0 0 {v.uniform(.1, .25):.3g}">
      <joint name="h" type="hinge" axis="{_f(*_unit(v))}" limited="true" range="{_f(lo, hi)}"
             damping="{v.uniform(0, .2):.3g}"/>
      <geom type="box" size="{_f(*v.uniform(.03, .1, 3))}" pos="{_f(*v.uniform(-.1, .1, 3))}"/>
    </body>
    <body pos="{_f(v.uniform(-.3, .3), v.uniform(-.3, .3), v.uniform(.05, .2))}">
      <freejoint/>
      <geom type="box" size="{_f(*v.uniform(.03, .08, 3))}"/>
    </body>
  </worldbody>
</mujoco>
"""


FAMILIES = {"random": random_scene, "boxhinge": box_hinge_scene}


# ---- comparison ----

FIELDS = ("qpos", "qvel", "act", "qacc_warmstart", "ctrl")


@dataclasses.dataclass
class Result:
  seed: int
  # ok | mismatch | chaos | diverged (MuJoCo's qacc blew up) | mj-reject (both refuse the
  # XML) | jaxmj-accepts (only MuJoCo refuses) | jaxmj-reject | jaxmj-error (step raised)
  status: str
  steps: int = 0  # steps compared
  step: int = -1  # first step beyond tol
  err: float = 0.0  # worst relative error seen (at `step` for a mismatch)
  nudge: float = 0.0  # MuJoCo's own change under 1e-12 nudges at `step`
  detail: str = ""
  compile_s: float = 0.0


def _get(dm) -> dict:
  return {k: getattr(dm, k).copy() for k in FIELDS} | {"time": dm.time}


def _put(dm, st: dict) -> None:
  for k in FIELDS:
    getattr(dm, k)[:] = st[k]
  dm.time = st["time"]


def _err(ours, ref) -> float:
  ours, ref = np.asarray(ours), np.asarray(ref)
  if not ref.size:
    return 0.0
  return float(np.max(np.abs(ours - ref) / np.maximum(1.0, np.abs(ref))))


def _nudge_spread(mj, st: dict, ref: dict, rng, n: int = 4) -> float:
  """How far MuJoCo's own step moves when its state is nudged by 1e-12."""
  dm = mujoco.MjData(mj)
  worst = 0.0
  for _ in range(n):
    _put(dm, st)
    dm.qpos[:] += 1e-12 * rng.normal(size=mj.nq)
    dm.qvel[:] += 1e-12 * rng.normal(size=mj.nv)
    mujoco.mj_step(mj, dm)
    worst = max(worst, _err(dm.qpos, ref["qpos"]), _err(dm.qvel, ref["qvel"]))
  return worst


def contact_report(mj, dm, d) -> str:
  """MuJoCo's contacts (after mj_forward) and jaxmj's active slots."""
  lines = [f"  mujoco ncon={dm.ncon} nefc={dm.nefc}"]
  for c in dm.contact[:dm.ncon]:
    lines.append(f"    g{c.geom[0]}-g{c.geom[1]} dim={c.dim} dist={c.dist:.6g} "
                 f"pos={np.round(c.pos, 5)} efc={c.efc_address}")
  act = np.asarray(d.contact.active)
  dist, pos = np.asarray(d.contact.dist), np.asarray(d.contact.pos)
  lines.append(f"  jaxmj active={int(act.sum())}")
  for i in np.nonzero(act)[0]:
    lines.append(f"    g{d.contact.geom1[i]}-g{d.contact.geom2[i]} dim={d.contact.dim[i]} "
                 f"dist={dist[i]:.6g} pos={np.round(pos[i], 5)}")
  return "\n".join(lines)


def contact_summary(dm, d) -> str:
  """One line: whether both found the same contacts (per geom pair count), and the worst
  dist / normal / pos difference of MuJoCo's contacts matched to jaxmj's nearest one."""
  act = np.nonzero(np.asarray(d.contact.active))[0]
  g1, g2 = d.contact.geom1[act], d.contact.geom2[act]
  dist, pos = np.asarray(d.contact.dist)[act], np.asarray(d.contact.pos)[act]
  normal = np.asarray(d.contact.frame)[act, 0]
  ours = {}
  for i, pair in enumerate(zip(g1, g2)):
    ours.setdefault(tuple(map(int, pair)), []).append(i)
  theirs = {}
  for c in dm.contact[:dm.ncon]:
    if c.efc_address >= 0:  # MuJoCo 4.0 also lists contacts within margin + gap, rowless
      theirs.setdefault(tuple(map(int, c.geom)), []).append(c)
  counts = [f"g{a}-g{b} {len(ours.get((a, b), []))}!={len(v)}" for (a, b), v in theirs.items()
            if len(ours.get((a, b), [])) != len(v)]
  counts += [f"g{a}-g{b} {len(v)}!=0" for (a, b), v in ours.items() if (a, b) not in theirs]
  if counts:
    return "collision: contact counts (jaxmj!=mujoco) " + ", ".join(counts)
  worst = (0.0, 0.0, 0.0, "")
  for pair, cs in theirs.items():
    for c in cs:
      i = min(ours[pair], key=lambda j: np.linalg.norm(pos[j] - c.pos))
      e = (abs(dist[i] - c.dist), np.abs(normal[i] - c.frame[:3]).max(),
           np.abs(pos[i] - c.pos).max(), f"g{pair[0]}-g{pair[1]}")
      worst = max(worst, e)
  tag = "collision" if max(worst[:3]) > 1e-9 else "contacts agree"
  return (f"{tag}: worst dist {worst[0]:.2g} normal {worst[1]:.2g} pos {worst[2]:.2g} "
          f"{worst[3]}")


def _diagnose(mj, st: dict, m, d0) -> str:
  """Which stage first differs at the state `st`: mj_forward against jaxmj's forward."""
  dm = mujoco.MjData(mj)
  _put(dm, st)
  mujoco.mj_forward(mj, dm)
  d = _FORWARD(m, d0)
  out = []
  for k in ("qfrc_bias", "qfrc_passive", "qfrc_actuator", "qacc_smooth", "qfrc_constraint",
            "qacc"):
    out.append(f"{k} {_err(getattr(d, k), getattr(dm, k)):.3g}")
  return (contact_summary(dm, d) + "\n  forward errors at the step's start: " + ", ".join(out)
          + "\n" + contact_report(mj, dm, d))


_STEP = jax.jit(jaxmj.step)
_FORWARD = jax.jit(jaxmj.forward)  # compiled only for structures that show a mismatch


def compare_scene(xml: str, nstep: int = 30, tol: float = 1e-8, seed: int = 0,
                  chaos_check: bool = True, stat=None) -> Result:
  """Teacher-forced comparison of `nstep` steps of `xml` (see the module docstring).

  `stat`: a Statistic to put in jaxmj's Model in place of its own. The step never reads
  mjModel.stat, but it is static, so scenes that differ only in numbers share a compiled
  step when they share it."""
  res = Result(seed, "ok")
  try:
    mj = mujoco.MjModel.from_xml_string(xml)
  except ValueError as e:
    try:
      jaxmj.Model.from_xml_string(xml)
    except MJCFError:
      return dataclasses.replace(res, status="mj-reject", detail=str(e).splitlines()[0])
    return dataclasses.replace(res, status="jaxmj-accepts", detail=str(e).splitlines()[0])
  try:
    m = jaxmj.Model.from_xml_string(xml)
  except MJCFError as e:
    return dataclasses.replace(res, status="jaxmj-reject", detail=str(e).splitlines()[0])
  if stat is not None:
    m = m.replace(stat=stat)
  rng = np.random.default_rng(seed + 10_000)
  dm = mujoco.MjData(mj)
  dm.qvel[:] = rng.normal(scale=.5, size=mj.nv)
  step = _STEP
  d0 = jaxmj.make_data(m)
  for k in range(nstep):
    if mj.nu:
      dm.ctrl[:] = rng.uniform(-1.2, 1.2, size=mj.nu)
    st = _get(dm)
    start = d0.replace(time=np.asarray(st["time"]), **{f: st[f] for f in FIELDS})
    t0 = time.perf_counter()
    try:
      d = step(m, start)
      ours = {"qpos": np.asarray(d.qpos), "qvel": np.asarray(d.qvel)}
    except Exception as e:  # noqa: BLE001 - a crash of jaxmj on a scene MuJoCo runs is a finding
      return dataclasses.replace(res, status="jaxmj-error", step=k,
                                 detail=f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
    if k == 0:
      res.compile_s = time.perf_counter() - t0
    mujoco.mj_step(mj, dm)
    ref = _get(dm)
    if dm.warning[mujoco.mjtWarning.mjWARN_BADQACC].number:
      return dataclasses.replace(res, status="diverged", steps=k)
    e = max(_err(ours["qpos"], ref["qpos"]), _err(ours["qvel"], ref["qvel"]))
    res.steps, res.err = k + 1, max(res.err, e)
    if e > tol:
      res.step, res.err = k, e
      res.nudge = _nudge_spread(mj, st, ref, rng) if chaos_check else 0.0
      res.status = "chaos" if res.nudge >= e else "mismatch"
      res.detail = _diagnose(mj, st, m, start)
      return res
  return res


def main(argv=None) -> int:
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--seeds", default="0:20", help="range a:b of scene seeds (structures)")
  p.add_argument("--seed", type=int, help="one scene")
  p.add_argument("--variants", default="0:4", help="range a:b of value variants per seed")
  p.add_argument("--family", default="random", choices=sorted(FAMILIES))
  p.add_argument("--steps", type=int, default=30)
  p.add_argument("--tol", type=float, default=1e-8)
  p.add_argument("--xml", action="store_true", help="print the scene XML and stop")
  p.add_argument("--show", action="store_true", help="print the XML of every mismatch")
  p.add_argument("--log", help="append the XML and details of every mismatch to this file")
  a = p.parse_args(argv)
  seeds = [a.seed] if a.seed is not None else range(*map(int, a.seeds.split(":")))
  bad = 0
  for s in seeds:
    stat = None
    for var in range(*map(int, a.variants.split(":"))):
      xml = FAMILIES[a.family](s, var)
      if a.xml:
        print(xml)
        continue
      if stat is None:
        try:
          stat = jaxmj.Model.from_xml_string(xml).stat
        except Exception:  # noqa: BLE001 - compare_scene reports it
          pass
      r = compare_scene(xml, a.steps, a.tol, s * 1000 + var, stat=stat)
      head = r.detail.splitlines()[0][:150] if r.detail else ""
      print(f"seed {s:5d}/{var:<3d} {r.status:12s} steps={r.steps:3d} step={r.step:3d} "
            f"err={r.err:.2e} nudge={r.nudge:.2e} t={r.compile_s:.1f}s {head}", flush=True)
      if r.status in ("mismatch", "jaxmj-error", "jaxmj-reject", "jaxmj-accepts"):
        bad += 1
        if a.show:
          print(xml, r.detail, sep="\n")
      if a.log and r.status not in ("ok", "mj-reject", "diverged"):
        with open(a.log, "a") as f:
          f.write(f"==== {a.family} seed {s} variant {var}: {r.status} step {r.step} "
                  f"err {r.err:.3g} nudge {r.nudge:.3g}\n{xml}{r.detail}\n")
    jax.clear_caches()
  return 1 if bad else 0


if __name__ == "__main__":
  sys.exit(main())
