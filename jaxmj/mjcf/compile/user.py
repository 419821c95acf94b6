"""`user` attributes -> body_user, jnt_user, geom_user, site_user, cam_user, tendon_user,
actuator_user and sensor_user, padded with zeros to nuser_<kind> as MuJoCo does (<size
nuser_*>, -1: the longest list given; a longer list is an error)."""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.compile import actuator
from jaxmj.mjcf.spec.parse import Defaults, Node, overlay

# Model field prefix -> <size> attribute
KINDS = {"body": "nuser_body", "jnt": "nuser_jnt", "geom": "nuser_geom", "site": "nuser_site",
         "cam": "nuser_cam", "tendon": "nuser_tendon", "actuator": "nuser_actuator",
         "sensor": "nuser_sensor"}


def _values(v) -> np.ndarray:
  return np.zeros(0) if v is None else np.asarray(v, float).ravel()


def _tendon_user(node: Node, defaults: Defaults):
  """A tendon's user data: written on it, else its class's <tendon> default."""
  value = defaults.classes.get(node.attrs.get("class", "main"), {}).get("tendon", {}).get("user")
  return overlay(node, "user", value) if "user" in node.attrs else value


def _actuator_users(root: Node) -> list:
  """Each actuator's user data through the default cascade (every shortcut shares it)."""
  nodes = [n for sec in root.children if sec.tag == "actuator" for n in sec.children]
  specs = actuator.default_specs(root) if nodes else {}
  return [(n, _values(actuator.apply(n, *specs[n.attrs.get("class", "main")])[0]["user"]))
          for n in nodes]


def _objects(root: Node, bodies, defaults: Defaults, f: dict) -> dict[str, list]:
  """(node, user values) per object kind, in id order."""
  return {
    "body": [(b.node, _values(b.node.get("user") if b.node is not None and i else None))
             for i, b in enumerate(bodies)],
    "jnt": [(n, _values(v.get("user"))) for b in bodies for n, v, _ in b.joints],
    "geom": [(g[0], _values(g[1].get("user"))) for b in bodies for g in b.geoms],
    "site": [(s[0], _values(s[1].get("user"))) for b in bodies for s in b.sites],
    "cam": [(c[0], _values(c[1].get("user"))) for b in bodies for c in b.camlights
            if c[0].tag == "camera"],
    "tendon": [(n, _values(_tendon_user(n, defaults))) for sec in root.children
               if sec.tag == "tendon" for n in sec.children],
    "actuator": _actuator_users(root),
    "sensor": [(n, _values(n.get("user"))) for n in f.get("_sensor_nodes", ())],
  }


def compile_user(root: Node, bodies, defaults: Defaults, f: dict, size: dict) -> dict:
  """nuser_<kind> and <kind>_user (n, nuser) for every kind in KINDS; f: the compiled
  fields so far (the sensor elements in id order)."""
  out = {}
  for kind, items in _objects(root, bodies, defaults, f).items():
    attr = KINDS[kind]
    nuser = size[attr]
    longest = max((len(u) for _, u in items), default=0)
    if nuser < 0:
      nuser = longest
    elif longest > nuser:
      node = next(n for n, u in items if len(u) > nuser)
      raise node.error(f"user has more values than {attr} ({nuser})", "user")
    user = np.zeros((len(items), nuser))
    for i, (_, u) in enumerate(items):
      user[i, :len(u)] = u
    out[attr], out[f"{kind}_user"] = nuser, user
  return out
