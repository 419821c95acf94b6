"""<sensor> -> sensor_* Model fields, laid out as mjModel stores them (host side, numpy).

Every sensor element of MuJoCo 4.0 outside plugins, tactile and user sensors is compiled
with its type, data type, stage, attached objects, integer parameters, output width and
address in sensordata. Which of them the runtime computes is decided in jaxmj/sensor/.
"""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.spec import schema
from jaxmj.mjcf.spec.parse import Node
from jaxmj.sensor.driver import SUPPORTED
from jaxmj.types import DisableBit, GeomType, JointType, ObjType, SensorType, Stage

REAL, POSITIVE, AXIS, QUATERNION = 0, 1, 2, 3  # mjtDataType

# MJCF element -> (mjtSensor, dim, mjtDataType, mjtStage)
_SPEC = {
  "touch": (SensorType.TOUCH, 1, POSITIVE, Stage.ACC),
  "accelerometer": (SensorType.ACCELEROMETER, 3, REAL, Stage.ACC),
  "velocimeter": (SensorType.VELOCIMETER, 3, REAL, Stage.VEL),
  "gyro": (SensorType.GYRO, 3, REAL, Stage.VEL),
  "force": (SensorType.FORCE, 3, REAL, Stage.ACC),
  "torque": (SensorType.TORQUE, 3, REAL, Stage.ACC),
  "magnetometer": (SensorType.MAGNETOMETER, 3, REAL, Stage.POS),
  "rangefinder": (SensorType.RANGEFINDER, 0, REAL, Stage.POS),
  "camprojection": (SensorType.CAMPROJECTION, 2, REAL, Stage.POS),
  "jointpos": (SensorType.JOINTPOS, 1, REAL, Stage.POS),
  "jointvel": (SensorType.JOINTVEL, 1, REAL, Stage.VEL),
  "tendonpos": (SensorType.TENDONPOS, 1, REAL, Stage.POS),
  "tendonvel": (SensorType.TENDONVEL, 1, REAL, Stage.VEL),
  "actuatorpos": (SensorType.ACTUATORPOS, 1, REAL, Stage.POS),
  "actuatorvel": (SensorType.ACTUATORVEL, 1, REAL, Stage.VEL),
  "actuatorfrc": (SensorType.ACTUATORFRC, 1, REAL, Stage.ACC),
  "jointactuatorfrc": (SensorType.JOINTACTFRC, 1, REAL, Stage.ACC),
  "tendonactuatorfrc": (SensorType.TENDONACTFRC, 1, REAL, Stage.ACC),
  "ballquat": (SensorType.BALLQUAT, 4, QUATERNION, Stage.POS),
  "ballangvel": (SensorType.BALLANGVEL, 3, REAL, Stage.VEL),
  "jointlimitpos": (SensorType.JOINTLIMITPOS, 1, REAL, Stage.POS),
  "jointlimitvel": (SensorType.JOINTLIMITVEL, 1, REAL, Stage.VEL),
  "jointlimitfrc": (SensorType.JOINTLIMITFRC, 1, REAL, Stage.ACC),
  "tendonlimitpos": (SensorType.TENDONLIMITPOS, 1, REAL, Stage.POS),
  "tendonlimitvel": (SensorType.TENDONLIMITVEL, 1, REAL, Stage.VEL),
  "tendonlimitfrc": (SensorType.TENDONLIMITFRC, 1, REAL, Stage.ACC),
  "framepos": (SensorType.FRAMEPOS, 3, REAL, Stage.POS),
  "framequat": (SensorType.FRAMEQUAT, 4, QUATERNION, Stage.POS),
  "framexaxis": (SensorType.FRAMEXAXIS, 3, AXIS, Stage.POS),
  "frameyaxis": (SensorType.FRAMEYAXIS, 3, AXIS, Stage.POS),
  "framezaxis": (SensorType.FRAMEZAXIS, 3, AXIS, Stage.POS),
  "framelinvel": (SensorType.FRAMELINVEL, 3, REAL, Stage.VEL),
  "frameangvel": (SensorType.FRAMEANGVEL, 3, REAL, Stage.VEL),
  "framelinacc": (SensorType.FRAMELINACC, 3, REAL, Stage.ACC),
  "frameangacc": (SensorType.FRAMEANGACC, 3, REAL, Stage.ACC),
  "subtreecom": (SensorType.SUBTREECOM, 3, REAL, Stage.POS),
  "subtreelinvel": (SensorType.SUBTREELINVEL, 3, REAL, Stage.VEL),
  "subtreeangmom": (SensorType.SUBTREEANGMOM, 3, REAL, Stage.VEL),
  "insidesite": (SensorType.INSIDESITE, 1, POSITIVE, Stage.POS),
  "distance": (SensorType.GEOMDIST, 1, REAL, Stage.POS),
  "normal": (SensorType.GEOMNORMAL, 3, AXIS, Stage.POS),
  "fromto": (SensorType.GEOMFROMTO, 6, REAL, Stage.POS),
  "contact": (SensorType.CONTACT, 0, REAL, Stage.POS),
  "e_potential": (SensorType.E_POTENTIAL, 1, REAL, Stage.POS),
  "e_kinetic": (SensorType.E_KINETIC, 1, REAL, Stage.POS),
  "clock": (SensorType.CLOCK, 1, REAL, Stage.POS),
}
# The attribute naming the sensed object, and its type, for single-object sensors.
_OBJECT_ATTR = {"site": ObjType.SITE, "joint": ObjType.JOINT, "tendon": ObjType.TENDON,
                "actuator": ObjType.ACTUATOR, "body": ObjType.BODY}
