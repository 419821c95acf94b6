"""Row blocks per constraint kind: friction loss (dofs), joint limits and contacts, each a
dict of per-row quantities (J, pos, margin, diag, solref, solimp, active, ...) that
driver.py stacks in MuJoCo's order (equality rows: equality.py; tendon rows: tendon.py).

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
  `contact.active`. With adhesion and a gap (Model.flg_adhesiongap) each block ends in a
  frictionless row of its own, active for an adhering contact in the gap layer
  (adhesion.gap_layer).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.constants import MINVAL
from jaxmj.constraint.adhesion import gap_layer
from jaxmj.constraint.layout import EfcLayout
from jaxmj.scan import body_plan
from jaxmj.types import Data, Model


def rows(n, nv, dt, **kw) -> dict:
  """A block of n rows: every per-row quantity, zero unless given."""
  z = lambda *s: jnp.zeros((n,) + s, dt)
  out = dict(J=z(nv), pos=z(), margin=z(), frictionloss=z(), diag=z(), solref=z(2),
             solreffriction=z(2), solimp=z(5), imp_pos=z(), imp_margin=z(),
             active=jnp.zeros(n, bool), bias=z(), kzero=np.zeros(n, bool),
             elliptic_friction=np.zeros(n, bool))
  out.update(kw)
  return out


def friction_rows(m: Model, d: Data, lay: EfcLayout) -> dict:
  """mj_instantiateFriction (dofs): unit rows, frictionloss, no position, K = 0."""
  dof = lay.friction_dof
  dt = d.qpos.dtype
  return rows(
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


def limit_rows(m: Model, d: Data, lay: EfcLayout) -> dict:
  """mj_instantiateLimit (joints): distance to the nearer limit, J = -side on the dof."""
  dt = d.qpos.dtype
  n = len(lay.limit_jnt)
  lin_rows, ball_rows = np.flatnonzero(~lay.limit_ball), np.flatnonzero(lay.limit_ball)
  lin, ball = lay.limit_jnt[lin_rows], lay.limit_jnt[ball_rows]
  dist = jnp.zeros(n, dt)
  J = jnp.zeros((n, m.nv), dt)
  # unique_indices: distinct static indices (smooth/com.py's com_pos says why)
  if len(lin):
    value = d.qpos[m.jnt_qposadr[lin]]
    lower = -(m.jnt_range[lin, 0] - value)  # side -1, as MuJoCo writes it
    upper = m.jnt_range[lin, 1] - value
    side = lay.limit_side[lin_rows]
    at_lower = jnp.where(side == 0, lower <= upper, side < 0)
    dist = dist.at[lin_rows].set(jnp.where(at_lower, lower, upper), unique_indices=True)
    J = J.at[lin_rows, m.jnt_dofadr[lin]].set(jnp.where(at_lower, 1.0, -1.0).astype(dt),
                                               unique_indices=True)
  if len(ball):
    adr = m.jnt_qposadr[ball][:, None] + np.arange(4)
    angle, axis = ball_angle_axis(d.qpos[adr])
    dist = dist.at[ball_rows].set(jnp.maximum(m.jnt_range[ball, 0], m.jnt_range[ball, 1]) - angle,
                                  unique_indices=True)
    cols = m.jnt_dofadr[ball][:, None] + np.arange(3)
    J = J.at[ball_rows[:, None], cols].set(-axis, unique_indices=True)
  jnt = lay.limit_jnt
  margin = m.jnt_margin[jnt]
  return rows(n, m.nv, dt, J=J, pos=dist, margin=margin, imp_pos=dist, imp_margin=margin,
               diag=m.dof_invweight0[m.jnt_dofadr[jnt]], solref=m.jnt_solref[jnt],
               solimp=m.jnt_solimp[jnt], active=dist < margin)


def _row_directions(d: Data, lay: EfcLayout, friction: jnp.ndarray):
  """Linear and angular 3-vectors (u, w) of every contact row, (nc, 3) each, global frame:
  row r is u_r . (jacp2 - jacp1) + w_r . (jacr2 - jacr1) at the contact point.

  Frame row k of the contact (n, t1, t2 linear; n, t1, t2 again angular for k >= 3) with
  coefficient 1, plus the normal for a pyramid edge, whose coefficient is +-mu_k.
  """
  slot, k = lay.con_slot, lay.con_k
  slots, row_slot = np.unique(slot, return_inverse=True)
  frame = take_static(d.contact.frame, slots)  # (ns, 3, 3)
  axis = _per_row(frame, row_slot, k % 3)
  pyr = lay.con_pyramid[:, None]
  mu = _per_row(take_static(friction, slots), row_slot, np.maximum(lay.con_edge, 0))
  coef = jnp.where(lay.con_pyramid, lay.con_sign * mu, 1.0)[:, None] * axis
  lin = (k < 3)[:, None]
  u = jnp.where(lin, coef, 0.0)
  if pyr.any():
    u = u + jnp.where(pyr, _per_row(frame, row_slot, np.zeros_like(k)), 0.0)
  return u, jnp.where(lin, 0.0, coef), mu


def take_static(x: jnp.ndarray, idx: np.ndarray, most: int = 8) -> jnp.ndarray:
  """x[idx] on axis 0 for static indices idx (n,), without a gather where they have a
  pattern: blocks of one index each (each block's index taken so, then broadcast over the
  block), else at most `most` runs of indices in a constant step (0: one index repeated),
  as those runs' slices concatenated. Under vmap a gather puts the indexed axis ahead of
  the batch axes, and its readers transpose it back element by element: box_stack's
  transition Jacobians read the contact frames' and body velocities' tangents so, rows
  apart by the whole batch, in the implicit derivative's largest fusion."""
  idx = np.asarray(idx)
  n = len(idx)
  if n == len(x) and np.array_equal(idx, np.arange(n)):
    return x
  starts = np.flatnonzero(np.diff(idx, prepend=-1) != 0)
  per = n // len(starts) if len(starts) else 0
  if 1 < per and per * len(starts) == n and np.array_equal(idx, np.repeat(idx[starts], per)):
    y = take_static(x, idx[starts], most)
    return jnp.broadcast_to(y[:, None], (len(starts), per) + x.shape[1:]).reshape(
      (n,) + x.shape[1:])
  runs, i = [], 0
  while i < n:
    step = int(idx[i + 1] - idx[i]) if i + 1 < n and idx[i + 1] >= idx[i] else 0
    j = i + 1
    while j < n and idx[j] == idx[j - 1] + step:
      j += 1
    runs.append((int(idx[i]), j - i, step))
    i = j
  if len(runs) > most:
    return x[idx]
  parts = [jax.lax.slice_in_dim(x, a, a + (k - 1) * step + 1, step) if step else
           jnp.broadcast_to(jax.lax.slice_in_dim(x, a, a + 1), (k,) + x.shape[1:])
           for a, k, step in runs]
  return parts[0] if len(parts) == 1 else jnp.concatenate(parts)


