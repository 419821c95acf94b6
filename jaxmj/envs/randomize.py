"""Domain randomization: a batch of Models, one per world, and the vmap axes that go with it.

Every numeric Model field is a jax.Array leaf (masses, friction, damping, gains, geometry,
`opt.timestep`, ...), so a randomized world is `m.replace(field=...)`. What `vmap` needs
besides is an in_axes pytree shaped like the Model: 0 on the fields that differ per world,
None on the rest (which stay shared, not copied per world). `model_in_axes` builds it from
field names; `randomization(fn)` builds Brax's `randomization_fn` from a per-world function
and finds the fields it changes by itself.

    def heavier(m, rng):
      scale = jax.random.uniform(rng, (m.nbody,), minval=0.8, maxval=1.2)
      return m.replace(body_mass=m.body_mass * scale)

    env = jaxmj.envs.wrap(env, randomization_fn=functools.partial(
      jaxmj.envs.randomization(heavier), rng=jax.random.split(key, num_worlds)))

Fields that the compiler and mj_setConst derive from others (subtree masses, invweight0,
dof_M0, actuator_acc0, geom bounds, ...) follow the randomized ones with
`randomization(fn, set_const=True)`, and body masses and inertias follow randomized geom
sizes and densities with `from_geoms=True` as well (jaxmj.set_const), with no recompile:

    def bigger(m, rng):
      scale = jax.random.uniform(rng, (m.ngeom, 3), minval=0.8, maxval=1.2)
      return m.replace(geom_size=m.geom_size * scale)

    randomization_fn = jaxmj.envs.randomization(bigger, set_const=True, from_geoms=True)
"""

from __future__ import annotations

from collections.abc import Callable

import jax

from jaxmj.dynamics import set_const as constants
from jaxmj.types import Model


def _replace_path(tree, path: list[str], value):
  if len(path) == 1:
    if not hasattr(tree, path[0]):
      raise ValueError(f"Model has no field {path[0]!r}")
    return tree.replace(**{path[0]: value})
  return tree.replace(**{path[0]: _replace_path(getattr(tree, path[0]), path[1:], value)})


def model_in_axes(m: Model, *fields: str) -> Model:
  """A Model-shaped in_axes pytree: 0 on each named field ("body_mass", "opt.timestep"),
  None on every other leaf. Raises ValueError naming a field the Model lacks or a static
  (non-numeric-leaf) field, which vmap cannot batch."""
  axes = jax.tree.map(lambda _: None, m)
  for name in fields:
    path = name.split(".")
    owner = m
    for p in path[:-1]:
      owner = getattr(owner, p, None)
    if owner is None or not hasattr(owner, path[-1]):
      raise ValueError(f"Model has no field {name!r}")
    if path[-1] in getattr(type(owner), "_static_names", ()):
      raise ValueError(f"Model field {name!r} is static (part of the structure), not a "
                       "numeric leaf: it cannot differ between worlds of one batch")
    axes = _replace_path(axes, path, 0)
  return axes


def changed_fields(fn: Callable[[Model, jax.Array], Model], m: Model) -> list[str]:
  """The leaf fields (dotted names) that `fn(m, rng)` replaces, found by tracing it once."""
  out = jax.eval_shape(lambda m, k: _mark_changed(fn(m, k), m), m, jax.random.PRNGKey(0))
  return [jax.tree_util.keystr(path, simple=True, separator=".")
          for path, flag in jax.tree_util.tree_leaves_with_path(out) if flag.shape == (1,)]


def _mark_changed(new: Model, old: Model):
  # leaves fn left alone are the very same tracers; mark the others by a (1,) shape
  return jax.tree.map(lambda a, b: jax.numpy.zeros((0,) if a is b else (1,)), new, old)


def randomization(fn: Callable[[Model, jax.Array], Model], set_const: bool = False,
                  from_geoms: bool = False) -> Callable:
  """Brax's `randomization_fn(sys, rng) -> (batched Model, in_axes)` from a per-world
  `fn(m, rng) -> m'`; rng is (B, 2). Only the fields `fn` changes get a world axis.

  set_const: each world's derived constants recomputed after `fn` (jaxmj.set_const, with
  `from_geoms`: body inertia re-inferred from geoms first); those fields get a world axis too.
  """
  if set_const or from_geoms:
    fn = _with_constants(fn, from_geoms)

  def randomization_fn(sys: Model, rng: jax.Array):
    axes = model_in_axes(sys, *changed_fields(fn, sys))
    # jitted: an eager vmap dispatches (and compiles) every primitive on its own, which for
    # set_const's hundreds of small ops is minutes against seconds
    return jax.jit(jax.vmap(fn, in_axes=(None, 0), out_axes=axes))(sys, rng), axes

  return randomization_fn


def _with_constants(fn: Callable, from_geoms: bool) -> Callable:
  def randomized(m: Model, rng: jax.Array) -> Model:
    return constants.set_const(fn(m, rng), from_geoms=from_geoms)

  return randomized
