"""MuJoCo's enums (mjtJoint, mjtGeom, mjtDisableBit, ...) and the sizes that go with them.

The values are MuJoCo's, so a field holding one compares equal to mjModel's.
"""

from __future__ import annotations

import enum


class JointType(enum.IntEnum):
  """mjtJoint; `dof` and `qpos` widths in JOINT_NV / JOINT_NQ."""

  FREE = 0
  BALL = 1
  SLIDE = 2
  HINGE = 3


JOINT_NQ = {JointType.FREE: 7, JointType.BALL: 4, JointType.SLIDE: 1, JointType.HINGE: 1}
JOINT_NV = {JointType.FREE: 6, JointType.BALL: 3, JointType.SLIDE: 1, JointType.HINGE: 1}


class GeomType(enum.IntEnum):
  """mjtGeom."""

  PLANE = 0
  HFIELD = 1
  SPHERE = 2
  CAPSULE = 3
  ELLIPSOID = 4
  CYLINDER = 5
  BOX = 6
  MESH = 7
  SDF = 8


class Integrator(enum.IntEnum):
  """mjtIntegrator."""

  EULER = 0
  RK4 = 1
  IMPLICIT = 2
  IMPLICITFAST = 3


class Cone(enum.IntEnum):
  """mjtCone."""

  PYRAMIDAL = 0
  ELLIPTIC = 1


class Solver(enum.IntEnum):
  """mjtSolver."""

  PGS = 0
  CG = 1
  NEWTON = 2


class Jacobian(enum.IntEnum):
  """mjtJacobian."""

  DENSE = 0
  SPARSE = 1
  AUTO = 2


class DisableBit(enum.IntFlag):
  """mjtDisableBit: bits of `Option.disableflags`."""

  CONSTRAINT = 1 << 0
  EQUALITY = 1 << 1
  FRICTIONLOSS = 1 << 2
  LIMIT = 1 << 3
  CONTACT = 1 << 4
  SPRING = 1 << 5
  DAMPER = 1 << 6
  GRAVITY = 1 << 7
  CLAMPCTRL = 1 << 8
  WARMSTART = 1 << 9
  FILTERPARENT = 1 << 10
  ACTUATION = 1 << 11
  REFSAFE = 1 << 12
  SENSOR = 1 << 13
  MIDPHASE = 1 << 14
  EULERDAMP = 1 << 15
  AUTORESET = 1 << 16
  NATIVECCD = 1 << 17
  ISLAND = 1 << 18
  MULTICCD = 1 << 19


class EnableBit(enum.IntFlag):
  """mjtEnableBit: bits of `Option.enableflags`."""

  OVERRIDE = 1 << 0
  ENERGY = 1 << 1
  FWDINV = 1 << 2
  INVDISCRETE = 1 << 3
  SLEEP = 1 << 4
  DIAGEXACT = 1 << 5
  IPC = 1 << 6
  SPECULATIVE = 1 << 7


class Warning(enum.IntEnum):  # noqa: A001 - MuJoCo's name for the enum
  """mjtWarning: indices into `Data.warning`."""

  INERTIA = 0
  CONTACTFULL = 1
  CNSTRFULL = 2
  BADQPOS = 3
  BADQVEL = 4
  BADQACC = 5
  BADCTRL = 6


NWARNING = len(Warning)


class ConstraintType(enum.IntEnum):
  """mjtConstraint: the kind of each efc row."""

  EQUALITY = 0
  FRICTION_DOF = 1
  FRICTION_TENDON = 2
  LIMIT_JOINT = 3
  LIMIT_TENDON = 4
  CONTACT_FRICTIONLESS = 5
  CONTACT_PYRAMIDAL = 6
  CONTACT_ELLIPTIC = 7


class EqType(enum.IntEnum):
  """mjtEq: equality constraint types (jaxmj compiles CONNECT, WELD, JOINT, TENDON)."""

  CONNECT = 0
  WELD = 1
  JOINT = 2
  TENDON = 3
  FLEX = 4
  FLEXVERT = 5
  FLEXSTRAIN = 6
  DISTANCE = 7


NEQDATA = 12  # mjNEQDATA: width of Model.eq_data


class ConstraintState(enum.IntEnum):
  """mjtConstraintState: the solver's verdict on each efc row."""

  SATISFIED = 0
  QUADRATIC = 1
  LINEARNEG = 2
  LINEARPOS = 3
  CONE = 4


