"""<camera> and <light> -> cam_* / light_* Model fields, as MuJoCo 4.0 compiles them.

Visual only: nothing here reaches the physics. Poses are in the owning body's frame (enclosing
<frame>s folded in); the qpos0 constants (pos0, poscom0, mat0, dir0) follow mj_setConst,
which evaluates mj_camlight at qpos0.
"""

from __future__ import annotations

import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.mjcf.compile import engine0, frames, setconst, visual
from jaxmj.mjcf.spec.parse import Node

MODES = ("fixed", "track", "trackcom", "targetbody", "targetbodycom")
LIGHT_TYPES = ("spot", "directional", "point", "image")
# mjtCamOutBit: the keywords of camera 'output'.
OUTPUT_BITS = {"rgb": 1, "depth": 2, "distance": 4, "normal": 8, "segmentation": 16}


def placed(node: Node, vals: dict, compiler: dict, fpos, fquat) -> tuple:
  """(node, values, pos, quat) of a camera in the body frame, enclosing frames applied; a
  light's is (node, values, frame pos, frame quat, pos, dir): MuJoCo keeps a light's
  enclosing frame and its direction as written until the end, so the frame is what a body
  fusion re-expresses, and the direction is turned and normalized once (`_light_pose`)."""
  pos = np.asarray(vals["pos"], float)
  if node.tag == "camera":
    return (node, vals, *frames.placed(fpos, fquat, pos,
                                       frames.orientation(vals, compiler, node, False)))
  if frames.normvec([float(x) for x in vals["dir"]])[1] < MINVAL:
    raise node.error("zero direction in light", "dir")
  return (node, vals, np.asarray(fpos, float), np.asarray(fquat, float), pos,
          [float(x) for x in vals["dir"]])


def _light_pose(fpos, fquat, pos, direction) -> tuple[np.ndarray, np.ndarray]:
  """(pos, unit dir) of a light in its body frame from its enclosing frame (fpos, fquat),
  as mjCLight::Compile: the frame turns the direction as written, then normvec."""
  pos, d, _ = frames.light(fpos, fquat, pos, direction)
  return pos, d


def aligned(item: tuple, pos, quat) -> tuple:
  """A camera or light tuple re-expressed in the frame where its body's frame is (pos,
  quat) by free-joint alignment, which MuJoCo applies to the compiled light (its position
  and unit direction), unlike a body fusion (`placed`)."""
  if item[0].tag != "light":
    return (*item[:2], *frames.compose(pos, quat, item[2], item[3]), *item[4:])
  lpos, direction = _light_pose(*item[2:])
  lpos = frames.compose(pos, quat, lpos, [1.0, 0.0, 0.0, 0.0])[0]
  return (*item[:2], np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]), lpos,
          frames.rotquat(direction, quat))


def _items(bodies, tag: str) -> list:
  return [(bid, *item) for bid, b in enumerate(bodies) for item in b.camlights
          if item[0].tag == tag]


def _target(node: Node, vals: dict, body_ids: dict) -> tuple[int, int]:
  mode = MODES.index(vals["mode"])
  name = vals.get("target")
  if name is None:
    return mode, -1
  if name not in body_ids:
    raise node.error(f"unknown target body '{name}'", "target")
  return mode, body_ids[name]


def _body_ids(bodies) -> dict:
  ids = {"world": 0}
  ids.update({b.name: i for i, b in enumerate(bodies) if i and b.name})
  return ids


def _cameras(bodies, body_ids: dict, znear: float) -> dict:
  """cam_* fields (cam_user: jaxmj/mjcf/compile/user.py); fovy stays in degrees whatever the
  compiler's angle (MuJoCo's)."""
  items = _items(bodies, "camera")
  n = len(items)
  f = {"ncam": n}
  cols = {k: [] for k in ("mode", "bodyid", "targetbodyid", "pos", "quat", "projection",
                          "fovy", "ipd", "resolution", "output", "sensorsize", "intrinsic")}
  for bid, node, v, pos, quat in items:
    mode, target = _target(node, v, body_ids)
    resolution = np.asarray(v["resolution"], np.int32)
    sensorsize = np.asarray(v["sensorsize"], np.float32)
    intrinsic = np.array([*v["focal"], *v["principal"]], np.float32)
    fovy = 45.0 if v["fovy"] is None else float(v["fovy"])
    if np.any(intrinsic != 0) or np.any(np.asarray(v["focalpixel"]) != 0) or np.any(
        np.asarray(v["principalpixel"]) != 0):
      if not np.all(sensorsize > 0):
        raise node.error("focal/principal require sensorsize", "sensorsize")
    if np.all(sensorsize > 0):
      for k, attr in ((0, "focalpixel"), (2, "principalpixel")):
        pix = np.asarray(v[attr], np.float32)
        if np.any(pix != 0):
          intrinsic[k:k + 2] = pix / resolution.astype(np.float32) * sensorsize
      # In float32 as MuJoCo's sensor size and intrinsics: equal to MuJoCo's to float32
      # precision (its rounding path differs between focal and focalpixel).
      half_angle = np.arctan2(sensorsize[1] / np.float32(2), intrinsic[1])
      fovy = float(half_angle) * 360.0 / np.pi
    elif not np.any(intrinsic != 0):
      intrinsic = np.array([znear, znear, 0.0, 0.0], np.float32)  # <visual><map znear>
    words = v["output"].split()
    if not words or any(w not in OUTPUT_BITS for w in words):
      raise node.error(f"invalid output {v['output']!r}: words of {', '.join(OUTPUT_BITS)}",
                       "output")
    for k, val in (("mode", mode), ("bodyid", bid), ("targetbodyid", target), ("pos", pos),
                   ("quat", quat), ("projection", int(v["projection"] == "orthographic")),
                   ("fovy", fovy), ("ipd", v["ipd"]), ("resolution", resolution),
                   ("output", sum(OUTPUT_BITS[w] for w in dict.fromkeys(words))),
                   ("sensorsize", sensorsize), ("intrinsic", intrinsic)):
      cols[k].append(val)
  shapes = {"pos": (3,), "quat": (4,), "resolution": (2,), "sensorsize": (2,),
            "intrinsic": (4,)}
  for k, vals in cols.items():
    dtype = (np.int32 if k in ("mode", "bodyid", "targetbodyid", "projection", "resolution",
                               "output") else
             np.float32 if k in ("sensorsize", "intrinsic") else float)
    f["cam_" + k] = np.array(vals, dtype).reshape((n,) + shapes.get(k, ()))
  return f


