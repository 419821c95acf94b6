"""MJCF text -> validated Node tree: lxml parsing, <include>, schema checks, default classes.

Every error is an MJCFError naming the file, line, element and attribute involved.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys

import numpy as np
from lxml import etree

from jaxmj.mjcf.errors import MJCFError
from jaxmj.mjcf.spec import inputs, schema


@dataclasses.dataclass
class Node:
  """One MJCF element: tag, raw attribute strings, children, and where it was written."""

  tag: str
  attrs: dict[str, str]
  children: list[Node]
  file: str
  line: int

  def error(self, msg: str, attribute: str | None = None) -> MJCFError:
    element = self.tag.rpartition("/")[2]  # a scoped tag (schema.SCOPED) as written
    return MJCFError(msg, file=self.file, line=self.line, element=element, attribute=attribute)

  def get(self, name: str):
    """Typed value of attribute `name` as written, or None if absent."""
    if name not in self.attrs:
      return None
    return convert(self, name, self.attrs[name])


def convert(node: Node, name: str, text: str):
  """Converts an attribute string to its schema type, or raises naming the attribute."""
  typ = schema.ATTRS[node.tag][name][0]
  try:
    if typ == schema.S:
      if name == "input" and node.tag in schema.ACTUATORS:
        inputs.check(text)
      return text
    if isinstance(typ, frozenset):
      if text not in typ:
        raise ValueError(f"invalid keyword {text!r}, expected one of {sorted(typ)}")
      return text
    if typ == schema.B:
      if text not in ("true", "false"):
        raise ValueError(f"invalid boolean {text!r}, expected 'true' or 'false'")
      return text == "true"
    if typ in (schema.F, schema.I):
      return _numbers(text, typ, 1)[0]
    base, n = typ
    values = _numbers(text, base, n)
    cap = schema.max_values(node.tag, name) if n < 0 else None
    if cap is not None and len(values) > cap:
      raise ValueError(f"expected at most {cap} values, got {len(values)}: {text!r}")
    return values
  except ValueError as e:
    raise node.error(str(e), attribute=name) from None


def _numbers(text: str, base: str, n: int) -> np.ndarray:
  parts = text.split()
  if n > 0 and len(parts) != n:
    raise ValueError(f"expected {n} value{'s' * (n > 1)}, got {len(parts)}: {text!r}")
  if n < 0 and not parts and base == schema.F:
    return np.zeros(0)
  cast = float if base == schema.F else int
  try:
    values = [cast(p) for p in parts]
  except ValueError:
    kind = "number" if base == schema.F else "integer"
    raise ValueError(f"malformed {kind} in {text!r}") from None
  if base == schema.F and not np.all(np.isfinite(values)):
    raise ValueError(f"non-finite number in {text!r}")
  return np.asarray(values, dtype=np.float64 if base == schema.F else np.int64)


def parse_string(xml: str | bytes, file: str = "<string>", assets: dict | None = None) -> Node:
  """Parses MJCF text into a validated Node tree with includes expanded."""
  base = os.path.dirname(file) if file != "<string>" else os.getcwd()
  return _parse(xml, file, base, assets or {}, stack=(file,))


def read_file(path: str) -> bytes:
  """The bytes of the file at `path`; an unreadable file is an MJCFError naming it."""
  try:
    with open(path, "rb") as f:
      return f.read()
  except OSError as e:
    raise MJCFError(f"cannot read file: {e.strerror}", file=path) from None


def parse_path(path: str, assets: dict | None = None) -> Node:
  """Parses the MJCF file at `path`."""
  path = os.fspath(path)
  xml = read_file(path)
  return _parse(xml, path, os.path.dirname(os.path.abspath(path)), assets or {}, (path,))


# MuJoCo's XML parser (tinyxml2) takes elements nested up to 499 deep, the root counted as
# 1 (a chain of 496 bodies with geoms); libxml2 stops at 256 unless told huge_tree.
MAX_ELEMENT_DEPTH = 499
_DEPTH_ERROR = "XML_ELEMENT_DEPTH_EXCEEDED: Element nesting is too deep"


def allows_deep_trees(fn):
  """`fn` run with room to recurse over MAX_ELEMENT_DEPTH nested elements: the compiler's
  tree walks take a few Python frames per level, past Python's default limit of 1000."""

  @functools.wraps(fn)
  def wrapped(*args, **kwargs):
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, 40 * MAX_ELEMENT_DEPTH))
    try:
      return fn(*args, **kwargs)
    finally:
      sys.setrecursionlimit(old)

  return wrapped


