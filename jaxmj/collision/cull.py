"""The expensive narrow phase on near pairs only, with static shapes.

The pair plan (plan.py) is static, so a vmapped collider runs on every candidate pair of its
group, near or not; for the GJK/EPA search (~35 fixed-trip iterations per pair, the bulk of
a mesh model's step) that is almost all wasted work: a 6-link mesh arm has 34 candidate
pairs and rarely more than a few within reach. `near_only` runs a search on the pairs the
broadphase keeps (broadphase.out_of_reach, MuJoCo's own bounding-sphere filter with the
margins and gaps), a few pairs at a time: the near pairs are compacted to the front, one
vmapped call of the search per chunk, results scattered back into the group's fixed
per-pair layout. The loop runs ceil(near / chunk) times (the most over a vmapped batch), so
no near pair is ever skipped: unlike MJX's max_geom_pairs, this drops no contact, and the
results are those of running the search on every pair, as the pairs it skips are the ones
the driver clears anyway (and whose plans read "no contact" here).

Gradients: the loop is a data-dependent `while`, which reverse mode cannot differentiate; it
runs only the search, whose inputs carry no gradient anyway (convex.convex_plan). The
differentiable contact is computed from the plans for every pair, outside the loop.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from jaxmj.loops import batched_like, kept
from jaxmj.platform import traces_for_cpu

# Pairs per vmapped call of the search off the CPU: a small multiple of the near pairs a
# scene usually has; larger wastes searches on padding, smaller adds loop trips, and on a GPU
# each trip reads its predicate back to the host. XLA:CPU reads it for free and runs a
# search's lanes one after another, so every padded pair costs a whole search: one pair a
# trip there (CPU_CHUNK). From CHUNK = 8 to 1 on the 2-core CPU (docs/speed.md, "Mesh
# models", 2026-12-05), a step at 1024 worlds: arm6 2.65x, curved_drop 1.47x, mesh_stack
# 1.28x faster; one world: arm6 1.34x, curved_drop 1.25x faster, mesh_stack 4% slower (3
# trips in place of 1).
CHUNK = 8
CPU_CHUNK = 1


def near_only(search, near: jax.Array, args: tuple, chunk: int | None = None):
  """search(*pair_args) -> pytree, run on the pairs where `near`, scattered back.

  near: (npair,) bool; args: per-pair arguments, each with a leading (npair,) axis (None
  allowed), gradients stopped here. Returns the pytree of search outputs with a leading
  (npair,) axis: the search's result for near pairs (and for some far ones that fill the
  last chunk), zeros for the others. chunk: pairs per call (default CPU_CHUNK where traces
  take the CPU's forms, else CHUNK).
  """
  # as arrays: a numpy leaf (a static type table) comes back from stop_gradient as numpy
  # under a derivative and could not be indexed by the loop's traced pair ids
  args = jax.tree.map(lambda x: lax.stop_gradient(jnp.asarray(x)), args)
  n = near.shape[0]
  k = min(chunk or (CPU_CHUNK if traces_for_cpu() else CHUNK), n)
  # one jitted function for the shapes and the loop's body: the body's call then reuses the
  # trace, and vmap over worlds batches the call once per axes pattern (a cached rule), where
  # the while loop's batching rule re-batched the whole search on each pass of its fixed point
  chunk_search = jax.jit(_one_pair(search) if k == 1 else jax.vmap(search))
  shape = jax.eval_shape(chunk_search, *jax.tree.map(lambda x: x[:k], args))
  zeros = batched_like(jax.tree.map(lambda s: jnp.zeros((n,) + s.shape[1:], s.dtype), shape),
                       args)  # the results are per world wherever the pairs are
  order = jnp.argsort(~near, stable=True)  # near pairs first, in pair order
  count = jnp.sum(near.astype(jnp.int32))

  def run(state):
    i, out = state
    # a start past n - k is clamped back (dynamic_slice): the last chunk redoes a few pairs
    idx = lax.dynamic_slice(order, (i * k,), (k,))
    found = chunk_search(*jax.tree.map(lambda x: x[idx], args))
    return i + 1, jax.tree.map(lambda o, f: o.at[idx].set(f), out, found)

  return kept(lax.while_loop(lambda s: s[0] * k < count, run, (jnp.int32(0), zeros))[1])


def _one_pair(search):
  """jax.vmap(search) for chunks of one pair, without the vmap: the search's while loops are
  then traced as they are, not batched (their batching rule re-batches the loop body until
  the batched parts of the carry settle)."""
  def run(*args):
    out = search(*jax.tree.map(lambda x: x[0], args))
    return jax.tree.map(lambda y: y[None], out)

  return run
