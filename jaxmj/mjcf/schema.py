"""MJCF elements and attributes as data: types, MuJoCo's defaults, allowed children.

An attribute spec is (type, default): type is "str", "int", "float", "bool", a tuple
("float", n) / ("int", n) for n values (n = -1: any count), or a frozenset of keywords.
A default of None means "not given" (the compiler decides). Defaults are the pinned
MuJoCo's (4.0), which differ from the older reference text in places.
"""

from __future__ import annotations

F = "float"
I = "int"
S = "str"
B = "bool"


def fv(n: int) -> tuple:
  return (F, n)


def iv(n: int) -> tuple:
  return (I, n)


def kw(*words: str) -> frozenset:
  return frozenset(words)


LIMITED = kw("false", "true", "auto")
SOLREF = (fv(2), (0.02, 1.0))
SOLIMP = (fv(-1), (0.9, 0.95, 0.001, 0.5, 2.0))
ORIENT = {
  "quat": (fv(4), None),
  "axisangle": (fv(4), None),
  "euler": (fv(3), None),
  "xyaxes": (fv(6), None),
  "zaxis": (fv(3), None),
}

FLAGS_DISABLE = (
  "constraint", "equality", "frictionloss", "limit", "contact", "spring", "damper",
  "gravity", "clampctrl", "warmstart", "filterparent", "actuation", "refsafe", "sensor",
  "midphase", "eulerdamp", "autoreset", "nativeccd", "island", "multiccd",
)
FLAGS_ENABLE = (
  "override", "energy", "fwdinv", "invdiscrete", "sleep", "diagexact", "ipc", "speculative",
)

ATTRS: dict[str, dict[str, tuple]] = {
  "mujoco": {"model": (S, "MuJoCo Model")},
  "include": {"file": (S, None)},
  "compiler": {
    "angle": (kw("degree", "radian"), "degree"),
    "eulerseq": (S, "xyz"),
    "autolimits": (B, True),
    "inertiafromgeom": (kw("false", "true", "auto"), "auto"),
    "inertiagrouprange": (iv(2), (0, 5)),
    "boundmass": (F, 0.0),
    "boundinertia": (F, 0.0),
    "balanceinertia": (B, False),
    "settotalmass": (F, -1.0),
    "coordinate": (kw("local", "global"), "local"),
  },
  "option": {
    "timestep": (F, 0.002),
    "impratio": (F, 1.0),
    "tolerance": (F, 1e-8),
    "ls_tolerance": (F, 0.01),
    "noslip_tolerance": (F, 1e-6),
    "ccd_tolerance": (F, 1e-6),
    "sleep_tolerance": (F, 1e-3),
    "gravity": (fv(3), (0.0, 0.0, -9.81)),
    "wind": (fv(3), (0.0, 0.0, 0.0)),
    "magnetic": (fv(3), (0.0, -0.5, 0.0)),
    "density": (F, 0.0),
    "viscosity": (F, 0.0),
    "o_margin": (F, 0.0),
    "o_solref": SOLREF,
    "o_solimp": SOLIMP,
    "o_friction": (fv(5), (1.0, 1.0, 0.005, 0.0001, 0.0001)),
    "integrator": (kw("Euler", "RK4", "implicit", "implicitfast"), "Euler"),
    "cone": (kw("pyramidal", "elliptic"), "pyramidal"),
    "jacobian": (kw("dense", "sparse", "auto"), "auto"),
    "solver": (kw("PGS", "CG", "Newton"), "Newton"),
    "iterations": (I, 100),
    "ls_iterations": (I, 50),
    "noslip_iterations": (I, 0),
    "ccd_iterations": (I, 35),
    "sdf_iterations": (I, 10),
    "sdf_initpoints": (I, 40),
    "actuatorgroupdisable": (iv(-1), ()),
  },
  "flag": {name: (kw("enable", "disable"), None) for name in FLAGS_DISABLE + FLAGS_ENABLE},
  "size": {
    "memory": (S, "-1"),
    "njmax": (I, -1),
    "nconmax": (I, -1),
    "nstack": (I, -1),
    "nuserdata": (I, 0),
    "nkey": (I, 0),
  },
  "default": {"class": (S, None)},
  "worldbody": {},
  "body": {
    "name": (S, None),
    "childclass": (S, None),
    "pos": (fv(3), (0.0, 0.0, 0.0)),
    "mocap": (B, False),
    "gravcomp": (F, 0.0),
    **ORIENT,
  },
  "frame": {"name": (S, None), "childclass": (S, None), "pos": (fv(3), (0.0, 0.0, 0.0)),
            **ORIENT},
  "inertial": {
    "pos": (fv(3), None),
    "mass": (F, None),
    "diaginertia": (fv(3), None),
    "fullinertia": (fv(6), None),
    **ORIENT,
  },
  "joint": {
    "name": (S, None),
    "class": (S, None),
    "type": (kw("free", "ball", "slide", "hinge"), "hinge"),
    "group": (I, 0),
    "pos": (fv(3), (0.0, 0.0, 0.0)),
    "axis": (fv(3), (0.0, 0.0, 1.0)),
    "springdamper": (fv(2), (0.0, 0.0)),
    "limited": (LIMITED, "auto"),
    "actuatorfrclimited": (LIMITED, "auto"),
    "solreflimit": SOLREF,
    "solimplimit": SOLIMP,
    "solreffriction": SOLREF,
    "solimpfriction": SOLIMP,
    "stiffness": (F, 0.0),
    "range": (fv(2), (0.0, 0.0)),
    "actuatorfrcrange": (fv(2), (0.0, 0.0)),
    "actuatorgravcomp": (B, False),
    "margin": (F, 0.0),
    "ref": (F, 0.0),
    "springref": (F, 0.0),
    "armature": (F, 0.0),
    "damping": (F, 0.0),
    "frictionloss": (F, 0.0),
  },
  "freejoint": {"name": (S, None), "group": (I, 0)},
  "geom": {
    "name": (S, None),
    "class": (S, None),
    "type": (kw("plane", "sphere", "capsule", "ellipsoid", "cylinder", "box", "hfield",
                "mesh", "sdf"), "sphere"),
    "contype": (I, 1),
    "conaffinity": (I, 1),
    "condim": (I, 3),
    "group": (I, 0),
    "priority": (I, 0),
    "size": (fv(-1), (0.0, 0.0, 0.0)),
    "rgba": (fv(4), (0.5, 0.5, 0.5, 1.0)),
    "friction": (fv(-1), (1.0, 0.005, 0.0001)),
    "mass": (F, None),
    "density": (F, 1000.0),
    "solmix": (F, 1.0),
    "solref": SOLREF,
    "solimp": SOLIMP,
    "margin": (F, 0.0),
    "gap": (F, 0.0),
    "adhesion": (F, 0.0),
    "surfacevel": (fv(-1), (0.0,) * 6),
    "fromto": (fv(6), None),
    "pos": (fv(3), (0.0, 0.0, 0.0)),
    **ORIENT,
  },
  "site": {
    "name": (S, None),
    "class": (S, None),
    "type": (kw("sphere", "capsule", "ellipsoid", "cylinder", "box"), "sphere"),
    "group": (I, 0),
    "size": (fv(-1), (0.005, 0.005, 0.005)),
    "rgba": (fv(4), (0.5, 0.5, 0.5, 1.0)),
    "fromto": (fv(6), None),
    "pos": (fv(3), (0.0, 0.0, 0.0)),
    **ORIENT,
  },
  "contact": {},
  # Explicit geom pairs: their parameters come from the pair (or its class), never from the
  # two geoms (MuJoCo 4.0 stores these defaults when nothing is given).
  "pair": {
    "name": (S, None),
    "class": (S, None),
    "geom1": (S, None),
    "geom2": (S, None),
    "condim": (I, 3),
    "friction": (fv(-1), (1.0, 1.0, 0.005, 0.0001, 0.0001)),
    "solref": SOLREF,
    "solreffriction": (fv(2), (0.0, 0.0)),
    "solimp": SOLIMP,
    "margin": (F, 0.0),
    "gap": (F, 0.0),
    "adhesion": (F, 0.0),
  },
  "exclude": {"name": (S, None), "body1": (S, None), "body2": (S, None)},
  "keyframe": {},
  "key": {
    "name": (S, None),
    "time": (F, 0.0),
    "qpos": (fv(-1), None),
    "qvel": (fv(-1), None),
    "act": (fv(-1), None),
    "ctrl": (fv(-1), None),
    "mpos": (fv(-1), None),
    "mquat": (fv(-1), None),
  },
}

