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
  `contact.active`.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.constants import MINVAL
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
  frame = d.contact.frame.reshape(-1, 3)
  axis = frame[slot * 3 + k % 3]
  pyr = lay.con_pyramid[:, None]
  mu = friction[slot, np.maximum(lay.con_edge, 0)]
  coef = jnp.where(lay.con_pyramid, lay.con_sign * mu, 1.0)[:, None] * axis
  lin = (k < 3)[:, None]
  u = jnp.where(lin, coef, 0.0)
  if pyr.any():
    u = u + jnp.where(pyr, frame[slot * 3], 0.0)
  return u, jnp.where(lin, 0.0, coef), mu


def _contact_jacobian(m: Model, d: Data, lay: EfcLayout, u, w) -> jnp.ndarray:
  """(nc, nv) contact rows, each built directly from its directions (u, w) and static dof
  masks: with the mj_jac point Jacobians jacp = lin + ang x off and jacr = ang (cdof
  columns of the dofs that move the body), u . jacp = u . lin + ang . (off x u), so

    J = (mask2 - mask1) (u . lin + w . ang) + ang . (mask2 (off2 x u) - mask1 (off1 x u)).

  Small (nc, 3) x (3, nv) products: no (n, nv, 3) Jacobians and no gathers of Jacobian
  rows. Products, not elementwise sums over the 3 components: the elementwise form made
  the constraint stage alone fast but a whole vmapped box_pile step 2.4x slower on CPU
  (scripts/profile_step.py; cause not traced). A side whose mask is zero in every row (a
  world geom, as a floor is in every slot) costs no product.
  """
  con = d.contact
  slot = lay.con_slot
  b1, b2 = m.geom_bodyid[con.geom1][slot], m.geom_bodyid[con.geom2][slot]
  body_dof = body_plan(m)["body_dof"].astype(u.dtype)
  mask1, mask2 = body_dof[b1], body_dof[b2]  # static (nc, nv)
  pos = con.pos[slot]
  ang, lin = d.cdof[:, :3], d.cdof[:, 3:]
  dot = lambda a, b: a @ b.T  # noqa: E731
  shared = dot(u, lin)
  if (lay.con_k >= 3).any():  # torsion / rolling rows; w = 0 everywhere at condim <= 3
    shared = shared + dot(w, ang)
  off_x_u = lambda b: dot(math.cross(pos - d.subtree_com[m.body_rootid[b]], u), ang)  # noqa: E731
  J = (mask2 - mask1) * shared
  if mask2.any():
    J = J + mask2 * off_x_u(b2)
  if mask1.any():
    J = J - mask1 * off_x_u(b1)
  return J


def contact_rows(m: Model, d: Data, lay: EfcLayout) -> dict:
  """mj_instantiateContact for the contact slots: frictionless, pyramid or elliptic rows."""
  dt = d.qpos.dtype
  if lay.nc == 0:
    return rows(0, m.nv, dt)
  con = d.contact
  slot = lay.con_slot
  active = con.active
  # Placeholder slots may hold zero friction; keep divisions by friction finite there.
  friction = jnp.where(active[:, None], con.friction, 1.0)
  u, w, fri = _row_directions(d, lay, friction)
  J = _contact_jacobian(m, d, lay, u, w)

  # diagApprox: translation and rotation invweight0 of the two bodies, summed.
  b1, b2 = m.geom_bodyid[con.geom1], m.geom_bodyid[con.geom2]
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
    solimp=con.solimp[slot], active=active[slot],
    elliptic_friction=lay.con_elliptic & (lay.con_j > 0))
