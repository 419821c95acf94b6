"""<replicate>: count copies of a subtree, each moved by one more step of (offset, euler).

MuJoCo's reader (xml_native_reader.cc) parses the replicate's children once into a frame,
then attaches that frame `count` times and deletes the original: copy i sits in a frame at
pos_i with orientation euler(i * euler) (recomputed from the angles, not accumulated, for
precision), where pos_0 = 0 and pos_{i+1} = pos_i + mat(quat_i) offset (mjuu_frameaccum);
every name in copy i gets the suffix sep + i, zero-padded to the digits of count, and so do
the camera and light targets inside it (measured: a target outside the copy is then
unknown, in MuJoCo as here). Here each
copy becomes a <frame> node in the replicate's place, so the compiler sees frames it
already knows, in MuJoCo's order (a nested replicate is expanded first, so its names carry
the inner suffix, then the outer one; so is an <attach> inside, jaxmj/mjcf/compile/attach.py,
whose section elements join the lists below).

The tendons, actuators, sensors, equality constraints, contact pairs and excludes that name
elements of the copies are copied with them, as MuJoCo's attach copies them: MuJoCo parses
these sections before the world body, so when copy i is attached every such element (the
copies already made too) is tried once more under the suffix and kept where its names
resolve among the elements parsed so far (user_model.cc CopyList, each kind's
ResolveReferences in user_objects.cc): a tendon takes each path element's suffixed name,
else the plain one, and is kept where at least one path element took the suffix; a pair,
exclude or two-sided sensor keeps the plain name on one side where only the other side
resolves suffixed; an equality constraint, actuator or one-sided sensor needs every name
suffixed; a sensor naming nothing (clock, energy) is copied at every attachment, so once per
copy and then again for each earlier copy (MuJoCo 4.0: 2^count - 1 copies, named with every
suffix sequence). Deleting the original subtree then deletes the elements that named it
(RemoveFromList: those that resolved before and do not after).
"""

from __future__ import annotations

import dataclasses

from jaxmj.mjcf.compile import frames
from jaxmj.mjcf.spec.parse import Node
from jaxmj.mjcf.spec.schema import REFERENCES

_HOLDERS = ("worldbody", "body", "frame", "replicate")
# the kind of element each reference attribute names (assets left out: never suffixed)
REFERENCE_KINDS = {a: k for a, k in REFERENCES.items()
                   if k not in (None, "mesh", "hfield", "material", "texture", "skin")}


def expand(root: Node, compiler: dict, attach=None) -> Node:
  """root with every <replicate> under <worldbody> replaced by its copies, and the section
  elements naming them copied with them (see the module). attach(node, expansion): the
  frame an <attach> stands for (jaxmj/mjcf/compile/attach.py), called in document order as
  MuJoCo reads it, which adds the section elements it brings to the expansion's lists
  (`add`); the copies of a replicate holding it then copy those as they copy the parent's."""
  if attach is None and not any(_has_replicate(c) for c in root.children
                                if c.tag == "worldbody"):
    return root
  ex = Expansion(root, compiler["angle"] == "degree", compiler["eulerseq"], attach)
  children = [ex.walk(c) if c.tag == "worldbody" else c for c in root.children]
  return ex.sections(dataclasses.replace(root, children=children))


def section_lists(root: Node) -> list[list[Node]]:
  """A model's elements of each of LISTS, in document order."""
  return [[n for c in root.children if c.tag == tag for n in c.children
           if tags is None or n.tag in tags] for tag, tags in LISTS]


def _has_replicate(node: Node) -> bool:
  return any(c.tag == "replicate" or (c.tag in _HOLDERS and _has_replicate(c))
             for c in node.children)


# element kinds MuJoCo's FindObject looks names up in, by tag
TREE_KINDS = {"body": "body", "joint": "joint", "freejoint": "joint", "geom": "geom",
               "site": "site", "camera": "camera"}
