"""Validated MJCF tree -> Model: the body tree (bodytree.py), then inertia, every other
section's compiler in turn, keyframes, names and the derived constants (host side, numpy)."""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from jaxmj.constants import EPS, MINVAL
from jaxmj.mjcf.assets import asset, hfieldgrid, skin
from jaxmj.mjcf.compile import (
  actuator,
  arena,
  armature,
  attach,
  bodytree,
  camlight,
  custom,
  equality,
  fluid,
  frames,
  inertia,
  plastic,
  sensor,
  setconst,
  sleep,
  tendon,
  user,
  visual,
)
from jaxmj.mjcf.errors import MJCFError, warn
from jaxmj.mjcf.passes import align, discard, fuse
from jaxmj.mjcf.spec import parse, schema
from jaxmj.mjcf.spec.parse import Defaults, Node
from jaxmj.pytree import named_shapes
from jaxmj.scan import ancestor_mask, depths
from jaxmj.source import ModelSource
from jaxmj.types import (
  Cone,
  DisableBit,
  EnableBit,
  GeomType,
  Integrator,
  Jacobian,
  JointType,
  Model,
  Option,
  Solver,
)


@parse.allows_deep_trees
def compile_path(path, assets: dict | None = None) -> Model:
  """Compiles the MJCF file at `path` into a Model."""
  source = ModelSource.of(file=path, assets=assets)
  return compile_node(parse.parse_path(path, assets), str(path), assets, source)


@parse.allows_deep_trees
def compile_string(xml: str | bytes, assets: dict | None = None) -> Model:
  """Compiles MJCF text into a Model; `assets` maps included file names to contents."""
  source = ModelSource.of(xml=xml, assets=assets)
  return compile_node(parse.parse_string(xml, assets=assets), "", assets, source)


def _section(root: Node, tag: str) -> tuple[dict, list[Node]]:
  """Merged attributes of every top-level <tag> (later ones override) and the nodes."""
  nodes = [c for c in root.children if c.tag == tag]
  values = {name: default for name, (_, default) in schema.ATTRS[tag].items()}
  for n in nodes:
    values.update({k: n.get(k) for k in n.attrs})
  return values, nodes


