"""Rematerialized scans: reverse mode through long rollouts in bounded memory.

Reverse mode through `lax.scan` keeps every step's residuals (for a contact-rich model, many
times the state), so memory grows like T times a step's residuals. Cutting the scan into
segments of `k` steps, each under `jax.checkpoint`, keeps only the carry at each segment's
start; the backward pass recomputes one segment at a time. Memory is then about
T / k carries plus k steps' residuals (smallest near k = sqrt(T)), for one extra forward pass.

Within a step, `lean_residuals` decides what the backward pass keeps (rollout applies it to every
step, segmented or not): see there.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp

# Primitives whose outputs the backward pass recomputes rather than keeps: elementwise
# arithmetic, comparisons, layout changes (JAX 0.10's stack, unstack and split among them)
# and gathers. XLA fuses their recomputation into the backward pass's own fusions at no extra
# op, while every value a scan keeps for its backward pass is one more buffer written each
# step, one op apiece (on the CPU a few microseconds each, whatever its size); a gather's
# operand is mostly kept anyway (frames, cdof, qpos), read by many gathers. Everything else --
# products, reductions, scatters, loops (the solver's iterations), decompositions -- is kept,
# and so is a value named by `loops.kept` (the end of a chain that would otherwise be
# recomputed from each of its costly links).
_RECOMPUTED = frozenset("""
  abs acos add add_any and asin atan atan2 bitcast_convert_type broadcast_in_dim cbrt ceil
  clamp concatenate convert_element_type copy copy_p cos div eq erf exp exp2 expand_dims expm1
  floor gather ge gt integer_pow iota is_finite le log log1p logistic lt max min mul ne neg
  nextafter not or pad platform_index pow reshape rem round rsqrt select_n shift_left
  shift_right_arithmetic shift_right_logical sign sin slice split sqrt square squeeze stack
  stop_gradient sub tan tanh transpose unstack xor
""".split())


def keeps_costly(prim, *_, **__) -> bool:
  """`jax.checkpoint` policy: keep the outputs of every primitive but `_RECOMPUTED`'s."""
  return prim.name not in _RECOMPUTED


def lean_residuals(fn: Callable) -> Callable:
  """`fn` under `jax.checkpoint` with the `keeps_costly` policy: same values (outside reverse
  mode it is `fn`'s program, op for op), and reverse mode through a scan of it stores a
  fraction of the arrays per step, recomputing elementwise values and gathers (arrays stacked
  per step by the forward scan of a rollout's compiled gradient, humanoid_floor, float32: 156,
  against 270 keeping gathers, JAX 0.10's stacks and every link of a solve's sweeps).
  `prevent_cse=False`: inside a scan XLA cannot merge the recomputation with the forward
  pass, and no optimization barrier then splits the step's fusions. A while
  loop is recomputed whatever the policy (JAX stages it into the backward pass whole), so
  the runtime's while loops name their outputs (`loops.kept`), which the policy keeps: else
  every step's backward pass would solve again and rerun the collision searches."""
  return jax.checkpoint(fn, policy=keeps_costly, prevent_cse=False)


def segment_length(checkpoint: bool | int, nstep: int) -> int:
  """Steps per checkpointed segment: `checkpoint` itself if an int, ceil(sqrt(nstep)) if True."""
  if checkpoint is True:
    return max(1, math.isqrt(max(nstep - 1, 0)) + 1)
  if isinstance(checkpoint, bool) or not isinstance(checkpoint, int) or checkpoint < 1:
    raise ValueError(f"checkpoint must be True or a segment length >= 1, got {checkpoint!r}")
  return checkpoint


def segmented_scan(body: Callable, carry, xs: jax.Array, k: int):
  """`lax.scan(body, carry, xs)` over the leading axis of `xs`, run as segments of `k` steps,
  each rematerialized in the backward pass (a shorter last segment takes the remainder).
  Same values; the stacked outputs are (T, ...) as from one scan."""
  nstep = xs.shape[0]
  segment = jax.checkpoint(lambda c, u: jax.lax.scan(body, c, u))
  nseg, rem = divmod(nstep, k)
  outs = []
  if nseg:
    main = xs[:nseg * k].reshape((nseg, k) + xs.shape[1:])
    carry, ys = jax.lax.scan(segment, carry, main)
    outs.append(jax.tree.map(lambda y: y.reshape((nseg * k,) + y.shape[2:]), ys))
  if rem:
    carry, ys = segment(carry, xs[nseg * k:])
    outs.append(ys)
  return carry, jax.tree.map(lambda *y: jnp.concatenate(y), *outs)
