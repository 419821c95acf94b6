"""Model, Data, Option and the enums, with mjModel/mjData names, meanings and shapes.

Static fields (numpy arrays, ints, enums: sizes, ids, addresses, types, flags) live in the
pytree's aux data and are known at trace time. Numeric parameters are `jax.Array` leaves, so
`vmap` (domain randomization) and `grad` (system identification) reach them. Frames: "global"
is the world frame; "com frame" means global orientation centred at the subtree centre of
mass of the body's kinematic tree root (MuJoCo's `c` quantities). Spatial vectors are
[angular(3), linear(3)] as in MuJoCo.
"""

from __future__ import annotations

import enum

import jax
import numpy as np

from jaxmj.pytree import pytree_dataclass, static


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


class SameFrame(enum.IntEnum):
  """mjtSameFrame: how an object's frame relates to its body's."""

  NONE = 0
  BODY = 1
  INERTIA = 2
  BODYROT = 3
  INERTIAROT = 4


@pytree_dataclass
class Option:
  """mjOption: physics options. Float options are leaves; integer and flag options static."""

  timestep: jax.Array  # ()  simulation step, s
  impratio: jax.Array  # ()  ratio of frictional to normal constraint impedance
  tolerance: jax.Array  # ()  main solver tolerance
  ls_tolerance: jax.Array  # ()  line-search tolerance
  noslip_tolerance: jax.Array  # ()
  ccd_tolerance: jax.Array  # ()
  sleep_tolerance: jax.Array  # ()
  gravity: jax.Array  # (3,)  global frame, m/s^2
  wind: jax.Array  # (3,)  global frame, m/s
  magnetic: jax.Array  # (3,)  global frame
  density: jax.Array  # ()  medium density
  viscosity: jax.Array  # ()  medium viscosity
  o_margin: jax.Array  # ()  contact override margin
  o_solref: jax.Array  # (2,)
  o_solimp: jax.Array  # (5,)
  o_friction: jax.Array  # (5,)
  integrator: Integrator = static()
  cone: Cone = static()
  jacobian: Jacobian = static()
  solver: Solver = static()
  iterations: int = static()
  ls_iterations: int = static()
  noslip_iterations: int = static()
  ccd_iterations: int = static()
  sdf_iterations: int = static()
  sdf_initpoints: int = static()
  disableflags: int = static()  # DisableBit bits
  enableflags: int = static()  # EnableBit bits
  disableactuator: int = static()  # actuator groups disabled, bitmask

  def disabled(self, bit: DisableBit) -> bool:
    """True if `bit` is set in `disableflags` (static, usable for trace-time branching)."""
    return bool(self.disableflags & bit)

  def enabled(self, bit: EnableBit) -> bool:
    """True if `bit` is set in `enableflags`."""
    return bool(self.enableflags & bit)


@pytree_dataclass
class Contact:
  """mjContact for a fixed number of contact slots `ncon` (static for a model).

  Every candidate geom pair owns a fixed number of slots, whether or not it touches now;
  `active` says which slots have constraint rows (dist < includemargin; MuJoCo 4.0 also
  lists contacts out to margin + gap without rows). Inactive slots carry
  finite placeholder values and produce no constraint force.
  """

  dist: jax.Array  # (ncon,)  signed distance, negative in penetration
  pos: jax.Array  # (ncon, 3)  global frame, midway between the surfaces
  frame: jax.Array  # (ncon, 3, 3)  rows: normal (from geom1 to geom2), tangent1, tangent2
  includemargin: jax.Array  # (ncon,)  the pair's margin: rows when dist < includemargin
  friction: jax.Array  # (ncon, 5)  tangent1, tangent2, spin, roll1, roll2
  solref: jax.Array  # (ncon, 2)
  solreffriction: jax.Array  # (ncon, 2)
  solimp: jax.Array  # (ncon, 5)
  active: jax.Array  # (ncon,) bool  jaxmj: the slot holds a contact at this state
  dim: np.ndarray = static()  # (ncon,) int32  condim
  geom1: np.ndarray = static()  # (ncon,) int32
  geom2: np.ndarray = static()  # (ncon,) int32
  efc_address: np.ndarray = static()  # (ncon,) int32  first efc row of the contact


