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
SOLREF = (fv(-1), (0.02, 1.0))  # one value sets the time constant (MJCF's [1..2])
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

TENDON = {
  "group": (I, 0),
  "limited": (LIMITED, "auto"),
  "actuatorfrclimited": (LIMITED, "auto"),
  "range": (fv(2), (0.0, 0.0)),
  "actuatorfrcrange": (fv(2), (0.0, 0.0)),
  "solreflimit": SOLREF,
  "solimplimit": SOLIMP,
  "solreffriction": SOLREF,
  "solimpfriction": SOLIMP,
  "frictionloss": (F, 0.0),
  "springlength": (fv(-1), None),  # one value v means (v, v); unset: (-1, -1), computed
  "width": (F, 0.003),
  "material": (S, None),
  "margin": (F, 0.0),
  "stiffness": (fv(-1), (0.0, 0.0, 0.0)),
  "springyield": (F, 0.0),
  "damping": (fv(-1), (0.0, 0.0, 0.0)),
  "armature": (F, 0.0),
  "rgba": (fv(4), (0.5, 0.5, 0.5, 1.0)),
  "user": (fv(-1), None),
}

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
    "o_friction": (fv(-1), (1.0, 1.0, 0.005, 0.0001, 0.0001)),
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
    "sleep": (kw("auto", "never", "allowed", "init"), "auto"),  # mjcf/sleep.py
    "fuse": (kw("auto", "false"), "auto"),  # false: kept out of fusestatic
    "simple": (kw("auto", "false"), "auto"),  # false: body_simple 0
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
    "stiffness": (fv(-1), (0.0, 0.0, 0.0)),  # linear, quadratic, cubic
    "springyield": (F, 0.0),  # plasticity: jaxmj/mjcf/compile/plastic.py
    "range": (fv(2), (0.0, 0.0)),
    "actuatorfrcrange": (fv(2), (0.0, 0.0)),
    "actuatorgravcomp": (B, False),
    "margin": (F, 0.0),
    "ref": (F, 0.0),
    "springref": (F, 0.0),
    "armature": (F, 0.0),
    "damping": (fv(-1), (0.0, 0.0, 0.0)),  # linear, quadratic, cubic
    "frictionloss": (F, 0.0),
  },
  "freejoint": {"name": (S, None), "group": (I, 0),
                "align": (kw("false", "true", "auto"), "auto")},  # jaxmj/mjcf/passes/align.py
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
    "castshadow": (B, True),
    "shellinertia": (B, False),
    "fromto": (fv(6), None),
    "pos": (fv(3), (0.0, 0.0, 0.0)),
    **ORIENT,
  },
  "site": {
    "name": (S, None),
    "class": (S, None),
    "type": (kw("sphere", "capsule", "ellipsoid", "cylinder", "box", "mesh"), "sphere"),
    "mesh": (S, None),  # MuJoCo 4.0's mesh sites: refused (mjcf/visual.geom_flags)
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
    "solreffriction": (fv(-1), (0.0, 0.0)),
    "solimp": SOLIMP,
    "margin": (F, 0.0),
    "gap": (F, 0.0),
    "adhesion": (F, 0.0),
  },
  "exclude": {"name": (S, None), "body1": (S, None), "body2": (S, None)},
  # <tendon> is the section element; inside <default> it carries these tendon defaults.
  "tendon": TENDON,
  "spatial": {"name": (S, None), "class": (S, None), **TENDON},
  "fixed": {"name": (S, None), "class": (S, None),
            **{k: v for k, v in TENDON.items() if k not in ("width", "material", "rgba")}},
  # Tendon path elements, scoped (SCOPED) apart from the body elements of the same name.
  "spatial/site": {"site": (S, None)},
  "spatial/geom": {"geom": (S, None), "sidesite": (S, None)},
  "pulley": {"divisor": (F, None)},
  "fixed/joint": {"joint": (S, None), "coef": (F, None)},
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
    "plastic": (fv(-1), None),
  },
}

