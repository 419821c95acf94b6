"""Collision driver (mj_collision): contact parameters (mj_contactParam), the broadphase and
one vmapped collider per pair group of the static plan (plan.py), into fixed contact slots;
`Contact.active` marks the ones in use.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero

from jaxmj.collision import broadphase, cull, hfield, multiccd
from jaxmj.collision.ccd import convex
from jaxmj.collision.mesh import pair_arguments
from jaxmj.collision.plan import (
  CONVEX,
  HFIELD,
  colliders,
  collision_plan,
  contact_rank,
)
from jaxmj.collision.primitive import NO_CONTACT, GeomFrame
from jaxmj.constants import MINVAL
from jaxmj.data import Contact, count_warning
from jaxmj.smooth.kinematics_tangent import symbolic_zero
from jaxmj.types import Data, EnableBit, Model, Warning

# Contact smoothing (opt.grad_smoothing = T, jaxmj/solver/smoothing.py) weighs rows out to a
# few T beyond the margin: a second collider pass looks this many T further, so the slots of
# pairs apart hold real distances (contacts and rows are unchanged). sigmoid(-8) = 3e-4.
SMOOTHING_REACH = 8.0


def contact_params(m: Model, g1: np.ndarray, g2: np.ndarray, pair: np.ndarray) -> dict:
  """Per-pair friction (5), solref, solreffriction, solimp, margin, gap (mj_contactParam).

  MuJoCo 4.0's rules: margin and gap are the sums of the geoms'. Geoms of different
  priority: the higher one's friction, solref and solimp; equal priority: friction is the
  element-wise max, solref/solimp a solmix-weighted average (the min when either solref is
  direct, i.e. solref[0] <= 0). An explicit <pair> uses its own values unchanged. The
  override flag replaces margin, solref, solreffriction, solimp and friction by opt.o_*.
  Friction is floored at 1e-5 (mjMINMU).
  """
  p1, p2 = m.geom_priority[g1], m.geom_priority[g2]
  first = jnp.asarray(p1 > p2)[:, None]
  second = jnp.asarray(p2 > p1)[:, None]
  pick = lambda a, b, mix: jnp.where(first, a, jnp.where(second, b, mix))

  fr1, fr2 = m.geom_friction[g1], m.geom_friction[g2]
  fr = pick(fr1, fr2, jnp.maximum(fr1, fr2))
  friction = jnp.concatenate([fr[:, :1], fr[:, :1], fr[:, 1:2], fr[:, 2:3], fr[:, 2:3]], -1)
  s1, s2 = m.geom_solmix[g1], m.geom_solmix[g2]
  small1, small2 = s1 < MINVAL, s2 < MINVAL
  ratio = s1 / jnp.where(small1 | small2, 1.0, s1 + s2)
  mix = jnp.where(small1 & small2, 0.5, jnp.where(small1, 0.0, jnp.where(small2, 1.0, ratio)))
  mix = mix[:, None]
  r1, r2 = m.geom_solref[g1], m.geom_solref[g2]
  direct = (r1[:, :1] <= 0) | (r2[:, :1] <= 0)
  solref = pick(r1, r2, jnp.where(direct, jnp.minimum(r1, r2), mix * r1 + (1 - mix) * r2))
  i1, i2 = m.geom_solimp[g1], m.geom_solimp[g2]
  solimp = pick(i1, i2, mix * i1 + (1 - mix) * i2)
  margin = m.geom_margin[g1] + m.geom_margin[g2]
  gap = m.geom_gap[g1] + m.geom_gap[g2]
  solreffriction = jnp.zeros_like(solref)

  if m.npair and np.any(pair >= 0):
    exp = jnp.asarray(pair >= 0)
    pi = np.maximum(pair, 0)
    sel = lambda a, b: jnp.where(exp.reshape((-1,) + (1,) * (a.ndim - 1)), b, a)
    friction = sel(friction, m.pair_friction[pi])
    solref = sel(solref, m.pair_solref[pi])
    solreffriction = sel(solreffriction, m.pair_solreffriction[pi])
    solimp = sel(solimp, m.pair_solimp[pi])
    margin = sel(margin, m.pair_margin[pi])
    gap = sel(gap, m.pair_gap[pi])
  if m.opt.enabled(EnableBit.OVERRIDE):
    n = len(g1)
    friction = jnp.broadcast_to(m.opt.o_friction, (n, 5))
    solref = solreffriction = jnp.broadcast_to(m.opt.o_solref, (n, 2))
    solimp = jnp.broadcast_to(m.opt.o_solimp, (n, 5))
    margin = jnp.broadcast_to(m.opt.o_margin, (n,))
  friction = jnp.maximum(friction, 1e-5)
  return {"friction": friction, "solref": solref, "solreffriction": solreffriction,
          "solimp": solimp, "margin": margin, "gap": gap}


def pair_gap(m: Model, g1, g2, pair) -> jnp.ndarray:
  """(n,) gap of geom pairs g1, g2 with explicit <pair> index `pair` (-1: none): the
  explicit pair's, else the sum of the geoms' (mj_contactParam). Static numpy or traced."""
  gap = m.geom_gap[g1] + m.geom_gap[g2]
  if not m.npair:
    return gap
  safe = np.maximum(pair, 0) if isinstance(pair, np.ndarray) else jnp.maximum(pair, 0)
  return jnp.where(pair >= 0, m.pair_gap[safe], gap)


def slot_gap(m: Model) -> jnp.ndarray:
  """(ncon,) gap of every contact slot of the plan (pair_gap). A slot holds a contact when
  dist < includemargin + gap; only those below includemargin get rows, but adhesion
  actuators pull through all of them."""
  out = [jnp.repeat(pair_gap(m, g["g1"], g["g2"], g["pair"]), g["slots"])
         for g in collision_plan(m)["groups"]]
  return jnp.concatenate(out) if out else jnp.zeros(0)


def explicit_pair(m: Model, g1: jnp.ndarray, g2: jnp.ndarray) -> jnp.ndarray:
  """(n,) int32: the explicit <pair> naming geoms g1 and g2 (traced, (n,)) in either order,
  -1 where none does: a pair of geoms listed in <pair> is never collided again dynamically,
  so its contacts take the pair's parameters."""
  p1, p2 = jnp.asarray(m.pair_geom1), jnp.asarray(m.pair_geom2)
  named = (((g1[:, None] == p1) & (g2[:, None] == p2)) |
           ((g1[:, None] == p2) & (g2[:, None] == p1)))
  return jnp.where(named.any(1), jnp.argmax(named, 1), -1).astype(jnp.int32)


