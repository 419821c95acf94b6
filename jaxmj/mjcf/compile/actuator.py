"""<actuator> -> actuator_* arrays, as MuJoCo 4.0's compiler builds them (host side, numpy).

Every shortcut (motor, position, velocity, intvelocity, damper, cylinder, muscle, adhesion;
pid and dcmotor in mjcf/motor.py) is expanded into <general>'s dyntype/gaintype/biastype and
their parameters; <orientation> (3 controls, 3 outputs) in mjcf/orientation.py. A pid has one
control per input (ctrlrange and ctrllimited per control, MuJoCo 4.0's nu > nactuator).
Default classes hold one actuator spec per class, as MuJoCo's do: a shortcut inside <default>
rewrites that spec. An element starts from its class's spec; a shortcut whose class spec was
last written by a different shortcut starts from pristine dynamics, gain and bias (only the
common attributes such as ctrlrange or gear carry over), which is what MuJoCo 4.0 does.

After the mass constants, `actuator_constants` evaluates the transmissions at qpos0 for
actuator_length0 and actuator_acc0, turns position and pid servos' dampratio into kv, finds
muscle length ranges (compiler <lengthrange>: useexisting, uselimit; the rest are left to
jaxmj.lengthrange's simulation, run on the compiled Model).
"""

from __future__ import annotations

import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.mjcf.compile import actuator_checks as checks
from jaxmj.mjcf.compile import engine0, frames, motor, orientation, setconst
from jaxmj.mjcf.errors import MJCFError
from jaxmj.mjcf.spec import parse, schema
from jaxmj.mjcf.spec.parse import Node, overlay
from jaxmj.types import BiasType, DynType, GainType, JointType, TrnType

_PRISTINE = {k: v for k, (_, v) in schema.ATTRS["general"].items()}
# What a shortcut resets when its class spec was last written by another shortcut.
_SHORTCUT_OWNED = ("dyntype", "dynprm", "gaintype", "gainprm", "biastype", "biasprm",
                   "inheritrange", "input")
_TARGETS = {"joint": TrnType.JOINT, "jointinparent": TrnType.JOINTINPARENT,
            "tendon": TrnType.TENDON, "cranksite": TrnType.SLIDERCRANK, "site": TrnType.SITE,
            "body": TrnType.BODY}
_INPUT = {"pos": 1, "vel": 2, "ff": 4, "voltage": 8, "none": 16, "pressure": 32}
_MUSCLE_DEFAULTS = (0.75, 1.05, -1.0, 200.0, 0.5, 1.6, 1.5, 1.3, 1.2)


def _vec10(*leading) -> np.ndarray:
  out = np.zeros(10)
  out[: len(leading)] = leading
  return out


# ---------------------------------------------------------------- specs and shortcuts


def _written(node: Node, name: str, fallback):
  v = node.get(name)
  return fallback if v is None else v


def _servo(node: Node, s: dict, integrated: bool) -> None:
  """position / intvelocity: gain kp, bias (0, -kp, -kv or dampratio)."""
  kp = _written(node, "kp", s["gainprm"][0])
  kv, ratio = node.get("kv"), node.get("dampratio")
  for name, v in (("kv", kv), ("dampratio", ratio), ("timeconst", node.get("timeconst"))):
    if v is not None and v < 0:
      raise node.error(f"{name} cannot be negative", name)
  if kv is not None and ratio is not None:
    raise node.error("kv and dampratio cannot both be defined", "kv")
  b2 = -kv if kv is not None else ratio if ratio is not None else s["biasprm"][2]
  s.update(gaintype="fixed", biastype="affine", gainprm=_vec10(kp), biasprm=_vec10(0, -kp, b2))
  if integrated:
    s.update(dyntype="integrator", dynprm=_vec10(1.0), input="vel")
  else:
    tc = node.get("timeconst")
    if tc is not None:
      s.update(dyntype="filterexact" if tc > 0 else "none", dynprm=_vec10(tc))
    elif s["dyntype"] != "filterexact":
      s.update(dyntype="none", dynprm=_vec10(1.0))
    s["input"] = "pos"
  s["inheritrange"] = _written(node, "inheritrange", s["inheritrange"])
  rng = "actrange" if integrated else "ctrlrange"
  if s["inheritrange"] > 0 and np.any(np.asarray(s[rng]) != 0):
    raise node.error(f"{rng} and inheritrange cannot both be defined", "inheritrange")


def _velocity(node: Node, s: dict) -> None:
  kv = _written(node, "kv", s["gainprm"][0])
  s.update(gaintype="fixed", biastype="affine", dyntype="none", dynprm=_vec10(1.0),
           gainprm=_vec10(kv), biasprm=_vec10(0, 0, -kv), input="vel")


