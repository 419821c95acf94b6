"""URDF front end: a <robot> document becomes the MJCF Node tree MuJoCo 4.0's URDF reader
(xml_urdf.cc) would build, which the MJCF compiler then compiles like any model.

What MuJoCo 4.0 does with URDF, measured against it (tests/mjcf/test_urdf.py):
- A <mujoco> child of <robot> may hold <compiler>, <option> and <size> (anything else in it
  is ignored). URDF changes three compiler defaults: fusestatic and discardvisual are on
  (strippath stays off), and angles are always radians.
- Each link is a body named after it; a link named "world" is the world body. Links without
  a parent hang from the world, fixed (no free joint). A body's frame is its joint's
  <origin>; rpy are extrinsic X, Y, Z rotations.
- Joints: revolute and continuous are hinges, prismatic slides, floating free, spherical
  ball, fixed nothing, planar two slides and a hinge named <name>_TX, _TY, _RZ about the
  frame that turns z onto the axis (default axis 1 0 0). <limit> lower and upper give the
  range (limited unless one is missing or lower > upper; continuous joints never are),
  effort the actuator force range; <dynamics> damping and friction (frictionloss). <mimic>
  becomes a joint equality (polycoef offset, multiplier) when both joints are 1-dof.
- <inertial>: mass and a full inertia in the <origin> frame; all-zero moments stay zero.
  Links without one take their inertia from their geoms. The world link's goes to the world
  body (body_mass[0] ...; the world's inertial frame stays the world frame at run time).
- <collision> geoms collide; <visual> geoms are group 1, massless and non-colliding, and
  dropped under discardvisual. A visual's <material> color (inline, or a named <material>
  with a <color> anywhere in the file, the first of a name winning) colors it, the link's
  later visuals without one, and its later collision geoms. A geom name used before is
  dropped. Boxes, cylinders and capsules give full lengths (halved here); a mesh becomes an
  asset named after its file (no folder, no extension; a number is appended for each other
  scale of the same file).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from jaxmj.mjcf.compile import frames
from jaxmj.mjcf.compile.inertia import rotated_full
from jaxmj.mjcf.errors import MJCFError, warn
from jaxmj.mjcf.spec.parse import Node

_JOINT_TYPES = {"revolute": "hinge", "continuous": "hinge", "prismatic": "slide",
                "fixed": None, "floating": "free", "planar": None, "spherical": "ball"}
_ONE_DOF = ("revolute", "continuous", "prismatic")
_EXTENSION = ("compiler", "option", "size")
_IDENTITY = np.array([1.0, 0.0, 0.0, 0.0])


@dataclasses.dataclass
class _Link:
  el: object  # the lxml <link>
  name: str
  parent: int = -1
  joint: object = None  # the lxml <joint> connecting it to its parent
  children: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Context:
  file: str
  discardvisual: bool
  strippath: bool
  colors: dict  # material name -> rgba
  meshes: dict = dataclasses.field(default_factory=dict)  # base name -> [(scale, name)]
  mesh_nodes: list = dataclasses.field(default_factory=list)
  geom_names: set = dataclasses.field(default_factory=set)

  def error(self, el, msg: str, attribute: str | None = None) -> MJCFError:
    return MJCFError(msg, file=self.file, line=el.sourceline, element=str(el.tag),
                     attribute=attribute)

  def node(self, tag: str, el, attrs: dict, children: list | None = None) -> Node:
    """An MJCF node located at URDF element `el`; numbers written to round-trip exactly."""
    text = {k: v if isinstance(v, str) else _fmt(v) for k, v in attrs.items()}
    return Node(tag, text, children or [], self.file, el.sourceline or 0)


def _fmt(values) -> str:
  return " ".join(repr(float(v)) for v in np.atleast_1d(np.asarray(values, float)))


def to_mjcf(root, file: str, convert) -> Node:
  """The MJCF <mujoco> Node tree of the URDF <robot> element `root` (lxml) read from `file`.

  `convert(el, parent_tag)` turns an lxml MJCF element (the <mujoco> extension's sections)
  into a Node."""
  sections = _extension(root, file, convert)
  compiler = sections.get("compiler") or Node("compiler", {}, [], file, root.sourceline)
  ctx = _Context(file, _flag(compiler, "discardvisual", True),
                 _flag(compiler, "strippath", False), _colors(root, file))
  links = _links(root, ctx)
  order = _tree(links, ctx)
  world = Node("worldbody", {}, [], file, root.sourceline or 0)
  for i in order:
    if links[i].parent < 0:
      world.children.extend(_body(links, i, ctx))
  compiler.attrs["angle"] = "radian"
  # Visual geoms are dropped above (as MuJoCo's reader does): the compiler keeps them all.
  compiler.attrs["discardvisual"] = "false"
  compiler.attrs["fusestatic"] = "true" if _flag(compiler, "fusestatic", True) else "false"
  children = [compiler] + [sections[t] for t in ("option", "size") if t in sections]
  if ctx.mesh_nodes:
    children.append(Node("asset", {}, ctx.mesh_nodes, file, root.sourceline or 0))
  children.append(world)
  eq = _mimics(root, ctx)
  if eq:
    children.append(Node("equality", {}, eq, file, root.sourceline or 0))
  attrs = {"model": root.get("name")} if root.get("name") is not None else {}
  return Node("mujoco", attrs, children, file, root.sourceline or 0)


def _flag(compiler: Node, name: str, default: bool) -> bool:
  value = compiler.get(name)
  return default if value is None else bool(value)


def _extension(root, file: str, convert) -> dict[str, Node]:
  """The <compiler>, <option> and <size> of the <mujoco> extension element, as Nodes."""
  found = [el for el in root if el.tag == "mujoco"]
  if len(found) > 1:
    raise MJCFError("repeated element <mujoco> in URDF", file=file, line=found[1].sourceline,
                    element="mujoco")
  out = {}
  for el in found[0] if found else ():
    if el.tag in _EXTENSION:
      if el.tag in out:
        raise MJCFError(f"repeated element <{el.tag}> in the <mujoco> extension", file=file,
                        line=el.sourceline, element=el.tag)
      out[el.tag] = convert(el, "mujoco")
  return out


def _children(el, tag: str) -> list:
  return [c for c in el if c.tag == tag]


def _child(el, tag: str, ctx: _Context, required: bool = False):
  """The single <tag> child of `el` (None if absent and not required)."""
  found = _children(el, tag)
  if len(found) > 1:
    raise ctx.error(found[1], f"repeated element <{tag}> in <{el.tag}>")
  if not found and required:
    raise ctx.error(el, f"missing required element <{tag}>")
  return found[0] if found else None


def _text(el, name: str, ctx: _Context, required: bool = True) -> str | None:
  value = el.get(name)
  if value is None and required:
    raise ctx.error(el, f"missing required attribute '{name}'", name)
  return value


def _floats(el, name: str, n: int, ctx: _Context, required: bool = False):
  text = _text(el, name, ctx, required)
  if text is None:
    return None
  try:
    values = np.array([float(p) for p in text.split()])
  except ValueError:
    raise ctx.error(el, f"malformed number in {text!r}", name) from None
  if len(values) != n:
    raise ctx.error(el, f"expected {n} value{'s' * (n > 1)}, got {len(values)}: {text!r}",
                    name)
  if not np.all(np.isfinite(values)):
    raise ctx.error(el, f"non-finite number in {text!r}", name)
  return values if n > 1 else float(values[0])


def _origin(el, ctx: _Context) -> tuple[np.ndarray, np.ndarray]:
  """Position and quaternion of the <origin> child of `el` (identity without one)."""
  origin = _child(el, "origin", ctx)
  if origin is None:
    return np.zeros(3), _IDENTITY
  pos = _floats(origin, "xyz", 3, ctx)
  rpy = _floats(origin, "rpy", 3, ctx)
  quat = _IDENTITY if rpy is None else frames.euler(rpy, "XYZ", False, None)
  return (np.zeros(3) if pos is None else pos), quat


def _colors(root, file: str) -> dict[str, np.ndarray]:
  """Named materials with a <color>, anywhere in the document; the first of a name wins."""
  ctx = _Context(file, False, False, {})
  colors = {}
  for el in root.iter("material"):
    name, color = el.get("name"), _child(el, "color", ctx)
    if name is not None and color is not None and name not in colors:
      colors[name] = _floats(color, "rgba", 4, ctx, required=True)
  return colors


# ---------------------------------------------------------------- kinematic tree


def _links(root, ctx: _Context) -> list[_Link]:
  links, index = [], {}
  for el in _children(root, "link"):
    name = _text(el, "name", ctx)
    if name in index:
      raise ctx.error(el, f"repeated URDF link name '{name}'", "name")
    index[name] = len(links)
    links.append(_Link(el, name))
  for el in _children(root, "joint"):
    ids = []
    for tag in ("parent", "child"):
      ref = _child(el, tag, ctx, required=True)
      name = _text(ref, "link", ctx)
      if name not in index:
        raise ctx.error(ref, f"joint '{el.get('name')}' names {tag} link '{name}', which is "
                        "not a <link> of this robot", "link")
      ids.append(index[name])
    parent, child = ids
    if links[child].parent >= 0:
      raise ctx.error(el, f"URDF link '{links[child].name}' has multiple parents (joints "
                      f"'{links[child].joint.get('name')}' and '{el.get('name')}')")
    links[child].parent, links[child].joint = parent, el
    links[parent].children.append(child)
  return links


def _tree(links: list[_Link], ctx: _Context) -> list[int]:
  """Link ids depth first from the parentless links (MuJoCo's body order); a link that no
  root reaches lies on a cycle of joints, which is an error naming it."""
  order, stack = [], [i for i in reversed(range(len(links))) if links[i].parent < 0]
  while stack:
    i = stack.pop()
    order.append(i)
    stack.extend(reversed(links[i].children))
  reached = set(order)
  for i in range(len(links)):
    if i not in reached:
      seen = [i]
      while links[seen[-1]].parent not in seen:
        seen.append(links[seen[-1]].parent)
      cycle = seen[seen.index(links[seen[-1]].parent):]
      path = " -> ".join(links[j].name for j in reversed(cycle + [cycle[0]]))
      link = links[cycle[0]]
      raise ctx.error(link.joint, f"URDF joints form a cycle: {path} (parent -> child; a "
                      "URDF must be a tree)")
  for i in order:
    if links[i].name == "world" and links[i].parent >= 0:
      raise ctx.error(links[i].joint, "the URDF link 'world' cannot have a parent")
  return order


def _body(links: list[_Link], i: int, ctx: _Context) -> list[Node]:
  """MJCF nodes of link `i`: a body holding its subtree, or for "world" the world's own
  geoms followed by its child bodies."""
  link = links[i]
  geoms = _geoms(link.el, ctx)
  kids = [n for c in link.children for n in _body(links, c, ctx)]
  if link.name == "world":
    inertial = _inertial(link.el, ctx)
    if inertial is not None:  # MuJoCo's URDF reader gives it to the world body
      inertial.tag = "worldbody/inertial"
    return ([inertial] if inertial is not None else []) + geoms + kids
  attrs = {"name": link.name}
  joints = []
  if link.joint is not None:
    pos, quat = _origin(link.joint, ctx)
    attrs.update(pos=pos, quat=quat)
    joints = _joint(link.joint, ctx)
  inertial = _inertial(link.el, ctx)
  children = ([inertial] if inertial is not None else []) + joints + geoms + kids
  return [ctx.node("body", link.el, attrs, children)]


def _inertial(link, ctx: _Context) -> Node | None:
  el = _child(link, "inertial", ctx)
  if el is None:
    return None
  pos, quat = _origin(el, ctx)
  mass = _floats(_child(el, "mass", ctx, required=True), "value", 1, ctx, required=True)
  inertia = _child(el, "inertia", ctx, required=True)
  xx, yy, zz, xy, xz, yz = (_floats(inertia, k, 1, ctx, required=True)
                            for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz"))
  attrs = {"pos": pos, "mass": mass}
  if not any((xx, yy, zz, xy, xz, yz)):
    # All-zero moments are "not given" to MuJoCo: they stay zero in the origin's frame.
    attrs.update(quat=quat, diaginertia=np.zeros(3))
  else:
    # MuJoCo finds the principal axes of the inertia turned into the body frame.
    attrs["fullinertia"] = rotated_full(quat, np.array([[xx, xy, xz], [xy, yy, yz],
                                                          [xz, yz, zz]]))
  return ctx.node("inertial", el, attrs)


def _z2quat(vec: np.ndarray) -> np.ndarray:
  """Minimal rotation from z onto `vec` (not normalized), as MuJoCo's mjuu_z2quat."""
  axis = np.cross([0.0, 0.0, 1.0], vec)
  s = np.linalg.norm(axis)
  axis = axis / s if s >= 1e-10 else np.array([1.0, 0.0, 0.0])
  ang = np.arctan2(s, vec[2])
  return np.concatenate([[np.cos(ang / 2)], axis * np.sin(ang / 2)])


def _joint(el, ctx: _Context) -> list[Node]:
  """The MJCF joints of a URDF <joint> (none for fixed, three for planar)."""
  jtype = _text(el, "type", ctx)
  if jtype not in _JOINT_TYPES:
    raise ctx.error(el, f"invalid URDF joint type '{jtype}', expected one of "
                    f"{sorted(_JOINT_TYPES)}", "type")
  name = _text(el, "name", ctx)
  axis_el = _child(el, "axis", ctx)
  axis = np.array([1.0, 0.0, 0.0]) if axis_el is None else _floats(
    axis_el, "xyz", 3, ctx, required=True)
  if jtype == "fixed":
    return []
  if jtype == "planar":
    mat = frames.quat_to_mat(_z2quat(axis))
    specs = [(f"{name}_TX", "slide", mat[:, 0]), (f"{name}_TY", "slide", mat[:, 1]),
             (f"{name}_RZ", "hinge", axis)]
  else:
    specs = [(name, _JOINT_TYPES[jtype], axis)]
  joints = [{"name": n, "type": t} if t == "free" else {"name": n, "type": t, "axis": a}
            for n, t, a in specs]
  dyn = _child(el, "dynamics", ctx)
  if dyn is not None:
    damping, friction = _floats(dyn, "damping", 1, ctx), _floats(dyn, "friction", 1, ctx)
    for j in joints:
      if damping is not None:
        j["damping"] = damping
      if friction is not None:
        j["frictionloss"] = friction
  limit = _child(el, "limit", ctx)
  if limit is not None:
    _limit(limit, jtype, joints[0], ctx)
  return [ctx.node("joint", el, j) for j in joints]


def _limit(el, jtype: str, joint: dict, ctx: _Context) -> None:
  lower, upper = _floats(el, "lower", 1, ctx), _floats(el, "upper", 1, ctx)
  effort = _floats(el, "effort", 1, ctx)
  if jtype == "continuous":
    joint["limited"] = "false"
  elif lower is not None or upper is not None:
    joint["range"] = [lower or 0.0, upper or 0.0]
    if lower is None or upper is None or lower > upper:
      joint["limited"] = "false"
  if effort is not None and abs(effort) > 0:
    joint["actuatorfrcrange"] = [-abs(effort), abs(effort)]


def _mimics(root, ctx: _Context) -> list[Node]:
  """A joint equality per <mimic> between two 1-dof joints (MuJoCo warns and skips others)."""
  types = {el.get("name"): el.get("type") for el in _children(root, "joint")}
  out = []
  for el in _children(root, "joint"):
    mimic = _child(el, "mimic", ctx)
    if mimic is None:
      continue
    leader = _text(mimic, "joint", ctx)
    if types.get(el.get("name")) not in _ONE_DOF or types.get(leader) not in _ONE_DOF:
      warn(f"{ctx.file}:{mimic.sourceline}: <mimic> on joint '{el.get('name')}' "
           "ignored, as MuJoCo does: mimic needs revolute, continuous or prismatic "
           "joints")
      continue
    mult = _floats(mimic, "multiplier", 1, ctx)
    offset = _floats(mimic, "offset", 1, ctx)
    poly = [0.0 if offset is None else offset, 1.0 if mult is None else mult, 0.0, 0.0, 0.0]
    out.append(ctx.node("equality/joint", mimic, {"joint1": el.get("name"), "joint2": leader,
                                                  "polycoef": poly}))
  return out


# ---------------------------------------------------------------- geoms and meshes


def _geoms(link, ctx: _Context) -> list[Node]:
  out, rgba, name = [], None, ""
  for el in link:
    if el.tag not in ("visual", "collision"):
      continue
    visual = el.tag == "visual"
    if visual:
      rgba = _material_rgba(el, ctx, rgba)
      if ctx.discardvisual:
        continue
    attrs = _geometry(el, ctx)
    if visual:
      attrs.update(contype="0", conaffinity="0", group="1", density="0")
    if rgba is not None:
      attrs["rgba"] = rgba
    # As MuJoCo: an unnamed geom repeats the name of the link's previous one, and a name seen
    # before leaves the geom unnamed.
    name = el.get("name", name)
    if name not in ctx.geom_names:
      ctx.geom_names.add(name)
      if name:
        attrs["name"] = name
    out.append(ctx.node("geom", el, attrs))
  return out


def _material_rgba(visual, ctx: _Context, rgba):
  mat = _child(visual, "material", ctx)
  if mat is None:
    return rgba
  color = _child(mat, "color", ctx)
  if color is not None:
    return _floats(color, "rgba", 4, ctx, required=True)
  return ctx.colors.get(_text(mat, "name", ctx), rgba)


def _geometry(el, ctx: _Context) -> dict:
  """Geom attributes of a <visual> or <collision>: shape, size and placement."""
  geometry = _child(el, "geometry", ctx, required=True)
  pos, quat = _origin(el, ctx)
  attrs = {"pos": pos, "quat": quat}
  for shape in geometry:
    if shape.tag == "box":
      attrs.update(type="box", size=_floats(shape, "size", 3, ctx, required=True) / 2)
    elif shape.tag in ("cylinder", "capsule"):
      radius = _floats(shape, "radius", 1, ctx, required=True)
      length = _floats(shape, "length", 1, ctx, required=True)
      attrs.update(type=shape.tag, size=[radius, length / 2])
    elif shape.tag == "sphere":
      attrs.update(type="sphere", size=_floats(shape, "radius", 1, ctx, required=True))
    elif shape.tag == "mesh":
      attrs.update(type="mesh", mesh=_mesh(shape, ctx))
    else:
      continue
    return attrs
  raise ctx.error(geometry, "no box, cylinder, sphere, capsule or mesh in <geometry>")


def _mesh(el, ctx: _Context) -> str:
  """Name of the mesh asset for a <mesh> (added on first use of its file and scale)."""
  file = _text(el, "filename", ctx)
  scale = _floats(el, "scale", 3, ctx)
  scale = np.ones(3) if scale is None else scale
  if ctx.strippath:
    file = _strip(file)
  base = os.path.splitext(_strip(file))[0]
  known = ctx.meshes.setdefault(base, [])
  for s, name in known:
    if np.array_equal(s, scale):
      return name
  name = base if not known else f"{base}{len(known)}"
  known.append((scale, name))
  ctx.mesh_nodes.append(ctx.node("mesh", el, {"name": name, "file": file, "scale": scale}))
  return name


def _strip(path: str) -> str:
  return path.replace("\\", "/").rpartition("/")[2]

