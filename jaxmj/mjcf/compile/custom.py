"""<custom> numeric, text and tuple data -> numeric_*, text_*, tuple_* Model fields.

User data for controllers and tools: compiled as MuJoCo stores it, never read by physics.
Tuple object ids are resolved by name once the Model (and so every name) exists.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxmj.mjcf.spec.parse import Node
from jaxmj.names import name2id
from jaxmj.types import ObjType

_KINDS = ("numeric", "text", "tuple")


def _nodes(root: Node, kind: str) -> list[Node]:
  return [n for c in root.children if c.tag == "custom" for n in c.children if n.tag == kind]


def _named(node: Node, kind: str, seen: dict) -> str:
  name = node.attrs.get("name")
  if not name:
    raise node.error("missing required attribute 'name'", "name")
  if name in seen:
    raise node.error(f"repeated name '{name}' in {kind}", "name")
  seen[name] = node
  return name


def _numeric(root: Node) -> dict:
  sizes, data, names, seen = [], [], [], {}
  for node in _nodes(root, "numeric"):
    names.append(_named(node, "numeric", seen))
    given = np.asarray(node.get("data") if node.get("data") is not None else (), float)
    size = node.get("size")
    size = len(given) if size is None or size < 0 else size
    if "size" in node.attrs and node.get("size") <= 0:
      raise node.error("custom field size must be positive", "size")
    if len(given) > size:
      raise node.error("attribute 'data' has too much data", "data")
    if size == 0:
      raise node.error("custom field size must be positive", "size")
    vals = np.zeros(size)
    vals[:len(given)] = given
    sizes.append(size)
    data.append(vals)
  sizes = np.array(sizes, np.int32)
  return {"nnumeric": len(sizes), "nnumericdata": int(sizes.sum()), "numeric_size": sizes,
          "numeric_adr": (np.cumsum(sizes) - sizes).astype(np.int32),
          "numeric_data": np.concatenate(data) if data else np.zeros(0), "_numeric": names}


def _text(root: Node) -> dict:
  texts, names, seen = [], [], {}
  for node in _nodes(root, "text"):
    names.append(_named(node, "text", seen))
    value = node.attrs.get("data") or ""
    if not value:
      raise node.error("text field cannot be empty", "data")
    texts.append(value.encode() + b"\0")
  sizes = np.array([len(t) for t in texts], np.int32)
  return {"ntext": len(texts), "ntextdata": int(sizes.sum()), "text_size": sizes,
          "text_adr": (np.cumsum(sizes) - sizes).astype(np.int32), "text_data": b"".join(texts),
          "_text": names}


def _tuple(root: Node) -> dict:
  sizes, objtype, prm, objects, names, seen = [], [], [], [], [], {}
  for node in _nodes(root, "tuple"):
    names.append(_named(node, "tuple", seen))
    if not node.children:
      raise node.error(f"tuple '{names[-1]}' is empty")
    sizes.append(len(node.children))
    for el in node.children:
      for req in ("objtype", "objname"):
        if el.attrs.get(req) is None:
          raise el.error(f"missing required attribute '{req}'", req)
      objtype.append(int(ObjType[el.attrs["objtype"].upper()]))
      prm.append(el.get("prm") or 0.0)
      objects.append(el)
  sizes = np.array(sizes, np.int32)
  return {"ntuple": len(sizes), "ntupledata": len(objtype), "tuple_size": sizes,
          "tuple_adr": (np.cumsum(sizes) - sizes).astype(np.int32),
          "tuple_objtype": np.array(objtype, np.int32),
          "tuple_objid": np.full(len(objtype), -1, np.int32),
          "tuple_objprm": np.array(prm, float), "_tuple": names, "_tuple_elements": objects}


def compile_custom(root: Node) -> dict:
  """numeric_*, text_* and tuple_* fields (tuple_objid resolved later by `resolve`)."""
  return {**_numeric(root), **_text(root), **_tuple(root)}


def names(f: dict) -> list[list[str]]:
  """Numeric, text and tuple names in id order (taken out of `f`)."""
  return [list(f.pop("_" + kind)) for kind in _KINDS]


def resolve(model, elements: list[Node]):
  """The Model with tuple_objid filled from the tuple elements' object names."""
  if not elements:
    return model

  ids = []
  for el, t in zip(elements, model.tuple_objtype):
    try:
      i = name2id(model, int(t), el.attrs["objname"])
    except NotImplementedError:
      raise el.error(f"tuples of {el.attrs['objtype']} objects are not supported by jaxmj yet",
                     "objtype") from None
    if i < 0:
      raise el.error(f"unrecognized object '{el.attrs['objname']}' in tuple", "objname")
    ids.append(i)
  return dataclasses.replace(model, tuple_objid=np.array(ids, np.int32))
