"""MuJoCo 4.0's EPA (expanding polytope) for collision/convex.py."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxmj.collision.ccd.polytope import attach, epa_dir, orient, tri_affine
from jaxmj.collision.ccd.support import (
  MINVAL,
  Vertex,
  at_least,
  dot,
  project_origin_plane,
  tree_set,
)
from jaxmj.loops import batch_any, bounded_loop
from jaxmj.platform import by_platform

# --------------------------------------------------------------------------------------------
# EPA

_HORIZON = 24  # MuJoCo's horizon buffer holds 24 edges
# Face slots and horizon edges of the CPU's first pass (`epa`'s docstring): MuJoCo's capacity
# at 8 iterations and a third of its horizon buffer. A resting stack of mesh cubes and a gem
# (models/mesh_stack.xml) holds at most 24 faces; curved shapes' deep searches grow past 48
# and finish in the full polytope.
_FIRST_FACES = 48
_FIRST_HORIZON = 8


class _Epa(NamedTuple):
  verts: Vertex  # (NV,)
  nverts: jax.Array
  fv: jax.Array  # (NF, 3) vertex indices
  adj: jax.Array  # (NF, 3) adjacent faces across edges [v1,v2], [v2,v3], [v3,v1]
  v: jax.Array  # (NF, 3) projection of the origin on the face plane
  d2: jax.Array  # (NF,) |v|^2
  alive: jax.Array  # (NF,) face is part of the polytope
  inmap: jax.Array  # (NF,) face is a candidate (MuJoCo's face map)
  nfaces: jax.Array
  face: jax.Array  # current best face, -1 for none
  upper: jax.Array
  upper2: jax.Array
  done: jax.Array
  capped: jax.Array  # () the first pass stopped: a search of the batch outgrows its sizes
  trips: jax.Array  # () trips run (the trip the first pass stopped at is not run)


def epa(sup, verts0, nverts0, faces0, adj0, nfaces0, center, iterations, tolerance,
         discrete, guard, noise=None, active=True):
  """MuJoCo 4.0's epa(): returns (found, face vertex indices (3,), verts, face v, face |v|^2).
  With `active` False (GJK found the pair apart) it does not search: found is False.

  The horizon is found for all visible faces at once (flood fill from the closest face through
  visible neighbours) rather than by MuJoCo's depth-first walk; the polytope is the same, only
  the numbering of new faces differs, which matters only for exact ties in face distance.

  Kept as one function, as MuJoCo's epa() is one loop: each iteration (pick the closest face,
  support along it, stop tests, horizon, new faces) reads the polytope state and a dozen of
  the sizes and tolerances set up here; pieces would pass them all back and forth.

  Every trip works on all of the polytope's face slots (MuJoCo's capacity, 6 x iterations:
  210 at the default 35) and on a new face for each of the horizon buffer's 24 edges, while a
  resting mesh stack's polytopes hold at most 24 faces and gain a few a trip. On the CPU a
  first pass runs with _FIRST_FACES slots and _FIRST_HORIZON edges; at the first trip where
  a search of the batch (`loops.batch_any`) would outgrow them, that trip is not run (no
  search of the batch moves) and the loop resumes there at full size. Faces are appended,
  never moved, and a slot past `nfaces` is not read before a trip writes it, so either way
  each search takes the same trips with the same values: the one full loop's result
  (tests/test_loops.py). A GPU keeps the one loop (a branch reads its predicate back to the
  host).
  """
  nv_max = 5 + iterations
  nf_max = 6 * iterations  # MuJoCo's polytope capacity
  dtype = verts0.vert.dtype
  big = jnp.asarray(jnp.finfo(dtype).max, dtype)
  tol = jnp.where(discrete, at_least(MINVAL, noise), tolerance)

  def pad_to(x, n, fill=0):
    """x (k, ...) in the first k of n rows, `fill` after (vertices: the unused ones; faces:
    dead slots)."""
    return jnp.concatenate([x, jnp.full((n - x.shape[0],) + x.shape[1:], fill, x.dtype)])

  verts = Vertex(*(pad_to(x, nv_max, -1 if x.dtype == jnp.int32 else 0) for x in verts0))
  vp, dp = attach(verts.vert, faces0, center, guard)
  live0 = jnp.arange(6) < nfaces0

  def start(nf):
    return _Epa(verts, nverts0, *(pad_to(x, nf) for x in (faces0, adj0, vp, dp, live0, live0)),
                nfaces0, jnp.array(-1, jnp.int32), big, big, ~jnp.asarray(active),
                jnp.array(False), jnp.array(0, jnp.int32))

  def widen(s: _Epa) -> _Epa:
    """The first pass's polytope in all nf_max slots."""
    return s._replace(**{k: pad_to(getattr(s, k), nf_max)
                         for k in ("fv", "adj", "v", "d2", "alive", "inmap")},
                      capped=jnp.array(False))

  v_idx = jnp.arange(nv_max, dtype=jnp.int32)

  def finish(s: _Epa):
    face = _coplanar_neighbour(s, jnp.maximum(s.face, 0), guard)
    return s.face >= 0, s.fv[face], s.verts, s.v[face], s.d2[face]

  def stopped(s: _Epa):
    return s.done | s.capped

  def make_body(nf, nh):
    """The loop body on a polytope of nf face slots, adding at most nh faces a trip."""
    e_idx = jnp.arange(nh, dtype=jnp.int32)

    def body(it, s: _Epa):
      # A finished search writes nothing, and one that stops this trip nothing the polytope
      # reads (only the new faces' points, into dead slots past nfaces): its scatters target
      # the dropped slot past the end rather than being undone by a select afterwards, so that
      # the polytope's arrays update in place (a select of the old and new polytope, or a cond
      # that vmap turns into one, made XLA copy every array of the polytope each trip)
      pface = s.face
      masked = jnp.where(s.inmap, s.d2, jnp.inf)
      f = jnp.argmin(masked).astype(jnp.int32)
      lower2 = masked[f]
      has = jnp.any(s.inmap)
      invalid = (lower2 > s.upper2) | ~has
      zero = lower2 <= 0

      lower = jnp.sqrt(jnp.where(zero | ~has, 1.0, lower2))
      fvv = s.v[f]
      w = sup(epa_dir(fvv, lower))
      upper_k = dot(fvv, w.vert, guard) / lower
      better = upper_k < s.upper
      upper = jnp.where(better, upper_k, s.upper)
      upper2 = jnp.where(better, upper * upper, s.upper2)
      conv = upper_k - lower < tol  # MuJoCo 4.0 tests this iteration's bound
      # MuJoCo 4.0: a first support short of the closest face by more than the tolerance means
      # that the origin lies outside the shapes' difference (near touching): no contact
      outside = (it == 0) & conv & (lower - tol > upper)
      wi = s.nverts
      rep = discrete & jnp.any((s.verts.index1 == w.index1) & (s.verts.index2 == w.index2)
                               & (v_idx < wi))

      # faces visible from w and connected to f through visible faces
      vis_eps = at_least(MINVAL, None if noise is None else noise * jnp.sqrt(s.d2))
      vis_test = s.alive & (dot(s.v, w.vert, guard) - s.d2 > vis_eps)
      vis0 = jnp.zeros_like(s.alive).at[f].set(True)

      def grow(vis):
        return vis | (vis_test & jnp.any(vis[s.adj], axis=1))

      def fill(_, c):
        grown = grow(c[0])
        return grown, jnp.any(grown != c[0])

      # 12 rounds; the CPU stops once no face joins (a few rounds: each is a gather over every
      # face, the costliest kernel of a resting mesh stack's collision), where a GPU would pay
      # a host sync a round for a loop whose trip count it cannot see
      vis = by_platform(
        vis0, cpu=lambda v: bounded_loop(12, fill, (v, jnp.array(True)), lambda c: ~c[1],
                                         early_exit=True)[0],
        default=lambda v: lax.fori_loop(0, 12, lambda _, v: grow(v), v))

      # horizon: edge j of a visible face whose neighbour is not visible
      cand = vis[:, None] & ~vis[s.adj]
      flat = cand.reshape(-1)
      nedges = jnp.sum(flat).astype(jnp.int32)
      valid = e_idx < nedges
      # edge e is the (e+1)-th candidate: a binary search of the running count (a scatter of
      # every candidate to its slot built a batched index array of all 630 each trip; the
      # count as a log-depth scan, which XLA:CPU runs in half of its reduce-window cumsum)
      count = lax.associative_scan(jnp.add, flat.astype(jnp.int32))
      src = jnp.searchsorted(count, e_idx + 1, method="scan_unrolled").astype(jnp.int32)
      src = jnp.where(valid, src, 0)
      fi, ej = src // 3, src % 3
      g = s.adj[fi, ej]  # face across the horizon edge, stays in the polytope
      ea = s.fv[fi, (ej + 1) % 3]  # the edge runs ea -> eb in g
      eb = s.fv[fi, ej]
      gv = s.fv[g]
      eg = jnp.where(gv[:, 0] == ea, 0, jnp.where(gv[:, 1] == ea, 1, 2))
      nid = s.nfaces + e_idx
      # the new face across each end of edge e: that of the first valid edge starting where e
      # ends (the first ending where e starts), else the first new face (argmax's choice;
      # a min-reduce, where XLA:CPU runs argmax as a slower reduce of index-value pairs)
      def first_new(match):
        k = jnp.min(jnp.where(match & valid[None, :], e_idx[None, :], nh), axis=1)
        return s.nfaces + jnp.where(k == nh, 0, k)

      prev = first_new(ea[None, :] == eb[:, None])
      nxt = first_new(eb[None, :] == ea[:, None])
      new_fv = jnp.stack([jnp.full_like(ea, wi), eb, ea], axis=1)
      new_adj = jnp.stack([prev, g, nxt], axis=1)
      wb = jnp.broadcast_to(w.vert, (nh, 3))
      # the horizon's vertices are the polytope's before w (indices below wi)
      nvp, nfail = project_origin_plane(s.verts.vert[ea], s.verts.vert[eb], wb, guard)
      nvp = orient(nvp, wb, center, guard)
      # the new faces' projections go into their slots first (past nfaces: dead until this
      # trip expands) and are read back from there: XLA fused their arithmetic into each of
      # its consumers (the distances, the map test, the scatter), computing it three times
      v = s.v.at[jnp.where(valid & ~s.done, nid, nf)].set(nvp, mode="drop")
      nvp = v.at[nid].get(mode="clip")
      nd2 = jnp.where(nfail, 0.0, dot(nvp, nvp, guard))

      few = nedges < 3
      over = (nedges > _HORIZON) | (s.nfaces + nedges > nf_max)
      bad = jnp.any(valid & (nd2 == 0))
      # a first pass's trip that would outgrow its slots is run by the full polytope's loop
      capped = (batch_any(~s.done & ((s.nfaces + nedges > nf) | (nedges > nh)))
                if nf < nf_max or nh < _HORIZON else jnp.array(False))
      expand = ~s.done & ~(invalid | zero | conv | rep | few | over | bad) & ~capped

      verts = tree_set(s.verts, jnp.where(expand, wi, nv_max), w, mode="drop")
      write = valid & expand
      tgt = jnp.where(write, nid, nf)
      # the face scatter must follow every read of the faces, eg's too (which only the
      # adjacency scatter uses): XLA copies an array whose update it cannot order after its
      # reads, so the face scatter's targets depend on eg (eg < 3 always)
      fv = s.fv.at[jnp.where(eg < 3, tgt, nf)].set(new_fv, mode="drop")
      adj = s.adj.at[tgt].set(new_adj, mode="drop")
      adj = adj.at[jnp.where(write, g, nf), eg].set(nid, mode="drop")
      d2 = s.d2.at[tgt].set(nd2, mode="drop")
      new_in = valid & (nd2 >= lower2) & (nd2 <= upper2)
      gone = vis & expand
      alive = (s.alive & ~gone).at[tgt].set(True, mode="drop")
      inmap = (s.inmap & ~gone).at[tgt].set(new_in, mode="drop")

      face = jnp.where(invalid, pface, jnp.where(
        few | outside | (bad & ~(zero | conv | rep | over)), -1, f)).astype(jnp.int32)
      return _Epa(verts, s.nverts + expand.astype(jnp.int32), fv, adj, v, d2, alive, inmap,
                  s.nfaces + jnp.where(expand, nedges, 0),
                  jnp.where(s.done | capped, s.face, face),
                  jnp.where(expand, upper, s.upper), jnp.where(expand, upper2, s.upper2),
                  jnp.where(capped, s.done, ~expand | ~jnp.any(inmap)), jnp.asarray(capped),
                  jnp.where(capped, it, it + 1).astype(jnp.int32))

    return body

  def run(s, nf, nh, first=0):
    return bounded_loop(iterations, make_body(nf, nh), s, stopped, early_exit=True, start=first)

  def two_pass(s):
    s = run(s, _FIRST_FACES, _FIRST_HORIZON)
    return lax.cond(s.capped, lambda s: finish(run(widen(s), nf_max, _HORIZON, s.trips)),
                    finish, s)

  if nf_max <= _FIRST_FACES:
    return finish(run(start(nf_max), nf_max, _HORIZON))
  return by_platform(cpu=lambda: two_pass(start(_FIRST_FACES)),
                     default=lambda: finish(run(start(nf_max), nf_max, _HORIZON)))


