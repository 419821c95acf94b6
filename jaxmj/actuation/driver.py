"""Actuation: transmissions, actuator velocities, forces and activation dynamics.

`transmission` (mj_transmission, fwd_position) gives actuator_length (nout,) and the dense
actuator_moment (nout, nv) (MuJoCo stores it sparse); `velocity` (fwd_velocity) gives
actuator_velocity = moment @ qvel; `fwd_actuation` (mj_fwdActuation) clamps ctrl (nu,),
computes act_dot, actuator_force (nout,) and qfrc_actuator; `next_act` is mj_advance's
activation update.

MuJoCo 4.0 layout: actuator k reads the controls actuator_ctrladr[k] : + ctrlnum[k] and
writes the outputs actuator_outadr[k] : + outnum[k]. The code below computes one value per
actuator id and reaches its first output through outadr (`per_actuator`, `_gear`, the
scatter of the forces) and its first control through ctrladr; the multi-input PID reads its
other controls in motor.py, and so3 actuators (3 or 4 controls, 3 outputs, 3 activations as
integrators) are computed whole in orientation.py, their per-id placeholder values
overwritten.

Static structure decides everything that branches: actuators are grouped by transmission,
dynamics, gain and bias type with numpy, and each group is computed vectorized through a
table keyed by type.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.actuation import history, motor, orientation
from jaxmj.collision.driver import contact_gaps
from jaxmj.constants import MAXVAL, MINVAL
from jaxmj.data import count_warning
from jaxmj.scan import cached_plan
from jaxmj.smooth.jac import point_jacobians
from jaxmj.types import (
  BiasType,
  Data,
  DisableBit,
  DynType,
  GainType,
  JointType,
  Model,
  TrnType,
  Warning,
)

# ---------------------------------------------------------------- transmission


def _gear(m: Model, i: np.ndarray) -> jnp.ndarray:
  """(len(i), 6) gear of the actuators i (gear is per output)."""
  return m.actuator_gear[m.actuator_outadr[i]]


def _common_chain(m, site: int, ref: int, nv: int) -> np.ndarray:
  """(nv,) bool: the dof chain shared by two sites' bodies, which moves both alike."""
  def last_dof(s):
    b = m.body_weldid[m.site_bodyid[s]]
    return int(m.body_dofadr[b] + m.body_dofnum[b] - 1)

  out = np.zeros(nv, bool)
  a, b = last_dof(site), last_dof(ref)
  if a < 0 or b < 0:
    return out
  while a != b:
    if a < b:
      b = m.dof_parentid[b]
    else:
      a = m.dof_parentid[a]
    if a < 0 or b < 0:
      return out
  while a >= 0:
    out[a] = True
    a = m.dof_parentid[a]
  return out


@cached_plan
def _trn_plan(m) -> dict:
  """Actuator ids per transmission kind, with the static ids each kind needs."""
  groups: dict[str, list] = {k: [] for k in ("scalar", "ball", "free", "tendon", "site",
                                             "refsite", "slidercrank", "body", "so3")}
  for i, (trn, (tid, tid2)) in enumerate(zip(m.actuator_trntype, m.actuator_trnid)):
    if trn in (TrnType.JOINT, TrnType.JOINTINPARENT):
      kind = {JointType.FREE: "free", JointType.BALL: "ball"}.get(m.jnt_type[tid], "scalar")
      groups[kind].append((i, m.jnt_qposadr[tid], m.jnt_dofadr[tid],
                           trn == TrnType.JOINTINPARENT))
    elif trn == TrnType.TENDON:
      groups["tendon"].append((i, tid))
    elif trn == TrnType.SITE:
      groups["site" if tid2 < 0 else "refsite"].append((i, tid, tid2))
    elif trn == TrnType.SLIDERCRANK:
      groups["slidercrank"].append((i, tid, tid2))
    elif trn == TrnType.SO3:
      groups["so3"].append((i, tid, tid2))
    else:
      groups["body"].append((i, tid))
  out = {k: tuple(np.array(c) for c in zip(*v)) for k, v in groups.items() if v}
  if "refsite" in out:
    ids, site, ref = out["refsite"]
    common = np.stack([_common_chain(m, s, r, m.nv) for s, r in zip(site, ref)])
    out["refsite"] = (ids, site, ref, common)
  return out