_LIGHT_FLOAT32 = {"bulbradius": (), "softness": (), "intensity": (), "range": (),
                  "attenuation": (3,), "cutoff": (), "exponent": (), "ambient": (3,),
                  "diffuse": (3,), "specular": (3,)}


def _lights(root: Node, bodies, body_ids: dict) -> dict:
  items = _items(bodies, "light")
  n = len(items)
  textures = [t.attrs.get("name") for a in root.children if a.tag == "asset"
              for t in a.children if t.tag == "texture"]
  cols = {k: [] for k in ("mode", "bodyid", "targetbodyid", "type", "texid", "castshadow",
                          "active", "pos", "dir", *_LIGHT_FLOAT32)}
  for bid, node, v, fpos, fquat, lpos, raw in items:
    pos, direction = _light_pose(fpos, fquat, lpos, raw)
    mode, target = _target(node, v, body_ids)
    if "directional" in node.attrs and "type" in node.attrs:
      raise node.error("at most one of 'directional' and 'type' may be given", "type")
    ltype = LIGHT_TYPES.index(v["type"])
    if "directional" in node.attrs or ("type" not in node.attrs and v["directional"]):
      ltype = 1 if v["directional"] else 0
    texid = -1
    if v["texture"]:
      if v["texture"] not in textures:
        raise node.error(f"unknown texture '{v['texture']}'", "texture")
      texid = textures.index(v["texture"])
    for k, val in (("mode", mode), ("bodyid", bid), ("targetbodyid", target),
                   ("type", ltype), ("texid", texid), ("castshadow", v["castshadow"]),
                   ("active", v["active"]), ("pos", pos), ("dir", direction)):
      cols[k].append(val)
    for k in _LIGHT_FLOAT32:
      cols[k].append(v[k])
  f = {"nlight": n}
  for k, vals in cols.items():
    shape = (3,) if k in ("pos", "dir") else _LIGHT_FLOAT32.get(k, ())
    dtype = (bool if k in ("castshadow", "active") else float if k in ("pos", "dir") else
             np.float32 if k in _LIGHT_FLOAT32 else np.int32)
    f["light_" + k] = np.array(vals, dtype).reshape((n,) + shape)
  return f


def compile_camlights(root: Node, bodies, f: dict) -> dict:
  """cam_* and light_* fields, with the qpos0 constants of mj_setConst."""
  body_ids = _body_ids(bodies)
  znear = visual.compile_visual(root).map["znear"]
  out = {**_cameras(bodies, body_ids, znear), **_lights(root, bodies, body_ids)}
  # mj_camlight at qpos0 with every mode fixed: cameras and lights composed on their bodies
  kin = setconst.kinematics(f, np.asarray(f["qpos0"], float))
  com = engine0.subtree_com(f, kin)
  xpos = kin["xpos"]
  cb, lb = out["cam_bodyid"], out["light_bodyid"]
  cam_xpos, cam_xmat = engine0.local_to_global(kin, cb, out["cam_pos"], out["cam_quat"])
  light_xpos = engine0.local_to_global(kin, lb, out["light_pos"], None)[0]
  light_xdir = np.array([engine0.normalize3(engine0.rotvecquat(d, kin["xquat"][b]))
                         for d, b in zip(out["light_dir"].tolist(), lb, strict=True)],
                        float).reshape(-1, 3)
  # As mj_setConst: the com offset is from the target's subtree com when there is a target.
  ct = np.where(out["cam_targetbodyid"] >= 0, out["cam_targetbodyid"], cb)
  lt = np.where(out["light_targetbodyid"] >= 0, out["light_targetbodyid"], lb)
  out.update(cam_pos0=cam_xpos - xpos[cb], cam_poscom0=cam_xpos - com[ct],
             cam_mat0=cam_xmat.reshape(-1, 9), light_pos0=light_xpos - xpos[lb],
             light_poscom0=light_xpos - com[lt], light_dir0=light_xdir)
  return out


def names(bodies) -> list[list[str]]:
  """Camera names and light names in id order; a repeated name is an error."""
  out = []
  for tag in ("camera", "light"):
    group, seen = [], set()
    for _, node, *_ in _items(bodies, tag):
      name = node.attrs.get("name", "")
      if name and name in seen:
        raise node.error(f"repeated {tag} name '{name}'", "name")
      seen.add(name)
      group.append(name)
    out.append(group)
  return out