def _damper(node: Node, s: dict) -> None:
  kv = _written(node, "kv", -s["gainprm"][2] if s["gaintype"] == "affine" else 0.0)
  if kv < 0:
    raise node.error("damping coefficient cannot be negative", "kv")
  s.update(gaintype="affine", biastype="none", dyntype="none", dynprm=_vec10(1.0),
           gainprm=_vec10(0, 0, -kv), biasprm=_vec10(), ctrllimited="true", input=None)


def _cylinder(node: Node, s: dict) -> None:
  tc = _written(node, "timeconst", s["dynprm"][0])
  bias = _written(node, "bias", s["biasprm"][:3])
  area = _written(node, "area", s["gainprm"][0])
  if node.get("diameter") is not None:
    area = np.pi / 4 * node.get("diameter") ** 2
  s.update(gaintype="fixed", biastype="affine", dyntype="filter", dynprm=_vec10(tc),
           gainprm=_vec10(area), biasprm=_vec10(*bias), input="pressure")


def _muscle(node: Node, s: dict) -> None:
  keep = s["gaintype"] == "muscle"
  prm = np.array(s["gainprm"][:9] if keep else _MUSCLE_DEFAULTS, float)
  for k, name in enumerate(("range", "force", "scale", "lmin", "lmax", "vmax", "fpmax",
                            "fvmax")):
    v = node.get(name)
    if v is None:
      continue
    if name == "range":
      prm[0:2] = v
    else:
      prm[k + 1] = v
  tc = np.array(s["dynprm"][:2] if s["dyntype"] == "muscle" else (0.01, 0.04), float)
  tc = _written(node, "timeconst", tc)
  tausmooth = _written(node, "tausmooth", s["dynprm"][2])
  if tausmooth < 0:
    raise node.error("muscle tausmooth cannot be negative", "tausmooth")
  s.update(gaintype="muscle", biastype="muscle", dyntype="muscle",
           dynprm=_vec10(tc[0], tc[1], tausmooth), gainprm=_vec10(*prm),
           biasprm=_vec10(*prm), input=None)


def _adhesion(node: Node, s: dict) -> None:
  gain = _written(node, "gain", s["gainprm"][0])
  s.update(gaintype="fixed", biastype="none", dyntype="none", dynprm=_vec10(1.0),
           gainprm=_vec10(gain), biasprm=_vec10(), ctrllimited="true", input=None)


def _motor(node: Node, s: dict) -> None:
  s.update(gaintype="fixed", biastype="none", dyntype="none", dynprm=_vec10(1.0),
           gainprm=_vec10(1.0), biasprm=_vec10(), input=None)


_SHORTCUTS = {
  "general": lambda node, s: None, "motor": _motor,
  "position": lambda node, s: _servo(node, s, integrated=False),
  "intvelocity": lambda node, s: _servo(node, s, integrated=True),
  "velocity": _velocity, "damper": _damper, "cylinder": _cylinder, "muscle": _muscle,
  "adhesion": _adhesion, "pid": motor.pid, "dcmotor": motor.dcmotor,
  "orientation": orientation.shortcut,
}
# Attributes a shortcut reads itself rather than copying onto the spec.
_OWN = {"kp", "kv", "dampratio", "timeconst", "inheritrange", "area", "diameter", "bias",
        "tausmooth", "range", "force", "scale", "lmin", "lmax", "vmax", "fpmax", "fvmax",
        "gain", "ki", "imax", "slewmax", "posrange", "velrange", "ffrange", "input",
        "motorconst", "resistance", "nominal", "saturation", "inductance", "cogging",
        "controller", "thermal", "lugre"}


def apply(node: Node, spec: dict, kind: str | None) -> tuple[dict, str]:
  """The spec after element `node` (an actuator or a default-class entry) is read over it,
  and the new kind (the tag that last wrote the spec)."""
  s = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in spec.items()}
  if node.tag != "general" and kind not in (None, "general", node.tag):
    s.update({k: _PRISTINE[k] for k in _SHORTCUT_OWNED})
  for name in node.attrs:
    if node.tag == "general" or name not in _OWN:
      s[name] = overlay(node, name, s.get(name))
  _SHORTCUTS[node.tag](node, s)
  return s, node.tag


