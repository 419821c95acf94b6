"""`user` attributes -> body_user, jnt_user, geom_user, site_user, cam_user, padded with
zeros to nuser_<kind> as MuJoCo does (<size nuser_*>, -1: the longest list given)."""

from __future__ import annotations

import numpy as np

# Model field prefix -> (<size> attribute, error name)
KINDS = {"body": "nuser_body", "jnt": "nuser_jnt", "geom": "nuser_geom", "site": "nuser_site",
         "cam": "nuser_cam"}


def _values(v) -> np.ndarray:
  return np.zeros(0) if v is None else np.asarray(v, float).ravel()


def _objects(bodies) -> dict[str, list]:
  """(node, user values) per object kind, in id order."""
  return {
    "body": [(b.node, _values(b.node.get("user") if b.node is not None and i else None))
             for i, b in enumerate(bodies)],
    "jnt": [(n, _values(v.get("user"))) for b in bodies for n, v, _ in b.joints],
    "geom": [(g[0], _values(g[1].get("user"))) for b in bodies for g in b.geoms],
    "site": [(s[0], _values(s[1].get("user"))) for b in bodies for s in b.sites],
    "cam": [(c[0], _values(c[1].get("user"))) for b in bodies for c in b.camlights
            if c[0].tag == "camera"],
  }


def compile_user(bodies, size: dict, size_nodes: list) -> dict:
  """nuser_<kind> and <kind>_user (n, nuser) for every kind in KINDS."""
  for node in size_nodes:
    for attr in ("nuser_tendon", "nuser_actuator", "nuser_sensor"):
      if node.get(attr) is not None and node.get(attr) >= 0:
        raise node.error(f"{attr} is not supported by jaxmj yet (tendon, actuator and sensor "
                         "user data sizes follow their longest 'user' list)", attr)
  out = {}
  for kind, items in _objects(bodies).items():
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