# ---- sensors (compiled by jaxmj/mjcf/compile/sensor.py) ----
_SENSOR_COMMON = {
  "name": (S, None),
  "noise": (F, 0.0),
  "cutoff": (F, 0.0),
  "nsample": (I, 0),
  "interp": (kw("zoh", "linear", "cubic"), "zoh"),
  "interval": (fv(-1), (0.0, 0.0)),
  "delay": (F, 0.0),
  "user": (fv(-1), ()),
}
_FRAME_OBJ = kw("body", "xbody", "geom", "site", "camera")
_SENSOR_OBJECTS = {
  "site": ("touch", "accelerometer", "velocimeter", "gyro", "force", "torque", "magnetometer"),
  "joint": ("jointpos", "jointvel", "jointactuatorfrc", "ballquat", "ballangvel",
            "jointlimitpos", "jointlimitvel", "jointlimitfrc"),
  "tendon": ("tendonpos", "tendonvel", "tendonactuatorfrc", "tendonlimitpos",
             "tendonlimitvel", "tendonlimitfrc"),
  "actuator": ("actuatorpos", "actuatorvel", "actuatorfrc"),
  "body": ("subtreecom", "subtreelinvel", "subtreeangmom"),
}
_FRAME_SENSORS = ("framepos", "framequat", "framexaxis", "frameyaxis", "framezaxis",
                  "framelinvel", "frameangvel", "framelinacc", "frameangacc")
SENSORS = (
  tuple(t for tags in _SENSOR_OBJECTS.values() for t in tags) + _FRAME_SENSORS
  + ("rangefinder", "camprojection", "insidesite", "distance", "normal", "fromto", "contact",
     "e_potential", "e_kinetic", "clock")
)
for _attr, _tags in _SENSOR_OBJECTS.items():
  for _tag in _tags:
    ATTRS[_tag] = {**_SENSOR_COMMON, _attr: (S, None)}
for _tag in _FRAME_SENSORS:
  ATTRS[_tag] = {**_SENSOR_COMMON, "objtype": (_FRAME_OBJ, None), "objname": (S, None),
                 "reftype": (_FRAME_OBJ, None), "refname": (S, None)}
ATTRS["rangefinder"] = {**_SENSOR_COMMON, "site": (S, None), "camera": (S, None),
                        "data": (S, "dist")}
ATTRS["camprojection"] = {**_SENSOR_COMMON, "site": (S, None), "camera": (S, None)}
ATTRS["insidesite"] = {**_SENSOR_COMMON, "objtype": (_FRAME_OBJ, None), "objname": (S, None),
                       "site": (S, None), "enclosed": (B, False)}
for _tag in ("distance", "normal", "fromto"):
  ATTRS[_tag] = {**_SENSOR_COMMON, **{k: (S, None) for k in ("geom1", "geom2", "body1",
                                                                 "body2")}}
for _tag in ("e_potential", "e_kinetic", "clock"):
  ATTRS[_tag] = dict(_SENSOR_COMMON)
ATTRS["sensor"] = {}
# <contact> is both the top-level pair/exclude section (no attributes: the sensor compiler
# rejects any written there) and the contact sensor, whose attributes these are.
ATTRS["contact"] = {
  **_SENSOR_COMMON,
  **{k: (S, None) for k in ("geom1", "geom2", "body1", "body2", "subtree1", "subtree2",
                            "site")},
  "num": (I, 1), "data": (S, "found"),
  "reduce": (kw("none", "mindist", "maxforce", "netforce"), "none"),
}

# ---- equality constraints (compiled by jaxmj/mjcf/compile/equality.py) ----
# <equality> in <default> sets the attributes common to every type. Its children <joint>
# and <tendon> are scoped tags (SCOPED) so they do not clash with the body joint / tendons.
_EQ_COMMON = {"name": (S, None), "class": (S, None), "active": (B, True), "solref": SOLREF,
              "solimp": SOLIMP}
ATTRS["equality"] = {k: _EQ_COMMON[k] for k in ("active", "solref", "solimp")}
ATTRS["connect"] = {**_EQ_COMMON, "body1": (S, None), "body2": (S, None),
                    "anchor": (fv(3), None), "site1": (S, None), "site2": (S, None)}
ATTRS["weld"] = {**ATTRS["connect"], "relpose": (fv(7), (0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0)),
                 "torquescale": (F, 1.0)}
ATTRS["equality/joint"] = {**_EQ_COMMON, "joint1": (S, None), "joint2": (S, None),
                           "polycoef": (fv(5), (0.0, 1.0, 0.0, 0.0, 0.0))}
