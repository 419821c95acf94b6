"""<skin>: skinned meshes, compiled into MuJoCo 4.0's skin_* fields (host side).

A skin is a triangle mesh whose vertices follow bodies (bones) with per-vertex weights. It is
visual only: nothing in the runtime reads it. Its data comes inline (vertex, texcoord, face
and <bone> children) or from a binary SKN file, and is compiled as mjCSkin::Compile does:
bones bound to body ids, each vertex's weights normalized to sum to one (in float32, summed
in bone order), bind quaternions normalized in double.
"""

from __future__ import annotations

import os

import numpy as np

from jaxmj.constants import EPS, MINVAL
from jaxmj.mjcf.spec import schema
from jaxmj.mjcf.spec.parse import Node

_INLINE = ("vertex", "texcoord", "face")


class _Skin:
  def __init__(self, node: Node, name: str, file: str | None):
    self.node, self.name, self.file = node, name, file
    self.vert = self.texcoord = self.face = None
    self.bones: list[tuple] = []  # (body name, bindpos, bindquat, vertid, vertweight)


def _value(node: Node, name: str):
  """The attribute's typed value, or the schema's default."""
  value = node.get(name)
  return schema.ATTRS[node.tag][name][1] if value is None else value


def skin_nodes(root: Node) -> list[Node]:
  return [n for sec in root.children if sec.tag == "asset" for n in sec.children
          if n.tag == "skin"]


def skin_name(node: Node) -> str:
  """The skin's name, else its file's name without folder and extension (MuJoCo's rule)."""
  name = node.attrs.get("name")
  if name:
    return name
  return os.path.splitext(os.path.basename(node.attrs.get("file") or ""))[0]


# An SKN bone record: a 40-byte body name field (MuJoCo reads at most 39 characters of it),
# bindpos (3), bindquat (4), vertex count: 18 words, then count vertex ids and weights.
SKN_NAME_BYTES = 40
SKN_BONE_WORDS = 18


def _read_skn(node: Node, skin: _Skin, data: bytes, file: str) -> None:
  """mjCSkin::LoadSKN: header (nvert, ntexcoord, nface, nbone), then vertices, texcoords,
  faces, and per bone a 40-byte body name, bindpos, bindquat, vertex count, ids, weights."""
  def fail(why):
    raise node.error(f"{why} in SKN file '{file}'", "file")

  if not data:
    fail("empty data")
  if len(data) < 16:
    fail("missing header")
  nvert, ntex, nface, nbone = np.frombuffer(data[:16], np.int32)
  if min(nvert, ntex, nface, nbone) < 0:
    fail("negative size in header")
  words = np.frombuffer(data[16:len(data) - (len(data) - 16) % 4], np.float32)
  ints = words.view(np.int32)
  if words.size < 3 * nvert + 2 * ntex + 3 * nface + SKN_BONE_WORDS * nbone:
    fail("insufficient data")
  cnt = 0
  skin.vert = words[cnt:cnt + 3 * nvert].reshape(-1, 3) if nvert else None
  cnt += 3 * nvert
  skin.texcoord = words[cnt:cnt + 2 * ntex].reshape(-1, 2) if ntex else None
  cnt += 2 * ntex
  skin.face = ints[cnt:cnt + 3 * nface].reshape(-1, 3) if nface else None
  cnt += 3 * nface
  for i in range(nbone):
    if words.size - cnt < SKN_BONE_WORDS:
      fail(f"insufficient data for bone {i}")
    body = words[cnt:cnt + 10].tobytes()[:SKN_NAME_BYTES - 1].split(b"\0")[0].decode()
    pos, quat, count = words[cnt + 10:cnt + 13], words[cnt + 13:cnt + 17], int(ints[cnt + 17])
    cnt += SKN_BONE_WORDS
    if count < 1:
      fail(f"vertex count must be positive for bone {i}")
    if (words.size - cnt) // 2 < count:
      fail(f"insufficient vertex data for bone {i}")
    skin.bones.append((body, pos, quat, ints[cnt:cnt + count], words[cnt + count:cnt + 2 * count]))
    cnt += 2 * count
  if len(data) != 16 + 4 * cnt:
    fail("unexpected buffer size")