def _scalar(m: Model, d: Data, grp) -> tuple:
  i, qadr, dadr, _ = grp
  gear = _gear(m, i)[:, 0]
  at = np.zeros((len(i), m.nv), bool)  # a select: a scatter was a GPU kernel of its own
  at[np.arange(len(i)), dadr] = True
  moment = jnp.where(at, gear[:, None], 0.0).astype(jnp.zeros(0).dtype)
  return d.qpos[qadr] * gear, moment


def _ball(m: Model, d: Data, grp) -> tuple:
  i, qadr, dadr, inparent = grp
  quat = math.normalize_quat(d.qpos[qadr[:, None] + np.arange(4)])
  axis = math.quat_to_axis_angle_vec(quat)
  gear = _gear(m, i)[:, :3]
  gear = jnp.where(inparent[:, None], math.rot_vec_quat(gear, math.quat_conj(quat)), gear)
  rows = np.arange(len(i))[:, None]
  moment = jnp.zeros((len(i), m.nv)).at[rows, dadr[:, None] + np.arange(3)].set(gear)
  return jnp.sum(axis * gear, axis=-1), moment


def _free(m: Model, d: Data, grp) -> tuple:
  i, qadr, dadr, inparent = grp
  quat = math.normalize_quat(d.qpos[qadr[:, None] + 3 + np.arange(4)])
  rot = _gear(m, i)[:, 3:]
  rot = jnp.where(inparent[:, None], math.rot_vec_quat(rot, math.quat_conj(quat)), rot)
  gear = jnp.concatenate([_gear(m, i)[:, :3], rot], axis=-1)
  rows = np.arange(len(i))[:, None]
  moment = jnp.zeros((len(i), m.nv)).at[rows, dadr[:, None] + np.arange(6)].set(gear)
  return jnp.zeros(len(i)), moment


def _tendon(m: Model, d: Data, grp) -> tuple:
  i, ten = grp
  gear = _gear(m, i)[:, 0]
  return d.ten_length[ten] * gear, d.ten_J[ten] * gear[:, None]


def _site(m: Model, d: Data, grp) -> tuple:
  i, site, _ = grp
  mat = d.site_xmat[site]
  jacp, jacr = point_jacobians(m, d, m.site_bodyid[site], d.site_xpos[site])
  gear = _gear(m, i)
  wt = jnp.einsum("nij,nj->ni", mat, gear[:, :3])
  wr = jnp.einsum("nij,nj->ni", mat, gear[:, 3:])
  moment = jnp.einsum("nkv,nk->nv", jacp, wt) + jnp.einsum("nkv,nk->nv", jacr, wr)
  return jnp.zeros(len(i)), moment


def _refsite(m: Model, d: Data, grp) -> tuple:
  """Site relative to a reference site: translation in the refsite frame and the rotation
  between the two frames, with the shared dof chain (which moves both) removed."""
  i, site, ref, common = grp
  gear = _gear(m, i)
  pos, rpos, rmat = d.site_xpos[site], d.site_xpos[ref], d.site_xmat[ref]
  jacp, jacr = point_jacobians(m, d, m.site_bodyid[site], pos)
  rjacp, rjacr = point_jacobians(m, d, m.site_bodyid[ref], rpos)
  keep = ~common[:, None, :]
  jacp, jacr = (jacp - rjacp) * keep, (jacr - rjacr) * keep
  vec = jnp.einsum("nji,nj->ni", rmat, pos - rpos)
  quat = math.quat_mul(d.xquat[m.site_bodyid[site]], m.site_quat[site])
  rquat = math.quat_mul(d.xquat[m.site_bodyid[ref]], m.site_quat[ref])
  rvec = math.quat_sub(quat, rquat)
  length = jnp.sum(vec * gear[:, :3], -1) + jnp.sum(rvec * gear[:, 3:], -1)
  wt = jnp.einsum("nij,nj->ni", rmat, gear[:, :3])
  wr = jnp.einsum("nij,nj->ni", rmat, gear[:, 3:])
  moment = jnp.einsum("nkv,nk->nv", jacp, wt) + jnp.einsum("nkv,nk->nv", jacr, wr)
  return length, moment


