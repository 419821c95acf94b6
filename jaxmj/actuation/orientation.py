"""SO3 servos (<orientation>, MuJoCo 4.0): a rotation driven towards a target orientation.

Each so3 actuator writes 3 outputs. Its transmission (trntype SO3) is a ball joint
(trnid = joint, -1) or a site relative to a reference site (trnid = site, refsite). As
mujoco 4.0.0 computes them, with q the current rotation (the joint's normalized quaternion,
or qr^-1 qs of the refsite and site frames):

  length   = log(q), the rotation vector                                      (3,)
  moment   = joint: identity on the ball's dofs; site: S' (jacr_site - jacr_refsite),
             S the site's rotation matrix                                      (3, nv)
  velocity = moment @ qvel                                                     (3,)
  force    = kp log(q^-1 t) + biasprm[2] velocity + biasprm[0]                 (3,)

with kp = gainprm[0] = -biasprm[1], biasprm[2] = -kv. The target t is exp of 3 controls
(input expmap, the default), the normalized quaternion of 4 controls (input quat), or exp of
the 3 activations of an integrator (act_dot = the 3 controls; actrange clamps each,
actearly reads next step's). A forcelimited actuator caps the norm of the force at
forcerange[1]. gear, armature and damping are stored but unused, as in MuJoCo. Compiled by
jaxmj/mjcf/compile/orientation.py; jaxmj.actuation calls `transmission`, `act_dot` and `forces`.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.scan import cached_plan
from jaxmj.smooth.jac import point_jacobians
from jaxmj.types import Data, DynType, Model, TrnType

NOUT = 3
QUAT = 2  # actuator_ctrlspec of input quat (4 controls); expmap is 1


@cached_plan
def so3_ids(m) -> np.ndarray:
  """(n,) ids of the so3 actuators."""
  return np.flatnonzero(np.asarray(m.actuator_trntype) == TrnType.SO3)


@cached_plan
def _plan(m) -> dict:
  """Positions (into so3_ids) of the joint and site actuators and of each target source,
  with the static rows they read."""
  ids = so3_ids(m)
  tid, ref = m.actuator_trnid[ids, 0], m.actuator_trnid[ids, 1]
  integ = m.actuator_dyntype[ids] == DynType.INTEGRATOR
  quat = ~integ & (m.actuator_ctrlspec[ids] == QUAT)
  jnt, site = np.flatnonzero(ref < 0), np.flatnonzero(ref >= 0)
  ctrl = m.actuator_ctrladr[ids][:, None]
  return {
    "jnt": jnt, "qadr": m.jnt_qposadr[tid[jnt]], "dadr": m.jnt_dofadr[tid[jnt]],
    "site": site, "s": tid[site], "r": ref[site],
    "expmap": np.flatnonzero(~integ & ~quat), "quat": np.flatnonzero(quat),
    "integ": np.flatnonzero(integ),
    "expmap_rows": (ctrl + np.arange(NOUT))[~integ & ~quat],
    "quat_rows": (ctrl + np.arange(4))[quat],
    "act_rows": (m.actuator_actadr[ids][:, None] + np.arange(NOUT))[integ],
    "ctrl_rows": (ctrl + np.arange(NOUT))[integ],
  }


def rows(m: Model, ids: np.ndarray, first: np.ndarray) -> np.ndarray:
  """(n * 3,) the output (first = outadr) or first 3 control (first = ctrladr) rows."""
  return (np.asarray(first)[ids][:, None] + np.arange(NOUT)).ravel()


def _site_quat(m: Model, d: Data, site: np.ndarray) -> jnp.ndarray:
  return math.quat_mul(d.xquat[m.site_bodyid[site]], m.site_quat[site])


def _current(m: Model, d: Data) -> jnp.ndarray:
  """(n, 4) the current rotation of each so3 actuator's transmission."""
  p = _plan(m)
  quat = jnp.zeros((len(so3_ids(m)), 4), d.qpos.dtype)
  if len(p["jnt"]):
    q = math.normalize_quat(d.qpos[p["qadr"][:, None] + np.arange(4)])
    quat = quat.at[p["jnt"]].set(q)
  if len(p["site"]):
    rel = math.quat_mul(math.quat_conj(_site_quat(m, d, p["r"])), _site_quat(m, d, p["s"]))
    quat = quat.at[p["site"]].set(rel)
  return quat