def default_specs(root: Node) -> dict[str, tuple[dict, str | None]]:
  """Class name -> (actuator spec, kind) through the <default> cascade."""
  pristine = {k: (np.array(v, float) if isinstance(v, tuple) else v)
              for k, v in _PRISTINE.items()}
  out = {"main": (pristine, None)}

  def visit(node: Node, inherited: tuple, top: bool) -> None:
    name = node.attrs.get("class", "main")
    spec, kind = ((pristine, None) if top and parse.ROOT_CLASS in node.attrs
                  else out["main"] if top else inherited)
    for child in node.children:
      if child.tag in schema.ACTUATORS:
        spec, kind = apply(child, spec, kind)
    out[name] = (spec, kind)
    for child in node.children:
      if child.tag == "default":
        visit(child, out[name], top=False)

  for node in root.children:
    if node.tag == "default":
      visit(node, out["main"], top=True)
  return out


# ---------------------------------------------------------------- compile


def compile_actuators(root: Node, bodies: list, f: dict, compiler: dict) -> dict:
  """actuator_* arrays (mjModel names and shapes), nu, na and the actuator names.

  bodies: build's body list (names of bodies, joints and sites). Must run before the mass
  constants: actuator armature reflects onto dof_M0.
  """
  nodes = [n for sec in root.children if sec.tag == "actuator" for n in sec.children]
  specs = default_specs(root) if nodes else {}
  ids = _name_ids(bodies, f)
  rows = []
  for node in nodes:
    cls = node.attrs.get("class", "main")  # actuators are outside the body tree: no childclass
    if cls not in specs:
      raise node.error(f"unknown default class '{cls}'", "class")
    spec, kind = specs[cls]
    spec, _ = apply(node, spec, kind)
    rows.append(_row(node, spec, ids, f, compiler))
  _check_names(nodes)
  return _arrays(rows, f)


def _name_ids(bodies: list, f: dict) -> dict:
  ids = {"body": {"world": 0}, "joint": {}, "site": {}, "tendon": {}}
  for b, body in enumerate(bodies):
    if b and body.name:
      ids["body"].setdefault(body.name, b)
  for j, (node, _, _) in enumerate(jt for body in bodies for jt in body.joints):
    if node.attrs.get("name"):
      ids["joint"].setdefault(node.attrs["name"], j)
  for s, site in enumerate(st for body in bodies for st in body.sites):
    if site[0].attrs.get("name"):
      ids["site"].setdefault(site[0].attrs["name"], s)
  for t, name in enumerate(f.get("tendon_names", ())):
    if name:
      ids["tendon"].setdefault(name, t)
  return ids


def _check_names(nodes: list[Node]) -> None:
  seen = set()
  for node in nodes:
    name = node.attrs.get("name")
    if name:
      if name in seen:
        raise node.error(f"repeated actuator name '{name}'", "name")
      seen.add(name)


def _limited(node: Node, s: dict, attr: str, rng: str, compiler: dict) -> bool:
  val = s[attr]
  if val == "auto":
    if not compiler["autolimits"]:
      if np.any(np.asarray(s[rng]) != 0):
        raise node.error(f"'{rng}' is set, so '{attr}' must be set explicitly when "
                         "autolimits is disabled", attr)
      return False
    lo, hi = s[rng]
    return bool(lo < hi)
  return val == "true"


def _control_rows(node: Node, s: dict, tokens: list[str], compiler: dict) -> tuple:
  """(ncontrol, 2) control ranges and (ncontrol,) ctrllimited. ctrlrange and ctrllimited
  belong to the actuator's primary control and are shared by all its controls, except that
  a pid's vel and ff controls take velrange / ffrange, each limited when lo < hi, and a pid
  without the pos input drops ctrlrange (MuJoCo 4.0). 'none' has no controls."""
  n = 0 if tokens == ["none"] else max(1, len(tokens))
  limited = _limited(node, s, "ctrllimited", "ctrlrange", compiler)
  rows = np.array(np.broadcast_to(np.asarray(s["ctrlrange"], float), (n, 2)))
  lim = np.full(n, limited)
  pid = s["gaintype"] == "pid"
  if limited and (n == 0 or pid and "pos" not in tokens) and s["ctrlrange"][0] >= s[
      "ctrlrange"][1]:
    raise node.error("invalid control range for actuator", "ctrlrange")
  for k, t in enumerate(tokens if pid else ()):
    if t in ("vel", "ff"):
      given = s.get(f"{t}range")
      rows[k] = (0.0, 0.0) if given is None else given
      lim[k] = rows[k, 0] < rows[k, 1]
  return rows, lim


