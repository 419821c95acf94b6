"""Loops of bounded trip count whose finished iterations leave the carry unchanged: the solver's
Newton/CG/PGS iterations and line search, collision's GJK and EPA searches; collision's short
fixed-length searches (`short_scan`); a branch's predicate that vmap keeps a branch
(`batch_any`); a carry's batching told to vmap up front (`batched_like`)."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name
from jax.custom_batching import custom_vmap

from jaxmj.platform import by_platform

# A loop bounded by at most this many trips runs them all (finished worlds keep their carry):
# on a GPU each trip of a while loop whose count XLA cannot see reads its predicate back to the
# host, which costs more than the few trips an early exit could save (MJX's humanoid: solver
# iterations="1", ls_iterations="4"); longer loops (MuJoCo's defaults: 100 and 50) keep the
# early exit, which saves most of their trips once the solve has converged.
FIXED_TRIPS_MAX = 8


def bounded_loop(n: int, body: Callable, init, done: Callable, early_exit: bool, start=0):
  """`fori_loop(start, n, body, init)` for a body that leaves the carry unchanged once
  `done(carry)`; with `early_exit` and n > FIXED_TRIPS_MAX the same result from a while_loop
  that stops there (not reverse-differentiable, so only for loops whose values are not
  differentiated). start: the first trip (an int or a traced () int32)."""
  if n == 1 and isinstance(start, int):  # no loop for XLA to schedule around (MJX's humanoid)
    return body(0, init) if start == 0 else init
  if not early_exit or n <= FIXED_TRIPS_MAX:
    return jax.lax.fori_loop(start, n, body, init)

  def step(kc):
    k, c = kc
    return k + 1, body(k, c)

  # Under vmap the loop runs while any world is unfinished. The predicate is reduced over the
  # batch here: a batched one makes the loop's lowering select each carried array's old or new
  # value every trip, and XLA then copies the carry (EPA's polytope) where it could update it
  # in place. Nothing selects a finished world's carry back, so the body's contract (a
  # finished carry unchanged) is what keeps it, as in the fixed-trip loop above.
  return kept(jax.lax.while_loop(lambda kc: (kc[0] < n) & batch_any(~done(kc[1])), step,
                                 (start, init))[1])


def batched_like(tree, ref):
  """`tree`'s values unchanged, batched under vmap wherever `ref` is.

  A loop's carry whose entries start unbatched (zeros, counters) but come out of the body
  batched costs vmap one more batching of the body per entry that flips, as vmap's while and
  scan rules find the carry's batching by a fixpoint, and every loop nested in the body is
  batched again with it: the Newton solver's loop took four batchings of its body and twenty
  of its line search's (quadruped: ~1.1 s of a 4.8 s vmapped trace, 0.7 s after). Each value is
  selected between itself and itself by a predicate read from one entry of each of `ref`'s
  arrays, which batches it where any of them is batched; XLA folds the select away."""
  firsts = [jnp.ravel(x)[0] for x in jax.tree.leaves(ref) if jnp.size(x)]
  if not firsts:
    return tree
  pred = functools.reduce(jnp.logical_and, [x == x for x in firsts])
  return jax.tree.map(lambda x: jax.lax.select(jnp.broadcast_to(pred, jnp.shape(x)), x, x), tree)


def short_scan(f: Callable, init, xs):
  """`lax.scan(f, init, xs)` for a short search of fixed length: a loop on the CPU, unrolled
  elsewhere, where each trip of a loop ends in a host sync (box_pile's collision: 26 trips
  per step on an H200 target, scripts/gpu_hlo.py). The CPU keeps its loop and its bits."""
  return by_platform(
    init, xs, cpu=lambda c, x: jax.lax.scan(f, c, x),
    default=lambda c, x: jax.lax.scan(f, c, x, unroll=True))


@custom_vmap
def batch_any(pred: jax.Array) -> jax.Array:
  """`pred` (a bool scalar), reduced by `any` over every axis vmap maps it along, so that a
  `lax.cond` on it stays a branch over the whole batch (vmap turns a cond on a batched
  predicate into a select that runs both branches). For a branch whose two sides agree
  where both may be taken (e.g. a shortcut for a special case that the general side also
  covers): a world's result may then depend on its batch in round-off."""
  return pred


@batch_any.def_vmap
def _batch_any_vmap(axis_size, in_batched, pred):
  del axis_size
  # reduced over this vmap's axis, then handed on to the vmaps around it: jnp.any alone
  # would leave the outer axes batched (a world's pairs reduced, the worlds not)
  return batch_any(jnp.any(pred) if in_batched[0] else pred), False


def kept(outputs):
  """Outputs that rematerializing reverse mode keeps: a while loop's, or a chain's end.

  Under `jax.checkpoint` (rollout's `dynamics/checkpoint.lean_residuals`) JAX stages a
  while loop into the backward pass whole, whatever the policy, whenever the backward pass
  reads anything computed from its outputs: every step's backward pass would rerun the
  search. A named value is kept by that policy, so the loop stays in the forward pass.
  Likewise a value at the end of a chain of products and elementwise steps (a solve's
  sweeps, kinematics' levels) that a tangent reads: kept, it is one residual, where the
  policy would keep every product of the chain to recompute it. Values and the forward
  program are unchanged."""
  return jax.tree.map(lambda x: checkpoint_name(x, "loop"), outputs)