def transmission(m: Model, d: Data, grp) -> tuple:
  """(length (n * 3,), moment (n * 3, nv)) of the so3 actuators grp = (ids, trnid, trnid2)
  (all of them, in id order). Reads qpos, xquat, site frames, cdof, subtree_com."""
  p = _plan(m)
  n = len(grp[0])
  length = math.quat_to_axis_angle_vec(_current(m, d))
  moment = np.zeros((n, NOUT, m.nv))
  rows3 = np.arange(NOUT)
  moment[p["jnt"][:, None], rows3, p["dadr"][:, None] + rows3] = 1.0
  moment = jnp.asarray(moment)
  if len(p["site"]):
    s, r = p["s"], p["r"]
    _, jac = point_jacobians(m, d, m.site_bodyid[s], d.site_xpos[s])
    _, rjac = point_jacobians(m, d, m.site_bodyid[r], d.site_xpos[r])
    moment = moment.at[p["site"]].set(jnp.einsum("nji,njv->niv", d.site_xmat[s], jac - rjac))
  return length.reshape(-1), moment.reshape(n * NOUT, m.nv)


def act_dot(m: Model, controls: jnp.ndarray, rate: jnp.ndarray) -> jnp.ndarray:
  """rate (na,) with the so3 integrators' 3 activation rates set to their 3 controls."""
  p = _plan(m)
  if not len(p["integ"]):
    return rate
  return rate.at[p["act_rows"].ravel()].set(controls[p["ctrl_rows"].ravel()])


def _targets(m: Model, controls: jnp.ndarray, act: jnp.ndarray) -> jnp.ndarray:
  """(n, 4) target quaternions: exp(controls), normalized controls, or exp(activations)."""
  p = _plan(m)
  ident = jnp.broadcast_to(jnp.array([1.0, 0, 0, 0], controls.dtype), (len(so3_ids(m)), 4))
  target = ident
  for pos, vec in ((p["expmap"], controls[p["expmap_rows"]]),
                   (p["integ"], act[p["act_rows"]])):
    if len(pos):
      target = target.at[pos].set(math.quat_integrate(ident[pos], vec, 1.0))
  if len(p["quat"]):
    target = target.at[p["quat"]].set(math.normalize_quat(controls[p["quat_rows"]]))
  return target


def forces(m: Model, d: Data, controls: jnp.ndarray, act: jnp.ndarray,
           limited: np.ndarray) -> jnp.ndarray:
  """(n * 3,) forces of the so3 actuators from the clamped controls (nu,) and the
  activations the gains read (na,: act, or next step's for actearly).

  limited: (nactuator,) bool, forcelimited. Reads qpos or site frames, actuator_velocity."""
  ids = so3_ids(m)
  err = math.quat_sub(_targets(m, controls, act), _current(m, d))
  vel = d.actuator_velocity[rows(m, ids, m.actuator_outadr)].reshape(-1, NOUT)
  gain, bias = m.actuator_gainprm[ids], m.actuator_biasprm[ids]
  force = gain[:, :1] * err + bias[:, 2:3] * vel + bias[:, :1]
  cap = m.actuator_forcerange[ids, 1:2]
  norm = math.safe_norm(force, keepdims=True)
  capped = force * (cap / jnp.maximum(norm, 1e-15))
  force = jnp.where(limited[ids][:, None] & (norm > cap), capped, force)
  return force.reshape(-1)

