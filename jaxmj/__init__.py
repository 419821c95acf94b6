"""jaxmj: MuJoCo's physics in JAX.

    m = jaxmj.Model.from_xml_path("models/humanoid.xml")
    d = jaxmj.make_data(m)
    d = jax.jit(jaxmj.step)(m, d)
"""

from types import ModuleType as _ModuleType

from jaxmj import collision
from jaxmj.actuation.driver import fwd_actuation
from jaxmj.actuation.history import (
  init_ctrl_history,
  init_sensor_history,
  read_ctrl,
  read_sensor,
)
from jaxmj.bind import bind
from jaxmj.camera.image import camera_image
from jaxmj.collision.ray import multi_ray, ray
from jaxmj.constraint.contact_force import contact_force, contact_forces
from jaxmj.constraint.extforce import rne_post_constraint
from jaxmj.constraint.support import (
  is_dual,
  is_pyramidal,
  is_sparse,
  mul_jac_t_vec,
  mul_jac_vec,
)
from jaxmj.datacheck import checks_data
from jaxmj.distance import geom_distance
from jaxmj.dynamics.forward import (
  euler,
  forward,
  fwd_acceleration,
  fwd_position,
  fwd_velocity,
  implicit,
  rollout,
  rungekutta4,
  step,
  step1,
  step2,
)
from jaxmj.dynamics.integrator import deriv_smooth_vel
from jaxmj.dynamics.inverse import inverse
from jaxmj.dynamics.inverse_jacobians import InverseJacobians, inverse_jacobians
from jaxmj.dynamics.set_const import set_const, set_total_mass, statistic, total_mass
from jaxmj.dynamics.stages import pipeline_function, traced_once, traced_once_by_id
from jaxmj.dynamics.transition import transition_jacobians
from jaxmj.interop import data_from_mujoco, to_mujoco
from jaxmj.io import make_data, reset
from jaxmj.mjcf.errors import MJCFError
from jaxmj.names import id2name, name2id, object_count
from jaxmj.rendering import render
from jaxmj.sensor.driver import sensor_acc, sensor_pos, sensor_vel
from jaxmj.sensor.velocity import subtree_vel
from jaxmj.smooth.energy import energy_pos, energy_vel
from jaxmj.smooth.rne import xfrc_accumulate
from jaxmj.smooth.support import (
  add_m,
  angmom_mat,
  apply_ft,
  differentiate_pos,
  full_m,
  integrate_pos,
  jac,
  jac_body,
  jac_body_com,
  jac_dot,
  jac_geom,
  jac_point_axis,
  jac_site,
  jac_subtree_com,
  local2global,
  mul_m,
  mul_m2,
  normalize_quat,
  object_acceleration,
  object_velocity,
  solve_m,
  solve_m2,
)
from jaxmj.state import (
  State,
  copy_state,
  extract_state,
  get_state,
  reset_where,
  set_state,
  state_size,
)
from jaxmj.trace_cache import enable_compilation_cache
from jaxmj.tracing_gc import relaxes_gc
from jaxmj.types import (
  Cone,
  Data,
  DisableBit,
  EnableBit,
  EqType,
  GeomType,
  Integrator,
  JointType,
  Model,
  ObjType,
  Option,
  SensorType,
  Solver,
  Warning,
)

# The public functions taking (Model, Data) check the Data's field shapes against the Model
# when traced (datacheck.py; rollout checks inside its own jit); inside the runtime the
# unchecked functions call each other, so a trace checks once. Every public function that
# traces runs with the garbage collector's thresholds raised (tracing_gc.py: 10-20% of a
# trace went to collections).
(forward, fwd_acceleration, fwd_actuation, fwd_position, fwd_velocity, step, step1,
 step2, euler, implicit, rungekutta4, inverse, rne_post_constraint, sensor_acc, sensor_pos,
 sensor_vel, energy_pos, energy_vel, get_state, set_state, reset_where, contact_force,
 contact_forces, full_m, jac, jac_body, jac_body_com, jac_dot, jac_geom, jac_site,
 jac_subtree_com, mul_m, object_acceleration, object_velocity, solve_m, ray, multi_ray) = (
  relaxes_gc(checks_data(fn)) for fn in (
  forward, fwd_acceleration, fwd_actuation, fwd_position, fwd_velocity, step, step1,
  step2, euler, implicit, rungekutta4, inverse, rne_post_constraint, sensor_acc, sensor_pos,
  sensor_vel, energy_pos, energy_vel, get_state, set_state, reset_where, contact_force,
  contact_forces, full_m, jac, jac_body, jac_body_com, jac_dot, jac_geom, jac_site,
  jac_subtree_com, mul_m, object_acceleration, object_velocity, solve_m, ray, multi_ray))
