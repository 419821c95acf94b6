"""Data (mjData) and Contact (mjContact): the state and everything computed from it.

Every field is a jax.Array leaf with a shape fixed by the Model (contact slots and
constraint rows included), so a Data batches under `vmap` and differentiates under `grad`.
Frames as in jaxmj/types.py: "global" is the world frame, "com frame" global orientation
centred at the subtree centre of mass of the body's tree root; spatial vectors are
[angular(3), linear(3)].
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.pytree import pytree_dataclass, static


@pytree_dataclass(batch_ref=("dist", 1))
class Contact:
  """mjContact for a fixed number of contact slots `ncon` (static for a model).

  Every candidate geom pair owns a fixed number of slots, whether or not it touches now;
  `active` says which slots have constraint rows (dist < includemargin; MuJoCo 4.0 also
  lists contacts out to margin + gap without rows). Inactive slots carry
  finite placeholder values and produce no constraint force.

  Under the custom numeric max_contact_points or <size nconmax> (collision/plan.py) the
  slots are the deepest candidates per condim, so which geoms a slot holds changes with the
  state: the static geom1, geom2 are None and the leaves `geom` and `rank` hold them and
  their order. `geoms()` gives either.
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
  geom: jax.Array | None = None  # (ncon, 2) int32  geom1, geom2 under max_contact_points
  # (ncon,) int32 under a cap: the slot's contact's place in mj_collision's order (plan.py's
  # contact_rank of the uncapped slot it holds), which PGS and noslip sweep by
  rank: jax.Array | None = None

  def geoms(self) -> tuple:
    """(geom1, geom2) (ncon,) of every slot: static numpy arrays, or traced int32 arrays
    under max_contact_points."""
    if self.geom is None:
      return self.geom1, self.geom2
    return self.geom[:, 0], self.geom[:, 1]

  def bodies(self, geom_bodyid: np.ndarray) -> tuple:
    """(body1, body2) (ncon,) of every slot, static or traced as `geoms()`."""
    g1, g2 = self.geoms()
    if self.geom is None:
      return geom_bodyid[g1], geom_bodyid[g2]
    table = jax.numpy.asarray(geom_bodyid)
    return table[g1], table[g2]