@parse.allows_deep_trees
def compile_node(root: Node, path: str, assets: dict | None = None,
                 source: ModelSource | None = None) -> Model:
  """Compiles a parsed, validated MJCF tree; `assets` maps file names to contents, `source`
  is the MJCF the tree was read from (kept in the Model for MuJoCo to compile again)."""
  compiler, cnodes = _section(root, "compiler")
  if compiler["coordinate"] == "global":
    node = next(n for n in cnodes if n.attrs.get("coordinate") == "global")
    raise node.error("global coordinates are no longer supported by MuJoCo", "coordinate")
  for n in cnodes:
    seq = n.attrs.get("eulerseq")
    if seq is not None and (len(seq) != 3 or any(c not in "xyzXYZ" for c in seq)):
      raise n.error(f"invalid eulerseq {seq!r}: three of x, y, z, X, Y, Z", "eulerseq")
    if n.attrs.get("passthrough", "none") != "none":
      raise n.error(f"compiler passthrough={n.attrs['passthrough']!r} is not supported by "
                    "jaxmj yet", "passthrough")
    if "settotalmass" in n.attrs:
      warn(f"{n.file}:{n.line}: compiler attribute 'settotalmass' is deprecated in "
           "MuJoCo and will be removed in a future release")
  section = lambda r, t: _section(r, t)[0]  # noqa: E731
  root = attach.expand(root, compiler, path, assets, section)
  if compiler["discardvisual"]:
    root = discard.strip_materials(root)
  defaults = parse.parse_defaults(root)
  bodies = bodytree.walk_bodies(root, defaults, compiler)
  asset_fields = asset.compile_assets(root, defaults, compiler, bodies, path, assets)
  fused = None  # fused bodies' inertia, visual geoms counted (MuJoCo fuses, then discards)
  if compiler["discardvisual"]:  # MuJoCo weighs the visual geoms, then drops them
    own = _own_inertia(bodies, asset_fields, compiler)
    if compiler["fusestatic"]:
      fused = _own_inertia(*fuse.fuse_static(root, discard.with_inertia(bodies, own),
                                             asset_fields), compiler)
    root = discard.drop_visual(root, bodies)
    bodies = discard.with_inertia(bodytree.walk_bodies(root, defaults, compiler), own)
    asset_fields = asset.compile_assets(root, defaults, compiler, bodies, path, assets)
  if compiler["fusestatic"] or align.wanted(root, compiler):
    bodies = discard.with_inertia(bodies, _own_inertia(bodies, asset_fields, compiler))
    if compiler["fusestatic"]:  # bodies left without inertia sum their (fused) geoms
      bodies, asset_fields = fuse.fuse_static(root, bodies, asset_fields)
      bodies = discard.with_inertia(bodies, fused if fused is not None else
                                    _own_inertia(bodies, asset_fields, compiler))
    align.align_free(bodies, compiler)
  f = bodytree.body_arrays(bodies, defaults, compiler)
  f["_body_simple_off"] = np.array([b.node is not None and b.node.get("simple") == "false"
                                    for b in bodies])
  f.update(visual.geom_flags(bodies))
  f.update(asset_fields)
  _inertia(bodies, f, compiler)
  f.update(tendon.compile_tendons(root, bodies, defaults, compiler))
  f.update(setconst.structure_fields(f))
  _check_masses(bodies, f)
  f.update(actuator.compile_actuators(root, bodies, f, compiler))
  f.update(sleep.tree_sleep_policy(bodies, f))
  f.update(armature.actuator_targets(f))
  f.update(setconst.mass_constants(f))
  f.update(plastic.compile_plastic(f))
  f.update(tendon.tendon_constants(f))
  f.update(actuator.actuator_constants(f, root))
  f.update(_contact(root, bodies, defaults, f))
  f.update(equality.compile_equality(root, bodies, defaults, f))
  f.update(fluid.compile_fluid(bodies, f))
  f.update(camlight.compile_camlights(root, bodies, f))
  f.update(sensor.compile_sensors(root, bodies, f))  # camera rangefinders: cam_resolution
  f.update(vis=visual.compile_visual(root), stat=visual.compile_statistic(root, f))
  f.update(custom.compile_custom(root))
  f.update(asset.finalize(f))
  f.update(_skins(root, bodies, f, compiler, path, assets))
  f.update(hfieldgrid.window_fields(f))
  option = _option(root)
  size, size_nodes = _section(root, "size")
  f.update(user.compile_user(root, bodies, defaults, f, size))
  tuple_elements = f.pop("_tuple_elements")
  m = _model(root, bodies, f, option, size, path, source)
  arena.check_memory(m, size_nodes)
  if "_lengthrange_pending" in f:  # mj_setLengthRange: simulated with jaxmj's runtime
    from jaxmj.dynamics import lengthrange
    m = lengthrange.apply_pending(m, f["_lengthrange_pending"], f["_actuator_nodes"])
  return custom.resolve(m, tuple_elements)


# ---------------------------------------------------------------- inertia


def _geom_masses(f: dict) -> np.ndarray:
  """Mass of each geom: given, or density times volume."""
  vol = asset.volumes(f, np.array([inertia.geom_volume(t, s)
                                   for t, s in zip(f["geom_type"], f["geom_size"])]))
  return np.where(np.isnan(f["geom_mass_given"]), f["geom_density"] * vol,
                  f["geom_mass_given"])


