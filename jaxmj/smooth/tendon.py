"""Tendons: lengths, Jacobians and drawn paths (mj_tendon), velocities, passive forces.

A fixed tendon is linear in qpos: length = sum coef * qpos[joint], J = coef on each dof.
A spatial tendon is a path of sites, optionally wrapping around sphere and cylinder geoms
between two sites (jaxmj/smooth/wrap.py), split into branches by pulleys whose divisor scales the
branch. Its length is the sum of the segment lengths (divided by the branch divisor), and
its Jacobian sums, over every segment whose ends lie on different bodies, the segment
direction times the difference of the ends' point Jacobians; the tangent points of a wrap
move with the wrapping geom's body.

The host walks every path once (`path_plan`, numpy on static fields) into flat arrays of
segments grouped by kind: site-site segments, site-geom-site segments, fixed-tendon terms,
and the path points drawn in `wrap_xpos`. The runtime evaluates each group with one
vectorized expression, so the graph does not grow with the number of tendons. Where a path
point appears depends on whether a wrap touches, as in MuJoCo; those entries are packed in
order with a cumulative sum, and entries past a path's points are zero.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.scan import cached_plan
from jaxmj.smooth import wrap
from jaxmj.smooth.jac import point_jacobians
from jaxmj.types import Data, Model, WrapType


@dataclasses.dataclass(frozen=True, eq=False)
class TendonPlan:
  """Static layout of every tendon path (numpy). Divisor entries are wrap ids of the
  pulley that started the segment's branch, -1 for a branch without one (divisor 1)."""

  fix_ten: np.ndarray  # (nfix,) tendon of each fixed-tendon term
  fix_wrap: np.ndarray  # (nfix,) its wrap id (coef = wrap_prm)
  fix_qadr: np.ndarray  # (nfix,) qpos address of the joint
  fix_dadr: np.ndarray  # (nfix,) dof address of the joint
  ss_ten: np.ndarray  # (nss,) site-site segments: tendon, sites, divisor wrap id
  ss_site: np.ndarray  # (nss, 2)
  ss_div: np.ndarray  # (nss,)
  gs_ten: np.ndarray  # (ngs,) site-geom-site segments
  gs_site: np.ndarray  # (ngs, 2)
  gs_geom: np.ndarray  # (ngs,)
  gs_side: np.ndarray  # (ngs,) side site, -1 if none
  gs_sphere: np.ndarray  # (ngs,) bool, else cylinder
  gs_div: np.ndarray  # (ngs,)
  slot_ten: np.ndarray  # (nslot,) drawn path points in MuJoCo's order: tendon
  slot_src: np.ndarray  # (nslot,) row of [0, site_xpos, t0, t1] holding the point
  slot_gs: np.ndarray  # (nslot,) the wrap (gs index) the point needs, -1 if always drawn
  slot_obj: np.ndarray  # (nslot,) wrap_obj value: -2 pulley, -1 site, geom id


