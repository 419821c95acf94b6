"""The body tree of a validated MJCF tree: bodies in depth-first order with their joints,
geoms, sites, cameras and lights placed in the body frame (<frame>s folded in), and the
per-object arrays (body_*, jnt_*, dof_*, geom_*, site_*) named as mjModel's fields."""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.mjcf.assets import asset
from jaxmj.mjcf.compile import camlight, frames, plastic
from jaxmj.mjcf.spec import schema
from jaxmj.mjcf.spec.parse import Defaults, Node
from jaxmj.types import JOINT_NV, GeomType, JointType

IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


@dataclasses.dataclass
class Body:
  """One <body> (or the world) with what it holds, in the order MuJoCo numbers them."""

  node: Node | None
  name: str
  parent: int
  pos: np.ndarray
  quat: np.ndarray
  written: tuple = ()  # (pos, quat) as written, before enclosing <frame>s are applied
  mocap: bool = False
  gravcomp: float = 0.0
  inertial: Node | None = None
  joints: list = dataclasses.field(default_factory=list)  # (node, values, is_free)
  geoms: list = dataclasses.field(default_factory=list)  # (node, values, pos, quat)
  sites: list = dataclasses.field(default_factory=list)
  camlights: list = dataclasses.field(default_factory=list)  # camlight.placed's tuples
  inertia: tuple | None = None  # final (mass, ipos, inertia, iquat): discard/fuse/align.py


def walk_bodies(root: Node, defaults: Defaults, compiler: dict) -> list[Body]:
  """Every body, the world first, in depth-first document order (MuJoCo's body ids)."""
  world = next((c for c in root.children if c.tag == "worldbody"), None)
  bodies = [Body(world, "world", 0, np.zeros(3), IDENTITY.copy())]
  for node in [c for c in root.children if c.tag == "worldbody"]:
    _walk(node, 0, np.zeros(3), IDENTITY, None, bodies, defaults, compiler)
  return bodies


def _walk(node, body_id, fpos, fquat, childclass, bodies, defaults, compiler) -> None:
  """Visits children in document order; frames fold their pose into their children."""
  body = bodies[body_id]
  for child in node.children:
    tag = child.tag
    if tag in ("body", "frame"):
      defaults.check_class(child, "childclass")
      vals = {k: child.get(k) for k in child.attrs}
      is_body = tag == "body"  # a frame's quat is normalized after composing (frames.placed)
      written = (vec(vals.get("pos"), 3), frames.orientation(vals, compiler, child, is_body))
      pos, quat = (frames.compose if is_body else frames.placed)(fpos, fquat, *written)
      cls = child.attrs.get("childclass", childclass)
      if tag == "frame":
        _walk(child, body_id, pos, quat, cls, bodies, defaults, compiler)
        continue
      new = Body(child, child.attrs.get("name", ""), body_id, pos, quat, written,
                  mocap=bool(vals.get("mocap", False)), gravcomp=vals.get("gravcomp") or 0.0)
      if new.mocap and body_id != 0:
        raise child.error("mocap bodies must be children of the world body", "mocap")
      bodies.append(new)
      _walk(child, len(bodies) - 1, np.zeros(3), IDENTITY, cls, bodies, defaults, compiler)
    elif tag in ("inertial", "worldbody/inertial"):  # the latter: a URDF world link's
      body.inertial = child  # at most one: parse checks schema.UNIQUE
    elif tag == "freejoint":
      body.joints.append((child, {"type": "free", "group": child.get("group") or 0}, True))
    elif tag == "joint":
      body.joints.append((child, defaults.resolve(child, childclass), False))
    elif tag in ("camera", "light"):
      body.camlights.append(camlight.placed(child, defaults.resolve(child, childclass),
                                            compiler, fpos, fquat))
    elif tag in ("geom", "site"):
      vals = defaults.resolve(child, childclass)
      if tag == "site" and vals.get("fromto") is not None and vals["type"] == "sphere":
        raise child.error("fromto is not allowed for sphere sites", "fromto")
      pos, quat, size = _placement(child, vals, compiler)
      pos, quat = (frames.compose if tag == "geom" else frames.placed)(fpos, fquat, pos, quat)
      (body.geoms if tag == "geom" else body.sites).append((child, vals, pos, quat, size))