def _slidercrank(m: Model, d: Data, grp) -> tuple:
  """Slider-crank: length a'v - sqrt((a'v)^2 + r^2 - v'v) along the slider's z axis."""
  i, crank, slider = grp
  rod, gear = m.actuator_cranklength[i], _gear(m, i)[:, 0]
  axis = d.site_xmat[slider][:, :, 2]
  vec = d.site_xpos[crank] - d.site_xpos[slider]
  av = jnp.sum(vec * axis, -1)
  det = av * av + rod * rod - jnp.sum(vec * vec, -1)
  ok = det > 0
  sdet = jnp.sqrt(jnp.where(ok, det, 1.0))
  length = jnp.where(ok, av - sdet, av)
  ratio = (1 - av / sdet)[:, None]
  dldv = jnp.where(ok[:, None], axis * ratio + vec / sdet[:, None], axis)
  dlda = jnp.where(ok[:, None], vec * ratio, vec)
  sjacp, sjacr = point_jacobians(m, d, m.site_bodyid[slider], d.site_xpos[slider])
  cjacp, _ = point_jacobians(m, d, m.site_bodyid[crank], d.site_xpos[crank])
  jac_axis = jnp.cross(jnp.swapaxes(sjacr, 1, 2), axis[:, None, :])  # (n, nv, 3)
  moment = (jnp.einsum("nvk,nk->nv", jac_axis, dlda)
            + jnp.einsum("nkv,nk->nv", cjacp - sjacp, dldv))
  return length * gear, moment * gear[:, None]


def _body(m: Model, d: Data, grp) -> tuple:
  """Adhesion: minus the mean contact-normal Jacobian over the body's contacts.

  A contact counts when it exists, dist < includemargin + gap: with constraint rows
  (active) or in the gap layer (collision.driver.contact_gaps), as in MuJoCo. Under a
  contact cap the slots' bodies are traced: the contacts the capped slots hold count.
  """
  i, body = grp
  con = d.contact
  if len(con.dim) == 0:
    return jnp.zeros(len(i)), jnp.zeros((len(i), m.nv))
  exists = con.dist < con.includemargin + contact_gaps(m, con)
  b1, b2 = con.bodies(m.geom_bodyid)
  normal = con.frame[:, 0]
  j1p, _ = point_jacobians(m, d, b1, con.pos)
  j2p, _ = point_jacobians(m, d, b2, con.pos)
  jn = jnp.einsum("ck,ckv->cv", normal, j2p - j1p)  # (ncon, nv)
  rel = (b1[None] == body[:, None]) | (b2[None] == body[:, None])  # (n, ncon)
  counted = jnp.where(rel, exists[None], False).astype(jn.dtype)
  count = jnp.sum(counted, axis=1)
  moment = -(counted @ jn) / jnp.maximum(count, 1.0)[:, None]
  return jnp.zeros(len(i)), moment


TRANSMISSIONS = {"scalar": _scalar, "ball": _ball, "free": _free, "tendon": _tendon,
                 "site": _site, "refsite": _refsite, "slidercrank": _slidercrank,
                 "body": _body, "so3": orientation.transmission}


def transmission(m: Model, d: Data) -> Data:
  """mj_transmission: actuator_length (nout,) and dense actuator_moment (nout, nv).

  Reads qpos, site frames, xquat, cdof, subtree_com, ten_length/ten_J, contacts.
  """
  if m.nactuator == 0:
    return d
  length, moment = jnp.zeros(m.nout), jnp.zeros((m.nout, m.nv))
  for kind, grp in _trn_plan(m).items():
    ln, mo = TRANSMISSIONS[kind](m, d, grp)
    out = (orientation.rows(m, grp[0], m.actuator_outadr) if kind == "so3"
           else m.actuator_outadr[grp[0]])
    length, moment = math.set_at(length, out, ln), math.set_at(moment, out, mo)
  return d.replace(actuator_length=length, actuator_moment=moment)


def velocity(m: Model, d: Data) -> Data:
  """actuator_velocity = actuator_moment @ qvel (mj_fwdVelocity); zero without actuation."""
  if m.nactuator == 0:
    return d
  if m.opt.disabled(DisableBit.ACTUATION):
    return d.replace(actuator_velocity=jnp.zeros(m.nout))
  return d.replace(actuator_velocity=d.actuator_moment @ d.qvel)


