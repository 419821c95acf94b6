"""The checks of one actuator row, in mjCActuator::Compile's order (mujoco 4.0.0,
disassembled and probed), so that an actuator with several faults gets MuJoCo's error:
target and so3 (in actuator._row), pid / dcmotor / input rules, damping and armature,
inheritrange, force, control and activation ranges, actdim, actearly, then the history
buffer. Also the few combinations jaxmj refuses by name."""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.compile import motor as dcmotor
from jaxmj.mjcf.compile import orientation
from jaxmj.mjcf.spec.parse import Node
from jaxmj.types import DynType, TrnType

_INPUT_NONE = 16  # actuator_ctrlspec of input "none"


def _padded(v) -> np.ndarray:
  out = np.zeros(10)
  v = np.asarray(v, float)[:10]
  out[: len(v)] = v
  return out


JOINT_OR_TENDON = (TrnType.JOINT, TrnType.JOINTINPARENT, TrnType.TENDON)


def ranges(node: Node, row: dict) -> None:
  """MuJoCo's range checks, force first: a limited range needs lo < hi; a limited
  activation range needs dynamics."""
  for lim, rng, what in (("forcelimited", "forcerange", "force"),
                         ("ctrllimited", "ctrlrange", "control")):
    for (lo, hi), on in zip(np.reshape(row[rng], (-1, 2)), np.atleast_1d(row[lim])):
      if on and lo >= hi:
        raise node.error(f"invalid {what} range for actuator", rng)
  if row["actlimited"] and row["actrange"][0] >= row["actrange"][1]:
    raise node.error("invalid actrange for actuator", "actrange")
  if row["actlimited"] and row["dyntype"] == DynType.NONE:
    raise node.error("actrange specified but dyntype is 'none' in actuator", "actrange")


def states(node: Node, s: dict, row: dict, dyn: DynType) -> None:
  """actdim (an so3 integrator has settled its own), then a DC motor's actearly."""
  if not (row["trntype"] == TrnType.SO3 and dyn == DynType.INTEGRATOR):
    row["actnum"] = _actnum(node, s, dyn, row["slots"])
  if s["gaintype"] == "dcmotor" and row["actnum"] != np.sum(row["slots"] >= 0):
    raise node.error(f"inconsistent state array dimension in DC motor: its parameters ask for "
                     f"{np.sum(row['slots'] >= 0)} states, dyntype '{s['dyntype']}' has "
                     f"{row['actnum']}", "dyntype")
  if dyn == DynType.DCMOTOR and not s["actearly"]:
    raise node.error("actearly cannot be false for a DC motor actuator", "actearly")


def history(node: Node, s: dict, row: dict) -> None:
  """The control history buffer: a positive delay needs one, a buffer needs controls.
  MuJoCo 4.0 takes a negative delay (the newest sample is read: see history.ctrl)."""
  nsample = s["nsample"]
  if s["delay"] > 0 and nsample <= 0:
    raise node.error("setting delay > 0 without a history buffer (nsample)", "delay")
  if nsample > 1 << 24:
    raise node.error(f"at most 2^24 samples in history buffer, got {nsample}", "nsample")
  if (nsample > 0 or s["delay"] > 0) and row["ctrlspec"] == _INPUT_NONE:
    raise node.error("history and delay require an input", "nsample" if nsample > 0 else
                     "delay")


def motor(node: Node, s: dict, trntype: TrnType) -> None:
  """What MuJoCo requires of the inputs and of <general> actuators using the pid / dcmotor
  types directly (the dcmotor types mix with the others), in MuJoCo's order; and the few
  combinations that leave MuJoCo reading outside the actuator, refused."""
  gain, dyn = s["gaintype"], s["dyntype"]
  tokens = str(s.get("input") or "").split()
  if gain == "pid":
    _pid(node, s, trntype, tokens)
  elif gain == "dcmotor":
    tokens = dcmotor.dc_inputs(node, s.get("input"))
    dcmotor.check_dc(node, _padded(s["gainprm"]), _padded(s["dynprm"]), tokens)
  if dyn == "pid" and gain != "pid":
    raise node.error("dyntype 'pid' requires gaintype 'pid'", "dyntype")
  if gain in ("fixed", "affine") and tokens not in ([], ["pos"], ["vel"], ["pressure"]):
    raise node.error("fixed and affine gains take one input, 'pos', 'vel' or 'pressure'",
                     "input")
  if gain in ("muscle", "user") and tokens:
    raise node.error("input is not available for muscle and user gains", "input")
  if gain == "dcmotor":
    if tokens == ["none"] and dyn not in ("none", "dcmotor"):
      raise node.error(f"dcmotor input 'none' leaves dyntype '{dyn}' no control to read",
                       "input")
    if len(tokens) > 1 and dyn == "integrator":
      raise node.error("an integrator over several dcmotor inputs is not supported by jaxmj "
                       "(MuJoCo writes outside the actuator's one state)", "input")
  if s["biastype"] == "dcmotor" and dyn != "dcmotor" and _padded(s["dynprm"])[5] > 0:
    raise node.error("LuGre friction (dynprm[5] > 0) of a dcmotor bias needs dyntype "
                     "'dcmotor' in jaxmj (its bristle state)", "dynprm")