def vec(v, n: int) -> np.ndarray:
  return np.zeros(n) if v is None else np.asarray(v, float)


_SIZES_NEEDED = {"sphere": 1, "capsule": 2, "cylinder": 2, "ellipsoid": 3, "box": 3,
                 "plane": 0}


def _placement(node: Node, vals: dict, compiler: dict):
  """Pose and 3-vector size of a geom or site, with fromto applied."""
  # Unset sizes keep the element's schema default (zeros for geoms, 0.005 for sites).
  size = np.array(schema.ATTRS[node.tag]["size"][1], float)
  given = np.asarray(vals["size"], float)[:3]
  size[: len(given)] = given
  gtype = vals["type"]
  if gtype in ("hfield", "mesh", "sdf") or vals.get("mesh") is not None:
    return asset.raw_placement(node, vals, compiler)  # sized by its asset
  fromto = vals.get("fromto")
  if fromto is not None:
    if gtype not in ("capsule", "cylinder", "ellipsoid", "box"):
      raise node.error(f"fromto is not allowed for type '{gtype}'", "fromto")
    if np.any(np.asarray(vals["pos"]) != 0):
      raise node.error("fromto and a nonzero pos cannot both be given", "fromto")
    pos, quat, half = frames.fromto(fromto)
    if half < MINVAL:
      raise node.error("fromto has zero length", "fromto")
    if gtype in ("capsule", "cylinder"):
      size[1] = half
    else:
      # Boxes and ellipsoids get a square cross-section of half-width size[0].
      size[1], size[2] = size[0], half
  else:
    pos = np.asarray(vals["pos"], float)
    quat = frames.orientation(vals, compiler, node, node.tag == "geom")
  if gtype == "plane" and size[2] <= 0:
    raise node.error("size 2 (grid spacing) must be positive for type 'plane'", "size")
  need = _SIZES_NEEDED[gtype] - (1 if fromto is not None and gtype in ("capsule", "cylinder")
                                 else 0)
  for k in range(need):
    if size[k] <= 0 and not (fromto is not None and k == 2):
      raise node.error(f"size {k} must be positive for type '{gtype}'", "size")
  return pos, quat, size


# ---------------------------------------------------------------- arrays


def body_arrays(bodies: list[Body], defaults: Defaults, compiler: dict) -> dict:
  """Primary per-object arrays, named as mjModel fields."""
  nbody = len(bodies)
  deg = compiler["angle"] == "degree"
  f: dict = {"nbody": nbody}
  f["body_parentid"] = np.array([b.parent for b in bodies], np.int32)
  f["body_pos"] = np.array([b.pos for b in bodies])
  f["body_quat"] = np.array([b.quat for b in bodies])
  mocap_ids = np.cumsum([b.mocap for b in bodies]) - 1
  f["body_mocapid"] = np.array([m if b.mocap else -1 for b, m in zip(bodies, mocap_ids)],
                               np.int32)
  f["body_gravcomp"] = np.array([b.gravcomp for b in bodies])

  jnt, dof = _joints(bodies, deg, compiler)
  f.update(jnt)
  f.update(dof)
  f.update(attached(bodies, "geom"))
  f.update(attached(bodies, "site"))
  for kind, num in (("jnt", "joints"), ("geom", "geoms"), ("site", "sites")):
    counts = np.array([len(getattr(b, num)) for b in bodies], np.int32)
    f[f"body_{kind}num"] = counts
    f[f"body_{kind}adr"] = np.where(counts > 0, np.cumsum(counts) - counts, -1).astype(np.int32)
  dofnum = np.zeros(nbody, np.int32)
  np.add.at(dofnum, f["dof_bodyid"], 1)
  f["body_dofnum"] = dofnum
  f["body_dofadr"] = np.where(dofnum > 0, np.cumsum(dofnum) - dofnum, -1).astype(np.int32)
  return f