ATTRS["equality/tendon"] = {**_EQ_COMMON, "tendon1": (S, None), "tendon2": (S, None),
                            "polycoef": (fv(5), (0.0, 1.0, 0.0, 0.0, 0.0))}
# Geom fluid attributes: fluidshape="ellipsoid" gives the geom's body the ellipsoid fluid
# model (coefficients compiled in jaxmj/mjcf/compile/fluid.py); "none" keeps the inertia-box model.
ATTRS["geom"].update(fluidshape=(kw("none", "ellipsoid"), "none"),
                     fluidcoef=(fv(-1), (0.5, 0.25, 1.5, 1.0, 1.0)))

# Variable-length attributes (count -1 above) that MuJoCo caps: more values is an error.
# Keyed by attribute name, or by (element, attribute) where an element differs.
# Fewer values than the default's replace its leading ones (parse.overlay), as MuJoCo reads
# them (its schema's arities [1..n]: e.g. solref="0.005" keeps the damping ratio).
MAX_VALUES = {"size": 3, "friction": 3, "solimp": 5, "solimplimit": 5, "solimpfriction": 5,
              "o_solimp": 5, "surfacevel": 6, ("pair", "friction"): 5,
              "interval": 2, "springlength": 2, "stiffness": 3, "damping": 3,
              "solref": 2, "solreflimit": 2, "solreffriction": 2, "o_solref": 2,
              "o_friction": 5, "fluidcoef": 5}


def max_values(tag: str, name: str) -> int | None:
  return MAX_VALUES.get((tag, name), MAX_VALUES.get(name))


# Element -> children it may hold (within the supported subset).
CHILDREN: dict[str, tuple[str, ...]] = {
  "mujoco": ("include", "compiler", "option", "size", "default", "worldbody", "contact",
             "keyframe", "sensor", "tendon"),
  "sensor": SENSORS,
  "option": ("flag",),
  "default": ("default", "joint", "geom", "site", "pair", "tendon"),
  "worldbody": ("body", "frame", "geom", "site"),
  "body": ("body", "frame", "inertial", "joint", "freejoint", "geom", "site"),
  "frame": ("body", "frame", "geom", "site"),
  "contact": ("pair", "exclude"),
  "keyframe": ("key",),
  "tendon": ("spatial", "fixed"),
  "spatial": ("spatial/site", "spatial/geom", "pulley"),
  "fixed": ("fixed/joint",),
}

# (parent tag, tag) -> scoped tag, for elements whose meaning depends on their parent; the
# parser stores the scoped tag (errors still name the element as written).
SCOPED: dict[tuple[str, str], str] = {}
SCOPED.update({("spatial", "site"): "spatial/site", ("spatial", "geom"): "spatial/geom",
               ("fixed", "joint"): "fixed/joint"})  # tendon paths

# Children that may appear at most once in their parent.
UNIQUE: dict[str, tuple[str, ...]] = {
  "option": ("flag",),
  "default": ("joint", "geom", "site", "pair", "tendon"),
  "body": ("inertial",),
}

# Elements that may appear inside <default> and so take class defaults.
DEFAULTABLE = ("joint", "geom", "site", "pair", "tendon")

# Attributes an element may not take inside <default>, besides name and class.
NOT_IN_DEFAULT = {"pair": ("geom1", "geom2")}

# MuJoCo elements that are valid MJCF but not supported by jaxmj yet: the error says so.
UNSUPPORTED = {
  "asset": "assets (meshes, heightfields, textures, materials)",
  "mesh": "meshes", "hfield": "heightfields", "texture": "textures", "material": "materials",
  "skin": "skins", "model": "model assets",
  "tactile": "tactile sensors", "user": "user sensors",
  "custom": "custom numeric/text/tuple data", "extension": "plugins", "plugin": "plugins",
  "deformable": "deformable objects (flex)", "flex": "flex objects", "flexcomp": "flex objects",
  "composite": "composite objects, which MuJoCo 4.0 no longer reads either",
  "replicate": "replicate", "attach": "model attachment",
  "statistic": "<statistic>", "tuple": "tuples", "numeric": "numeric data", "text": "text data",
}

