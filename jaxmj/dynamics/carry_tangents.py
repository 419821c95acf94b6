"""Differentiating a scan of steps: give the carry every tangent it will have from the start.

JAX differentiates `lax.scan` (`jax.jvp`, `jax.linearize`, and so `jax.grad`) by first finding
which carried values have a nonzero tangent: it linearizes the whole body with the initial
carry's tangents, adds the carries that came out nonzero, and linearizes again until nothing
changes. A rollout differentiated in its initial velocity starts with qvel alone; one pass
adds qpos and what is computed from it, the next the solver's warm start, and the third
finds nothing new: three linearizations of the step where one would do.

`settle_carry_tangents` finds the same fixed point on the step's jaxpr by a dependence
analysis (a walk over its equations, each loop's carries to their own fixed point: no
linearization) and hands the scan an initial carry whose tangents are already nonzero
there, so that JAX's first linearization is its last. Values and derivatives are unchanged:
the added tangents are zeros, on the carries JAX's own fixed point instantiates as zeros
and at most a few computed fields the step does not read (tests/dynamics/test_carry_tangents.py).
Tracing a 10-step rollout's derivative in the initial velocity, CPU time on one core
(humanoid_floor, two rounds each, 2026-12-02): `jax.grad` 0.80x, `jax.jacfwd` 0.65x of the
plain scan's; gradients of 20-step rollouts bit for bit the same (humanoid_floor, a ball).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import SymbolicZero
from jax.extend.core import ClosedJaxpr, Literal

from jaxmj.tangent_gate import batched_like

# primitives whose outputs carry no tangent whatever their inputs (JAX's zero JVPs, and
# comparisons: a select's tangent does not flow through its predicate). Other integer and
# boolean values do carry dependence: the exact-arithmetic guards pass floats through their
# bits (bitcast, or, bitcast back) inside custom_jvp functions whose rules differentiate them.
_NO_TANGENT = frozenset({"stop_gradient", "sign", "floor", "ceil", "round", "is_finite",
                         "nextafter", "lt", "le", "gt", "ge", "eq", "ne", "argmin", "argmax"})
# primitives whose sub-jaxpr `jaxpr` maps inputs to outputs one for one
_CALLS = frozenset({"jit", "pjit", "remat2", "checkpoint", "closed_call", "core_call"})


def _inexact(dtype) -> bool:
  return jnp.issubdtype(dtype, jnp.inexact)


def _loop_fixpoint(body, consts: list[bool], carry: list[bool], xs: list[bool]):
  """(carry out, other outputs) tangents of a loop body iterated to its fixed point."""
  while True:
    out = reaches(body, consts + carry + xs)
    new = [a or b for a, b in zip(carry, out[:len(carry)])]
    if new == carry:
      return carry, out[len(carry):]
    carry = new


def reaches(jaxpr, nonzero: list[bool]) -> list[bool]:
  """Which outputs of `jaxpr` (a Jaxpr or ClosedJaxpr) depend on the inputs flagged in
  `nonzero` along paths a tangent follows: forward reachability through its equations, integer
  and boolean values included (_NO_TANGENT), so that a caller reads the inexact outputs' flags
  as "can carry a nonzero tangent". Calls, `cond`, `while` and `scan` are followed into their
  bodies (loops to their carries' fixed point); any other primitive with a flagged input
  flags all its outputs.

  A custom_jvp or custom_vjp call marks all its outputs: coarser than JAX, which sees which
  tangents a custom rule computes from zeros alone (following the rules' jaxprs here cost as
  much tracing as the analysis saves). Where the set comes out too large, the scan carries
  zeros as tangents (harmless on the step's computed fields, which it does not read; the
  caller keeps inputs that only feed such calls out of the analysis: `quiet_consts`); where
  too small, JAX's own fixed point linearizes once more, as without this analysis."""
  jaxpr = jaxpr.jaxpr if isinstance(jaxpr, ClosedJaxpr) else jaxpr
  live = {v for v, nz in zip(jaxpr.invars, nonzero) if nz}

  def flag(v):
    return not isinstance(v, Literal) and v in live

  for eqn in jaxpr.eqns:
    ins = [flag(v) for v in eqn.invars]
    name, p = eqn.primitive.name, eqn.params
    if not any(ins) or name in _NO_TANGENT or (
        name == "convert_element_type" and not _inexact(eqn.outvars[0].aval.dtype)):
      continue
    if name in _CALLS:
      outs = reaches(p["jaxpr"], ins)
    elif name == "cond":
      branch = [reaches(b, ins[1:]) for b in p["branches"]]
      outs = [any(col) for col in zip(*branch)]
    elif name == "while":
      nc, nb = p["cond_nconsts"], p["body_nconsts"]
      outs, _ = _loop_fixpoint(p["body_jaxpr"], ins[nc:nc + nb], ins[nc + nb:], [])
    elif name == "scan":
      nc, nk = p["num_consts"], p["num_carry"]
      carry, ys = _loop_fixpoint(p["jaxpr"], ins[:nc], ins[nc:nc + nk], ins[nc + nk:])
      outs = carry + ys
    else:
      outs = [True] * len(eqn.outvars)
    live.update(v for v, nz in zip(eqn.outvars, outs) if nz)
  return [flag(v) for v in jaxpr.outvars]


def settle_carry_tangents(step: Callable, consts, carry, xs, quiet_consts=()):
  """`carry` (a pytree), unchanged in value; differentiated, its tangents are nonzero (zeros
  added) on every leaf that a scan of `carry = step(consts, carry with xs[t])` would make
  nonzero, so that the scan's differentiation needs one linearization of its body.

  step(consts, carry) -> carry, with the same structure; xs: a pytree of per-step inputs
  that the scan puts into the carry before each step (its leaves replace the carry's leaves
  of the same path, here `ctrl`: see rollout), given as {carry path: (T, ...) array}.
  quiet_consts: path prefixes of `consts` leaves whose tangents do not count (rollout: the
  sensor parameters, which reach the state only through custom-derivative calls that the
  analysis marks whole).
  Call it inside the caller's trace, before the scan: it traces `step` once, which the scan
  then takes from JAX's cache.
  """
  leaves, tree = jax.tree.flatten(carry)
  quiet = [any(jax.tree_util.keystr(p).startswith(q) for q in quiet_consts)
           for p, _ in jax.tree_util.tree_flatten_with_path(consts)[0]]
  paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(carry)[0]]
  xs = {k: v for k, v in xs.items() if k in paths}  # an empty field is no leaf (pytree.py)
  xs_at = [paths.index(k) for k in xs]

  def anchored(consts, leaves, xs):
    """leaves, each inexact one passed through a select that never takes its other side, a
    sum of every input: the same values, but batched wherever any input is, so that
    settled_jvp's tangents (which may read any input's tangent) are never batched where
    their primals are not (JAX batches a custom_jvp's primal and rule separately)."""
    return batched_like(leaves, jax.tree.leaves((consts, leaves, xs)))

  settled = jax.custom_jvp(anchored)
  traced = []  # the step's jaxpr, set below

  def settled_jvp(primals, tangents):
    consts, leaves, _ = primals
    primal_out = anchored(*primals)
    flat_t = jax.tree.leaves(tangents, is_leaf=lambda t: isinstance(t, SymbolicZero))
    nonzero = [not isinstance(t, SymbolicZero) and t.dtype != jax.dtypes.float0 for t in flat_t]
    n_c, n_l = len(jax.tree.leaves(consts)), len(leaves)
    nz_consts, nz_carry, nz_xs = nonzero[:n_c], nonzero[n_c:n_c + n_l], nonzero[n_c + n_l:]
    nz_consts = [nz and not q for nz, q in zip(nz_consts, quiet)]
    out_t = list(tangents[1])
    if not any(nonzero):
      return primal_out, out_t
    carry_nz = list(nz_carry)
    for i, nz in zip(xs_at, nz_xs):  # the scan puts xs there before each step
      carry_nz[i] = carry_nz[i] or nz
    carry_nz, _ = _loop_fixpoint(traced[0], nz_consts, carry_nz, [])
    # a zero that JAX's partial evaluation cannot see through: a select of a nonzero tangent
    # (the select's transpose passes no cotangent back through the unused branch)
    source = next(t for t, nz in zip(flat_t, nonzero) if nz)
    scalar = jnp.sum(source)
    never = jnp.zeros((), bool)
    for i, (t, nz, x) in enumerate(zip(out_t, carry_nz, leaves)):
      if nz and isinstance(t, SymbolicZero) and _inexact(x.dtype):
        out_t[i] = jnp.where(never, scalar.astype(x.dtype), jnp.zeros(np.shape(x), x.dtype))
    return primal_out, out_t

  settled.defjvp(settled_jvp, symbolic_zeros=True)
  out = settled(consts, leaves, [xs[k] for k in xs])
  # The step traced here, with the carry the scan will get, in the caller's trace: the scan's
  # own trace of it then comes from JAX's cache (no second trace), and the rule, run later
  # when the caller's jaxpr is differentiated, analyses these equations without tracing.
  traced.append(jax.make_jaxpr(lambda c, x: step(c, jax.tree.unflatten(tree, x)))(consts, out))
  return jax.tree.unflatten(tree, out)