def _joints(bodies: list[Body], deg: bool, compiler: dict) -> tuple[dict, dict]:
  """jnt_* (with qpos0, qpos_spring, nq, njnt) and dof_* (with nv) arrays: each body's joints
  in document order, each joint's dofs in turn; a dof's parent is the previous dof of its
  body, or the last dof of the nearest ancestor body that has one (-1 for none)."""
  j = {k: [] for k in ("jnt_type", "jnt_bodyid", "jnt_qposadr", "jnt_dofadr", "jnt_group",
                       "jnt_limited", "jnt_actfrclimited", "jnt_actgravcomp", "jnt_solref",
                       "jnt_solimp", "jnt_pos", "jnt_axis", "jnt_stiffness", "jnt_stiffnesspoly",
                       "jnt_range", "jnt_actfrcrange", "jnt_margin", "qpos0", "qpos_spring",
                       "jnt_springyield", "_springdamper")}
  d = {k: [] for k in ("dof_bodyid", "dof_jntid", "dof_parentid", "dof_solref", "dof_solimp",
                       "dof_frictionloss", "dof_armature", "dof_damping",
                       "dof_dampingpoly")}
  last_dof = {0: -1}
  for bid, body in enumerate(bodies):
    parent_last = last_dof[body.parent]
    for node, v, is_free in body.joints:
      jtype = JointType[v["type"].upper()]
      _check_joint_body(node, jtype, body)
      jid = len(j["jnt_type"])
      j["jnt_type"].append(jtype)
      j["jnt_bodyid"].append(bid)
      j["jnt_qposadr"].append(len(j["qpos0"]))
      j["jnt_dofadr"].append(len(d["dof_bodyid"]))
      j["jnt_group"].append(v.get("group", 0))
      full = v if not is_free else {**{k: dv for k, (_, dv) in schema.ATTRS["joint"].items()},
                                    **v}
      row, damping = _joint_row(node, full, jtype, deg, compiler)
      for k, x in row.items():
        j[k].append(x)
      q0, qs = _joint_qpos0(full, jtype, body, deg)
      j["qpos0"].extend(q0)
      j["qpos_spring"].extend(qs)
      for _ in range(JOINT_NV[jtype]):
        d["dof_bodyid"].append(bid)
        d["dof_jntid"].append(jid)
        d["dof_parentid"].append(parent_last)
        parent_last = len(d["dof_bodyid"]) - 1
        d["dof_solref"].append(vec(full["solreffriction"], 2))
        d["dof_solimp"].append(solimp(full["solimpfriction"]))
        d["dof_frictionloss"].append(full["frictionloss"])
        d["dof_armature"].append(full["armature"])
        d["dof_damping"].append(damping[0])
        d["dof_dampingpoly"].append(damping[1:])
    last_dof[bid] = parent_last
  jf = {k: _stack(k, v) for k, v in j.items()}
  df = {k: _stack(k, v) for k, v in d.items()}
  jf["nq"], jf["njnt"], df["nv"] = len(j["qpos0"]), len(j["jnt_type"]), len(d["dof_bodyid"])
  return jf, df


def _check_joint_body(node: Node, jtype: JointType, body: Body) -> None:
  """A free joint only on a child of the world, alone; no joint on a mocap body."""
  attr = "type" if node.tag == "joint" else None  # <freejoint> has no 'type'
  if jtype == JointType.FREE and body.parent != 0:
    raise node.error("free joints are only allowed in bodies that are children of the "
                     "world", attr)
  if jtype == JointType.FREE and len(body.joints) > 1:
    raise node.error("a body with a free joint cannot have other joints", attr)
  if body.mocap:
    raise node.error("mocap bodies cannot have joints (they are fixed children of the "
                     "world)")