# sensor object types (objtype, reftype) -> kind
_OBJ_KINDS = {"body": "body", "xbody": "body", "geom": "geom", "site": "site",
              "camera": "camera", "joint": "joint", "tendon": "tendon",
              "actuator": "actuator"}
# MuJoCo's lists of elements outside the tree, in the order attach copies them
# (mjCModel::operator+=): (section, tags or None for all)
LISTS = (("contact", ("pair",)), ("contact", ("exclude",)), ("tendon", None),
          ("equality", None), ("actuator", None), ("sensor", None))
# elements in one list past which a replicate is refused (MuJoCo would go on doubling)
_MAX_ELEMENTS = 1 << 16


class Expansion:
  """The names parsed so far (MuJoCo parses the world body last, in document order) and
  the section lists, as the replicates and attachments of one model are expanded in
  order."""

  def __init__(self, root: Node, deg: bool, seq: str, attach):
    self.deg, self.seq, self.attach = deg, seq, attach
    self.lists = section_lists(root)
    self.changed = False
    self.names = {k: {} for k in ("body", "joint", "geom", "site", "camera", "tendon",
                                  "actuator")}
    self.names["body"]["world"] = 1
    self.walked = {}  # id(holder) -> (holder, it expanded); a replicate: (it, its frames)
    self.moved = {}  # id(element) -> (element, its copy in a replicate's first copy)
    for kind, lst in (("tendon", self.lists[2]), ("actuator", self.lists[4])):
      for n in lst:
        self._count(kind, n.attrs.get("name"), 1)

  def _count(self, kind: str | None, name: str | None, k: int) -> None:
    if kind is not None and name is not None:
      self.names[kind][name] = self.names[kind].get(name, 0) + k

  def tree(self, node: Node, k: int = 1) -> None:
    """Counts (k = 1) or discounts (k = -1) the names of a subtree's elements."""
    self._count(TREE_KINDS.get(node.tag), node.attrs.get("name"), k)
    for c in node.children:
      self.tree(c, k)

  def add(self, section: str, node: Node) -> None:
    """Appends an element of a section (an attachment's copy) to its list."""
    j = next(j for j, (tag, tags) in enumerate(LISTS)
             if tag == section and (tags is None or node.tag in tags))
    self.lists[j].append(node)
    self.changed = True
    self._count(_list_kind(j), node.attrs.get("name"), 1)

  def final(self, node: Node) -> Node:
    """The element a replicate's first copy made of node, through nested replicates."""
    while id(node) in self.moved and self.moved[id(node)][0] is node:
      node = self.moved[id(node)][1]
    return node

  def has(self, kind: str | None, name: str) -> bool:
    return kind in self.names and self.names[kind].get(name, 0) > 0

  def walk(self, node: Node) -> Node:
    """node (a holder) with its replicates expanded, its names counted in document order."""
    children = []
    for c in node.children:
      if c.tag == "replicate":
        copies = self._replicate(c)
        self.walked[id(c)] = (c, copies)
        children.extend(copies)
        continue
      if c.tag == "attach" and self.attach is not None:
        c = self.attach(c, self)
      elif c.tag in _HOLDERS:
        self._count(TREE_KINDS.get(c.tag), c.attrs.get("name"), 1)
        self.walked[id(c)] = (c, self.walk(c))
        c = self.walked[id(c)][1]
      else:
        self.tree(c, 1)
      children.append(c)
    return dataclasses.replace(node, children=children)

  def _replicate(self, node: Node) -> list[Node]:
    """The frames of a replicate; the section elements naming them copied and then, with the
    original subtree, deleted."""
    inner = self.walk(node)  # the original subtree, its own replicates expanded
    out = []
    for i, frame in enumerate(_copies(inner, self.deg, self.seq, self.moved)):
      out.append(frame)
      self.tree(frame, 1)
      self._copy_lists(frame.attrs.pop(_COPY_SUFFIX), node, i == 0)
    old = {k: dict(v) for k, v in self.names.items()}
    for c in inner.children:
      self.tree(c, -1)
    self._remove_unresolved(lambda kind, name: kind in old and old[kind].get(name, 0) > 0)
    return out

  def _copy_lists(self, suffix: str, node: Node, first: bool) -> None:
    for j, lst in enumerate(self.lists):
      for e in list(lst):  # the elements before this copy's, copies made earlier too
        c = namespaced(e, lambda n: n + suffix, self.has, LISTS[j][0])
        if c is not None:
          if first:
            self.moved[id(e)] = (e, c)
          lst.append(c)
          self.changed = True
          self._count(_list_kind(j), c.attrs.get("name"), 1)
      if len(lst) > _MAX_ELEMENTS:  # MuJoCo would go on doubling (sensors naming nothing)
        raise node.error(f"replicate: {len(lst)} <{LISTS[j][0]}> elements after copying "
                         f"those that name its copies; an element that names nothing (a "
                         f"clock sensor) is copied at every attachment, doubling each time",
                         "count")

  def _remove_unresolved(self, had) -> None:
    for j, lst in enumerate(self.lists):
      kept = []
      for e in lst:
        if (namespaced(e, _same, had, LISTS[j][0]) is not None
                and namespaced(e, _same, self.has, LISTS[j][0]) is None):
          self.changed = True
          self._count(_list_kind(j), e.attrs.get("name"), -1)
        else:
          kept.append(e)
      lst[:] = kept

  def sections(self, root: Node) -> Node:
    """root with its section lists as the expansion left them."""
    if not self.changed:
      return root
    content = {"contact": self.lists[0] + self.lists[1], "tendon": self.lists[2],
               "equality": self.lists[3], "actuator": self.lists[4], "sensor": self.lists[5]}
    children, seen = [], set()
    for c in root.children:
      if c.tag in content:
        if c.tag in seen:
          continue
        seen.add(c.tag)
        c = dataclasses.replace(c, children=content[c.tag])
      children.append(c)
    children += [Node(tag, {}, nodes, root.file, root.line) for tag, nodes in content.items()
                 if nodes and tag not in seen]
    return dataclasses.replace(root, children=children)


