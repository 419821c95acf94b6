"""Loops of bounded trip count whose finished iterations leave the carry unchanged: the solver's
Newton/CG/PGS iterations and line search, collision's GJK and EPA searches."""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.ad_checkpoint import checkpoint_name


# A loop bounded by at most this many trips runs them all (finished worlds keep their carry):
# on a GPU each trip of a while loop whose count XLA cannot see reads its predicate back to the
# host, which costs more than the few trips an early exit could save (MJX's humanoid: solver
# iterations="1", ls_iterations="4"); longer loops (MuJoCo's defaults: 100 and 50) keep the
# early exit, which saves most of their trips once the solve has converged.
FIXED_TRIPS_MAX = 8


def bounded_loop(n: int, body: Callable, init, done: Callable, early_exit: bool,
                 pack: bool = False):
  """`fori_loop(0, n, body, init)` for a body that leaves the carry unchanged once
  `done(carry)`; with `early_exit` and n > FIXED_TRIPS_MAX the same result from a while_loop
  that stops there (not reverse-differentiable, so only for loops whose values are not
  differentiated). pack: the carry travels packed, one array per dtype (`packing`)."""
  if pack:
    p, u = packing(init)
    out = bounded_loop(n, lambda k, c: p(body(k, u(c))), p(init), lambda c: done(u(c)),
                       early_exit)
    return u(out)
  if n == 1:  # no loop for XLA to schedule around (MJX's humanoid: iterations="1")
    return body(0, init)
  if not early_exit or n <= FIXED_TRIPS_MAX:
    return jax.lax.fori_loop(0, n, body, init)

  def step(kc):
    k, c = kc
    return k + 1, body(k, c)

  return kept(jax.lax.while_loop(lambda kc: (kc[0] < n) & ~done(kc[1]), step, (0, init))[1])


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


def packing(tree, lead: int = 0):
  """(pack, unpack) for pytrees shaped like `tree`: pack(tree) -> a list of arrays, one per
  dtype, each leaf reshaped to its `lead` leading axes and one more and concatenated on that
  last axis; unpack inverts it. Values are moved, never computed, so bits are kept.

  Why: XLA:CPU copies the elementwise computation of a value into every kernel that reads it.
  A loop body (or a scatter) that ends in one output per leaf computes the shared part of the
  leaves once per leaf; packed, the leaves of a dtype end in one kernel."""
  leaves, treedef = jax.tree.flatten(tree)
  dtypes = sorted({x.dtype for x in leaves}, key=str)
  widths = [math.prod(x.shape[lead:]) for x in leaves]

  def pack(t):
    xs = jax.tree.leaves(t)
    return [jnp.concatenate([x.reshape(x.shape[:lead] + (w,)) for x, w in zip(xs, widths)
                             if x.dtype == dt], axis=-1) for dt in dtypes]

  def unpack(arrays):
    at = dict.fromkeys(dtypes, 0)
    out = []
    for x, w in zip(leaves, widths):
      a = arrays[dtypes.index(x.dtype)]
      out.append(a[..., at[x.dtype]:at[x.dtype] + w].reshape(a.shape[:lead] + x.shape[lead:]))
      at[x.dtype] += w
    return jax.tree.unflatten(treedef, out)

  return pack, unpack