# ---- equality constraints: where they may appear ----
SCOPED.update({("equality", t): f"equality/{t}"
               for t in ("joint", "tendon", "flex", "flexvert", "flexstrain")})
CHILDREN["mujoco"] += ("equality",)
CHILDREN["equality"] = ("connect", "weld", "equality/joint", "equality/tendon")
CHILDREN["default"] += ("equality",)
UNIQUE["default"] += ("equality",)
DEFAULTABLE += ("equality",)
UNSUPPORTED.update({f"equality/{t}": f"<equality><{t}> (flex equality constraints)"
                    for t in ("flex", "flexvert", "flexstrain")})

# ---- actuators (compiled by jaxmj/mjcf/compile/actuator.py) ----
# Defaults here are MuJoCo's values for <general>; actuator.py applies each shortcut's own
# expansion and the default-class cascade, so only the attribute names and types matter
# for the shortcuts.
_ACT_TARGETS = ("joint", "jointinparent", "tendon", "cranksite", "slidersite", "site",
                "refsite", "body")
_ACT_COMMON = {
  "name": (S, None), "class": (S, None), "group": (I, 0),
  "ctrllimited": (LIMITED, "auto"), "forcelimited": (LIMITED, "auto"),
  "ctrlrange": (fv(2), (0.0, 0.0)), "forcerange": (fv(2), (0.0, 0.0)),
  "lengthrange": (fv(2), (0.0, 0.0)), "gear": (fv(-1), (1.0, 0.0, 0.0, 0.0, 0.0, 0.0)),
  "cranklength": (F, 0.0), "user": (fv(-1), ()), "damping": (fv(-1), (0.0, 0.0, 0.0)),
  "armature": (F, 0.0), "delay": (F, 0.0), "nsample": (I, 0),
  "interp": (kw("zoh", "linear", "cubic"), "zoh"),
  **{t: (S, None) for t in _ACT_TARGETS},
}
_ACT_STATE = {"actlimited": (LIMITED, "auto"), "actrange": (fv(2), (0.0, 0.0))}
ACTUATORS = ("general", "motor", "position", "velocity", "intvelocity", "damper", "cylinder",
             "muscle", "adhesion")
ATTRS["general"] = {
  **_ACT_COMMON, **_ACT_STATE, "actdim": (I, -1), "actearly": (B, False),
  "dyntype": (kw("none", "integrator", "filter", "filterexact", "muscle", "user", "pid",
                 "dcmotor"), "none"),
  "gaintype": (kw("fixed", "affine", "muscle", "user", "dcmotor", "pid", "so3"), "fixed"),
  "biastype": (kw("none", "affine", "muscle", "user", "dcmotor", "so3"), "none"),
  "dynprm": (fv(-1), (1.0,) + (0.0,) * 9), "gainprm": (fv(-1), (1.0,) + (0.0,) * 9),
  "biasprm": (fv(-1), (0.0,) * 10), "inheritrange": (F, 0.0), "input": (S, None),
  "velrange": (fv(2), (0.0, 0.0)), "ffrange": (fv(2), (0.0, 0.0)),
}
ATTRS["motor"] = dict(_ACT_COMMON)
ATTRS["position"] = {**_ACT_COMMON, "kp": (F, 1.0), "kv": (F, 0.0), "dampratio": (F, 0.0),
                     "timeconst": (F, 0.0), "inheritrange": (F, 0.0)}
ATTRS["velocity"] = {**_ACT_COMMON, "kv": (F, 1.0)}
ATTRS["intvelocity"] = {**_ACT_COMMON, **_ACT_STATE, "kp": (F, 1.0), "kv": (F, 0.0),
                        "dampratio": (F, 0.0), "inheritrange": (F, 0.0)}
ATTRS["damper"] = {**_ACT_COMMON, "kv": (F, 1.0)}
ATTRS["cylinder"] = {**_ACT_COMMON, "timeconst": (F, 1.0), "area": (F, 1.0),
                     "diameter": (F, None), "bias": (fv(3), (0.0, 0.0, 0.0))}
