"""<equality> -> eq_* Model fields, laid out as MuJoCo 4.0's compiler writes them (host side).

eq_data (NEQDATA = 12 per constraint) starts from MuJoCo's shared default
[0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0] (polycoef "0 1 0 0 0", torquescale 1) and is filled per
type: connect (bodies) anchor1, anchor2 (body2's frame, so the constraint holds at qpos0);
connect (sites) all zeros; weld (bodies) anchor, relpos, relquat, torquescale and
eq_data[11] = 1 when the relative pose was taken from qpos0; weld (sites) only torquescale
over the default; joint and tendon polycoef. eq_objtype is body or site for connect and weld,
0 for joint and tendon equalities, as MuJoCo stores it.
"""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.compile import frames, setconst
from jaxmj.mjcf.spec import parse, schema
from jaxmj.mjcf.spec.parse import Defaults, Node
from jaxmj.types import NEQDATA, EqType, JointType, ObjType

_TYPES = {"connect": EqType.CONNECT, "weld": EqType.WELD, "equality/joint": EqType.JOINT,
          "equality/tendon": EqType.TENDON}


def _resolve(node: Node, defaults: Defaults) -> dict:
  """Attributes of an equality element: schema < its class's <equality> < written."""
  cls = node.attrs.get("class", "main")
  if cls not in defaults.classes:
    raise node.error(f"unknown default class '{cls}'", "class")
  values = {name: default for name, (_, default) in schema.ATTRS[node.tag].items()}
  values.update(defaults.classes[cls].get("equality", {}))
  for name in node.attrs:
    values[name] = parse.overlay(node, name, values[name])
  return values


def _ids(bodies, f: dict) -> dict:
  """name -> id tables of the objects equalities refer to."""
  out = {"body": {"world": 0}, "site": {}, "joint": {}, "tendon": {}}
  for bid, b in enumerate(bodies[1:], 1):
    if b.name:
      out["body"].setdefault(b.name, bid)
  sites = [s[0] for b in bodies for s in b.sites]
  joints = [j[0] for b in bodies for j in b.joints]
  for kind, nodes in (("site", sites), ("joint", joints)):
    for i, n in enumerate(nodes):
      if n.attrs.get("name"):
        out[kind].setdefault(n.attrs["name"], i)
  for i, name in enumerate(f.get("tendon_names", ())):
    if name:
      out["tendon"].setdefault(name, i)
  return out


def _object(node: Node, attr: str, kind: str, ids: dict) -> int:
  name = node.attrs.get(attr)
  if name not in ids[kind]:
    raise node.error(f"unknown {kind} '{name}' in equality constraint", attr)
  return ids[kind][name]


def _pair(node: Node, kind: str, ids: dict, required2: bool) -> tuple[int, int]:
  """Ids of the two objects named by `kind`1 / `kind`2; a missing second is -1."""
  a1, a2 = f"{kind}1", f"{kind}2"
  if node.attrs.get(a1) is None:
    raise node.error(f"missing required attribute '{a1}'", a1)
  if required2 and node.attrs.get(a2) is None:
    raise node.error(f"'{a1}' needs '{a2}' as well", a2)
  o1 = _object(node, a1, kind, ids)
  o2 = _object(node, a2, kind, ids) if node.attrs.get(a2) is not None else -1
  if o1 == o2:
    raise node.error(f"{kind} '{node.attrs[a1]}' is repeated in the equality constraint", a2)
  return o1, o2


def _check_form(node: Node, bodyform: tuple[str, ...]) -> bool:
  """True for the site form; errors when site and body attributes are mixed or missing."""
  sites = [a for a in ("site1", "site2") if a in node.attrs]
  body = [a for a in bodyform if a in node.attrs]
  if sites and body:
    raise node.error("give either site1/site2 or the body form "
                     f"({', '.join(bodyform)}), not both", body[0])
  if not sites and "body1" not in node.attrs:
    raise node.error("missing required attribute 'body1' (or site1 and site2)", "body1")
  if node.tag == "connect" and not sites and "anchor" not in node.attrs:
    raise node.error("missing required attribute 'anchor'", "anchor")
  return bool(sites)