def path_plan(m) -> TendonPlan:
  """Walks every tendon path as mj_tendon does. `m`: anything with the Model's static
  tendon, wrap, site, geom and joint fields (a Model, or the compiler's field dict view)."""
  fix = {k: [] for k in ("ten", "wrap", "qadr", "dadr")}
  ss = {k: [] for k in ("ten", "site", "div")}
  gs = {k: [] for k in ("ten", "site", "geom", "side", "sphere", "div")}
  slots = {k: [] for k in ("ten", "src", "gs", "obj")}
  types, objid = np.asarray(m.wrap_type), np.asarray(m.wrap_objid)
  ngs_total = int(np.sum((types == WrapType.SPHERE) | (types == WrapType.CYLINDER)))
  t0_row, t1_row = 1 + m.nsite, 1 + m.nsite + ngs_total

  def slot(t, src, g, obj):
    for k, v in zip(("ten", "src", "gs", "obj"), (t, src, g, obj), strict=True):
      slots[k].append(v)

  for t in range(m.ntendon):
    adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
    if types[adr] == WrapType.JOINT:
      for w in range(adr, adr + num):
        j = objid[w]
        for k, v in zip(("ten", "wrap", "qadr", "dadr"),
                        (t, w, m.jnt_qposadr[j], m.jnt_dofadr[j]), strict=True):
          fix[k].append(v)
      continue
    div, j = -1, 0
    while j < num - 1:
      w = adr + j
      if types[w] == WrapType.PULLEY or types[w + 1] == WrapType.PULLEY:
        if types[w] == WrapType.PULLEY:
          div = w
          slot(t, 0, -1, -2)
        j += 1
        continue
      slot(t, 1 + objid[w], -1, -1)
      if types[w + 1] in (WrapType.SPHERE, WrapType.CYLINDER):
        g = len(gs["ten"])
        for k, v in zip(gs, (t, (objid[w], objid[w + 2]), objid[w + 1], m.wrap_sideid[w + 1],
                             types[w + 1] == WrapType.SPHERE, div), strict=True):
          gs[k].append(v)
        slot(t, t0_row + g, g, objid[w + 1])
        slot(t, t1_row + g, g, objid[w + 1])
        last = objid[w + 2]
        j += 2
      else:
        for k, v in zip(ss, (t, (objid[w], objid[w + 1]), div), strict=True):
          ss[k].append(v)
        last = objid[w + 1]
        j += 1
      if j == num - 1 or types[adr + j + 1] == WrapType.PULLEY:
        slot(t, 1 + last, -1, -1)
  i32 = lambda v, *shape: np.asarray(v, np.int32).reshape((-1,) + shape)
  return TendonPlan(
    fix_ten=i32(fix["ten"]), fix_wrap=i32(fix["wrap"]), fix_qadr=i32(fix["qadr"]),
    fix_dadr=i32(fix["dadr"]), ss_ten=i32(ss["ten"]), ss_site=i32(ss["site"], 2),
    ss_div=i32(ss["div"]), gs_ten=i32(gs["ten"]), gs_site=i32(gs["site"], 2),
    gs_geom=i32(gs["geom"]), gs_side=i32(gs["side"]),
    gs_sphere=np.asarray(gs["sphere"], bool).reshape(-1), gs_div=i32(gs["div"]),
    slot_ten=i32(slots["ten"]), slot_src=i32(slots["src"]), slot_gs=i32(slots["gs"]),
    slot_obj=i32(slots["obj"]))


cached_path_plan = cached_plan(path_plan)


def geometry(p: TendonPlan, site_xpos, geom_xpos, geom_xmat, geom_size, xp):
  """Wraps of every site-geom-site segment: (wlen (ngs,), t0, t1 (ngs, 3), wrapped)."""
  if len(p.gs_ten) == 0:
    z = xp.zeros((0, 3))
    return xp.zeros(0), z, z, xp.zeros(0, bool)
  side = np.maximum(p.gs_side, 0)
  wlen, t0, t1 = wrap.wrap(
    site_xpos[p.gs_site[:, 0]], site_xpos[p.gs_site[:, 1]], geom_xpos[p.gs_geom],
    geom_xmat[p.gs_geom], geom_size[p.gs_geom, 0], p.gs_sphere, site_xpos[side],
    p.gs_side >= 0, xp)
  return wlen, t0, t1, wlen >= 0


def pulley_divisor(wrap_prm, div: np.ndarray, xp):
  return xp.where(div >= 0, wrap_prm[np.maximum(div, 0)], 1.0)


@jax.custom_jvp
def _piece_length(v):
  """|v| of (..., 3) pieces, differentiable at 0 (a tendon whose path points meet)."""
  return wrap.norm(v, jnp)


@_piece_length.defjvp
def _piece_length_jvp(primals, tangents):
  # along mju_normalize's direction, as ten_J: the first basis vector below MINVAL, so that
  # d ten_length = ten_J dqpos holds there too (sqrt's derivative at 0 is NaN)
  (v,), (dv,) = primals, tangents
  return _piece_length(v), jnp.sum(wrap.unit(v, jnp) * dv, axis=-1)


