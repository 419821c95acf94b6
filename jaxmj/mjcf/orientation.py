"""<orientation> actuators and <general> with the so3 types (MuJoCo 4.0), host side.

An SO3 servo drives a ball joint towards a target orientation given as a rotation vector
(3 controls) and writes 3 outputs, one per dof of the ball: gaintype = biastype = so3,
gainprm = (kp,), biasprm = (offset, -kp, -kv or dampratio), transmission mjTRN_SO3 with the
identity moment on the ball's dofs. What mujoco 4.0.0 requires, checked by running it: a ball
joint (a free joint is an error), both types so3 with gainprm[0] == -biasprm[1], dyntype
none or integrator, and a forcerange starting at 0 (it bounds the force norm). jaxmj runs
dyntype none with the default gear; an integrator (3 activations), another gear, armature or
damping are refused as not supported yet.
"""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.parse import Node
from jaxmj.types import DynType, GainType, JointType, TrnType

NOUT = 3  # controls and outputs of one SO3 actuator
_GEAR = np.array([1.0, 0, 0, 0, 0, 0])


def shortcut(node: Node, s: dict) -> None:
  """<orientation>: kp, and kv or dampratio (dampratio becomes kv in actuator_constants)."""
  for attr, what in (("site", "site transmission (with refsite)"), ("input", "input")):
    if node.get(attr) is not None:
      raise node.error(f"<orientation> {what} is not supported by jaxmj yet", attr)
  kp = node.get("kp") if node.get("kp") is not None else s["gainprm"][0]
  kv, ratio = node.get("kv"), node.get("dampratio")
  for name, v in (("kv", kv), ("dampratio", ratio)):
    if v is not None and v < 0:
      raise node.error(f"{name} cannot be negative", name)
  if kv is not None and ratio is not None:
    raise node.error("kv and dampratio cannot both be defined", "kv")
  b2 = -kv if kv is not None else ratio if ratio is not None else s["biasprm"][2]
  gain, bias = np.zeros(10), np.zeros(10)
  gain[0], bias[1], bias[2] = kp, -kp, b2
  s.update(gaintype="so3", biastype="so3", dyntype="none", dynprm=np.eye(1, 10)[0],
           gainprm=gain, biasprm=bias, input=None)


def is_so3(s: dict) -> bool:
  return "so3" in (s["gaintype"], s["biastype"])


def check(node: Node, s: dict, f: dict, trntype: TrnType, trnid: int) -> None:
  """MuJoCo's compile errors for so3 actuators, then the cases jaxmj does not run."""
  if s["gaintype"] != "so3" or s["biastype"] != "so3":
    raise node.error("gaintype and biastype must both be 'so3'", "gaintype")
  gain, bias = np.asarray(s["gainprm"], float), np.asarray(s["biasprm"], float)
  if (gain[0] if len(gain) else 0.0) != -(bias[1] if len(bias) > 1 else 0.0):
    raise node.error("so3 requires gainprm[0] == -biasprm[1]", "gainprm")
  if s["dyntype"] not in ("none", "integrator"):
    raise node.error("so3 requires dyntype 'none' or 'integrator'", "dyntype")
  if trntype != TrnType.JOINT or f["jnt_type"][trnid] != JointType.BALL:
    raise node.error("so3 joint transmission requires a ball joint", "joint")
  if s["dyntype"] == "integrator":
    raise node.error("so3 actuators with dyntype 'integrator' (3 activations) are not "
                     "supported by jaxmj yet", "dyntype")
  damping = np.asarray(s["damping"], float)
  if s["armature"] or np.any(damping != 0):
    raise node.error("so3 actuators with armature or damping are not supported by jaxmj yet",
                     "armature" if s["armature"] else "damping")
  gear = np.array(_GEAR)
  gear[: len(s["gear"])] = np.asarray(s["gear"], float)[:6]
  if np.any(gear != _GEAR):
    raise node.error("so3 actuators with a gear other than '1 0 0 0 0 0' are not supported by "
                     "jaxmj yet", "gear")


def finish(node: Node, row: dict) -> None:
  """An so3 row: transmission SO3, three controls sharing ctrlrange, three gear rows."""
  row.update(trntype=TrnType.SO3, outnum=NOUT, gear=np.tile(_GEAR, (NOUT, 1)),
             ctrlrange=np.repeat(row["ctrlrange"][:1], NOUT, axis=0), ctrlspec=1)
  if row["dyntype"] != DynType.NONE or row["gaintype"] != GainType.SO3:
    raise node.error("so3 actuator with dynamics jaxmj does not run", "dyntype")


def check_forcerange(node: Node, row: dict) -> None:
  if row["forcelimited"] and row["forcerange"][0] != 0:
    raise node.error("so3 forcerange bounds the force norm, lower bound must be 0",
                     "forcerange")