def contact_gaps(m: Model, c: Contact) -> jnp.ndarray:
  """(ncon,) the gap of every contact slot: plan-wide (slot_gap) where the slots' geoms are
  static; under a cap from the geoms each slot holds now: their explicit pair's gap, else
  the geoms' sum."""
  if c.geom is None:
    return slot_gap(m)
  g1, g2 = c.geoms()
  return pair_gap(m, g1, g2, explicit_pair(m, g1, g2) if m.npair else None)


class _Search(NamedTuple):
  """A group's GJK/EPA searches before they run: `search` (None: convex.convex_plan with the
  types traced), its per-pair arguments `args` (a, b, margin, type1, type2[, verts1,
  verts2]), which of them to run (`near`), and `finish(plans)` -> (dist, pos, frame)."""

  search: Callable | None
  args: tuple
  near: jnp.ndarray
  finish: Callable


def _convex_search(m: Model, g1, g2, slots: int, geoms, reach, verts: tuple, near) -> _Search:
  """The convex group: the search on near pairs only (cull.near_only), the differentiable
  contacts from its plans on every pair."""
  search, contact, polys = multiccd.group_collider(m, g1, g2, slots)
  args = (*geoms, reach, m.geom_type[g1], m.geom_type[g2], *verts)
  return _Search(search, args, near,
                 lambda plans: jax.vmap(contact)(plans, *args, *polys))


