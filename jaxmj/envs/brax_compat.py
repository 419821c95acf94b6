"""Brax 0.14.2's trainers on jax >= 0.8: `jax.device_put_replicated` is gone from jax
(its migration guide gives `jax.device_put` onto a stacked, sharded array as the
replacement), and Brax's PPO, SAC and APG still call it once to place their training
state. `install()` supplies a replacement under the old name, only where jax lacks it, and
has Brax's evaluator compile its episode once (see `_host_params`); `placing_pmap()` has
APG's training epoch compile once."""

from __future__ import annotations

import contextlib
import functools

import jax
import jax.numpy as jnp
import numpy as np

# Brax's trainers pmap over this axis name (`_PMAP_AXIS_NAME` in each train module)
_BRAX_AXIS = "i"


def device_put_replicated(x, devices):
  """One copy of every leaf of `x` per device, stacked on a leading axis, placed exactly
  as Brax's pmapped training step returns its state: through an identity pmap over Brax's
  axis name, with weak types made strong. Placed any other way (or weakly typed), the
  first training epoch and the first evaluation see other argument shardings and types
  than every later one, and each compiles twice (measured: two extra compiles of the
  env step, ~3 min of a CPU run)."""
  stacked = jax.tree.map(
    lambda a: jnp.stack([jnp.asarray(a, dtype=jnp.asarray(a).dtype)] * len(devices)), x)
  return jax.pmap(lambda t: t, axis_name=_BRAX_AXIS, devices=devices)(stacked)


def _host_params(run_evaluation):
  """Brax's Evaluator.run_evaluation, given the policy parameters as host arrays. Its
  jitted episode takes the last evaluation's (donated) state: uncommitted the first time
  (from a reset on host keys), placed like the parameters every later time, so with the
  trainer's placed parameters the whole episode (env step included) compiled twice.
  Host parameters leave every call uncommitted: one compile."""

  @functools.wraps(run_evaluation)
  def run(self, policy_params, *args, **kwargs):
    return run_evaluation(self, jax.tree.map(np.asarray, policy_params), *args, **kwargs)

  run.host_params = True
  return run


def _placing(pmap):
  """`pmap` whose calls first place their array arguments as the mapped function returns
  its outputs (a NamedSharding over the mapped axis). jax's pmap is a jit with fixed input
  shardings, and an argument placed otherwise (a single-device array from a jit or from
  `jax.random.split`) makes a second program: Brax's APG feeds its first training epoch
  such a key and env state (its state after a jitted step), so that epoch, env step and
  gradient included, compiled twice (79 s more on CartpoleBalance, 2 CPU cores). Mapped
  functions with other in_axes or static arguments, and all on several hosts, are left as
  they are."""

  @functools.wraps(pmap)
  def placing_pmap(fun, axis_name=None, *, in_axes=0, static_broadcasted_argnums=(),
                   devices=None, **kwargs):
    mapped = pmap(fun, axis_name, in_axes=in_axes, devices=devices,
                  static_broadcasted_argnums=static_broadcasted_argnums, **kwargs)
    if (axis_name is None or in_axes != 0 or static_broadcasted_argnums
        or jax.process_count() > 1):  # several hosts: pmap places host-local arrays itself
      return mapped

    @functools.wraps(mapped)
    def call(*args):
      leaves = [a for a in jax.tree.leaves(args) if isinstance(a, jax.Array)]
      if leaves:
        n = leaves[0].shape[0]
        mesh = jax.sharding.Mesh(np.asarray(devices or jax.local_devices()[:n]), (axis_name,))
        placed = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(axis_name))
        args = jax.tree.map(lambda a: a if not isinstance(a, jax.Array) or a.sharding == placed
                            else jax.device_put(a, placed), args)
      return mapped(*args)

    call.lower = mapped.lower
    return call

  return placing_pmap


@contextlib.contextmanager
def placing_pmap():
  """Within: `jax.pmap` places its mapped arguments as its outputs are placed (`_placing`),
  so that a Brax trainer's pmapped epoch compiles once. Restored on exit."""
  pmap = jax.pmap
  jax.pmap = _placing(pmap)
  try:
    yield
  finally:
    jax.pmap = pmap


def install() -> None:
  try:
    jax.device_put_replicated  # noqa: B018
  except AttributeError:
    jax.device_put_replicated = device_put_replicated
  from brax.training import acting

  if not getattr(acting.Evaluator.run_evaluation, "host_params", False):
    acting.Evaluator.run_evaluation = _host_params(acting.Evaluator.run_evaluation)
