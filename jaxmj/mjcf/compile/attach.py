"""<asset><model> and <attach>: another MJCF file's body, frame or world body copied in.

MuJoCo's reader parses each model asset into a spec of its own and `mjs_attach` copies the
chosen subtree into the parent (xml_native_reader.cc, user_model.cc). Here the copy is made
on the parsed tree before anything else compiles it, walking the world body in document
order with the <replicate> expansion (replicate.expand calls `_attach` at each <attach>, as
MuJoCo's reader attaches while it reads), as measured against mujoco 4.0
(tests/mjcf/test_model_attach.py):
- every name in the copy is `prefix + name`, references alike; the copy sits in a new frame
  at the <attach>; an attachment inside a <replicate> is made once, in the subtree the
  replicate then copies, so its names take each copy's suffix and its section elements join
  the lists the copies copy (each copy's together, as MuJoCo orders them);
- it keeps the values its own default classes gave it: the child's classes join the parent's
  as `prefix + class` (its `main` too, a class of its own: parse.ROOT_CLASS), none inheriting
  from the parent's;
- its angles are read in the child's units and Euler sequence (written as quaternions and
  radians or degrees where the parent's differ), its asset files found from the child's
  folder, meshdir and texturedir;
- every asset of the child is copied, used or not; classes and assets once per model and
  prefix (the copies of a <replicate> share them);
- a tendon, actuator, sensor, equality constraint, contact pair or exclude of the child is
  copied where its names resolve by MuJoCo's rule for its kind (replicate.namespaced): a
  name resolves as the copy's (prefixed) or, for a tendon's path element or one side of a
  pair, exclude or two-sided sensor, as the plain name of an element of the parent parsed
  before the <attach> (the sections, then the world body in document order); a tendon needs
  one path element in the copy, the other kinds every name (so one naming the world stays
  behind; an omitted body is the world and is kept); they follow the parent's own,
  attachment by attachment;
- the parent's keys are read against the final model, as a plain model's (in its element
  order, the entries left out taking qpos0 and zeros); a child's key (`prefix + name`) goes
  element by element: the copy's elements take its values, the parent's their defaults;
  under a <replicate> only the first copy brings the keys; a key that came with an
  attachment inside the child keeps its name;
- the child's <option> and <size> meet the parent's by compiler conflict (`_conflicts`):
  "warning" (the default) keeps the parent's, "error" refuses two different values, "merge"
  takes MuJoCo's per-field minimum, maximum or union, or refuses.
Where MuJoCo 4.0 does something else, the behaviour above is kept: a key of a partial copy
puts the values of the joints left out onto another copy's joints of the same name.
Without `model` the body or frame comes from this model (self-attachment) as expanded so far
(the attachments inside it included): renamed, with the elements naming it (this model's and
the copies made so far), its classes and assets as they are, and no keyframes of its own.
Refused by name: conflict="merge" of <size> memory, njmax, nconmax, nstack or option
actuatorgroupdisable,
a child whose other compiler settings (autolimits, inertiafromgeom, ...) differ from the
parent's, a child with skins or custom data, keys giving `act`.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from jaxmj.mjcf.compile import frames, replicate
from jaxmj.mjcf.errors import warn
from jaxmj.mjcf.spec import parse, schema
from jaxmj.mjcf.spec.parse import Node

_HOLDERS = ("worldbody", "body", "frame", "replicate")
_ASSETS = ("mesh", "hfield", "material", "texture")  # and the attributes naming them
# attributes naming an element of the tree or a section (assets are renamed, never checked)
_NAMES = {a: k for a, k in schema.REFERENCES.items() if k not in _ASSETS + ("skin",)}
_FILES = {"mesh": ("file",), "hfield": ("file",),
          "texture": ("file",) + tuple("file" + s for s in ("right", "left", "up", "down",
                                                             "front", "back"))}
# compiler settings whose effect the copy would need converted; jaxmj compiles the copy
# with the parent's, so a child that differs in one is refused by name
_SAME_COMPILER = ("autolimits", "inertiafromgeom", "inertiagrouprange", "boundmass",
                  "boundinertia", "balanceinertia", "settotalmass", "fusestatic",
                  "discardvisual", "alignfree", "strippath", "fitaabb")


def expand(root: Node, compiler: dict, path: str, assets: dict | None, section) -> Node:
  """root with its replicates expanded and its model assets attached, in document order as
  MuJoCo reads them (see the module docstring). `section(root, tag)` gives a top-level
  section's merged attributes (the compiler's)."""
  if not _models(root) and not _has_attach(root):
    return replicate.expand(root, compiler)
  state, root = _state(root, compiler, path, assets, section)
  root = replicate.expand(root, compiler, lambda node, ex: _attach(node, state, ex))
  root = dataclasses.replace(root, children=root.children + state.sections)
  if any(c.layout.keys for c in state.copies if c.keys):
    root = _keyframes(root, state)
  for text in state.warnings:
    warn(text)
  return root


def _models(root: Node) -> list[Node]:
  return [n for s in root.children if s.tag == "asset" for n in s.children if n.tag == "model"]


def _state(root: Node, compiler: dict, path: str, assets: dict | None, section):
  """(the _State of root's attachments, root without its <model> assets)."""
  state = _State(compiler, path, assets, section, _authored(root))
  for n in _models(root):  # named, else by the name of the model it holds
    if "name" in n.attrs:
      state.models[n.attrs["name"]] = n
    else:
      tree = _read(state, n)
      state.models[tree[0].attrs.get("model", "MuJoCo Model")] = (tree, n)
  root = dataclasses.replace(root, children=[
    dataclasses.replace(s, children=[n for n in s.children if n.tag != "model"])
    if s.tag == "asset" else s for s in root.children])
  defaults = parse.parse_defaults(root)
  state.own = _Child(root, compiler, defaults, _Layout(root, defaults), None)
  return state, root


def _has_attach(node: Node) -> bool:
  return any(c.tag == "attach" or (c.tag in _HOLDERS and _has_attach(c))
             for c in node.children)


def _stem(file: str) -> str:
  return os.path.splitext(os.path.basename(file))[0]


class _State:
  """One model's attachments: its compiler settings, folder, assets and authored options,
  the model assets it names, and what the copies add."""

  def __init__(self, compiler, path, assets, section, authored):
    self.compiler, self.path, self.assets = compiler, path, assets or {}
    self.section, self.authored = section, authored
    self.models = {}  # name -> <model> node, or ((tree, folder), node) read for its name
    self.own = None  # _Child: this model, for self-attachment
    self.loaded = {}  # model name -> _Child
    # the copies' default classes, assets, options and sizes, in attachment order (their
    # section elements go to the expansion's lists)
    self.sections = []
    self.copies = []  # _Copy of each attachment, in order
    self.shared = set()  # (model, prefix) whose default classes and assets are copied
    self.warnings = []
    self.expansion = None  # replicate.Expansion: names parsed so far, lists, first copies


class _Layout:
  """What a model's keyframe vectors index, in order: `items[field]` lists (element node,
  entries) for qpos and qvel (joints), ctrl (actuators), mpos and mquat (mocap bodies)."""

  def __init__(self, root: Node, defaults: parse.Defaults | None):
    self.items = {k: [] for k in KEY_FIELDS}  # without defaults: the order, sizes 1
    for wb in (c for c in root.children if c.tag == "worldbody"):
      self._walk(wb, "main", defaults)
    self.items["ctrl"] = [(a, 1) for s in root.children if s.tag == "actuator"
                          for a in s.children]
    self.keys = [k for s in root.children if s.tag == "keyframe" for k in s.children]

  def _walk(self, node: Node, cls: str, defaults: parse.Defaults | None) -> None:
    for c in node.children:
      if c.tag in ("body", "frame"):
        if c.tag == "body" and c.get("mocap"):
          self.items["mpos"].append((c, 3))
          self.items["mquat"].append((c, 4))
        self._walk(c, c.attrs.get("childclass", cls), defaults)
      elif c.tag in ("joint", "freejoint"):
        jtype = ("free" if c.tag == "freejoint" else
                 defaults.resolve(c, cls)["type"] if defaults else "")
        nq, nv = {"free": (7, 6), "ball": (4, 3)}.get(jtype, (1, 1))
        self.items["qpos"].append((c, nq))
        self.items["qvel"].append((c, nv))


@dataclasses.dataclass
class _Child:
  root: Node  # attached models already expanded inside it
  compiler: dict
  defaults: parse.Defaults
  layout: _Layout
  folder: str | None  # where its files are; None when read from `assets`


@dataclasses.dataclass
class _Copy:
  layout: _Layout  # the child's
  copied: dict  # id(child joint or actuator node) -> its copy
  keys: bool  # whether the child's keyframes come with this copy
  prefix: str


def _read(state: _State, node: Node) -> tuple[Node, str | None]:
  """(parsed tree, folder of its files or None when read from `assets`) of a <model>."""
  if "file" not in node.attrs:
    raise node.error("missing required attribute 'file'", "file")
  file = node.attrs["file"]
  if file in state.assets:
    return parse.parse_string(state.assets[file], file=file, assets=state.assets), None
  base = os.path.dirname(os.path.abspath(state.path)) if state.path else os.getcwd()
  full = file if os.path.isabs(file) else os.path.join(base, file)
  if not os.path.exists(full):
    raise node.error(f"could not open model file '{file}'", "file")
  return parse.parse_path(full, state.assets), os.path.dirname(os.path.abspath(full))


def _load(state: _State, attach: Node) -> _Child:
  name = attach.attrs["model"]
  if name in state.loaded:
    return state.loaded[name]
  node = state.models.get(name)
  if node is None:
    raise attach.error(f"could not find model '{name}'", "model")
  (root, folder), node = node if isinstance(node, tuple) else (_read(state, node), node)
  if root.tag != "mujoco":
    raise node.error(f"model '{name}' is not MJCF: attaching a URDF is not supported by jaxmj "
                     "yet", "file")
  compiler = state.section(root, "compiler")
  for key in _SAME_COMPILER:
    if not np.array_equal(np.asarray(compiler.get(key), object),
                          np.asarray(state.compiler.get(key), object)):
      raise node.error(f"model '{name}' sets compiler {key}={compiler[key]!r} where this "
                       f"model has {state.compiler.get(key)!r}: attaching it is not "
                       "supported by jaxmj yet", "file")
  for sec in root.children:
    if sec.tag == "custom" or (sec.tag == "asset" and any(n.tag == "skin"
                                                          for n in sec.children)):
      what = "custom data" if sec.tag == "custom" else "skins"
      raise node.error(f"model '{name}' has {what}: attaching it is not supported by jaxmj "
                       "yet", "file")
  _conflicts(state, attach, name, root)
  path = os.path.join(folder, os.path.basename(node.attrs["file"])) if folder else state.path
  inner = expand(root, compiler, path, state.assets, state.section)
  defaults = parse.parse_defaults(inner)
  child = _Child(inner, compiler, defaults, _Layout(inner, defaults), folder)
  state.loaded[name] = child
  return child


def _authored(root: Node) -> dict:
  """{'option timestep': (value, text), 'flag damper': ...}: what <option> and <size> write
  (later sections override earlier ones, as the compiler reads them)."""
  out = {}
  for sec in root.children:
    if sec.tag in ("option", "size"):
      out.update({f"{sec.tag} {k}": (sec.get(k), t) for k, t in sec.attrs.items()})
      for flag in (c for c in sec.children if c.tag == "flag"):
        out.update({f"flag {k}": (flag.get(k), t) for k, t in flag.attrs.items()})
  return out


# compiler conflict="merge": MuJoCo's per-field rule (its modeledit documentation's table)
_MERGE = {
  **{f"option {k}": min for k in ("timestep", "tolerance", "ls_tolerance", "noslip_tolerance",
                                  "ccd_tolerance", "sleep_tolerance")},
  **{f"option {k}": max for k in ("iterations", "ls_iterations", "noslip_iterations",
                                  "ccd_iterations", "sdf_iterations", "sdf_initpoints")},
  **{f"size {k}": max for k in ("nkey", "nuserdata", "nuser_body", "nuser_jnt", "nuser_geom",
                                "nuser_site", "nuser_cam", "nuser_tendon", "nuser_actuator",
                                "nuser_sensor")},
}
_MERGE_REFUSES = tuple(f"option {k}" for k in (
  "gravity", "wind", "magnetic", "density", "viscosity", "integrator", "cone", "jacobian",
  "solver", "impratio", "o_margin", "o_solref", "o_solimp", "o_friction"))


def _conflicts(state: _State, attach: Node, name: str, child: Node) -> None:
  """MuJoCo's attach conflict policy (compiler conflict) for the child's <option> and
  <size>: "warning" (the default) keeps the parent's values and warns of each the child
  writes otherwise, "error" refuses one both write differently (else as "warning"), "merge"
  merges field by field (`_MERGE`; flags are or-ed; a field only the child writes is
  adopted) and refuses two different values of a `_MERGE_REFUSES` field."""
  policy = state.compiler.get("conflict") or "warning"
  differ = []
  for key, (value, text) in _authored(child).items():
    mine = state.authored.get(key)
    sec, attr = key.split(" ")
    ref = schema.ATTRS[sec][attr][1] if mine is None else mine[0]
    if ref is None or not np.array_equal(np.asarray(value, object), np.asarray(ref, object)):
      differ.append((key, value, text, mine))
  if not differ:
    return
  if policy == "merge":
    _merge(state, attach, name, differ)
    return
  both = [d for d in differ if d[3] is not None]
  if policy == "error" and both:
    text = "; ".join(f"{k}: parent has {m[0]}, child has {v}" for k, v, _, m in both)
    raise attach.error(f"attach conflict with model '{name}' (compiler conflict='error'): "
                       f"{text}", "model")
  text = "; ".join(f"{k}: parent has {'its default' if m is None else m[0]}, child has {v}"
                   for k, v, _, m in differ)
  state.warnings.append(f"{attach.file}:{attach.line}: attach conflict with model "
                        f"'{name}', the parent's values kept: {text}")


def _merge(state: _State, attach: Node, name: str, differ: list) -> None:
  """Writes the merged values as an <option> and a <size> after the parent's own."""
  merged = {}
  for key, value, text, mine in differ:
    sec, attr = key.split(" ")
    if mine is None:  # only the child writes it
      merged[key] = (value, text)
    elif sec == "flag":  # or-ed: a disabling flag stays disabled, an enabling one enabled
      on = "disable" if attr in schema.FLAGS_DISABLE else "enable"
      merged[key] = (on, on) if on in (value, mine[0]) else mine
    elif key in _MERGE:
      pick = _MERGE[key](value, mine[0])
      merged[key] = (value, text) if pick == value else mine
    elif key in _MERGE_REFUSES:
      raise attach.error(f"attach conflict with model '{name}' (compiler conflict='merge'): "
                         f"{key}: parent has {mine[0]}, child has {value}", "model")
    else:
      raise attach.error(f"compiler conflict='merge' of {key} is not supported by jaxmj yet "
                         f"(model '{name}')", "model")
  state.authored.update(merged)
  written = {"flag": {}, "option": {}, "size": {}}
  for key, (_, text) in merged.items():
    sec, attr = key.split(" ")
    written[sec][attr] = text
  flags, option, size = written["flag"], written["option"], written["size"]
  if option or flags:
    kids = [Node("flag", flags, [], attach.file, attach.line)] if flags else []
    state.sections.append(Node("option", option, kids, attach.file, attach.line))
  if size:
    state.sections.append(Node("size", size, [], attach.file, attach.line))


def _content(node: Node, state: _State, ex: replicate.Expansion):
  """(child, the elements an <attach> copies, the default class in effect there, whether it
  is a self-attachment)."""
  if "prefix" not in node.attrs:
    raise node.error("missing required attribute 'prefix'", "prefix")
  if "body" in node.attrs and "frame" in node.attrs:
    raise node.error("attach takes a body or a frame, not both", "frame")
  kind = "body" if "body" in node.attrs else "frame" if "frame" in node.attrs else None
  same = "model" not in node.attrs  # self-attachment: this model's classes and assets
  if same and kind is None:
    raise node.error("either 'body' or 'frame' attribute must be specified for self-attach",
                     "model")
  child = state.own if same else _load(state, node)
  world = next((c for c in child.root.children if c.tag == "worldbody"), None)
  if kind is None:  # the world body's contents
    cls, content = "main", list(world.children) if world is not None else []
  else:
    found = (_find(world, kind, node.attrs[kind], "main", ex.walked if same else {})
             if world is not None else None)
    if found is None:
      where = ("in the current model for self-attachment" if same else
               f"in model asset '{node.attrs['model']}'")
      raise node.error(f"could not find {kind} '{node.attrs[kind]}' {where}", kind)
    content, cls = [found[0]], found[1]
  return child, content, cls, same


def _attach(node: Node, state: _State, ex: replicate.Expansion) -> Node:
  """The copy an <attach> stands for: a frame holding the child's body, frame or world; the
  section elements it brings go to the expansion's lists."""
  state.expansion = ex
  child, content, cls, same = _content(node, state, ex)
  rn = _Renamer(node.attrs["prefix"], child, state, same)
  copies = [rn.tree(c, cls) for c in content]
  for c in copies:
    ex.tree(c)
  if not same and (node.attrs["model"], rn.prefix) not in state.shared:  # once each
    state.shared.add((node.attrs["model"], rn.prefix))
    tops = [d for d in child.root.children if d.tag == "default"]
    if all(parse.ROOT_CLASS in d.attrs for d in tops):  # the child's main, even if unwritten
      tops.insert(0, Node("default", {}, [], node.file, node.line))
    state.sections += [rn.default(d, True) for d in tops]
    assets = [rn.asset(a) for s in child.root.children if s.tag == "asset"
              for a in s.children]
    if assets:
      state.sections.append(Node("asset", {}, assets, node.file, node.line))
  # a self-attachment tries this model's elements, the copies made so far too
  lists = ex.lists if same else replicate.section_lists(child.root)
  for (tag, _), lst in zip(replicate.LISTS, [list(lst) for lst in lists]):
    for e in lst:
      copy = rn.element(e, tag, ex)
      if copy is not None:
        ex.add(tag, copy)
  state.copies.append(_Copy(child.layout, rn.copied, not same, node.attrs["prefix"]))
  return Node("frame", {"childclass": rn.shared(cls)}, copies, node.file, node.line)


def _find(node: Node, kind: str, name: str, cls: str, walked: dict):
  """(element, the default class in effect where it is) of the `kind` named `name`; where
  `walked` has a holder's or replicate's expansion (replicate.Expansion.walked: this model
  as read so far, for a self-attachment), in that."""
  for c in node.children:
    c = walked[id(c)][1] if id(c) in walked else c
    for d in c if isinstance(c, list) else [c]:
      if d.tag not in ("body", "frame"):
        continue
      if d.tag == kind and d.attrs.get("name") == name:
        return d, cls
      found = _find(d, kind, name, d.attrs.get("childclass", cls), walked)
      if found is not None:
        return found
  return None


class _Renamer:
  """Copies a child's elements with `prefix + name`, references and classes alike, its
  angles in the parent's units."""

  def __init__(self, prefix: str, child: _Child, state: _State, same: bool):
    self.prefix, self.child, self.state = prefix, child, state
    self.same = same  # copying from this model: its classes and assets stay as they are
    c, p = child.compiler, state.compiler
    self.convert = (c["angle"], c["eulerseq"]) != (p["angle"], p["eulerseq"])
    self.copied = {}

  def name(self, n: str) -> str:
    """An element's name in the copy."""
    return self.prefix + n

  def shared(self, n: str) -> str:
    """A default class's or asset's name: prefixed, and never suffixed by a replicate
    around the attachment (its copies share them: MuJoCo copies them once); a
    self-attachment's, as is."""
    return n if self.same else self.prefix + n

  def default(self, node: Node, top: bool) -> Node:
    """A copy of one of the child's <default> classes: a class of its own at the top
    (parse.ROOT_CLASS: it starts from MuJoCo's values, not from the parent's main)."""
    attrs = {"class": self.shared(node.attrs.get("class", "main"))}
    if top:
      attrs[parse.ROOT_CLASS] = "1"
    children = [self.default(c, False) if c.tag == "default"
                else dataclasses.replace(c, attrs=self._attrs(c, None, in_default=True))
                for c in node.children]
    return dataclasses.replace(node, attrs=attrs, children=children)

  def _attrs(self, node: Node, cls: str | None = None, in_default: bool = False) -> dict:
    attrs = dict(node.attrs)
    if "name" in attrs:
      attrs["name"] = (self.shared if node.tag in _ASSETS else self.name)(attrs["name"])
    for a in ("class", "childclass"):
      if a in attrs:
        attrs[a] = self.shared(attrs[a])
    for a in _ASSETS:
      if a in attrs:
        attrs[a] = self.shared(attrs[a])
    if node.tag in ("camera", "light") and "target" in attrs:
      attrs["target"] = self.name(attrs["target"])
    if self.convert:
      self._angles(node, attrs, cls, in_default)
    return attrs

  def _angles(self, node: Node, attrs: dict, cls: str | None, in_default: bool) -> None:
    c = self.child.compiler
    if "euler" in attrs or "axisangle" in attrs:
      q = frames.orientation({k: node.get(k) for k in node.attrs}, c, node, normalize=False)
      attrs.pop("euler", None)
      attrs.pop("axisangle", None)
      attrs["quat"] = _text(q)
    if node.tag == "joint" and not in_default and c["angle"] != self.state.compiler["angle"]:
      # written on the joint, converted, whether it or its class gave them (a class may
      # serve slide joints too)
      vals = self.child.defaults.resolve(node, cls)
      given = self.child.defaults.classes[node.attrs.get("class", cls)].get("joint", {})
      if vals["type"] in ("hinge", "ball"):
        scale = np.pi / 180 if c["angle"] == "degree" else 180 / np.pi
        for k in ("range", "ref", "springref", "springyield"):
          if (k in node.attrs or k in given) and (k in ("range", "springyield")
                                                  or vals["type"] == "hinge"):
            attrs[k] = _text(np.asarray(vals[k], float) * scale)

  def tree(self, node: Node, cls: str) -> Node:
    """A copy of an element of the body tree; `cls` the default class in effect for it."""
    kind = "joint" if node.tag == "freejoint" else node.tag
    inner = node.attrs.get("childclass", cls) if node.tag in ("body", "frame") else cls
    copy = dataclasses.replace(node, attrs=self._attrs(node, cls),
                               children=[self.tree(c, inner) for c in node.children])
    if kind in ("joint", "body"):  # keyframes index joints and mocap bodies
      self.copied[id(node)] = copy
    return copy

  def asset(self, node: Node) -> Node:
    attrs = self._attrs(node)
    if "name" not in attrs and attrs.get("file"):  # MuJoCo names it after its file
      attrs["name"] = self.shared(_stem(attrs["file"]))
    if "class" in schema.ATTRS[node.tag] and "class" not in attrs:
      attrs["class"] = self.shared("main")
    if self.child.folder is not None:
      c = self.child.compiler
      sub = c.get("texturedir") if node.tag == "texture" else c.get("meshdir")
      sub = sub if sub is not None else c.get("assetdir")
      for a in _FILES.get(node.tag, ()):
        if a in attrs and not os.path.isabs(attrs[a]):
          attrs[a] = os.path.join(self.child.folder, sub or "", attrs[a])
    return dataclasses.replace(node, attrs=attrs, children=[
      dataclasses.replace(c, attrs=self._attrs(c)) for c in node.children])

  def element(self, node: Node, section: str, ex: replicate.Expansion) -> Node | None:
    """A copy of a section element whose names resolve among those parsed so far, each as
    the copy's name or, where its kind allows, as the parent's plain one
    (replicate.namespaced), else None."""
    resolved = replicate.namespaced(node, self.name, ex.has, section)
    if resolved is None:
      return None
    copy = self._section_copy(node, resolved)
    copy = dataclasses.replace(copy, children=[self._section_copy(c, r, False) for c, r in
                                               zip(node.children, resolved.children)])
    if section == "actuator":
      self.copied[id(node)] = copy
    return copy

  def _section_copy(self, node: Node, resolved: Node, classed: bool = True) -> Node:
    attrs = self._attrs(node)
    for a in node.attrs:
      if a in _NAMES:
        attrs[a] = resolved.attrs[a]
    if classed and "class" in schema.ATTRS.get(node.tag, {}) and "class" not in attrs:
      attrs["class"] = self.shared("main")
    return dataclasses.replace(node, attrs=attrs)


def _text(v) -> str:
  return " ".join(repr(float(x)) for x in np.ravel(v))


# ---------------------------------------------------------------- keyframes

# on a keyframe written here, per field: "1" for each entry it gives, "0" for one that takes
# the model's default (qpos0, zero)
GIVEN = "_given_"


KEY_FIELDS = ("qpos", "qvel", "ctrl", "mpos", "mquat")
# on a key that came with a copy: an outer attachment copies it under the same name
COPIED = "_copied"


def _keyframes(root: Node, state: _State) -> Node:
  """The keyframe section rewritten element by element for the model with its copies (see
  the module docstring)."""
  final = _Layout(root, parse.parse_defaults(root))
  adr, total = {}, {}
  for k in KEY_FIELDS:
    at = 0
    for n, e in final.items[k]:
      adr[k, id(n)] = at
      at += e
    total[k] = at
  keys = [(key, c.layout, c.copied, c.prefix) for c in state.copies if c.keys
          for key in c.layout.keys]
  nodes = list(state.own.layout.keys)  # read against the final model, as a plain model's
  for key, layout, copied, prefix in keys:
    if "act" in key.attrs:
      raise key.error("keyframe act in a model with attached models is not supported by "
                      "jaxmj yet", "act")
    attrs = {k: v for k, v in key.attrs.items() if k in ("name", "time", COPIED)}
    if prefix and COPIED not in attrs:  # a copy's key keeps the name its copy gave it
      attrs["name"] = prefix + attrs.get("name", "")
      attrs[COPIED] = "1"
    for k in KEY_FIELDS:
      given = np.asarray(key.get(k) if k in key.attrs else (), float)
      if GIVEN + k in key.attrs:  # a key an inner attachment wrote
        given = np.where([c == "1" for c in key.attrs[GIVEN + k]], given, np.nan)
      out, src = np.full(total[k], np.nan), 0
      for n, e in layout.items[k]:
        target = state.expansion.final(copied.get(id(n), n))
        if (k, id(target)) in adr and src + e <= len(given):
          out[adr[k, id(target)]:adr[k, id(target)] + e] = given[src:src + e]
        src += e
      attrs[k], attrs[GIVEN + k] = _given(out)
    nodes.append(dataclasses.replace(key, attrs=attrs))
  rest = [c for c in root.children if c.tag != "keyframe"]
  return dataclasses.replace(root, children=rest + [Node("keyframe", {}, nodes, root.file,
                                                         root.line)])


def _given(v: np.ndarray) -> tuple[str, str]:
  """(the values, NaN written as 0, and which entries are given)."""
  return _text(np.nan_to_num(v, nan=0.0)), "".join("0" if np.isnan(x) else "1" for x in v)
