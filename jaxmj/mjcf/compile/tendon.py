"""<tendon> (fixed and spatial tendons) -> tendon_* and wrap_* fields, as MuJoCo compiles them.

Host side, numpy only. `compile_tendons` reads the paths and attributes (defaults from the
<default> classes' <tendon>), checked as MuJoCo checks them. `tendon_constants` then
evaluates what mj_setConst stores: tendon_length0 and tendon_invweight0 (J M^-1 J') at
qpos0, tendon_lengthspring at qpos_spring when springlength is -1, and the kinematic trees
each tendon touches. The path geometry is smooth/tendon.py's and smooth/wrap.py's, evaluated
with numpy.
"""

from __future__ import annotations

import types

import numpy as np

from jaxmj.mjcf.compile import engine0, plastic, setconst
from jaxmj.mjcf.spec import parse, schema
from jaxmj.mjcf.spec.parse import Defaults, Node
from jaxmj.smooth import tendon as runtime
from jaxmj.types import GeomType, JointType, WrapType

_GEOM_WRAP = {GeomType.SPHERE: WrapType.SPHERE, GeomType.CYLINDER: WrapType.CYLINDER}


def compile_tendons(root: Node, bodies: list, defaults: Defaults, compiler: dict) -> dict:
  """Primary tendon and wrap arrays, and "tendon_names" (popped by the Model builder)."""
  sections = [c for c in root.children if c.tag == "tendon"]
  for sec in sections:
    if sec.attrs:
      name = sorted(sec.attrs)[0]
      raise sec.error(f"unknown attribute '{name}'", name)
  nodes = [n for sec in sections for n in sec.children]
  ids = {
    "joint": _ids([n for b in bodies for n, _, _ in b.joints]),
    "site": _ids([s[0] for b in bodies for s in b.sites]),
    "geom": _ids([g[0] for b in bodies for g in b.geoms]),
  }
  jtype = [JointType[v["type"].upper()] for b in bodies for _, v, _ in b.joints]
  gtype = [GeomType[v["type"].upper()] for b in bodies for _, v, *_ in b.geoms]
  rows, wraps, names = [], [], []
  for node in nodes:
    v = _resolve(node, defaults)
    path = (_fixed_path(node, ids, jtype) if node.tag == "fixed"
            else _spatial_path(node, ids, gtype))
    if v["armature"] and any(p[0] in _GEOM_WRAP.values() for p in path):
      raise node.error("geom wrapping is not supported by tendon armature (as in MuJoCo: its "
                       "d/dt ten_J has no geom wraps)", "armature")
    rows.append(_row(node, v, compiler, len(wraps), len(path)))
    wraps.extend(path)
    names.append(node.attrs.get("name", ""))
  seen = {}
  for node, name in zip(nodes, names, strict=True):
    if name and name in seen:
      raise node.error(f"repeated tendon name '{name}'", "name")
    seen[name] = node
  f = _stack(rows, wraps)
  f["tendon_names"] = names
  return f


def _ids(nodes: list[Node]) -> dict:
  return {n.attrs["name"]: i for i, n in enumerate(nodes) if n.attrs.get("name")}


def _resolve(node: Node, defaults: Defaults) -> dict:
  """Schema defaults < the class's <tendon> defaults < attributes written on the tendon."""
  cls = node.attrs.get("class", "main")
  if cls not in defaults.classes:
    raise node.error(f"unknown default class '{cls}'", "class")
  values = {k: d for k, (_, d) in schema.ATTRS["tendon"].items()}
  values.update(defaults.classes[cls].get("tendon", {}))
  for name in node.attrs:
    values[name] = parse.overlay(node, name, values.get(name))
  return values


def _ref(child: Node, attr: str, kind: str, ids: dict) -> int:
  name = child.attrs.get(attr)
  if name is None:
    raise child.error(f"missing required attribute '{attr}'", attr)
  if name not in ids[kind]:
    raise child.error(f"unknown {kind} '{name}'", attr)
  return ids[kind][name]


