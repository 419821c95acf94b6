"""PyMJCF's object model (seed 004) over the compiler's schema: build and edit MJCF in Python.

    root = mjcf.RootElement(model="arm")
    body = root.worldbody.add("body", name="upper_arm")
    body.add("joint", name="shoulder", type="ball")
    root.find("joint", "shoulder").damping = 0.1

Every element, attribute, type and child comes from `schema` at call time (other families
add to it), so whatever the compiler reads the object model can build. Child elements and
attributes are Python attributes (`class` is `dclass`): this is PyMJCF's documented API, so
the one `__getattr__` here is deliberate. Values are typed and checked when set; names are
unique per namespace within a model; a reference attribute may hold the element itself,
which survives renaming, prefixing and attachment (see `attach.py`, `write.py`).
"""

from __future__ import annotations

import copy
import os
import re

import numpy as np

from jaxmj.mjcf.compose.namescope import NameScope
from jaxmj.mjcf.compose.values import FILE_ATTRIBUTES, Asset, format_value, load_file, number
from jaxmj.mjcf.errors import MJCFError
from jaxmj.mjcf.spec import parse, schema
from jaxmj.mjcf.spec.parse import Node

# MuJoCo's document structure for elements whose attributes the schema knows but whose place
# it does not list yet (families not compiled by jaxmj can still be composed and written).
# Root sections are in MuJoCo's own reading order, which is also the order they are written.
SECTIONS = ("compiler", "option", "size", "visual", "statistic", "default", "extension",
            "custom", "asset", "worldbody", "contact", "deformable", "equality", "tendon",
            "actuator", "sensor", "keyframe")
STRUCTURE = {
  "mujoco": SECTIONS,
  "asset": ("mesh", "hfield", "skin", "texture", "material"),
  "custom": ("numeric", "text", "tuple"),
}
# Sections whose attributes are global to a composed model: attached models must agree.
GLOBAL_SECTIONS = ("compiler", "option", "size", "visual", "statistic")
# Children of these sections share one namespace (a <position> and a <velocity> actuator may
# not have the same name); children of tendon paths are references, not named objects.
_SECTION_NAMESPACE = {"actuator": "actuator", "sensor": "sensor", "tendon": "tendon",
                      "equality": "equality"}
_PATH_PARENTS = ("spatial", "fixed", "pulley")
# Singletons created on first access (PyMJCF's "on demand" elements); written only if used.
_ON_DEMAND_PARENTS = ("mujoco", "default", "option", "visual")
_OPTIONAL_SINGLE = {("body", "freejoint")}
# Attributes MuJoCo requires (the schema gives defaults, not requirements).
REQUIRED = {"inertial": ("pos", "mass")}
# Attribute name -> namespace of the element it names (schema.REFERENCES).
REFERENCES = schema.REFERENCES
# Namespaces whose unnamed elements are written with a generated name (dm_control's
# '/unnamed_geom_0' after the model's prefix), so every MuJoCo object has a name to be found
# and bound by; a name containing '/' cannot be the user's. Reading drops these names.
AUTO_NAMED = ("body", "joint", "geom", "site", "camera", "light", "actuator", "sensor",
              "tendon", "equality")
GENERATED_NAME = re.compile(r"(^|/)/unnamed_[a-z]+_[0-9]+$")


class Children:
  """The `tag` children of an element, indexable by position or by name."""

  def __init__(self, items: list[Element]):
    self._items = items

  def __getitem__(self, key):
    if isinstance(key, str):
      for item in self._items:
        if item.identifier == key:
          return item
      raise KeyError(key)
    return self._items[key]

  def __len__(self) -> int:
    return len(self._items)

  def __iter__(self):
    return iter(self._items)

  def __eq__(self, other) -> bool:
    return list(self._items) == list(other)

  __hash__ = None

  def __repr__(self) -> str:
    return f"[{', '.join(map(repr, self._items))}]"


# MJCF's own composition (<asset><model>, <attach>): the compiler expands it from files; the
# object model composes with RootElement.attach instead (dm_control's PyMJCF has neither)
NOT_COMPOSED = ("model", "attach")
NOT_COMPOSED_WHY = ("is compiled by jaxmj.Model.from_xml_path, not kept in PyMJCF objects: "
                    "attach models with RootElement.attach")


