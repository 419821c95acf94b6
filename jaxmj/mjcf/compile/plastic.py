"""Spring plasticity (`springyield`) and joint `springdamper`, compiled as MuJoCo 4.0 does.

Host side, numpy only.

- springyield (joints and tendons): the largest spring displacement that stays elastic.
  For hinge and ball joints it is an angle (degrees under compiler angle="degree"); free
  joints cannot have one; negative values are errors. Each joint or tendon with a positive
  springyield gets a slot in mjData.plastic (jnt_plasticadr, tendon_plasticadr): 1 for a
  hinge or slide (its spring reference), 4 for a ball (reference quaternion), 2 for a tendon
  (its spring rest range). key_plastic holds those slots per keyframe: the model's springs'
  references unless the <key plastic> attribute gives a prefix of them (ball quaternions
  renormalized).
- springdamper="timeconst dampratio" (joints): both must be positive when given. MuJoCo 4.0
  then replaces the joint's linear stiffness and its dofs' linear damping with those of a
  mass-spring-damper of that time constant and damping ratio (solref's convention) on the
  joint's inertia at qpos0, M = 1 / the mean dof_invweight0 over the joint's dofs (actuator
  and tendon armature included): stiffness = M / (timeconst dampratio)^2, damping =
  2 M / timeconst (measured; quadratic and cubic terms are kept).
"""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.compile import frames
from jaxmj.mjcf.spec.parse import Node
from jaxmj.types import JOINT_NV, JointType

_SLOTS = {JointType.HINGE: 1, JointType.SLIDE: 1, JointType.BALL: 4}


def check_yield(node: Node, value: float, kind: str) -> None:
  """MuJoCo's check of a joint's or tendon's springyield."""
  if value < 0:
    raise node.error(f"springyield cannot be negative in {kind}", "springyield")


def joint_attrs(node: Node, v: dict, jtype: JointType, deg: bool) -> tuple[float, np.ndarray]:
  """(springyield in rad or m, springdamper (2,)) of one joint, checked as MuJoCo does."""
  value = float(v.get("springyield", 0.0))
  check_yield(node, value, "joint")
  if value and jtype == JointType.FREE:
    raise node.error("springyield should not be defined in free joint", "springyield")
  if deg and jtype in (JointType.HINGE, JointType.BALL):
    value = float(np.deg2rad(value))
  damper = np.asarray(v.get("springdamper", (0.0, 0.0)), float)
  if np.any(damper != 0) and np.any(damper <= 0):
    raise node.error("when defined, springdamper values must be positive", "springdamper")
  return value, damper


def compile_plastic(f: dict) -> dict:
  """jnt_plasticadr, tendon_plasticadr, nplastic; jnt_stiffness and dof_damping with
  springdamper applied (needs dof_invweight0, so after setconst.mass_constants). Pops the
  per-joint "_springdamper" (njnt, 2)."""
  out = {}
  damper = np.asarray(f.pop("_springdamper"), float).reshape(-1, 2)
  jtype = np.asarray(f["jnt_type"])
  on = np.flatnonzero(np.any(damper != 0, axis=1))
  if len(on):
    stiffness = np.array(f["jnt_stiffness"], float)
    damping = np.array(f["dof_damping"], float)
    invweight = np.asarray(f["dof_invweight0"], float)
    for j in on:
      dofs = f["jnt_dofadr"][j] + np.arange(JOINT_NV[JointType(jtype[j])])
      inertia = 1.0 / np.mean(invweight[dofs])
      timeconst, dampratio = damper[j]
      stiffness[j] = inertia / (timeconst * timeconst * dampratio * dampratio)
      damping[dofs] = 2.0 * inertia / timeconst
    out.update(jnt_stiffness=stiffness, dof_damping=damping)
  adr, n = [], 0
  for t, y in zip(jtype, np.asarray(f["jnt_springyield"], float)):
    adr.append(n if y > 0 else -1)
    n += _SLOTS[JointType(t)] if y > 0 else 0
  tadr = []
  for y in np.asarray(f.get("tendon_springyield", np.zeros(0)), float):
    tadr.append(n if y > 0 else -1)
    n += 2 if y > 0 else 0
  out.update(jnt_plasticadr=np.asarray(adr, np.int32), tendon_plasticadr=np.asarray(tadr,
                                                                                    np.int32),
             nplastic=n)
  return out


def initial(f: dict) -> np.ndarray:
  """(nplastic,) mjData.plastic after mj_resetData: each spring's compiled reference
  (qpos_spring of the joint, tendon_lengthspring of the tendon)."""
  out = np.zeros(f["nplastic"])
  for j, a in enumerate(f["jnt_plasticadr"]):
    if a >= 0:
      q = f["jnt_qposadr"][j]
      k = _SLOTS[JointType(f["jnt_type"][j])]
      out[a:a + k] = np.asarray(f["qpos_spring"], float)[q:q + k]
  for t, a in enumerate(f["tendon_plasticadr"]):
    if a >= 0:
      out[a:a + 2] = np.asarray(f["tendon_lengthspring"], float)[t]
  return out


def key_plastic(root: Node, f: dict, nkey: int) -> np.ndarray:
  """(nkey, nplastic) key_plastic: the <key plastic> prefix over the initial values."""
  nodes = [k for kf in root.children if kf.tag == "keyframe" for k in kf.children]
  base = initial(f)
  quats = [a for j, a in enumerate(f["jnt_plasticadr"])
           if a >= 0 and f["jnt_type"][j] == JointType.BALL]
  out = np.tile(base, (nkey, 1))
  for i, node in enumerate(nodes[:nkey]):
    given = node.get("plastic")
    if given is None:
      continue
    if len(given) > len(base):
      raise node.error(f"plastic has {len(given)} values, expected {len(base)}", "plastic")
    out[i, :len(given)] = given
    for a in quats:
      out[i, a:a + 4] = frames.normalize_quat(out[i, a:a + 4])
  return out