@pytree_dataclass
class Model:
  """mjModel: the compiled model. Build with `Model.from_xml_path` / `from_xml_string`.

  Per-object arrays are indexed by object id: body 0 is the world. Orientations are unit
  quaternions (w, x, y, z) relative to the parent body frame unless stated.
  """

  # ---- sizes (static) ----
  nq: int = static()  # generalized coordinates
  nv: int = static()  # degrees of freedom
  nu: int = static()  # actuators / controls
  na: int = static()  # activation states
  nbody: int = static()
  njnt: int = static()
  ngeom: int = static()
  nsite: int = static()
  nmocap: int = static()
  nkey: int = static()
  ntree: int = static()  # kinematic trees under the world
  nuserdata: int = static()

  # ---- options ----
  opt: Option

  # ---- bodies ----
  body_parentid: np.ndarray = static()  # (nbody,) int32
  body_rootid: np.ndarray = static()  # (nbody,) int32  top-level ancestor under the world
  body_weldid: np.ndarray = static()  # (nbody,) int32  nearest ancestor (or self) with dofs
  body_mocapid: np.ndarray = static()  # (nbody,) int32  -1 if not mocap
  body_jntnum: np.ndarray = static()  # (nbody,) int32
  body_jntadr: np.ndarray = static()  # (nbody,) int32  -1 if none
  body_dofnum: np.ndarray = static()  # (nbody,) int32
  body_dofadr: np.ndarray = static()  # (nbody,) int32  -1 if none
  body_treeid: np.ndarray = static()  # (nbody,) int32  -1 for static bodies
  body_geomnum: np.ndarray = static()  # (nbody,) int32
  body_geomadr: np.ndarray = static()  # (nbody,) int32  -1 if none
  body_simple: np.ndarray = static()  # (nbody,) uint8  diagonal-mass body
  body_sameframe: np.ndarray = static()  # (nbody,) uint8  SameFrame of inertial vs body
  body_contype: np.ndarray = static()  # (nbody,) int32  OR of the body's geom_contype
  body_conaffinity: np.ndarray = static()  # (nbody,) int32  OR of geom_conaffinity
  body_bvhadr: np.ndarray = static()  # (nbody,) int32
  body_bvhnum: np.ndarray = static()  # (nbody,) int32
  body_pos: jax.Array  # (nbody, 3)  frame position in parent frame
  body_quat: jax.Array  # (nbody, 4)  frame orientation in parent frame
  body_ipos: jax.Array  # (nbody, 3)  centre of mass in body frame
  body_iquat: jax.Array  # (nbody, 4)  principal inertia axes in body frame
  body_mass: jax.Array  # (nbody,)
  body_subtreemass: jax.Array  # (nbody,)  mass of the subtree rooted here
  body_inertia: jax.Array  # (nbody, 3)  principal moments, about ipos
  body_invweight0: jax.Array  # (nbody, 2)  mean inverse inertia at qpos0 (trn, rot)
  body_gravcomp: jax.Array  # (nbody,)  fraction of gravity compensated
  body_margin: jax.Array  # (nbody,)  max geom margin of the body

  # ---- joints ----
  jnt_type: np.ndarray = static()  # (njnt,) int32 JointType
  jnt_qposadr: np.ndarray = static()  # (njnt,) int32
  jnt_dofadr: np.ndarray = static()  # (njnt,) int32
  jnt_bodyid: np.ndarray = static()  # (njnt,) int32
  jnt_group: np.ndarray = static()  # (njnt,) int32
  jnt_limited: np.ndarray = static()  # (njnt,) bool
  jnt_actfrclimited: np.ndarray = static()  # (njnt,) bool
  jnt_actgravcomp: np.ndarray = static()  # (njnt,) bool
  jnt_solref: jax.Array  # (njnt, 2)  limit constraint solref
  jnt_solimp: jax.Array  # (njnt, 5)  limit constraint solimp
  jnt_pos: jax.Array  # (njnt, 3)  anchor in body frame
  jnt_axis: jax.Array  # (njnt, 3)  axis in body frame (unit)
  jnt_stiffness: jax.Array  # (njnt,)  spring stiffness
  jnt_range: jax.Array  # (njnt, 2)  limits, rad or m
  jnt_actfrcrange: jax.Array  # (njnt, 2)
  jnt_margin: jax.Array  # (njnt,)  limit activation margin

  # ---- dofs ----
  dof_bodyid: np.ndarray = static()  # (nv,) int32
  dof_jntid: np.ndarray = static()  # (nv,) int32
  dof_parentid: np.ndarray = static()  # (nv,) int32  -1 for a tree root dof
  dof_treeid: np.ndarray = static()  # (nv,) int32
  dof_Madr: np.ndarray = static()  # (nv,) int32  address of the diagonal in MuJoCo's sparse M
  dof_simplenum: np.ndarray = static()  # (nv,) int32
  dof_solref: jax.Array  # (nv, 2)  friction-loss solref
  dof_solimp: jax.Array  # (nv, 5)  friction-loss solimp
  dof_frictionloss: jax.Array  # (nv,)
  dof_armature: jax.Array  # (nv,)  added to the diagonal of qM
  dof_damping: jax.Array  # (nv,)  viscous damping
  dof_invweight0: jax.Array  # (nv,)  diag of inverse inertia at qpos0
  dof_M0: jax.Array  # (nv,)  diag of the CRB inertia at qpos0
  dof_length: jax.Array  # (nv,)  length scale: 1 (translation) or lever arm (rotation)

  # ---- geoms ----
  geom_type: np.ndarray = static()  # (ngeom,) int32 GeomType
  geom_contype: np.ndarray = static()  # (ngeom,) int32
  geom_conaffinity: np.ndarray = static()  # (ngeom,) int32
  geom_condim: np.ndarray = static()  # (ngeom,) int32
  geom_bodyid: np.ndarray = static()  # (ngeom,) int32
  geom_dataid: np.ndarray = static()  # (ngeom,) int32  mesh/hfield id, -1 if none
  geom_matid: np.ndarray = static()  # (ngeom,) int32
  geom_group: np.ndarray = static()  # (ngeom,) int32
  geom_priority: np.ndarray = static()  # (ngeom,) int32
  geom_sameframe: np.ndarray = static()  # (ngeom,) uint8 SameFrame
  geom_rgba: np.ndarray = static()  # (ngeom, 4) float32  visual only
  geom_solmix: jax.Array  # (ngeom,)
  geom_solref: jax.Array  # (ngeom, 2)
  geom_solimp: jax.Array  # (ngeom, 5)
  geom_size: jax.Array  # (ngeom, 3)  type-specific sizes
  geom_aabb: jax.Array  # (ngeom, 6)  local bounding box: centre(3), half-size(3)
  geom_rbound: jax.Array  # (ngeom,)  bounding-sphere radius, 0 for planes
  geom_pos: jax.Array  # (ngeom, 3)  in body frame
  geom_quat: jax.Array  # (ngeom, 4)  in body frame
  geom_friction: jax.Array  # (ngeom, 3)  slide, spin, roll
  geom_margin: jax.Array  # (ngeom,)
  geom_gap: jax.Array  # (ngeom,)

  # ---- sites ----
  site_type: np.ndarray = static()  # (nsite,) int32 GeomType
  site_bodyid: np.ndarray = static()  # (nsite,) int32
  site_group: np.ndarray = static()  # (nsite,) int32
  site_sameframe: np.ndarray = static()  # (nsite,) uint8 SameFrame
  site_rgba: np.ndarray = static()  # (nsite, 4) float32  visual only
  site_size: jax.Array  # (nsite, 3)
  site_pos: jax.Array  # (nsite, 3)  in body frame
  site_quat: jax.Array  # (nsite, 4)  in body frame

  # ---- explicit contact pairs and exclusions (<contact>) ----
  npair: int = static()
  nexclude: int = static()
  pair_dim: np.ndarray = static()  # (npair,) int32  condim
  pair_geom1: np.ndarray = static()  # (npair,) int32
  pair_geom2: np.ndarray = static()  # (npair,) int32
  pair_signature: np.ndarray = static()  # (npair,) int32  body1 << 16 + body2
  exclude_signature: np.ndarray = static()  # (nexclude,) int32  body1 << 16 + body2
  pair_solref: jax.Array  # (npair, 2)
  pair_solreffriction: jax.Array  # (npair, 2)
  pair_solimp: jax.Array  # (npair, 5)
  pair_margin: jax.Array  # (npair,)
  pair_gap: jax.Array  # (npair,)
  pair_friction: jax.Array  # (npair, 5)

  # ---- trees ----
  tree_bodyadr: np.ndarray = static()  # (ntree,) int32
  tree_bodynum: np.ndarray = static()  # (ntree,) int32
  tree_dofadr: np.ndarray = static()  # (ntree,) int32
  tree_dofnum: np.ndarray = static()  # (ntree,) int32

  # ---- generalized coordinates ----
  qpos0: jax.Array  # (nq,)  reference configuration
  qpos_spring: jax.Array  # (nq,)  spring rest configuration

  # ---- keyframes ----
  key_time: jax.Array  # (nkey,)
  key_qpos: jax.Array  # (nkey, nq)
  key_qvel: jax.Array  # (nkey, nv)
  key_act: jax.Array  # (nkey, na)
  key_ctrl: jax.Array  # (nkey, nu)
  key_mpos: jax.Array  # (nkey, nmocap, 3) flattened as (nkey, 3*nmocap)
  key_mquat: jax.Array  # (nkey, 4*nmocap)

  # ---- names (MuJoCo's layout: NUL-separated buffer and per-type addresses) ----
  names: bytes = static()
  name_bodyadr: np.ndarray = static()  # (nbody,) int32
  name_jntadr: np.ndarray = static()  # (njnt,) int32
  name_geomadr: np.ndarray = static()  # (ngeom,) int32
  name_siteadr: np.ndarray = static()  # (nsite,) int32
  name_keyadr: np.ndarray = static()  # (nkey,) int32

  # ---- jaxmj additions ----
  body_depth: np.ndarray = static()  # (nbody,) int32  tree depth, world = 0
  dof_depth: np.ndarray = static()  # (nv,) int32  depth in the dof tree, root dof = 0
  dof_ancestor: np.ndarray = static()  # (nv, nv) bool  [i, j]: j is i or an ancestor of i
  dof_hasfrictionloss: np.ndarray = static()  # (nv,) bool  compiled frictionloss > 0: the
  # dofs that own a friction-loss row (rows are fixed at compile time; edits to the leaf
  # dof_frictionloss change the force, not which rows exist)
  unsupported: tuple = static()  # ((feature, DisableBit mask that turns it off), ...)
  model_name: str = static()
  path: str = static()  # file the model was read from, "" for a string

  @classmethod
  def from_xml_path(cls, path, assets: dict[str, bytes] | None = None) -> Model:
    """Compiles the MJCF file at `path` (host side: lxml + numpy)."""
    from jaxmj.mjcf import compile_path

    return compile_path(path, assets=assets)

  @classmethod
  def from_xml_string(cls, xml: str, assets: dict[str, bytes] | None = None) -> Model:
    """Compiles MJCF given as a string; `assets` maps include file names to contents."""
    from jaxmj.mjcf import compile_string

    return compile_string(xml, assets=assets)