_FRAME_TYPES = {"body": ObjType.BODY, "xbody": ObjType.XBODY, "geom": ObjType.GEOM,
                "site": ObjType.SITE, "camera": ObjType.CAMERA}
# Output fields of the rangefinder and contact sensors: name -> width; bit i = field i.
RANGEFINDER_DATA = {"dist": 1, "dir": 3, "origin": 3, "point": 3, "normal": 3, "depth": 1}
CONTACT_DATA = {"found": 1, "force": 3, "torque": 3, "dist": 1, "pos": 3, "normal": 3,
                "tangent": 3, "linvel": 3, "angvel": 3}
CONTACT_REDUCE = {"none": 0, "mindist": 1, "maxforce": 2, "netforce": 3}


def _object_ids(root: Node, bodies: list) -> dict:
  """ObjType -> {name: id} for every named object a sensor may reference."""
  ids = {ObjType.BODY: {b.name: i for i, b in enumerate(bodies) if b.name}}
  ids[ObjType.BODY]["world"] = 0
  ids[ObjType.XBODY] = ids[ObjType.BODY]
  for objtype, attr, pick in ((ObjType.JOINT, "joints", 0), (ObjType.GEOM, "geoms", 0),
                              (ObjType.SITE, "sites", 0)):
    nodes = [item[pick] for b in bodies for item in getattr(b, attr)]
    ids[objtype] = {n.attrs["name"]: i for i, n in reversed(list(enumerate(nodes)))
                    if n.attrs.get("name")}
  # Tendons and actuators are numbered in document order over their sections.
  for objtype, section in ((ObjType.TENDON, "tendon"), (ObjType.ACTUATOR, "actuator")):
    nodes = [n for c in root.children if c.tag == section for n in c.children]
    ids[objtype] = {n.attrs["name"]: i for i, n in reversed(list(enumerate(nodes)))
                    if n.attrs.get("name")}
  cams = [item[0] for b in bodies for item in getattr(b, "camlights", ())
          if item[0].tag == "camera"]
  ids[ObjType.CAMERA] = {n.attrs["name"]: i for i, n in reversed(list(enumerate(cams)))
                         if n.attrs.get("name")}
  return ids


def _find(node: Node, attr: str, objtype: ObjType, ids: dict) -> int:
  name = node.attrs.get(attr)
  if name not in ids[objtype]:
    raise node.error(f"unknown {objtype.name.lower()} '{name}'", attr)
  return ids[objtype][name]