def _joint_row(node: Node, full: dict, jtype: JointType, deg: bool,
               compiler: dict) -> tuple[dict, np.ndarray]:
  """One joint's limits, frame, springs and margin ({jnt_* field: value}, MuJoCo's units:
  radians for a hinge's or ball's range when `deg`), and its damping polynomial (3,)."""
  row = {}
  limited, actlimited = _limited(node, full, jtype, compiler)
  row["jnt_limited"], row["jnt_actfrclimited"] = limited, actlimited
  row["jnt_actgravcomp"] = bool(full["actuatorgravcomp"])
  row["jnt_solref"] = vec(full["solreflimit"], 2)
  row["jnt_solimp"] = solimp(full["solimplimit"])
  # MuJoCo ignores the anchor of free joints and the axis of free and ball joints.
  row["jnt_pos"] = vec(full["pos"], 3) if jtype != JointType.FREE else np.zeros(3)
  axis = vec(full["axis"], 3) if JOINT_NV[jtype] == 1 else np.array([0.0, 0.0, 1.0])
  if np.linalg.norm(axis) < MINVAL:
    raise node.error("joint axis is zero", "axis")
  row["jnt_axis"] = axis / np.linalg.norm(axis)
  row["jnt_springyield"], row["_springdamper"] = plastic.joint_attrs(node, full, jtype, deg)
  stiffness, damping = _poly3(full["stiffness"]), _poly3(full["damping"])
  row["jnt_stiffness"], row["jnt_stiffnesspoly"] = stiffness[0], stiffness[1:]
  rng = vec(full["range"], 2)
  if deg and limited and jtype in (JointType.HINGE, JointType.BALL):
    rng = np.deg2rad(rng)  # MuJoCo converts the range of limited joints only
  if limited and jtype == JointType.BALL and rng[0] != 0:
    raise node.error("range[0] must be 0 for a limited ball joint", "range")
  if limited and jtype != JointType.BALL and rng[0] >= rng[1]:
    raise node.error("range[0] must be smaller than range[1] for a limited joint", "range")
  frcrange = vec(full["actuatorfrcrange"], 2)
  if actlimited and frcrange[0] >= frcrange[1]:
    raise node.error("actuatorfrcrange[0] must be smaller than actuatorfrcrange[1] when "
                     "actuatorfrclimited", "actuatorfrcrange")
  row["jnt_range"], row["jnt_actfrcrange"] = rng, frcrange
  row["jnt_margin"] = full["margin"]
  return row, damping


def _joint_qpos0(full: dict, jtype: JointType, body: Body,
                 deg: bool) -> tuple[np.ndarray, np.ndarray]:
  """The joint's entries of qpos0 and qpos_spring: the body's pose for a free joint, the
  identity for a ball, ref and springref (radians) for a hinge or slide."""
  ref, springref = full["ref"], full["springref"]
  if deg and jtype == JointType.HINGE:
    ref, springref = np.deg2rad(ref), np.deg2rad(springref)
  if jtype == JointType.FREE:
    q0 = np.concatenate([body.pos, body.quat])
    return q0, q0
  if jtype == JointType.BALL:
    return IDENTITY, IDENTITY
  return np.array([ref]), np.array([springref])


_INT_FIELDS = ("type", "bodyid", "adr", "group", "jntid", "parentid", "contype", "conaffinity",
               "condim", "priority", "dataid", "matid")


def _poly3(v) -> np.ndarray:
  """Joint stiffness/damping (1 to 3 values) as (linear, quadratic, cubic), zero padded."""
  v = np.atleast_1d(np.asarray(v, float))
  return np.concatenate([v, np.zeros(3 - len(v))])


def _stack(name: str, values: list) -> np.ndarray:
  if name.endswith(("limited", "actgravcomp")):
    return np.array(values, dtype=bool)
  if name.endswith(_INT_FIELDS):
    return np.array(values, dtype=np.int32)
  shapes = {"solref": 2, "solimp": 5, "pos": 3, "axis": 3, "range": 2, "actfrcrange": 2,
            "quat": 4, "size": 3, "friction": 3, "rgba": 4, "surfacevel": 6, "poly": 2}
  for suffix, n in shapes.items():
    if name.endswith(suffix) and not values:
      return np.zeros((0, n))
  return np.array(values, dtype=np.float64)