def allowed_children(tag: str) -> tuple[str, ...]:
  """Child tags `tag` may hold: the compiler's schema, then MuJoCo's structure for elements
  whose attributes the schema knows but whose place it does not list yet."""
  own = schema.CHILDREN.get(tag, ())
  extra = (schema.SCOPED.get((tag, c), c) for c in STRUCTURE.get(tag, ()))
  extra = tuple(c for c in extra if c not in own and c in schema.ATTRS)
  return tuple(c for c in own if c != "include" and c not in NOT_COMPOSED) + extra


def key_of(parent_tag: str, tag: str) -> str:
  """Schema key of child `tag` written in `parent_tag`: scoped where the parent changes its
  meaning (schema.SCOPED, e.g. a tendon path's <site> is 'spatial/site')."""
  return schema.SCOPED.get((parent_tag, tag), tag)


def section_order() -> tuple[str, ...]:
  """Root sections in the order they are kept and written (MuJoCo's reading order)."""
  extra = tuple(t for t in allowed_children("mujoco") if t not in SECTIONS)
  return SECTIONS[:-1] + extra + SECTIONS[-1:]


def spec_of(tag: str) -> dict:
  if tag in schema.ATTRS:
    return schema.ATTRS[tag]
  what = f" ({schema.UNSUPPORTED[tag]})" if tag in schema.UNSUPPORTED else ""
  raise MJCFError(f"element <{tag}>{what} has no attributes in jaxmj's schema yet, so it "
                  "cannot be composed", element=tag)