def _inertia(bodies: list[bodytree.Body], f: dict, compiler: dict) -> None:
  """body_mass, body_ipos, body_iquat, body_inertia from <inertial> or from geoms."""
  nbody = len(bodies)
  mass, ipos = np.zeros(nbody), np.zeros((nbody, 3))
  iquat, inert = np.tile(bodytree.IDENTITY, (nbody, 1)), np.zeros((nbody, 3))
  gmass = _geom_masses(f)
  inferred = np.zeros(len(gmass), np.int8)  # geom_inertiakind
  lo, hi = compiler["inertiagrouprange"]
  mode = compiler["inertiafromgeom"]
  if bodies[0].inertial is not None:
    mass[0], ipos[0], inert[0], iquat[0] = _explicit_inertial(bodies[0].inertial, compiler)
  for b in range(1, nbody):
    if bodies[b].inertia is not None:
      mass[b], ipos[b], inert[b], iquat[b] = bodies[b].inertia
      continue
    node = bodies[b].inertial
    if node is not None:
      mass[b], ipos[b], inert[b], iquat[b] = _explicit_inertial(node, compiler)
    else:
      # No <inertial>: MuJoCo 4.0 starts the inertial frame at the body's pose as written
      # in its parent (or enclosing <frame>), a quirk we copy to match its model.
      ipos[b], iquat[b] = bodies[b].written
    if mode == "false" or (mode == "auto" and node is not None):
      continue
    adr, num = f["body_geomadr"][b], f["body_geomnum"][b]
    # MuJoCo ignores geoms of tiny mass (mjEPS) here, so a massless visual geom next to a
    # single massive one keeps that geom's frame and unsorted moments. Without any such
    # geom the values above stand, even with inertiafromgeom="true".
    gs = [g for g in range(adr, adr + num) if lo <= f["geom_group"][g] <= hi
          and f["geom_type"][g] != GeomType.PLANE and gmass[g] > EPS]
    if gs:
      mass[b], ipos[b], inert[b], iquat[b] = inertia.combine(
        gmass[gs], f["geom_pos"][gs], f["geom_quat"][gs],
        [inertia.geom_inertia(*asset.inertia_shape(f, g), gmass[g]) for g in gs])
      inferred[gs] = np.where(np.isnan(f["geom_mass_given"][gs]), 1, 2)
  for b in (b for b in range(1, nbody) if bodies[b].inertia is None):  # fused: bounded
    if compiler["boundmass"] > 0:
      mass[b] = max(mass[b], compiler["boundmass"])
    if compiler["boundinertia"] > 0:
      inert[b] = np.maximum(inert[b], compiler["boundinertia"])
    if compiler["balanceinertia"]:
      i0, i1, i2 = inert[b]
      if i0 + i1 < i2 or i0 + i2 < i1 or i1 + i2 < i0:
        inert[b] = (i0 + i1 + i2) / 3.0
  if compiler["settotalmass"] > 0 and mass[1:].sum() > 0:  # a URDF world's mass stays
    scale = compiler["settotalmass"] / mass[1:].sum()
    mass[1:], inert[1:] = mass[1:] * scale, inert[1:] * scale
  for b in range(1, nbody):
    i0, i1, i2 = inert[b]
    if i0 + i1 < i2 - 1e-12 or i0 + i2 < i1 - 1e-12 or i1 + i2 < i0 - 1e-12:
      node = bodies[b].inertial or bodies[b].node
      raise node.error("inertia must satisfy A + B >= C (use balanceinertia to fix)")
  f.update(body_mass=mass, body_ipos=ipos, body_iquat=iquat, body_inertia=inert)
  f["geom_mass"] = gmass
  f.update(_geom_inertia_plan(f, inferred, compiler))


def _geom_inertia_plan(f: dict, kind: np.ndarray, compiler: dict) -> dict:
  """What set_const needs to infer body inertia from geoms again on the device:
  geom_inertiakind (0 not counted, 1 density x volume, 2 given mass), geom_density, and
  geom_meshinertia (volume and equivalent inertia box of mesh geoms, 0 elsewhere). Bounds
  and settotalmass, which set_const does not apply, leave every geom uncounted."""
  if (compiler["boundmass"] > 0 or compiler["boundinertia"] > 0 or compiler["balanceinertia"]
          or compiler["settotalmass"] > 0):
    kind = np.zeros_like(kind)
  mesh = np.asarray(f["geom_type"]) == GeomType.MESH
  meshinertia = np.where(mesh[:, None], np.concatenate(
    [f["_geom_volume"][:, None], f["_geom_inertiabox"]], 1), 0.0)
  return dict(geom_inertiakind=kind, geom_density=np.asarray(f["geom_density"], float),
              geom_meshinertia=meshinertia.reshape(-1, 4))


def _own_inertia(bodies: list[bodytree.Body], asset_fields: dict, compiler: dict) -> dict:
  """body_* inertia of each body from its own <inertial> or geoms (bounds applied, not
  settotalmass), before discard.py, fuse.py or align.py change the bodies."""
  f = {**bodytree.attached(bodies, "geom"), **asset_fields}
  num = np.array([len(b.geoms) for b in bodies], np.int32)
  f.update(body_geomnum=num, body_geomadr=np.cumsum(num) - num)
  _inertia(bodies, f, {**compiler, "settotalmass": 0})
  return f