def prefix_skn_bones(data: bytes, prefix: str) -> bytes:
  """The SKN file `data` with `prefix` before every bone's body name: a skin of a model
  attached under a name scope binds the renamed bodies (dm_control rewrites its skins so).
  Data the format does not parse is returned as it is, for _read_skn to report. Raises
  ValueError for a prefixed name longer than the format holds."""
  if len(data) < 16:
    return data
  nvert, ntex, nface, nbone = (int(n) for n in np.frombuffer(data[:16], np.int32))
  out, at = bytearray(data), 16 + 4 * (3 * nvert + 2 * ntex + 3 * nface)
  for _ in range(nbone):
    if nvert < 0 or ntex < 0 or nface < 0 or at + 4 * SKN_BONE_WORDS > len(data):
      return data
    name = bytes(data[at:at + SKN_NAME_BYTES - 1]).split(b"\0")[0]
    renamed = prefix.encode() + name
    if len(renamed) > SKN_NAME_BYTES - 1:
      raise ValueError(f"skin bone body {renamed.decode()!r} is longer than a skin file holds "
                       f"({SKN_NAME_BYTES - 1} characters)")
    out[at:at + SKN_NAME_BYTES] = renamed.ljust(SKN_NAME_BYTES, b"\0")
    end = at + 4 * SKN_BONE_WORDS  # the vertex count is the record's last word
    count = int(np.frombuffer(data[end - 4:end], np.int32)[0])
    at = end + 8 * max(count, 0)
  return bytes(out)


def _read_inline(node: Node, skin: _Skin) -> None:
  f32 = lambda x: None if x is None else np.asarray(x, np.float32)  # noqa: E731
  a = node.attrs
  if a.get("vertex") is not None:
    skin.vert = f32(node.get("vertex"))
  if a.get("texcoord") is not None:
    skin.texcoord = f32(node.get("texcoord"))
  if a.get("face") is not None:
    skin.face = np.asarray(node.get("face"), np.int32)
  for bone in node.children:
    for attr in ("body", "bindpos", "bindquat", "vertid", "vertweight"):
      if bone.attrs.get(attr) is None:
        raise bone.error(f"required attribute missing: '{attr}'", attr)
    skin.bones.append((bone.get("body"), f32(bone.get("bindpos")), f32(bone.get("bindquat")),
                       np.asarray(bone.get("vertid"), np.int32), f32(bone.get("vertweight"))))


def _check(skin: _Skin) -> None:
  node = skin.node
  if any(x is None or not np.size(x) for x in (skin.vert, skin.face)) or not skin.bones:
    raise node.error("Missing data in skin")
  if np.size(skin.vert) % 3:
    raise node.error("Vertex data must be multiple of 3", "vertex")
  skin.vert = skin.vert.reshape(-1, 3)
  if skin.texcoord is not None and np.size(skin.texcoord) != 2 * len(skin.vert):
    raise node.error("Vertex and texcoord data incompatible size", "texcoord")
  if np.size(skin.face) % 3:
    raise node.error("Face data must be multiple of 3", "face")
  skin.face = skin.face.reshape(-1, 3)
  if skin.texcoord is not None:
    skin.texcoord = skin.texcoord.reshape(-1, 2)


def _weights(skin: _Skin) -> list[np.ndarray]:
  """Each bone's vertex weights divided by the vertex's total (float32, as MuJoCo)."""
  node, nvert = skin.node, len(skin.vert)
  total = np.zeros(nvert, np.float32)
  for _, _, _, ids, w in skin.bones:
    if len(ids) != len(w) or not len(ids):
      raise node.error("vertid and vertweight must have same non-zero size in skin")
    bad = ids[(ids < 0) | (ids >= nvert)]
    if bad.size:
      raise node.error(f"vertid {bad[0]} out of range in skin")
    np.add.at(total, ids, w)  # unbuffered, in order: MuJoCo's float32 running sums
  low = np.nonzero(~(total > MINVAL))[0]
  if low.size:
    raise node.error(f"vertex {low[0]} must have positive total weight in skin")
  return [w / total[ids] for _, _, _, ids, w in skin.bones]


def _bindquat(q: np.ndarray) -> np.ndarray:
  """mjuu_normvec on the quaternion in double, stored back as float32."""
  q = q.astype(np.float64)
  nrm2 = sum(x * x for x in q)  # in order, as the C loop
  if nrm2 < EPS:
    return q.astype(np.float32)
  nrm = np.sqrt(nrm2)
  return (q / nrm if abs(nrm - 1) > EPS else q).astype(np.float32)


def bone_bodies(root: Node, read_file) -> set[str]:
  """Names of the bodies the skins' bones follow (inline or in SKN files): MuJoCo's
  fusestatic keeps those bodies."""
  names = set()
  for node in skin_nodes(root):
    skin = _Skin(node, "", node.attrs.get("file"))
    inline = node.children or any(node.attrs.get(a) is not None for a in _INLINE)
    if skin.file and not inline and os.path.splitext(skin.file)[1].lower() == ".skn":
      _read_skn(node, skin, read_file(node, skin.file), skin.file)
    else:  # compile_skins refuses a skin with both
      skin.bones = [(b.attrs.get("body"),) for b in node.children]
    names.update(b[0] for b in skin.bones)
  return names