ATTRS["muscle"] = {**_ACT_COMMON, "timeconst": (fv(2), (0.01, 0.04)), "tausmooth": (F, 0.0),
                   "range": (fv(2), (0.75, 1.05)), "force": (F, -1.0), "scale": (F, 200.0),
                   "lmin": (F, 0.5), "lmax": (F, 1.6), "vmax": (F, 1.5), "fpmax": (F, 1.3),
                   "fvmax": (F, 1.2)}
ATTRS["adhesion"] = {k: _ACT_COMMON[k] for k in ("name", "class", "group", "forcelimited",
                                                 "ctrlrange", "forcerange", "user", "body",
                                                 "delay", "nsample", "interp")}
ATTRS["adhesion"]["gain"] = (F, 1.0)
ATTRS["actuator"] = {}
# <compiler><lengthrange>: how the compiler finds muscle length ranges.
ATTRS["lengthrange"] = {
  "mode": (kw("none", "muscle", "muscleuser", "all"), "muscle"),
  "useexisting": (B, True), "uselimit": (B, False), "accel": (F, 20.0), "maxforce": (F, 0.0),
  "timeconst": (F, 1.0), "timestep": (F, 0.01), "inttotal": (F, 10.0), "interval": (F, 2.0),
  "tolrange": (F, 0.05),
}
CHILDREN["mujoco"] += ("actuator",)
CHILDREN["actuator"] = ACTUATORS
CHILDREN["default"] += ACTUATORS
CHILDREN["compiler"] = CHILDREN.get("compiler", ()) + ("lengthrange",)
UNIQUE["compiler"] = UNIQUE.get("compiler", ()) + ("lengthrange",)
MAX_VALUES.update({"gear": 6, "dynprm": 10, "gainprm": 10, "biasprm": 10})
NOT_IN_DEFAULT["muscle"] = ("tausmooth",)  # MuJoCo's schema: not in a default class
# <pid> and <dcmotor> (expanded by jaxmj/mjcf/compile/motor.py); <input> is a set of keywords
ACTUATORS += ("pid", "dcmotor")
ATTRS["pid"] = {**_ACT_COMMON, "kp": (F, 1.0), "kv": (F, None), "dampratio": (F, None),
                "ki": (F, 0.0), "imax": (F, 0.0), "slewmax": (F, 0.0), "inheritrange": (F, 0.0),
                "input": (S, None), "posrange": (fv(2), None), "velrange": (fv(2), None),
                "ffrange": (fv(2), None)}
ATTRS["dcmotor"] = {k: v for k, v in _ACT_COMMON.items() if k not in ("forcelimited",
                                                                     "forcerange")}
ATTRS["dcmotor"].update({"motorconst": (fv(-1), None), "resistance": (F, None),
                         "nominal": (fv(-1), None), "saturation": (fv(-1), None),
                         "inductance": (fv(-1), None), "cogging": (fv(-1), None),
                         "controller": (fv(-1), None), "thermal": (fv(-1), None),
                         "lugre": (fv(-1), None), "input": (S, None)})
MAX_VALUES.update({"motorconst": 2, "nominal": 3, "saturation": 3, "inductance": 2,
                   "cogging": 3, "controller": 6, "thermal": 6, "lugre": 5})
CHILDREN["actuator"] = ACTUATORS
CHILDREN["default"] += ("pid", "dcmotor")
# <orientation>: SO3 servo on a ball joint, 3 controls and 3 outputs (mjcf/compile/orientation.py)
ACTUATORS += ("orientation",)
ATTRS["orientation"] = {k: _ACT_COMMON[k] for k in ("name", "class", "group", "forcelimited",
                                                    "ctrlrange", "forcerange", "user", "joint",
                                                    "delay", "nsample", "interp", "site",
                                                    "refsite")}
ATTRS["orientation"].update({"kp": (F, 1.0), "kv": (F, 0.0), "dampratio": (F, 0.0),
                             "input": (S, None)})
CHILDREN["actuator"] = ACTUATORS
CHILDREN["default"] += ("orientation",)
UNIQUE["default"] += ACTUATORS  # MuJoCo: "unique element 'motor' found 2 times"