def _explicit_inertial(node: Node, compiler: dict):
  vals = {k: node.get(k) for k in node.attrs}
  for req in ("pos", "mass"):
    if vals.get(req) is None:
      raise node.error(f"missing required attribute '{req}'", req)
  if vals["mass"] < 0:
    raise node.error("mass must be non-negative", "mass")
  full = vals.get("fullinertia")
  if full is not None:
    if vals.get("diaginertia") is not None:
      raise node.error("give either diaginertia or fullinertia, not both", "fullinertia")
    orient = [k for k in ("quat", "axisangle", "euler", "xyaxes", "zaxis") if k in vals]
    if orient:
      raise node.error("fullinertia sets the principal frame: no orientation may be given",
                       orient[0])
    eigval, quat = inertia.full_to_principal(full)
    if np.any(eigval < 0):
      raise node.error("fullinertia must be positive definite", "fullinertia")
    return vals["mass"], np.asarray(vals["pos"]), eigval, quat
  diag = vals.get("diaginertia")
  if diag is None:
    raise node.error("missing diaginertia or fullinertia", "diaginertia")
  if np.any(np.asarray(diag) < 0):
    raise node.error("diaginertia must be non-negative", "diaginertia")
  return vals["mass"], np.asarray(vals["pos"]), np.asarray(diag, float), frames.orientation(
    vals, compiler, node)


def _check_masses(bodies: list[bodytree.Body], f: dict) -> None:
  """Moving bodies need mass and inertia, and no planes.

  As MuJoCo: a body with joints passes if it, or a body welded to it (a descendant reached
  without crossing another joint), has mass and all three moments of at least 1e-15.
  """
  valid = (f["body_mass"] >= MINVAL) & np.all(f["body_inertia"] >= MINVAL, axis=1)
  weld_ok = valid.copy()  # some body in b's welded subtree is valid
  for b in range(len(bodies) - 1, 0, -1):
    if weld_ok[b] and not bodies[b].joints:
      weld_ok[bodies[b].parent] = True
  for b in range(1, len(bodies)):
    if bodies[b].joints and not weld_ok[b]:
      raise (bodies[b].node or bodies[0].node).error(
        "mass and inertia of moving bodies must be larger than 1e-15")
  moving = np.zeros(len(bodies), bool)
  for b in range(1, len(bodies)):
    moving[b] = moving[bodies[b].parent] or bool(bodies[b].joints)
    for node, v, *_ in bodies[b].geoms:
      if moving[b] and v["type"] == "plane":
        raise node.error("planes are only allowed in static bodies", "type")


# ---------------------------------------------------------------- option, keyframes, model


def _option(root: Node) -> dict:
  opt, nodes = _section(root, "option")
  disable, enable, ipc = 0, 0, None
  for n in nodes:
    for flag in (c for c in n.children if c.tag == "flag"):
      for name, val in flag.attrs.items():
        if name in schema.FLAGS_DISABLE:
          bit = int(DisableBit[name.upper()])
          disable = disable | bit if val == "disable" else disable & ~bit
        else:
          bit = int(EnableBit[name.upper()])
          enable = enable | bit if val == "enable" else enable & ~bit
          ipc = flag if name == "ipc" else ipc
  if enable & EnableBit.IPC:  # MuJoCo refuses it too: jaxmj has no discrete integrator
    raise ipc.error("flag ipc requires integrator='discrete', which jaxmj does not support",
                    "ipc")
  opt["disableflags"], opt["enableflags"] = disable, enable
  return opt


