"""<asset> section: meshes, heightfields, textures and materials compiled into Model fields,
and the geoms that use them placed and sized as MuJoCo 4.0 does (host side). File formats and
the per-asset processing live in mesh.py, hfield.py and texture.py; this module resolves
files (meshes and heightfields in meshdir, textures in texturedir, either defaulting to
assetdir), names and references.
"""

from __future__ import annotations

import os

import numpy as np

from jaxmj.mjcf.assets import hfield, mesh, meshbuiltin, meshpoly, skin, texture
from jaxmj.mjcf.compile import frames
from jaxmj.mjcf.errors import warn
from jaxmj.mjcf.spec.parse import Defaults, Node
from jaxmj.types import GeomType

_MESH_TYPES = {".stl": "model/stl", ".obj": "model/obj", ".msh": "model/vnd.mujoco.msh"}
_PRIMITIVE_SIZES = {"sphere": 1, "capsule": 2, "cylinder": 2, "ellipsoid": 3, "box": 3}


def _asset_nodes(root: Node, tag: str) -> list[Node]:
  return [n for sec in root.children if sec.tag == "asset" for n in sec.children if n.tag == tag]


def read_file(node: Node, file: str, subdir: str | None, compiler: dict, path: str,
              assets: dict | None) -> bytes:
  """Bytes of an asset file: compiler strippath, then `assets` (by the file name joined to
  meshdir/texturedir or assetdir, as written, or, like MuJoCo's VFS, by its base name), then
  the disk, relative to the model's folder (the working folder for a string)."""
  if compiler.get("strippath"):
    file = os.path.basename(file)
  folder = subdir if subdir is not None else compiler.get("assetdir")
  name = os.path.join(folder, file) if folder else file
  if assets:
    by_base = {os.path.basename(k): k for k in assets}
    for key in (name, file, by_base.get(os.path.basename(file))):
      if key is not None and key in assets:
        data = assets[key]
        return data.encode() if isinstance(data, str) else bytes(data)
  base = os.path.dirname(os.path.abspath(path)) if path else os.getcwd()
  # '..' taken lexically, as MuJoCo does: meshdir/../x.stl needs no folder meshdir/meshdir
  full = os.path.normpath(name if os.path.isabs(name) else os.path.join(base, name))
  try:
    with open(full, "rb") as fh:
      return fh.read()
  except OSError as e:
    raise node.error(f"could not open file '{name}': {e.strerror}", "file") from None


def _content_type(node: Node, vals: dict, file: str, table: dict) -> str:
  given = vals.get("content_type")
  if given:
    if given not in table.values():
      raise node.error(f"invalid content type: '{given}'", "content_type")
    return given
  ext = os.path.splitext(file)[1].lower()
  if ext not in table:
    raise node.error(f"unknown or unsupported mesh file: '{file}'", "file")
  return table[ext]


# ---------------------------------------------------------------- meshes


def _mesh_geoms(bodies) -> dict[str, bool]:
  """Mesh name -> whether a colliding geom of type mesh uses it (MuJoCo then builds the hull)."""
  need: dict[str, bool] = {}
  for b in bodies:
    for _, v, *_ in b.geoms:
      name = v.get("mesh")
      if name is not None:
        collides = v["type"] == "mesh" and (v["contype"] != 0 or v["conaffinity"] != 0)
        need[name] = need.get(name, False) or collides
  return need


def _compile_mesh(node: Node, v: dict, needhull: bool, compiler: dict, path: str,
                  assets: dict | None) -> mesh.Mesh:
  scale = np.asarray(v["scale"], float)
  righthand = bool(np.prod(scale) > 0)
  vert = np.asarray(v["vertex"] if v["vertex"] is not None else np.zeros(0), np.float32)
  face = np.asarray(v["face"] if v["face"] is not None else np.zeros(0), np.int64)
  mode = v["inertia"]
  if v.get("builtin") is not None:
    for other in ("vertex", "file"):
      if v[other] is not None:
        raise node.error(f"Schema violation: at most one of 'builtin', '{other}' can be "
                         "specified", other)
    if v["params"] is None:
      raise node.error("required attribute missing: 'params'", "params")
    vert, face, forced = meshbuiltin.make(node, v["builtin"], v["params"])
    mode = forced or mode
  if v["maxhullvert"] != -1 and v["maxhullvert"] <= 3:
    raise node.error("maxhullvert must be larger than 3", "maxhullvert")
  if vert.size % 3:
    raise node.error("vertex data must be a multiple of 3", "vertex")
  if face.size % 3:
    raise node.error("face data must be a multiple of 3", "face")
  try:
    if v["file"] is not None:
      data = read_file(node, v["file"], compiler.get("meshdir"), compiler, path, assets)
      kind = _content_type(node, v, v["file"], _MESH_TYPES)
      loader = {"model/stl": mesh.load_stl, "model/obj": mesh.load_obj,
                "model/vnd.mujoco.msh": mesh.load_msh}[kind]
      fvert, fface = loader(data, righthand)
      if kind == "model/obj" and not mesh.obj_texcoords_valid(data):
        warn(f"{node.file}:{node.line}: obj_decoder: invalid or missing face texture "
             f"coordinate in '{v['file']}'; discarding texture coordinates (as MuJoCo)")
      if fvert.size and vert.size:
        raise node.error("repeated vertex specification", "vertex")
      if fface.size and face.size:
        raise node.error("repeated face specification", "face")
      if kind == "model/stl":
        fvert, fface = mesh.remove_repeated(fvert, fface)
      vert = fvert if fvert.size else vert
      face = fface if fface.size else face
    return mesh.process(vert.reshape(-1, 3), face.reshape(-1, 3), scale=scale,
                        refpos=v["refpos"], refquat=v["refquat"], mode=mode,
                        needhull=needhull, maxhullvert=v["maxhullvert"])
  except (mesh.MeshError, ValueError) as e:
    raise node.error(str(e)) from None