def _limited(node: Node, v: dict, jtype: JointType, compiler: dict) -> tuple[bool, bool]:
  if jtype == JointType.FREE:
    return False, False  # MuJoCo never limits free joints, whatever is written
  out = []
  for attr, rng in (("limited", "range"), ("actuatorfrclimited", "actuatorfrcrange")):
    val = v[attr]
    if val == "auto":
      if not compiler["autolimits"]:
        # MuJoCo objects to a nonzero range, whether written here or in a default class.
        if np.any(np.asarray(v[rng]) != 0):
          raise node.error(f"'{rng}' is set, so '{attr}' must be set explicitly when "
                           "autolimits is disabled", attr)
        out.append(False)
        continue
      lo, hi = vec(v[rng], 2)
      out.append(bool(lo < hi))  # autolimits: limited when the range is a proper interval
    else:
      out.append(val == "true")
  return out[0], out[1]


def padded(v, default) -> np.ndarray:
  """A vector given with fewer values than `default` keeps the remaining defaults."""
  out = np.array(default, float)
  v = np.asarray(v, float)[: len(out)]
  out[: len(v)] = v
  return out


def solimp(v) -> np.ndarray:
  out = np.array(schema.SOLIMP[1], float)
  v = np.asarray(v, float)
  out[: min(len(v), 5)] = v[:5]
  return out


def attached(bodies: list[Body], kind: str) -> dict:
  """geom_* or site_* arrays from the bodies' lists."""
  items = [(bid, it) for bid, b in enumerate(bodies) for it in getattr(b, kind + "s")]
  p = kind + "_"
  out = {k: [] for k in ("type", "bodyid", "group", "size", "pos", "quat", "rgba")}
  if kind == "geom":
    out.update({k: [] for k in ("contype", "conaffinity", "condim", "priority", "solmix",
                                "solref", "solimp", "friction", "margin", "gap", "adhesion",
                                "surfacevel", "mass_given", "density")})
  for bid, (node, v, pos, quat, size) in items:
    out["type"].append(GeomType[v["type"].upper()])
    out["bodyid"].append(bid)
    out["group"].append(v["group"])
    out["size"].append(size)
    out["pos"].append(pos)
    out["quat"].append(quat)
    out["rgba"].append(vec(v["rgba"], 4))
    if kind != "geom":
      continue
    for k in ("contype", "conaffinity", "condim", "priority", "solmix", "margin", "gap",
              "adhesion", "density"):
      out[k].append(v[k])
    out["surfacevel"].append(padded(v["surfacevel"], schema.ATTRS["geom"]["surfacevel"][1]))
    for k in ("mass", "density"):
      if v[k] is not None and v[k] < 0:
        raise node.error(f"{k} must be non-negative", k)
    if v["condim"] not in (1, 3, 4, 6):
      raise node.error(f"condim must be 1, 3, 4 or 6, got {v['condim']}", "condim")
    out["solref"].append(vec(v["solref"], 2))
    out["solimp"].append(solimp(v["solimp"]))
    fr = np.array(schema.ATTRS["geom"]["friction"][1])
    given = np.asarray(v["friction"], float)[:3]
    fr[: len(given)] = given
    out["friction"].append(fr)
    out["mass_given"].append(np.nan if v["mass"] is None else v["mass"])
  res = {p + k: _stack(p + k, vals) for k, vals in out.items()}
  res[p + "rgba"] = res[p + "rgba"].astype(np.float32).reshape(-1, 4)
  if kind == "geom":
    res["geom_dataid"] = np.full(len(items), -1, np.int32)
    res["geom_matid"] = np.full(len(items), -1, np.int32)
  res["n" + kind] = len(items)
  return res
