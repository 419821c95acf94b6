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
the inner suffix, then the outer one).
"""

from __future__ import annotations

import dataclasses

from jaxmj.mjcf.compile import frames
from jaxmj.mjcf.spec.parse import Node

_HOLDERS = ("worldbody", "body", "frame", "replicate")
# hidden attributes of an <attach> in a copy (jaxmj/mjcf/compile/attach.py expands it after
# this): the suffix its names take, and on every copy but the first, LATER (the child's
# keyframes come with the first copy only, as in MuJoCo 4.0)
SUFFIX, LATER = "_suffix", "_later"


def expand(root: Node, compiler: dict) -> Node:
  """root with every <replicate> under <worldbody> replaced by its copies (see the module)."""
  deg = compiler["angle"] == "degree"
  seq = compiler["eulerseq"]
  return _expand(root, deg, seq)


def _expand(node: Node, deg: bool, seq: str) -> Node:
  if not any(c.tag == "replicate" or c.children for c in node.children):
    return node
  children = []
  for child in node.children:
    child = _expand(child, deg, seq) if child.tag in _HOLDERS else child
    children.extend(_copies(child, deg, seq) if child.tag == "replicate" else [child])
  return dataclasses.replace(node, children=children)


def _copies(node: Node, deg: bool, seq: str) -> list[Node]:
  """The frames of a replicate whose own children are already expanded."""
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
    out.append(Node("frame", attrs, [_renamed(c, suffix, i == 0) for c in node.children],
                    node.file, node.line))
    move = frames.mulvecmat(offset, frames.quat2mat(quat))
    pos = [pos[k] + move[k] for k in range(3)]
  return out


# references inside a body subtree that name another element of the model: MuJoCo's attach
# renames them with the copy (a target outside the replicate then names no body, in MuJoCo
# too); asset and default-class references keep their names
_REFERENCES = {"camera": ("target",), "light": ("target",)}


def _renamed(node: Node, suffix: str, first: bool) -> Node:
  attrs = dict(node.attrs)
  for key in ("name",) + _REFERENCES.get(node.tag, ()):
    if key in attrs:
      attrs[key] += suffix
  if node.tag == "attach":  # every name of the attached copy takes the suffix
    attrs[SUFFIX] = attrs.get(SUFFIX, "") + suffix
    if not first:
      attrs[LATER] = "1"
  return dataclasses.replace(node, attrs=attrs,
                             children=[_renamed(c, suffix, first) for c in node.children])