# ---------------------------------------------------------------- gain, bias, dynamics


def _safe(x):
  return jnp.maximum(MINVAL, x)


def _muscle_length_curve(x, lmin, lmax):
  """mju_muscleGainLength: piecewise-quadratic active force-length curve, peak 1 at 1."""
  a, b = 0.5 * (lmin + 1), 0.5 * (1 + lmax)
  y = jnp.where(x <= a, 0.5 * ((x - lmin) / _safe(a - lmin)) ** 2,
      jnp.where(x <= 1, 1 - 0.5 * ((1 - x) / _safe(1 - a)) ** 2,
      jnp.where(x <= b, 1 - 0.5 * ((x - 1) / _safe(b - 1)) ** 2,
                0.5 * ((lmax - x) / _safe(lmax - b)) ** 2)))
  return jnp.where((lmin <= x) & (x <= lmax), y, 0.0)


def _muscle_scaled(prm, length, lengthrange, acc0):
  """Peak force (scale / acc0 when force < 0), L0 and the normalized length."""
  force = jnp.where(prm[:, 2] < 0, prm[:, 3] / _safe(acc0), prm[:, 2])
  l0 = (lengthrange[:, 1] - lengthrange[:, 0]) / _safe(prm[:, 1] - prm[:, 0])
  norm = prm[:, 0] + (length - lengthrange[:, 0]) / _safe(l0)
  return force, l0, norm


def muscle_gain(prm, length, vel, lengthrange, acc0):
  """mju_muscleGain: -force * FL(length) * FV(velocity); prm (n, 10) as gainprm."""
  force, l0, norm = _muscle_scaled(prm, length, lengthrange, acc0)
  v = vel / _safe(l0 * prm[:, 6])
  fvmax = prm[:, 8]
  y = fvmax - 1
  fv = jnp.where(v <= -1, 0.0,
       jnp.where(v <= 0, (v + 1) ** 2,
       jnp.where(v <= y, fvmax - (y - v) ** 2 / _safe(y), fvmax)))
  return -force * _muscle_length_curve(norm, prm[:, 4], prm[:, 5]) * fv


def muscle_bias(prm, length, lengthrange, acc0):
  """mju_muscleBias: passive force, half-quadratic to (1 + lmax) / 2 then linear."""
  force, _, norm = _muscle_scaled(prm, length, lengthrange, acc0)
  b = 0.5 * (1 + prm[:, 5])
  x1 = (norm - 1) / _safe(b - 1)
  x2 = (norm - b) / _safe(b - 1)
  scale = -force * prm[:, 7]
  return jnp.where(norm <= 1, 0.0, jnp.where(norm <= b, scale * 0.5 * x1 * x1,
                                             scale * (0.5 + x2)))


def _sigmoid(x):
  """mju_sigmoid: quintic smoothstep on [0, 1]."""
  s = jnp.clip(x, 0.0, 1.0)
  return s * s * s * (3 * s * (2 * s - 5) + 10)


def muscle_dynamics(ctrl, act, prm):
  """mju_muscleDynamics: act_dot with activation-dependent time constants (Millard 2013);
  prm (n, 10): tau_act, tau_deact, smoothing width."""
  actc = jnp.clip(act, 0, 1)
  tau_act = prm[:, 0] * (0.5 + 1.5 * actc)
  tau_deact = prm[:, 1] / (0.5 + 1.5 * actc)
  dctrl = jnp.clip(ctrl, 0, 1) - act
  width = prm[:, 2]
  smooth = tau_deact + (tau_act - tau_deact) * _sigmoid(dctrl / jnp.where(
    width < MINVAL, 1.0, width) + 0.5)
  tau = jnp.where(width < MINVAL, jnp.where(dctrl > 0, tau_act, tau_deact), smooth)
  return dctrl / _safe(tau)


def _filter(ctrl, act, prm):
  return (ctrl - act) / _safe(prm[:, 0])


def _zero(prm, ln, vel, lr, acc0):
  return jnp.zeros_like(ln)