# The pipeline's (Model, Data) -> Data functions are jitted (stages.traced_once): Brax's PPO
# traces an environment's reset and step in its training, evaluation and reset programs, and
# `jaxmj train` traced forward 6 times and step 8 times a run; now once each. Outside any
# trace a call runs the compiled function, not thousands of single operations. The Data check
# and the relaxed collector run inside, when traced. `jax.clear_caches()` drops the traces.
(forward, fwd_acceleration, fwd_actuation, fwd_position, fwd_velocity, step, step1, step2,
 euler, implicit, rungekutta4, inverse, rne_post_constraint, sensor_acc, sensor_pos,
 sensor_vel) = (
  traced_once(fn) for fn in (
  forward, fwd_acceleration, fwd_actuation, fwd_position, fwd_velocity, step, step1, step2,
  euler, implicit, rungekutta4, inverse, rne_post_constraint, sensor_acc, sensor_pos, sensor_vel))
# MuJoCo's pipeline functions one at a time (MJX's names), checked and jitted the same way
(kinematics, com_pos, camlight, tendon, crb, factor_m, transmission, com_vel, passive, rne,
 make_constraint, solve) = (traced_once(relaxes_gc(checks_data(pipeline_function(name))))
                            for name in (
  "kinematics", "com_pos", "camlight", "tendon", "crb", "factor_m", "transmission", "com_vel",
  "passive", "rne", "make_constraint", "solve"))
# mjx.collision's name is jaxmj's collision subpackage: the package is also callable,
# jaxmj.collision(m, d) (mj_collision: contacts from the geom frames d holds; differentiated
# in geom_xpos and geom_xmat as they come), so MJX code runs as written.
_collision_stage = traced_once(relaxes_gc(checks_data(pipeline_function("collision"))))


class _CallableCollision(_ModuleType):
  def __call__(self, m: Model, d: Data) -> Data:
    return _collision_stage(m, d)


collision.__class__ = _CallableCollision
# MJX's names for what jaxmj has under MuJoCo's: mjx.rne_postconstraint, mjx.xfrc_accumulate
# (mj_xfrcAccumulate: the (nv,) generalized force of xfrc_applied), mjx.deriv_smooth_vel
rne_postconstraint = rne_post_constraint
xfrc_accumulate = traced_once(relaxes_gc(checks_data(xfrc_accumulate)))
deriv_smooth_vel = traced_once(relaxes_gc(checks_data(deriv_smooth_vel)),
                               static_argnames=("flg_bias",))
# utilities a notebook calls outside jit, jitted the same way (humanoid_floor, operation by
# operation: solve_m 41 ms a call, energy_pos and integrate_pos 15; ray and multi_ray are
# jits of their own, with their static options normalized: collision/ray.py)
(full_m, mul_m, solve_m, energy_pos, energy_vel, contact_forces, integrate_pos,
 differentiate_pos, normalize_quat) = (traced_once(fn) for fn in (
  full_m, mul_m, solve_m, energy_pos, energy_vel, contact_forces, integrate_pos,
  differentiate_pos, normalize_quat))
subtree_vel = traced_once(relaxes_gc(checks_data(subtree_vel)))
(mul_m2, solve_m2, add_m, mul_jac_vec, mul_jac_t_vec) = (
  traced_once(relaxes_gc(checks_data(fn)))
  for fn in (mul_m2, solve_m2, add_m, mul_jac_vec, mul_jac_t_vec))
# a buffer's size (by the object's id) and the interpolation shape the read: host values
read_ctrl, read_sensor = (traced_once(relaxes_gc(checks_data(fn)),
                                      static_argnames=("id", "interp"))
                          for fn in (read_ctrl, read_sensor))
# not jitted: a host array of times is checked for order, as MuJoCo does, before use
init_ctrl_history, init_sensor_history = (relaxes_gc(checks_data(fn))
                                          for fn in (init_ctrl_history, init_sensor_history))
# and those taking an object's id, traced (stages.py), so that a notebook's loop over ids
# (inverse kinematics with jac_site: 7.5 ms a call operation by operation) runs compiled
_BODIES, _GEOMS, _SITES = (lambda a, t=t: object_count(a["m"], t)
                           for t in (ObjType.BODY, ObjType.GEOM, ObjType.SITE))
jac, jac_dot, jac_body, jac_body_com, jac_subtree_com = (
  traced_once_by_id(fn, {"body": _BODIES})
  for fn in (jac, jac_dot, jac_body, jac_body_com, jac_subtree_com))