def _body_form(node, v, ids, kin, data) -> tuple[int, int]:
  """Connect / weld between bodies: fills eq_data from the poses at qpos0."""
  b1 = _object(node, "body1", "body", ids)
  b2 = _object(node, "body2", "body", ids) if node.attrs.get("body2") is not None else 0
  if b1 == b2:
    raise node.error(f"body '{node.attrs['body1']}' is repeated in the equality constraint",
                     "body2")
  x1, r1, q1 = kin["xpos"][b1], kin["xmat"][b1], kin["xquat"][b1]
  x2, r2, q2 = kin["xpos"][b2], kin["xmat"][b2], kin["xquat"][b2]
  anchor = np.asarray(v["anchor"] if v["anchor"] is not None else np.zeros(3), float)
  data[0:3] = anchor
  if node.tag == "connect":
    data[3:6] = r2.T @ (x1 + r1 @ anchor - x2)
    data[6:10] = 0.0
    return b1, b2
  relpose = np.asarray(v["relpose"], float)
  if np.all(relpose[3:] == 0):
    data[3:6] = r1.T @ (x2 + r2 @ anchor - x1)
    data[6:10] = frames.quat_mul(q1 * np.array([1, -1, -1, -1]), q2)
    data[11] = 1.0
  else:
    data[3:6] = relpose[:3]
    data[6:10] = frames.normalize_quat(relpose[3:])
  data[10] = v["torquescale"]
  return b1, b2


def compile_equality(root: Node, bodies, defaults: Defaults, f: dict) -> dict:
  """eq_* fields (and eq_names for the names buffer) from every <equality> section.

  Needs the body, site and joint arrays and qpos0 in `f` (tendon equalities also
  f["tendon_names"] from the tendon compiler).
  """
  nodes = []
  for sec in (c for c in root.children if c.tag == "equality"):
    if sec.attrs:
      name = next(iter(sec.attrs))
      raise sec.error(f"unknown attribute '{name}'", name)
    nodes += sec.children
  ids = _ids(bodies, f)
  kin = setconst.kinematics(f, np.asarray(f["qpos0"], float)) if nodes else None
  rows = []
  seen = set()
  for node in nodes:
    v = _resolve(node, defaults)
    name = node.attrs.get("name", "")
    if name and name in seen:
      raise node.error(f"repeated equality name '{name}'", "name")
    seen.add(name)
    eqtype = _TYPES[node.tag]
    data = np.zeros(NEQDATA)
    data[1], data[10] = 1.0, 1.0
    objtype = ObjType.UNKNOWN
    if eqtype in (EqType.CONNECT, EqType.WELD):
      bodyform = ("body1", "body2", "anchor") + (("relpose",) if eqtype == EqType.WELD else ())
      if _check_form(node, bodyform):
        o1, o2 = _pair(node, "site", ids, required2=True)
        objtype = ObjType.SITE
        if eqtype == EqType.CONNECT:
          data[:] = 0.0
        else:
          data[10] = v["torquescale"]
      else:
        o1, o2 = _body_form(node, v, ids, kin, data)
        objtype = ObjType.BODY
    else:
      kind = "joint" if eqtype == EqType.JOINT else "tendon"
      o1, o2 = _pair(node, kind, ids, required2=False)
      if kind == "joint":
        for o, attr in ((o1, "joint1"), (o2, "joint2")):
          if o >= 0 and f["jnt_type"][o] not in (JointType.HINGE, JointType.SLIDE):
            raise node.error("only hinge and slide joints can be used in a joint equality",
                             attr)
      data[:5] = v["polycoef"]
    rows.append((eqtype, o1, o2, objtype, v["active"], v["solref"], v["solimp"], data, name))
  return _arrays(rows)


def _arrays(rows: list) -> dict:
  col = lambda k: [r[k] for r in rows]
  n = len(rows)
  solimp = np.zeros((n, 5))
  for i, s in enumerate(col(6)):
    solimp[i] = np.asarray(schema.SOLIMP[1], float)
    solimp[i, : len(s)] = s
  return {
    "neq": n, "eq_type": np.array(col(0), np.int32), "eq_obj1id": np.array(col(1), np.int32),
    "eq_obj2id": np.array(col(2), np.int32), "eq_objtype": np.array(col(3), np.int32),
    "eq_active0": np.array(col(4), bool),
    "eq_solref": np.array(col(5), float).reshape(n, 2), "eq_solimp": solimp,
    "eq_data": np.array(col(7), float).reshape(n, NEQDATA), "eq_names": col(8),
  }

