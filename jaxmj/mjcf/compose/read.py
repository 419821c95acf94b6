"""Reading MJCF into the object model (element.py): files, strings, includes and assets.

Includes are expanded by parse.py's reader (which keeps each element's file and line for
errors); the schema checks are the object model's own, so elements the compiler does not
support yet can still be read, edited and written. The readers take dm_control's arguments:
references are resolved to the elements they name (so they follow renames) unless
`resolve_references=False`, and `escape_separators=True` reads a composed model's XML
(names such as `arm/elbow` become `arm\\elbow`).
"""

from __future__ import annotations

import os

from jaxmj.mjcf.compose.element import (
  GENERATED_NAME,
  NOT_COMPOSED,
  NOT_COMPOSED_WHY,
  REFERENCES,
  STRUCTURE,
  Element,
  RootElement,
  spec_of,
)
from jaxmj.mjcf.compose.values import FILE_ATTRIBUTES, FILE_DIRS, load_file
from jaxmj.mjcf.spec import parse, schema
from jaxmj.mjcf.spec.parse import Node


def from_xml_string(xml_string: str | bytes, escape_separators: bool = False,
                    model_dir: str = "", resolve_references: bool = True,
                    assets: dict | None = None) -> RootElement:
  """Model from MJCF text; `assets` maps file names (includes, meshes, ...) to contents."""
  return _read(xml_string, "<string>", model_dir or os.getcwd(), assets or {},
               escape_separators, resolve_references)


def from_path(path, escape_separators: bool = False, resolve_references: bool = True,
              assets: dict | None = None) -> RootElement:
  """Model from the MJCF file at `path`."""
  path = os.fspath(path)
  xml = parse.read_file(path)
  return _read(xml, path, os.path.dirname(os.path.abspath(path)), assets or {},
               escape_separators, resolve_references)


# The name PyMJCF's document uses for reading a file (dm_control calls it from_path).
from_xml_file = from_path


def from_file(file_handle, escape_separators: bool = False, model_dir: str = "",
              resolve_references: bool = True, assets: dict | None = None) -> RootElement:
  """Model from an open MJCF file object (paths relative to `model_dir` or its file)."""
  name = getattr(file_handle, "name", None)
  if not model_dir:
    named = isinstance(name, str) and os.path.exists(name)
    model_dir = os.path.dirname(os.path.abspath(name)) if named else os.getcwd()
  return _read(file_handle.read(), str(name or "<file>"), model_dir, assets or {},
               escape_separators, resolve_references)


def _read(xml, file: str, base: str, assets: dict, escape_separators: bool = False,
          resolve_references: bool = True) -> RootElement:
  # parse.py's reader expands <include> into a Node tree with file and line, unvalidated:
  # the object model validates against the schema itself (it also takes elements the
  # compiler does not support yet).
  lroot = parse.xml_root(xml, file)
  node = parse.to_node(lroot, file, base, assets, (file,))
  if node.tag != "mujoco":
    raise node.error(f"root element must be <mujoco>, found <{node.tag}>")
  if escape_separators:
    _escape_separators(node)
  root = RootElement(model_dir=base, assets=assets)
  _fill_attrs(root, node)
  root.__dict__["_source"] = (node.file, node.line)
  _fill(root, node)
  _load_assets(root, base, assets)
  if resolve_references:
    _resolve_references(root)
  return root


def _escape_separators(node: Node) -> None:
  """'/' in names, classes and references becomes '\\' (dm_control's escape_separators)."""
  for name, text in node.attrs.items():
    if name in ("name", "class", "childclass") or name in REFERENCES:
      node.attrs[name] = text.replace("/", "\\")
  for c in node.children:
    _escape_separators(c)


def _resolve_references(root: RootElement) -> None:
  """Reference attributes read as names become the elements they name, as dm_control's
  reader makes them, so they follow renames; names of nothing in the model stay strings.
  Classes stay names: `geom.dclass` reads 'brick', as seed 004 prints it."""
  for el in root._descendants():
    for name, value in el._attrs.items():
      if not isinstance(value, str) or name not in REFERENCES:
        continue
      kind = el._attrs.get({"objname": "objtype", "refname": "reftype"}.get(name, ""))
      target = root._ids.get(REFERENCES[name] or {"xbody": "body"}.get(kind, kind), {}).get(value)
      if target is not None:
        el._attrs[name] = target


def _fill_attrs(el: Element, node: Node) -> None:
  for name, text in node.attrs.items():
    if name == "name" and GENERATED_NAME.search(text):
      continue  # a name PyMJCF generated for an unnamed element (element.AUTO_NAMED)
    if name not in el.spec:
      where = " in a default class" if name in spec_of(el._tag) else ""
      raise node.error(f"unknown attribute '{name}'{where}", attribute=name)
    if name in FILE_ATTRIBUTES and el._tag in STRUCTURE["asset"]:
      el._attrs[name] = text  # read by _load_assets once the asset directories are known
    else:
      el.set_attribute(name, text)


def _fill(el: Element, node: Node) -> None:
  for cnode in node.children:
    tag, written = cnode.tag, cnode.tag.rpartition("/")[2]
    if tag in NOT_COMPOSED:
      raise cnode.error(f"<{written}> {NOT_COMPOSED_WHY}")
    if tag not in el._allowed():
      if tag in schema.ATTRS or tag in schema.UNSUPPORTED:
        why = "is not in jaxmj's schema yet" if tag not in schema.ATTRS else (
          f"is not allowed inside <{el.tag}>")
        raise cnode.error(f"element <{written}> {why}")
      raise cnode.error(f"unknown element <{written}>")
    single = el._single(tag)
    existing = next((c for c in el._children if c._tag == tag), None) if single else None
    if existing is not None and single == "optional":
      raise cnode.error(f"<{written}> may appear only once in <{el.tag}>")
    child = existing or el._insert(tag, (cnode.file, cnode.line))
    if el.tag == "mujoco" and tag == "default":
      # The top-level class is 'main' (the only name it may carry): the model's global one.
      if cnode.attrs.get("class", "main") != "main":
        raise cnode.error("the top-level default class 'main' cannot be renamed", "class")
      cnode = Node(tag, {}, cnode.children, cnode.file, cnode.line)
    _fill_attrs(child, cnode)
    _fill(child, cnode)


def _load_assets(root: RootElement, base: str, assets: dict) -> None:
  """Reads every asset file now (relative to the compiler's asset directories)."""
  compiler = root.section("compiler")
  dirs = {k: (compiler._attrs.get(k) if compiler is not None else None) for k in FILE_DIRS}
  for el in root._descendants():
    for name in FILE_ATTRIBUTES:
      value = el._attrs.get(name)
      if not isinstance(value, str):
        continue
      sub = dirs["meshdir" if el.tag in ("mesh", "skin") else
                 "texturedir" if el.tag == "texture" else "assetdir"] or dirs["assetdir"]
      path = os.path.join(sub, value) if sub and not os.path.isabs(value) else value
      key = path if path in assets or value not in assets else value
      el._attrs[name] = load_file(el, name, key, base, assets)
  if compiler is not None:
    # Consumed: the files are loaded, and are written under their content names.
    for k in FILE_DIRS:
      compiler._attrs.pop(k, None)