def _target(node: Node, s: dict, ids: dict) -> tuple[TrnType, int, int]:
  given = [t for t in _TARGETS if s.get(t)]
  if len(given) != 1:
    raise node.error("actuator needs exactly one transmission target (joint, jointinparent, "
                     "tendon, cranksite, site or body)" if not given else
                     f"actuator has several transmission targets: {', '.join(given)}", None)
  attr = given[0]
  kind = {"jointinparent": "joint", "cranksite": "site"}.get(attr, attr)
  name = s[attr]
  if name not in ids[kind]:
    if kind == "tendon" and not ids["tendon"]:
      raise node.error("actuators on tendons need the tendon compiler (tendons not found)",
                       attr)
    raise node.error(f"unknown {kind} '{name}'", attr)
  second = -1
  if attr == "cranksite":
    if not s.get("slidersite"):
      raise node.error("slider-crank transmission needs a slidersite", "slidersite")
    if s["slidersite"] not in ids["site"]:
      raise node.error(f"unknown site '{s['slidersite']}'", "slidersite")
    second = ids["site"][s["slidersite"]]
  elif s.get("slidersite") or (s.get("cranklength") and attr != "cranksite"):
    raise node.error("cranklength and slidersite can only be used in slidercrank "
                     "transmission", "slidersite" if s.get("slidersite") else "cranklength")
  if s.get("refsite"):
    if attr != "site":
      raise node.error("refsite can only be used with site transmission", "refsite")
    if s["refsite"] not in ids["site"]:
      raise node.error(f"unknown site '{s['refsite']}'", "refsite")
    second = ids["site"][s["refsite"]]
  return _TARGETS[attr], ids[kind][name], second


def _row(node: Node, s: dict, ids: dict, f: dict, compiler: dict) -> dict:
  """One actuator's row. The checks run in mjCActuator::Compile's order (mujoco 4.0.0,
  disassembled and probed), so that an actuator with several faults gets MuJoCo's error:
  target, so3, pid / dcmotor / input rules, damping and armature, inheritrange, force,
  control and activation ranges, actdim, actearly, then the history buffer."""
  for attr in ("dyntype", "gaintype", "biastype"):
    if s[attr] == "user":
      raise node.error(f"{attr} '{s[attr]}' is not supported by jaxmj yet", attr)
  if s["gaintype"] == "pid" and not s.get("input"):
    s["input"] = "pos vel"  # a <general> pid without inputs takes the <pid> default
  tokens = orientation.input_tokens(s.get("input"))  # checked when read (mjcf/inputs.py)
  trntype, trnid, trnid2 = _target(node, s, ids)
  if orientation.is_so3(s):
    orientation.check(node, s, f, trntype, trnid)
  dyn = DynType[s["dyntype"].upper()]
  checks.motor(node, s, trntype)
  if trntype == TrnType.SLIDERCRANK and s["cranklength"] <= 0:
    raise node.error("slider-crank transmission needs a positive cranklength", "cranklength")
  ctrlrange, ctrllimited = _control_rows(node, s, tokens, compiler)
  gear = np.array(schema.ATTRS["general"]["gear"][1])
  gear[: len(s["gear"])] = np.asarray(s["gear"], float)[:6]
  damping = np.zeros(3)
  damping[: len(s["damping"])] = np.asarray(s["damping"], float)[:3]
  slots = motor.slots(s["dyntype"], s["gaintype"], _padded(s["gainprm"]), _padded(s["dynprm"]))
  row = dict(node=node, trntype=trntype, trnid=(trnid, trnid2), dyntype=dyn, actnum=0,
             gaintype=GainType[s["gaintype"].upper()], biastype=BiasType[s["biastype"].upper()],
             group=s["group"], actearly=bool(s["actearly"]), gear=gear,
             cranklength=s["cranklength"], dynprm=_padded(s["dynprm"]),
             gainprm=_padded(s["gainprm"]), biasprm=_padded(s["biasprm"]),
             ctrlrange=ctrlrange,
             forcerange=np.asarray(s["forcerange"], float),
             actrange=np.asarray(s["actrange"], float),
             lengthrange=np.asarray(s["lengthrange"], float), damping=damping[0],
             dampingpoly=damping[1:], armature=s["armature"],
             ctrlspec=sum(_INPUT[t] for t in tokens) or (
               _INPUT["voltage"] if s["gaintype"] == "dcmotor" else 0),
             name=s.get("name") or "",
             history=(max(s["nsample"], 0), ["zoh", "linear", "cubic"].index(s["interp"])),
             delay=s["delay"], slots=slots, outnum=1)
  if orientation.is_so3(s):
    orientation.finish(node, row)
  row["ctrllimited"] = np.resize(ctrllimited, len(row["ctrlrange"]))  # so3: shared
  row["forcelimited"] = _limited(node, s, "forcelimited", "forcerange", compiler)
  row["actlimited"] = _limited(node, s, "actlimited", "actrange", compiler)
  if row["trntype"] == TrnType.SO3:
    orientation.check_forcerange(node, row)
  if (damping[0] != 0 or np.any(damping[1:] != 0)) and trntype not in checks.JOINT_OR_TENDON:
    raise node.error("damping requires joint or tendon transmission", "damping")
  if s["armature"] != 0 and trntype not in checks.JOINT_OR_TENDON:
    raise node.error("armature requires joint or tendon transmission", "armature")
  _inherit_range(node, s, row, f)
  checks.ranges(node, row)
  checks.states(node, s, row, dyn)
  checks.history(node, s, row)
  if node.tag in ("damper", "adhesion") and row["ctrlrange"][0, 0] < 0:
    raise node.error(f"{node.tag} control range cannot be negative", "ctrlrange")
  return row