# ---- assets: meshes and heightfields (compiled by jaxmj/mjcf/assets/asset.py) ----
ATTRS["compiler"].update({
  "meshdir": (S, None), "texturedir": (S, None), "assetdir": (S, None),
  "strippath": (B, False), "fitaabb": (B, False),
})
ATTRS["geom"].update({"mesh": (S, None), "hfield": (S, None), "fitscale": (F, 1.0)})
ATTRS["asset"] = {}
ATTRS["mesh"] = {
  "name": (S, None), "class": (S, None), "content_type": (S, None), "file": (S, None),
  "scale": (fv(3), (1.0, 1.0, 1.0)),
  "inertia": (kw("convex", "exact", "legacy", "shell"), "legacy"),
  "smoothnormal": (B, False), "maxhullvert": (I, -1),
  "vertex": (fv(-1), None), "normal": (fv(-1), None), "texcoord": (fv(-1), None),
  "face": (iv(-1), None), "refpos": (fv(3), (0.0, 0.0, 0.0)),
  "refquat": (fv(4), (1.0, 0.0, 0.0, 0.0)), "builtin": (S, None), "params": (fv(-1), None),
  "material": (S, None),
}
ATTRS["hfield"] = {
  "name": (S, None), "content_type": (S, None), "file": (S, None), "nrow": (I, 0),
  "ncol": (I, 0), "elevation": (fv(-1), None), "size": (fv(4), None),
}
# Textures and materials (jaxmj/mjcf/assets/texture.py): kept for renderers, no physics effect.
ATTRS["geom"]["material"] = (S, None)
ATTRS["site"]["material"] = (S, None)
ATTRS["texture"] = {
  "name": (S, None), "class": (S, None), "embed": (B, True),
  "type": (kw("2d", "cube", "skybox"), "cube"),
  "colorspace": (kw("auto", "linear", "sRGB"), "auto"), "content_type": (S, None),
  "file": (S, None), "gridsize": (iv(2), (1, 1)), "gridlayout": (S, "............"),
  **{"file" + f: (S, None) for f in ("right", "left", "up", "down", "front", "back")},
  "builtin": (kw("none", "gradient", "checker", "flat"), "none"),
  "rgb1": (fv(3), (0.8, 0.8, 0.8)), "rgb2": (fv(3), (0.5, 0.5, 0.5)),
  "mark": (kw("none", "edge", "cross", "random"), "none"), "markrgb": (fv(3), (0.0, 0.0, 0.0)),
  "random": (F, 0.01), "width": (I, 0), "height": (I, 0), "hflip": (B, False),
  "vflip": (B, False), "nchannel": (I, 3),
}
ATTRS["material"] = {
  "name": (S, None), "class": (S, None), "texture": (S, None), "texrepeat": (fv(2), (1.0, 1.0)),
  "texuniform": (B, False), "emission": (F, 0.0), "specular": (F, 0.5), "shininess": (F, 0.5),
  "reflectance": (F, 0.0), "metallic": (F, -1.0), "roughness": (F, -1.0),
  "rgba": (fv(4), (1.0, 1.0, 1.0, 1.0)),
}
ATTRS["layer"] = {"texture": (S, None), "role": (kw(*("user", "rgb", "occlusion", "roughness",
                                                        "metallic", "normal", "opacity",
                                                        "emissive", "rgba", "orm")), "rgb")}
CHILDREN["material"] = ("layer",)
# Skins (jaxmj/mjcf/skin.py): meshes whose vertices follow bodies; visual only.
ATTRS["skin"] = {
  "name": (S, None), "file": (S, None), "material": (S, None),
  "rgba": (fv(4), (0.5, 0.5, 0.5, 1.0)), "inflate": (F, 0.0), "vertex": (fv(-1), None),
  "texcoord": (fv(-1), None), "face": (iv(-1), None), "group": (I, 0),
}
ATTRS["bone"] = {"body": (S, None), "bindpos": (fv(3), None), "bindquat": (fv(4), None),
                 "vertid": (iv(-1), None), "vertweight": (fv(-1), None)}
CHILDREN["skin"] = ("bone",)
CHILDREN["mujoco"] += ("asset",)
CHILDREN["asset"] = ("mesh", "hfield", "skin", "texture", "material")
CHILDREN["default"] += ("mesh", "material")
UNIQUE["default"] += ("mesh", "material")
DEFAULTABLE += ("mesh", "material")
NOT_IN_DEFAULT["mesh"] = ("file", "content_type", "vertex", "normal", "texcoord", "face")
CHILDREN["default"] += ("texture",)  # MuJoCo 4.0: textures take class defaults too
UNIQUE["default"] += ("texture",)
DEFAULTABLE += ("texture",)
NOT_IN_DEFAULT["texture"] = ("file", "content_type") + tuple(
  "file" + f for f in ("right", "left", "up", "down", "front", "back"))
