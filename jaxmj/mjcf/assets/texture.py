"""Textures and materials as MuJoCo 4.0's compiler stores them (host side; Pillow for PNG).

They only feed renderers: nothing here changes the physics. Builtin textures (gradient,
checker, flat, with edge, cross or random marks) are generated as mjCTexture does, byte for
byte (random dots: mtrand.py, MuJoCo's generator). Only PNG files are read (as MuJoCo 4.0
without a content_type; KTX is not supported).
"""

from __future__ import annotations

import io
import os

import numpy as np

from jaxmj.mjcf.assets import mtrand
from jaxmj.mjcf.spec.parse import Defaults, Node

TEXTYPE = {"2d": 0, "cube": 1, "skybox": 2}
COLORSPACE = {"auto": 0, "linear": 1, "sRGB": 2}
NTEXROLE = 10  # mjNTEXROLE
TEXROLE = {"user": 0, "rgb": 1, "occlusion": 2, "roughness": 3, "metallic": 4, "normal": 5,
           "opacity": 6, "emissive": 7, "rgba": 8, "orm": 9}
_CUBE_FACES = ("right", "left", "up", "down", "front", "back")


class TextureError(ValueError):
  """A texture MuJoCo's compiler would reject; the caller names the element."""


def _byte(rgb) -> np.ndarray:
  """MuJoCo's (mjtByte)(255 * x): truncation toward zero, wrapped to a byte."""
  return (np.trunc(255 * np.asarray(rgb, float)).astype(np.int64) % 256).astype(np.uint8)


def _interp(rgb1, rgb2, pos: np.ndarray) -> np.ndarray:
  """Sigmoid blend of two colours at positions pos in (-1, 1): (..., 3) bytes."""
  alpha = np.clip(0.5 * (1 + pos / np.sqrt(1 + pos * pos) * np.sqrt(2.0)), 0.0, 1.0)
  return _byte(alpha[..., None] * np.asarray(rgb1, float)
               + (1 - alpha[..., None]) * np.asarray(rgb2, float))


def _checker(c1: np.ndarray, c2: np.ndarray, w: int, h: int) -> np.ndarray:
  out = np.empty((h, w, 3), np.uint8)
  top = np.arange(h)[:, None] < h // 2
  left = np.arange(w)[None, :] < w // 2
  out[:] = np.where((top == left)[..., None], c1, c2)
  return out