def _asset_name(node: Node, v: dict, kind: str) -> str:
  """A mesh's or height field's name: as given, else its file's name without the extension;
  `kind` names the element in MuJoCo's error for neither."""
  name = v.get("name") or ""
  if not name and v.get("file"):
    name = os.path.splitext(os.path.basename(v["file"]))[0]
  if not name:
    raise node.error(f"empty name in {kind}", "name")
  return name


def _unique(items: list[tuple[Node, str]], kind: str) -> dict[str, int]:
  ids: dict[str, int] = {}
  for i, (node, name) in enumerate(items):
    if name in ids:
      raise node.error(f"repeated name '{name}' in {kind}", "name")
    if name:
      ids[name] = i
  return ids


def _mesh_fields(meshes: list[mesh.Mesh]) -> dict:
  vnum = np.array([len(m.vert) for m in meshes], np.int32)
  fnum = np.array([len(m.face) for m in meshes], np.int32)
  gsize = np.array([0 if m.graph is None else len(m.graph) for m in meshes], np.int32)
  gadr = np.cumsum(gsize) - gsize
  hullnum = np.array([len(m.hull) for m in meshes], np.int32)
  nhull = int(hullnum.max()) if len(meshes) else 0
  hullvert = np.zeros((len(meshes), nhull, 3))
  for i, m in enumerate(meshes):
    # Pad with the first hull vertex: a repeated point leaves every support query unchanged.
    # Ascending vertex order: MuJoCo breaks exact support ties by the lowest vertex index.
    pts = m.vert[np.sort(m.hull)].astype(np.float32).astype(np.float64)
    hullvert[i] = np.concatenate([pts, np.repeat(pts[:1], nhull - len(pts), axis=0)])
  graphs = [m.graph for m in meshes if m.graph is not None]
  return {
    "nmesh": len(meshes), "nmeshvert": int(vnum.sum()), "nmeshface": int(fnum.sum()),
    "nmeshgraph": int(gsize.sum()),
    "mesh_vertadr": (np.cumsum(vnum) - vnum).astype(np.int32), "mesh_vertnum": vnum,
    "mesh_faceadr": (np.cumsum(fnum) - fnum).astype(np.int32), "mesh_facenum": fnum,
    "mesh_graphadr": np.where(gsize > 0, gadr, -1).astype(np.int32),
    # double precision until setconst has the geom boxes; finalize() stores float32
    "mesh_vert": np.concatenate([m.vert for m in meshes]) if meshes else np.zeros((0, 3)),
    "mesh_face": (np.concatenate([m.face for m in meshes]) if meshes
                  else np.zeros((0, 3))).astype(np.int32),
    "mesh_graph": (np.concatenate(graphs) if graphs else np.zeros(0)).astype(np.int32),
    "mesh_pos": np.array([m.pos for m in meshes]).reshape(-1, 3),
    "mesh_quat": np.array([m.quat for m in meshes]).reshape(-1, 4),
    "mesh_scale": np.array([m.scale for m in meshes]).reshape(-1, 3),
    "mesh_hullnum": hullnum, "mesh_hullvert": hullvert, **meshpoly.fields(meshes),
  }


# ---------------------------------------------------------------- heightfields


def _compile_hfield(node: Node, v: dict, compiler: dict, path: str, assets: dict | None):
  data, is_png = None, False
  if v["file"] is not None:
    data = read_file(node, v["file"], compiler.get("meshdir"), compiler, path, assets)
    ct = v.get("content_type")
    is_png = ct == "image/png" if ct else v["file"].lower().endswith(".png")
  if v["size"] is None:
    raise node.error("missing required attribute 'size'", "size")
  try:
    return hfield.build(v["size"], int(v["nrow"]), int(v["ncol"]), v["elevation"], data, is_png)
  except hfield.HFieldError as e:
    raise node.error(str(e)) from None


