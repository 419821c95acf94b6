"""Model (mjModel) and Option (mjOption), with mjModel's names, meanings and shapes.

Static fields (numpy arrays, ints, enums: sizes, ids, addresses, types, flags) live in the
pytree's aux data and are known at trace time. Numeric parameters are `jax.Array` leaves, so
`vmap` (domain randomization) and `grad` (system identification) reach them. Frames: "global"
is the world frame; "com frame" means global orientation centred at the subtree centre of
mass of the body's kinematic tree root (MuJoCo's `c` quantities). Spatial vectors are
[angular(3), linear(3)] as in MuJoCo.

Data and Contact (jaxmj/data.py), the enums (jaxmj/enums.py) and Visual and Statistic
(jaxmj/visual.py) are re-exported here: `from jaxmj.types import Data, JointType` works.
"""

from __future__ import annotations

import jax
import numpy as np

from jaxmj.data import Contact, Data
from jaxmj.enums import (
  JOINT_NQ,
  JOINT_NV,
  NEQDATA,
  NWARNING,
  BiasType,
  Cone,
  ConstraintState,
  ConstraintType,
  DisableBit,
  DynType,
  EnableBit,
  EqType,
  GainType,
  GeomType,
  Integrator,
  Jacobian,
  JointType,
  ObjType,
  SameFrame,
  SensorType,
  Solver,
  Stage,
  TrnType,
  Warning,
  WrapType,
)
from jaxmj.pytree import pytree_dataclass, static
from jaxmj.source import ModelSource
from jaxmj.visual import Statistic, Visual

__all__ = [
  "Model", "Option", "Data", "Contact", "Statistic", "Visual", "JointType", "GeomType",
  "Integrator", "Cone", "Solver", "Jacobian", "DisableBit", "EnableBit", "Warning",
  "ConstraintType", "EqType", "ConstraintState", "ObjType", "SensorType", "Stage", "TrnType",
  "DynType", "GainType", "BiasType", "WrapType", "SameFrame", "JOINT_NQ", "JOINT_NV", "NWARNING",
  "NEQDATA",
]


ARITHMETICS = ("exact", "fast")  # Option.arithmetic


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
  # jaxmj: the constraint solver's derivative. "implicit": that of the converged optimum
  # (cheap, memory independent of iterations); "unrolled": that of the iterate simulated
  # (reverse mode through the iterations; exact at any iteration count). solver.py.
  grad: str = static(default="implicit")
  # jaxmj: how the runtime rounds. "exact": as MuJoCo's C does, bit for bit (guards keep XLA
  # from fusing multiply-adds into products MuJoCo rounds on their own); "fast": XLA may fuse
  # and reorder, results held to MuJoCo at stated tolerances (README "Arithmetic modes").
  arithmetic: str = static(default="exact")
  # jaxmj: contact smoothing of the implicit derivative, a distance temperature in metres
  # (0: exact). Values are unchanged; tangents flow as if every contact or limit row not
  # pushing now were active with weight sigmoid(-(dist - margin) / T) (solver/smoothing.py).
  grad_smoothing: float = static(default=0.0)
  # jaxmj: static-friction smoothing of the implicit derivative, a temperature on each
  # pyramidal contact's friction load (0: exact). Values are unchanged; a stuck contact's
  # tangent is blended with that of the contact sliding at its current force ratio
  # (solver/smoothing.py).
  grad_smoothing_friction: float = static(default=0.0)
  # jaxmj: forward-mode derivatives of the contact rows as products (dJ x, dJ' f from the
  # contact points and directions, constraint/driver.py's jac_products) instead of forming
  # dJ, (nefc, nv) a tangent. Values are unchanged. transition_jacobians turns it on; reverse
  # mode is faster without it (its transposes of the products cost more than dJ's).
  jac_products: bool = static(default=False)

  def disabled(self, bit: DisableBit) -> bool:
    """True if `bit` is set in `disableflags` (static, usable for trace-time branching)."""
    return bool(self.disableflags & bit)

  def enabled(self, bit: EnableBit) -> bool:
    """True if `bit` is set in `enableflags`."""
    return bool(self.enableflags & bit)

  @property
  def exact(self) -> bool:
    """True when results must round as MuJoCo's C does ("exact" arithmetic)."""
    if self.arithmetic not in ARITHMETICS:
      raise ValueError(f"opt.arithmetic must be one of {ARITHMETICS}, got {self.arithmetic!r}")
    return self.arithmetic == "exact"