def _keyframes(root: Node, f: dict, nkey: int) -> tuple[dict, list[str]]:
  """key_* arrays (unset entries take the model defaults) and the keyframe names."""
  nq, nv, nmocap = f["nq"], f["nv"], int((f["body_mocapid"] >= 0).sum())
  mocap = np.flatnonzero(f["body_mocapid"] >= 0)[np.argsort(f["body_mocapid"][
    f["body_mocapid"] >= 0])]
  dflt = {"qpos": f["qpos0"], "qvel": np.zeros(nv), "act": np.zeros(f.get("na", 0)),
          "ctrl": np.zeros(f.get("nu", 0)),
          "mpos": f["body_pos"][mocap].ravel(), "mquat": f["body_quat"][mocap].ravel()}
  # Quaternions in qpos (ball and free joints), renormalized as MuJoCo does.
  quats = [a + (3 if t == JointType.FREE else 0) for t, a in zip(f["jnt_type"], f["jnt_qposadr"])
           if t in (JointType.FREE, JointType.BALL)]
  group = {"mpos": 3, "mquat": 4}
  nodes = [k for kf in root.children if kf.tag == "keyframe" for k in kf.children]
  out = {k: [] for k in ("time", "qpos", "qvel", "act", "ctrl", "mpos", "mquat")}
  for i in range(max(nkey, len(nodes))):
    node = nodes[i] if i < len(nodes) else None
    out["time"].append(node.get("time") or 0.0 if node else 0.0)
    for k, v0 in dflt.items():
      v = np.array(v0, float)
      given = node.get(k) if node is not None else None
      if given is not None:
        if len(given) > len(v0):
          raise node.error(f"{k} has {len(given)} values, expected {len(v0)}", k)
        # MuJoCo takes a prefix: the leading values (for mocap poses, whole bodies only)
        # replace the defaults.
        n = len(given) - len(given) % group.get(k, 1)
        v[:n] = given[:n]
        if attach.GIVEN + k in node.attrs:  # written by attach.py: the entries it gives
          v = np.where([c == "1" for c in node.attrs[attach.GIVEN + k]], v, v0)
      if k == "qpos":
        for a in quats:
          v[a:a + 4] = frames.normalize_quat(v[a:a + 4])
      if k == "mquat":
        v = np.array([frames.normalize_quat(q) for q in v.reshape(-1, 4)], float).ravel()
      out[k].append(v)
  sizes = {"qpos": nq, "qvel": nv, "act": f.get("na", 0), "ctrl": f.get("nu", 0),
           "mpos": 3 * nmocap,
           "mquat": 4 * nmocap}
  res = {"key_time": np.asarray(out["time"], float)}
  for k, n in sizes.items():
    res["key_" + k] = np.asarray(out[k], float).reshape(len(out["time"]), n)
  return res, [n.attrs.get("name", "") for n in nodes] + [""] * (len(out["time"]) - len(nodes))


# ---------------------------------------------------------------- <contact>


def _contact(root: Node, bodies: list[bodytree.Body], defaults: Defaults, f: dict) -> dict:
  """pair_* and exclude_* arrays from every <contact> section, as MuJoCo 4.0 stores them.

  A pair takes its parameters from itself and its default class only (never from its geoms).
  Its geoms are ordered so that geom1's body id is not above geom2's (a pair within one body
  keeps the written order); signature = body1 << 16 | body2. Excludes store
  min(body) << 16 | max(body). MuJoCo then stable-sorts both lists by signature.
  """
  geom_ids, body_ids = {}, {"world": 0}
  for gid, (node, *_) in enumerate(g for b in bodies for g in b.geoms):
    if node.attrs.get("name"):
      geom_ids[node.attrs["name"]] = gid
  for bid, b in enumerate(bodies[1:], 1):
    if b.name:
      body_ids[b.name] = bid
  nodes = [n for c in root.children if c.tag == "contact" for n in c.children]
  pairs, excludes = [], []
  for kind in ("pair", "exclude"):
    _check_unique(bodies, kind, [(n, n.attrs.get("name", "")) for n in nodes if n.tag == kind])
  for node in nodes:
    if node.tag == "pair":
      v = defaults.resolve(node, None)
      g1, g2 = (_lookup(node, a, "geom", geom_ids) for a in ("geom1", "geom2"))
      if v["condim"] not in (1, 3, 4, 6):
        raise node.error(f"condim must be 1, 3, 4 or 6, got {v['condim']}", "condim")
      b1, b2 = int(f["geom_bodyid"][g1]), int(f["geom_bodyid"][g2])
      if b1 > b2:
        (g1, b1), (g2, b2) = (g2, b2), (g1, b1)
      pairs.append({
        "signature": (b1 << 16) + b2, "dim": v["condim"], "geom1": g1, "geom2": g2,
        "solref": bodytree.vec(v["solref"], 2),
        "solreffriction": bodytree.vec(v["solreffriction"], 2),
        "solimp": bodytree.solimp(v["solimp"]), "margin": v["margin"], "gap": v["gap"],
        "adhesion": v["adhesion"],
        "friction": bodytree.padded(v["friction"], schema.ATTRS["pair"]["friction"][1]),
        "name": node.attrs.get("name", "")})
    else:
      b1, b2 = (_lookup(node, a, "body", body_ids) for a in ("body1", "body2"))
      excludes.append(((min(b1, b2) << 16) + max(b1, b2), node.attrs.get("name", "")))
  pairs.sort(key=lambda p: p["signature"])  # stable, as MuJoCo's; names follow
  excludes.sort(key=lambda e: e[0])
  out = {"npair": len(pairs), "nexclude": len(excludes),
         "exclude_signature": np.array([e[0] for e in excludes], np.int32),
         "pair_names": [p["name"] for p in pairs], "exclude_names": [e[1] for e in excludes]}
  for k, (dtype, shape) in {"dim": (np.int32, ()), "geom1": (np.int32, ()),
                            "geom2": (np.int32, ()), "signature": (np.int32, ()),
                            "solref": (float, (2,)), "solreffriction": (float, (2,)),
                            "solimp": (float, (5,)), "margin": (float, ()),
                            "gap": (float, ()), "adhesion": (float, ()),
                            "friction": (float, (5,))}.items():
    out["pair_" + k] = np.array([p[k] for p in pairs], dtype).reshape((len(pairs),) + shape)
  return out