def _same(name: str) -> str:
  return name


def _list_kind(j: int) -> str | None:
  return {2: "tendon", 4: "actuator"}.get(j)


def namespaced(node: Node, rename, has, section: str) -> Node | None:
  """A copy of a section element whose names take `rename` (str -> str: the copy's suffix,
  an attachment's prefix) where they resolve (`has(kind, name)`) by MuJoCo's rule for its
  kind (see the module), else None; with rename the identity, whether it resolves."""
  attrs = dict(node.attrs)
  if "name" in attrs:
    attrs["name"] = rename(attrs["name"])
  if section == "tendon":
    path, plain, wraps = [], 0, 0
    for w in node.children:
      refs = [a for a in ("site", "geom", "joint", "sidesite") if a in w.attrs]
      if not refs:  # a pulley
        path.append(w)
        continue
      wraps += 1
      if all(has(REFERENCE_KINDS[a], rename(w.attrs[a])) for a in refs):
        path.append(dataclasses.replace(w, attrs={**w.attrs, **{a: rename(w.attrs[a])
                                                               for a in refs}}))
      elif all(has(REFERENCE_KINDS[a], w.attrs[a]) for a in refs):
        plain += 1
        path.append(w)
      else:
        return None
    if plain == wraps:
      return None
    return dataclasses.replace(node, attrs=attrs, children=path)
  sides = sides_of(node) if section in ("contact", "sensor") else None
  if sides is not None and len(sides) == 2:
    (a1, k1), (a2, k2) = sides
    n1, n2 = rename(attrs[a1]), rename(attrs[a2])
    ok1, ok2 = has(k1, n1), has(k2, n2)
    if not ok1 and ok2:
      n1, ok1 = attrs[a1], has(k1, attrs[a1])
    if ok1 and not ok2:
      n2, ok2 = attrs[a2], has(k2, attrs[a2])
    if not (ok1 and ok2):
      return None
    attrs[a1], attrs[a2] = n1, n2
    return dataclasses.replace(node, attrs=attrs)
  refs = sides if sides is not None else [
    (a, REFERENCE_KINDS[a]) for a in node.attrs if a in REFERENCE_KINDS]
  for a, kind in refs:
    if not has(kind, rename(attrs[a])):
      return None
    attrs[a] = rename(attrs[a])
  return dataclasses.replace(node, attrs=attrs)