def lengths(p: TendonPlan, ntendon: int, qpos, wrap_prm, site_xpos, geo, xp):
  """(ntendon,) tendon lengths from qpos, site positions and `geometry`'s wraps."""
  wlen, t0, t1, wrapped = geo
  norm = _piece_length if xp is jnp else lambda v: wrap.norm(v, xp)
  dist = lambda a, b: norm(b - a)  # noqa: E731
  terms = [wrap_prm[p.fix_wrap] * qpos[p.fix_qadr]]
  x0, x1 = site_xpos[p.ss_site[:, 0]], site_xpos[p.ss_site[:, 1]]
  terms.append(dist(x0, x1) / pulley_divisor(wrap_prm, p.ss_div, xp))
  x0, x1 = site_xpos[p.gs_site[:, 0]], site_xpos[p.gs_site[:, 1]]
  around = dist(x0, t0) + wlen + dist(t1, x1)
  terms.append(xp.where(wrapped, around, dist(x0, x1)) / pulley_divisor(wrap_prm, p.gs_div, xp))
  ten = np.concatenate([p.fix_ten, p.ss_ten, p.gs_ten])
  values = xp.concatenate(terms)
  if xp is np:
    out = np.zeros(ntendon)
    np.add.at(out, ten, values)
    return out
  return jnp.zeros(ntendon, values.dtype).at[ten].add(values)


def pieces(p: TendonPlan, site_bodyid, geom_bodyid, wrap_prm, site_xpos, geo, xp):
  """Straight pieces that contribute to ten_J: those whose ends move with different bodies.

  Returns (tendon (k,), body0 (k,), body1 (k,), x0 (k, 3), x1 (k, 3), scale (k,)): the
  Jacobian gains scale * unit(x1 - x0) . (jacp(body1, x1) - jacp(body0, x0)). The scale is
  1 / divisor, times 0 for the pieces of a wrap the path does not take at this state.
  """
  _, t0, t1, wrapped = geo
  sb = np.asarray(site_bodyid)
  gb = np.asarray(geom_bodyid)[p.gs_geom]
  s0, s1 = site_xpos[p.gs_site[:, 0]], site_xpos[p.gs_site[:, 1]]
  ss_div, gs_div = pulley_divisor(wrap_prm, p.ss_div, xp), pulley_divisor(wrap_prm, p.gs_div, xp)
  on = wrapped.astype(s0.dtype) if xp is not np else wrapped.astype(float)
  groups = [  # (tendon, body0, body1, x0, x1, scale)
    (p.ss_ten, sb[p.ss_site[:, 0]], sb[p.ss_site[:, 1]], site_xpos[p.ss_site[:, 0]],
     site_xpos[p.ss_site[:, 1]], 1 / ss_div),
    (p.gs_ten, sb[p.gs_site[:, 0]], sb[p.gs_site[:, 1]], s0, s1, (1 - on) / gs_div),
    (p.gs_ten, sb[p.gs_site[:, 0]], gb, s0, t0, on / gs_div),
    (p.gs_ten, gb, sb[p.gs_site[:, 1]], t1, s1, on / gs_div),
  ]
  keep = [g[1] != g[2] for g in groups]
  out = []
  for k in range(6):
    parts = [g[k][mask] for g, mask in zip(groups, keep, strict=True)]
    out.append(np.concatenate(parts) if k < 3 else xp.concatenate(parts))
  return tuple(out)


def tendon(m: Model, d: Data) -> Data:
  """mj_tendon: ten_length, ten_J (dense), ten_wrapadr, ten_wrapnum, wrap_obj, wrap_xpos.

  Reads qpos, site_xpos, geom_xpos, geom_xmat, cdof and subtree_com (after com_pos).
  """
  if m.ntendon == 0:
    return d
  p = cached_path_plan(m)
  geo = geometry(p, d.site_xpos, d.geom_xpos, d.geom_xmat, m.geom_size, jnp)
  length = lengths(p, m.ntendon, d.qpos, m.wrap_prm, d.site_xpos, geo, jnp)
  dt = d.qpos.dtype
  J = jnp.zeros((m.ntendon, m.nv), dt).at[p.fix_ten, p.fix_dadr].add(m.wrap_prm[p.fix_wrap])
  ten, b0, b1, x0, x1, scale = pieces(p, m.site_bodyid, m.geom_bodyid, m.wrap_prm,
                                      d.site_xpos, geo, jnp)
  if len(ten):
    jac = point_jacobians(m, d, b1, x1)[0] - point_jacobians(m, d, b0, x0)[0]
    direction = wrap.unit(x1 - x0, jnp)
    J = J.at[ten].add(jnp.einsum("ki,kiv->kv", direction, jac) * scale[:, None])
  return d.replace(ten_length=length, ten_J=J, **_path_points(m, p, d.site_xpos, geo))