def _lookup(node: Node, attr: str, kind: str, ids: dict) -> int:
  """Id of the `kind` named by `node`'s attribute `attr`, or an error naming it."""
  name = node.attrs.get(attr)
  if name is None:
    raise node.error(f"missing required attribute '{attr}'", attr)
  if name not in ids:
    raise node.error(f"unknown {kind} '{name}'", attr)
  return ids[name]


def _skins(root: Node, bodies, f: dict, compiler: dict, path: str, assets) -> dict:
  """skin_* fields: bones bound to the final bodies, materials by name (skin.py)."""
  body_ids = {b.name: i for i, b in enumerate(bodies) if b.name}
  mat_ids = {name: i for i, name in enumerate(f["_asset_names"][3])}
  def read(node, file):
    return asset.read_file(node, file, compiler.get("meshdir"), compiler, path, assets)

  out = skin.compile_skins(root, body_ids, mat_ids, read)
  out["skin_pathadr"] = skin.skin_pathadr(root, compiler, path, out.pop("_skin_files"))
  return out


def _names(model_name: str, groups: list[list[str]]) -> tuple[bytes, list[np.ndarray]]:
  buf = bytearray(model_name.encode() + b"\0")
  adrs = []
  for names in groups:
    a = []
    for name in names:
      a.append(len(buf))
      buf += name.encode() + b"\0"
    adrs.append(np.array(a, np.int32))
  return bytes(buf), adrs


def _check_unique(bodies: list[bodytree.Body], kind: str, items: list) -> None:
  seen = {}
  for node, name in items:
    if not name:
      continue
    if name in seen:
      raise node.error(f"repeated {kind} name '{name}'", "name")
    seen[name] = node


def _option_model(opt: dict) -> Option:
  """The Option of <option>'s merged attributes and flags (`_option`'s dict)."""
  a = lambda x: jnp.asarray(x)
  return Option(
    timestep=a(opt["timestep"]), impratio=a(opt["impratio"]), tolerance=a(opt["tolerance"]),
    ls_tolerance=a(opt["ls_tolerance"]), noslip_tolerance=a(opt["noslip_tolerance"]),
    ccd_tolerance=a(opt["ccd_tolerance"]), sleep_tolerance=a(opt["sleep_tolerance"]),
    gravity=a(opt["gravity"]), wind=a(opt["wind"]), magnetic=a(opt["magnetic"]),
    density=a(opt["density"]), viscosity=a(opt["viscosity"]), o_margin=a(opt["o_margin"]),
    o_solref=a(opt["o_solref"]), o_solimp=a(bodytree.solimp(opt["o_solimp"])),
    o_friction=a(opt["o_friction"]),
    integrator=Integrator[opt["integrator"].upper()], cone=Cone[opt["cone"].upper()],
    jacobian=Jacobian[opt["jacobian"].upper()], solver=Solver[opt["solver"].upper()],
    iterations=opt["iterations"], ls_iterations=opt["ls_iterations"],
    noslip_iterations=opt["noslip_iterations"], ccd_iterations=opt["ccd_iterations"],
    sdf_iterations=opt["sdf_iterations"], sdf_initpoints=opt["sdf_initpoints"],
    disableflags=opt["disableflags"], enableflags=opt["enableflags"],
    disableactuator=int(sum(1 << int(g) for g in opt["actuatorgroupdisable"])),
  )