def xml_root(xml, file: str):
  """lxml root element of XML text; syntax errors name the file and line."""
  if isinstance(xml, str):
    xml = xml.encode()
  parser = etree.XMLParser(remove_comments=True, remove_pis=True, resolve_entities=False,
                           huge_tree=True)
  try:
    root = etree.fromstring(xml, parser)
  except etree.XMLSyntaxError as e:
    if "Excessive depth" in e.msg:
      raise MJCFError(f"{_DEPTH_ERROR} (MuJoCo reads at most {MAX_ELEMENT_DEPTH} levels)",
                      file=file, line=e.lineno) from None
    raise MJCFError(f"XML syntax error: {e.msg}", file=file, line=e.lineno) from None
  _check_depth(root, file)
  return root


def _check_depth(root, file: str) -> None:
  depth = 0
  for event, el in etree.iterwalk(root, events=("start", "end")):
    depth += 1 if event == "start" else -1
    if depth > MAX_ELEMENT_DEPTH:
      raise MJCFError(f"{_DEPTH_ERROR} (MuJoCo reads at most {MAX_ELEMENT_DEPTH} levels)",
                      file=file, line=el.sourceline, element=str(el.tag))


def _parse(xml, file, base, assets, stack) -> Node:
  root = xml_root(xml, file)
  if root.tag == "robot":
    from jaxmj.mjcf.spec import urdf  # imports this module's Node

    node = urdf.to_mjcf(root, file, lambda el, tag: to_node(el, file, base, assets, stack, tag))
    validate(node, parent=None)
    return node
  if root.tag != "mujoco":
    raise MJCFError(f"root element must be <mujoco>, found <{root.tag}>", file=file,
                    line=root.sourceline, element=str(root.tag))
  node = to_node(root, file, base, assets, stack)
  validate(node, parent=None)
  return node


def to_node(el, file, base, assets, stack, parent: str = "", tag: str | None = None) -> Node:
  """lxml element -> Node, replacing each <include> by the included file's children.

  A tag whose meaning depends on its parent (schema.SCOPED) gets its scoped schema key;
  `tag` overrides it (an included file's root stands for the element holding the include)."""
  tag = tag or schema.SCOPED.get((parent, str(el.tag)), str(el.tag))
  children = []
  for child in el:
    if not isinstance(child.tag, str):
      continue
    if child.tag == "include":
      children.extend(_include(child, file, base, assets, stack, tag))
    else:
      children.append(to_node(child, file, base, assets, stack, tag))
  return Node(tag, dict(el.attrib), children, file, el.sourceline or 0)


def _include(el, file, base, assets, stack, parent: str) -> list[Node]:
  """The children of the included file's root, in place of the <include> element.

  The root may have any name (`<mujoco>`, `<mujocoinclude>`, ...): MuJoCo discards it, so
  its children are scoped by the element holding the <include>."""
  where = Node("include", dict(el.attrib), [], file, el.sourceline or 0)
  extra = set(el.attrib) - {"file"}
  if extra:
    raise where.error(f"unknown attribute '{sorted(extra)[0]}'", attribute=sorted(extra)[0])
  name = el.get("file")
  if not name:
    raise where.error("missing required attribute 'file'", attribute="file")
  path = name if os.path.isabs(name) else os.path.join(base, name)
  key = os.path.normpath(path)
  if key in stack or name in stack:
    chain = " -> ".join(list(stack) + [name])
    raise where.error(f"include cycle: {chain}", attribute="file")
  if name in assets:
    xml = assets[name]
  else:
    try:
      with open(path, "rb") as f:
        xml = f.read()
    except OSError as e:
      raise where.error(f"cannot read included file {name!r}: {e.strerror}", "file") from None
  sub = xml_root(xml, path)
  inc_base = os.path.dirname(os.path.abspath(path))
  return to_node(sub, path, inc_base, assets, stack + (key,), parent, tag=parent).children


# MuJoCo's reason ("World body cannot have ...") for elements only a moving body takes
_WORLD_CANNOT = {"inertial": "inertia", "joint": "joints", "freejoint": "joints"}


