"""Collision driver (mj_collision): candidate pairs, grouped by geom types, and contacts.

Which geom pairs may collide depends only on static structure (contype/conaffinity, the
body tree, <contact> pairs and excludes, flags), so the host enumerates them once per
model structure. Pairs are grouped by (type1, type2) and each group runs one vmapped
collider: every collider is traced once, however many pairs use it. Each pair owns the
collider's fixed number of contact slots; `Contact.active` marks the ones in use. The convex
group (GJK/EPA) has four slots per pair when one of its pairs may get MuJoCo 4.0's multiccd
contacts (collision/multiccd.py), else one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.collision import broadphase
from jaxmj.collision.primitive import NO_CONTACT
from jaxmj.scan import cached_plan
from jaxmj.types import Data, DisableBit, EnableBit, GeomType, Model

CONVEX = "convex"  # group key of every pair handled by the GJK/EPA collider
HFIELD = "hfield"  # group key of every heightfield pair (prisms through GJK/EPA)
# pairs MuJoCo's collision table leaves empty: never collide
_NEVER = {(GeomType.PLANE, GeomType.PLANE), (GeomType.PLANE, GeomType.HFIELD),
          (GeomType.HFIELD, GeomType.HFIELD)}


def _colliders() -> dict:
  """(type1, type2) -> (collider, slots) for MuJoCo's native primitive colliders, and
  (type1, type2) -> CONVEX for the pairs MuJoCo sends to its convex collider."""
  from jaxmj.collision import hfield, mesh, primitive
  from jaxmj.collision.ccd import convex

  table = {k: CONVEX for k in (*convex.CONVEX_PAIRS, *mesh.CONVEX_MESH_PAIRS)}
  table.update(primitive.COLLIDERS)
  table.update(mesh.COLLIDERS)
  table.update({(GeomType.HFIELD, t): HFIELD for t in hfield.GEOM_TYPES})
  return table


def _signature(b1, b2):
  return (np.minimum(b1, b2) << 16) + np.maximum(b1, b2)


def _dynamic_pairs(m, disableflags: int) -> tuple[np.ndarray, np.ndarray]:
  """Geom pairs admitted by MuJoCo's filters: contype/conaffinity, same weld body,
  parent-child (unless filterparent is disabled; never against the world), excludes."""
  n = m.ngeom
  g1, g2 = np.triu_indices(n, 1)
  ct, ca = m.geom_contype, m.geom_conaffinity
  keep = ((ct[g1] & ca[g2]) | (ct[g2] & ca[g1])) != 0
  weld = m.body_weldid[m.geom_bodyid]
  w1, w2 = weld[g1], weld[g2]
  keep &= w1 != w2
  if not disableflags & DisableBit.FILTERPARENT:
    pw1 = m.body_weldid[m.body_parentid[w1]]
    pw2 = m.body_weldid[m.body_parentid[w2]]
    keep &= ~((w1 != 0) & (w2 != 0) & ((w1 == pw2) | (w2 == pw1)))
  b1, b2 = m.geom_bodyid[g1], m.geom_bodyid[g2]
  keep &= ~np.isin(_signature(b1, b2), m.exclude_signature)
  return g1[keep], g2[keep]


def collision_plan(m: Model) -> dict:
  """Static pair groups and contact slots of `m` under its current flags (see _plan)."""
  return _plan(m, m.opt.disableflags)


@cached_plan
def _plan(m, disable: int) -> dict:
  """Static pair groups and contact slots.

  groups: list of dicts with `types`, `g1`, `g2` (geom ids, type1 <= type2), `pair`
  (explicit <pair> index or -1), `slots` (contacts per pair) and `start` (first slot).
  Slot arrays: dim, geom1, geom2 (ncon,).
  """
  if disable & (DisableBit.CONTACT | DisableBit.CONSTRAINT) or m.ngeom == 0:
    pairs = []
  else:
    explicit = [(int(a), int(b), i) for i, (a, b) in enumerate(zip(m.pair_geom1, m.pair_geom2))]
    # a geom pair listed in <pair> is not collided again dynamically (MuJoCo skips it in
    # either order); other geom pairs of the same two bodies still are
    taken = {(min(a, b), max(a, b)) for a, b, _ in explicit}
    dyn1, dyn2 = _dynamic_pairs(m, disable)
    dynamic = [(int(a), int(b), -1) for a, b in zip(dyn1.tolist(), dyn2.tolist())
               if (a, b) not in taken]
    pairs = explicit + dynamic
  from jaxmj.collision import hfield, multiccd

  table = _colliders() if pairs else {}
  groups: dict[tuple, list] = {}
  missing = set()
  for a, b, p in pairs:
    ta, tb = int(m.geom_type[a]), int(m.geom_type[b])
    if ta > tb:
      a, b, ta, tb = b, a, tb, ta
    key = (GeomType(ta), GeomType(tb))
    if key not in table:
      if key not in _NEVER:
        missing.add(key)
      continue
    groups.setdefault(table[key] if isinstance(table[key], str) else key, []).append((a, b, p))
  if missing:
    names = ", ".join(f"{a.name.lower()}-{b.name.lower()}" for a, b in sorted(missing))
    raise NotImplementedError(f"jaxmj has no collider for geom pairs {names} yet")
  out, start = [], 0
  dim, geom1, geom2 = [], [], []
  # All convex pairs form one group: the GJK/EPA collider takes the geom types as traced
  # values, so it is compiled once however many pair types use it.
  for key in sorted(groups, key=str):
    rows = np.array(groups[key], np.int32).reshape(-1, 3)
    g1, g2, p = rows[:, 0], rows[:, 1], rows[:, 2]
    slots = (multiccd.group_slots(m, g1, g2, disable) if key == CONVEX else
             hfield.slots(m, g2) if key == HFIELD else table[key][1])
    condim = _condim(m, g1, g2, p)
    out.append({"types": key, "g1": g1, "g2": g2, "pair": p, "slots": slots, "start": start})
    start += len(rows) * slots
    dim.append(np.repeat(condim, slots))
    geom1.append(np.repeat(g1, slots))
    geom2.append(np.repeat(g2, slots))
  cat = lambda xs: np.concatenate(xs).astype(np.int32) if xs else np.zeros(0, np.int32)
  return {"groups": out, "ncon": start, "dim": cat(dim), "geom1": cat(geom1),
          "geom2": cat(geom2)}


def _condim(m, g1, g2, pair) -> np.ndarray:
  """Static condim per pair: the explicit pair's, else the higher-priority geom's, else max."""
  c1, c2 = m.geom_condim[g1], m.geom_condim[g2]
  p1, p2 = m.geom_priority[g1], m.geom_priority[g2]
  mixed = np.where(p1 > p2, c1, np.where(p2 > p1, c2, np.maximum(c1, c2)))
  return np.where(pair >= 0, m.pair_dim[np.maximum(pair, 0)] if m.npair else mixed, mixed)


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
  small1, small2 = s1 < math.MINVAL, s2 < math.MINVAL
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


def collision(m: Model, d: Data) -> Data:
  """mj_collision: fills d.contact from the current geom frames (fixed slots).

  Reads geom_xpos, geom_xmat. Colliders look as far as margin + gap (where MuJoCo 4.0
  reports a contact); a slot is active, and gets constraint rows, when dist < margin.
  """
  from jaxmj.collision import hfield, multiccd
  from jaxmj.collision.mesh import pair_arguments
  from jaxmj.collision.primitive import GeomFrame

  plan = collision_plan(m)
  if not plan["groups"]:
    return d
  table = _colliders()
  iterations = m.opt.ccd_iterations
  # parameters and the broadphase of all pairs at once, sliced per group: elementwise per
  # pair, so the same numbers as per group, in a handful of kernels instead of a set per group
  every = {k: np.concatenate([g[k] for g in plan["groups"]]) for k in ("g1", "g2", "pair")}
  params = contact_params(m, every["g1"], every["g2"], every["pair"])
  reach = params["margin"] + params["gap"]
  far = broadphase.out_of_reach(m, d, every["g1"], every["g2"], reach)
  dists, poss, frames, at = [], [], [], 0
  for group in plan["groups"]:
    g1, g2 = group["g1"], group["g2"]
    cut = slice(at, at + len(g1))
    at = cut.stop
    more = ()
    if group["types"] == CONVEX:
      slots, types = group["slots"], (m.geom_type[g1], m.geom_type[g2])
      fn, more = multiccd.group_collider(m, g1, g2, slots)
    elif group["types"] == HFIELD:
      slots = group["slots"]
      fn, types = hfield.collider(m, g1, g2, m.opt.ccd_tolerance, iterations)
    else:
      (fn, slots), types = table[group["types"]], ()
    geoms = [GeomFrame(pos=d.geom_xpos[g], mat=d.geom_xmat[g], size=m.geom_size[g])
             for g in (g1, g2)]
    extra = pair_arguments(m, group["types"], g1, g2) + more
    run = fn if group["types"] == HFIELD else jax.vmap(fn)  # hfield: batched over the group
    dist, pos, fr = run(*geoms, reach[cut], *types, *extra)
    # masked here, in the group's own kernels: masking after the concatenation fuses the
    # colliders differently and moves plane-capsule distances by an ulp (its dot products
    # are not guarded against fused multiply-adds)
    dists.append(jnp.where(far[cut].reshape((-1,) + (1,) * (dist.ndim - 1)), NO_CONTACT, dist))
    poss.append(pos.reshape(-1, 3))
    frames.append(fr.reshape(-1, 3, 3))
  # each pair's parameters repeated over its slots
  slot_pair = np.repeat(np.arange(at), [g["slots"] for g in plan["groups"]
                                        for _ in range(len(g["g1"]))])
  rep = {k: params[k][slot_pair] for k in ("friction", "solref", "solreffriction", "solimp")}
  includemargin = params["margin"][slot_pair]
  dist = jnp.concatenate([x.reshape(-1) for x in dists])
  contact = d.contact.replace(
    dist=dist, pos=jnp.concatenate(poss), frame=jnp.concatenate(frames),
    includemargin=includemargin, **rep, active=dist < includemargin)
  return d.replace(contact=contact)