def _hfield_search(m: Model, g1, g2, geoms, reach, extra: tuple, near) -> _Search:
  """The heightfield group: the prisms MuJoCo tests, of near pairs, searched."""
  setup, contact, more = hfield.prism_stages(m, g1, g2)
  args, live = setup(*geoms, reach, *extra, *more)
  return _Search(None, args, (live & near[:, None]).reshape(-1),
                 lambda plans: contact(plans, args, live, geoms[0]))


def _run_searches(m: Model, searches: list) -> list:
  """The plans of each _Search, from one cull.near_only loop over all of them: the convex
  and heightfield groups then share one compiled GJK/EPA program (the bulk of either's
  compile time) and one loop over their near pairs and live prisms. Types are traced where
  more than one group runs; vertex arrays are padded to a common size with copies of the
  first vertex (the support point and the index ties pick are unchanged)."""
  traced = convex.traced_types_search(m.opt.ccd_tolerance, m.opt.ccd_iterations)
  if len(searches) == 1:
    s = searches[0]
    return [cull.near_only(s.search or traced, s.near, s.args)]
  args = [s.args if len(s.args) == 7 else (*s.args, None, None) for s in searches]
  dtype = args[0][0].pos.dtype
  merged = []
  for k in range(7):
    parts = [a[k] for a in args]
    if k >= 5:  # vertex arrays: absent (None) in a group without meshes
      if all(x is None for x in parts):
        merged.append(None)
        continue
      nvert = max(x.shape[1] for x in parts if x is not None)
      parts = [jnp.zeros((len(a[3]), nvert, 3), dtype) if x is None else
               jnp.concatenate([x, jnp.repeat(x[:, :1], nvert - x.shape[1], axis=1)], axis=1)
               for x, a in zip(parts, args)]
    merged.append(jax.tree.map(lambda *x: jnp.concatenate(
      [jnp.asarray(y, dtype if jnp.issubdtype(jnp.result_type(y), jnp.floating) else None)
       for y in x]), *parts))
  plans = cull.near_only(traced, jnp.concatenate([s.near for s in searches]), tuple(merged))
  ends = np.cumsum([len(a[3]) for a in args])
  return [jax.tree.map(lambda x, lo=lo, hi=hi: x[lo:hi], plans)
          for lo, hi in zip([0, *ends[:-1]], ends)]


def collision(m: Model, d: Data, from_kinematics: bool = False) -> Data:
  """mj_collision: fills d.contact from the current geom frames (fixed slots).

  Reads geom_xpos, geom_xmat. Colliders look as far as margin + gap (where MuJoCo 4.0
  reports a contact); a slot is active, and gets constraint rows, when dist < margin.
  With contact smoothing (opt.grad_smoothing) the colliders run a second time, looking
  SMOOTHING_REACH temperatures further, and a pair with no contact takes those slots'
  distances, points and frames (beyond its margin + gap: no rows, no contacts).
  Under MJX's caps (plan.py's `capped`) the capped groups collide only their nearest pairs
  (_nearest_pairs) and the slots keep the deepest contacts (_least), with their geoms; with
  contact smoothing the slots left over keep the nearest pairs apart (every contact is
  deeper than any of them: the same contacts, rows and forces as without smoothing).
  from_kinematics: d's geom frames are mj_kinematics' of m (mj_fwdPosition), so those of
  geoms welded to the world move with the Model alone: differentiated in anything else
  (qpos, mocap, ...) their tangents are symbolic zeros, and their colliders' derivative is
  left out. Off, collision differentiates in geom_xpos and geom_xmat as they come.
  """
  plan = collision_plan(m)
  if not plan["groups"]:
    return d
  every, params, reach = _candidates(m, plan)
  cap = plan["capped"]
  chosen = _nearest_pairs(m, d, plan) if cap is not None else None
  pair = _collided(plan, chosen)
  fixed = world_fixed_geoms(m) if from_kinematics else None
  dist, pos, frame = _collide(m, d, plan, every, reach, chosen, pair, fixed)
  # each pair's parameters repeated over its slots
  slot_pair = np.repeat(np.arange(len(every["g1"])), [
    g["slots"] for g in plan["groups"] for _ in range(len(g["g1"]))])
  geom = None if cap is None else jnp.asarray(np.stack([every["g1"], every["g2"]], 1))
  if pair is not None:
    params = {k: v[pair] for k, v in params.items()}
    geom, slot_pair = geom[pair], cap["slot_pair"]
  rep = {k: params[k][slot_pair] for k in ("friction", "solref", "solreffriction", "solimp")}
  includemargin = params["margin"][slot_pair]
  active = dist < includemargin
  if m.opt.grad_smoothing:
    far = _collide(m, d, plan, every, reach + SMOOTHING_REACH * m.opt.grad_smoothing,
                   chosen, pair, fixed)
    touching = jnp.zeros(len(params["margin"]), bool).at[slot_pair].max(dist < 0.5 * NO_CONTACT)
    apart = ~touching[slot_pair]
    dist, pos, frame = (jnp.where(apart.reshape((-1,) + (1,) * (a.ndim - 1)), b, a)
                        for a, b in zip((dist, pos, frame), far))
  fields = dict(dist=dist, pos=pos, frame=frame, includemargin=includemargin, **rep,
                active=active)
  if cap is not None:
    # MJX's max_contact_points rule (empty slots hold NO_CONTACT), in ascending slot order:
    # the kept contacts keep the uncapped order, and its results where the cap does not bind
    slot = _least(cap["select"], dist)
    full = _overflows(cap["select"], active)
    fields = {k: v[slot] for k, v in fields.items()}
    fields["geom"] = geom[slot_pair][slot]
    fields["rank"] = _candidate_ranks(m, plan, pair)[slot]
    return d.replace(contact=d.contact.replace(**fields),
                     warning=count_warning(d.warning, Warning.CONTACTFULL, full))
  return d.replace(contact=d.contact.replace(**fields))


