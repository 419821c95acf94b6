"""mjVisual and mjStatistic: renderer settings kept in the Model (static, no physics effect).

`Visual` mirrors mjModel.vis: sections global_ (MuJoCo's Python name; `global` in MJCF),
quality, headlight, map, scale and rgba, each a frozen mapping of MuJoCo's attribute names to
values (floats are float32 in MuJoCo; vectors are tuples). `Statistic` mirrors mjModel.stat.
"""

from __future__ import annotations

import dataclasses
import types

# Section -> attribute -> (kind, MuJoCo 4.0 default). kind: "float", "int", "bool" (stored as
# 0/1, as mjVisual does) or n for a vector of n floats.
_R = {"fog": (0, 0, 0, 1), "haze": (1, 1, 1, 1), "force": (1, 0.5, 0.5, 1),
      "inertia": (0.8, 0.2, 0.2, 0.6), "joint": (0.2, 0.6, 0.8, 1),
      "actuator": (0.2, 0.25, 0.2, 1), "actuatornegative": (0.2, 0.6, 0.9, 1),
      "actuatorpositive": (0.9, 0.4, 0.2, 1), "com": (0.9, 0.9, 0.9, 1),
      "camera": (0.6, 0.9, 0.6, 1), "light": (0.6, 0.6, 0.9, 1),
      "selectpoint": (0.9, 0.9, 0.1, 1), "connect": (0.2, 0.2, 0.8, 1),
      "contactpoint": (0.9, 0.6, 0.2, 1), "contactforce": (0.7, 0.9, 0.9, 1),
      "contactfriction": (0.9, 0.8, 0.4, 1), "contacttorque": (0.9, 0.7, 0.9, 1),
      "contactgap": (0.5, 0.8, 0.9, 1), "rangefinder": (1, 1, 0.1, 1),
      "constraint": (0.9, 0, 0, 1), "slidercrank": (0.5, 0.3, 0.8, 1),
      "crankbroken": (0.9, 0, 0, 1), "frustum": (1, 1, 0, 0.2), "bv": (0, 1, 0, 0.5),
      "bvactive": (1, 0, 0, 0.5)}
SPEC: dict[str, dict[str, tuple]] = {
  "global": {"cameraid": ("int", -1), "orthographic": ("bool", 0), "fovy": ("float", 45.0),
             "ipd": ("float", 0.068), "azimuth": ("float", 90.0),
             "elevation": ("float", -45.0), "linewidth": ("float", 1.0),
             "glow": ("float", 0.3), "realtime": ("float", 1.0), "offwidth": ("int", 640),
             "offheight": ("int", 480), "ellipsoidinertia": ("bool", 0),
             "bvactive": ("bool", 0)},
  "quality": {"shadowsize": ("int", 4096), "offsamples": ("int", 4),
              "numslices": ("int", 28), "numstacks": ("int", 16), "numquads": ("int", 4)},
  "headlight": {"ambient": (3, (0.1,) * 3), "diffuse": (3, (0.4,) * 3),
                "specular": (3, (0.5,) * 3), "active": ("int", 2)},
  "map": {"stiffness": ("float", 100.0), "stiffnessrot": ("float", 500.0),
          "force": ("float", 0.005), "torque": ("float", 0.1), "alpha": ("float", 0.3),
          "fogstart": ("float", 3.0), "fogend": ("float", 10.0), "znear": ("float", 0.01),
          "zfar": ("float", 50.0), "haze": ("float", 0.3), "shadowclip": ("float", 1.0),
          "shadowscale": ("float", 0.6), "actuatortendon": ("float", 2.0)},
  "scale": {k: ("float", v) for k, v in (
    ("forcewidth", 0.1), ("contactwidth", 0.3), ("contactheight", 0.1), ("connect", 0.2),
    ("com", 0.4), ("camera", 0.3), ("light", 0.3), ("selectpoint", 0.2),
    ("jointlength", 1.0), ("jointwidth", 0.1), ("actuatorlength", 0.7),
    ("actuatorwidth", 0.2), ("framelength", 1.0), ("framewidth", 0.1),
    ("constraint", 0.1), ("slidercrank", 0.2), ("frustum", 10.0))},
  "rgba": {k: (4, tuple(float(x) for x in v)) for k, v in _R.items()},
}


@dataclasses.dataclass(frozen=True)
class Visual:
  """mjModel.vis: each section maps MuJoCo's attribute names to values (read-only)."""

  global_: types.MappingProxyType
  quality: types.MappingProxyType
  headlight: types.MappingProxyType
  map: types.MappingProxyType
  scale: types.MappingProxyType
  rgba: types.MappingProxyType

  def __hash__(self) -> int:
    return hash(tuple(tuple(sorted(getattr(self, f.name).items()))
                      for f in dataclasses.fields(self)))

  def __eq__(self, other) -> bool:
    return isinstance(other, Visual) and all(
      dict(getattr(self, f.name)) == dict(getattr(other, f.name))
      for f in dataclasses.fields(self))

  def __repr__(self) -> str:
    return "Visual(" + ", ".join(f"{f.name}={dict(getattr(self, f.name))}"
                                 for f in dataclasses.fields(self)) + ")"

  def __reduce__(self):
    # mappingproxy does not pickle; a Model (and its aux data) must, for multiprocessing
    # and checkpoints
    return _visual_from_dicts, (tuple((f.name, dict(getattr(self, f.name)))
                                      for f in dataclasses.fields(self)),)


def _visual_from_dicts(sections: tuple) -> Visual:
  return Visual(**{k: types.MappingProxyType(v) for k, v in sections})


def make_visual(sections: dict[str, dict]) -> Visual:
  """A Visual from {MJCF section: {attribute: value}}; missing values take MuJoCo's
  defaults."""
  out = {}
  for sec, spec in SPEC.items():
    vals = {k: dv for k, (_, dv) in spec.items()}
    vals.update(sections.get(sec, {}))
    out["global_" if sec == "global" else sec] = types.MappingProxyType(vals)
  return Visual(**out)


@dataclasses.dataclass(frozen=True)
class Statistic:
  """mjModel.stat: model scales computed at qpos0 (mj_setConst) unless <statistic> sets
  them. meaninertia: mean diagonal of qM; meanmass: mean body mass; meansize: mean body
  size; extent: size of the bounding box; center: its centre (3 floats)."""

  meaninertia: float = 1.0
  meanmass: float = 1.0
  meansize: float = 0.2
  extent: float = 2.0
  center: tuple = (0.0, 0.0, 0.0)