def _hfield_fields(fields: list) -> dict:
  nrow = np.array([h[1] for h in fields], np.int32)
  ncol = np.array([h[2] for h in fields], np.int32)
  num = nrow * ncol
  return {
    "nhfield": len(fields), "nhfielddata": int(num.sum()),
    "hfield_size": np.array([h[0] for h in fields]).reshape(-1, 4),
    "hfield_nrow": nrow, "hfield_ncol": ncol,
    "hfield_adr": (np.cumsum(num) - num).astype(np.int32),
    "hfield_data": (np.concatenate([h[3] for h in fields]) if fields
                    else np.zeros(0)).astype(np.float32),
  }


# ---------------------------------------------------------------- geoms and the hook


def raw_placement(node: Node, vals: dict, compiler: dict):
  """Pose and size of a geom sized by its asset (mesh, hfield, or a primitive fitted to a
  mesh), before the asset is applied (compile_assets does that)."""
  if vals["type"] == "sdf":
    raise node.error("geom type 'sdf' is not supported by jaxmj yet", "type")
  if vals.get("fromto") is not None:
    raise node.error("fromto cannot be used with mesh geom", "fromto")
  size = np.zeros(3)
  given = np.asarray(vals["size"], float)[:3]
  size[: len(given)] = given
  return np.asarray(vals["pos"], float), frames.orientation(vals, compiler, node), size


def compile_assets(root: Node, defaults: Defaults, compiler: dict, bodies, path: str,
                   assets: dict | None) -> dict:
  """mesh_*, hfield_* fields, the asset names, and per-geom geom_dataid plus the private
  `_geom_volume` / `_geom_inertiabox` used for mass; updates the bodies' mesh and hfield
  geoms in place with the asset's pose and size (MuJoCo's mjCGeom::Compile)."""
  need = _mesh_geoms(bodies)
  mnodes = _asset_nodes(root, "mesh")
  mvals = [defaults.resolve(n, None) for n in mnodes]
  mnames = [(n, _asset_name(n, v, "mesh")) for n, v in zip(mnodes, mvals)]
  mesh_ids = _unique(mnames, "mesh")
  meshes = [_compile_mesh(n, v, need.get(name, False), compiler, path, assets)
            for (n, name), v in zip(mnames, mvals)]
  hnodes = _asset_nodes(root, "hfield")
  hvals = [defaults.resolve(n, None) for n in hnodes]
  hnames = [(n, _asset_name(n, v, "height field")) for n, v in zip(hnodes, hvals)]
  hfield_ids = _unique(hnames, "hfield")
  hfields = [_compile_hfield(n, v, compiler, path, assets) for n, v in zip(hnodes, hvals)]

  tex_f, tex_names = texture.compile_textures(
    _asset_nodes(root, "texture"), defaults,
    lambda n, file: read_file(n, file, compiler.get("texturedir"), compiler, path, assets))
  mat_nodes = _asset_nodes(root, "material")
  mat_f, mat_names = texture.compile_materials(
    mat_nodes, defaults, _unique([(n, x) for n, x in zip(_asset_nodes(root, "texture"),
                                                          tex_names)], "texture"))
  mat_ids = _unique(list(zip(mat_nodes, mat_names)), "material")
  dataid, volume, box = [], [], []
  for b in bodies:
    for i, (node, v, pos, quat, size) in enumerate(b.geoms):
      did, vol, bs = -1, np.nan, np.full(3, np.nan)
      if v["type"] == "hfield":
        did = _ref(node, v, "hfield", hfield_ids)
        hs = hfields[did][0]
        size = np.array([hs[0], hs[1], 0.25 * hs[2] + 0.5 * hs[3]])
      elif v.get("mesh") is not None:
        mid = _ref(node, v, "mesh", mesh_ids)
        m = meshes[mid]
        center = np.zeros(3)
        if v["type"] == "mesh":
          did, size, vol, bs = mid, m.size(), m.volume, m.boxsz
        else:
          try:
            size, center = mesh.fit_geom(m, v["type"], bool(compiler.get("fitaabb")),
                                         v["fitscale"])
          except mesh.MeshError as e:
            raise node.error(str(e), "type") from None
          _check_fitted(node, v["type"], size)
        pos, quat = frames.compose(pos, quat, m.pos, m.quat)
        pos = pos + frames.quat_to_mat(quat) @ center
        v = _surfacevel_in_mesh_frame(v, m, center)
      elif v["type"] == "mesh":
        raise node.error("mesh geom must have a valid mesh (attribute 'mesh')", "mesh")
      b.geoms[i] = (node, v, pos, quat, size)
      dataid.append(did)
      volume.append(vol)
      box.append(bs)
  out = {**_mesh_fields(meshes), **_hfield_fields(hfields), **tex_f, **mat_f}
  out["geom_dataid"] = np.array(dataid, np.int32)
  for kind in ("geom", "site"):
    out[kind + "_matid"] = np.array([_matid(n, v, mat_ids) for b in bodies
                                     for n, v, *_ in getattr(b, kind + "s")], np.int32)
  out["_geom_volume"] = np.array(volume, float)
  out["_geom_inertiabox"] = np.array(box, float).reshape(-1, 3)
  out["_asset_names"] = ([n for _, n in mnames], [n for _, n in hnames], tex_names,
                         mat_names)
  out["_skin_bodies"] = skin.bone_bodies(
    root, lambda n, file: read_file(n, file, compiler.get("meshdir"), compiler, path, assets))
  return out