def _fixed_path(node: Node, ids: dict, jtype: list) -> list[tuple]:
  path = []
  for child in node.children:
    j = _ref(child, "joint", "joint", ids)
    if child.get("coef") is None:
      raise child.error("missing required attribute 'coef'", "coef")
    if jtype[j] not in (JointType.HINGE, JointType.SLIDE):
      raise child.error("fixed tendon joints must be hinge or slide joints", "joint")
    if any(p[1] == j for p in path):
      raise child.error(f"joint '{child.attrs['joint']}' is repeated in the tendon", "joint")
    path.append((WrapType.JOINT, j, child.get("coef"), -1))
  if not path:
    raise node.error("a fixed tendon needs at least one joint")
  return path


def _spatial_path(node: Node, ids: dict, gtype: list) -> list[tuple]:
  """(wrap type, object id, prm, side site) per path element, checked as MuJoCo does."""
  path = []
  for child in node.children:
    if child.tag == "pulley":
      divisor = child.get("divisor")
      if divisor is None:
        raise child.error("missing required attribute 'divisor'", "divisor")
      if divisor <= 0:
        raise child.error("pulley divisor must be positive", "divisor")
      path.append((WrapType.PULLEY, -1, divisor, -1))
    elif child.tag == "spatial/site":
      path.append((WrapType.SITE, _ref(child, "site", "site", ids), 0.0, -1))
    else:
      g = _ref(child, "geom", "geom", ids)
      if gtype[g] not in _GEOM_WRAP:
        raise child.error("tendons can only wrap around sphere and cylinder geoms", "geom")
      side = -1
      if child.attrs.get("sidesite") is not None:
        side = _ref(child, "sidesite", "site", ids)
      path.append((_GEOM_WRAP[gtype[g]], g, float(side), side))
  if len(path) < 2:
    raise node.error("a spatial tendon path needs at least two objects")
  kinds = [p[0] for p in path]
  for k, t in enumerate(kinds):
    prev = kinds[k - 1] if k > 0 else None
    nxt = kinds[k + 1] if k + 1 < len(kinds) else None
    where = node.children[k]
    if t in (WrapType.SPHERE, WrapType.CYLINDER) and not (
        prev == WrapType.SITE and nxt == WrapType.SITE):
      raise where.error("a wrapping geom must sit between two sites on the tendon path")
    if t == WrapType.PULLEY and nxt != WrapType.SITE:
      raise where.error("a pulley must be followed by a site")
    if t == WrapType.SITE and prev in (None, WrapType.PULLEY) and nxt in (None,
                                                                        WrapType.PULLEY):
      raise where.error("a site on a tendon path needs a neighbor that is not a pulley")
  if kinds[0] != WrapType.PULLEY and kinds[0] != WrapType.SITE or kinds[-1] != WrapType.SITE:
    raise node.error("a spatial tendon path must start and end with a site")
  return path


def _row(node: Node, v: dict, compiler: dict, adr: int, num: int) -> dict:
  limited = _limited(node, v, "limited", "range", compiler)
  actlimited = _limited(node, v, "actuatorfrclimited", "actuatorfrcrange", compiler)
  rng = np.asarray(v["range"], float)
  if limited and rng[0] >= rng[1]:
    raise node.error("tendon range[0] must be smaller than range[1] when limited", "range")
  frc = np.asarray(v["actuatorfrcrange"], float)
  if actlimited and frc[0] >= frc[1]:
    raise node.error("actuatorfrcrange[0] must be smaller than actuatorfrcrange[1]",
                     "actuatorfrcrange")
  spring = np.asarray((-1.0, -1.0) if v["springlength"] is None else v["springlength"], float)
  if len(spring) == 1:
    spring = np.array([spring[0], spring[0]])
  if len(spring) != 2:
    raise node.error("springlength takes one or two values", "springlength")
  if spring[0] > spring[1]:
    raise node.error("springlength must be non-decreasing", "springlength")
  plastic.check_yield(node, v["springyield"], "tendon")
  stiff = _poly(v["stiffness"])
  damp = _poly(v["damping"])
  return {
    "adr": adr, "num": num, "type": 0 if node.tag == "fixed" else 1, "group": v["group"],
    "limited": limited, "actfrclimited": actlimited, "range": rng, "actfrcrange": frc,
    "solref_lim": v["solreflimit"], "solimp_lim": _solimp(v["solimplimit"]),
    "solref_fri": v["solreffriction"], "solimp_fri": _solimp(v["solimpfriction"]),
    "margin": v["margin"], "stiffness": stiff[0], "stiffnesspoly": stiff[1:],
    "damping": damp[0], "dampingpoly": damp[1:], "armature": v["armature"],
    "frictionloss": v["frictionloss"], "springyield": v["springyield"],
    "lengthspring": spring, "width": v.get("width", 0.003),
    "rgba": v.get("rgba", (0.5, 0.5, 0.5, 1.0)), "material": (node, v),
  }