# Each entry: (prm, length, velocity, lengthrange, acc0) -> (n,) gain or bias.
GAINS = {
  GainType.FIXED: lambda prm, ln, vel, lr, acc0: prm[:, 0],
  GainType.AFFINE: lambda prm, ln, vel, lr, acc0: prm[:, 0] + prm[:, 1] * ln + prm[:, 2] * vel,
  GainType.MUSCLE: muscle_gain,
  GainType.PID: _zero, GainType.DCMOTOR: _zero,  # computed by jaxmj.motor
  GainType.SO3: _zero,  # computed by jaxmj.orientation
}
BIASES = {
  BiasType.NONE: lambda prm, ln, vel, lr, acc0: jnp.zeros_like(ln),
  BiasType.AFFINE: lambda prm, ln, vel, lr, acc0: prm[:, 0] + prm[:, 1] * ln + prm[:, 2] * vel,
  BiasType.MUSCLE: lambda prm, ln, vel, lr, acc0: muscle_bias(prm, ln, lr, acc0),
  BiasType.DCMOTOR: _zero, BiasType.SO3: _zero,
}
# Each entry: (ctrl, act, dynprm) -> (n,) act_dot.
DYNAMICS = {
  DynType.INTEGRATOR: lambda ctrl, act, prm: ctrl,
  DynType.FILTER: _filter,
  DynType.FILTEREXACT: _filter,
  DynType.MUSCLE: muscle_dynamics,
}


@cached_plan
def act_plan(m, disableactuator: int) -> dict:
  """Static index sets: per type, the stateful actuators, limits and disabled groups."""
  ids = np.arange(m.nactuator)
  group = m.actuator_group
  disabled = (group >= 0) & (group <= 30) & ((disableactuator >> np.clip(group, 0, 30)) & 1
                                             == 1)
  # so3 actuators without dynamics may hold inert states: never read, never moved
  stateful = ids[(m.actuator_actadr >= 0) & (m.actuator_dyntype != DynType.NONE)]
  inert = ids[(m.actuator_actadr >= 0) & (m.actuator_dyntype == DynType.NONE)]
  simple = stateful[~np.isin(m.actuator_dyntype[stateful], (DynType.PID, DynType.DCMOTOR))]
  slots = [np.arange(m.actuator_actadr[i], m.actuator_actadr[i] + m.actuator_actnum[i])
           for i in ids]
  limited = simple[m.actuator_actlimited[simple]]
  early = stateful[m.actuator_actearly[stateful]]
  tendon = ids[m.actuator_trntype == TrnType.TENDON]
  if len(tendon) and m.ntendon:
    tendon = tendon[m.tendon_actfrclimited[m.actuator_trnid[tendon, 0]]]
  else:
    tendon = ids[:0]
  rotational = np.zeros(m.nactuator, bool)  # purely rotational: ball joints, refsite rotation
  for i, (trn, (tid, tid2)) in enumerate(zip(m.actuator_trntype, m.actuator_trnid)):
    if trn in (TrnType.JOINT, TrnType.JOINTINPARENT):
      rotational[i] = m.jnt_type[tid] == JointType.BALL
    elif trn == TrnType.SITE and tid2 >= 0:
      rotational[i] = True  # the translational gear is checked at run time (a leaf)
  servo = (m.actuator_gaintype == GainType.FIXED) & (m.actuator_biastype == BiasType.AFFINE)
  limited_jnt = np.flatnonzero(m.jnt_actfrclimited)
  gravcomp = [np.arange(m.jnt_dofadr[j], m.jnt_dofadr[j] + {0: 6, 1: 3}.get(m.jnt_type[j], 1))
              for j in np.flatnonzero(m.jnt_actgravcomp)]
  return {
    "gain": {t: ids[m.actuator_gaintype == t] for t in np.unique(m.actuator_gaintype)},
    "bias": {t: ids[m.actuator_biastype == t] for t in np.unique(m.actuator_biastype)},
    "dyn": {t: simple[m.actuator_dyntype[simple] == t]
            for t in np.unique(m.actuator_dyntype[simple])},
    "stateful": stateful, "early": early,
    "inert_slots": np.concatenate([slots[i] for i in inert] + [[]]).astype(int),
    "early_slots": np.isin(np.arange(m.na), np.concatenate([slots[i] for i in early] + [[]])),
    "exact": stateful[m.actuator_dyntype[stateful] == DynType.FILTEREXACT],
    "actlimited": limited,  # their activation slots (so3 integrators have 3) and owners
    "actlimited_slots": np.concatenate([slots[i] for i in limited] + [[]]).astype(int),
    "actlimited_owner": np.repeat(limited, m.actuator_actnum[limited]),
    "ctrllimited": np.flatnonzero(m.actuator_ctrllimited),  # control indices
    "forcelimited": ids[m.actuator_forcelimited],
    "disabled": ids[disabled], "tendon": tendon, "circle": ids[rotational & servo],
    "filtered_circle": ids[rotational & servo & np.isin(m.actuator_dyntype, (
      DynType.FILTER, DynType.FILTEREXACT))],
    "jnt_limited": limited_jnt, "jnt_limited_dof": m.jnt_dofadr[limited_jnt],
    "gravcomp_dof": np.concatenate(gravcomp) if gravcomp else np.zeros(0, int),
  }


