"""Constraint rows: mj_makeConstraint, mj_diagApprox, mj_makeImpedance, mj_referenceConstraint.

MuJoCo builds only the rows that are violated now, so its `nefc` changes from step to step.
Here the rows are fixed by a static layout (`efc_layout`) and `efc_active` says which hold a
constraint at this state; an inactive row has D = 0 (no force) and finite J, pos, R, aref.

Row order follows MuJoCo: equality rows (jaxmj/equality.py: every equality owns rows,
active per Data.eq_active), friction-loss rows (dofs, then tendons), limit rows (joints,
then tendons: jaxmj/tendon.py friction_rows / limit_rows, built like the dof and joint rows
from ten_J, tendon_invweight0 and the static tendon_hasfrictionloss / tendon_limited),
contact rows.

* Friction loss: one row per dof whose frictionloss is > 0 in the *compiled* model. The
  frictionloss value itself is a leaf (differentiable, batchable), but whether a dof has a
  row is static: setting it > 0 later on a dof that had 0 adds no row (ignored), setting
  it to 0 on a dof with a row leaves a row that bounds the force by 0 (no effect).
  The set is the static Model field `dof_hasfrictionloss`.
  Friction rows are always active.
* Joint limits: one row per limited hinge or slide joint, one per limited ball joint.
  A hinge/slide row stands for whichever side of the range is nearer (lower on a tie),
  with MuJoCo's sign: J = +1 at the lower limit, -1 at the upper limit. MuJoCo makes two
  rows when both sides are within the margin at once (a range narrower than 2 * margin):
  joints whose compiled range is that narrow (static Model.jnt_limitboth) own a lower and
  an upper row instead. Active when dist < margin. Tendon limits likewise.
* Contacts: one block per contact slot of `Data.contact`: condim 1 -> 1 frictionless row;
  pyramidal cones 2 * (condim - 1) rows (edges J_n +- mu_i J_i); elliptic cones condim rows
  (normal, tangents, then torsion and rolling from the rotational Jacobian). Active when
  `contact.active`.

efc_diagA is MuJoCo's diagApprox from body/dof invweight0 (or, with the DIAGEXACT enable
flag, the exact diagonal of J M^-1 J'), reported after mj_makeImpedance's adjustment
R = (1 - imp) / imp * diagA, as MuJoCo reports it.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import adhesion, equality, math, surfacevel, tendon
from jaxmj.scan import body_plan, cached_plan
from jaxmj.types import (
  Cone,
  ConstraintType,
  Data,
  DisableBit,
  EnableBit,
  JointType,
  Model,
)

MINVAL = 1e-15  # mjMINVAL
MINIMP = 0.0001  # mjMINIMP: lower clamp of solimp dmin, dmax, midpoint
MAXIMP = 0.9999  # mjMAXIMP
DEFAULT_SOLREF = (0.02, 1.0)  # replaces a solref that mixes the standard and direct forms


def contact_rows(condim: int, cone: Cone) -> int:
  """Number of efc rows of one contact: 1 if frictionless, else 2(condim-1) or condim."""
  if condim not in (1, 3, 4, 6):
    raise ValueError(f"contact condim must be 1, 3, 4 or 6, got {condim}")
  if condim == 1:
    return 1
  return 2 * (condim - 1) if cone == Cone.PYRAMIDAL else condim


@dataclasses.dataclass(frozen=True, eq=False)
class EfcLayout:
  """Static row layout of the efc arrays (numpy; rows in MuJoCo's order).

  Blocks: rows [0, ne) equality, [ne, ne+nf) friction loss, [.., +nl) joint limits,
  [.., +nc) contacts. Per-contact-row arrays (prefix con_) are indexed by row - contact0.
  """

  nefc: int
  ne: int
  nf: int
  nl: int
  nc: int
  efc_type: np.ndarray  # (nefc,) int32 ConstraintType
  efc_id: np.ndarray  # (nefc,) int32 dof, joint or contact slot of each row
  friction_dof: np.ndarray  # (nf,) dof of each friction-loss row
  limit_jnt: np.ndarray  # (nl,) joint of each limit row
  limit_ball: np.ndarray  # (nl,) bool: the joint is a ball joint
  contact_efc_address: np.ndarray  # (ncon,) int32 first row of each slot, -1 if it has none
  con_slot: np.ndarray  # (nc,) contact slot of the row
  con_k: np.ndarray  # (nc,) row of the contact-frame Jacobian [n, t1, t2, rn, rt1, rt2]
  con_edge: np.ndarray  # (nc,) pyramid: friction index k-1 of the edge, -1 otherwise
  con_sign: np.ndarray  # (nc,) pyramid: +1 or -1 edge; 0 otherwise
  con_first: np.ndarray  # (nc,) row (within the contact block) of the contact's first row
  con_j: np.ndarray  # (nc,) index of the row within its contact
  con_pyramid: np.ndarray  # (nc,) bool
  con_elliptic: np.ndarray  # (nc,) bool (condim > 1, elliptic cone)
  friction_ten: np.ndarray  # tendon of each tendon friction-loss row (after the dof rows)
  limit_ten: np.ndarray  # tendon of each tendon limit row (after the joint rows)
  limit_side: np.ndarray  # (nl_joint,) int: 0 the nearer end, -1 lower, +1 upper
  limit_ten_side: np.ndarray  # (nl_tendon,) int, as limit_side

  @property
  def contact0(self) -> int:
    return self.ne + self.nf + self.nl


@cached_plan
def _limit_plan(m) -> dict:
  """Limited hinge, slide and ball joints in joint order (free joints have no limits)."""
  jtype = np.asarray(m.jnt_type)
  lim = np.asarray(m.jnt_limited, bool) & (jtype != JointType.FREE)
  jnt = np.flatnonzero(lim).astype(np.int32)
  return {"jnt": jnt, "ball": jtype[jnt] == JointType.BALL}


def frictional_dofs(m: Model) -> np.ndarray:
  """Static dof ids that get a friction-loss row (Model.dof_hasfrictionloss)."""
  return np.flatnonzero(m.dof_hasfrictionloss).astype(np.int32)


def efc_layout(m: Model, contact_dims=()) -> EfcLayout:
  """The static efc row layout of `m` with contact slots of the given condims.

  Respects the disable flags constraint, equality, frictionloss, limit and contact of
  `m.opt` and its cone type. Cached (scan.cached_plan) per model structure, friction dofs,
  slot dims and options.
  """
  dims = tuple(int(c) for c in np.asarray(contact_dims, np.int64).ravel())
  flags = int(m.opt.disableflags)
  off = bool(flags & (DisableBit.CONSTRAINT | DisableBit.FRICTIONLOSS))
  fric = () if off else tuple(frictional_dofs(m).tolist())
  return _layout_plan(m, fric, dims, flags, int(m.opt.cone))


@cached_plan
def _layout_plan(m, fric, dims, flags, cone) -> EfcLayout:
  off = lambda bit: bool(flags & (DisableBit.CONSTRAINT | bit))
  return _build_layout(m, np.array(fric, np.int32), dims, off, Cone(cone))


def _build_layout(m, fric, dims, off, cone) -> EfcLayout:
  jnt = np.zeros(0, np.int32) if off(DisableBit.LIMIT) else _limit_plan(m)["jnt"]
  jnt, jside = _sides(jnt, np.asarray(m.jnt_limitboth, bool))
  ball = np.asarray(m.jnt_type)[jnt] == JointType.BALL
  contacts_on = not off(DisableBit.CONTACT) and m.nv > 0
  ne = 0 if off(DisableBit.EQUALITY) else equality.eq_plan(m)["ne"]
  ften = (np.zeros(0, np.int32) if off(DisableBit.FRICTIONLOSS) or not m.ntendon
          else np.flatnonzero(m.tendon_hasfrictionloss).astype(np.int32))
  lten = (np.zeros(0, np.int32) if off(DisableBit.LIMIT) or not m.ntendon
          else np.flatnonzero(m.tendon_limited).astype(np.int32))
  lten, tside = _sides(lten, np.asarray(m.tendon_limitboth, bool))
  nf, nl = len(fric) + len(ften), len(jnt) + len(lten)
  c0 = ne + nf + nl
  adr = np.full(len(dims), -1, np.int32)
  rows = {k: [] for k in ("slot", "k", "edge", "sign", "first", "j", "pyr", "ell", "type")}
  for s, dim in enumerate(dims if contacts_on else ()):
    n = contact_rows(dim, cone)
    first = len(rows["slot"])
    adr[s] = c0 + first
    for j in range(n):
      pyr = dim > 1 and cone == Cone.PYRAMIDAL
      k = 1 + j // 2 if pyr else j
      rows["slot"].append(s)
      rows["k"].append(k)
      rows["edge"].append(k - 1 if pyr else -1)
      rows["sign"].append((1.0 if j % 2 == 0 else -1.0) if pyr else 0.0)
      rows["first"].append(first)
      rows["j"].append(j)
      rows["pyr"].append(pyr)
      rows["ell"].append(dim > 1 and not pyr)
      rows["type"].append(ConstraintType.CONTACT_FRICTIONLESS if dim == 1 else
                          ConstraintType.CONTACT_PYRAMIDAL if pyr else
                          ConstraintType.CONTACT_ELLIPTIC)
  nc = len(rows["slot"])
  i32 = lambda x: np.asarray(x, np.int32).reshape(-1)
  efc_type = np.concatenate([
    np.full(ne, ConstraintType.EQUALITY), np.full(len(fric), ConstraintType.FRICTION_DOF),
    np.full(len(ften), ConstraintType.FRICTION_TENDON),
    np.full(len(jnt), ConstraintType.LIMIT_JOINT),
    np.full(len(lten), ConstraintType.LIMIT_TENDON),
    np.asarray(rows["type"], np.int64).reshape(-1)]).astype(np.int32)
  eq_id = equality.eq_plan(m)["row_eq"] if ne else np.zeros(0, np.int32)
  efc_id = np.concatenate([eq_id, fric, ften, jnt, lten, i32(rows["slot"])]).astype(np.int32)
  return EfcLayout(
    nefc=ne + nf + nl + nc, ne=ne, nf=nf, nl=nl, nc=nc, efc_type=efc_type, efc_id=efc_id,
    friction_dof=fric, limit_jnt=jnt, limit_ball=np.asarray(ball, bool),
    contact_efc_address=adr, con_slot=i32(rows["slot"]), con_k=i32(rows["k"]),
    con_edge=i32(rows["edge"]), con_sign=np.asarray(rows["sign"], np.float64),
    con_first=i32(rows["first"]), con_j=i32(rows["j"]),
    con_pyramid=np.asarray(rows["pyr"], bool), con_elliptic=np.asarray(rows["ell"], bool),
    friction_ten=ften, limit_ten=lten, limit_side=jside, limit_ten_side=tside)


def _sides(obj: np.ndarray, both: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Limit rows of objects `obj`: one (side 0, the nearer end) each, or a lower (-1) and an
  upper (+1) row for those marked in `both` (MuJoCo's order: lower first)."""
  rows = [(o, s) for o in obj for s in ((-1, 1) if both[o] else (0,))]
  return (np.array([r[0] for r in rows], np.int32).reshape(-1),
          np.array([r[1] for r in rows], np.int32).reshape(-1))


# ---------------------------------------------------------------- rows per constraint kind


def _rows(n, nv, dt, **kw) -> dict:
  """A block of n rows: every per-row quantity, zero unless given."""
  z = lambda *s: jnp.zeros((n,) + s, dt)
  out = dict(J=z(nv), pos=z(), margin=z(), frictionloss=z(), diag=z(), solref=z(2),
             solreffriction=z(2), solimp=z(5), imp_pos=z(), imp_margin=z(),
             active=jnp.zeros(n, bool), bias=z(), kzero=np.zeros(n, bool),
             elliptic_friction=np.zeros(n, bool))
  out.update(kw)
  return out


def _friction_rows(m: Model, d: Data, lay: EfcLayout) -> dict:
  """mj_instantiateFriction (dofs): unit rows, frictionloss, no position, K = 0."""
  dof = lay.friction_dof
  dt = d.qpos.dtype
  return _rows(
    len(dof), m.nv, dt, J=jnp.asarray(np.eye(m.nv)[dof], dt),
    frictionloss=m.dof_frictionloss[dof], diag=m.dof_invweight0[dof],
    solref=m.dof_solref[dof], solimp=m.dof_solimp[dof], active=jnp.ones(len(dof), bool),
    kzero=np.ones(len(dof), bool))


def ball_angle_axis(quat: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
  """Rotation angle >= 0 and unit axis of a ball joint's quaternion, as mj_instantiateLimit
  (mju_quat2Vel, then normalize): axis (1, 0, 0) at zero angle. Gradient-safe."""
  q = math.normalize_quat(quat)
  e1 = jnp.zeros_like(q[..., 1:]).at[..., 0].set(1.0)
  v = q[..., 1:]
  s = math.safe_norm(v, keepdims=True)
  small = s < MINVAL
  unit = jnp.where(small, e1, v / jnp.where(small, 1.0, s))
  speed = 2.0 * jnp.arctan2(s[..., 0], q[..., 0])
  speed = jnp.where(speed > jnp.pi, speed - 2.0 * jnp.pi, speed)
  vel = unit * speed[..., None]
  angle = math.safe_norm(vel, keepdims=True)
  small = angle < MINVAL
  axis = jnp.where(small, e1, vel / jnp.where(small, 1.0, angle))
  return angle[..., 0], axis


def _limit_rows(m: Model, d: Data, lay: EfcLayout) -> dict:
  """mj_instantiateLimit (joints): distance to the nearer limit, J = -side on the dof."""
  dt = d.qpos.dtype
  n = len(lay.limit_jnt)
  lin_rows, ball_rows = np.flatnonzero(~lay.limit_ball), np.flatnonzero(lay.limit_ball)
  lin, ball = lay.limit_jnt[lin_rows], lay.limit_jnt[ball_rows]
  dist = jnp.zeros(n, dt)
  J = jnp.zeros((n, m.nv), dt)
  if len(lin):
    value = d.qpos[m.jnt_qposadr[lin]]
    lower = -(m.jnt_range[lin, 0] - value)  # side -1, as MuJoCo writes it
    upper = m.jnt_range[lin, 1] - value
    side = lay.limit_side[lin_rows]
    at_lower = jnp.where(side == 0, lower <= upper, side < 0)
    dist = dist.at[lin_rows].set(jnp.where(at_lower, lower, upper))
    J = J.at[lin_rows, m.jnt_dofadr[lin]].set(jnp.where(at_lower, 1.0, -1.0).astype(dt))
  if len(ball):
    adr = m.jnt_qposadr[ball][:, None] + np.arange(4)
    angle, axis = ball_angle_axis(d.qpos[adr])
    dist = dist.at[ball_rows].set(jnp.maximum(m.jnt_range[ball, 0], m.jnt_range[ball, 1]) - angle)
    cols = m.jnt_dofadr[ball][:, None] + np.arange(3)
    J = J.at[ball_rows[:, None], cols].set(-axis)
  jnt = lay.limit_jnt
  margin = m.jnt_margin[jnt]
  return _rows(n, m.nv, dt, J=J, pos=dist, margin=margin, imp_pos=dist, imp_margin=margin,
               diag=m.dof_invweight0[m.jnt_dofadr[jnt]], solref=m.jnt_solref[jnt],
               solimp=m.jnt_solimp[jnt], active=dist < margin)


def point_jacobians(m: Model, d: Data, body: np.ndarray, point: jnp.ndarray):
  """mj_jac for many (body, point) pairs: translational and rotational (n, 3, nv) Jacobians.

  body: (n,) static body ids; point: (n, 3) global. Reads cdof and subtree_com.
  """
  mask = body_plan(m)["body_dof"][body].astype(bool)  # (n, nv)
  offset = point - d.subtree_com[m.body_rootid[body]]
  ang, lin = d.cdof[:, :3], d.cdof[:, 3:]
  jacp = lin[None] + jnp.cross(ang[None], offset[:, None, :])  # (n, nv, 3)
  jacp = jnp.where(mask[..., None], jacp, 0.0)
  jacr = jnp.where(mask[..., None], ang[None], 0.0)
  return jnp.swapaxes(jacp, 1, 2), jnp.swapaxes(jacr, 1, 2)


def _contact_rows(m: Model, d: Data, lay: EfcLayout) -> dict:
  """mj_instantiateContact for the contact slots: frictionless, pyramid or elliptic rows."""
  dt = d.qpos.dtype
  if lay.nc == 0:
    return _rows(0, m.nv, dt)
  con = d.contact
  slot = lay.con_slot
  active = con.active
  # Placeholder slots may hold zero friction; keep divisions by friction finite there.
  friction = jnp.where(active[:, None], con.friction, 1.0)
  b1, b2 = m.geom_bodyid[con.geom1], m.geom_bodyid[con.geom2]
  p1, r1 = point_jacobians(m, d, b1, con.pos)
  p2, r2 = point_jacobians(m, d, b2, con.pos)
  frame = con.frame
  rows6 = jnp.concatenate([jnp.einsum("sij,sjv->siv", frame, p2 - p1),
                           jnp.einsum("sij,sjv->siv", frame, r2 - r1)], axis=1)
  normal = rows6[slot, 0]
  edge = rows6[slot, lay.con_k]
  mu = friction[slot, np.maximum(lay.con_edge, 0)]
  coef = jnp.where(lay.con_pyramid, lay.con_sign * mu, 1.0)
  J = jnp.where(lay.con_pyramid[:, None], normal, 0.0) + coef[:, None] * edge

  # diagApprox: translation and rotation invweight0 of the two bodies, summed.
  iw = m.body_invweight0
  tran, rot = (iw[b1, 0] + iw[b2, 0])[slot], (iw[b1, 1] + iw[b2, 1])[slot]
  fri = friction[slot, np.maximum(lay.con_edge, 0)]
  pyr_diag = tran + fri * fri * jnp.where(lay.con_edge < 2, tran, rot)
  diag = jnp.where(lay.con_pyramid, pyr_diag, jnp.where(lay.con_j < 3, tran, rot))

  dist, margin = con.dist[slot], con.includemargin[slot]
  normal_row = ~(lay.con_elliptic & (lay.con_j > 0))
  return _rows(
    lay.nc, m.nv, dt, J=J, pos=jnp.where(normal_row, dist, 0.0),
    margin=jnp.where(normal_row, margin, 0.0), imp_pos=dist, imp_margin=margin, diag=diag,
    solref=con.solref[slot], solreffriction=con.solreffriction[slot],
    solimp=con.solimp[slot], active=active[slot],
    elliptic_friction=lay.con_elliptic & (lay.con_j > 0))


# ------------------------------------------------------------------- impedance and reference


def _power(a, b):
  """a ** b with MuJoCo's exact shortcuts for b = 1 and b = 2 (a in (0, 1))."""
  return jnp.where(b == 1, a, jnp.where(b == 2, a * a, jnp.power(a, b)))


def impedance(solimp: jnp.ndarray, pos: jnp.ndarray, margin: jnp.ndarray) -> jnp.ndarray:
  """getimpedance: the solimp sigmoid at |pos - margin| / width (solimp already clamped).

  solimp: (..., 5) [dmin, dmax, width, midpoint, power]. Gradient-safe at the saturated
  ends, where the unselected power branches are evaluated at a harmless x.
  """
  dmin, dmax, width, mid, p = (solimp[..., i] for i in range(5))
  flat = (dmin == dmax) | (width <= MINVAL)
  x = jnp.abs((pos - margin) / jnp.where(flat, 1.0, width))
  sat = (x >= 1) | (x <= 0)
  xs = jnp.where(sat, 0.5, x)
  low = _power(xs, p) / _power(mid, p - 1)
  high = 1 - _power(1 - xs, p) / _power(1 - mid, p - 1)
  y = jnp.where(p == 1, xs, jnp.where(xs <= mid, low, high))
  imp = dmin + y * (dmax - dmin)
  imp = jnp.where(sat, jnp.where(x >= 1, dmax, dmin), imp)
  return jnp.where(flat, 0.5 * (dmin + dmax), imp)


def _clamp_solimp(solimp):
  dmin, dmax, width, mid, p = (solimp[..., i] for i in range(5))
  clip = lambda v: jnp.minimum(MAXIMP, jnp.maximum(MINIMP, v))
  return jnp.stack([clip(dmin), clip(dmax), jnp.maximum(0.0, width), clip(mid),
                    jnp.maximum(1.0, p)], axis=-1)


def _fix_solref(m: Model, ref, mixed_default):
  """getsolparam: a solref mixing the two forms is replaced; refsafe clamps timeconst."""
  mixed = (ref[..., 0] > 0) ^ (ref[..., 1] > 0)
  ref = jnp.where(mixed[..., None], jnp.asarray(mixed_default, ref.dtype), ref)
  if not m.opt.disabled(DisableBit.REFSAFE):
    r0 = ref[..., 0]
    ref = ref.at[..., 0].set(jnp.where(r0 > 0, jnp.maximum(r0, 2 * m.opt.timestep), r0))
  return ref


def _exact_diag(m: Model, d: Data, J: jnp.ndarray) -> jnp.ndarray:
  """diag(J M^-1 J') per row (DIAGEXACT)."""
  from jaxmj import mass

  if J.shape[0] == 0:
    return jnp.zeros(0, J.dtype)
  minv_jt = jax.vmap(lambda row: mass.solve_m(m, d, row))(J)
  return jnp.sum(J * minv_jt, axis=-1)


def make_constraint(m: Model, d: Data) -> Data:
  """mj_makeConstraint + mj_referenceConstraint on the static layout of `efc_layout`.

  Reads qpos, qvel, cdof, subtree_com (and qLD for DIAGEXACT) and d.contact; writes
  efc_type, efc_id, efc_active, efc_J, efc_pos, efc_margin, efc_frictionloss, efc_diagA,
  efc_R, efc_D, efc_vel, efc_aref (efc_force and efc_state are kept, or zeroed when the
  row count changed). d.contact.efc_address is not read: rows come from the layout.
  """
  lay = efc_layout(m, d.contact.dim)
  dt = d.qpos.dtype
  ften, lten = lay.friction_ten, lay.limit_ten  # tendon rows follow the dof / joint rows
  blocks = [_friction_rows(m, d, lay),
            _rows(len(ften), m.nv, dt, **tendon.friction_rows(m, d, ften)),
            _limit_rows(m, d, lay),
            _rows(len(lten), m.nv, dt, **tendon.limit_rows(m, d, lten, lay.limit_ten_side)),
            _contact_rows(m, d, lay)]
  if lay.ne:  # equality rows come first, as in MuJoCo
    eq = equality.equality_rows(m, d)
    blocks.insert(0, _rows(lay.ne, m.nv, dt, **eq))
  r = {k: (np.concatenate if isinstance(v, np.ndarray) else jnp.concatenate)(
         [b[k] for b in blocks]) for k, v in blocks[0].items()}
  J = r["J"].reshape(lay.nefc, m.nv)
  if m.opt.enabled(EnableBit.DIAGEXACT):
    r["diag"] = _exact_diag(m, d, J)

  solimp = _clamp_solimp(r["solimp"])
  solref = _fix_solref(m, r["solref"], DEFAULT_SOLREF)
  solreffriction = _fix_solref(m, r["solreffriction"], (0.0, 0.0))
  imp = impedance(solimp, r["imp_pos"], r["imp_margin"])
  R = jnp.maximum(MINVAL, (1 - imp) * r["diag"] / imp)
  R = _contact_regularizer(m, d, lay, R)

  use_sf = r["elliptic_friction"] & ((solreffriction[:, 0] != 0) | (solreffriction[:, 1] != 0))
  ref = jnp.where(use_sf[:, None], solreffriction, solref)
  dmax = solimp[:, 1]
  k_std = 1 / jnp.maximum(MINVAL, dmax * dmax * ref[:, 0] * ref[:, 0] * ref[:, 1] * ref[:, 1])
  k_dir = -ref[:, 0] / jnp.maximum(MINVAL, dmax * dmax)
  K = jnp.where(r["kzero"] | r["elliptic_friction"], 0.0, jnp.where(ref[:, 0] > 0, k_std, k_dir))
  B = jnp.where(ref[:, 1] > 0, 2 / jnp.maximum(MINVAL, dmax * ref[:, 0]),
                -ref[:, 1] / jnp.maximum(MINVAL, dmax))

  vel = J @ d.qvel + surfacevel.efc_vel_offset(m, d, lay)
  aref = -B * vel - K * imp * (r["pos"] - r["margin"]) - r["bias"]  # bias: Jdot v
  share = adhesion.efc_share(m, d, lay)
  if share is not None:  # contact adhesion: shifted normal force, pull in qfrc_passive
    aref = aref + share * R
    d = d.replace(qfrc_passive=d.qfrc_passive - share @ J)
  active = r["active"]
  force, state = d.efc_force, d.efc_state
  if force.shape != (lay.nefc,):
    force, state = jnp.zeros(lay.nefc, dt), jnp.zeros(lay.nefc, jnp.int32)
  return d.replace(
    efc_type=jnp.asarray(lay.efc_type), efc_id=jnp.asarray(lay.efc_id), efc_active=active,
    efc_J=J, efc_pos=r["pos"], efc_margin=r["margin"], efc_frictionloss=r["frictionloss"],
    efc_diagA=R * imp / (1 - imp), efc_R=R, efc_D=jnp.where(active, 1 / R, 0.0),
    efc_vel=vel, efc_aref=aref, efc_force=force, efc_state=state)


def _contact_regularizer(m: Model, d: Data, lay: EfcLayout, R: jnp.ndarray) -> jnp.ndarray:
  """mj_makeImpedance's friction step: R of friction rows from the normal row's R.

  R1 = R0 / impratio; mu = friction0 sqrt(R1 / R0). Pyramid: every row 2 mu^2 R0.
  Elliptic: row 1 is R1, row j >= 2 is R1 friction0^2 / friction_{j-1}^2.
  """
  if lay.nc == 0:
    return R
  c0 = lay.contact0
  rc = R[c0:]
  r0 = rc[lay.con_first]
  r1 = r0 / jnp.maximum(MINVAL, m.opt.impratio)
  friction = jnp.where(d.contact.active[:, None], d.contact.friction, 1.0)[lay.con_slot]
  f0 = friction[:, 0]
  mu = f0 * jnp.sqrt(r1 / r0)
  fj = friction[np.arange(lay.nc), np.maximum(lay.con_j - 1, 0)]
  ell = jnp.where(lay.con_j == 0, r0, jnp.where(lay.con_j == 1, r1, r1 * f0 * f0 / (fj * fj)))
  rc = jnp.where(lay.con_pyramid, 2 * mu * mu * r0, jnp.where(lay.con_elliptic, ell, rc))
  return R.at[c0:].set(rc)