@pytree_dataclass
class Data:
  """mjData: state, controls and everything computed from them. Every field is a leaf.

  Fields that mjData stores sparsely are dense here (`qM`, `qLD`); `warning` counts per
  mjtWarning how often a step found the state invalid (NaN or beyond 1e10).
  """

  # ---- state ----
  time: jax.Array  # ()
  qpos: jax.Array  # (nq,)
  qvel: jax.Array  # (nv,)
  act: jax.Array  # (na,)
  qacc_warmstart: jax.Array  # (nv,)
  # ---- controls and applied forces ----
  ctrl: jax.Array  # (nu,)
  qfrc_applied: jax.Array  # (nv,)  generalized forces
  xfrc_applied: jax.Array  # (nbody, 6)  global frame force(3), torque(3) at body com
  mocap_pos: jax.Array  # (nmocap, 3)
  mocap_quat: jax.Array  # (nmocap, 4)
  userdata: jax.Array  # (nuserdata,)
  # ---- dynamics ----
  qacc: jax.Array  # (nv,)
  act_dot: jax.Array  # (na,)
  # ---- kinematics (global frame) ----
  xpos: jax.Array  # (nbody, 3)  body frame origin
  xquat: jax.Array  # (nbody, 4)
  xmat: jax.Array  # (nbody, 3, 3)
  xipos: jax.Array  # (nbody, 3)  body centre of mass
  ximat: jax.Array  # (nbody, 3, 3)  principal axes of inertia
  xanchor: jax.Array  # (njnt, 3)  joint anchor
  xaxis: jax.Array  # (njnt, 3)  joint axis
  geom_xpos: jax.Array  # (ngeom, 3)
  geom_xquat: jax.Array  # (ngeom, 4)
  geom_xmat: jax.Array  # (ngeom, 3, 3)
  site_xpos: jax.Array  # (nsite, 3)
  site_xquat: jax.Array  # (nsite, 4)
  site_xmat: jax.Array  # (nsite, 3, 3)
  # ---- com-based quantities (com frame) ----
  subtree_com: jax.Array  # (nbody, 3)  global frame
  cinert: jax.Array  # (nbody, 10)  I(xx,yy,zz,xy,xz,yz), mass*offset(3), mass
  crb: jax.Array  # (nbody, 10)  composite rigid body inertia, same layout
  cdof: jax.Array  # (nv, 6)  motion axis of each dof
  cvel: jax.Array  # (nbody, 6)  body velocity
  cdof_dot: jax.Array  # (nv, 6)  time derivative of cdof
  # ---- mass matrix ----
  qM: jax.Array  # (nv, nv)  joint-space inertia, armature included (dense mj_fullM)
  qLD: jax.Array  # (nv, nv)  M = L' D L: D on the diagonal, L strictly below it
  qLDiagInv: jax.Array  # (nv,)  1 / D
  # ---- forces (generalized) ----
  qfrc_bias: jax.Array  # (nv,)  Coriolis, centrifugal and gravitational forces
  qfrc_spring: jax.Array  # (nv,)
  qfrc_damper: jax.Array  # (nv,)
  qfrc_passive: jax.Array  # (nv,)
  qfrc_actuator: jax.Array  # (nv,)
  qfrc_smooth: jax.Array  # (nv,)  all forces but constraints
  qacc_smooth: jax.Array  # (nv,)  acceleration without constraints
  qfrc_constraint: jax.Array  # (nv,)
  qfrc_inverse: jax.Array  # (nv,)
  # ---- contacts and constraints (fixed sizes ncon, nefc, static for a model) ----
  contact: Contact
  efc_type: jax.Array  # (nefc,) int32 ConstraintType
  efc_id: jax.Array  # (nefc,) int32  id of the dof, joint or contact of the row
  efc_active: jax.Array  # (nefc,) bool  jaxmj: the row is a constraint at this state
  efc_J: jax.Array  # (nefc, nv)  constraint Jacobian
  efc_pos: jax.Array  # (nefc,)  constraint violation
  efc_margin: jax.Array  # (nefc,)
  efc_frictionloss: jax.Array  # (nefc,)  friction loss (friction rows), else 0
  efc_diagA: jax.Array  # (nefc,)  diag(J M^-1 J'), approximated from invweight0 unless diagexact
  efc_D: jax.Array  # (nefc,)  constraint stiffness 1 / R (0 for inactive rows)
  efc_R: jax.Array  # (nefc,)  regularizer
  efc_vel: jax.Array  # (nefc,)  J qvel
  efc_aref: jax.Array  # (nefc,)  reference acceleration
  efc_force: jax.Array  # (nefc,)  constraint force in constraint space
  efc_state: jax.Array  # (nefc,) int32 ConstraintState
  solver_niter: jax.Array  # () int32  iterations the solver ran
  # ---- diagnostics ----
  energy: jax.Array  # (2,)  potential, kinetic (with the energy flag)
  warning: jax.Array  # (NWARNING,) int32  counts per Warning