def _on_circle(m: Model, idx: np.ndarray, ref: jnp.ndarray, x: jnp.ndarray):
  """Position servos on purely rotational transmissions read setpoints on the circle
  (MuJoCo 4.0): x (n,) for actuators idx becomes its representative nearest ref (n,), the
  period being 2 pi |rotational gear|. Servo: fixed gain with gainprm[0] == -biasprm[1],
  and no translational gear."""
  gear = _gear(m, idx)
  period = 2 * jnp.pi * math.safe_norm(_rot_gear(m, idx))
  on = (m.actuator_gainprm[idx, 0] == -m.actuator_biasprm[idx, 1]) & jnp.all(
    (gear[:, :3] == 0) | _is_joint(m, idx)[:, None], axis=1)
  safe = jnp.where(on, period, 1.0)
  y = x - ref
  return jnp.where(on, ref + y - safe * jnp.round(y / safe), x)


def _is_joint(m: Model, idx: np.ndarray) -> np.ndarray:
  return np.isin(m.actuator_trntype[idx], (TrnType.JOINT, TrnType.JOINTINPARENT))


def _rot_gear(m: Model, idx: np.ndarray) -> jnp.ndarray:
  """The rotational gear: gear[:3] on ball joints, gear[3:] on sites."""
  gear = _gear(m, idx)
  return jnp.where(_is_joint(m, idx)[:, None], gear[:, :3], gear[:, 3:])


def _anchor(m: Model, plan: dict, length: jnp.ndarray, act: jnp.ndarray) -> jnp.ndarray:
  """Activations of circle servos re-anchored next to their actuator length."""
  idx = plan["circle"]
  idx = idx[m.actuator_actadr[idx] >= 0]
  if len(idx) == 0:
    return act
  adr = m.actuator_actadr[idx]
  return act.at[adr].set(_on_circle(m, idx, length[idx], act[adr]))


def _next(m: Model, plan: dict, d: Data, act: jnp.ndarray, act_dot: jnp.ndarray) -> jnp.ndarray:
  """act (na,) one step ahead from act_dot (na,): exact for filterexact, Euler otherwise,
  clamped to actrange where actlimited (mj_advance's nextActivation); DC motor states by
  motor.next_act. Servos on the circle first move their activation next to the length."""
  h = m.opt.timestep
  act = _anchor(m, plan, d.actuator_length, act)
  new = motor.next_act(m, d, act, act_dot, act + act_dot * h)
  if len(plan["exact"]):
    adr = m.actuator_actadr[plan["exact"]]
    tau = _safe(m.actuator_dynprm[plan["exact"], 0])
    new = new.at[adr].set(act[adr] + act_dot[adr] * tau * (1 - jnp.exp(-h / tau)))
  if len(plan["actlimited"]):
    adr, rng = plan["actlimited_slots"], m.actuator_actrange[plan["actlimited_owner"]]
    new = new.at[adr].set(jnp.clip(new[adr], rng[:, 0], rng[:, 1]))
  return new