def _poly(v) -> np.ndarray:
  out = np.zeros(3)
  v = np.asarray(v, float)[:3]
  out[:len(v)] = v
  return out


def _solimp(v) -> np.ndarray:
  out = np.array(schema.SOLIMP[1], float)
  v = np.asarray(v, float)[:5]
  out[:len(v)] = v
  return out


def _limited(node: Node, v: dict, attr: str, rng: str, compiler: dict) -> bool:
  if v[attr] != "auto":
    return v[attr] == "true"
  if not compiler["autolimits"]:
    if np.any(np.asarray(v[rng]) != 0):
      raise node.error(f"'{rng}' is set, so '{attr}' must be set explicitly when autolimits "
                       "is disabled", attr)
    return False
  lo, hi = np.asarray(v[rng], float)
  return bool(lo < hi)


_FLOAT = {"range": 2, "actfrcrange": 2, "solref_lim": 2, "solimp_lim": 5, "solref_fri": 2,
          "solimp_fri": 5, "margin": 0, "stiffness": 0, "stiffnesspoly": 2, "damping": 0,
          "dampingpoly": 2, "armature": 0, "frictionloss": 0, "springyield": 0,
          "lengthspring": 2, "width": 0}


def _stack(rows: list[dict], wraps: list[tuple]) -> dict:
  n = len(rows)
  f = {"ntendon": n, "nwrap": len(wraps)}
  for k in ("adr", "num", "type", "group"):
    f["tendon_" + k] = np.array([r[k] for r in rows], np.int32)
  for k in ("limited", "actfrclimited"):
    f["tendon_" + k] = np.array([r[k] for r in rows], bool)
  for k, width in _FLOAT.items():
    shape = (n, width) if width else (n,)
    f["tendon_" + k] = np.array([r[k] for r in rows], float).reshape(shape)
  f["tendon_rgba"] = np.array([r["rgba"] for r in rows], np.float32).reshape(n, 4)
  f["_tendon_material"] = [r["material"] for r in rows]  # ids in asset.finalize
  f["tendon_hasfrictionloss"] = f["tendon_frictionloss"] > 0
  f["tendon_limitboth"] = limit_both(f, "tendon")
  f["wrap_type"] = np.array([w[0] for w in wraps], np.int32)
  f["wrap_objid"] = np.array([w[1] for w in wraps], np.int32)
  f["wrap_prm"] = np.array([w[2] for w in wraps], float)
  f["wrap_sideid"] = np.array([w[3] for w in wraps], np.int32)
  return f


def limit_both(f: dict, kind: str) -> np.ndarray:
  """jnt_limitboth / tendon_limitboth: limited (hinge, slide) objects whose compiled range
  is narrower than twice the margin, so both ends can be within the margin at once."""
  lim = np.asarray(f[f"{kind}_limited"], bool)
  if kind == "jnt":
    lim = lim & np.isin(f["jnt_type"], (JointType.HINGE, JointType.SLIDE))
  rng = np.asarray(f[f"{kind}_range"], float).reshape(-1, 2)
  return lim & (rng[:, 1] - rng[:, 0] < 2 * np.asarray(f[f"{kind}_margin"], float))


# ---------------------------------------------------------------- mj_setConst


def _frames(f: dict, kin: dict) -> dict:
  """site_xpos, geom_xpos, geom_xmat from body frames (setconst.kinematics)."""
  sb, gb = np.asarray(f["site_bodyid"]), np.asarray(f["geom_bodyid"])
  site_pos = np.asarray(f["site_pos"], float).reshape(-1, 3)
  geom_pos = np.asarray(f["geom_pos"], float).reshape(-1, 3)
  gsame = f.get("geom_sameframe")
  return dict(
    site_xpos=setconst.attached_xpos(kin, sb, site_pos, f.get("site_sameframe")),
    geom_xpos=setconst.attached_xpos(kin, gb, geom_pos, gsame),
    geom_xmat=setconst.attached_xmat(kin, gb, np.asarray(f["geom_quat"], float), gsame))


