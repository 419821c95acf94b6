"""Smooth reward terms in [0, 1], shared by the tasks (dm_control's scale: a step's reward is
at most 1, so an episode of 1000 steps returns at most 1000)."""

from __future__ import annotations

import jax.numpy as jnp


def bump(x, margin: float, value_at_margin: float = 0.1):
  """A Gaussian bump: 1 at x = 0, `value_at_margin` at |x| = margin, -> 0 far out."""
  return jnp.power(value_at_margin, jnp.square(x / margin))


def within(x, lo: float, hi: float, margin: float, value_at_margin: float = 0.1):
  """1 inside [lo, hi], a Gaussian tail of width `margin` outside it."""
  gap = jnp.maximum(lo - x, 0.0) + jnp.maximum(x - hi, 0.0)
  return bump(gap, margin, value_at_margin)