def compile_skins(root: Node, body_ids: dict[str, int], mat_ids: dict[str, int],
                  read_file) -> dict:
  """skin_* fields, nskin* sizes, and `_skin_names` / `_skin_files` for the names and paths
  buffers. `read_file(node, file)` returns an SKN file's bytes (looked up in meshdir)."""
  skins = []
  for node in skin_nodes(root):
    group = _value(node, "group")
    if not 0 <= group < 6:
      raise node.error("skin group must be between 0 and 5", "group")
    file = node.attrs.get("file")
    skin = _Skin(node, skin_name(node), file)
    if file:
      if any(node.attrs.get(a) is not None for a in _INLINE) or node.children:
        raise node.error(f"Both skin data and file were specified: {file}", "file")
      if os.path.splitext(file)[1].lower() != ".skn":
        raise node.error(f"Unknown skin file type: {file}", "file")
      _read_skn(node, skin, read_file(node, file), file)
    else:
      _read_inline(node, skin)
    _check(skin)
    for body, *_ in skin.bones:
      if body not in body_ids:
        raise node.error(f"unknown body '{body}' in skin")
    material = node.attrs.get("material")
    if material is not None and material not in mat_ids:
      raise node.error(f"unknown material '{material}' in skin", "material")
    skins.append(skin)
  return _fields(skins, body_ids, mat_ids)


def _fields(skins: list[_Skin], body_ids: dict, mat_ids: dict) -> dict:
  i32 = lambda x: np.asarray(x, np.int32)  # noqa: E731
  counts = lambda xs: np.cumsum([0] + xs)[:-1].astype(np.int32)  # noqa: E731
  nvert = [len(s.vert) for s in skins]
  ntex = [0 if s.texcoord is None else len(s.texcoord) for s in skins]
  nbone = [len(s.bones) for s in skins]
  bones = [b for s in skins for b in s.bones]
  weights = [w for s in skins for w in _weights(s)]
  nbv = [len(b[3]) for b in bones]
  cat = lambda xs, shape, dt: (np.concatenate(xs).astype(dt) if xs  # noqa: E731
                               else np.zeros(shape, dt))
  return {
    "nskin": len(skins), "nskinvert": sum(nvert), "nskintexvert": sum(ntex),
    "nskinface": sum(len(s.face) for s in skins), "nskinbone": len(bones),
    "nskinbonevert": sum(nbv),
    "skin_matid": i32([mat_ids.get(s.node.attrs.get("material"), -1) for s in skins]),
    "skin_group": i32([_value(s.node, "group") for s in skins]),
    "skin_rgba": np.asarray([_value(s.node, "rgba") for s in skins], np.float32).reshape(-1, 4),
    "skin_inflate": np.asarray([_value(s.node, "inflate") for s in skins], np.float32),
    "skin_vertadr": counts(nvert), "skin_vertnum": i32(nvert),
    "skin_texcoordadr": i32([a if n else -1 for a, n in zip(counts(ntex), ntex)]),
    "skin_faceadr": counts([len(s.face) for s in skins]),
    "skin_facenum": i32([len(s.face) for s in skins]),
    "skin_boneadr": counts(nbone), "skin_bonenum": i32(nbone),
    "skin_vert": cat([s.vert for s in skins], (0, 3), np.float32),
    "skin_texcoord": cat([s.texcoord for s in skins if s.texcoord is not None], (0, 2),
                         np.float32),
    "skin_face": cat([s.face for s in skins], (0, 3), np.int32),
    "skin_bonevertadr": counts(nbv), "skin_bonevertnum": i32(nbv),
    "skin_bonebindpos": cat([b[1][None] for b in bones], (0, 3), np.float32),
    "skin_bonebindquat": cat([_bindquat(b[2])[None] for b in bones], (0, 4), np.float32),
    "skin_bonebodyid": i32([body_ids[b[0]] for b in bones]),
    "skin_bonevertid": cat([b[3] for b in bones], (0,), np.int32),
    "skin_bonevertweight": cat(weights, (0,), np.float32),
    "_skin_names": [s.name for s in skins], "_skin_files": [s.file for s in skins],
  }


def skin_pathadr(root: Node, compiler: dict, path: str, skin_files: list) -> np.ndarray:
  """Each skin's address in MuJoCo's `paths` buffer (-1 without a file). The buffer holds
  the resolved file of every heightfield, mesh, skin and texture with one, in that order
  (model folder, then meshdir or assetdir, then the file as written, '..' resolved),
  each NUL-ended."""
  folder = os.path.dirname(path) if path else ""
  sub = compiler.get("meshdir") or compiler.get("assetdir") or ""
  resolved = lambda f: os.path.normpath(os.path.join(folder, sub, f))  # noqa: E731
  adr = sum(len(resolved(n.attrs["file"]).encode()) + 1 for sec in root.children
            if sec.tag == "asset" for n in sec.children
            if n.tag in ("hfield", "mesh") and n.attrs.get("file"))
  out = []
  for f in skin_files:
    out.append(adr if f else -1)
    adr += len(resolved(f).encode()) + 1 if f else 0
  return np.asarray(out, np.int32)