def _per_row(x: jnp.ndarray, row_slot: np.ndarray, j: np.ndarray) -> jnp.ndarray:
  """x[row_slot, j] (nc, ...) for x (ns, m, ...) per slot and static row_slot, j (nc,):
  where every slot has its rows as one block with the same j's (_slot_block), those
  columns of x stacked per slot (slices and a broadcast, as take_static says why), else a
  gather."""
  per = _slot_block(row_slot, x.shape[0])
  if per is None or not (j.reshape(-1, per) == j[:per]).all():
    return x[row_slot, j]
  return jnp.stack([x[:, c] for c in j[:per]], axis=1).reshape((-1,) + x.shape[2:])


class ContactFactors(NamedTuple):
  """The contact rows as directions: row r of efc_J is u_r . (jacp2 - jacp1) + w_r . (jacr2
  - jacr1) at the contact point (mj_jac's point Jacobians of the two bodies). With jacp =
  lin + ang x off_i (cdof columns of the dofs that move the body; off_i = pos -
  subtree_com[root of body i]), the offsets fold into c_i = off_i x u_r. (nc, 3) each,
  global frame; off_i and c_i None where side i moves with no dof in any row (a world
  geom, as a floor is in every slot). b1, b2: (nc,) body of each side, static (numpy) but
  traced under max_contact_points; mu (nc,): the friction coefficient of the row's edge
  (diagApprox)."""

  u: jnp.ndarray
  w: jnp.ndarray
  off1: jnp.ndarray | None
  off2: jnp.ndarray | None
  c1: jnp.ndarray | None
  c2: jnp.ndarray | None
  mu: jnp.ndarray
  b1: np.ndarray | jnp.ndarray
  b2: np.ndarray | jnp.ndarray
  # The same per contact slot, for the products (contact_mul_jac, _t), whose derivatives
  # then move each contact point once, not once per row (a pyramid has 2 (condim - 1)):
  # sb_i, soff_i (ns, 3) of the ns slots with rows; row_slot (nc,) static, a row's slot
  # among them.
  soff1: jnp.ndarray | None = None
  soff2: jnp.ndarray | None = None
  sb1: np.ndarray | jnp.ndarray | None = None
  sb2: np.ndarray | jnp.ndarray | None = None
  row_slot: np.ndarray | None = None