for _tag in ("asset", "mesh", "hfield", "skin", "texture", "material"):
  UNSUPPORTED.pop(_tag, None)

# ---- cameras and lights (compiled by jaxmj/mjcf/compile/camlight.py; visual only) ----
_CAMLIGHT_MODE = kw("fixed", "track", "trackcom", "targetbody", "targetbodycom")
ATTRS["camera"] = {
  "name": (S, None), "class": (S, None), "mode": (_CAMLIGHT_MODE, "fixed"), "target": (S, None),
  "pos": (fv(3), (0.0, 0.0, 0.0)), **ORIENT,
  "projection": (kw("perspective", "orthographic"), "perspective"), "fovy": (F, None),
  "ipd": (F, 0.068), "resolution": (iv(2), (1, 1)), "output": (S, "rgb"),
  "focal": (fv(2), (0.0, 0.0)), "focalpixel": (fv(2), (0.0, 0.0)),
  "principal": (fv(2), (0.0, 0.0)), "principalpixel": (fv(2), (0.0, 0.0)),
  "sensorsize": (fv(2), (0.0, 0.0)), "user": (fv(-1), ()),
}
ATTRS["light"] = {
  "name": (S, None), "class": (S, None), "mode": (_CAMLIGHT_MODE, "fixed"), "target": (S, None),
  "directional": (B, False), "type": (kw("spot", "directional", "point", "image"), "spot"),
  "castshadow": (B, True), "active": (B, True), "pos": (fv(3), (0.0, 0.0, 0.0)),
  "dir": (fv(3), (0.0, 0.0, -1.0)), "bulbradius": (F, 0.02), "softness": (F, 0.2),
  "intensity": (F, 0.0), "range": (F, 10.0), "attenuation": (fv(3), (1.0, 0.0, 0.0)),
  "cutoff": (F, 45.0), "exponent": (F, 10.0), "ambient": (fv(3), (0.0, 0.0, 0.0)),
  "diffuse": (fv(3), (0.7, 0.7, 0.7)), "specular": (fv(3), (0.3, 0.3, 0.3)),
  "texture": (S, None),
}
for _tag in ("worldbody", "body", "frame"):
  CHILDREN[_tag] += ("camera", "light")
# The <inertial> of a URDF link named "world" (MuJoCo's URDF reader gives it to the world
# body; an MJCF <worldbody> cannot hold one): only mjcf/urdf.py makes this scoped tag.
CHILDREN["worldbody"] += ("worldbody/inertial",)
ATTRS["worldbody/inertial"] = ATTRS["inertial"]
CHILDREN["default"] += ("camera", "light")
UNIQUE["default"] += ("camera", "light")
DEFAULTABLE += ("camera", "light")

# ---- <visual> and <statistic> (compiled by jaxmj/mjcf/compile/visual.py; no physics effect) ----
from jaxmj import visual as _visual  # noqa: E402 - the visual spec is shared with the Model

ATTRS["visual"] = {}
CHILDREN["mujoco"] += ("visual", "statistic")
CHILDREN["visual"] = tuple(f"visual/{s}" for s in _visual.SPEC)
UNIQUE["visual"] = CHILDREN["visual"]
_VIS_KIND = {"int": I, "bool": B, "float": F}
for _sec, _spec in _visual.SPEC.items():
  SCOPED[("visual", _sec)] = f"visual/{_sec}"
  ATTRS[f"visual/{_sec}"] = {
    k: ((fv(kind), dv) if isinstance(kind, int) else
        (_VIS_KIND[kind], bool(dv) if kind == "bool" else dv))
    for k, (kind, dv) in _spec.items()}
ATTRS["statistic"] = {"meaninertia": (F, None), "meanmass": (F, None), "meansize": (F, None),
                      "extent": (F, None), "center": (fv(3), None)}
