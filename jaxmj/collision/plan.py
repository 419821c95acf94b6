"""The static collision plan (the host side of mj_collision): which geom pairs may collide,
grouped by geom types, and the contact slots each pair owns.

Which geom pairs may collide depends only on static structure (contype/conaffinity, the
body tree, <contact> pairs and excludes, flags), so the host enumerates them once per
model structure. Pairs are grouped by (type1, type2) and each group runs one vmapped
collider (driver.py): every collider is traced once, however many pairs use it. Each pair
owns the collider's fixed number of contact slots. The convex group (GJK/EPA) has four
slots per pair when one of its pairs may get MuJoCo 4.0's multiccd contacts
(collision/multiccd.py), else one.

A model may cap its contacts as MJX does, with custom numerics (`_capped`):
`max_geom_pairs` lets a primitive group without planes collide only that many of its pairs
per condim, those nearest by bounding spheres; `max_contact_points` keeps, per condim, that
many of the candidate slots' contacts, those of least dist (collision/driver.py). The
contact slots and constraint rows are then sized by the caps, not by the candidate pairs,
and which geoms a slot holds is traced (Contact.geom), not static.

`<size nconmax>` caps the contacts the same way (per condim, those of least dist) where the
model has no max_contact_points: without a cap every candidate pair owns its slots, and a
scene of many geoms (dm_control's dog: 6,267 candidate pairs, 17,846 slots, 129,732 rows)
needs more memory than any machine has. MuJoCo 4.0 reads nconmax as a hint for its arena
and keeps every contact, so the results are MuJoCo's wherever at most nconmax contacts of a
condim are active; where more are, the deepest are kept and Data.warning counts CONTACTFULL.
"""

from __future__ import annotations

import numpy as np

from jaxmj.collision import hfield, mesh, multiccd, primitive
from jaxmj.collision.ccd import convex
from jaxmj.names import name2id
from jaxmj.scan import cached_plan
from jaxmj.types import DisableBit, GeomType, Model

CONVEX = "convex"  # group key of every pair handled by the GJK/EPA collider


HFIELD = "hfield"  # group key of every heightfield pair (prisms through GJK/EPA)


# pairs MuJoCo's collision table leaves empty: never collide
_NEVER = {(GeomType.PLANE, GeomType.PLANE), (GeomType.PLANE, GeomType.HFIELD),
          (GeomType.HFIELD, GeomType.HFIELD)}


def colliders() -> dict:
  """(type1, type2) -> (collider, slots) for MuJoCo's native primitive colliders, and
  (type1, type2) -> CONVEX for the pairs MuJoCo sends to its convex collider."""
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


