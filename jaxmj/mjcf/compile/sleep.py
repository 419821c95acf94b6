"""<body sleep>: MuJoCo 4.0's per-tree sleep policy, `tree_sleep_policy` (ntree,).

The policy only matters when the sleep flag is on (`<flag sleep="enable"/>`), which jaxmj
refuses by name at `forward` (jaxmj/dynamics/flags.py); with the flag off mujoco 4.0.0 simulates
every policy alike (probed), so the attribute is taken and stored as MuJoCo stores it:
- `sleep` is auto, never, allowed or init; anything but auto is allowed only on the root
  body of a kinematic tree (a body with dofs whose parent is static), else MuJoCo's error;
- a tree left on auto becomes AUTO_NEVER when an actuator acts on it (through its joint,
  jointinparent, site and refsite, cranksite and slidersite, body, or any tree its tendon
  touches), or a tendon couples it to more than one other tree, or to one other tree with a
  passive force (stiffness or damping, linear or polynomial), AUTO_ALLOWED otherwise
  (mjtSleepPolicy values, probed on mujoco 4.0.0: a tendon to the world, or a 2-tree tendon
  with only a range, friction loss or armature, leaves its trees allowed).
"""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.compile.tendon import tendon_trees
from jaxmj.types import TrnType

AUTO, AUTO_NEVER, AUTO_ALLOWED = 0, 1, 2
POLICY = {"auto": AUTO, "never": 3, "allowed": 4, "init": 5}


def tree_sleep_policy(bodies: list, f: dict) -> dict:
  """{"tree_sleep_policy": (ntree,) int32}; raises MuJoCo's error for a policy written on a
  body that is not a movable root."""
  treeid, parent = np.asarray(f["body_treeid"]), np.asarray(f["body_parentid"])
  policy = np.full(f["ntree"], AUTO, np.int32)
  for bid, body in enumerate(bodies[1:], 1):
    given = body.node.get("sleep") or "auto"
    if given == "auto":
      continue
    if treeid[bid] < 0 or treeid[parent[bid]] >= 0:
      raise body.node.error("sleep policy only allowed for movable root bodies", "sleep")
    policy[treeid[bid]] = POLICY[given]
  never = np.zeros(f["ntree"], bool)
  never[[t for t in _actuated_trees(f, treeid) if t >= 0]] = True
  never[_coupled_trees(f, treeid)] = True
  auto = policy == AUTO
  policy[auto] = np.where(never[auto], AUTO_NEVER, AUTO_ALLOWED)
  return {"tree_sleep_policy": policy}


def _coupled_trees(f: dict, treeid: np.ndarray) -> list[int]:
  """Trees of the tendons that span three or more trees, or two with a passive force."""
  if not f.get("ntendon", 0):
    return []
  passive = np.zeros(f["ntendon"], bool)
  for k in ("stiffness", "stiffnesspoly", "damping", "dampingpoly"):
    v = np.asarray(f.get("tendon_" + k, np.zeros(f["ntendon"])))
    passive |= np.any(v.reshape(f["ntendon"], -1) != 0, axis=1)
  return [t for trees, p in zip(tendon_trees(f, treeid), passive)
          if len(trees) > 2 or (len(trees) == 2 and p) for t in trees]


def _actuated_trees(f: dict, treeid: np.ndarray) -> list[int]:
  """Trees (or -1 for static targets) that some actuator's transmission reaches."""
  trntype = np.asarray(f.get("actuator_trntype", np.zeros(0, np.int32)))
  trnid = np.asarray(f.get("actuator_trnid", np.zeros((0, 2), np.int32))).reshape(-1, 2)
  tendons = tendon_trees(f, treeid) if f.get("ntendon", 0) else []
  out = []
  for typ, (a, b) in zip(trntype, trnid):
    if typ in (TrnType.JOINT, TrnType.JOINTINPARENT) or (typ == TrnType.SO3 and b < 0):
      out.append(treeid[f["jnt_bodyid"][a]])
    elif typ == TrnType.TENDON:
      out += tendons[a]
    elif typ == TrnType.BODY:
      out.append(treeid[a])
    else:  # site (with refsite), slider-crank, so3 on a site and refsite: their sites
      out += [treeid[f["site_bodyid"][s]] for s in (a, b) if s >= 0]
  return out
