"""Which joints and tendons inherit armature and damping from their actuators (host side).

MuJoCo 4.0 reflects an actuator's `armature`, `damping` and `dampingpoly` (scaled by gear[0]
squared) onto the joint or tendon it drives. The compiler records the driving actuator in
jnt_actuatorid / tendon_actuatorid: -1 when no actuator reflects anything onto the target
(actuators with zero armature and damping do not count), the actuator id when exactly one
does, -2 when several do (the engine then sums over all of them). jaxmj/smooth/armature.py reads
these static fields at run time.

Tendon armature (the tendon's own or an actuator's) needs d/dt ten_J, which MuJoCo only
has for fixed tendons and site/pulley paths: a tendon that wraps around a geom is rejected,
as in MuJoCo.
"""

from __future__ import annotations

import numpy as np

from jaxmj.types import TrnType, WrapType

_JOINT_TRN = (TrnType.JOINT, TrnType.JOINTINPARENT)


def actuator_targets(f: dict) -> dict:
  """jnt_actuatorid (njnt,), tendon_actuatorid (ntendon,) int32; jaxmj's static
  tendon_hasarmature (ntendon,) bool; and "_tendon_armature_all" (ntendon,), the tendon's
  armature plus what its actuators reflect, for the qpos0 constants of setconst."""
  njnt, ntendon, nu = len(f["jnt_type"]), f.get("ntendon", 0), f.get("nactuator", 0)
  jnt_id = np.full(njnt, -1, np.int32)
  ten_id = np.full(ntendon, -1, np.int32)
  ten_arm = np.array(f["tendon_armature"], float) if ntendon else np.zeros(0)
  for k in range(nu):
    arm = float(f["actuator_armature"][k])
    if not (arm or f["actuator_damping"][k] or np.any(f["actuator_dampingpoly"][k])):
      continue
    trn, target = f["actuator_trntype"][k], int(f["actuator_trnid"][k][0])
    if trn in _JOINT_TRN:
      ids = jnt_id
    elif trn == TrnType.TENDON:
      ids = ten_id
      gear = float(f["actuator_gear"][f["actuator_outadr"][k]][0])
      ten_arm[target] += arm * gear * gear
      if arm and _wraps_geom(f, target):
        raise f["_actuator_nodes"][k].error(
          "actuator armature on a tendon that wraps around a geom is not supported "
          "(MuJoCo: geom wrapping not supported)", "armature")
    else:
      continue
    ids[target] = k if ids[target] == -1 else -2
  has = ten_arm != 0
  if ntendon:
    has |= np.asarray(f["tendon_armature"]) != 0
  return {"jnt_actuatorid": jnt_id, "tendon_actuatorid": ten_id, "tendon_hasarmature": has,
          "_tendon_armature_all": ten_arm}


def _wraps_geom(f: dict, t: int) -> bool:
  adr, num = int(f["tendon_adr"][t]), int(f["tendon_num"][t])
  kinds = np.asarray(f["wrap_type"])[adr:adr + num]
  return bool(np.any((kinds == WrapType.SPHERE) | (kinds == WrapType.CYLINDER)))