def _take(table: np.ndarray, idx):
  """table[idx]: a static gather for static indices, a traced one for traced indices."""
  return table[idx] if isinstance(idx, np.ndarray) else jnp.asarray(table)[idx]


def _body_rows(x: jnp.ndarray, b) -> jnp.ndarray:
  """x[b] for bodies b: take_static's for static b, a gather for traced ones."""
  return take_static(x, b) if isinstance(b, np.ndarray) else x[b]


def _onehot(b, n: int, dt) -> jnp.ndarray:
  """(len(b), n) one-hot rows of bodies b: static for static b, else by comparison."""
  if isinstance(b, np.ndarray):
    return jnp.asarray(np.eye(n)[b], dt)
  return (b[:, None] == jnp.arange(n)[None, :]).astype(dt)


def contact_factors(m: Model, d: Data, lay: EfcLayout) -> ContactFactors:
  """ContactFactors of the contact slots' rows (mj_instantiateContact's directions)."""
  con = d.contact
  slot = lay.con_slot
  # Placeholder slots may hold zero friction; keep divisions by friction finite there.
  friction = jnp.where(con.active[:, None], con.friction, 1.0)
  u, w, mu = _row_directions(d, lay, friction)
  slots, row_slot = np.unique(slot, return_inverse=True)
  sb1, sb2 = (b[slots] for b in con.bodies(m.geom_bodyid))
  b1, b2 = sb1[row_slot], sb2[row_slot]
  body_dof = body_plan(m)["body_dof"]
  pos = take_static(con.pos, slots)
  off = lambda b: pos - _body_rows(d.subtree_com, _take(m.body_rootid, b))  # noqa: E731
  # traced bodies (max_contact_points): either side may move
  moves = lambda b: not isinstance(b, np.ndarray) or body_dof[b].any()  # noqa: E731
  soff1 = off(sb1) if moves(sb1) else None
  soff2 = off(sb2) if moves(sb2) else None
  # the rows' offsets: their slot's, the same numbers (a gather after the difference)
  off1, off2 = (None if o is None else o[row_slot] for o in (soff1, soff2))
  c1, c2 = (None if o is None else math.cross(o, u) for o in (off1, off2))
  return ContactFactors(u=u, w=w, off1=off1, off2=off2, c1=c1, c2=c2, mu=mu, b1=b1, b2=b2,
                        soff1=soff1, soff2=soff2, sb1=sb1, sb2=sb2, row_slot=row_slot)


def _contact_jacobian(m: Model, d: Data, lay: EfcLayout, f: ContactFactors) -> jnp.ndarray:
  """(nc, nv) contact rows, each built directly from its factors and static dof masks
  (mask_i: the dofs that move side i's body):

    J = (mask2 - mask1) (u . lin + w . ang) + ang . (mask2 c2 - mask1 c1).

  Small (nc, 3) x (3, nv) products: no (n, nv, 3) Jacobians and no gathers of Jacobian
  rows. Each product is three broadcast products and two sums (`_outer3`), which XLA fuses
  with the masks: as matrix products (XNNPACK's, the 3 components padded to 4) a vmapped
  step of 256 worlds spent 0.5 ms of MJX's humanoid's 10 in one of them; elementwise, its
  constraint stage took 0.85x, box_pile's 0.37x, humanoid_floor's and box_stack's 0.73x
  (`profile_step.py --base`, 2026-12-01). A side without a dof (c_i None) costs no product.
  """
  body_dof = body_plan(m)["body_dof"].astype(f.u.dtype)
  mask1, mask2 = _take(body_dof, f.b1), _take(body_dof, f.b2)  # (nc, nv), static unless capped
  ang, lin = d.cdof[:, :3], d.cdof[:, 3:]
  shared = _outer3(f.u, lin)
  if (lay.con_k >= 3).any():  # torsion / rolling rows; w = 0 everywhere at condim <= 3
    shared = shared + _outer3(f.w, ang)
  J = (mask2 - mask1) * shared
  if f.c2 is not None:
    J = J + mask2 * _outer3(f.c2, ang)
  if f.c1 is not None:
    J = J - mask1 * _outer3(f.c1, ang)
  return J


