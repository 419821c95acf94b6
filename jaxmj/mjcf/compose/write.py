"""Writing a composed PyMJCF model: one parse.Node tree feeds both the XML text and the
compiler, so `Model.from_mjcf(root)` and compiling `root.to_xml_string()` agree by
construction.

Scoping (seed 004): an attached model's names, classes and string references get its prefix
`child/` (`parent/child/` when nested); its attachment frame is the body `child/`. Default
classes never leak between models: when models are attached, the top-level (main) default
class stays empty, the top model's global defaults move to class `/`, an attached model's to
class `child/` (its own classes nest inside as `child/name`), and elements without a class get
their model's class through `class`/`childclass` where the surrounding XML would give another.
"""

from __future__ import annotations

from lxml import etree

from jaxmj.mjcf.assets import skin
from jaxmj.mjcf.compile import build
from jaxmj.mjcf.compose import attach
from jaxmj.mjcf.compose.element import (
  REFERENCES,
  REQUIRED,
  AttachmentFrame,
  Element,
  RootElement,
  generated_name,
  section_order,
)
from jaxmj.mjcf.compose.values import Asset, format_value
from jaxmj.mjcf.spec import parse, schema
from jaxmj.mjcf.spec.parse import Node

# Namespaces whose names are always explicit, so a string reference can be checked on write
# (a mesh or texture may be named after its file instead).
_CHECKED = ("joint", "tendon", "site", "body", "geom", "actuator")


def to_node(model: RootElement) -> Node:
  """`model` and every model attached to it as one validated-shape Node tree."""
  return _Writer(model).root()


def to_lxml(node: Node):
  el = etree.Element(node.tag.rpartition("/")[2], dict(node.attrs))  # scoped keys as written
  for c in node.children:
    el.append(to_lxml(c))
  return el


def lxml_string(el, pretty_print: bool = True) -> str:
  return etree.tostring(el, pretty_print=pretty_print, encoding="unicode")


def subtree_node(el: Element, top: RootElement, precision: int | None = None,
                 zero_threshold: float = 0.0) -> Node:
  """Node of `el` as written in model `top` with its attachments (its names, classes and
  merged children as there); floats formatted as values.format_value."""
  writer = _Writer(top, precision, zero_threshold)
  writer.root()
  node = writer.nodes.get(id(el))
  if node is None:
    raise el.error(f"<{el.tag}> is not written in model {top.model!r} (removed, or not "
                   "in a model attached to it)")
  return node


def assets(model: RootElement) -> dict[str, bytes]:
  writer = _Writer(model)
  writer.root()
  return writer.assets


def compile_model(model: RootElement):
  """jaxmj Model of `model` with its attachments, compiled from the Node tree directly."""
  writer = _Writer(model)
  node = writer.root()
  parse.validate(node, None)  # the compiler's checks, as for a file
  return build.compile_node(node, "", writer.assets)