class Element:
  """One MJCF element: attributes and children as Python attributes, checked by the schema."""

  def __init__(self, tag: str, parent: Element | None, model: RootElement | None,
               source: tuple | None = None):
    d = self.__dict__
    d["_tag"], d["_parent"], d["_model"] = tag, parent, model
    d["_attrs"], d["_children"], d["_source"] = {}, [], source

  # ---------------------------------------------------------------- structure

  @property
  def tag(self) -> str:
    """The tag as written (a scoped schema key such as 'spatial/site' is written 'site')."""
    return self._tag.rpartition("/")[2]

  @property
  def parent(self) -> Element | None:
    return self._parent

  @property
  def root(self) -> RootElement:
    """The model (RootElement) this element belongs to."""
    return self._model

  @property
  def namespace(self) -> str | None:
    """Namespace of this element's name: its tag, a section's shared one, or None."""
    parent = self._parent.tag if self._parent is not None else None
    if parent in _PATH_PARENTS or parent == "mujoco":
      return None  # path elements refer to others; sections hold the named elements
    if parent in _SECTION_NAMESPACE:
      return _SECTION_NAMESPACE[parent]
    return "joint" if self._tag == "freejoint" else self._tag

  @property
  def identifier(self) -> str | None:
    return self._attrs.get("class" if self._tag == "default" else "name")

  @property
  def namescope(self):
    """The name scope of this element's model (namescope.py)."""
    return self._model.namescope

  def prefixed_identifier(self, prefix_root=None) -> str | None:
    """The name as written from the model of name scope `prefix_root` (this element's own
    model when None): `arm/elbow` from a model `arm` is attached to. A worldbody is 'world'
    in its own model and its attachment frame's name from above; an unnamed element gets
    dm_control's generated name (`arm//unnamed_geom_0`) where AUTO_NAMED, else None."""
    prefix = self.namescope.full_prefix(prefix_root)
    if self._tag == "worldbody":
      return prefix or "world"
    if self.identifier is None and not self._auto_named():
      return None
    if isinstance(self._parent, AttachmentFrame):  # dm_control: 'child/' or 'child/name/'
      ident = self.identifier
      return self._parent.prefixed_identifier(prefix_root) + (ident + "/" if ident else "")
    if self.identifier is not None:
      return prefix + self.identifier
    index = next(i for i, el in enumerate(
      self._model.find_all(self.namespace, exclude_attachments=True)) if el is self)
    return generated_name(prefix, self.namespace, index)

  def _auto_named(self) -> bool:
    return (self.namespace in AUTO_NAMED and "name" in self.spec and not self._in_default()
            and self._attached_to_model())

  @property
  def full_identifier(self) -> str | None:
    """The name as written in the outermost model this one is attached to (`arm/elbow`):
    the name to look up in the compiled Model."""
    if self._model is None:
      return self.identifier
    return self.prefixed_identifier(self.namescope.root)

  def __mjobject__(self) -> tuple[str, str]:
    """(MJCF namespace, name in the compiled outermost model): how `jaxmj.bind`, which
    duck-types elements (the runtime never imports this package), finds the object."""
    namespace = "worldbody" if self._tag == "worldbody" else self.namespace
    if namespace is None or namespace == "default":
      raise TypeError(f"<{self.tag}> is not a MuJoCo object that can be bound")
    name = self.full_identifier
    if name is None:
      raise self.error(f"an unnamed <{self.tag}> cannot be bound: give it a name")
    return namespace, name

  def __dir__(self):
    written = {k.rpartition("/")[2] for k in self._allowed()}
    attrs = {"dclass" if k == "class" else k for k in self.spec}
    return sorted(set(super().__dir__()) | attrs | written)

  @property
  def spec(self) -> dict:
    """Attribute specs (type, default) this element takes."""
    if self._parent is not None and self._parent._tag == "mujoco" and (
        self._tag not in GLOBAL_SECTIONS):
      return {}  # a section: the same tag inside <default> (e.g. tendon) carries attributes
    spec = spec_of(self._tag)
    if self._in_default():
      banned = ("name", "class") + schema.NOT_IN_DEFAULT.get(self._tag, ())
      return {k: v for k, v in spec.items() if k not in banned}
    return spec

  def all_children(self) -> list[Element]:
    """Children, with those attached models merge here as the written XML places them
    (dm_control's order): a root section's counterparts in attached models follow its own."""
    out = list(self._children)
    if self._parent is not None and self._parent._tag == "mujoco" and (
        self._tag not in ("worldbody", "default")):
      for frame in self._model.frames():
        section = frame.child.section(self._tag)
        if section is not None:
          out += [c for c in section.all_children() if c._parent._single(c._tag) is None]
    return out

  def get_children(self, tag: str):
    """Children `tag`: a list view when it may repeat, else the element (or None)."""
    key = key_of(self.tag, tag)
    if key not in self._allowed():
      raise AttributeError(f"<{tag}> is not a valid child of <{self.tag}>")
    return self._child_access(key)

  def _in_default(self) -> bool:
    return self._tag != "default" and self._parent is not None and self._parent.tag == "default"

  def _allowed(self) -> tuple[str, ...]:
    return allowed_children(self._tag)

  def _single(self, tag: str) -> str | None:
    """'on_demand' or 'optional' for a child that appears at most once, else None."""
    if self._tag == "mujoco":
      return "on_demand"
    if tag in schema.UNIQUE.get(self._tag, ()):
      return "on_demand" if self._tag in _ON_DEMAND_PARENTS else "optional"
    return "optional" if (self._tag, tag) in _OPTIONAL_SINGLE else None

  def where(self) -> tuple[str, int]:
    """(file, line) for errors: where it was read, else its path in the model."""
    if self._source is not None:
      return self._source
    parts, el = [], self
    while el is not None and el._tag != "mujoco":
      ident = el.identifier
      parts.append(f"{el.tag}[{ident}]" if ident else el.tag)
      el = el._parent
    model = self._model.model if self._model is not None else None
    return f"<mjcf model {model or ''}>/" + "/".join(reversed(parts)), None

  def error(self, msg: str, attribute: str | None = None) -> MJCFError:
    file, line = self.where()
    return MJCFError(msg, file=file, line=line or None, element=self.tag, attribute=attribute)

  # ---------------------------------------------------------------- attributes and children

  def __getattr__(self, name: str):
    if name.startswith("_"):
      raise AttributeError(name)
    attr = "class" if name == "dclass" else name
    if attr in self.spec:
      return self._attrs.get(attr)
    if key_of(self.tag, name) in self._allowed():
      return self._child_access(key_of(self.tag, name))
    raise AttributeError(f"<{self.tag}> has no child or attribute called {name!r}")

  def __setattr__(self, name: str, value) -> None:
    if name.startswith("_"):
      self.__dict__[name] = value
      return
    attr = "class" if name == "dclass" else name
    if attr not in self.spec:
      if key_of(self.tag, name) in self._allowed():
        raise AttributeError(f"<{name}> is a child element of <{self.tag}>: use add()")
      raise AttributeError(f"<{self.tag}> has no attribute called {name!r}")
    self.set_attribute(attr, value)

  def __delattr__(self, name: str) -> None:
    self.__setattr__(name, None)

  def get_attributes(self) -> dict:
    """Attributes set on this element (not defaults), keyed by their MJCF names."""
    return dict(self._attrs)

  def set_attributes(self, **attrs) -> None:
    for name, value in attrs.items():
      setattr(self, name, value)

  def set_attribute(self, name: str, value) -> None:
    """Sets MJCF attribute `name` (None removes it), typed and checked against the schema."""
    if name not in self.spec:
      raise AttributeError(f"<{self.tag}> has no attribute called {name!r}")
    if value is None:
      if name in REQUIRED.get(self._tag, ()):
        raise self.error(f"'{name}' is a required attribute of <{self.tag}>", name)
      if name == "name" or (name == "class" and self._tag == "default"):
        self._unregister()
      self._attrs.pop(name, None)
      return
    value = self._typed(name, value)
    if name == "name" or (name == "class" and self._tag == "default"):
      self._rename(value)
    self._attrs[name] = value

  def _typed(self, name: str, value):
    typ = self.spec[name][0]
    if isinstance(value, Element):
      return self._reference(name, value)
    if isinstance(value, Asset) and name in FILE_ATTRIBUTES:
      return value
    if name in FILE_ATTRIBUTES and isinstance(value, str) and self._tag in STRUCTURE["asset"]:
      root = self._model
      return load_file(self, name, value, root._model_dir or os.getcwd(), root._assets)
    if isinstance(value, str):
      if typ == schema.S:
        self._check_name(name, value)
        return value
      file, line = self.where()
      out = parse.convert(Node(self._tag, {}, [], file, line), name, value)
      if isinstance(out, np.generic):
        return out.item()
      if isinstance(out, np.ndarray):
        out.flags.writeable = False
      return out
    if typ == schema.S or isinstance(typ, frozenset):
      kind = "a keyword" if isinstance(typ, frozenset) else "a string"
      raise self.error(f"expected {kind}, got {value!r}", name)
    return number(self, name, typ, value)

  def _check_name(self, name: str, value: str) -> None:
    ident = name == "name" or (name == "class" and self._tag == "default")
    if (ident or name in REFERENCES or name in ("class", "childclass")) and "/" in value:
      raise self.error(f"'/' is not allowed in {value!r}: PyMJCF scopes names itself (assign "
                       "the element to refer to one in another model)", name)
    if ident and not value:
      raise self.error("an empty name is not allowed", name)

  def _reference(self, name: str, target: Element):
    if name in ("class", "childclass") and self.tag != "default":
      if target.tag != "default":
        raise self.error(f"'{name}' takes a <default> class, got <{target.tag}>", name)
      return target
    if name not in REFERENCES:
      raise self.error(f"attribute '{name}' is not a reference; got element {target!r}", name)
    want = REFERENCES[name]
    have = target.namespace
    if isinstance(target, AttachmentFrame) or target.tag == "worldbody":
      have = "body"
    if want is not None and have != want:
      raise self.error(f"'{name}' refers to a {want}, got <{target.tag}> ({have})", name)
    return target

  # ---------------------------------------------------------------- names

  def _rename(self, new: str) -> None:
    ns, model = self.namespace, self._model
    if ns is None or model is None or not self._attached_to_model():
      return
    if isinstance(self._parent, AttachmentFrame):
      # A frame's joints are named within the frame (written 'child/name/'), not the model.
      if any(c is not self and c.namespace == ns and c.identifier == new
             for c in self._parent._children):
        raise self.error(f"duplicate {ns} name {new!r} in this attachment frame", "name")
      return
    owner = model._ids.setdefault(ns, {}).get(new)
    if owner is not None and owner is not self:
      raise self.error(f"duplicate {ns} name {new!r} in model {model.model!r}",
                       "class" if self._tag == "default" else "name")
    self._unregister()
    model._ids[ns][new] = self

  def _unregister(self) -> None:
    ident, ns = self.identifier, self.namespace
    if ident is not None and self._model is not None:
      if self._model._ids.get(ns, {}).get(ident) is self:
        del self._model._ids[ns][ident]

  def _attached_to_model(self) -> bool:
    el = self
    while el._parent is not None:
      el = el._parent
    return el is self._model

  def _descendants(self):
    for c in self._children:
      yield c
      yield from c._descendants()

  # ---------------------------------------------------------------- editing

  def _child_access(self, key: str):
    kind = self._single(key)
    found = [c for c in self._children if c._tag == key and not isinstance(c, AttachmentFrame)]
    if kind is None:
      return Children(found)
    if found:
      return found[0]
    return self._insert(key) if kind == "on_demand" else None

  def add(self, tag: str, **attrs) -> Element:
    """Adds a child `tag` with attributes (`dclass` for class), validated at once."""
    key = key_of(self.tag, tag)
    if key in NOT_COMPOSED:
      raise AttributeError(f"<{tag}> {NOT_COMPOSED_WHY}")
    if key not in self._allowed():
      what = f" ({schema.UNSUPPORTED[key]}, not in jaxmj's schema yet)" if (
        key not in schema.ATTRS and key in schema.UNSUPPORTED) else ""
      raise AttributeError(f"<{tag}>{what} is not a valid child of <{self.tag}>")
    if self._single(key) and any(c._tag == key for c in self._children):
      raise self.error(f"<{self.tag}> already has a <{tag}>")
    child = self._insert(key)
    try:
      child.set_attributes(**attrs)
      _check_schema_only(child)
    except Exception:
      child.remove()
      raise
    return child

  def _insert(self, tag: str, source=None) -> Element:
    spec_of(tag)
    child = Element(tag, self, self._model, source)
    if self._tag == "mujoco":
      rank = {t: i for i, t in enumerate(section_order())}
      at = sum(rank[c._tag] <= rank[tag] for c in self._children)
      self._children.insert(at, child)
    else:
      self._children.append(child)
    return child

  def remove(self) -> None:
    """Removes this element (and its subtree) from the model; references to it dangle."""
    if self._parent is None:
      raise MJCFError("a root element cannot be removed")
    for el in [self, *self._descendants()]:
      el._unregister()
      if isinstance(el, AttachmentFrame):  # its model is detached with it
        el.child.__dict__["_frame"] = None
    self._parent._children.remove(self)
    self.__dict__["_parent"] = None

  def attach(self, child: RootElement) -> AttachmentFrame:
    """Attaches model `child` here (a site, body, frame or worldbody); see attach.py."""
    from jaxmj.mjcf.compose import attach

    return attach.attach(self, child)

  # ---------------------------------------------------------------- search

  def find(self, namespace: str, identifier: str) -> Element | None:
    """The element named `identifier` in `namespace`, or None; 'child/name' looks inside
    the attached model 'child'."""
    if "/" in identifier and namespace != "attachment_frame":
      head, rest = identifier.split("/", 1)
      frame = self.find("attachment_frame", head)
      return frame.child.find(namespace, rest) if frame is not None else None
    for el in self.find_all(namespace, exclude_attachments=True):
      if el.identifier == identifier:
        return el
    return None

  def find_all(self, namespace: str, immediate_children_only: bool = False,
               exclude_attachments: bool = False) -> list[Element]:
    """Every element of `namespace` below this one, in the order of the written model
    (attached models' elements included unless `exclude_attachments`)."""
    items = self._children if immediate_children_only else self._walk(not exclude_attachments)
    if namespace == "attachment_frame":
      return [el for el in items if isinstance(el, AttachmentFrame)]
    return [el for el in items
            if el.namespace == namespace and not isinstance(el, AttachmentFrame)
            and not el._in_default()]

  def _walk(self, attachments: bool):
    for c in self._children:
      yield c
      yield from c._walk(attachments)
      world = c.child.section("worldbody") if isinstance(c, AttachmentFrame) else None
      if attachments and world is not None:
        yield from world._walk(True)

  # ---------------------------------------------------------------- output

  def to_xml(self, prefix_root=None, debug_context=None, *, precision: int | None = None,
             zero_threshold: float = 0.0, filename_with_hash: bool = True):
    """lxml element of this element as written in its model with the models attached to it
    (write.py), names scoped from `prefix_root` (a NameScope; this element's model when
    None). Floats: see values.format_value. `debug_context` is dm_control's and ignored."""
    from jaxmj.mjcf.compose import write

    if not filename_with_hash:
      raise NotImplementedError("filename_with_hash=False: jaxmj always names asset files "
                                "by their contents")
    top = self._model if prefix_root is None else prefix_root.mjcf_model
    return write.to_lxml(write.subtree_node(self, top, precision, zero_threshold))

  def to_xml_string(self, prefix_root=None, self_only: bool = False,
                    pretty_print: bool = True, debug_context=None, *,
                    precision: int | None = None, zero_threshold: float = 0.0,
                    filename_with_hash: bool = True) -> str:
    """XML text of this element (the whole composition for a model); `self_only` leaves
    out its children ('...'); the other arguments as to_xml."""
    from jaxmj.mjcf.compose import write

    xml = self.to_xml(prefix_root, debug_context, precision=precision,
                      zero_threshold=zero_threshold, filename_with_hash=filename_with_hash)
    if self_only and len(xml):
      for c in list(xml):
        xml.remove(c)
      xml.text = "..."
    return write.lxml_string(xml, pretty_print)

  def get_assets(self) -> dict[str, bytes]:
    """Asset files of the composed model: {name used in to_xml_string(): contents}."""
    from jaxmj.mjcf.compose import write

    return write.assets(self._model)

  def is_same_as(self, other: Element) -> bool:
    """Structural equality: tags, attributes (references by name) and children."""
    if not isinstance(other, Element) or self._tag != other._tag:
      return False
    if set(self._attrs) != set(other._attrs):
      return False
    for k, v in self._attrs.items():
      w = other._attrs[k]
      v, w = (x.identifier if isinstance(x, Element) else x for x in (v, w))
      if isinstance(v, np.ndarray) or isinstance(w, np.ndarray):
        if not np.array_equal(np.asarray(v), np.asarray(w)):
          return False
      elif v != w:
        return False
    return len(self._children) == len(other._children) and all(
      a.is_same_as(b) for a, b in zip(self._children, other._children))

  def __repr__(self) -> str:
    attrs = "".join(f' {k}="{format_value(_plain(v))}"' for k, v in self._attrs.items())
    return f"MJCF Element: <{self.tag}{attrs}/>"


