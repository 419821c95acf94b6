"""<orientation> actuators and <general> with the so3 types (MuJoCo 4.0), host side.

An SO3 servo drives a rotation towards a target orientation and writes 3 outputs:
gaintype = biastype = so3, gainprm = (kp,), biasprm = (offset, -kp, -kv or dampratio),
transmission mjTRN_SO3 on a ball joint (trnid = joint, -1) or on a site relative to a
refsite (trnid = site, refsite). What mujoco 4.0.0 requires, checked by running it: a ball
joint or a site with a refsite, both types so3 with gainprm[0] == -biasprm[1], dyntype none
or integrator (3 activations, actdim 3, 0 or left out), input expmap (3 controls, the default)
or quat (4 controls, dyntype none only), and a forcerange starting at 0 (it bounds the force
norm). gear, armature and damping are stored (gear once per output) and unused at run time,
as in MuJoCo. MuJoCo reads the input keywords expmap and quat, which stand alone
(mjcf/inputs.py), as pos and vel. Without dynamics, MuJoCo 4.0 takes actdim > 1 (not
1): so many activations that nothing reads and that never change (actuation.py).
"""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.compile import engine0, frames
from jaxmj.mjcf.spec.parse import Node
from jaxmj.types import DynType, JointType, TrnType

NOUT = 3  # outputs of one SO3 actuator
_ALIASES = {"expmap": "pos", "quat": "vel"}  # so3 names of the input bits 1 and 2


def shortcut(node: Node, s: dict) -> None:
  """<orientation>: kp, and kv or dampratio (dampratio becomes kv in actuator_constants)."""
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
  inp = node.get("input") if node.get("input") is not None else s.get("input")
  s.update(gaintype="so3", biastype="so3", dyntype="none", dynprm=np.eye(1, 10)[0],
           gainprm=gain, biasprm=bias, input=inp)


def input_tokens(inp) -> list[str]:
  """The keywords of an actuator's input attribute (checked when read, mjcf/inputs.py),
  expmap and quat (which stand alone) read as pos and vel."""
  return [_ALIASES.get(t, t) for t in str(inp or "").split()]


def is_so3(s: dict) -> bool:
  return "so3" in (s["gaintype"], s["biastype"])


def check(node: Node, s: dict, f: dict, trntype: TrnType, trnid: int) -> None:
  """MuJoCo's compile errors for so3 actuators; an integrator's actdim is settled here."""
  if s["gaintype"] != "so3" or s["biastype"] != "so3":
    raise node.error("gaintype and biastype must both be 'so3'", "gaintype")
  if s["dyntype"] not in ("none", "integrator"):
    raise node.error("so3 requires dyntype 'none' or 'integrator'", "dyntype")
  gain, bias = np.asarray(s["gainprm"], float), np.asarray(s["biasprm"], float)
  if (gain[0] if len(gain) else 0.0) != -(bias[1] if len(bias) > 1 else 0.0):
    raise node.error("so3 requires gainprm[0] == -biasprm[1]", "gainprm")
  if trntype == TrnType.SITE:
    if not s.get("refsite"):
      raise node.error("so3 site transmission requires refsite", "site")
  elif trntype != TrnType.JOINT:
    raise node.error("so3 requires site or ball joint transmission", "gaintype")
  elif f["jnt_type"][trnid] != JointType.BALL:
    raise node.error("so3 joint transmission requires a ball joint", "joint")
  if s["dyntype"] == "integrator":
    if s["actdim"] not in (0, NOUT) and s["actdim"] >= 0:  # negative: left out
      raise node.error("so3 integrator requires actdim 3", "actdim")
    s["actdim"] = -1  # one activation per output, set in finish
  tokens = input_tokens(s.get("input"))
  if tokens not in ([], ["pos"], ["vel"]):
    raise node.error("so3 input must be expmap or quat", "input")
  if s["dyntype"] == "integrator" and tokens == ["vel"]:
    raise node.error("so3 quat input requires dyntype 'none'", "input")


def finish(node: Node, row: dict) -> None:
  """An so3 row: transmission SO3, 3 (expmap) or 4 (quat) controls sharing ctrlrange, the
  gear once per output, 3 activations for an integrator. Without dynamics, actdim > 1 gives
  that many inert activations (as mujoco 4.0.0: held, act_dot 0, read by nothing)."""
  quat = row["ctrlspec"] == 2
  row.update(trntype=TrnType.SO3, outnum=NOUT, gear=np.tile(row["gear"], (NOUT, 1)),
             ctrlrange=np.repeat(row["ctrlrange"][:1], 4 if quat else NOUT, axis=0),
             ctrlspec=2 if quat else 1,
             actnum=NOUT if row["dyntype"] == DynType.INTEGRATOR else row["actnum"])


def check_forcerange(node: Node, row: dict) -> None:
  if row["forcelimited"] and row["forcerange"][0] != 0:
    raise node.error("so3 forcerange bounds the force norm, lower bound must be 0",
                     "forcerange")


def _rotation_vector(q: np.ndarray) -> np.ndarray:
  """log of a unit quaternion as a rotation vector, angle in [-pi, pi] (mju_quat2Vel)."""
  sin_half = np.linalg.norm(q[1:])
  if sin_half < 1e-15:
    return np.zeros(3)
  angle = 2 * np.arctan2(sin_half, q[0])
  if angle > np.pi:
    angle -= 2 * np.pi
  return q[1:] / sin_half * angle


def transmission0(f: dict, s, tid: int, ref: int) -> tuple[np.ndarray, np.ndarray]:
  """(length (3,), moment (3, nv)) at qpos0: the joint's rotation vector and the identity on
  its dofs, or log(qr^-1 qs) of the two sites and S' (jacr_site - jacr_refsite)."""
  nv = len(s.cdof)
  if ref < 0:
    da, qa = f["jnt_dofadr"][tid], f["jnt_qposadr"][tid]
    moment = np.zeros((NOUT, nv))
    moment[:, da:da + 3] = np.eye(3)
    return _rotation_vector(frames.normalize_quat(np.asarray(f["qpos0"], float)[qa:qa + 4])), \
        moment
  pos, mat, quat = engine0.site_frame(f, s, tid)
  rpos, _, rquat = engine0.site_frame(f, s, ref)
  jac = s.point_jacobian(int(f["site_bodyid"][tid]), pos)[3:]
  rjac = s.point_jacobian(int(f["site_bodyid"][ref]), rpos)[3:]
  rel = frames.quat_mul(rquat * np.array([1.0, -1, -1, -1]), quat)
  return _rotation_vector(rel), mat.T @ (jac - rjac)