def _path_points(m: Model, p: TendonPlan, site_xpos, geo) -> dict:
  """wrap_xpos, wrap_obj, ten_wrapadr, ten_wrapnum: the drawn path points, packed."""
  _, t0, t1, wrapped = geo
  n = 2 * m.nwrap
  if len(p.slot_ten) == 0:
    present = jnp.zeros(0, bool)
  else:
    present = jnp.where(p.slot_gs < 0, True, wrapped[np.maximum(p.slot_gs, 0)]
                        if len(p.gs_ten) else True)
  points = jnp.concatenate([jnp.zeros((1, 3), site_xpos.dtype), site_xpos, t0, t1])
  at = jnp.where(present, jnp.cumsum(present) - 1, n)
  xpos = jnp.zeros((n, 3), site_xpos.dtype).at[at].set(points[p.slot_src], mode="drop")
  obj = jnp.zeros(n, jnp.int32).at[at].set(jnp.asarray(p.slot_obj), mode="drop")
  num = jnp.zeros(m.ntendon, jnp.int32).at[p.slot_ten].add(present.astype(jnp.int32))
  return dict(wrap_xpos=xpos.reshape(m.nwrap, 6), wrap_obj=obj.reshape(m.nwrap, 2),
              ten_wrapnum=num, ten_wrapadr=jnp.cumsum(num) - num)


def velocity(m: Model, d: Data) -> Data:
  """ten_velocity = ten_J qvel (the tendon part of mj_fwdVelocity)."""
  if m.ntendon == 0:
    return d
  return d.replace(ten_velocity=d.ten_J @ d.qvel)


def friction_rows(m: Model, d: Data, ten: np.ndarray) -> dict:
  """Friction-loss efc rows of the tendons `ten` (mj_instantiateFriction): J = ten_J."""
  n = len(ten)
  return dict(J=d.ten_J[ten], frictionloss=m.tendon_frictionloss[ten],
              diag=m.tendon_invweight0[ten], solref=m.tendon_solref_fri[ten],
              solimp=m.tendon_solimp_fri[ten], active=jnp.ones(n, bool),
              kzero=np.ones(n, bool))


def limit_rows(m: Model, d: Data, ten: np.ndarray, side: np.ndarray) -> dict:
  """Length-limit efc rows of the tendons `ten` (mj_instantiateLimit).

  Each row is for the end `side` of the tendon's range (static: -1 lower, +1 upper, 0
  the nearer end, lower on a tie), with MuJoCo's sign: pos = length - lo and J = ten_J at
  the lower limit, pos = hi - length and J = -ten_J at the upper one. Active when pos <
  tendon_margin. Tendons whose range is narrower than 2 * margin own a lower and an upper
  row (constraint.efc_layout), as MuJoCo makes both when both ends are within the margin.
  """
  length = d.ten_length[ten]
  lower = length - m.tendon_range[ten, 0]
  upper = m.tendon_range[ten, 1] - length
  at_lower = jnp.where(side == 0, lower <= upper, side < 0)
  dist = jnp.where(at_lower, lower, upper)
  margin = m.tendon_margin[ten]
  J = jnp.where(at_lower[:, None], 1.0, -1.0) * d.ten_J[ten]
  return dict(J=J, pos=dist, margin=margin, imp_pos=dist, imp_margin=margin,
              diag=m.tendon_invweight0[ten], solref=m.tendon_solref_lim[ten],
              solimp=m.tendon_solimp_lim[ten], active=dist < margin)