def generated_name(prefix: str, namespace: str, index: int) -> str:
  """dm_control's name for an unnamed element of `namespace`, the `index`-th of that
  namespace (named ones counted) in its model, written with the model's `prefix`."""
  return f"{prefix or '/'}/unnamed_{namespace}_{index}"


def _plain(value):
  if isinstance(value, Element):
    return value.identifier or f"<{value.tag}>"
  if isinstance(value, Asset):
    return value.vfs_name
  return value


def _check_schema_only(el: Element) -> None:
  """A just-added child inside <default> may not carry name or class."""
  if el._in_default():
    bad = [k for k in el._attrs if k not in el.spec]
    if bad:
      raise el.error(f"unknown attribute '{bad[0]}' in a default class", bad[0])


class RootElement(Element):
  """A model: the <mujoco> element, its sections and its name scope."""

  def __init__(self, model: str | None = None, model_dir: str = "",
               assets: dict | None = None):
    """`model_dir` and `assets` ({file name: contents}) are where asset files named later
    (mesh.file = ...) are read from, as dm_control's."""
    super().__init__("mujoco", None, None)
    self.__dict__.update(_model=self, _ids={}, _frame=None, _namescope=NameScope(self),
                         _model_dir=model_dir, _assets=assets or {})
    if model is not None:
      self.model = model

  @property
  def root(self) -> RootElement:
    return self

  @property
  def parent_model(self) -> RootElement | None:
    """The model this one is attached to, if any."""
    return self._frame.root if self._frame is not None else None

  @property
  def attachment_frame(self) -> AttachmentFrame | None:
    return self._frame

  @property
  def namescope(self):
    return self._namescope

  def prefixed_identifier(self, prefix_root=None) -> str:
    """A model's prefix as written from `prefix_root` ('' from itself)."""
    return self.namescope.full_prefix(prefix_root)

  def set_attribute(self, name: str, value) -> None:
    if name == "model" and isinstance(value, str) and "/" in value:
      raise self.error(f"'/' is not allowed in a model name ({value!r})", "model")
    if name == "model" and self._frame is not None:
      from jaxmj.mjcf.compose import attach

      attach.check_model_name(self, value)
    super().set_attribute(name, value)

  def attach(self, child: RootElement) -> AttachmentFrame:
    """Attaches `child` to this model's worldbody."""
    return self.worldbody.attach(child)

  def frames(self) -> list[AttachmentFrame]:
    """Attachment frames of the models attached directly to this one, in document order."""
    world = self.section("worldbody")
    return [] if world is None else [
      el for el in world._walk(False) if isinstance(el, AttachmentFrame)]

  def models(self) -> list[RootElement]:
    """This model and every model attached below it, depth first in document order."""
    return [self] + [m for f in self.frames() for m in f.child.models()]

  def section(self, tag: str) -> Element | None:
    """Root section `tag` if it exists (unlike attribute access, never creates it)."""
    return next((c for c in self._children if c._tag == tag), None)

  def _walk(self, attachments: bool):
    # The written order: worldbodies inline at their frames, other sections concatenated
    # model by model.
    models = self.models() if attachments else [self]
    for tag in section_order():
      parts = [m.section(tag) for m in models]
      if parts[0] is not None:
        yield parts[0]
      if tag == "worldbody":
        if parts[0] is not None:
          yield from parts[0]._walk(attachments)
        continue
      for part in parts:
        if part is not None:
          yield from part._walk(False)

  def detach(self) -> None:
    """Detaches this model from the model it is attached to."""
    from jaxmj.mjcf.compose import attach

    attach.detach(self)

  def __deepcopy__(self, memo):
    # A copy is a free-standing model: it does not drag the parent it may be attached to.
    frame, self.__dict__["_frame"] = self._frame, None
    try:
      new = object.__new__(type(self))
      memo[id(self)] = new
      new.__dict__.update(copy.deepcopy(self.__dict__, memo))
    finally:
      self.__dict__["_frame"] = frame
    return new