def _coplanar_neighbour(s: _Epa, f, guard):
  """The face across an edge of f when the origin's projection lies beyond that edge and the
  two faces are coplanar (distances equal to rounding), else f.

  On a flat patch of the shapes' difference (a cylinder cap against a box corner) neighbouring
  faces tie in distance, and EPA ends on whichever its rounding makes closest. Measured on a
  box sunk into a disc (tests/collision/test_multiccd.py, slow): without fused multiply-adds
  the tie is exact and the first face, the one holding the projection, wins, as in MuJoCo;
  XLA's fused multiply-adds break it either way, depending on the compiled graph. The witness
  points are the same either way; the face's vertices choose multiccd's features."""
  tri = s.verts.vert[s.fv[f]]
  lam = tri_affine(tri[0], tri[1], tri[2], s.v[f], guard)
  k = jnp.argmin(lam)
  g = s.adj[f, (k + 1) % 3]  # edge (k + 1) % 3 runs between the other two vertices
  eps = 64 * jnp.finfo(s.d2.dtype).eps * s.d2[f]
  tie = (lam[k] < 0) & s.alive[g] & (jnp.abs(s.d2[g] - s.d2[f]) <= eps) & (
    dot(s.v[f], s.v[g], guard) >= s.d2[f] - eps)
  return jnp.where(tie, g, f).astype(jnp.int32)