def _length(f: dict, plan, kin: dict, qpos: np.ndarray):
  x = _frames(f, kin)
  size = np.asarray(f["geom_size"], float).reshape(-1, 3)
  with np.errstate(all="ignore"):
    geo = runtime.geometry(plan, x["site_xpos"], x["geom_xpos"], x["geom_xmat"], size, np)
    length = runtime.lengths(plan, f["ntendon"], qpos, np.asarray(f["wrap_prm"]),
                             x["site_xpos"], geo, np)
  return length, geo, x


def tendon_constants(f: dict) -> dict:
  """tendon_length0, tendon_invweight0, tendon_lengthspring, tendon_treenum/treeid, and
  "_tendon_J0" (ntendon, nv), the tendon Jacobian at qpos0."""
  n = f["ntendon"]
  out = {"tendon_length0": np.zeros(n), "tendon_invweight0": np.zeros(n),
         "tendon_treenum": np.zeros(n, np.int32), "tendon_treeid": np.full((n, 2), -1,
                                                                            np.int32)}
  if n == 0:
    return out
  view = types.SimpleNamespace(**{k: v for k, v in f.items() if not k.startswith("_")})
  plan = runtime.path_plan(view)
  s = setconst.Qpos0(f)
  length0, geo, x = _length(f, plan, s.kin, np.asarray(f["qpos0"], float))
  jac = np.zeros((n, len(s.cdof)))
  np.add.at(jac, (plan.fix_ten, plan.fix_dadr), np.asarray(f["wrap_prm"])[plan.fix_wrap])
  with np.errstate(all="ignore"):
    ten, b0, b1, x0, x1, scale = runtime.pieces(plan, f["site_bodyid"], f["geom_bodyid"],
                                                np.asarray(f["wrap_prm"]), x["site_xpos"],
                                                geo, np)
  for t, a, b, p0, p1, c in zip(ten, b0, b1, x0, x1, scale, strict=True):
    if c == 0:
      continue
    rel = s.point_jacobian(b, p1)[:3] - s.point_jacobian(a, p0)[:3]
    jac[t] += engine0.segment_moment(p0, p1, rel) * c  # mj_tendon's rounding
  out["tendon_length0"] = length0
  out["_tendon_J0"] = jac  # for actuator_length0 / acc0 (mjcf/actuator.py), wraps included
  out["tendon_invweight0"] = np.array(
    [w[0] for w in setconst.inverse_weights(s, [row[None] for row in jac])])
  spring = np.asarray(f["tendon_lengthspring"], float).copy()
  auto = (spring[:, 0] == -1) & (spring[:, 1] == -1)
  if np.any(auto):
    qs = np.asarray(f["qpos_spring"], float)
    kin = setconst.kinematics(s.f, qs)
    spring[auto] = _length(s.f, plan, kin, qs)[0][auto, None]
  out["tendon_lengthspring"] = spring
  out.update(_trees(f, plan, s.f["body_treeid"]))
  return out


def _trees(f: dict, plan, body_treeid: np.ndarray) -> dict:
  """tendon_treenum and the first two trees of each tendon (tendon_treeid)."""
  n = f["ntendon"]
  num, ids = np.zeros(n, np.int32), np.full((n, 2), -1, np.int32)
  for t, seen in enumerate(tendon_trees(f, body_treeid)):
    num[t] = len(seen)
    ids[t, :min(2, len(seen))] = seen[:2]
  return {"tendon_treenum": num, "tendon_treeid": ids}


def tendon_trees(f: dict, body_treeid: np.ndarray) -> list[list[int]]:
  """Kinematic trees each tendon's joints, sites and wrap geoms belong to, in path order."""
  wtype, obj = np.asarray(f["wrap_type"]), np.asarray(f["wrap_objid"])
  out = []
  for t in range(f["ntendon"]):
    seen = []
    for w in range(f["tendon_adr"][t], f["tendon_adr"][t] + f["tendon_num"][t]):
      body = {WrapType.JOINT: f["jnt_bodyid"], WrapType.SITE: f["site_bodyid"],
              WrapType.SPHERE: f["geom_bodyid"], WrapType.CYLINDER: f["geom_bodyid"]}.get(
                int(wtype[w]))
      if body is None:
        continue
      tree = int(body_treeid[body[obj[w]]])
      if tree >= 0 and tree not in seen:
        seen.append(tree)
    out.append(seen)
  return out