def _model(root, bodies, f, opt, size, path, source) -> Model:
  keys, key_names = _keyframes(root, f, size["nkey"])
  keys["key_plastic"] = plastic.key_plastic(root, f, len(keys["key_time"]))
  jnodes = [(n, n.attrs.get("name", "")) for b in bodies for n, _, _ in b.joints]
  gnodes = [(g[0], g[0].attrs.get("name", "")) for b in bodies for g in b.geoms]
  snodes = [(s[0], s[0].attrs.get("name", "")) for b in bodies for s in b.sites]
  bnodes = [(b.node, b.name) for b in bodies[1:]]
  knodes = [(k, k.attrs.get("name", "")) for kf in root.children if kf.tag == "keyframe"
            for k in kf.children]
  bnodes = [(bodies[0].node, "world")] + bnodes  # the world's name is taken
  for kind, items in (("body", bnodes), ("joint", jnodes), ("geom", gnodes), ("site", snodes),
                      ("keyframe", knodes)):
    _check_unique(bodies, kind, items)
  model_name = root.attrs.get("model", "MuJoCo Model")
  meshes, hfields, textures, materials = asset.name_groups(f)
  # one group per object type, in MuJoCo's order of the names buffer
  groups = {
    "body": [b.name for b in bodies], "jnt": [n for _, n in jnodes],
    "geom": [n for _, n in gnodes], "site": [n for _, n in snodes],
    **dict(zip(("cam", "light"), camlight.names(bodies))),
    "mesh": meshes, "skin": f.pop("_skin_names"), "hfield": hfields, "tex": textures,
    "mat": materials,
    "pair": f.pop("pair_names"), "exclude": f.pop("exclude_names"),
    "eq": f.pop("eq_names"), "tendon": f.pop("tendon_names"),
    "actuator": list(f.get("actuator_names", ())), "sensor": sensor.names(f),
    **dict(zip(("numeric", "text", "tuple"), custom.names(f))), "key": key_names,
  }
  names, adrs = _names(model_name, list(groups.values()))
  f.update({f"name_{kind}adr": adr for kind, adr in zip(groups, adrs)})

  unsupported = []
  f["flg_adhesion"] = int(np.any(f["geom_adhesion"] != 0) or np.any(f["pair_adhesion"] != 0))
  f["flg_adhesiongap"] = int(bool(f["flg_adhesion"]) and bool(
    np.any(f["geom_gap"] > 0) or np.any(f["pair_gap"] > 0)))
  f["flg_surfacevel"] = int(np.any(f["geom_surfacevel"] != 0))
  unsupported += sensor.unsupported(f)
  unsupported += actuator.unsupported(f)

  a = lambda x: jnp.asarray(x)
  option = _option_model(opt)
  fields = {fl.name for fl in dataclasses.fields(Model)}
  static = set(Model._static_names)
  kw = {}
  for name in fields:
    if name in f:
      kw[name] = f[name] if name in static else a(f[name])
    elif name in keys:
      kw[name] = a(keys[name])
  nmocap = int((f["body_mocapid"] >= 0).sum())
  kw.update(
    nu=f.get("nu", 0), nactuator=f.get("nactuator", 0), nout=f.get("nout", 0),
    na=f.get("na", 0), nmocap=nmocap, nkey=len(keys["key_time"]),
    nuserdata=size["nuserdata"], nconmax=size["nconmax"],
    ngravcomp=int(np.count_nonzero(f["body_gravcomp"])),
    ndamped=int(np.count_nonzero(f["dof_damping"]) + np.count_nonzero(f["dof_dampingpoly"])
                + np.count_nonzero(f.get("actuator_damping", ()))
                + np.count_nonzero(f.get("actuator_dampingpoly", ()))),
    opt=option, names=names, body_depth=depths(f["body_parentid"]),
    dof_depth=depths(f["dof_parentid"]),
    dof_ancestor=ancestor_mask(f["dof_parentid"]) if f["nv"] else np.zeros((0, 0), bool),
    dof_hasfrictionloss=np.asarray(f["dof_frictionloss"]) > 0,
    jnt_limitboth=tendon.limit_both(f, "jnt"),
    unsupported=tuple(unsupported), model_name=model_name, path=path,
    source=source, leaf_shapes=(),
  )
  missing = fields - set(kw)
  if missing:
    raise MJCFError(f"internal: compiler did not produce {sorted(missing)}")
  m = Model(**kw)
  return m.replace(leaf_shapes=tuple(named_shapes(m).items()))