def _marks(face: np.ndarray, mark: str, markrgb, random: float) -> None:
  h, w = face.shape[:2]
  c = _byte(markrgb)
  if mark == "edge":
    face[:, 0] = face[:, w - 1] = face[0, :] = face[h - 1, :] = c
  elif mark == "cross":
    face[:, w // 2] = c
    face[h // 2, :] = c
  elif mark == "random" and random > 0:  # a generator seeded 42, one draw per pixel
    face[mtrand.dots(42, h * w, float(random)).reshape(h, w)] = c


def _builtin(v: dict) -> tuple[np.ndarray, int, int]:
  """(data (height, width, 3) uint8, width, height) of a builtin texture."""
  w, h = int(v["width"]), int(v["height"])
  if w < 1 or (v["type"] == "2d" and h < 1):
    raise TextureError("builtin texture needs positive width and height")
  rgb1, rgb2 = np.asarray(v["rgb1"], float), np.asarray(v["rgb2"], float)
  c1, c2 = _byte(rgb1), _byte(rgb2)
  kind = v["builtin"]
  if v["type"] == "2d":
    if kind == "gradient":
      x = 2 * np.arange(w)[None, :] / (w - 1 if w > 1 else 1) - 1
      y = 1 - 2 * np.arange(h)[:, None] / (h - 1 if h > 1 else 1)
      face = _interp(rgb2, rgb1, 2 * np.sqrt(x * x + y * y) - 1)
    elif kind == "checker":
      face = _checker(c1, c2, w, h)
    else:
      face = np.broadcast_to(c1, (h, w, 3)).copy()
    _marks(face, v["mark"], v["markrgb"], v["random"])
    return face, w, h
  if kind == "gradient":
    x = 2 * np.arange(w)[None, :] / (w - 1 if w > 1 else 1) - 1
    y = 1 - 2 * np.arange(w)[:, None] / (w - 1 if w > 1 else 1)
    r = np.sqrt(1 + x * x + y * y)
    side = _interp(rgb1, rgb2, np.arcsin(y / r) / (0.5 * np.pi))
    elup = 1 - np.arccos(1.0 / r) / (0.5 * np.pi)
    faces = [side, side, _interp(rgb1, rgb2, elup), _interp(rgb1, rgb2, -elup), side, side]
  elif kind == "checker":
    faces = [_checker(c1, c2, w, w)] * 4 + [_checker(c2, c1, w, w)] * 2
  else:
    flat = np.broadcast_to(c1, (w, w, 3))
    faces = [flat, flat, flat, np.broadcast_to(c2, (w, w, 3)), flat, flat]
  faces = [f.copy() for f in faces]
  for f in faces:
    _marks(f, v["mark"], v["markrgb"], v["random"] if v["mark"] != "random" else 0)
  data = np.concatenate(faces, axis=0)
  if v["mark"] == "random":
    _marks(data, "random", v["markrgb"], v["random"])
  return data, w, 6 * w


def decode_image(data: bytes, name: str, nchannel: int, srgb: list | None = None) -> np.ndarray:
  """(h, w, nchannel) uint8 pixels of a PNG texture file; MuJoCo 4.0 rejects other files
  (its old custom binary format included) for want of a content type it knows. Appends to
  `srgb`, if given, whether the file carries an sRGB chunk."""
  if not (name.lower().endswith(".png") or data[:8] == b"\x89PNG\r\n\x1a\n"):
    raise TextureError(f"unsupported content type of texture file '{name}' (PNG expected)")
  from PIL import Image  # only file textures need Pillow

  try:
    img = Image.open(io.BytesIO(data))
    img.load()
  except Exception as e:  # Pillow raises several types for a bad file
    raise TextureError(f"PNG file load error: {e}") from None
  if srgb is not None:
    srgb.append("srgb" in img.info)
  return np.asarray(img.convert("RGBA" if nchannel == 4 else "RGB"), np.uint8)


def _from_files(node: Node, v: dict, read, srgb: list) -> tuple[np.ndarray, int, int]:
  nch = int(v["nchannel"])
  if v["file"] is not None:
    img = decode_image(read(node, v["file"]), v["file"], nch, srgb)
    if v["hflip"]:
      img = img[:, ::-1]
    if v["vflip"]:
      img = img[::-1]
    h, w = img.shape[:2]
    if v["type"] == "2d":
      return img, w, h
    rows, cols = (int(x) for x in v["gridsize"])
    if rows < 1 or cols < 1 or rows * cols > 12:
      raise TextureError("gridsize must be non-zero and no more than 12 squares")
    if w // cols != h // rows or w % cols or h % rows:
      raise TextureError("PNG size must be integer multiple of gridsize")
    if rows == 1 and cols == 1:
      return img, w, w
    side = w // cols
    faces = np.zeros((6, side, side, img.shape[2]), np.uint8)
    layout = v["gridlayout"]
    if len(layout) != rows * cols:
      raise TextureError("gridlayout length must match gridsize")
    for k in range(rows * cols):
      sym = layout[k] if k < len(layout) else "."
      if sym == ".":
        continue
      i = "RLUDFB".index(sym)
      r, c = divmod(k, cols)
      faces[i] = img[r * side:(r + 1) * side, c * side:(c + 1) * side]
    return faces.reshape(6 * side, side, -1), side, 6 * side
  files = [v.get("file" + f) for f in _CUBE_FACES]
  if not any(files):
    raise TextureError("texture has neither a builtin nor a file")
  faces, side = [], None
  for f in files:
    if f is None:
      faces.append(None)
      continue
    img = decode_image(read(node, f), f, nch, srgb)
    side = img.shape[1] if side is None else side
    if img.shape[0] != side or img.shape[1] != side:
      raise TextureError("cube texture faces must be square and of the same size")
    faces.append(img)
  full = [f if f is not None else np.zeros((side, side, nch), np.uint8) for f in faces]
  return np.concatenate(full, axis=0), side, 6 * side


def compile_textures(nodes: list[Node], defaults: Defaults, read) -> tuple[dict, list[str]]:
  """tex_* fields and names; `read(node, file)` returns a texture file's bytes."""
  out = {k: [] for k in ("type", "colorspace", "width", "height", "nchannel", "adr")}
  data, names = [], []
  for node in nodes:
    v = defaults.resolve(node, None)
    if not v["embed"]:
      raise node.error("texture embed='false' (texture data by reference) is not supported by "
                       "jaxmj yet", "embed")
    srgb = []  # per PNG file of this texture: whether it carries an sRGB chunk
    try:
      if v["builtin"] != "none":
        if int(v["nchannel"]) != 3:
          raise TextureError("builtin textures must have 3 channels")
        img, w, h = _builtin(v)
      else:
        img, w, h = _from_files(node, v, read, srgb)
    except TextureError as e:
      raise node.error(str(e)) from None
    name = v["name"] or (os.path.splitext(os.path.basename(v["file"]))[0] if v["file"] else "")
    if not name and v["type"] != "skybox":  # MuJoCo looks textures up by name
      raise node.error("empty name in texture", "name")
    names.append(name)
    out["type"].append(TEXTYPE[v["type"]])
    space = COLORSPACE[v["colorspace"]]
    if space == COLORSPACE["auto"] and srgb:
      # MuJoCo resolves "auto" for PNG files: sRGB if the file says so, else linear
      space = COLORSPACE["sRGB"] if all(srgb) else COLORSPACE["linear"]
    out["colorspace"].append(space)
    out["width"].append(w)
    out["height"].append(h)
    out["nchannel"].append(img.shape[-1])
    out["adr"].append(sum(d.size for d in data))
    data.append(np.ascontiguousarray(img, np.uint8).ravel())
  f = {"tex_" + k: np.array(vals, np.int32) for k, vals in out.items()}
  f["ntex"] = len(nodes)
  f["tex_data"] = np.concatenate(data) if data else np.zeros(0, np.uint8)
  f["ntexdata"] = int(f["tex_data"].size)
  return f, names


def compile_materials(nodes: list[Node], defaults: Defaults, tex_ids: dict) -> tuple[dict,
                                                                                     list[str]]:
  """mat_* fields and names; `tex_ids` maps texture names to ids."""
  n = len(nodes)
  f = {"nmat": n, "mat_texid": np.full((n, NTEXROLE), -1, np.int32),
       "mat_texuniform": np.zeros(n, bool), "mat_texrepeat": np.ones((n, 2), np.float32),
       "mat_rgba": np.ones((n, 4), np.float32)}
  scalars = ("emission", "specular", "shininess", "reflectance", "metallic", "roughness")
  for k in scalars:
    f["mat_" + k] = np.zeros(n, np.float32)
  names = []
  for i, node in enumerate(nodes):
    v = defaults.resolve(node, None)
    if not v["name"]:
      raise node.error("empty name in material", "name")
    names.append(v["name"])
    layers = [c for c in node.children if c.tag == "layer"]
    if v["texture"] is not None and layers:
      raise node.error("A material with a texture attribute cannot have layer sub-elements")
    if v["texture"] is not None:
      f["mat_texid"][i, TEXROLE["rgb"]] = _texture(node, v["texture"], tex_ids, "texture")
    for layer in layers:
      role = layer.get("role") or "rgb"
      f["mat_texid"][i, TEXROLE[role]] = _texture(layer, layer.get("texture"), tex_ids,
                                                  "texture")
    f["mat_texuniform"][i] = bool(v["texuniform"])
    f["mat_texrepeat"][i] = np.asarray(v["texrepeat"], float)
    f["mat_rgba"][i] = np.asarray(v["rgba"], float)
    for k in scalars:
      f["mat_" + k][i] = v[k]
  return f, names


def _texture(node: Node, name, ids: dict, attr: str) -> int:
  if name is None:
    raise node.error(f"missing required attribute '{attr}'", attr)
  if name not in ids:
    raise node.error(f"unknown texture '{name}'", attr)
  return ids[name]