def _candidate_ranks(m: Model, plan: dict, pair) -> jnp.ndarray:
  """(ncandidate,) int32: each candidate slot's rank in mj_collision's order (plan.py's
  contact_rank over every pair's slots); under max_geom_pairs the candidates are the slots
  of the collided pairs `pair` (traced), each of which keeps its place within its pair."""
  rank = contact_rank(m).astype(np.int32)
  if pair is None:
    return jnp.asarray(rank)
  first = np.concatenate([g["start"] + g["slots"] * np.arange(len(g["g1"]))
                          for g in plan["groups"]]).astype(np.int32)  # per pair
  slot_pair = plan["capped"]["slot_pair"]
  within = np.arange(len(slot_pair)) - np.searchsorted(slot_pair, slot_pair)
  return jnp.asarray(rank)[jnp.asarray(first)[pair[slot_pair]] + within]


def _overflows(select: list, active: jnp.ndarray) -> jnp.ndarray:
  """() bool: a cap drops an active contact (more of a condim's candidates are active than
  its K slots hold): mjWARN_CONTACTFULL's count, once a step."""
  over = [jnp.sum(active[idx]) > k for idx, k in select if k < len(idx)]
  return jnp.any(jnp.stack(over)) if over else jnp.asarray(False)


def _candidates(m: Model, plan: dict) -> tuple[dict, dict, np.ndarray]:
  """The plan's candidate pairs over all groups (every: g1, g2, pair (npair,)), their
  contact_params, and how far their colliders look (npair,): margin + gap."""
  every = {k: np.concatenate([g[k] for g in plan["groups"]]) for k in ("g1", "g2", "pair")}
  params = contact_params(m, every["g1"], every["g2"], every["pair"])
  return every, params, params["margin"] + params["gap"]


def all_out_of_reach(m: Model, d: Data) -> jnp.ndarray:
  """() bool: every candidate pair is out of its colliders' reach by bounding spheres
  (broadphase.out_of_reach, mj_filterSphere with margin + gap) at d's geom frames, so that
  collision finds no contact and the step no contact row. Uncapped plans only."""
  plan = collision_plan(m)
  if not plan["groups"]:
    return jnp.asarray(True)
  every, _, reach = _candidates(m, plan)
  return jnp.all(_far(m, d, plan, every, reach, None, None))