class _Writer:
  def __init__(self, top: RootElement, precision: int | None = None,
               zero_threshold: float = 0.0):
    self.top = top
    self.fmt = lambda v: format_value(v, precision, zero_threshold)
    self.nodes: dict[int, Node] = {}  # id(element) -> its node, for writing subtrees
    self.models = top.models()
    self.prefix = {id(top): ""}
    for m in self.models[1:]:
      self.prefix[id(m)] = self.prefix[id(m.parent_model)] + m.model + "/"
    self.scope = {id(m): self._scope(m) for m in self.models}
    self.assets: dict[str, bytes] = {}
    self.names: dict[tuple, Element] = {}
    self.indices: dict[tuple, dict[int, int]] = {}  # (model, namespace) -> {element: index}

  def _scope(self, m: RootElement) -> str:
    """Default class that elements of `m` without a class must get."""
    d = m.section("default")
    if d is None:
      return "main"
    globals_ = any(c.tag != "default" and c._attrs for c in d._children)
    if m is self.top:
      return "/" if globals_ and len(self.models) > 1 else "main"
    return self.prefix[id(m)] if globals_ or d._children else "main"

  def root(self) -> Node:
    attrs = {"model": self.top.model} if self.top.model else {}
    children = []
    for tag in section_order():
      parts = [(m, m.section(tag)) for m in self.models if m.section(tag) is not None]
      if not parts:
        continue
      if tag in attach.GLOBAL_SECTIONS:
        children.append(self._global(tag, parts[0][1]))
      elif tag == "default":
        children.append(self._make(parts[0][1], {}, self._defaults(parts)))
      elif tag == "worldbody":
        world = self.top.section("worldbody")
        kids = [] if world is None else [self.node(c, self.top, "main", self.scope[id(self.top)])
                                         for c in world._children]
        children.append(self._make(parts[0][1], {}, kids))
      else:
        children.append(self._make(parts[0][1], {}, self._merged(tag, parts)))
    self.nodes[id(self.top)] = Node("mujoco", attrs, children, *self.top.where())
    return self.nodes[id(self.top)]

  def _merged(self, tag: str, parts) -> list[Node]:
    out = []
    for m, section in parts:
      if tag == "keyframe" and m is not self.top and section._children:
        raise section.error(f"keyframes of attached model {m.model!r} cannot be merged "
                            "(their qpos would not match the composition); remove them: "
                            "for key in model.find_all('key'): key.remove()")
      out += [self.node(c, m, "main", self.scope[id(m)]) for c in section._children]
    return out

  def _global(self, tag: str, first: Element) -> Node:
    settings = attach.merged_options(self.models).get(tag, {})
    tree: dict = {}

    def shape(el: Element, level: dict) -> None:  # children kept even when empty
      for c in el._children:
        shape(c, level.setdefault((c.tag,), {}))

    for m in self.models:
      if m.section(tag) is not None:
        shape(m.section(tag), tree)
    for path, value in settings.items():
      level = tree
      for sub in path[:-1]:
        level = level.setdefault((sub,), {})
      level[path[-1]] = value
    self.nodes[id(first)] = self._settings_node(tag, tree, first)
    return self.nodes[id(first)]

  def _settings_node(self, tag: str, tree: dict, where: Element, parent: str = "") -> Node:
    attrs = {k: self.fmt(v) for k, v in tree.items() if isinstance(k, str)}
    kids = [self._settings_node(k[0], v, where, tag) for k, v in tree.items()
            if isinstance(k, tuple)]
    # Sections such as <visual><global> are scoped schema keys (schema.SCOPED).
    return Node(schema.SCOPED.get((parent, tag), tag), attrs, kids, *where.where())

  # ---------------------------------------------------------------- defaults

  def _defaults(self, parts) -> list[Node]:
    out = []
    for m, d in parts:
      content = self._default_content(d, m)
      scope = self.scope[id(m)]
      if scope == "main":
        out += content
      else:
        out.append(Node("default", {"class": scope}, content, *d.where()))
    return out

  def _default_content(self, d: Element, m: RootElement) -> list[Node]:
    out = []
    for c in d._children:
      if c.tag == "default":
        name = self._class(c, m, "class", c.identifier)
        out.append(self._make(c, {"class": name}, self._default_content(c, m)))
      else:
        out.append(self._make(c, self.attrs(c, m), []))
    return out

  def _class(self, el: Element, m: RootElement, attr: str, name) -> str:
    if isinstance(name, Element):  # a <default> element: its model's scoped class
      target = name
      if not (any(target._model is x for x in self.models) and target._attached_to_model()):
        raise el.error(f"dangling reference: {attr} refers to a default class that is not in "
                       "this model", attr)
      m, name = target._model, target.identifier or "main"
    if name == "main":
      return self.scope[id(m)]
    if el.tag != "default" and name not in m._ids.get("default", {}):
      raise el.error(f"dangling reference: no default class {name!r} in model {m.model!r}",
                     attr)
    return self.prefix[id(m)] + name

  # ---------------------------------------------------------------- elements

  def node(self, el: Element, m: RootElement, ctx: str, want: str) -> Node:
    """Node of `el` (of model `m`); `ctx` is the class an element without one gets from the
    written XML around it, `want` the one its own model gives it."""
    if isinstance(el, AttachmentFrame):
      return self._frame(el, m, ctx, want)
    attrs = self.attrs(el, m)
    spec = el.spec
    if "class" in spec and "class" not in el._attrs and want != ctx:
      attrs["class"] = want
    if "childclass" in spec:
      if "childclass" in el._attrs:
        ctx = want = attrs["childclass"]
      elif want != ctx:
        ctx = attrs["childclass"] = want
    return self._make(el, attrs, [self.node(c, m, ctx, want) for c in el._children])

  def _frame(self, frame: AttachmentFrame, m: RootElement, ctx: str, want: str) -> Node:
    child = frame.child
    name = self.prefix[id(child)]
    self._claim(frame, "body", name)
    attrs = {"name": name, **self.attrs(frame, m)}
    inner = self.scope[id(child)]
    if inner != ctx:
      attrs["childclass"] = inner
    own = [self.node(c, m, inner, want) for c in frame._children]
    world = child.section("worldbody")
    _check_no_free_joints(world, child)
    sub = [] if world is None else [self.node(c, child, inner, inner) for c in world._children]
    return self._make(frame, attrs, own + sub)

  def attrs(self, el: Element, m: RootElement) -> dict[str, str]:
    out = {}
    for name, value in el._attrs.items():
      if name == "name":
        out[name] = self._name(el, m, value)
        self._claim(el, el.namespace, out[name])
      elif name in ("class", "childclass"):
        out[name] = self._class(el, m, name, value)
      elif isinstance(value, Element):
        out[name] = self._reference(el, name, value)
      elif isinstance(value, Asset):
        value = self._scoped_asset(el, m, value)
        out[name] = value.vfs_name
        self.assets[value.vfs_name] = value.contents
      elif name in REFERENCES and isinstance(value, str):
        out[name] = self._string_reference(el, m, name, value)
      else:
        out[name] = self.fmt(value)
    if "name" not in el._attrs and el._auto_named():
      out = {"name": self._name(el, m, None), **out}
    asset = el._attrs.get("file")
    if isinstance(asset, Asset) and "name" in el.spec and "name" not in el._attrs:
      # MuJoCo names an unnamed asset after its file; the written file name is a hash.
      out["name"] = self.prefix[id(m)] + asset.prefix
      self._claim(el, el.namespace, out["name"])
    if not el._in_default():
      for name in REQUIRED.get(el.tag, ()):
        if name not in el._attrs:
          raise el.error(f"missing required attribute '{name}'", name)
    return out

  def _scoped_asset(self, el: Element, m: RootElement, asset: Asset) -> Asset:
    """An SKN file names its bones' bodies inside: in an attached model they get the
    model's prefix, as the bodies do."""
    prefix = self.prefix[id(m)]
    if el.tag != "skin" or not prefix:
      return asset
    try:
      contents = skin.prefix_skn_bones(asset.contents, prefix)
    except ValueError as e:
      raise el.error(str(e), "file") from None
    return Asset(contents, asset.extension, asset.prefix)

  def _name(self, el: Element, m: RootElement, name: str | None) -> str:
    """`el`'s name as written (el.prefixed_identifier from the top model)."""
    if isinstance(el._parent, AttachmentFrame):  # dm_control: 'child/' or 'child/name/'
      return self.prefix[id(el._parent.child)] + (name + "/" if name else "")
    return self.prefix[id(m)] + name if name else self._generated_name(el, m)

  def _generated_name(self, el: Element, m: RootElement) -> str:
    """el.prefixed_identifier's generated name, with the model's indices found once."""
    key = (id(m), el.namespace)
    if key not in self.indices:
      self.indices[key] = {id(x): i for i, x in enumerate(
        m.find_all(el.namespace, exclude_attachments=True))}
    return generated_name(self.prefix[id(m)], el.namespace, self.indices[key][id(el)])

  def _claim(self, el: Element, namespace: str | None, name: str) -> None:
    if namespace is None:
      return
    other = self.names.setdefault((namespace, name), el)
    if other is not el:
      raise el.error(f"name collision: two {namespace}s named {name!r} in the composed model",
                     "name")

  def _reference(self, el: Element, name: str, target: Element) -> str:
    tm = target._model
    live = any(tm is m for m in self.models) and target._attached_to_model()
    if isinstance(target, AttachmentFrame):
      live = live and target.child._frame is target
    if not live:
      raise el.error(f"dangling reference: {name} refers to {target!r}, which is not in this "
                     "model (removed, or in a model not attached to it)", name)
    written = target.prefixed_identifier(self.top.namescope)
    if written is None:
      raise el.error(f"{name} refers to an unnamed <{target.tag}>: give it a name", name)
    return written

  def _string_reference(self, el: Element, m: RootElement, name: str, value: str) -> str:
    namespace = REFERENCES[name]
    kind = el._attrs.get({"objname": "objtype", "refname": "reftype"}.get(name, ""))
    if (namespace == "body" or kind in ("body", "xbody")) and value == "world":
      return "world" if m is self.top else self.prefix[id(m)]
    if namespace in _CHECKED and value not in m._ids.get(namespace, {}):
      raise el.error(f"dangling reference: no {namespace} named {value!r} in model "
                     f"{m.model!r}", name)
    return self.prefix[id(m)] + value

  def _make(self, el: Element, attrs: dict, children: list[Node]) -> Node:
    self.nodes[id(el)] = Node(el._tag, attrs, children, *el.where())
    return self.nodes[id(el)]


def _check_no_free_joints(world: Element | None, child: RootElement) -> None:
  """MuJoCo allows free joints only in children of the world, which an attached model's top
  bodies no longer are (they hang from the attachment frame): say so, and what to do."""
  stack = [] if world is None else list(world._children)
  while stack:
    el = stack.pop()
    if el.tag == "frame":
      stack += el._children
    elif el.tag == "body":
      for j in el._children:
        if j.tag == "freejoint" or (j.tag == "joint" and j._attrs.get("type") == "free"):
          raise j.error(f"model {child.model!r} has a free joint, which MuJoCo allows only in "
                        "top-level bodies; remove it and add one to the attachment frame "
                        "instead (attach(...).add('freejoint'))")