def next_act(m: Model, d: Data, act_dot: jnp.ndarray | None = None) -> jnp.ndarray:
  """mj_advance's activation update: d.act advanced by act_dot (default d.act_dot) over one
  timestep; disabled actuator groups hold their activation. Unchanged without actuation."""
  if m.na == 0 or m.opt.disabled(DisableBit.ACTUATION):
    return d.act
  plan = act_plan(m, m.opt.disableactuator)
  act_dot = d.act_dot if act_dot is None else act_dot
  if len(plan["disabled"]):
    held = plan["disabled"]
    adr = [np.arange(a, a + n) for a, n in zip(m.actuator_actadr[held], m.actuator_actnum[held])]
    act_dot = act_dot.at[np.concatenate(adr).astype(int)].set(0.0)
  return _next(m, plan, per_actuator(m, d), d.act, act_dot)


def per_actuator(m: Model, d: Data) -> Data:
  """d with actuator_length / actuator_velocity (nactuator,): each actuator's output."""
  out = m.actuator_outadr
  return d.replace(actuator_length=d.actuator_length[out],
                   actuator_velocity=d.actuator_velocity[out])


def clamped_ctrl(m: Model, d: Data, plan: dict) -> tuple[jnp.ndarray, jnp.ndarray]:
  """Clamped controls (nu,), all zeroed if any is NaN or beyond 1e10; and that bad flag."""
  ctrl = history.ctrl(m, d, d.ctrl)
  if len(plan["ctrllimited"]) and not m.opt.disabled(DisableBit.CLAMPCTRL):
    idx = plan["ctrllimited"]
    rng = m.actuator_ctrlrange[idx]
    ctrl = math.set_at(ctrl, idx, jnp.clip(ctrl[idx], rng[:, 0], rng[:, 1]))
  bad = jnp.any(~jnp.isfinite(ctrl) | (jnp.abs(ctrl) > MAXVAL))
  return jnp.where(bad, 0.0, ctrl), bad


def _by_type(table: dict, groups: dict, n: int, *args) -> jnp.ndarray:
  """One value per item, each type's group computed by its table entry."""
  out = jnp.zeros(n)
  for t, idx in groups.items():
    out = math.set_at(out, idx, table[t](*(a[idx] for a in args)))
  return out


def _tendon_limit(m: Model, plan: dict, force: jnp.ndarray) -> jnp.ndarray:
  """Scales the forces of actuators on a force-limited tendon so their sum is in range."""
  idx = plan["tendon"]
  ten = m.actuator_trnid[idx, 0]
  total = jnp.zeros(m.ntendon).at[ten].add(force[idx])[ten]
  rng = m.tendon_actfrcrange[ten]
  safe = jnp.where(total == 0, 1.0, total)
  scale = jnp.where(total < rng[:, 0], rng[:, 0] / safe,
                    jnp.where(total > rng[:, 1], rng[:, 1] / safe, 1.0))
  return force.at[idx].multiply(jnp.where(total == 0, 1.0, scale))


def _act_dot(m: Model, d: Data, plan: dict, ctrl: jnp.ndarray) -> jnp.ndarray:
  """act_dot (na,) of the stateful actuators, each dynamics type by its table entry; 0 in
  the inert states of actuators without dynamics."""
  act_dot = d.act_dot
  if len(plan["inert_slots"]):
    act_dot = act_dot.at[plan["inert_slots"]].set(0.0)
  if len(plan["stateful"]) == 0:
    return act_dot
  adr = m.actuator_actadr
  act = d.act[adr]
  setpoint = ctrl
  if len(plan["filtered_circle"]):  # filters chase the setpoint the short way round
    idx = plan["filtered_circle"]
    setpoint = ctrl.at[idx].set(_on_circle(m, idx, act[idx], ctrl[idx]))
  rate = _by_type(DYNAMICS, plan["dyn"], m.nactuator, setpoint, act, m.actuator_dynprm)
  return act_dot.at[adr[plan["stateful"]]].set(rate[plan["stateful"]])


def gain_act(m: Model, plan: dict, d: Data, act_dot: jnp.ndarray) -> jnp.ndarray:
  """(na,) the activations gains read: act, next step's in every slot of actearly actuators.
  d: per-actuator lengths (per_actuator)."""
  if not len(plan["early"]):
    return d.act
  return jnp.where(plan["early_slots"], _next(m, plan, d, d.act, act_dot), d.act)