@pytree_dataclass(batch_ref=("body_mass", 1))
class Model:
  """mjModel: the compiled model. Build with `Model.from_xml_path` / `from_xml_string`.

  Per-object arrays are indexed by object id: body 0 is the world. Orientations are unit
  quaternions (w, x, y, z) relative to the parent body frame unless stated.
  """

  # ---- sizes (static) ----
  nq: int = static()  # generalized coordinates
  nv: int = static()  # degrees of freedom
  nu: int = static()  # controls (entries of ctrl)
  na: int = static()  # activation states
  nbody: int = static()
  njnt: int = static()
  ngeom: int = static()
  nsite: int = static()
  nmocap: int = static()
  nkey: int = static()
  ntree: int = static()  # kinematic trees under the world
  nuserdata: int = static()
  # <size nconmax>, -1 unset: MuJoCo sizes its arena by it; jaxmj caps the contacts of each
  # condim at it where the candidate slots outnumber it (collision/plan.py)
  nconmax: int = static()
  ngravcomp: int = static()  # bodies with body_gravcomp != 0 at compile time
  # jaxmj: dofs and actuators with damping at compile time. It picks a form, not the physics:
  # mj_Euler's damped solve runs under a cond where it is 0 (integrator.euler)
  ndamped: int = static()

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
  jnt_actuatorid: np.ndarray = static()  # (njnt,) int32  actuator reflecting armature/damping
  # onto the joint: -1 none, -2 several (mjcf/armature.py)
  jnt_solref: jax.Array  # (njnt, 2)  limit constraint solref
  jnt_solimp: jax.Array  # (njnt, 5)  limit constraint solimp
  jnt_pos: jax.Array  # (njnt, 3)  anchor in body frame
  jnt_axis: jax.Array  # (njnt, 3)  axis in body frame (unit)
  jnt_stiffness: jax.Array  # (njnt,)  spring stiffness
  jnt_stiffnesspoly: jax.Array  # (njnt, 2)  quadratic and cubic spring coefficients
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
  dof_dampingpoly: jax.Array  # (nv, 2)  quadratic and cubic damping coefficients
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
  geom_castshadow: np.ndarray = static()  # (ngeom,) bool  visual only
  # jaxmj: how the compiler inferred body inertia from this geom, for set_const to do it
  # again: 0 not counted, 1 mass = geom_density x volume, 2 mass given (geom_mass)
  geom_inertiakind: np.ndarray = static()  # (ngeom,) int8
  geom_meshinertia: np.ndarray = static()  # (ngeom, 4)  jaxmj: mesh volume, inertia box
  # half-sizes (MuJoCo's equivalent box); 0 for other geoms
  geom_solmix: jax.Array  # (ngeom,)
  geom_solref: jax.Array  # (ngeom, 2)
  geom_solimp: jax.Array  # (ngeom, 5)
  geom_size: jax.Array  # (ngeom, 3)  type-specific sizes
  geom_density: jax.Array  # (ngeom,)  jaxmj: density the compiler weighed the geom with
  geom_mass: jax.Array  # (ngeom,)  jaxmj: the geom's compiled mass (given or density x volume)
  geom_aabb: jax.Array  # (ngeom, 6)  local bounding box: centre(3), half-size(3)
  geom_rbound: jax.Array  # (ngeom,)  bounding-sphere radius, 0 for planes
  geom_pos: jax.Array  # (ngeom, 3)  in body frame
  geom_quat: jax.Array  # (ngeom, 4)  in body frame
  geom_friction: jax.Array  # (ngeom, 3)  slide, spin, roll
  geom_margin: jax.Array  # (ngeom,)
  geom_gap: jax.Array  # (ngeom,)

  # ---- fluid (ellipsoid model: mjcf/fluid.py compiles, jaxmj/smooth/fluid.py runs) ----
  # geom_fluid row: interaction flag (1 ellipsoid, 0 none), blunt drag, slender drag, angular
  # drag, Kutta lift, Magnus lift, virtual mass (3), virtual inertia (3), per unit density.
  geom_fluid: jax.Array  # (ngeom, 12)
  body_fluidellipsoid: np.ndarray = static()  # (nbody,) bool  jaxmj: a geom's flag is on

  # ---- sites ----
  site_type: np.ndarray = static()  # (nsite,) int32 GeomType
  site_bodyid: np.ndarray = static()  # (nsite,) int32
  site_group: np.ndarray = static()  # (nsite,) int32
  site_sameframe: np.ndarray = static()  # (nsite,) uint8 SameFrame
  site_rgba: np.ndarray = static()  # (nsite, 4) float32  visual only
  site_matid: np.ndarray = static()  # (nsite,) int32  material id, -1 if none (visual only)
  site_size: jax.Array  # (nsite, 3)
  site_pos: jax.Array  # (nsite, 3)  in body frame
  site_quat: jax.Array  # (nsite, 4)  in body frame

  # ---- cameras and lights (<camera>, <light>; mjcf/camlight.py, run in smooth/camlight.py) ----
  # Visual only. Modes are mjtCamLight: 0 fixed, 1 track, 2 trackcom, 3 targetbody,
  # 4 targetbodycom. Poses in the owning body's frame.
  ncam: int = static()
  nuser_cam: int = static()  # columns of cam_user
  cam_mode: np.ndarray = static()  # (ncam,) int32 mjtCamLight
  cam_bodyid: np.ndarray = static()  # (ncam,) int32
  cam_targetbodyid: np.ndarray = static()  # (ncam,) int32  -1 if none
  cam_projection: np.ndarray = static()  # (ncam,) int32  0 perspective, 1 orthographic
  cam_fovy: np.ndarray = static()  # (ncam,)  vertical field of view, degrees
  cam_ipd: np.ndarray = static()  # (ncam,)  inter-pupillary distance
  cam_resolution: np.ndarray = static()  # (ncam, 2) int32  pixels
  cam_output: np.ndarray = static()  # (ncam,) int32  mjtCamOutBit bits
  cam_sensorsize: np.ndarray = static()  # (ncam, 2) float32  sensor size, length units
  cam_intrinsic: np.ndarray = static()  # (ncam, 4) float32  focal x, y; principal x, y
  cam_user: np.ndarray = static()  # (ncam, nuser_cam)  (jaxmj/mjcf/compile/user.py)
  name_camadr: np.ndarray = static()  # (ncam,) int32  address in `names`
  cam_pos: jax.Array  # (ncam, 3)  in body frame
  cam_quat: jax.Array  # (ncam, 4)  in body frame
  cam_poscom0: jax.Array  # (ncam, 3)  global offset from the body's subtree com at qpos0
  cam_pos0: jax.Array  # (ncam, 3)  global offset from the body origin at qpos0
  cam_mat0: jax.Array  # (ncam, 9)  global orientation at qpos0
  nlight: int = static()
  light_mode: np.ndarray = static()  # (nlight,) int32 mjtCamLight
  light_bodyid: np.ndarray = static()  # (nlight,) int32
  light_targetbodyid: np.ndarray = static()  # (nlight,) int32  -1 if none
  light_type: np.ndarray = static()  # (nlight,) int32  0 spot, 1 directional, 2 point, 3 image
  light_texid: np.ndarray = static()  # (nlight,) int32  texture of image lights, -1 if none
  light_castshadow: np.ndarray = static()  # (nlight,) bool
  light_active: np.ndarray = static()  # (nlight,) bool
  light_bulbradius: np.ndarray = static()  # (nlight,) float32
  light_softness: np.ndarray = static()  # (nlight,) float32  shadow softness
  light_intensity: np.ndarray = static()  # (nlight,) float32  candela (0: unset)
  light_range: np.ndarray = static()  # (nlight,) float32
  light_attenuation: np.ndarray = static()  # (nlight, 3) float32  constant, linear, quadratic
  light_cutoff: np.ndarray = static()  # (nlight,) float32  spot cutoff, degrees
  light_exponent: np.ndarray = static()  # (nlight,) float32  spot exponent
  light_ambient: np.ndarray = static()  # (nlight, 3) float32
  light_diffuse: np.ndarray = static()  # (nlight, 3) float32
  light_specular: np.ndarray = static()  # (nlight, 3) float32
  name_lightadr: np.ndarray = static()  # (nlight,) int32  address in `names`
  light_pos: jax.Array  # (nlight, 3)  in body frame
  light_dir: jax.Array  # (nlight, 3)  unit, in body frame
  light_poscom0: jax.Array  # (nlight, 3)  global offset from the body's subtree com at qpos0
  light_pos0: jax.Array  # (nlight, 3)  global offset from the body origin at qpos0
  light_dir0: jax.Array  # (nlight, 3)  global direction at qpos0

  # ---- user data (`user` attributes, <size nuser_*>; mjcf/user.py; never read by physics) ----
  nuser_body: int = static()
  nuser_jnt: int = static()
  nuser_geom: int = static()
  nuser_site: int = static()
  body_user: np.ndarray = static()  # (nbody, nuser_body)
  jnt_user: np.ndarray = static()  # (njnt, nuser_jnt)
  geom_user: np.ndarray = static()  # (ngeom, nuser_geom)
  site_user: np.ndarray = static()  # (nsite, nuser_site)
  nuser_tendon: int = static()
  nuser_actuator: int = static()
  tendon_user: np.ndarray = static()  # (ntendon, nuser_tendon)
  actuator_user: np.ndarray = static()  # (nactuator, nuser_actuator)

  # ---- renderer settings and model scales (jaxmj/visual.py; static, no physics effect) ----
  vis: Visual = static()  # mjModel.vis (<visual>)
  stat: Statistic = static()  # mjModel.stat (computed at qpos0, <statistic> overrides)

  # ---- custom user data (<custom>; mjcf/custom.py; never read by physics) ----
  nnumeric: int = static()
  nnumericdata: int = static()
  numeric_adr: np.ndarray = static()  # (nnumeric,) int32  first entry in numeric_data
  numeric_size: np.ndarray = static()  # (nnumeric,) int32
  numeric_data: np.ndarray = static()  # (nnumericdata,)
  name_numericadr: np.ndarray = static()  # (nnumeric,) int32  address in `names`
  ntext: int = static()
  ntextdata: int = static()
  text_adr: np.ndarray = static()  # (ntext,) int32  first byte in text_data
  text_size: np.ndarray = static()  # (ntext,) int32  bytes, terminating NUL included
  text_data: bytes = static()  # (ntextdata,) NUL-terminated strings
  name_textadr: np.ndarray = static()  # (ntext,) int32  address in `names`
  ntuple: int = static()
  ntupledata: int = static()
  tuple_adr: np.ndarray = static()  # (ntuple,) int32  first element in tuple_obj*
  tuple_size: np.ndarray = static()  # (ntuple,) int32
  tuple_objtype: np.ndarray = static()  # (ntupledata,) int32 ObjType
  tuple_objid: np.ndarray = static()  # (ntupledata,) int32
  tuple_objprm: np.ndarray = static()  # (ntupledata,)
  name_tupleadr: np.ndarray = static()  # (ntuple,) int32  address in `names`

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

  # ---- contact adhesion (jaxmj/constraint/adhesion.py) ----
  geom_adhesion: jax.Array  # (ngeom,)  adhesive pull of contacts, force (summed per pair)
  pair_adhesion: jax.Array  # (npair,)  the explicit pair's adhesion
  flg_adhesion: int = static()  # 1 if any geom or pair adhesion is nonzero
  # jaxmj: 1 if flg_adhesion and a geom or pair gap > 0 (compiled values): every contact slot
  # then owns a frictionless row for an adhering contact in its gap layer (MuJoCo 4.0's)
  flg_adhesiongap: int = static()

  # ---- contact surface velocity (jaxmj/constraint/surfacevel.py) ----
  geom_surfacevel: jax.Array  # (ngeom, 6)  surface velocity in the geom frame: lin, ang
  flg_surfacevel: int = static()  # 1 if any geom surfacevel is nonzero

  # ---- equality constraints (<equality>) ----
  neq: int = static()
  eq_type: np.ndarray = static()  # (neq,) int32 EqType
  eq_obj1id: np.ndarray = static()  # (neq,) int32  body, site, joint or tendon id
  eq_obj2id: np.ndarray = static()  # (neq,) int32  0 (world) or -1 (none) when omitted
  eq_objtype: np.ndarray = static()  # (neq,) int32 ObjType of the two objects
  eq_active0: np.ndarray = static()  # (neq,) bool  initial Data.eq_active
  name_eqadr: np.ndarray = static()  # (neq,) int32  address in `names`
  eq_solref: jax.Array  # (neq, 2)
  eq_solimp: jax.Array  # (neq, 5)
  eq_data: jax.Array  # (neq, NEQDATA)  connect: anchor1(3), anchor2(3) in the body frames;
  # weld: anchor(3) in body2's frame, relpos(3) and relquat(4) of body2 in body1's frame,
  # torquescale, 1 if relpose came from qpos0; joint/tendon: polycoef(5)

  # ---- sensors (<sensor>; computed in jaxmj/sensor/) ----
  nsensor: int = static()
  nsensordata: int = static()  # total width of sensordata
  nuser_sensor: int = static()  # columns of sensor_user
  nhistory: int = static()  # size of mjData.history: ctrl and sensor sample buffers
  sensor_type: np.ndarray = static()  # (nsensor,) int32 SensorType
  sensor_datatype: np.ndarray = static()  # (nsensor,) int32 mjtDataType: real, positive,
  # axis, quaternion (decides how cutoff clamps)
  sensor_needstage: np.ndarray = static()  # (nsensor,) int32 Stage
  sensor_objtype: np.ndarray = static()  # (nsensor,) int32 ObjType of the sensed object
  sensor_objid: np.ndarray = static()  # (nsensor,) int32  -1 if none
  sensor_reftype: np.ndarray = static()  # (nsensor,) int32 ObjType of the reference object
  sensor_refid: np.ndarray = static()  # (nsensor,) int32  -1 if none
  sensor_intprm: np.ndarray = static()  # (nsensor, 3) int32  type-specific: rangefinder and
  # contact data bits, contact reduce and num, insidesite enclosed
  sensor_dim: np.ndarray = static()  # (nsensor,) int32  width in sensordata
  sensor_adr: np.ndarray = static()  # (nsensor,) int32  address in sensordata
  sensor_history: np.ndarray = static()  # (nsensor, 2) int32  nsample, interp
  sensor_historyadr: np.ndarray = static()  # (nsensor,) int32  -1 without history
  name_sensoradr: np.ndarray = static()  # (nsensor,) int32  address in `names`
  sensor_cutoff: jax.Array  # (nsensor,)  clamp on |value| when > 0 (real, positive types)
  sensor_noise: jax.Array  # (nsensor,)  noise std: metadata, never applied (as MuJoCo)
  sensor_delay: jax.Array  # (nsensor,)  s
  sensor_interval: jax.Array  # (nsensor, 2)  period, phase
  sensor_user: jax.Array  # (nsensor, nuser_sensor)

  # ---- actuators (<actuator>; compiled in mjcf/actuator.py, run in jaxmj/actuation/driver.py) ----
  # MuJoCo 4.0 layout: actuator k reads ctrl[ctrladr[k] : + ctrlnum[k]] and writes the outputs
  # outadr[k] : + outnum[k] (gear, acc0, length0, lengthrange and Data's actuator_length /
  # velocity / force / moment are per output; ctrlrange / ctrllimited per control). An
  # <orientation> (so3) actuator has 3 controls (4 with input quat), 3 outputs and, as an
  # integrator, 3 activations; a multi-input <pid> has one control per input.
  nactuator: int = static()  # actuators
  nout: int = static()  # actuator force outputs
  actuator_trntype: np.ndarray = static()  # (nactuator,) int32 TrnType
  actuator_dyntype: np.ndarray = static()  # (nactuator,) int32 DynType
  actuator_gaintype: np.ndarray = static()  # (nactuator,) int32 GainType
  actuator_biastype: np.ndarray = static()  # (nactuator,) int32 BiasType
  actuator_trnid: np.ndarray = static()  # (nactuator, 2) int32  target id; refsite/slidersite or -1
  actuator_actadr: np.ndarray = static()  # (nactuator,) int32  first act entry, -1 if stateless
  actuator_actnum: np.ndarray = static()  # (nactuator,) int32  act entries (0 or 1; pid,
  # dcmotor: their states; so3: 3 as integrator, actdim inert ones without dynamics)
  actuator_group: np.ndarray = static()  # (nactuator,) int32  for opt.disableactuator
  actuator_ctrllimited: np.ndarray = static()  # (nu,) bool
  actuator_forcelimited: np.ndarray = static()  # (nactuator,) bool
  actuator_actlimited: np.ndarray = static()  # (nactuator,) bool
  actuator_actearly: np.ndarray = static()  # (nactuator,) bool  force from next-step act
  actuator_ctrladr: np.ndarray = static()  # (nactuator,) int32  first ctrl entry
  actuator_ctrlnum: np.ndarray = static()  # (nactuator,) int32  ctrl entries
  actuator_outadr: np.ndarray = static()  # (nactuator,) int32  first output
  actuator_outnum: np.ndarray = static()  # (nactuator,) int32  outputs
  actuator_ctrlspec: np.ndarray = static()  # (nactuator,) int32  declared input: 1 pos, 2 vel,
  # 32 pressure, 0 a plain command
  actuator_history: np.ndarray = static()  # (nactuator, 2) int32  nsample, interp (0 here)
  actuator_historyadr: np.ndarray = static()  # (nactuator,) int32  -1 (no ctrl history)
  actuator_plugin: np.ndarray = static()  # (nactuator,) int32  -1 (no plugins)
  actuator_dynprm: jax.Array  # (nactuator, 10)  dynamics parameters (filter tau, muscle tau)
  actuator_gainprm: jax.Array  # (nactuator, 10)  gain parameters
  actuator_biasprm: jax.Array  # (nactuator, 10)  bias parameters
  actuator_ctrlrange: jax.Array  # (nu, 2)
  actuator_forcerange: jax.Array  # (nactuator, 2)
  actuator_actrange: jax.Array  # (nactuator, 2)
  actuator_gear: jax.Array  # (nout, 6)  length scale; 3D axes for ball/free/site targets
  actuator_cranklength: jax.Array  # (nactuator,)  slider-crank rod length
  actuator_acc0: jax.Array  # (nout,)  |M^-1 moment| at qpos0 (muscle force scale)
  actuator_length0: jax.Array  # (nout,)  actuator length at qpos0
  actuator_lengthrange: jax.Array  # (nout, 2)  feasible length range (muscles)
  actuator_delay: jax.Array  # (nactuator,)  control delay, s (0 here)
  actuator_damping: jax.Array  # (nactuator,)  damping reflected on the target (gear^2 scaled)
  actuator_dampingpoly: jax.Array  # (nactuator, 2)  quadratic and cubic damping coefficients
  actuator_armature: jax.Array  # (nactuator,)  rotor inertia reflected on the target
  actuator_slots: np.ndarray = static()  # (nactuator, 5) int32  jaxmj: offsets in the actuator's
  # act block of the PID / DC motor states slew, integral, temperature, bristle, current
  # (-1 absent); MuJoCo derives them from the parameters (mj_dcmotorSlots)

  # ---- tendons (<tendon>; compiled in mjcf/tendon.py, run in jaxmj/smooth/tendon.py) ----
  ntendon: int = static()
  nwrap: int = static()  # objects on all tendon paths
  tendon_adr: np.ndarray = static()  # (ntendon,) int32  first wrap object of the path
  tendon_num: np.ndarray = static()  # (ntendon,) int32  wrap objects on the path
  tendon_type: np.ndarray = static()  # (ntendon,) int32  0 fixed, 1 spatial
  tendon_group: np.ndarray = static()  # (ntendon,) int32
  tendon_limited: np.ndarray = static()  # (ntendon,) bool  length limits are constraints
  tendon_actfrclimited: np.ndarray = static()  # (ntendon,) bool
  tendon_treenum: np.ndarray = static()  # (ntendon,) int32  kinematic trees it touches
  tendon_treeid: np.ndarray = static()  # (ntendon, 2) int32  first two of them, -1 if none
  tendon_actuatorid: np.ndarray = static()  # (ntendon,) int32  as jnt_actuatorid
  tendon_rgba: np.ndarray = static()  # (ntendon, 4) float32  visual only
  tendon_matid: np.ndarray = static()  # (ntendon,) int32  material id, -1 if none (visual only)
  wrap_type: np.ndarray = static()  # (nwrap,) int32 WrapType
  wrap_objid: np.ndarray = static()  # (nwrap,) int32  joint, site or geom id (-1 pulley)
  tendon_range: jax.Array  # (ntendon, 2)  length limits
  tendon_actfrcrange: jax.Array  # (ntendon, 2)  actuator force clamp
  tendon_solref_lim: jax.Array  # (ntendon, 2)
  tendon_solimp_lim: jax.Array  # (ntendon, 5)
  tendon_solref_fri: jax.Array  # (ntendon, 2)
  tendon_solimp_fri: jax.Array  # (ntendon, 5)
  tendon_margin: jax.Array  # (ntendon,)  limit activation margin
  tendon_stiffness: jax.Array  # (ntendon,)  linear spring coefficient
  tendon_stiffnesspoly: jax.Array  # (ntendon, 2)  quadratic and cubic spring coefficients
  tendon_damping: jax.Array  # (ntendon,)  linear damping coefficient
  tendon_dampingpoly: jax.Array  # (ntendon, 2)  quadratic and cubic damping coefficients
  tendon_armature: jax.Array  # (ntendon,)  inertia of length changes
  tendon_frictionloss: jax.Array  # (ntendon,)
  tendon_springyield: jax.Array  # (ntendon,)  plastic yield threshold (0: elastic only)
  tendon_lengthspring: jax.Array  # (ntendon, 2)  spring rest length range (deadband)
  tendon_length0: jax.Array  # (ntendon,)  length at qpos0
  tendon_invweight0: jax.Array  # (ntendon,)  J M^-1 J' at qpos0
  tendon_width: jax.Array  # (ntendon,)  visual radius
  wrap_prm: jax.Array  # (nwrap,)  joint coef, pulley divisor, geom side site id (-1 none)

  # ---- spring plasticity (springyield; mjcf/plastic.py compiles, smooth/plastic.py runs) ----
  nplastic: int = static()  # size of mjData.plastic
  jnt_plasticadr: np.ndarray = static()  # (njnt,) int32  first plastic slot (1 hinge/slide,
  # 4 ball), -1 without springyield
  tendon_plasticadr: np.ndarray = static()  # (ntendon,) int32  first of 2 slots, or -1
  jnt_springyield: jax.Array  # (njnt,)  largest elastic spring displacement, rad or m
  key_plastic: jax.Array  # (nkey, nplastic)  plastic state of each keyframe

  # ---- trees ----
  tree_bodyadr: np.ndarray = static()  # (ntree,) int32
  tree_bodynum: np.ndarray = static()  # (ntree,) int32
  tree_dofadr: np.ndarray = static()  # (ntree,) int32
  tree_dofnum: np.ndarray = static()  # (ntree,) int32
  tree_sleep_policy: np.ndarray = static()  # (ntree,) int32  mjtSleepPolicy (mjcf/sleep.py)

  # ---- meshes and heightfields (<asset>; compiled by mjcf/asset.py) ----
  # A mesh's vertices are in its own frame: centred at its centre of mass (or surface
  # centroid for inertia="shell") with the principal axes of inertia as axes; a mesh geom's
  # pos/quat already include mesh_pos/mesh_quat, so geom frame = mesh frame.
  nmesh: int = static()
  nmeshvert: int = static()
  nmeshface: int = static()
  nmeshgraph: int = static()
  mesh_vertadr: np.ndarray = static()  # (nmesh,) int32  first row in mesh_vert
  mesh_vertnum: np.ndarray = static()  # (nmesh,) int32
  mesh_faceadr: np.ndarray = static()  # (nmesh,) int32  first row in mesh_face
  mesh_facenum: np.ndarray = static()  # (nmesh,) int32
  mesh_graphadr: np.ndarray = static()  # (nmesh,) int32  start in mesh_graph, -1: no hull
  mesh_vert: np.ndarray = static()  # (nmeshvert, 3) float32  vertices, mesh frame
  mesh_face: np.ndarray = static()  # (nmeshface, 3) int32  vertex ids (within the mesh),
  # counter-clockwise seen from outside; the hull's triangles when no faces were given
  mesh_graph: np.ndarray = static()  # (nmeshgraph,) int32  convex hull per mesh, MuJoCo's
  # layout: numvert, numface, vert_edgeadr(numvert), vert_globalid(numvert),
  # edge_localid(numvert + 3 numface; neighbours then -1 per vertex), face_globalid(3 numface).
  # Equal to MuJoCo's entry for entry: qhull's vertex and facet order (mjcf/qhull.py)
  mesh_pos: np.ndarray = static()  # (nmesh, 3)  mesh frame in the asset's frame (after
  # refpos/refquat/scale)
  mesh_quat: np.ndarray = static()  # (nmesh, 4)
  mesh_scale: np.ndarray = static()  # (nmesh, 3)
  name_meshadr: np.ndarray = static()  # (nmesh,) int32  address in `names`
  # Skins (mjcf/skin.py): meshes whose vertices follow bodies (bones); visual only. A
  # vertex's position is sum over its bones of weight * (body pose * bind pose^-1) * vertex.
  nskin: int = static()
  nskinvert: int = static()
  nskintexvert: int = static()
  nskinface: int = static()
  nskinbone: int = static()
  nskinbonevert: int = static()
  skin_matid: np.ndarray = static()  # (nskin,) int32  material, -1: none
  skin_group: np.ndarray = static()  # (nskin,) int32  visibility group
  skin_rgba: np.ndarray = static()  # (nskin, 4) float32
  skin_inflate: np.ndarray = static()  # (nskin,) float32  vertices moved along normals
  skin_vertadr: np.ndarray = static()  # (nskin,) int32  first row in skin_vert
  skin_vertnum: np.ndarray = static()  # (nskin,) int32
  skin_texcoordadr: np.ndarray = static()  # (nskin,) int32  first row in skin_texcoord, -1
  skin_faceadr: np.ndarray = static()  # (nskin,) int32  first row in skin_face
  skin_facenum: np.ndarray = static()  # (nskin,) int32
  skin_boneadr: np.ndarray = static()  # (nskin,) int32  first bone
  skin_bonenum: np.ndarray = static()  # (nskin,) int32
  skin_vert: np.ndarray = static()  # (nskinvert, 3) float32  bind-pose vertices
  skin_texcoord: np.ndarray = static()  # (nskintexvert, 2) float32
  skin_face: np.ndarray = static()  # (nskinface, 3) int32  vertex ids within the skin
  skin_bonevertadr: np.ndarray = static()  # (nskinbone,) int32  first entry in skin_bonevert*
  skin_bonevertnum: np.ndarray = static()  # (nskinbone,) int32
  skin_bonebindpos: np.ndarray = static()  # (nskinbone, 3) float32  bone frame at bind time
  skin_bonebindquat: np.ndarray = static()  # (nskinbone, 4) float32  (unit)
  skin_bonebodyid: np.ndarray = static()  # (nskinbone,) int32  the body the bone follows
  skin_bonevertid: np.ndarray = static()  # (nskinbonevert,) int32  vertex ids within the skin
  skin_bonevertweight: np.ndarray = static()  # (nskinbonevert,) float32  per vertex, its
  # weights over all bones sum to one
  skin_pathadr: np.ndarray = static()  # (nskin,) int32  file's address in mjModel.paths, -1
  name_skinadr: np.ndarray = static()  # (nskin,) int32  address in `names`
  nhfield: int = static()
  nhfielddata: int = static()
  hfield_nrow: np.ndarray = static()  # (nhfield,) int32  rows (along y)
  hfield_ncol: np.ndarray = static()  # (nhfield,) int32  columns (along x)
  hfield_adr: np.ndarray = static()  # (nhfield,) int32  first entry in hfield_data
  name_hfieldadr: np.ndarray = static()  # (nhfield,) int32  address in `names`
  hfield_size: jax.Array  # (nhfield, 4)  radius x, radius y, elevation z, base depth
  hfield_data: jax.Array  # (nhfielddata,) float32  elevation in [0, 1], row-major, row 0
  # at y = -size[1] (bottom row first); height above the geom frame = data * size[2]
  # Textures and materials: visual only, kept for renderers (compiled by mjcf/texture.py).
  ntex: int = static()
  ntexdata: int = static()
  tex_type: np.ndarray = static()  # (ntex,) int32  0: 2d, 1: cube, 2: skybox
  tex_colorspace: np.ndarray = static()  # (ntex,) int32  0: auto, 1: linear, 2: sRGB
  tex_height: np.ndarray = static()  # (ntex,) int32  rows (6 faces stacked for cube/skybox)
  tex_width: np.ndarray = static()  # (ntex,) int32
  tex_nchannel: np.ndarray = static()  # (ntex,) int32  3 (RGB) or 4 (RGBA)
  tex_adr: np.ndarray = static()  # (ntex,) int32  first byte in tex_data
  tex_data: np.ndarray = static()  # (ntexdata,) uint8  pixels, row-major, channels last
  name_texadr: np.ndarray = static()  # (ntex,) int32  address in `names`
  nmat: int = static()
  mat_texid: np.ndarray = static()  # (nmat, 10) int32  texture per mjtTextureRole, -1 none
  mat_texuniform: np.ndarray = static()  # (nmat,) bool  repeat per unit length, not per face
  mat_texrepeat: np.ndarray = static()  # (nmat, 2) float32
  mat_emission: np.ndarray = static()  # (nmat,) float32
  mat_specular: np.ndarray = static()  # (nmat,) float32
  mat_shininess: np.ndarray = static()  # (nmat,) float32
  mat_reflectance: np.ndarray = static()  # (nmat,) float32
  mat_metallic: np.ndarray = static()  # (nmat,) float32  -1: unset
  mat_roughness: np.ndarray = static()  # (nmat,) float32  -1: unset
  mat_rgba: np.ndarray = static()  # (nmat, 4) float32
  name_matadr: np.ndarray = static()  # (nmat,) int32  address in `names`
  mesh_hullnum: np.ndarray = static()  # (nmesh,) int32  jaxmj: convex hull vertex count
  mesh_hullvert: jax.Array  # (nmesh, nhullmax, 3)  jaxmj: each mesh's convex hull vertices
  # (mesh frame = geom frame, MuJoCo's float32 values) in ascending mesh_vert index order,
  # padded to the largest hull count by repeating the first hull vertex (harmless for
  # support functions); nhullmax = 0 if nmesh = 0

  # ---- mesh polygons (compiled by mjcf/meshpoly.py, MuJoCo's mjCMesh::MakePolygons) ----
  # The flat sides of each mesh's convex hull: hull triangles whose normals round to the same
  # direction (0.01 rad bins) merged into polygons, one per connected patch. Only meshes
  # with a hull graph (mesh_graphadr >= 0) have polygons; the others have mesh_polynum = 0
  # and empty vertex maps. Vertex ids are local to the mesh (add mesh_vertadr), polygon ids
  # local to the mesh (add mesh_polyadr); the *adr fields are global addresses. Same
  # polygons, order, vertex paths and maps as MuJoCo.
  nmeshpoly: int = static()  # polygons, all meshes
  nmeshpolyvert: int = static()  # polygon vertices (sum of mesh_polyvertnum)
  nmeshpolymap: int = static()  # vertex -> polygon entries (sum of mesh_polymapnum)
  npolygonmax: int = static()  # most vertices in one polygon (0 if none)
  mesh_polynum: np.ndarray = static()  # (nmesh,) int32  polygons of the mesh
  mesh_polyadr: np.ndarray = static()  # (nmesh,) int32  first polygon (row of mesh_polynormal)
  mesh_polynormal: np.ndarray = static()  # (nmeshpoly, 3) float64  outward unit normal, mesh
  # frame (Newell's normal of the vertex path)
  mesh_polyvertadr: np.ndarray = static()  # (nmeshpoly,) int32  first entry in mesh_polyvert
  mesh_polyvertnum: np.ndarray = static()  # (nmeshpoly,) int32  vertices of the polygon
  mesh_polyvert: np.ndarray = static()  # (nmeshpolyvert,) int32  each polygon's vertex ids
  # (local to the mesh), a closed path counter-clockwise seen from outside (along the normal)
  mesh_polymapadr: np.ndarray = static()  # (nmeshvert,) int32  first entry in mesh_polymap
  mesh_polymapnum: np.ndarray = static()  # (nmeshvert,) int32  polygons the vertex is on
  mesh_polymap: np.ndarray = static()  # (nmeshpolymap,) int32  polygon ids (local to the
  # mesh) per vertex, ascending

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
  name_tendonadr: np.ndarray = static()  # (ntendon,) int32
  name_keyadr: np.ndarray = static()  # (nkey,) int32
  name_actuatoradr: np.ndarray = static()  # (nactuator,) int32
  name_pairadr: np.ndarray = static()  # (npair,) int32  in sorted pair order
  name_excludeadr: np.ndarray = static()  # (nexclude,) int32  in sorted exclude order

  # ---- jaxmj additions ----
  body_depth: np.ndarray = static()  # (nbody,) int32  tree depth, world = 0
  dof_depth: np.ndarray = static()  # (nv,) int32  depth in the dof tree, root dof = 0
  dof_ancestor: np.ndarray = static()  # (nv, nv) bool  [i, j]: j is i or an ancestor of i
  dof_hasfrictionloss: np.ndarray = static()  # (nv,) bool  compiled frictionloss > 0: the
  # dofs that own a friction-loss row (rows are fixed at compile time; edits to the leaf
  # dof_frictionloss change the force, not which rows exist)
  tendon_hasfrictionloss: np.ndarray = static()  # (ntendon,) bool  compiled frictionloss
  # > 0: the tendons that own a friction-loss row (as dof_hasfrictionloss)
  tendon_hasarmature: np.ndarray = static()  # (ntendon,) bool  compiled tendon armature or
  # actuator armature reflected on it is nonzero: the tendons whose armature enters qM and
  # qfrc_bias (as dof_hasfrictionloss, edits of the leaves change values, not this set)
  jnt_limitboth: np.ndarray = static()  # (njnt,) bool  limited hinge/slide whose compiled
  # range is narrower than 2 * margin: it owns a lower and an upper limit row, as MuJoCo
  # makes both when both ends are within the margin (other joints: one row, nearer end)
  tendon_limitboth: np.ndarray = static()  # (ntendon,) bool  the same for tendon limits
  wrap_sideid: np.ndarray = static()  # (nwrap,) int32  side site of a geom wrap, else -1
  geom_hfieldwindow: np.ndarray = static()  # (ngeom, 2) int32  jaxmj: (columns, rows)
  # of heightfield cells the geom's bounding box can span on any heightfield, from the
  # compiled geom_rbound and hfield_size: it sizes the heightfield contact slots, so a geom
  # grown or a heightfield shrunk at run time past these values misses cells
  sensor_hfieldwindow: np.ndarray = static()  # (nsensor, 2) int32  jaxmj: (columns, rows)
  # of heightfield cells a collision sensor's geom can span on the heightfield it is measured
  # against, looking as far as the compiled sensor_cutoff (as geom_hfieldwindow; zeros for
  # other sensors)
  unsupported: tuple = static()  # ((feature, DisableBit mask that turns it off), ...)
  model_name: str = static()
  path: str = static()  # file the model was read from, "" for a string
  source: ModelSource | None = static(default=None)  # the MJCF and assets compiled, for
  # MuJoCo to compile again (jaxmj/interop.py); None for a Model built without one
  # ((field, shape), ...) of every array field as compiled ('opt.gravity' for Option's), so
  # that a public function refuses a field replaced by one of another shape by its name
  # (datacheck.py); () for a Model built without the compiler
  leaf_shapes: tuple = static(default=())

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

  @classmethod
  def from_mjcf(cls, root) -> Model:
    """Compiles a `jaxmj.mjcf` object model (with its attached models) without writing XML;
    the same Model as compiling `root.to_xml_string()` with `root.get_assets()`."""
    from jaxmj.mjcf.compose import write

    source = ModelSource.of(xml=root.to_xml_string(), assets=root.get_assets())
    return write.compile_model(root.root).replace(source=source)

  @classmethod
  def from_mujoco(cls, model, assets: dict[str, bytes] | None = None) -> Model:
    """The Model of a `mujoco.MjModel` or `mujoco.MjSpec`, values edited in the MjModel
    included (jaxmj/interop.py; needs the `mujoco` package)."""
    from jaxmj.interop import from_mujoco

    return from_mujoco(model, assets)