class AttachmentFrame(Element):
  """The body an attached model hangs from; only joints and an inertial may be added."""

  _ALLOWED = ("joint", "freejoint", "inertial")

  def __init__(self, parent: Element, child: RootElement):
    super().__init__("body", parent, parent._model)
    self.__dict__["_child"] = child

  @property
  def child(self) -> RootElement:
    return self._child

  @property
  def namespace(self) -> str:
    return "attachment_frame"

  @property
  def identifier(self) -> str | None:
    return self._child.model

  @property
  def spec(self) -> dict:
    return {k: v for k, v in schema.ATTRS["body"].items() if k not in ("name", "childclass")}

  def _allowed(self) -> tuple[str, ...]:
    return tuple(t for t in allowed_children("body") if t in self._ALLOWED)

  def prefixed_identifier(self, prefix_root=None) -> str:
    """The frame's body name as written from `prefix_root`: the attached model's prefix."""
    return self.namescope.full_prefix(prefix_root) + self._child.model + "/"

  def all_children(self) -> list[Element]:
    """The frame's joints and inertial, then the attached model's worldbody children."""
    world = self._child.section("worldbody")
    return list(self._children) + ([] if world is None else list(world._children))

  def __repr__(self) -> str:
    return f"MJCF Attachment Frame: <body of {self._child.model!r}>"