def _nearest_pairs(m: Model, d: Data, plan: dict) -> list:
  """Per group of the plan: None where all its pairs collide, else the (npair,) pairs (in
  the group) that max_geom_pairs keeps: per condim (plan.py's `pairs`), the K of least
  |pos2 - pos1| - (rbound1 + rbound2) (MJX's rule), in ascending order."""
  out = []
  for group, keep in zip(plan["groups"], plan["capped"]["pairs"]):
    if keep is None:
      out.append(None)
      continue
    g1, g2 = group["g1"], group["g2"]
    # the norm as explicit products: jnp.linalg.norm's reduction over 3 went to XNNPACK with
    # the batch as its minor axis (04_humanoids, 1,536 pairs: 5.5 of a step's 62 ms at 128)
    dif = d.geom_xpos[g2] - d.geom_xpos[g1]
    gap = (jnp.sqrt(dif[:, 0] * dif[:, 0] + dif[:, 1] * dif[:, 1] + dif[:, 2] * dif[:, 2])
           - (m.geom_rbound[g1] + m.geom_rbound[g2]))
    out.append(_least(keep, gap))
  return out


def _least(select: list, value: jnp.ndarray) -> jnp.ndarray:
  """For each (idx, K) of `select`, the K entries of idx of least value (lax.top_k: ties to
  the lower index), ascending, concatenated; idx itself where K covers it."""
  value = jax.lax.stop_gradient(value)  # only the choice: the values carry no derivative
  out = []
  for idx, k in select:
    if k == len(idx):
      out.append(jnp.asarray(idx))
      continue
    whole = np.array_equal(idx, np.arange(len(value)))  # no gather of all of value
    _, top = jax.lax.top_k(-(value if whole else value[idx]), k)
    top = jnp.sort(top)
    out.append(top.astype(np.asarray(idx).dtype) if whole else jnp.asarray(idx)[top])
  return jnp.concatenate(out)


def _collided(plan: dict, chosen: list | None) -> jnp.ndarray | None:
  """(npair,) the pairs the groups collide, as indices into the plan's pairs: every pair of a
  group, the pairs `chosen` of a capped one; None where no group is capped (every pair)."""
  if chosen is None or all(c is None for c in chosen):
    return None
  return jnp.concatenate([jnp.asarray(g["start_pair"] + (np.arange(len(g["g1"])) if c is None
                                                         else c))
                          for g, c in zip(plan["groups"], chosen)])


def _far(m: Model, d: Data, plan: dict, every: dict, reach, chosen: list, pair) -> jnp.ndarray:
  """broadphase.out_of_reach of the pairs the groups collide (`pair`, see _collided), not of
  the thousands of candidates a capped group's choice ranked. One call for all groups:
  elementwise per pair, so the same numbers as per group, in a handful of kernels instead of
  a set per group."""
  if pair is None:
    return broadphase.out_of_reach(m, d, every["g1"], every["g2"], reach)
  # a capped group is primitive: one pair of types (convex and hfield groups mix types)
  types = [np.concatenate([np.asarray(m.geom_type)[g[f"g{k + 1}"]] if c is None
                           else np.full(c.shape[0], g["types"][k])
                           for g, c in zip(plan["groups"], chosen)]) for k in (0, 1)]
  return broadphase.out_of_reach(m, d, jnp.asarray(every["g1"])[pair],
                                 jnp.asarray(every["g2"])[pair], reach[pair], types)


def world_fixed_geoms(m: Model) -> np.ndarray:
  """(ngeom,) bool: geoms whose frames are functions of the Model alone, their bodies welded
  to the world (body_weldid 0) and not under a mocap body (which MuJoCo allows only as a
  child of the world: a body's root)."""
  mocap = np.asarray(m.body_mocapid)[np.asarray(m.body_rootid)] >= 0
  fixed = (np.asarray(m.body_weldid) == 0) & ~mocap
  return fixed[np.asarray(m.geom_bodyid, int)]


@jax.custom_jvp
def _model_only(pos, mat, model_frames):
  return pos, mat


