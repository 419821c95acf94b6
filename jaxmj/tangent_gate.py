"""Tangents computed only where they can be nonzero.

A step's fixed shapes make it differentiate every contact slot and row, also where nothing
touches: a falling humanoid's reverse pass spent a fifth of its time transposing the
colliders and contact rows of slots that hold no contact (docs/gradients.md, "Contact-free
steps"). `gated_tangent` computes such a stage's tangent, and in reverse mode its transpose,
under a `lax.cond` on a predicate of the stage's primal result.

The tangent map goes through `jax.custom_derivatives.linear_call` with its transpose, so
that reverse mode stages the call whole into the backward pass and runs the cond there. A
cond on the tangent inside the custom JVP itself was partially evaluated by reverse mode:
every residual the map reads became an output of a forward-side copy of the cond (one copy
each, 100-180 a step), which cost more than the gate saved. JAX (0.10) defines no vmap rule
for `linear_call`; this module registers one where none is registered, and without the
internals it needs the gate is left out (values and derivatives are the same either way).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero, linear_call

from jaxmj.loops import batch_any
from jaxmj.platform import traces_for_cpu

try:  # JAX internals: the primitive, its batching table, jaxpr evaluation and DCE
  from jax._src import core as _core
  from jax._src.custom_derivatives import linear_call_p as _linear_call_p
  from jax._src.interpreters import batching as _batching
  from jax._src.interpreters import partial_eval as _pe

  _GATED = all(hasattr(*a) for a in ((_core, "eval_jaxpr"), (_pe, "dce_jaxpr"),
                                     (_batching, "fancy_primitive_batchers")))
except ImportError:
  _GATED = False


def _inexact(x) -> bool:
  return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


def _spec(x) -> jax.ShapeDtypeStruct:
  return jax.ShapeDtypeStruct(jnp.shape(x), jnp.result_type(x))


def batched_like(out, xs):
  """out (a pytree) with each inexact leaf passed through a select that never takes its
  other side, a sum of every input xs (arrays): the same values, but batched wherever an
  input is. Under vmap JAX batches a custom JVP's primal when it batches the program (a
  scan's body, say) and its tangent rule only when it differentiates it; the rule's tangents
  (here a linear map of every input's) must then not be batched where the primal is not: a
  scan of steps under vmap failed to differentiate, a row's friction loss (read from the
  Model alone) having a batched tangent and an unbatched value."""
  anchor = sum(jnp.sum(x) for x in xs if _inexact(x))
  never = jnp.zeros((), bool)
  return jax.tree.map(lambda y: jnp.where(never, anchor.astype(y.dtype), y)
                      if _inexact(y) and not isinstance(anchor, int) else y, out)


def gated_tangent(live: Callable[[Any], jax.Array], fn: Callable, *args):
  """fn(*args), whose tangent is fn's where `live(fn(*args))` (a bool scalar) holds and zero
  elsewhere. Values are fn's, the same program (the gate is a custom JVP). For a `live` that
  holds wherever the tangent of anything downstream can depend on fn's: the caller states
  why a zero tangent is exact where it does not.

  args: pytrees (Model, Data, arrays); every inexact array leaf is differentiable, the
  others are read as constants. Under vmap `live` is reduced over the batch
  (`loops.batch_any`: one branch for the whole batch). On the CPU only: off it the stage is
  differentiated as it is (a branch costs a GPU a host sync)."""
  if not (_GATED and traces_for_cpu()):
    return fn(*args)
  leaves, tree = jax.tree.flatten(args)
  # traced leaves are the custom JVP's arguments (a closure over a trace's values fails when
  # differentiated); numpy leaves stay numpy, which the stages read as static
  where = [i for i, x in enumerate(leaves) if isinstance(x, jax.Array)]

  def call(xs):
    full = list(leaves)
    for i, x in zip(where, xs):
      full[i] = x
    return fn(*jax.tree.unflatten(tree, full))

  @jax.custom_jvp
  def gated(*xs):
    return batched_like(call(xs), xs)

  @partial(gated.defjvp, symbolic_zeros=True)
  def _gated_jvp(primals, tangents):
    # differentiated in what has a tangent (not the Model, say, when only qvel has one)
    diff = [k for k, (x, t) in enumerate(zip(primals, tangents))
            if _inexact(x) and not isinstance(t, SymbolicZero)]

    def of_diff(*ys):
      xs = list(primals)
      for k, y in zip(diff, ys):
        xs[k] = y
      return call(xs)

    out, linear = jax.linearize(of_diff, *(primals[k] for k in diff))
    leaves_out, tree_out = jax.tree.flatten(out)
    keep = [_inexact(x) for x in leaves_out]
    # shapes only: the linear call traces jaxprs of its own, which must not read this trace
    ins = [_spec(primals[k]) for k in diff]
    outs = [_spec(x) for x, k in zip(leaves_out, keep) if k]

    def kept_tangent(linear, *t):
      return [x for x, k in zip(jax.tree.leaves(linear(*t)), keep) if k]

    # only the tangents the map reads go in: the call is opaque to dead-code elimination, so
    # an input it ignores would have its tangent computed upstream (the mass factor's, say)
    jaxpr = jax.make_jaxpr(partial(kept_tangent, linear))(*ins)
    read = _pe.dce_jaxpr(jaxpr.jaxpr, [True] * len(outs))[1]
    used = [k for k, r in enumerate(read) if r]

    def zeros(specs):
      return [jnp.zeros(s.shape, s.dtype) for s in specs]

    def tangent(res, t):
      on, linear = res

      def on_(t):
        full = zeros(ins)
        for k, x in zip(used, t):
          full[k] = x
        return kept_tangent(linear, *full)

      return jax.lax.cond(on, on_, lambda t: zeros(outs), t)

    def cotangent(res, ct):
      on, linear = res
      transposed = jax.linear_transpose(partial(kept_tangent, linear), *ins)

      def on_(ct):
        r = transposed(ct)
        return [r[k] for k in used]

      return jax.lax.cond(on, on_, lambda ct: zeros([ins[k] for k in used]), ct)

    on = batch_any(live(out))
    dkept = iter(linear_call(tangent, cotangent, (on, linear),
                             [tangents[diff[k]] for k in used]) if used else zeros(outs))
    dout = [next(dkept) if k else np.zeros(jnp.shape(x), jax.dtypes.float0)
            for x, k in zip(leaves_out, keep)]
    return batched_like(out, primals), jax.tree.unflatten(tree_out, dout)

  return gated(*(leaves[i] for i in where))


def _linear_call_vmap(axis_data, args, dims, *, callee, transpose_thunk, num_callee_consts,
                      num_res):
  """vmap of `linear_call`: the call of the vmapped map and its vmapped transpose. The
  linear operands are all mapped (so that their transposes come out mapped); residuals keep
  their axes, so an unmapped predicate stays one branch for the batch."""
  size = axis_data.size
  args = [x if d is None else jnp.moveaxis(x, d, 0) for x, d in zip(args, dims)]
  axes = [None if d is None else 0 for d in dims]
  fixed = num_callee_consts + num_res
  lin = [x if a == 0 else jnp.broadcast_to(x, (size, *jnp.shape(x)))
         for x, a in zip(args[fixed:], axes[fixed:])]
  c_axes, r_axes = axes[:num_callee_consts], axes[num_callee_consts:fixed]

  def fun(res, lin):
    consts, res = res
    return jax.vmap(lambda c, r, t: _core.eval_jaxpr(callee.jaxpr, (), *c, *r, *t),
                    in_axes=(c_axes, r_axes, 0), axis_size=size)(consts, res, lin)

  def fun_transpose(res, cts):
    _, res = res
    jaxpr, consts = transpose_thunk()
    return jax.vmap(lambda r, c: _core.eval_jaxpr(jaxpr.jaxpr, (), *consts, *r, *c),
                    in_axes=(r_axes, 0), axis_size=size)(res, cts)

  out = linear_call(fun, fun_transpose,
                    (args[:num_callee_consts], args[num_callee_consts:fixed]), lin)
  return out, [0] * len(out)


if _GATED and _linear_call_p not in _batching.fancy_primitive_batchers:
  _batching.fancy_primitive_batchers[_linear_call_p] = _linear_call_vmap