def contact_mul_jac(m: Model, lay: EfcLayout, f: ContactFactors, cdof: jnp.ndarray,
                    x: jnp.ndarray) -> jnp.ndarray:
  """The contact rows times x (nv,) -> (nc,), without forming them (mj_mulJacVec): each
  body's velocity under x (cdof (nv, 6) of its dofs and its ancestors' times x), then per
  contact slot the contact point's relative velocity v2 + omega2 x off2 - v1 - omega1 x
  off1 (f.soff_i, f.sb_i), and per row u . that + w . (omega2 - omega1). O(nbody nv + nc)
  per vector, and its derivative in the factors (u, w, soff_i, cdof) as cheap, where the
  product's derivative through the formed rows costs (nc, nv) per tangent. Round-off
  differs from J @ x. The cross products are jnp.cross: math.cross's rule applies a 3x3
  matrix per tangent, which XLA:CPU broadcast over every tangent (forward mode)."""
  dt = x.dtype
  vel = jnp.asarray(body_plan(m)["body_dof"], dt) @ (cdof * x[:, None])  # (nbody, 6)
  # each slot's body velocities: static bodies by take_static (a one-hot product put the
  # slot axis first and XLA:CPU transposed it back per tangent: box_stack's position
  # tangents; so did a gather), traced ones (max_contact_points) by one-hot products
  v1, v2 = (_body_rows(vel, b) if isinstance(b, np.ndarray) else _onehot(b, m.nbody, dt) @ vel
            for b in (f.sb1, f.sb2))
  rel = 0.0
  for sign, v, off in ((-1.0, v1, f.soff1), (1.0, v2, f.soff2)):
    if off is not None:
      rel = rel + sign * (v[:, 3:] + jnp.cross(v[:, :3], off))
  out = _dot3(f.u, _to_rows(rel, f.row_slot))
  if (lay.con_k >= 3).any():
    out = out + _dot3(f.w, _to_rows(v2[:, :3] - v1[:, :3], f.row_slot))
  return out


def _slot_block(row_slot: np.ndarray, ns: int) -> int | None:
  """k where every one of the ns slots has its rows as k consecutive rows in slot order
  (row_slot (nc,) static: one condim, pyramidal or elliptic), else None."""
  k = len(row_slot) // ns
  return k if k * ns == len(row_slot) and np.array_equal(
    row_slot, np.repeat(np.arange(ns), k)) else None


def _to_rows(x: jnp.ndarray, row_slot: np.ndarray) -> jnp.ndarray:
  """x (ns, c) per slot -> (nc, c) per row: each slot's value repeated over its block of
  rows where _slot_block finds one (a broadcast, fused into its reader), else gathered."""
  k = _slot_block(row_slot, x.shape[0])
  if k is None:
    return x[row_slot]
  return jnp.broadcast_to(x[:, None], (x.shape[0], k, x.shape[1])).reshape(-1, x.shape[1])