def _fields(node: Node, spec: str, table: dict) -> tuple[int, int]:
  """(bitmask, width) of a `data` list whose words must keep the table's order."""
  words = spec.split()
  order = list(table)
  bits, width, last = 0, 0, -1
  for w in words:
    if w not in table:
      raise node.error(f"unknown data type '{w}', expected one of {order}", "data")
    k = order.index(w)
    if k <= last:
      raise node.error(f"data types must be given in the order {order}", "data")
    bits, width, last = bits | (1 << k), width + table[w], k
  if not words:
    raise node.error("data must name at least one data type", "data")
  return bits, width


def _pair_objects(node: Node, ids: dict, kinds: tuple) -> list[tuple[int, int]]:
  """(objtype, id) for side 1 and 2 of a collision or contact sensor; (0, -1) if unset."""
  out = []
  for side in ("1", "2"):
    given = [(k, t) for k, t in kinds if node.attrs.get(k + side) is not None]
    if len(given) > 1:
      raise node.error(f"at most one of {[k + side for k, _ in kinds]} may be given",
                       given[1][0] + side)
    if given:
      k, t = given[0]
      out.append((int(t), _find(node, k + side, ObjType.BODY if t == ObjType.XBODY else t,
                                ids)))
    else:
      out.append((0, -1))
  return out


def _sensor(node: Node, ids: dict, f: dict) -> dict:
  """type, dim, datatype, needstage, objects and intprm of one sensor element."""
  stype, dim, datatype, stage = _SPEC[node.tag]
  obj, ref, intprm = (0, -1), (0, -1), [0, 0, 0]
  tag = node.tag
  attr = next((a for a in _OBJECT_ATTR if a in schema.ATTRS[tag]), None)
  if tag.startswith("frame") or tag == "insidesite":
    if node.attrs.get("objtype") is None or node.attrs.get("objname") is None:
      raise node.error("objtype and objname are required", "objtype")
    t = _FRAME_TYPES[node.attrs["objtype"]]
    obj = (int(t), _find(node, "objname", ObjType.BODY if t == ObjType.XBODY else t, ids))
    if tag == "insidesite":
      if node.attrs.get("site") is None:
        raise node.error("missing required attribute 'site'", "site")
      ref = (int(ObjType.SITE), _find(node, "site", ObjType.SITE, ids))
      intprm[0] = int(bool(node.get("enclosed")))
      if intprm[0]:
        datatype = REAL  # a signed distance instead of a 0/1 flag
    elif node.attrs.get("refname") is not None or node.attrs.get("reftype") is not None:
      if node.attrs.get("refname") is None or node.attrs.get("reftype") is None:
        raise node.error("reftype and refname must be given together", "reftype")
      rt = _FRAME_TYPES[node.attrs["reftype"]]
      ref = (int(rt), _find(node, "refname", ObjType.BODY if rt == ObjType.XBODY else rt, ids))
  elif tag == "rangefinder":
    on_camera = node.attrs.get("camera") is not None
    if on_camera and node.attrs.get("site") is not None:
      raise node.error("at most one of site and camera may be given", "camera")
    if not on_camera and node.attrs.get("site") is None:
      raise node.error("rangefinder needs a site or a camera", "site")
    intprm[0], dim = _fields(node, node.attrs.get("data", "dist"), RANGEFINDER_DATA)
    if on_camera:  # one ray per pixel of the camera's resolution, row by row
      obj = (int(ObjType.CAMERA), _find(node, "camera", ObjType.CAMERA, ids))
      dim *= int(np.prod(f["cam_resolution"][obj[1]]))
    else:
      obj = (int(ObjType.SITE), _find(node, "site", ObjType.SITE, ids))
  elif tag == "camprojection":
    for a in ("site", "camera"):
      if node.attrs.get(a) is None:
        raise node.error(f"missing required attribute '{a}'", a)
    obj = (int(ObjType.SITE), _find(node, "site", ObjType.SITE, ids))
    ref = (int(ObjType.CAMERA), _find(node, "camera", ObjType.CAMERA, ids))
  elif tag in ("distance", "normal", "fromto"):
    (obj, ref) = _pair_objects(node, ids, (("geom", ObjType.GEOM), ("body", ObjType.BODY)))
    for side, o in (("1", obj), ("2", ref)):
      if o[1] < 0:
        raise node.error(f"exactly one of geom{side} and body{side} must be given",
                         "geom" + side)
    if obj == ref:
      raise node.error("1st body/geom must be different from 2nd body/geom", "geom2")
    # MuJoCo's check names geoms only: a body's heightfield geoms are measured (mjc_ConvexHField)
    for side, (otype, oid) in (("1", obj), ("2", ref)):
      if otype == ObjType.GEOM and f["geom_type"][oid] == GeomType.HFIELD:
        raise node.error("height fields are not supported in geom distance sensors",
                         "geom" + side)
  elif tag == "contact":
    obj, ref = _contact_objects(node, ids)
    bits, width = _fields(node, node.attrs.get("data", "found"), CONTACT_DATA)
    reduce = CONTACT_REDUCE[node.get("reduce") or "none"]
    num = node.get("num") if node.get("num") is not None else 1
    if num <= 0:
      raise node.error("num must be positive", "num")
    if reduce == 3 and bits & 0b110000000:
      raise node.error("netforce reduction is incompatible with linvel or angvel", "reduce")
    intprm, dim = [bits, reduce, num], width * num
    if bits & 0b110 or reduce in (2, 3):
      stage = Stage.ACC
    elif bits & 0b110000000:
      stage = Stage.VEL
  elif attr is not None:
    if node.attrs.get(attr) is None:
      raise node.error(f"missing required attribute '{attr}'", attr)
    obj = (int(_OBJECT_ATTR[attr]), _find(node, attr, _OBJECT_ATTR[attr], ids))
    _check_object(node, attr, obj[1], f)
    if attr == "actuator":  # one value per actuator output (three for so3)
      dim = int(f["actuator_outnum"][obj[1]])
  return {"type": int(stype), "dim": dim, "datatype": datatype, "needstage": int(stage),
          "objtype": obj[0], "objid": obj[1], "reftype": ref[0], "refid": ref[1],
          "intprm": intprm}