def _history_adr(history: np.ndarray, ctrlnum: np.ndarray) -> np.ndarray:
  """Addresses in mjData.history of the actuators' ctrl buffers (nsample (1 + ctrlnum) + 2
  slots: user slot, cursor, times, values), -1 without one; sensor buffers follow."""
  size = np.where(history[:, 0] > 0, (1 + ctrlnum) * history[:, 0] + 2, 0)
  return np.where(size > 0, np.cumsum(size) - size, -1).astype(np.int32)


def _padded(v) -> np.ndarray:
  out = np.zeros(10)
  v = np.asarray(v, float)[:10]
  out[: len(v)] = v
  return out


def _inherit_range(node: Node, s: dict, row: dict, f: dict) -> None:
  """position/intvelocity inheritrange: ctrlrange (or actrange) from the target's range."""
  ratio = s["inheritrange"]
  servo = (row["gaintype"] == GainType.FIXED and row["biastype"] == BiasType.AFFINE
           and row["gainprm"][0] == -row["biasprm"][1]) or (
    row["gaintype"] == GainType.PID and row["ctrlspec"] & _INPUT["pos"])
  if ratio <= 0 or not servo:
    return
  trn, tid = row["trntype"], row["trnid"][0]
  if trn in (TrnType.JOINT, TrnType.JOINTINPARENT) and f["jnt_type"][tid] in (
      JointType.HINGE, JointType.SLIDE):
    limited, rng = f["jnt_limited"][tid], f["jnt_range"][tid]
  elif trn == TrnType.TENDON and "tendon_range" in f:
    limited, rng = f["tendon_limited"][tid], f["tendon_range"][tid]
  else:
    raise node.error("inheritrange needs a hinge, slide or tendon target", "inheritrange")
  if not limited:
    raise node.error("inheritrange needs a target with a range", "inheritrange")
  mid, half = (rng[0] + rng[1]) / 2, (rng[1] - rng[0]) / 2 * ratio
  if row["dyntype"] == DynType.INTEGRATOR:
    row["actrange"], row["actlimited"] = np.array([mid - half, mid + half]), True
  else:  # the first control: the position setpoint
    row["ctrlrange"][0], row["ctrllimited"][0] = (mid - half, mid + half), True