def validate(node: Node, parent: Node | None) -> None:
  """Checks tags, attributes and values against the schema, recursively."""
  seen = set()
  for child in node.children:
    allowed = schema.CHILDREN.get(node.tag, ())
    if node.tag == "default" and child.tag in schema.UNSUPPORTED:
      raise child.error(f"defaults for {schema.UNSUPPORTED[child.tag]} are not supported by "
                        "jaxmj yet")
    if child.tag not in allowed:
      if child.tag in schema.UNSUPPORTED:
        raise child.error(f"element <{child.tag}> ({schema.UNSUPPORTED[child.tag]}) is not "
                          "supported by jaxmj yet")
      if child.tag in schema.ATTRS:
        why = _WORLD_CANNOT.get(child.tag) if node.tag == "worldbody" else None
        why = f"the world body cannot have {why}: " if why else ""
        raise child.error(f"{why}element <{child.tag}> is not allowed inside <{node.tag}>")
      raise child.error(f"unknown element <{child.tag}>")
    if child.tag in schema.UNIQUE.get(node.tag, ()):
      if child.tag in seen:
        raise child.error(f"<{child.tag}> may appear only once in <{node.tag}>")
      seen.add(child.tag)
    validate(child, node)
  spec = schema.ATTRS[node.tag]
  for name in [k for k, text in node.attrs.items() if k in spec and not text.strip()
               and (spec[k][0] in (schema.F, schema.I) or isinstance(spec[k][0], tuple))]:
    del node.attrs[name]  # MuJoCo reads an empty number (or list) as not given
  in_default = parent is not None and parent.tag == "default" and node.tag != "default"
  for name, text in node.attrs.items():
    if name not in spec or (in_default and (name in ("name", "class")
                                            or name in schema.NOT_IN_DEFAULT.get(node.tag, ()))):
      where = " in a default class" if name in spec else ""
      raise node.error(f"unknown attribute '{name}'{where}", attribute=name)
    convert(node, name, text)


def overlay(node: Node, name: str, inherited):
  """Value of attribute `name` written on `node` over the `inherited` one: a vector of any
  length given with fewer values than inherited replaces only its leading values, as
  MuJoCo reads e.g. geom size="0.05" over a class's size="0.1 0.2 0.3"."""
  value = node.get(name)
  typ = schema.ATTRS[node.tag][name][0]
  if (isinstance(typ, tuple) and typ[1] < 0 and inherited is not None
      and len(value) < len(inherited)):
    out = np.array(inherited, dtype=value.dtype)
    out[: len(value)] = value
    return out
  return value


@dataclasses.dataclass
class Defaults:
  """Default classes: class name -> element tag -> {attribute: typed value}."""

  classes: dict[str, dict[str, dict]]

  def resolve(self, node: Node, childclass: str | None) -> dict:
    """All attributes of `node`: schema defaults < its class < values written on it."""
    cls = node.attrs.get("class", childclass or "main")
    if cls not in self.classes:
      raise node.error(f"unknown default class '{cls}'", attribute="class")
    values = {name: default for name, (_, default) in schema.ATTRS[node.tag].items()}
    values.update(self.classes[cls].get(node.tag, {}))
    for name in node.attrs:
      values[name] = overlay(node, name, values[name])
    return values

  def check_class(self, node: Node, attribute: str) -> None:
    name = node.attrs.get(attribute)
    if name is not None and name not in self.classes:
      raise node.error(f"unknown default class '{name}'", attribute=attribute)


_ORIENTATIONS = ("quat", "axisangle", "euler", "xyaxes", "zaxis")
# hidden attribute of a top-level <default> that is a class of its own, not 'main': an
# attached model's main class (jaxmj/mjcf/compile/attach.py), starting from MuJoCo's values
ROOT_CLASS = "_root"


def parse_defaults(root: Node) -> Defaults:
  """Collects every <default> class; nested classes inherit their parent's settings."""
  classes: dict[str, dict[str, dict]] = {"main": {}}

  def visit(node: Node, inherited: dict, top: bool) -> None:
    name = node.attrs.get("class")
    detached = top and ROOT_CLASS in node.attrs  # named, and not 'main'
    if detached:
      pass  # a second one of the same class adds to it, as a second top-level <default> does
    elif name is None:
      if not top:
        raise node.error("nested <default> needs a 'class' attribute", attribute="class")
      name = "main"
    elif top and name != "main":
      raise node.error("the top-level default class 'main' cannot be renamed", "class")
    elif name in classes and not top:
      raise node.error(f"repeated default class '{name}'", attribute="class")
    # Another top-level <default> adds to 'main' (classes already made keep their copy).
    base = classes.get(name, {}) if detached else classes["main"] if top else inherited
    own = {tag: dict(vals) for tag, vals in base.items()}
    for child in node.children:
      if child.tag in schema.DEFAULTABLE:
        vals = own.setdefault(child.tag, {})
        for k in child.attrs:
          vals[k] = overlay(child, k, vals.get(k, schema.ATTRS[child.tag][k][1]))
        if any(k in child.attrs for k in _ORIENTATIONS):  # one orientation per class
          for k in _ORIENTATIONS:
            if k not in child.attrs:
              vals.pop(k, None)
    classes[name] = own
    for child in node.children:
      if child.tag == "default":
        visit(child, own, top=False)

  for node in root.children:
    if node.tag == "default":
      visit(node, {}, top=True)
  return Defaults(classes)