class ObjType(enum.IntEnum):
  """mjtObj, for `name2id` / `id2name`."""

  UNKNOWN = 0
  BODY = 1
  XBODY = 2
  JOINT = 3
  DOF = 4
  GEOM = 5
  SITE = 6
  CAMERA = 7
  LIGHT = 8
  FLEX = 9
  MESH = 10
  SKIN = 11
  HFIELD = 12
  TEXTURE = 13
  MATERIAL = 14
  PAIR = 15
  EXCLUDE = 16
  EQUALITY = 17
  TENDON = 18
  ACTUATOR = 19
  SENSOR = 20
  NUMERIC = 21
  TEXT = 22
  TUPLE = 23
  KEY = 24
  PLUGIN = 25


class SensorType(enum.IntEnum):
  """mjtSensor."""

  TOUCH = 0
  ACCELEROMETER = 1
  VELOCIMETER = 2
  GYRO = 3
  FORCE = 4
  TORQUE = 5
  MAGNETOMETER = 6
  RANGEFINDER = 7
  CAMPROJECTION = 8
  JOINTPOS = 9
  JOINTVEL = 10
  TENDONPOS = 11
  TENDONVEL = 12
  ACTUATORPOS = 13
  ACTUATORVEL = 14
  ACTUATORFRC = 15
  JOINTACTFRC = 16
  TENDONACTFRC = 17
  BALLQUAT = 18
  BALLANGVEL = 19
  JOINTLIMITPOS = 20
  JOINTLIMITVEL = 21
  JOINTLIMITFRC = 22
  TENDONLIMITPOS = 23
  TENDONLIMITVEL = 24
  TENDONLIMITFRC = 25
  FRAMEPOS = 26
  FRAMEQUAT = 27
  FRAMEXAXIS = 28
  FRAMEYAXIS = 29
  FRAMEZAXIS = 30
  FRAMELINVEL = 31
  FRAMEANGVEL = 32
  FRAMELINACC = 33
  FRAMEANGACC = 34
  SUBTREECOM = 35
  SUBTREELINVEL = 36
  SUBTREEANGMOM = 37
  INSIDESITE = 38
  GEOMDIST = 39
  GEOMNORMAL = 40
  GEOMFROMTO = 41
  CONTACT = 42
  E_POTENTIAL = 43
  E_KINETIC = 44
  CLOCK = 45
  TACTILE = 46
  PLUGIN = 47
  USER = 48


class Stage(enum.IntEnum):
  """mjtStage: the pipeline stage a sensor needs (`sensor_needstage`)."""

  NONE = 0
  POS = 1
  VEL = 2
  ACC = 3


class TrnType(enum.IntEnum):
  """mjtTrn: actuator transmission types."""

  JOINT = 0
  JOINTINPARENT = 1
  SLIDERCRANK = 2
  TENDON = 3
  SITE = 4
  BODY = 5
  SO3 = 6  # <orientation> servo on a ball joint or site/refsite: 3 outputs (orientation.py)


class DynType(enum.IntEnum):
  """mjtDyn: actuator activation dynamics."""

  NONE = 0
  INTEGRATOR = 1
  FILTER = 2
  FILTEREXACT = 3
  MUSCLE = 4
  DCMOTOR = 5  # DC motor states: slew, integral, temperature, bristle, current (actuation/motor.py)
  PID = 6  # PID controller states: slew, integral
  USER = 7


class GainType(enum.IntEnum):
  """mjtGain: actuator gain types."""

  FIXED = 0
  AFFINE = 1
  MUSCLE = 2
  DCMOTOR = 3  # K / R (stateless) or K (current state)
  SO3 = 4  # geodesic servo of <orientation> (jaxmj/actuation/orientation.py)
  PID = 5  # setpoint gains of <pid>: kp or kv on the input, ki on the integral
  USER = 6


class BiasType(enum.IntEnum):
  """mjtBias: actuator bias types."""

  NONE = 0
  AFFINE = 1
  MUSCLE = 2
  DCMOTOR = 3  # back-EMF; cogging and LuGre friction are added after the force clamp
  SO3 = 4
  USER = 5


class WrapType(enum.IntEnum):
  """mjtWrap: the kind of each object on a tendon path (Model.wrap_type)."""

  NONE = 0
  JOINT = 1  # fixed tendon term: coef * qpos
  PULLEY = 2  # starts a branch whose length is divided by the divisor
  SITE = 3
  SPHERE = 4
  CYLINDER = 5


class SameFrame(enum.IntEnum):
  """mjtSameFrame: how an object's frame relates to its body's."""

  NONE = 0
  BODY = 1
  INERTIA = 2
  BODYROT = 3
  INERTIAROT = 4