@functools.partial(_model_only.defjvp, symbolic_zeros=True)
def _model_only_jvp(primals, tangents):
  """Where no Model field that places fixed frames is differentiated, their tangent is zero
  by construction, and a symbolic zero lets reverse mode skip their colliders' derivative;
  else the frames' own tangents (kinematics': the Model's part alone)."""
  pos, mat, _ = primals
  dpos, dmat, dmodel = tangents
  if all(map(symbolic_zero, jax.tree.leaves(dmodel, is_leaf=symbolic_zero))):
    dpos, dmat = (SymbolicZero(jax.typeof(x).to_tangent_aval()) for x in (pos, mat))
  return (pos, mat), (dpos, dmat)


def _frames(m: Model, d: Data, g, fixed: np.ndarray | None):
  """(pos, mat) of geoms g; with `fixed` (world_fixed_geoms, when d's frames come from
  mj_kinematics of m) geoms all fixed read as functions of the Model alone (_model_only)."""
  pos, mat = d.geom_xpos[g], d.geom_xmat[g]
  if fixed is not None and isinstance(g, np.ndarray) and len(g) and fixed[g].all():
    places = (m.body_pos, m.body_quat, m.body_ipos, m.body_iquat, m.geom_pos, m.geom_quat)
    pos, mat = _model_only(pos, mat, places)
  return pos, mat


def _collide(m: Model, d: Data, plan: dict, every: dict, reach, chosen: list | None = None,
             pair: jnp.ndarray | None = None, fixed: np.ndarray | None = None):
  """(dist (nslot,), pos (nslot, 3), frame (nslot, 3, 3)) of every candidate slot,
  colliders looking as far as `reach` (per pair); NO_CONTACT in slots without a contact.
  chosen: per group None or the pairs max_geom_pairs keeps (_nearest_pairs), the only ones
  that group then collides; pair: _collided(plan, chosen); fixed: see _frames."""
  table = colliders()
  chosen = chosen or [None] * len(plan["groups"])
  far = _far(m, d, plan, every, reach, chosen, pair)
  results, masks, searches, at = [], [], {}, 0
  for group, c in zip(plan["groups"], chosen):
    g1, g2 = group["g1"], group["g2"]
    cut = slice(at, at + len(g1))
    if c is not None:  # traced pairs: a primitive collider, no per-pair static arguments
      g1, g2 = jnp.asarray(g1)[c], jnp.asarray(g2)[c]
      cut = group["start_pair"] + c
    near = slice(at, at + len(g1))
    at = near.stop
    geoms = [GeomFrame(*_frames(m, d, g, fixed), size=m.geom_size[g]) for g in (g1, g2)]
    extra = pair_arguments(m, group["types"], g1, g2)
    if group["types"] == CONVEX:
      searches[len(results)] = _convex_search(m, g1, g2, group["slots"], geoms, reach[cut],
                                              extra, ~far[near])
      results.append(None)
    elif group["types"] == HFIELD:
      searches[len(results)] = _hfield_search(m, g1, g2, geoms, reach[cut], extra, ~far[near])
      results.append(None)
    else:
      fn = table[group["types"]][0]
      results.append(jax.vmap(fn)(*geoms, reach[cut], *extra))
    masks.append(far[near])
  if searches:
    for k, plans in zip(searches, _run_searches(m, list(searches.values()))):
      results[k] = searches[k].finish(plans)
  dists, poss, frames = [], [], []
  for (dist, pos, fr), mask in zip(results, masks):
    # masked here, in the group's own kernels: masking after the concatenation fuses the
    # colliders differently and moves plane-capsule distances by an ulp (its dot products
    # are not guarded against fused multiply-adds)
    dists.append(jnp.where(mask.reshape((-1,) + (1,) * (dist.ndim - 1)), NO_CONTACT, dist))
    poss.append(pos.reshape(-1, 3))
    frames.append(fr.reshape(-1, 3, 3))
  dist = jnp.concatenate([x.reshape(-1) for x in dists])
  return dist, jnp.concatenate(poss), jnp.concatenate(frames)