def _arrays(rows: list[dict], f: dict) -> dict:
  """Model fields of the actuators: one or more controls each, one output each except so3
  actuators (three)."""
  nu = len(rows)
  ctrlnum = np.array([len(r["ctrlrange"]) for r in rows], np.int32)
  outnum = np.array([r["outnum"] for r in rows], np.int32)
  per_out = lambda k: np.concatenate([np.broadcast_to(r[k], (r["outnum"], 2)) for r in rows]
                                     or [np.zeros((0, 2))])
  actnum = np.array([r["actnum"] for r in rows], np.int32)
  actadr = np.where(actnum > 0, np.cumsum(actnum) - actnum, -1).astype(np.int32)
  col = lambda k, dt=float, shape=(): np.array([r[k] for r in rows], dt).reshape((nu,) + shape)
  out = {
    "nu": int(ctrlnum.sum()), "nactuator": nu, "nout": int(outnum.sum()),
    "na": int(actnum.sum()),
    "actuator_trntype": col("trntype", np.int32), "actuator_dyntype": col("dyntype", np.int32),
    "actuator_gaintype": col("gaintype", np.int32),
    "actuator_biastype": col("biastype", np.int32),
    "actuator_trnid": col("trnid", np.int32, (2,)), "actuator_actadr": actadr,
    "actuator_actnum": actnum, "actuator_group": col("group", np.int32),
    "actuator_ctrllimited": np.concatenate([r["ctrllimited"] for r in rows] or [[]]).astype(
      bool),
    "actuator_forcelimited": col("forcelimited", bool),
    "actuator_actlimited": col("actlimited", bool), "actuator_actearly": col("actearly", bool),
    "actuator_ctrladr": (np.cumsum(ctrlnum) - ctrlnum).astype(np.int32),
    "actuator_ctrlnum": ctrlnum, "actuator_outadr": (np.cumsum(outnum) - outnum).astype(
      np.int32),
    "actuator_outnum": outnum, "actuator_ctrlspec": col("ctrlspec", np.int32),
    "actuator_history": col("history", np.int32, (2,)),
    "actuator_historyadr": _history_adr(col("history", np.int32, (2,)), ctrlnum),
    "actuator_plugin": np.full(nu, -1, np.int32),
    "actuator_dynprm": col("dynprm", float, (10,)), "actuator_gainprm": col("gainprm", float,
                                                                           (10,)),
    "actuator_biasprm": col("biasprm", float, (10,)),
    "actuator_ctrlrange": np.concatenate([r["ctrlrange"] for r in rows] or [np.zeros((0, 2))]),
    "actuator_forcerange": col("forcerange", float, (2,)),
    "actuator_actrange": col("actrange", float, (2,)),
    "actuator_gear": np.concatenate([np.reshape(r["gear"], (-1, 6)) for r in rows]
                                    or [np.zeros((0, 6))]),
    "actuator_cranklength": col("cranklength"), "actuator_lengthrange": per_out("lengthrange"),
    "actuator_delay": col("delay"), "actuator_damping": col("damping"),
    "actuator_dampingpoly": col("dampingpoly", float, (2,)),
    "actuator_armature": col("armature"), "actuator_slots": col("slots", np.int32, (5,)),
    "actuator_acc0": np.zeros(outnum.sum()), "actuator_length0": np.zeros(outnum.sum()),
    "actuator_names": [r["name"] for r in rows], "_actuator_nodes": [r["node"] for r in rows],
  }
  return out


def unsupported(f: dict) -> list[tuple[str, int]]:
  """Runtime features of the compiled actuators jaxmj cannot simulate yet (feature, mask):
  none at present; the compiler still asks, so a new gap has one place to be listed."""
  return []


# ---------------------------------------------------------------- constants at qpos0


def actuator_constants(f: dict, root: Node) -> dict:
  """actuator_length0, actuator_acc0 (nout,), dampratio -> kv in actuator_biasprm, and the
  muscle actuator_lengthrange, as mj_setConst and mj_setLengthRange compute them (outputs
  outadr[i] : + outnum[i] of actuator i)."""
  nu = f.get("nactuator", 0)
  if not nu:
    return {}
  s = setconst.Qpos0(f)
  lengths, moments = np.zeros(f["nout"]), np.zeros((f["nout"], len(s.cdof)))
  for i in range(nu):
    out = slice(f["actuator_outadr"][i], f["actuator_outadr"][i] + f["actuator_outnum"][i])
    lengths[out], moments[out] = _transmission0(f, s, i)
  inv = setconst.solve(s.qld, s.ancestors, moments.T).T if len(s.cdof) else moments
  acc0 = np.sqrt(engine0.dot(inv.T, inv.T))  # mju_norm's order of the sum
  biasprm = np.array(f["actuator_biasprm"], float)
  gainprm = f["actuator_gainprm"]
  for i in range(nu):
    ratio = biasprm[i, 2]
    servo = (f["actuator_biastype"][i] == BiasType.AFFINE and (
      (f["actuator_gaintype"][i] == GainType.FIXED and gainprm[i, 0] == -biasprm[i, 1])
      or f["actuator_gaintype"][i] == GainType.PID)) or f["actuator_gaintype"][i] == GainType.SO3
    if servo and ratio > 0:
      # reflected mass (J M^-1 J')^-1 at qpos0, over several outputs the inverse of the mean
      # J_k M^-1 J_k'; kp is -biasprm[1] (= gainprm[0] for servos)
      adr, n = f["actuator_outadr"][i], f["actuator_outnum"][i]
      mass = 1 / max(MINVAL, float(np.mean(np.sum(moments[adr:adr + n] * inv[adr:adr + n],
                                                   axis=1))))
      biasprm[i, 2] = -2 * ratio * np.sqrt(-biasprm[i, 1] * mass)
  out = dict(actuator_length0=lengths, actuator_acc0=acc0, actuator_biasprm=biasprm)
  out["actuator_lengthrange"], pending = _lengthranges(f, root)
  if pending:
    out["_lengthrange_pending"] = (pending, lengthrange_options(root))
  return out