def _input(m: Model, d: Data, plan: dict, ctrl, act_dot) -> jnp.ndarray:
  """What the gain multiplies (nactuator,): ctrl, or act (next step's with actearly); setpoints
  of servos on the circle taken nearest the actuator length."""
  inp = ctrl
  if len(plan["stateful"]):
    last = m.actuator_actadr + m.actuator_actnum - 1  # the last state drives the gain
    inp = inp.at[plan["stateful"]].set(gain_act(m, plan, d, act_dot)[last[plan["stateful"]]])
  if len(plan["circle"]):
    idx = plan["circle"]
    inp = inp.at[idx].set(_on_circle(m, idx, d.actuator_length[idx], inp[idx]))
  return inp


def fwd_actuation(m: Model, d: Data) -> Data:
  """mj_fwdActuation: act_dot (na,), actuator_force (nout,), qfrc_actuator (nv,).

  force = gain * (ctrl or act) + bias, gain/bias/dynamics dispatched by type; then the
  tendon and actuator force limits, moment' force, actuator-level gravity compensation and
  the joints' actuatorfrcrange. Reads ctrl, act, actuator_length/velocity/moment.
  """
  if m.nactuator == 0 or m.opt.disabled(DisableBit.ACTUATION):
    return d.replace(actuator_force=jnp.zeros(m.nout), qfrc_actuator=jnp.zeros(m.nv))
  plan = act_plan(m, m.opt.disableactuator)
  controls, bad = clamped_ctrl(m, d, plan)
  # each actuator's first control (a zero past the end for actuators without controls)
  ctrl = jnp.concatenate([controls, jnp.zeros(1, controls.dtype)])[m.actuator_ctrladr]
  da = per_actuator(m, d)
  act_dot = orientation.act_dot(m, controls, _act_dot(m, da, plan, ctrl))
  act_dot, controls = motor.dynamics(m, da, controls, act_dot)
  out = m.actuator_outadr
  args = (da.actuator_length, da.actuator_velocity, m.actuator_lengthrange[out],
          m.actuator_acc0[out])
  gain = _by_type(GAINS, plan["gain"], m.nactuator, m.actuator_gainprm, *args)
  bias = _by_type(BIASES, plan["bias"], m.nactuator, m.actuator_biasprm, *args)
  inp = _input(m, da, plan, ctrl, act_dot)
  force, act_dot = motor.forces(m, da, controls, act_dot, gain, bias, inp)
  if len(plan["disabled"]):
    force = force.at[plan["disabled"]].set(0.0)
  if len(plan["tendon"]):
    force = _tendon_limit(m, plan, force)
  if len(plan["forcelimited"]):
    idx = plan["forcelimited"]
    rng = m.actuator_forcerange[idx]
    f = force[idx]
    # a force at the limit itself counts as clamped (no derivative), as in mjd_actuator_vel
    f = jnp.where(f <= rng[:, 0], rng[:, 0], jnp.where(f >= rng[:, 1], rng[:, 1], f))
    force = math.set_at(force, idx, f)
  force = motor.mechanical(m, da, act_dot, force,
                           ~np.isin(np.arange(m.nactuator), plan["disabled"]))
  force = math.set_at(jnp.zeros(m.nout, force.dtype), out, force)
  so3 = orientation.so3_ids(m)
  if len(so3):
    on = ~np.isin(so3, plan["disabled"])
    f3 = orientation.forces(m, d, controls, gain_act(m, plan, da, act_dot),
                            m.actuator_forcelimited).reshape(-1, 3)
    force = force.at[orientation.rows(m, so3, out)].set((f3 * on[:, None]).reshape(-1))
  qfrc = d.actuator_moment.T @ force
  if len(plan["gravcomp_dof"]) and not m.opt.disabled(DisableBit.GRAVITY):
    dof = plan["gravcomp_dof"]
    qfrc = qfrc.at[dof].add(d.qfrc_gravcomp[dof])
  if len(plan["jnt_limited"]):
    dof, rng = plan["jnt_limited_dof"], m.jnt_actfrcrange[plan["jnt_limited"]]
    qfrc = qfrc.at[dof].set(jnp.clip(qfrc[dof], rng[:, 0], rng[:, 1]))
  return d.replace(act_dot=act_dot, actuator_force=force, qfrc_actuator=qfrc,
                   warning=count_warning(d.warning, Warning.BADCTRL, bad))
