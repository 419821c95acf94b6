"""<compiler discardvisual="true">: what MuJoCo 4.0 drops from a model as visual only.

Every texture and material goes (geoms, sites, tendons and lights then reference none); so do
the visual geoms, those with contype = conaffinity = 0 that no pair, sensor, spatial tendon
or custom tuple names, and every mesh that no remaining geom (or tuple) uses. Heightfields
stay. MuJoCo weighs the visual geoms before dropping them: a body keeps the mass and inertia
they gave it (build computes it first, see `with_inertia`).
"""

from __future__ import annotations

import dataclasses
import os

from jaxmj.mjcf.spec.parse import Node


def _rebuilt(node: Node, keep, attrs) -> Node:
  """A copy of the tree under `node` with only the children `keep` accepts, recursively, and
  each node's attributes as `attrs` gives them."""
  children = [_rebuilt(c, keep, attrs) for c in node.children if keep(node, c)]
  return dataclasses.replace(node, attrs=attrs(node), children=children)


def strip_materials(root: Node) -> Node:
  """`root` without textures and materials (assets and default classes) or any reference to
  them: 'material' attributes and the 'texture' of lights."""
  def attrs(n: Node) -> dict:
    drop = ("material", "texture") if n.tag == "light" else ("material",)
    return {k: v for k, v in n.attrs.items() if k not in drop}

  return _rebuilt(root, lambda _, c: c.tag not in ("texture", "material"), attrs)


def _named(root: Node, objtype: str, attrs: tuple[str, ...], sections: tuple[str, ...]):
  """Names of the `objtype` objects named by `attrs` of elements in `sections`, or through
  objtype/objname, reftype/refname and custom tuple elements."""
  names = set()

  def visit(n: Node) -> None:
    names.update(n.attrs.get(a) for a in attrs)
    for kind, name in (("objtype", "objname"), ("reftype", "refname")):
      if n.attrs.get(kind) == objtype:
        names.add(n.attrs.get(name))
    for c in n.children:
      visit(c)

  for section in root.children:
    if section.tag in sections:
      visit(section)
  names.discard(None)
  return names


def drop_visual(root: Node, bodies) -> Node:
  """`root` without its visual geoms and the meshes only they used; `bodies` is build's body
  list for `root` (resolved geom attributes)."""
  keep = _named(root, "geom", ("geom", "geom1", "geom2"), ("contact", "sensor", "tendon",
                                                            "custom"))
  drop = {id(node) for b in bodies for node, v, *_ in b.geoms
          if v["contype"] == 0 and v["conaffinity"] == 0 and node.attrs.get("name") not in keep}
  meshes = _named(root, "mesh", (), ("custom",))
  meshes.update(v.get("mesh") for b in bodies for node, v, *_ in b.geoms if id(node) not in drop)

  def kept(parent: Node, child: Node) -> bool:
    if parent.tag == "asset" and child.tag == "mesh":
      name = child.attrs.get("name") or os.path.splitext(
        os.path.basename(child.attrs.get("file", "")))[0]
      return name in meshes
    return id(child) not in drop

  return _rebuilt(root, kept, lambda n: n.attrs)


def with_inertia(bodies, own: dict):
  """`bodies` carrying the inertia `own` (build's body_mass, body_ipos, body_inertia,
  body_iquat, computed with the visual geoms) as final."""
  for b, body in enumerate(bodies[1:], 1):
    body.inertia = (own["body_mass"][b], own["body_ipos"][b], own["body_inertia"][b],
                    own["body_iquat"][b])
  return bodies