def _transmission0(f: dict, s, i: int) -> tuple[float, np.ndarray]:
  """(length, moment (nv,)) of actuator i at qpos0 (mj_transmission); so3: (3,), (3, nv)."""
  nv = len(s.cdof)
  trn, (tid, tid2) = f["actuator_trntype"][i], f["actuator_trnid"][i]
  gear = np.asarray(f["actuator_gear"][f["actuator_outadr"][i]], float)
  moment = np.zeros(nv)
  qpos0 = np.asarray(f["qpos0"], float)
  if trn == TrnType.SO3:
    return orientation.transmission0(f, s, tid, tid2)
  if trn in (TrnType.JOINT, TrnType.JOINTINPARENT):
    jtype, qa, da = f["jnt_type"][tid], f["jnt_qposadr"][tid], f["jnt_dofadr"][tid]
    if jtype in (JointType.HINGE, JointType.SLIDE):
      moment[da] = gear[0]
      return qpos0[qa] * gear[0], moment
    if jtype == JointType.BALL:
      moment[da:da + 3] = gear[:3]  # ball qpos0 is the identity: no rotation, zero length
      return 0.0, moment
    axis = gear[3:]
    if trn == TrnType.JOINTINPARENT:
      quat = frames.normalize_quat(qpos0[qa + 3:qa + 7])
      axis = frames.quat_to_mat(quat).T @ axis
    moment[da:da + 3], moment[da + 3:da + 6] = gear[:3], axis
    return 0.0, moment
  if trn == TrnType.TENDON:
    length, jac = _tendon0(f, s, tid)
    return length * gear[0], jac * gear[0]
  if trn == TrnType.SITE:
    return _site0(f, s, tid, tid2, gear)
  if trn == TrnType.SLIDERCRANK:
    return _slidercrank0(f, s, tid, tid2, gear[0], f["actuator_cranklength"][i])
  return 0.0, moment  # body (adhesion): no contacts at qpos0


def _tendon0(f: dict, s, t: int) -> tuple[float, np.ndarray]:
  """Tendon length and Jacobian at qpos0: the tendon compiler's when it provides them
  (tendon_length0, "_tendon_J0"), else from fixed or site/pulley paths."""
  if "_tendon_J0" in f:
    return float(f["tendon_length0"][t]), np.asarray(f["_tendon_J0"][t], float)
  adr, num = int(f["tendon_adr"][t]), int(f["tendon_num"][t])
  types = np.asarray(f["wrap_type"][adr:adr + num])
  ids, prms = np.asarray(f["wrap_objid"][adr:adr + num]), np.asarray(f["wrap_prm"][adr:adr + num])
  if types[0] == setconst.WRAP_JOINT:
    qa = np.asarray(f["jnt_qposadr"])[ids]
    length = float(prms @ np.asarray(f["qpos0"], float)[qa])
  elif np.all(np.isin(types, (setconst.WRAP_SITE, setconst.WRAP_PULLEY))):
    length, divisor = 0.0, 1.0
    pos = {k: engine0.site_frame(f, s, int(k))[0] for k in ids[types == setconst.WRAP_SITE]}
    for k in range(num - 1):
      if types[k] == setconst.WRAP_PULLEY:
        divisor = prms[k]
      elif types[k + 1] != setconst.WRAP_PULLEY:
        length += np.linalg.norm(pos[ids[k + 1]] - pos[ids[k]]) / divisor
  else:
    raise MJCFError("actuators on tendons that wrap around geoms are not supported by jaxmj "
                    "yet (their length at qpos0)")
  return length, s._tendon_jacobian(types, ids, prms)


def _site0(f: dict, s, site: int, ref: int, gear: np.ndarray) -> tuple[float, np.ndarray]:
  pos, mat, _ = engine0.site_frame(f, s, site)
  jac = s.point_jacobian(int(f["site_bodyid"][site]), pos)
  if ref < 0:
    return 0.0, engine0.site_moment(jac, mat, gear)
  rpos, rmat, _ = engine0.site_frame(f, s, ref)
  rjac = s.point_jacobian(int(f["site_bodyid"][ref]), rpos)
  common = _common_dofs(f, site, ref)
  length, moment = 0.0, np.zeros(len(s.cdof))
  if np.any(gear[:3] != 0):
    # mju_mulMatTVec3 then mju_dot3, each left to right in Python floats: numpy's matmul may
    # go through BLAS, whose summation order and fused multiply-adds vary with the build.
    dif = (pos - rpos).tolist()
    vec = engine0.matvec3(np.asarray(rmat, float).T.reshape(9).tolist(), dif)
    length += vec[0] * gear[0] + vec[1] * gear[1] + vec[2] * gear[2]
    d = jac[:3] - rjac[:3]
    d[:, common] = 0
    moment = moment + engine0.project(d, rmat, gear[:3])
  if np.any(gear[3:] != 0):
    rot = engine0.sub_quat(_site_quat(f, s, site), _site_quat(f, s, ref))
    length += rot[0] * gear[3] + rot[1] * gear[4] + rot[2] * gear[5]
    d = jac[3:] - rjac[3:]
    d[:, common] = 0
    moment = moment + engine0.project(d, rmat, gear[3:])
  return length, moment