jac_geom = traced_once_by_id(jac_geom, {"geom": _GEOMS})
jac_site = traced_once_by_id(jac_site, {"site": _SITES})
apply_ft, jac_point_axis, angmom_mat = (
  traced_once_by_id(relaxes_gc(checks_data(fn)), {"body": _BODIES})
  for fn in (apply_ft, jac_point_axis, angmom_mat))
object_velocity, object_acceleration = (
  traced_once_by_id(fn, {"objid": lambda a: object_count(a["m"], a["objtype"])},
                    ("objtype", "local"))
  for fn in (object_velocity, object_acceleration))
contact_force = traced_once_by_id(contact_force, {"i": lambda a: a["d"].contact.dist.shape[-1]})
get_state, set_state = (traced_once(fn, static_argnames=("sig",)) for fn in (get_state, set_state))
copy_state = checks_data(checks_data(copy_state), argnum=2)
rollout, camera_image = map(relaxes_gc, (rollout, camera_image))
# outside jit these ran operation by operation (cartpole: transition_jacobians 4 s a call,
# set_const 0.12 s after a 14 s first call); jitted, and their traces shared, as above
transition_jacobians = traced_once(relaxes_gc(transition_jacobians),
                                   static_argnames=("chunk", "block"))
inverse_jacobians = traced_once(relaxes_gc(checks_data(inverse_jacobians)),
                                static_argnames=("flg_actuation",))
set_const = traced_once(relaxes_gc(set_const), static_argnames=("from_geoms",))
statistic = traced_once(relaxes_gc(statistic))
total_mass, set_total_mass = (traced_once(fn) for fn in (total_mass, set_total_mass))

__version__ = "0.1.0"

__all__ = [
  "Cone", "Data", "DisableBit", "EnableBit", "GeomType", "Integrator", "JointType", "MJCFError",
  "Model", "ObjType", "Option", "Solver", "Warning", "forward", "fwd_acceleration",
  "fwd_actuation", "fwd_position", "fwd_velocity", "id2name", "make_data", "name2id", "reset",
  "rollout", "step",
  # MuJoCo's pipeline functions one at a time
  "camlight", "collision", "com_pos", "com_vel", "crb", "factor_m", "kinematics",
  "make_constraint",
  "passive", "rne", "solve", "tendon", "transmission",
  # MJX's names for MuJoCo functions listed elsewhere here
  "deriv_smooth_vel", "rne_postconstraint", "xfrc_accumulate",
  # state
  "State", "copy_state", "extract_state", "get_state", "reset_where", "set_state",
  "state_size",
  # utilities (engine_support)
  "angmom_mat", "apply_ft", "bind", "contact_force", "contact_forces", "differentiate_pos",
  "energy_pos", "energy_vel",
  "full_m", "integrate_pos", "jac", "jac_body", "jac_body_com", "jac_dot", "jac_geom",
  "jac_point_axis", "jac_site", "jac_subtree_com", "local2global", "mul_m", "normalize_quat",
  "object_acceleration", "object_velocity", "solve_m", "subtree_vel",
  # the inertia's square root and products (mj_mulM2, mj_solveM2, mj_addM)
  "add_m", "mul_m2", "solve_m2",
  # the constraint Jacobian's products and the model's kinds (engine_core_constraint)
  "is_dual", "is_pyramidal", "is_sparse", "mul_jac_t_vec", "mul_jac_vec",
  # control and sensor histories (mj_readCtrl, mj_readSensor, mj_init*History)
  "init_ctrl_history", "init_sensor_history", "read_ctrl", "read_sensor",
  # equality, integrators (MuJoCo's mj_Euler, mj_implicit, mj_RungeKutta), inverse dynamics
  "EqType", "euler", "implicit", "inverse", "rungekutta4", "step1", "step2",
  # sensors and rays
  "SensorType", "geom_distance", "multi_ray", "ray", "rne_post_constraint", "sensor_acc",
  "sensor_pos", "sensor_vel",
  # derivatives
  "InverseJacobians", "inverse_jacobians", "set_const", "set_total_mass", "statistic",
  "total_mass", "transition_jacobians",
  # MuJoCo interop and rendering (need the mujoco package: jaxmj[mujoco], jaxmj[render])
  "data_from_mujoco", "render", "to_mujoco",
  # the ray-cast camera (pure JAX)
  "camera_image",
  # XLA's persistent compilation cache, bounded (what every `jaxmj` command turns on)
  "enable_compilation_cache",
]