def sides_of(node: Node) -> list[tuple[str, str | None]]:
  """(attribute, kind) of a pair's, exclude's or sensor's object and reference, those given
  (MuJoCo's objname and refname as its reader fills them)."""
  a, tag = node.attrs, node.tag

  def first(*names):
    return next(([(n, REFERENCE_KINDS[n])] for n in names if n in a), [])

  def typed(t, n):
    return [(n, _OBJ_KINDS.get(a.get(t)))] if t in a and n in a else []

  if tag in ("pair", "exclude"):
    return first("geom1", "body1") + first("geom2", "body2")
  if tag.startswith("frame") or tag == "user":
    return typed("objtype", "objname") + typed("reftype", "refname")
  if tag == "insidesite":
    return typed("objtype", "objname") + first("site")
  if tag == "camprojection":
    return first("site") + first("camera")
  if tag == "rangefinder":
    return first("site", "camera")
  if tag in ("distance", "normal", "fromto"):
    return first("body1", "geom1") + first("body2", "geom2")
  if tag == "contact":
    return first("site", "body1", "subtree1", "geom1") + first("body2", "subtree2", "geom2")
  return first(*(n for n in a if n in REFERENCE_KINDS))


def _copies(node: Node, deg: bool, seq: str, moved: dict) -> list[Node]:
  """The frames of a replicate whose own children are already expanded, each with its
  suffix under _COPY_SUFFIX; moved[id(element)] = (element, its first copy)."""
  if "count" not in node.attrs:
    raise node.error("missing required attribute 'count'", attribute="count")
  count = node.get("count")
  offset, angles = ([float(x) for x in (node.get(k) if k in node.attrs else (0.0, 0.0, 0.0))]
                    for k in ("offset", "euler"))
  sep = node.attrs.get("sep", "")
  digits = len(str(count))
  pos = [0.0, 0.0, 0.0]
  out = []
  for i in range(count):
    step = [i * a for a in angles]
    quat = frames.euler(step, seq, deg, node)
    attrs = {"pos": " ".join(repr(x) for x in pos), "euler": " ".join(repr(x) for x in step)}
    if "childclass" in node.attrs:
      attrs["childclass"] = node.attrs["childclass"]
    suffix = sep + str(i).rjust(digits, "0")
    attrs[_COPY_SUFFIX] = suffix
    out.append(Node("frame", attrs, [_renamed(c, suffix, moved if i == 0 else None)
                                     for c in node.children], node.file, node.line))
    move = frames.mulvecmat(offset, frames.quat2mat(quat))
    pos = [pos[k] + move[k] for k in range(3)]
  return out


_COPY_SUFFIX = "_copy_suffix"  # a copy's suffix, taken off as the copy is counted


# references inside a body subtree that name another element of the model: MuJoCo's attach
# renames them with the copy (a target outside the replicate then names no body, in MuJoCo
# too); asset and default-class references keep their names
_REFERENCES = {"camera": ("target",), "light": ("target",)}


def _renamed(node: Node, suffix: str, moved: dict | None) -> Node:
  attrs = dict(node.attrs)
  for key in ("name",) + _REFERENCES.get(node.tag, ()):
    if key in attrs:
      attrs[key] += suffix
  copy = dataclasses.replace(node, attrs=attrs,
                             children=[_renamed(c, suffix, moved) for c in node.children])
  if moved is not None:
    moved[id(node)] = (node, copy)
  return copy
