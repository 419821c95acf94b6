"""Brax 0.14.2's trainers on jax >= 0.8: `jax.device_put_replicated` is gone from jax
(its migration guide gives `jax.device_put` onto a stacked, sharded array as the
replacement), and Brax's PPO, SAC and APG still call it once to place their training
state. `install()` supplies that replacement under the old name, only where jax lacks it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def device_put_replicated(x, devices):
  """One copy of every leaf of `x` per device, stacked on a leading axis sharded over
  `devices` (what pmap takes)."""
  mesh = jax.sharding.Mesh(np.asarray(devices), ("devices",))
  sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("devices"))
  return jax.tree.map(
    lambda a: jax.device_put(jnp.stack([jnp.asarray(a)] * len(devices)), sharding), x)


def install() -> None:
  try:
    jax.device_put_replicated  # noqa: B018
  except AttributeError:
    jax.device_put_replicated = device_put_replicated