def _check_object(node: Node, attr: str, oid: int, f: dict) -> None:
  """MuJoCo's checks on the joint or tendon a sensor names."""
  tag = node.tag
  if attr == "joint":
    jtype = f["jnt_type"][oid]
    if tag in ("jointpos", "jointvel", "jointactuatorfrc") and jtype not in (
        JointType.SLIDE, JointType.HINGE):
      raise node.error("joint must be slide or hinge", attr)
    if tag in ("ballquat", "ballangvel") and jtype != JointType.BALL:
      raise node.error("joint must be ball", attr)
    if tag.startswith("jointlimit") and not f["jnt_limited"][oid]:
      raise node.error("joint must be limited", attr)
  if attr == "tendon" and tag.startswith("tendonlimit"):
    if not np.asarray(f.get("tendon_limited", np.ones(oid + 1, bool)))[oid]:
      raise node.error("tendon must be limited", attr)


def _contact_objects(node: Node, ids: dict) -> tuple:
  """Contact sensor matching criteria: geom, body, subtree (as xbody) or site per side."""
  sides = _pair_objects(node, ids, (("geom", ObjType.GEOM), ("body", ObjType.BODY),
                                    ("subtree", ObjType.XBODY)))
  if node.attrs.get("site") is not None:
    if sides[0][1] >= 0:
      raise node.error("site cannot be combined with geom1, body1 or subtree1", "site")
    sides[0] = (int(ObjType.SITE), _find(node, "site", ObjType.SITE, ids))
  return sides[0], sides[1]