def _candidate_pairs(m, disable: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """(geom1, geom2, pair) (npair,) int32: the explicit <pair>s (pair = their index), then the
  dynamic pairs (pair = -1) that no <pair> names (MuJoCo skips those in either order; other
  geom pairs of the same two bodies still collide)."""
  if disable & (DisableBit.CONTACT | DisableBit.CONSTRAINT) or m.ngeom == 0:
    return (np.zeros(0, np.int32),) * 3
  e1, e2 = np.asarray(m.pair_geom1, np.int64), np.asarray(m.pair_geom2, np.int64)
  d1, d2 = _dynamic_pairs(m, disable)  # d1 < d2
  taken = np.minimum(e1, e2) * m.ngeom + np.maximum(e1, e2)
  keep = ~np.isin(d1.astype(np.int64) * m.ngeom + d2, taken)
  cat = lambda *xs: np.concatenate(xs).astype(np.int32)  # noqa: E731
  return (cat(e1, d1[keep]), cat(e2, d2[keep]),
          cat(np.arange(len(e1)), np.full(int(keep.sum()), -1)))


def collision_plan(m: Model) -> dict:
  """Static pair groups and contact slots of `m` under its current flags (see _plan)."""
  return _plan(m, m.opt.disableflags)


@cached_plan
def _plan(m, disable: int) -> dict:
  """Static pair groups and contact slots.

  groups: list of dicts with `types`, `g1`, `g2` (geom ids, type1 <= type2), `pair`
  (explicit <pair> index or -1), `condim` (per pair), `slots` (contacts per pair), `start`
  (first slot) and `start_pair` (first pair). capped: _capped's, or None.
  Slot arrays: dim, geom1, geom2 (ncon,).
  """
  a, b, p = _candidate_pairs(m, disable)
  ta, tb = np.asarray(m.geom_type)[a], np.asarray(m.geom_type)[b]
  a, b = np.where(ta > tb, b, a), np.where(ta > tb, a, b)
  table = colliders() if len(a) else {}
  # pair indices per group, vectorized over pairs (MuJoCo's 100_humanoids.xml: 3M of them)
  groups: dict[tuple, list] = {}
  missing = set()
  code = np.minimum(ta, tb).astype(np.int64) * len(GeomType) + np.maximum(ta, tb)
  for c in np.unique(code).tolist():
    key = (GeomType(c // len(GeomType)), GeomType(c % len(GeomType)))
    if key not in table:
      if key not in _NEVER:
        missing.add(key)
      continue
    groups.setdefault(table[key] if isinstance(table[key], str) else key, []).append(
      np.flatnonzero(code == c))
  if missing:
    names = ", ".join(f"{a.name.lower()}-{b.name.lower()}" for a, b in sorted(missing))
    raise NotImplementedError(f"jaxmj has no collider for geom pairs {names} yet")
  groups = {k: np.sort(np.concatenate(v)) for k, v in groups.items()}  # in pair order
  out, start = [], 0
  dim, geom1, geom2 = [], [], []
  # All convex pairs form one group: the GJK/EPA collider takes the geom types as traced
  # values, so it is compiled once however many pair types use it.
  for key in sorted(groups, key=str):
    idx = groups[key]
    g1, g2, pair = a[idx], b[idx], p[idx]
    slots = (multiccd.group_slots(m, g1, g2, disable) if key == CONVEX else
             hfield.slots(m, g2) if key == HFIELD else table[key][1])
    condim = _condim(m, g1, g2, pair)
    out.append({"types": key, "g1": g1, "g2": g2, "pair": pair, "slots": slots,
                "start": start, "start_pair": sum(len(g["g1"]) for g in out),
                "condim": condim})
    start += len(idx) * slots
    dim.append(np.repeat(condim, slots))
    geom1.append(np.repeat(g1, slots))
    geom2.append(np.repeat(g2, slots))
  cat = lambda xs: np.concatenate(xs).astype(np.int32) if xs else np.zeros(0, np.int32)
  dim = cat(dim)
  capped = _capped(out, contact_cap(m), numeric(m, "max_geom_pairs"))
  return {"groups": out, "ncon": start, "dim": dim, "geom1": cat(geom1),
          "geom2": cat(geom2), "capped": capped}


def contact_cap(m) -> int:
  """The cap on the contacts of each condim: MJX's max_contact_points, else <size nconmax>
  when positive, else -1 (none)."""
  cap = numeric(m, "max_contact_points")
  return cap if cap >= 0 or m.nconmax <= 0 else int(m.nconmax)


def numeric(m, name: str) -> int:
  """The first value of the custom numeric `name` as an int, -1 if the model has none (as
  MJX reads max_contact_points and max_geom_pairs)."""
  i = name2id(m, "numeric", name)
  return int(m.numeric_data[m.numeric_adr[i]]) if i >= 0 else -1


def _pair_capped(group: dict, cap: int) -> list | None:
  """max_geom_pairs = `cap` on one group (MJX's rule): per condim, ascending, (the group's
  pairs of that condim (n,), K = min(cap, n)), or None where it binds on no condim or the
  group is one MJX exempts (a plane or heightfield in it) or runs no primitive collider
  (convex, mesh: jaxmj's GJK/EPA group mixes pair types MJX caps separately)."""
  key = group["types"]
  if cap < 0 or isinstance(key, str) or {GeomType.PLANE, GeomType.MESH} & set(key):
    return None
  condim = group["condim"]
  dims = np.unique(condim)
  if all(np.sum(condim == c) <= cap for c in dims):
    return None
  return [(np.flatnonzero(condim == c).astype(np.int32), min(cap, int(np.sum(condim == c))))
          for c in dims]


def _capped(groups: list, cap: int, pair_cap: int) -> dict | None:
  """The contact slots under MJX's max_contact_points = `cap` and max_geom_pairs =
  `pair_cap` (-1: none), or None when neither binds.

  Candidate slots: every group's slots, in plan order, but a group whose pairs are capped
  (`pairs`: _pair_capped) collides only its K pairs per condim nearest by bounding
  spheres, condim by condim, each in pair order. Its slots' geoms are then traced.
  pairs: per group None or [(pairs of a condim, K)]; npair: per group, pairs collided;
  slot_pair (nslot,): candidate slot -> collided pair (in group order); slot_dim (nslot,).
  select: per condim, ascending, (candidate slots of that condim (n,), K = min(cap, n));
  ncon = sum of K; dim (ncon,): the capped slots' condims, grouped by condim as MJX's.
  """
  pairs = [_pair_capped(g, pair_cap) for g in groups]
  slot_dim, npair = [], []
  for g, keep in zip(groups, pairs):
    condim = g["condim"] if keep is None else np.concatenate(
      [np.full(k, g["condim"][idx[0]]) for idx, k in keep])
    npair.append(len(condim))
    slot_dim.append(np.repeat(condim, g["slots"]))
  slot_dim = np.concatenate(slot_dim).astype(np.int32) if groups else np.zeros(0, np.int32)
  dims = np.unique(slot_dim)
  binds = cap >= 0 and any(np.sum(slot_dim == c) > cap for c in dims)
  if not binds and all(k is None for k in pairs):
    return None
  size = lambda c: int(np.sum(slot_dim == c))  # noqa: E731
  select = [(np.flatnonzero(slot_dim == c).astype(np.int32),
             min(cap, size(c)) if cap >= 0 else size(c)) for c in dims]
  slot_pair = np.repeat(np.arange(sum(npair)), [g["slots"] for g, n in zip(groups, npair)
                                                for _ in range(n)]).astype(np.int32)
  return {"pairs": pairs, "npair": npair, "slot_pair": slot_pair, "slot_dim": slot_dim,
          "select": select, "ncon": sum(k for _, k in select),
          "dim": np.concatenate([np.full(k, c, np.int32) for c, (_, k) in zip(dims, select)])}


def contact_slots(m: Model) -> dict:
  """The Contact's slots: ncon, dim (ncon,) and the static geom1, geom2 (ncon,), which are
  None when max_contact_points or max_geom_pairs binds (the geoms of a slot are then traced:
  Contact.geom)."""
  plan = collision_plan(m)
  cap = plan["capped"]
  if cap is None:
    return {k: plan[k] for k in ("ncon", "dim", "geom1", "geom2")}
  return {"ncon": cap["ncon"], "dim": cap["dim"], "geom1": None, "geom2": None}


def contact_keys(m: Model, plan: dict, disable: int) -> np.ndarray:
  """(ncon, 5) int64: each contact slot's sort key in mj_collision's order, compared row by row
  as tuples: body pairs by signature (an explicit <pair> before the dynamic contacts of its
  body pair), geom pairs within a body pair in loop order (midphase: sorted by (geom1,
  geom2)), then the collider's own order (the slot within its pair). Vectorized over the
  slots (MuJoCo's 100_humanoids.xml: 3M; a Python loop per slot took 7 s of each trace)."""
  midphase = not disable & DisableBit.MIDPHASE
  body, gnum, bvh = (np.asarray(x, np.int64) for x in (m.geom_bodyid, m.body_geomnum,
                                                        m.body_bvhadr))
  keys = np.zeros((plan["ncon"], 5), np.int64)
  for grp in plan["groups"]:
    g1, g2, p = (np.asarray(grp[k], np.int64) for k in ("g1", "g2", "pair"))
    b1, b2 = body[g1], body[g2]
    lo, hi = np.where(b1 < b2, g1, g2), np.where(b1 < b2, g2, g1)
    tree = (midphase & (bvh[b1] >= 0) & (bvh[b2] >= 0)
            & ~((gnum[b1] == 1) & (gnum[b2] == 1)))
    explicit = p >= 0
    sig = (np.asarray(m.pair_signature, np.int64)[np.maximum(p, 0)] if m.npair
           else np.zeros_like(p))
    k = np.stack([np.where(explicit, sig, (np.minimum(b1, b2) << 16) + np.maximum(b1, b2)),
                  (~explicit).astype(np.int64),
                  np.where(explicit, p, np.where(tree, g1, lo)),
                  np.where(explicit, 0, np.where(tree, g2, hi))], axis=1)
    n = grp["slots"]
    rows = slice(grp["start"], grp["start"] + len(g1) * n)
    keys[rows, :4] = np.repeat(k, n, axis=0)
    keys[rows, 4] = np.tile(np.arange(n), len(g1))
  return keys


def contact_rank(m: Model) -> np.ndarray:
  """(ncon,) int: each contact slot's rank in mj_collision's order (contact_keys; equal keys
  by slot), so that the active slots sorted by it come in the order of MuJoCo's d.contact.
  Cached per model structure and flags (read-only): the collision stage, PGS's row order
  and each contact sensor ask for it in one trace."""
  return _contact_rank(m, int(m.opt.disableflags))


@cached_plan
def _contact_rank(m, disable: int) -> np.ndarray:
  keys = contact_keys(m, _plan(m, disable), disable)
  rank = np.empty(len(keys), np.int64)
  rank[np.lexsort(keys.T[::-1])] = np.arange(len(keys))  # stable: ties keep slot order
  rank.flags.writeable = False
  return rank


def _condim(m, g1, g2, pair) -> np.ndarray:
  """Static condim per pair: the explicit pair's, else the higher-priority geom's, else max."""
  c1, c2 = m.geom_condim[g1], m.geom_condim[g2]
  p1, p2 = m.geom_priority[g1], m.geom_priority[g2]
  mixed = np.where(p1 > p2, c1, np.where(p2 > p1, c2, np.maximum(c1, c2)))
  return np.where(pair >= 0, m.pair_dim[np.maximum(pair, 0)] if m.npair else mixed, mixed)