def _pid(node: Node, s: dict, trntype: TrnType, tokens: list[str]) -> None:
  """A pid gain: affine bias, dyntype none or pid (ki needs pid), no body transmission,
  non-negative imax and slewmax, matching actdim, inputs from pos vel ff, and its states
  (dyntype pid) need the pos input."""
  dyn, gainprm, dynprm = s["dyntype"], _padded(s["gainprm"]), _padded(s["dynprm"])
  own = node.tag == "pid"
  if s["biastype"] != "affine":
    raise node.error("pid requires biastype 'affine'", "biastype")
  if dyn not in ("none", "pid"):
    raise node.error("pid requires dyntype 'none' or 'pid'", "dyntype")
  if dyn == "none" and gainprm[0] != 0:
    raise node.error("ki (gainprm[0]) requires dyntype 'pid'", "gaintype")
  if trntype == TrnType.BODY:
    raise node.error("pid cannot use body transmission", "body")
  if dyn == "pid":
    for k, name in ((0, "imax"), (1, "slewmax")):
      if dynprm[k] < 0:
        raise node.error(f"{name} (dynprm[{k}]) must be non-negative",
                         name if own else "dynprm")
    nstate = int(dynprm[1] > 0) + int(gainprm[0] > 0)
    if s["actdim"] > 0 and s["actdim"] != nstate:
      raise node.error(f"pid controller states require matching actdim {nstate}, got "
                       f"{s['actdim']}", "actdim")
  if any(t not in ("pos", "vel", "ff") for t in tokens):
    raise node.error("pid inputs are a subset of [pos, vel, ff]", "input")
  if dyn == "pid" and "pos" not in tokens:
    raise node.error("pid controller states require the pos input", "input")


def _actnum(node: Node, s: dict, dyn: DynType, slots: np.ndarray) -> int:
  """The actuator's number of activations, with MuJoCo 4.0's actdim errors. A negative
  actdim (any, not only the default -1) means one state with dynamics, none without; pid
  and dcmotor dynamics take the states their parameters ask for (a pid's actdim 0 reads as
  auto, as in mujoco 4.0.0). An so3 actuator without
  dynamics may take actdim > 1 states (MuJoCo allocates them; nothing reads or moves them)."""
  actdim = max(int(s["actdim"]), -1)
  if dyn in (DynType.PID, DynType.DCMOTOR):  # a pid's actdim was checked in _check_pid
    actnum = int(np.sum(slots >= 0))
    if dyn == DynType.DCMOTOR and actdim not in (-1, actnum):
      raise node.error(f"DC motor parameters require actdim {actnum}, got {actdim}", "actdim")
    if dyn == DynType.PID and actnum == 0:
      raise node.error("invalid actdim 0 in stateful actuator: a pid's states are the slew "
                       "(slewmax > 0) and the integral (ki > 0)", "dyntype")
    return actnum
  if actdim > 1 and not orientation.is_so3(s):
    raise node.error("actdim > 1 is only allowed for dyntype 'user', 'dcmotor' and 'pid'",
                     "actdim")
  if actdim == 1 and dyn == DynType.NONE:
    raise node.error("invalid actdim 1 in stateless actuator", "actdim")
  if actdim == 0 and dyn != DynType.NONE:
    raise node.error("invalid actdim 0 in stateful actuator", "actdim")
  return int(dyn != DynType.NONE) if actdim < 0 else actdim