def _site_quat(f: dict, s, site: int) -> list:
  """site_xquat at qpos0 as mj_kinematics: the body's, where the site's frame is the body's,
  else xquat * site_quat."""
  b = int(f["site_bodyid"][site])
  if int(np.asarray(f.get("site_sameframe", s.f["site_sameframe"]))[site]) in (1, 3):
    return s.kin["xquat"][b].tolist()  # mjSAMEFRAME_BODY, mjSAMEFRAME_BODYROT
  return engine0.mulquat(s.kin["xquat"][b].tolist(), np.asarray(f["site_quat"][site], float))


def _common_dofs(f: dict, site: int, ref: int) -> list[int]:
  """The dof chain the two sites' bodies share (it moves both alike)."""
  def last_dof(site):
    b = f["body_weldid"][f["site_bodyid"][site]]
    return int(f["body_dofadr"][b] + f["body_dofnum"][b] - 1)

  a, b = last_dof(site), last_dof(ref)
  parent = f["dof_parentid"]
  if a < 0 or b < 0:
    return []
  while a != b:
    if a < b:
      b = parent[b]
    else:
      a = parent[a]
    if a == -1 or b == -1:
      return []
  chain = []
  while a >= 0:
    chain.append(int(a))
    a = parent[a]
  return chain


def _slidercrank0(f, s, crank: int, slider: int, gear: float, rod: float):
  cpos = engine0.site_frame(f, s, crank)[0]
  spos, smat, _ = engine0.site_frame(f, s, slider)
  sjac = s.point_jacobian(int(f["site_bodyid"][slider]), spos)
  cjac = s.point_jacobian(int(f["site_bodyid"][crank]), cpos)
  length, moment = engine0.slider_crank(cpos.tolist(), spos.tolist(), smat[:, 2].tolist(),
                                        float(rod), cjac, sjac)
  return length * gear, moment * gear


def lengthrange_options(root: Node) -> dict:
  """The <compiler><lengthrange> attributes, defaults filled in."""
  opts = {k: v for k, (_, v) in schema.ATTRS["lengthrange"].items()}
  for c in (c for sec in root.children if sec.tag == "compiler" for c in sec.children):
    if c.tag == "lengthrange":
      opts.update({k: c.get(k) for k in c.attrs})
  return opts


def _lengthranges(f: dict, root: Node) -> tuple[np.ndarray, list[int]]:
  """actuator_lengthrange as far as the compiler knows it: kept when given (useexisting),
  from joint or tendon limits (uselimit); and the actuators whose range MuJoCo finds by
  simulation (mj_setLengthRange; jaxmj.lengthrange runs it once the Model exists)."""
  opts = lengthrange_options(root)
  out = np.array(f["actuator_lengthrange"], float)
  # as mj_setLengthRange: muscle gain or bias (muscle dynamics alone do not count)
  muscle = ((f["actuator_gaintype"] == GainType.MUSCLE)
            | (f["actuator_biastype"] == BiasType.MUSCLE))
  selected = {"none": np.zeros_like(muscle), "muscle": muscle, "muscleuser": muscle,
              "all": np.ones_like(muscle)}[opts["mode"]]
  pending = []
  for i in np.flatnonzero(selected):
    # multi-output (so3) actuators: MuJoCo simulates their first output only
    trn, tid, o = f["actuator_trntype"][i], f["actuator_trnid"][i, 0], f["actuator_outadr"][i]
    if opts["useexisting"] and out[o, 0] < out[o, 1]:
      continue
    rng = None
    if opts["uselimit"]:
      if trn in (TrnType.JOINT, TrnType.JOINTINPARENT) and f["jnt_limited"][tid]:
        rng = f["jnt_range"][tid]
      elif trn == TrnType.TENDON and f.get("tendon_limited") is not None and f[
          "tendon_limited"][tid]:
        rng = f["tendon_range"][tid]
    if rng is None:
      pending.append(int(i))
    else:
      out[o] = rng  # MuJoCo copies the target's range as is, without the gear
  return out, pending