@pytree_dataclass(batch_ref=("time", 0))
class Data:
  """mjData: state, controls and everything computed from them. Every field is a leaf but
  those without entries for the model (`act` with na = 0, ...: rebuilt from the aux data
  with the batch axes of `time`, see pytree.py).

  Fields that mjData stores sparsely are dense here (`qM`, `qLD`); `warning` counts per
  mjtWarning how often a step found the state invalid (NaN or beyond 1e10).
  """

  # ---- state ----
  time: jax.Array  # ()
  qpos: jax.Array  # (nq,)
  qvel: jax.Array  # (nv,)
  act: jax.Array  # (na,)
  plastic: jax.Array  # (nplastic,)  spring references moved by plastic yield: a hinge's or
  # slide's qpos_spring, a ball's quaternion, a tendon's (lower, upper) rest range
  eq_active: jax.Array  # (neq,) bool  equality constraints switched on (from eq_active0)
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
  cam_xpos: jax.Array  # (ncam, 3)  camera position (jaxmj/smooth/camlight.py)
  cam_xmat: jax.Array  # (ncam, 3, 3)  camera orientation: looks along -z, y up
  light_xpos: jax.Array  # (nlight, 3)
  light_xdir: jax.Array  # (nlight, 3)  unit direction the light shines along
  # ---- com-based quantities (com frame) ----
  subtree_com: jax.Array  # (nbody, 3)  global frame
  cinert: jax.Array  # (nbody, 10)  I(xx,yy,zz,xy,xz,yz), mass*offset(3), mass
  crb: jax.Array  # (nbody, 10)  composite rigid body inertia, same layout
  cdof: jax.Array  # (nv, 6)  motion axis of each dof
  cvel: jax.Array  # (nbody, 6)  body velocity
  cdof_dot: jax.Array  # (nv, 6)  time derivative of cdof
  # ---- tendons (jaxmj/smooth/tendon.py; ten_J dense where MuJoCo's may be sparse) ----
  ten_wrapadr: jax.Array  # (ntendon,) int32  first wrap_obj / wrap_xpos entry of the path
  ten_wrapnum: jax.Array  # (ntendon,) int32  path points (depends on which wraps touch)
  ten_J: jax.Array  # (ntendon, nv)  d length / d qpos, per dof (fwd_position)
  ten_length: jax.Array  # (ntendon,)  (fwd_position)
  ten_velocity: jax.Array  # (ntendon,)  ten_J @ qvel (fwd_velocity)
  wrap_obj: jax.Array  # (nwrap, 2) int32  per path point: -2 pulley, -1 site, else geom id
  wrap_xpos: jax.Array  # (nwrap, 6)  path points, global frame, 3 per entry (for drawing)
  # ---- actuators (jaxmj/actuation/driver.py; moment dense where MuJoCo's is sparse) ----
  actuator_length: jax.Array  # (nout,)  transmission length (fwd_position)
  actuator_moment: jax.Array  # (nout, nv)  d length / d qpos, per dof (fwd_position); MuJoCo
  # stores the nonzeros only (nJmom)
  actuator_velocity: jax.Array  # (nout,)  moment @ qvel (fwd_velocity)
  actuator_force: jax.Array  # (nout,)  force after clamping (fwd_actuation)
  # ---- mass matrix ----
  qM: jax.Array  # (nv, nv)  joint-space inertia, armature included (dense mj_fullM)
  qLD: jax.Array  # (nv, nv)  M = L' D L: D on the diagonal, L strictly below it
  qLDiagInv: jax.Array  # (nv,)  1 / D
  # ---- forces (generalized) ----
  qfrc_bias: jax.Array  # (nv,)  Coriolis, centrifugal and gravitational forces
  qfrc_spring: jax.Array  # (nv,)
  qfrc_damper: jax.Array  # (nv,)
  qfrc_passive: jax.Array  # (nv,)  spring + damper + gravcomp + fluid (+ tendon terms)
  qfrc_gravcomp: jax.Array  # (nv,)  gravity compensation of bodies with gravcomp
  qfrc_fluid: jax.Array  # (nv,)  fluid forces (inertia-box or ellipsoid model)
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
  solver_niter: jax.Array  # (max(1, ntree),) int32  iterations the solver ran, per island
  # (mjData's has mjNISLAND entries; entry 0 only with islands disabled)
  solver_fwdinv: jax.Array  # (2,)  fwdinv flag: |qfrc_constraint forward - inverse|,
  # |applied forces - qfrc_inverse| (jaxmj/dynamics/fwdinv.py)
  solver_improvement: jax.Array  # (max(1, ntree),)  jaxmj: per island, mjData.solver[island,
  # niter-1].improvement, the scaled cost decrease of the solver's last iteration
  solver_gradient: jax.Array  # (max(1, ntree),)  jaxmj: per island, mjData.solver[island,
  # niter-1].gradient (0 for PGS)
  # ---- constraint islands (jaxmj/solver/island.py; padded to max(1, ntree) islands) ----
  nisland: jax.Array  # () int32  islands found (0 with islands disabled)
  tree_island: jax.Array  # (ntree,) int32  island of each tree, -1 if no active row touches it
  dof_island: jax.Array  # (nv,) int32  island of each dof, -1 if unconstrained
  efc_island: jax.Array  # (nefc,) int32  island of each row, -1 for inactive rows
  island_ntree: jax.Array  # (max(1, ntree),) int32  trees per island (0 past nisland)
  island_nv: jax.Array  # (max(1, ntree),) int32  dofs per island
  island_nefc: jax.Array  # (max(1, ntree),) int32  active rows per island
  island_ne: jax.Array  # (max(1, ntree),) int32  equality rows per island
  island_nf: jax.Array  # (max(1, ntree),) int32  friction-loss rows per island
  # ---- sensors and mj_rnePostConstraint (com frame, [angular, linear]) ----
  sensordata: jax.Array  # (nsensordata,)  every sensor's output at sensor_adr
  history: jax.Array  # (nhistory,)  state: ring buffers of past ctrl and sensor samples, at
  # actuator_historyadr / sensor_historyadr: [user slot, newest index, times, values]
  cacc: jax.Array  # (nbody, 6)  body acceleration (gravity as an upward world acceleration)
  cfrc_int: jax.Array  # (nbody, 6)  interaction force from the parent body
  cfrc_ext: jax.Array  # (nbody, 6)  external force: xfrc_applied and contacts
  # ---- diagnostics ----
  energy: jax.Array  # (2,)  potential, kinetic (with the energy flag)
  warning: jax.Array  # (NWARNING,) int32  counts per Warning


def count_warning(warning: jax.Array, code, flag: jax.Array) -> jax.Array:
  """Data.warning with `flag` (bool) added at `code` (a Warning, or traced), elementwise: it
  fuses with the stage's own kernels, where a scatter-add was a GPU kernel and a copy of its
  own."""
  at = (np.arange(len(warning)) if isinstance(code, (int, np.integer))
        else jnp.arange(len(warning)))
  return warning + jnp.where(at == code, flag, False).astype(warning.dtype)