UNSUPPORTED.pop("statistic", None)

# ---- <custom> numeric, text and tuple data (compiled by jaxmj/mjcf/compile/custom.py) ----
ATTRS["custom"] = {}
ATTRS["numeric"] = {"name": (S, None), "size": (I, -1), "data": (fv(-1), None)}
ATTRS["text"] = {"name": (S, None), "data": (S, None)}
ATTRS["tuple"] = {"name": (S, None)}
ATTRS["tuple/element"] = {
  "objtype": (kw("body", "xbody", "joint", "dof", "geom", "site", "camera", "light", "flex",
                 "mesh", "skin", "hfield", "texture", "material", "pair", "exclude",
                 "equality", "tendon", "actuator", "sensor", "numeric", "text", "tuple", "key",
                 "plugin"), None),
  "objname": (S, None), "prm": (F, 0.0)}
SCOPED[("tuple", "element")] = "tuple/element"
CHILDREN["mujoco"] += ("custom",)
CHILDREN["custom"] = ("numeric", "text", "tuple")
CHILDREN["tuple"] = ("tuple/element",)
for _tag in ("custom", "numeric", "text", "tuple"):
  UNSUPPORTED.pop(_tag, None)

# ---- more <compiler> options (jaxmj/mjcf/passes/fuse.py, discard.py, align.py) ----
ATTRS["compiler"].update({"fusestatic": (B, False), "discardvisual": (B, False),
                          "alignfree": (B, False), "usethread": (B, True),
                          # what MuJoCo's XML writer saves; the compiled model is the same
                          "saveinertial": (B, False), "savecompiled": (B, False),
                          "savecanonical": (B, False),
                          "conflict": (kw("error", "warning", "merge"), "warning"),
                          "passthrough": (S, "none")})

# ---- user data sizes and `user` attributes (compiled by jaxmj/mjcf/compile/user.py) ----
ATTRS["size"].update({f"nuser_{k}": (I, -1) for k in ("body", "jnt", "geom", "site", "cam",
                                                      "tendon", "actuator", "sensor")})
for _tag in ("body", "joint", "geom", "site"):
  ATTRS[_tag]["user"] = (fv(-1), None)

# ---- <replicate> (expanded into frames before compiling: jaxmj/mjcf/compile/replicate.py) ----
ATTRS["replicate"] = {"count": (I, None), "offset": (fv(3), (0.0, 0.0, 0.0)),
                      "euler": (fv(3), (0.0, 0.0, 0.0)), "sep": (S, ""),
                      "childclass": (S, None)}
for _tag in ("worldbody", "body", "frame"):
  CHILDREN[_tag] += ("replicate",)
CHILDREN["replicate"] = CHILDREN["frame"]
del UNSUPPORTED["replicate"]

# ---- <asset><model> and <attach> (expanded before compiling: jaxmj/mjcf/compile/attach.py) --
ATTRS["model"] = {"name": (S, None), "file": (S, None), "content_type": (S, None)}
CHILDREN["asset"] += ("model",)
ATTRS["attach"] = {"model": (S, None), "body": (S, None), "frame": (S, None),
                   "prefix": (S, None)}
for _tag in ("worldbody", "body", "frame", "replicate"):
  CHILDREN[_tag] += ("attach",)
del UNSUPPORTED["model"], UNSUPPORTED["attach"]

# Attribute name -> namespace of the element it names (None: any, e.g. a sensor's objname):
# PyMJCF's references (mjcf/compose) and what an <attach> copy renames (compile/attach.py).
REFERENCES = {
  "joint": "joint", "joint1": "joint", "joint2": "joint", "jointinparent": "joint",
  "tendon": "tendon", "tendon1": "tendon", "tendon2": "tendon",
  "site": "site", "refsite": "site", "site1": "site", "site2": "site", "sidesite": "site",
  "cranksite": "site", "slidersite": "site",
  "body": "body", "body1": "body", "body2": "body", "target": "body",
  "geom": "geom", "geom1": "geom", "geom2": "geom",
  "subtree1": "body", "subtree2": "body", "camera": "camera",
  "actuator": "actuator", "mesh": "mesh", "hfield": "hfield", "material": "material",
  "texture": "texture", "skin": "skin", "objname": None, "refname": None,
}