def compile_sensors(root: Node, bodies: list, f: dict) -> dict:
  """sensor_* arrays (mjModel names and shapes) and the sensor names for the names buffer;
  sensor_user and nuser_sensor are compiled with the other kinds' in user.py."""
  for c in root.children:
    if c.tag == "contact" and c.attrs:
      raise c.error(f"unknown attribute '{next(iter(c.attrs))}'", next(iter(c.attrs)))
  nodes = [n for c in root.children if c.tag == "sensor" for n in c.children]
  ids = _object_ids(root, bodies)
  rows = []
  for node in nodes:
    row = _sensor(node, ids, f)
    row["cutoff"] = node.get("cutoff") or 0.0
    row["noise"] = node.get("noise") or 0.0
    row["nsample"] = node.get("nsample") or 0
    row["interp"] = ["zoh", "linear", "cubic"].index(node.get("interp") or "zoh")
    row["delay"] = node.get("delay") or 0.0
    interval = np.zeros(2)
    given = node.get("interval")
    if given is not None:
      interval[: len(given)] = given
    row["interval"] = interval
    _check_history(node, row)
    if (row["cutoff"] > 0 and row["datatype"] in (AXIS, QUATERNION)
        and row["type"] != SensorType.GEOMNORMAL):  # its cutoff is a search distance
      raise node.error("cutoff applied to axis or quaternion datatype", "cutoff")
    rows.append(row)
  n = len(rows)
  col = lambda k, dt=np.int32: np.array([r[k] for r in rows], dt)  # noqa: E731
  dim = col("dim")
  # History buffers follow the actuators' (ctrlnum values each: nsample (1 + ctrlnum) + 2).
  act_n = np.asarray(f.get("actuator_history", np.zeros((0, 2), np.int32)))[:, 0]
  act_dim = np.asarray(f.get("actuator_ctrlnum", np.ones(len(act_n), np.int32)))
  act_hist = int(np.sum(np.where(act_n > 0, (1 + act_dim) * act_n + 2, 0)))
  hist_size = [(r["dim"] + 1) * r["nsample"] + 2 if r["nsample"] > 0 else 0 for r in rows]
  hist_adr = act_hist + np.cumsum([0] + hist_size[:-1]) if n else np.zeros(0)
  return {
    "nsensor": n, "nsensordata": int(dim.sum()),
    "nhistory": act_hist + int(sum(hist_size)),
    "sensor_type": col("type"), "sensor_datatype": col("datatype"),
    "sensor_needstage": col("needstage"), "sensor_objtype": col("objtype"),
    "sensor_objid": col("objid"), "sensor_reftype": col("reftype"),
    "sensor_refid": col("refid"),
    "sensor_intprm": np.array([r["intprm"] for r in rows], np.int32).reshape(n, 3),
    "sensor_dim": dim, "sensor_adr": (np.cumsum(dim) - dim).astype(np.int32),
    "sensor_history": np.array([(r["nsample"], r["interp"]) for r in rows],
                               np.int32).reshape(n, 2),
    "sensor_historyadr": np.array([a if s else -1 for a, s in zip(hist_adr, hist_size)],
                                  np.int32),
    "sensor_cutoff": col("cutoff", float), "sensor_noise": col("noise", float),
    "sensor_delay": col("delay", float),
    "sensor_interval": np.array([r["interval"] for r in rows], float).reshape(n, 2),
    "_sensor_names": [node.attrs.get("name", "") for node in nodes],
    "_sensor_nodes": nodes,
  }


def _check_history(node, row: dict) -> None:
  """MuJoCo 4.0's checks of a sensor's interval and history, in its order. A negative delay
  is taken (and reads the current value, as no delay)."""
  period, phase = row["interval"]
  if period < 0:
    raise node.error("negative interval in sensor", "interval")
  if phase > 0:
    raise node.error("positive phase in sensor", "interval")
  if period > 0 and phase <= -period:
    raise node.error("phase must be greater than -period in sensor", "interval")
  if row["delay"] > 0 and row["nsample"] <= 0:
    raise node.error("setting delay > 0 without a history buffer (nsample)", "delay")
  if row["nsample"] > 1 << 24:
    raise node.error(f"at most 2^24 samples in sensor history buffer, got {row['nsample']}",
                     "nsample")

def names(f: dict) -> list[str]:
  """Sensor names in id order; a repeated name is an error."""
  seen = set()
  for node, name in zip(f["_sensor_nodes"], f["_sensor_names"]):
    if name and name in seen:
      raise node.error(f"repeated sensor name '{name}'", "name")
    seen.add(name)
  return list(f["_sensor_names"])


def unsupported(f: dict) -> list[tuple[str, int]]:
  """(feature, DisableBit.SENSOR) for each compiled sensor feature the runtime lacks."""
  bit = int(DisableBit.SENSOR)
  types = sorted(set(int(t) for t in f["sensor_type"]) - {int(t) for t in SUPPORTED})
  return [(f"{SensorType(t).name.lower()} sensors", bit) for t in types]