# Variable-length attributes (count -1 above) that MuJoCo caps: more values is an error.
# Keyed by attribute name, or by (element, attribute) where an element differs.
MAX_VALUES = {"size": 3, "friction": 3, "solimp": 5, "solimplimit": 5, "solimpfriction": 5,
              "o_solimp": 5, "surfacevel": 6, ("pair", "friction"): 5}


def max_values(tag: str, name: str) -> int | None:
  return MAX_VALUES.get((tag, name), MAX_VALUES.get(name))


# Element -> children it may hold (within the supported subset).
CHILDREN: dict[str, tuple[str, ...]] = {
  "mujoco": ("include", "compiler", "option", "size", "default", "worldbody", "contact",
             "keyframe"),
  "option": ("flag",),
  "default": ("default", "joint", "geom", "site", "pair"),
  "worldbody": ("body", "frame", "geom", "site"),
  "body": ("body", "frame", "inertial", "joint", "freejoint", "geom", "site"),
  "frame": ("body", "frame", "geom", "site"),
  "contact": ("pair", "exclude"),
  "keyframe": ("key",),
}

# Children that may appear at most once in their parent.
UNIQUE: dict[str, tuple[str, ...]] = {
  "option": ("flag",),
  "default": ("joint", "geom", "site", "pair"),
  "body": ("inertial",),
}

# Elements that may appear inside <default> and so take class defaults.
DEFAULTABLE = ("joint", "geom", "site", "pair")

# Attributes an element may not take inside <default>, besides name and class.
NOT_IN_DEFAULT = {"pair": ("geom1", "geom2")}

# MuJoCo elements that are valid MJCF but not supported by jaxmj yet: the error says so.
UNSUPPORTED = {
  "asset": "assets (meshes, heightfields, textures, materials)",
  "mesh": "meshes", "hfield": "heightfields", "texture": "textures", "material": "materials",
  "skin": "skins", "model": "model assets",
  "tendon": "tendons", "spatial": "spatial tendons", "fixed": "fixed tendons",
  "actuator": "actuators", "general": "actuators", "motor": "actuators",
  "position": "actuators", "velocity": "actuators", "intvelocity": "actuators",
  "damper": "actuators", "cylinder": "actuators", "muscle": "actuators",
  "adhesion": "actuators",
  "sensor": "sensors", "equality": "equality constraints",
  "custom": "custom numeric/text/tuple data", "extension": "plugins", "plugin": "plugins",
  "deformable": "deformable objects (flex)", "flex": "flex objects", "flexcomp": "flex objects",
  "composite": "composite objects", "replicate": "replicate", "attach": "model attachment",
  "statistic": "<statistic>", "tuple": "tuples", "numeric": "numeric data", "text": "text data",
}

# Visual-only elements: no effect on physics; skipped with a warning until kept in Model.
VISUAL_ONLY = ("camera", "light", "visual")