def _outer3(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
  """(n, m) a @ b.T of a (n, 3) and b (m, 3) as three broadcast products and two sums."""
  return (a[:, 0:1] * b[:, 0][None] + a[:, 1:2] * b[:, 1][None]) + a[:, 2:3] * b[:, 2][None]


def _dot3(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
  """Row-wise dot products of (n, 3) arrays, (n,), as three products and two sums: a sum
  over the axis of 3 went to an XNNPACK reduction of its own (after a transposing copy of
  the gathered rows), the costliest ops of box_stack's position tangents."""
  return a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2]


def contact_mul_jac_t(m: Model, lay: EfcLayout, f: ContactFactors, cdof: jnp.ndarray,
                      force: jnp.ndarray) -> jnp.ndarray:
  """The contact rows' transpose times force (nc,) -> (nv,), without forming them
  (mj_mulJacTVec): the rows' forces along u and w summed per contact slot (fu, fw), the
  slot's wrench (fw + off_i x fu, fu) on side i's body (the sign of the side), summed per
  body, then over each dof's descendants and projected on its cdof. O(nc + nbody nv) per
  vector."""
  plan = body_plan(m)
  dt = force.dtype
  nb = m.nbody
  ns = len(f.sb1)
  fu = _per_slot(force[:, None] * f.u, f.row_slot, ns)
  fw = (_per_slot(force[:, None] * f.w, f.row_slot, ns) if (lay.con_k >= 3).any()
        else jnp.zeros_like(fu))
  wrench = jnp.zeros((nb, 6), dt)
  for sign, b, off in ((1.0, f.sb2, f.soff2), (-1.0, f.sb1, f.soff1)):
    if off is None:
      continue
    slot_wrench = jnp.concatenate([fw + jnp.cross(off, fu), fu], axis=1)  # (ns, 6)
    if isinstance(b, np.ndarray):  # per body a sum of its slots' slices (see contact_mul_jac)
      moves = plan["body_dof"].any(axis=1)  # a body without dofs takes no wrench
      wrench = wrench + sign * jnp.stack([_sum_rows(slot_wrench, np.flatnonzero(
        (b == i) & moves[i])) for i in range(nb)])
    else:
      wrench = wrench + (_onehot(b, nb, dt).T * sign) @ slot_wrench
  return jnp.sum(cdof * (jnp.asarray(plan["body_dof"].T, dt) @ wrench), axis=1)


def _sum_rows(x: jnp.ndarray, rows: np.ndarray) -> jnp.ndarray:
  """x[rows].sum(0) for static rows, as sums of slices (zeros for none)."""
  if not len(rows):
    return jnp.zeros(x.shape[1:], x.dtype)
  out = x[rows[0]]
  for r in rows[1:]:
    out = out + x[r]
  return out


def _per_slot(x: jnp.ndarray, row_slot: np.ndarray, ns: int) -> jnp.ndarray:
  """x (nc, c) summed over each slot's rows (row_slot (nc,) static) -> (ns, c). Where every
  slot has its rows in a block (_slot_block), as sums of those slices of x: the
  (ns, nc) one-hot product put the rows' axis first, a transposing copy of x per tangent
  on XLA:CPU."""
  per = _slot_block(row_slot, ns)
  if per is not None:
    x = x.reshape(ns, per, x.shape[1])
    out = x[:, 0]
    for j in range(1, per):
      out = out + x[:, j]
    return out
  return jnp.asarray(np.eye(ns)[row_slot].T, x.dtype) @ x


def contact_rows(m: Model, d: Data, lay: EfcLayout, f: ContactFactors | None) -> dict:
  """mj_instantiateContact for the contact slots: frictionless, pyramid or elliptic rows
  (`f`: their contact_factors, None when there are no contact rows)."""
  dt = d.qpos.dtype
  if lay.nc == 0:
    return rows(0, m.nv, dt)
  con = d.contact
  slot = lay.con_slot
  J = _contact_jacobian(m, d, lay, f)
  fri = f.mu

  # diagApprox: translation and rotation invweight0 of the two bodies, summed.
  b1, b2 = con.bodies(m.geom_bodyid)
  iw = m.body_invweight0
  tran, rot = (iw[b1, 0] + iw[b2, 0])[slot], (iw[b1, 1] + iw[b2, 1])[slot]
  pyr_diag = tran + fri * fri * jnp.where(lay.con_edge < 2, tran, rot)
  diag = jnp.where(lay.con_pyramid, pyr_diag, jnp.where(lay.con_j < 3, tran, rot))

  dist, margin = con.dist[slot], con.includemargin[slot]
  normal_row = ~(lay.con_elliptic & (lay.con_j > 0))
  return rows(
    lay.nc, m.nv, dt, J=J, pos=jnp.where(normal_row, dist, 0.0),
    margin=jnp.where(normal_row, margin, 0.0), imp_pos=dist, imp_margin=margin, diag=diag,
    solref=con.solref[slot], solreffriction=con.solreffriction[slot],
    solimp=con.solimp[slot],
    active=jnp.where(lay.con_gap, gap_layer(m, d)[slot], con.active[slot]) if lay.con_gap.any()
    else con.active[slot],
    elliptic_friction=lay.con_elliptic & (lay.con_j > 0))