def _surfacevel_in_mesh_frame(v: dict, m, center: np.ndarray) -> dict:
  """v with its geom's surfacevel re-expressed in the compiled geom frame, which took in the
  mesh frame (and a fitted primitive's center) as mjCGeom::Compile does: the angular part's
  origin moves to the mesh position (the linear part gains omega x meshpos), then both
  parts turn by the inverse mesh orientation."""
  sv = v.get("surfacevel")
  if sv is None or not np.any(np.asarray(sv, float)):
    return v
  sv = [float(x) for x in sv] + [0.0] * (6 - len(sv))
  meshpos = [a + b for a, b in zip(frames.rotquat(center, m.quat), m.pos)]
  w = sv[3:6]
  wxp = [w[1] * meshpos[2] - w[2] * meshpos[1], w[2] * meshpos[0] - w[0] * meshpos[2],
         w[0] * meshpos[1] - w[1] * meshpos[0]]
  inv = [m.quat[0], -m.quat[1], -m.quat[2], -m.quat[3]]
  lin = frames.rotquat([a + b for a, b in zip(sv[:3], wxp)], inv)
  return {**v, "surfacevel": np.array(lin + frames.rotquat(w, inv))}


def _matid(node: Node, v: dict, ids: dict) -> int:
  name = v.get("material")
  if name is None:
    return -1
  if name not in ids:
    raise node.error(f"unknown material '{name}'", "material")
  return ids[name]


def _ref(node: Node, v: dict, kind: str, ids: dict) -> int:
  name = v.get(kind)
  if name is None:
    raise node.error(f"{kind} geom must have a valid {kind} (attribute '{kind}')", kind)
  if name not in ids:
    raise node.error(f"unknown {kind} '{name}'", kind)
  return ids[name]


def _check_fitted(node: Node, gtype: str, size: np.ndarray) -> None:
  for k in range(_PRIMITIVE_SIZES.get(gtype, 0)):
    if size[k] <= 0 and not (gtype == "capsule" and k == 1):
      raise node.error(f"size {k} of the geom fitted to its mesh is not positive", "mesh")


def volumes(f: dict, primitive: np.ndarray) -> np.ndarray:
  """Geom volumes for mass: the mesh's (or its area for shell inertia) where the geom is a
  mesh, MuJoCo's box volume for heightfields, `primitive` elsewhere."""
  vol = np.where(np.isnan(f["_geom_volume"]), primitive, f["_geom_volume"])
  box = 8.0 * np.prod(np.asarray(f["geom_size"], float).reshape(-1, 3), axis=1)
  return np.where(np.asarray(f["geom_type"]) == GeomType.HFIELD, box, vol)


def inertia_shape(f: dict, g: int) -> tuple[int, np.ndarray]:
  """(type, size) whose solid inertia MuJoCo gives geom g: a mesh's equivalent inertia box,
  a heightfield's geom box, else the geom itself."""
  t = int(f["geom_type"][g])
  if t == GeomType.MESH:
    return GeomType.BOX, f["_geom_inertiabox"][g]
  if t == GeomType.HFIELD:
    return GeomType.BOX, np.asarray(f["geom_size"][g], float)
  return t, f["geom_size"][g]


def finalize(f: dict) -> dict:
  """Fields stored in MuJoCo's precision once every derived quantity is computed, and the
  material ids of tendons (compiled before the assets' names are at hand)."""
  mat_ids = {name: i for i, name in enumerate(f["_asset_names"][3])}
  return {"mesh_vert": np.asarray(f["mesh_vert"], np.float32).reshape(-1, 3),
          "tendon_matid": np.array([_matid(node, v, mat_ids)
                                    for node, v in f.get("_tendon_material", ())], np.int32)}


def name_groups(f: dict) -> list[list[str]]:
  """Asset names in MuJoCo's names-buffer order (after sites): meshes, hfields, textures,
  materials."""
  return [list(g) for g in f["_asset_names"]]
