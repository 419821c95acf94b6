"""<compiler fusestatic="true">: bodies without joints merged into their parents, as MuJoCo
4.0's mjCModel::FuseStatic does it (host side, on build's body list).

A body is fused when it has no joints, is not a mocap body, no element names it (an exclude,
equality, actuator, sensor, custom tuple, or a camera/light target), no force or torque
sensor sits on one of its sites, and, if it has mass and its parent is not the world, its
gravcomp equals its parent's. Its geoms, sites, cameras and lights move to the parent, after
the parent's own, re-expressed in the parent's frame; its child bodies take its place among
the parent's children; its mass and inertia (as its own <inertial> or geoms give them, bounds
applied) are added to the parent's unless the parent is the world. Bodies are visited in id
order, so a chain of static bodies collapses into the first moving ancestor. This runs on
build's body list rather than the Node tree because MuJoCo fuses after each body's own inertia
is final (boundmass, a lone geom's unsorted frame and the like survive the merge).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.mjcf.compile import frames, inertia
from jaxmj.mjcf.spec.parse import Node

_BODY_OBJTYPES = ("body", "xbody")


def referenced_bodies(root: Node, bodies) -> set[str]:
  """Names of the bodies some element refers to by name (MuJoCo keeps those unfused)."""
  names = set()
  for section in root.children:
    for node in section.children:
      a = node.attrs
      if section.tag == "contact" and node.tag == "exclude":
        names.update(a.get(k) for k in ("body1", "body2"))
      elif section.tag == "equality":
        names.update(a.get(k) for k in ("body1", "body2"))
      elif section.tag == "actuator":
        names.add(a.get("body"))
      elif section.tag == "sensor":
        names.update(a.get(k) for k in ("body", "body1", "body2", "subtree1", "subtree2"))
        if a.get("objtype") in _BODY_OBJTYPES:
          names.add(a.get("objname"))
        if a.get("reftype") in _BODY_OBJTYPES:
          names.add(a.get("refname"))
      elif section.tag == "custom" and node.tag == "tuple":
        names.update(e.attrs.get("objname") for e in node.children
                     if e.attrs.get("objtype") in _BODY_OBJTYPES)
  names.update(v.get("target") for b in bodies for _, v, *_ in b.camlights)
  names.discard(None)
  return names


def _force_sites(root: Node) -> set[str]:
  """Sites of force and torque sensors: MuJoCo never fuses the body that holds one."""
  sites = {n.attrs.get("site") for s in root.children if s.tag == "sensor" for n in s.children
           if n.tag in ("force", "torque")}
  sites.discard(None)
  return sites


def _check_user(root: Node, bodies, fused: list[int]) -> None:
  """MuJoCo checks body user data against nuser_body before fusing."""
  nuser = -1
  for node in (c for c in root.children if c.tag == "size"):
    if node.get("nuser_body") is not None:
      nuser = node.get("nuser_body")
  for b in fused:
    user = bodies[b].node.get("user")
    if nuser >= 0 and user is not None and len(user) > nuser:
      raise bodies[b].node.error(f"user has more values than nuser_body ({nuser})", "user")


def reexpressed(item: tuple, pos: np.ndarray, quat: np.ndarray) -> tuple:
  """A geom, site, camera or light tuple of build's body list, in the frame where its body's
  frame is (pos, quat) (a light's enclosing frame is what moves: mjcf/camlight.py)."""
  return (item[0], item[1], *frames.compose(pos, quat, item[2], item[3]), *item[4:])


def _accumulate(parent: tuple, child: tuple, pos: np.ndarray, quat: np.ndarray) -> tuple:
  """mjCBody::AccumulateInertia: (mass, ipos, inertia, iquat) of the parent with the child
  (whose body frame is (pos, quat) in the parent's) rigidly added."""
  cipos, ciquat = frames.compose(pos, quat, child[1], child[3])
  pmass, pipos, pinert, piquat = parent
  if pmass + child[0] < MINVAL:
    return 0.0, np.zeros(3), np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
  # Two parts: combine() diagonalizes the sum (MuJoCo does so even when one mass is zero).
  return inertia.combine([pmass, child[0]], [pipos, cipos], [piquat, ciquat],
                         [pinert, child[2]], fused=True)


def _inertia_from_geoms(root: Node, bodies) -> list[bool]:
  """Whether each body's inertia comes from geoms of its own (inertiafromgeom, the last
  <compiler> giving it wins; measured: a geomless parent, e.g. one given boundmass, still
  accumulates)."""
  mode = "auto"
  for node in (c for c in root.children if c.tag == "compiler"):
    mode = node.get("inertiafromgeom") or mode
  return [i > 0 and bool(b.geoms) and (mode == "true" or (mode == "auto" and b.inertial is None))
          for i, b in enumerate(bodies)]


def _kept(body) -> bool:
  """<body fuse="false">: the body stays out of fusestatic (MuJoCo 4.0)."""
  return body.node is not None and body.node.get("fuse") == "false"


def fuse_static(root: Node, bodies: list, asset_fields: dict):
  """Build's body list with every fusable static body merged into its parent.

  root: the parsed model; bodies: build's bodytree.Body list in id (depth-first) order, with
  their geoms already placed by their assets, each body but the world carrying its own `inertia`
  (mass, ipos (3,), inertia (3,), iquat (4,)) in its body frame, from its own <inertial> or
  geoms with boundmass/boundinertia/balanceinertia applied (settotalmass comes after
  fusing); asset_fields: compile_assets' output, whose per-geom (geom_*, _geom_*) and
  per-site (site_*) arrays are reordered to the fused numbering.

  Returns (bodies, asset_fields), the bodies carrying their final `inertia`, or None where
  it is to be summed over their geoms (see geom_only below). (MuJoCo compiles
  URDF with fusestatic on: a URDF front end sets it in the <compiler> it writes.)
  """
  n = len(bodies)
  names = {}
  for b in bodies[1:]:
    if b.name and b.name in names:
      raise b.node.error(f"repeated body name '{b.name}'", "name")
    names[b.name] = b
  keep = referenced_bodies(root, bodies) | asset_fields["_skin_bodies"]  # skin bones
  force_sites = _force_sites(root)
  parent = [b.parent for b in bodies]
  pose = [(np.asarray(b.pos, float), np.asarray(b.quat, float)) for b in bodies]
  kids = [[] for _ in range(n)]
  for b in range(1, n):
    kids[parent[b]].append(b)
  geoms, sites, geom_ids, site_ids = [], [], [], []
  start = {"geom": 0, "site": 0}
  for b in bodies:
    geoms.append(list(b.geoms))
    sites.append(list(b.sites))
    for kind, ids, items in (("geom", geom_ids, b.geoms), ("site", site_ids, b.sites)):
      ids.append(list(range(start[kind], start[kind] + len(items))))
      start[kind] += len(items)
  camlights = [list(b.camlights) for b in bodies]
  inert = [b.inertia if i else (0.0, np.zeros(3), np.zeros(3), np.array([1.0, 0, 0, 0]))
           for i, b in enumerate(bodies)]
  # MuJoCo 4.0 turns a fused body into a <frame> and compiles again: a parent whose inertia
  # and that of every body fused into it come from geoms is summed afresh over all their
  # geoms (build sums them where `inertia` is None here); with an explicit <inertial> on
  # either side it accumulates body by body (mjCBody::AccumulateInertia).
  geom_only = _inertia_from_geoms(root, bodies)

  order, fused, i = list(range(n)), [], 1
  resum = [False] * n
  while i < len(order):
    b = order[i]
    body = bodies[b]
    p = parent[b]
    if (body.joints or body.mocap or body.name in keep or _kept(body)
        or any(s[0].attrs.get("name") in force_sites for s in body.sites)
        or (p != 0 and inert[b][0] >= MINVAL and body.gravcomp != bodies[p].gravcomp)):
      i += 1
      continue
    pos, quat = pose[b]
    if p != 0 and inert[b][0] >= MINVAL:
      inert[p] = _accumulate(inert[p], inert[b], pos, quat)
      geom_only[p] = geom_only[p] and geom_only[b]
      resum[p] = True
    for c in kids[b]:
      pose[c] = frames.compose(pos, quat, *pose[c])
      parent[c] = p
    k = kids[p].index(b)
    kids[p][k:k + 1] = kids[b]
    geoms[p] += [reexpressed(g, pos, quat) for g in geoms[b]]
    sites[p] += [reexpressed(s, pos, quat) for s in sites[b]]
    camlights[p] += [reexpressed(c, pos, quat) for c in camlights[b]]
    geom_ids[p] += geom_ids[b]
    site_ids[p] += site_ids[b]
    fused.append(b)
    del order[i]
  _check_user(root, bodies, fused)

  new_id = {b: k for k, b in enumerate(order)}
  out = [dataclasses.replace(
    bodies[b], parent=new_id[parent[b]] if b else 0, pos=pose[b][0], quat=pose[b][1],
    geoms=geoms[b], sites=sites[b], camlights=camlights[b],
    inertia=inert[b] if b and not (resum[b] and geom_only[b]) else None)
    for b in order]
  gperm = np.array([g for b in order for g in geom_ids[b]], np.int64)
  sperm = np.array([s for b in order for s in site_ids[b]], np.int64)
  fields = dict(asset_fields)
  for key, val in asset_fields.items():
    if key.startswith(("geom_", "_geom_")):
      fields[key] = np.asarray(val)[gperm]
    elif key.startswith("site_"):
      fields[key] = np.asarray(val)[sperm]
  return out, fields
