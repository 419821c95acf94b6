"""The static efc row layout (`efc_layout`): which rows exist, in MuJoCo's order.

Row order follows MuJoCo: equality rows (equality.py: every equality owns rows, active per
Data.eq_active), friction-loss rows (dofs, then tendons), limit rows (joints, then
tendons: jaxmj/smooth/tendon.py friction_rows / limit_rows, built like the dof and joint rows
from ten_J, tendon_invweight0 and the static tendon_hasfrictionloss / tendon_limited),
contact rows. rows.py says what each kind of row holds.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxmj.constraint import equality
from jaxmj.scan import cached_plan
from jaxmj.types import Cone, ConstraintType, DisableBit, JointType, Model


def rows_per_contact(condim: int, cone: Cone) -> int:
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
  con_gap: np.ndarray  # (nc,) bool: the slot's gap-layer row (flg_adhesiongap), after its own
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
  dims = tuple(np.asarray(contact_dims, np.int64).ravel().tolist())
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
  rows = _contact_rows(np.asarray(dims if contacts_on else (), np.int64), cone,
                      bool(m.flg_adhesiongap))
  first = rows.pop("slot_first")
  adr = np.full(len(dims), -1, np.int32)
  if contacts_on:
    adr[:] = c0 + first
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
    con_gap=np.asarray(rows["gap"], bool),
    friction_ten=ften, limit_ten=lten, limit_side=jside, limit_ten_side=tside)


def _contact_rows(dims: np.ndarray, cone: Cone, gap: bool) -> dict:
  """Per-row arrays of the contact block for slots of condims `dims` (nslot,), each slot's
  rows in MuJoCo's order (normal, then its friction rows: pyramid edges in +- pairs), then
  with `gap` its gap-layer row; and "slot_first" (nslot,): each slot's first row.

  Vectorized over rows: MuJoCo's 100_humanoids.xml gives every geom pair a slot (3M), where a
  Python loop per row took 28 s of the host compile."""
  for dim in np.unique(dims):
    rows_per_contact(int(dim), cone)  # raises on a condim that has no rows
  pyr_slot = (dims > 1) & (cone == Cone.PYRAMIDAL)
  own = np.where(dims == 1, 1, np.where(pyr_slot, 2 * (dims - 1), dims))
  per = own + int(gap)
  slot_first = np.cumsum(per) - per
  slot = np.repeat(np.arange(len(dims)), per)
  j = np.arange(int(per.sum())) - slot_first[slot]
  is_gap = j == own[slot]  # false everywhere without `gap`: j < own there
  pyr = pyr_slot[slot] & ~is_gap
  k = np.where(pyr, 1 + j // 2, np.where(is_gap, 0, j))
  kind = np.where(dims == 1, ConstraintType.CONTACT_FRICTIONLESS,
                  np.where(pyr_slot, ConstraintType.CONTACT_PYRAMIDAL,
                           ConstraintType.CONTACT_ELLIPTIC))[slot]
  return {
    "slot": slot, "k": k, "edge": np.where(pyr, k - 1, -1),
    "sign": np.where(pyr, np.where(j % 2 == 0, 1.0, -1.0), 0.0),
    # a gap row's "first" row is itself, its j 0 (it is a contact of its own)
    "first": np.where(is_gap, slot_first[slot] + own[slot], slot_first[slot]),
    "j": np.where(is_gap, 0, j), "pyr": pyr, "ell": (dims[slot] > 1) & ~pyr_slot[slot] & ~is_gap,
    "type": np.where(is_gap, ConstraintType.CONTACT_FRICTIONLESS, kind), "gap": is_gap,
    "slot_first": slot_first}


def unit_rows(lay: EfcLayout, jnt_dofadr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """(rows, dofs): the rows whose Jacobian is a single +-1 on one dof, whatever the state
  (friction loss of a dof; a hinge or slide joint's limit), and that dof."""
  fric = lay.ne + np.arange(len(lay.friction_dof))
  lin = np.flatnonzero(~lay.limit_ball)
  lim = lay.ne + lay.nf + lin
  return (np.concatenate([fric, lim]).astype(np.int32),
          np.concatenate([lay.friction_dof, np.asarray(jnt_dofadr)[lay.limit_jnt[lin]]]
                         ).astype(np.int32))


def _sides(obj: np.ndarray, both: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """Limit rows of objects `obj`: one (side 0, the nearer end) each, or a lower (-1) and an
  upper (+1) row for those marked in `both` (MuJoCo's order: lower first)."""
  rows = [(o, s) for o in obj for s in ((-1, 1) if both[o] else (0,))]
  return (np.array([r[0] for r in rows], np.int32).reshape(-1),
          np.array([r[1] for r in rows], np.int32).reshape(-1))
