"""Rematerialized scans: reverse mode through long rollouts in bounded memory.

Reverse mode through `lax.scan` keeps every step's residuals (for a contact-rich model, many
times the state), so memory grows like T times a step's residuals. Cutting the scan into
segments of `k` steps, each under `jax.checkpoint`, keeps only the carry at each segment's
start; the backward pass recomputes one segment at a time. Memory is then about
T / k carries plus k steps' residuals (smallest near k = sqrt(T)), for one extra forward pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp


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
