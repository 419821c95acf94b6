"""<visual> -> Model.vis and <statistic> -> Model.stat (static, never physics)."""

from __future__ import annotations

import numpy as np

from jaxmj import visual
from jaxmj.mjcf.compile import setconst
from jaxmj.mjcf.errors import warn
from jaxmj.mjcf.spec.parse import Node


def _float32(v):
  """MuJoCo keeps visual settings as float; tuples stay tuples."""
  if isinstance(v, (tuple, list, np.ndarray)):
    return tuple(float(np.float32(x)) for x in v)
  return float(np.float32(v))


def compile_visual(root: Node) -> visual.Visual:
  """Every <visual> section merged (later ones override), MuJoCo's defaults elsewhere."""
  sections: dict[str, dict] = {}
  for vis in (c for c in root.children if c.tag == "visual"):
    for sec in vis.children:
      name = sec.tag.partition("/")[2]
      spec = visual.SPEC[name]
      vals = sections.setdefault(name, {})
      for k in sec.attrs:
        kind, v = spec[k][0], sec.get(k)
        vals[k] = int(v) if kind in ("int", "bool") else _float32(v)
  return visual.make_visual(sections)


def compile_statistic(root: Node, f: dict) -> visual.Statistic:
  """mjModel.stat: computed at qpos0 as mj_setConst does, then <statistic> overrides."""
  stat = {k[len("stat_"):]: v for k, v in setconst.statistics(f).items()}
  for node in (c for c in root.children if c.tag == "statistic"):
    for k in node.attrs:
      v = node.get(k)
      if k == "extent" and v <= 0:
        raise node.error("extent must be strictly positive", "extent")
      if k == "meaninertia":
        warn(f"{node.file}:{node.line}: statistic attribute 'meaninertia' is "
             "deprecated in MuJoCo: it does not affect simulation")
      stat[k] = v
  return visual.Statistic(
    **{k: float(stat[k]) for k in ("meaninertia", "meanmass", "meansize", "extent")},
    center=tuple(float(x) for x in stat["center"]))


def geom_flags(bodies: list) -> dict:
  """geom_castshadow (ngeom,) bool, visual only. MuJoCo 4.0's geom shellinertia (a
  primitive's inertia as a thin shell's) and mesh sites are refused by name."""
  out = []
  for b in bodies:
    for node, v, *_ in b.sites:
      if v.get("type") == "mesh" or v.get("mesh"):
        raise node.error("mesh sites are not supported by jaxmj yet",
                         "type" if v.get("type") == "mesh" else "mesh")
    for node, v, *_ in b.geoms:
      if v.get("shellinertia"):
        raise node.error("shellinertia (a primitive geom's inertia as a thin shell's) is not "
                         "supported by jaxmj yet", "shellinertia")
      out.append(bool(v.get("castshadow", True)))
  return {"geom_castshadow": np.array(out, bool)}

