"""Trace-time checks of a Data's field shapes against the Model it is used with.

Every public function taking (Model, Data) checks once per trace that each Data field has
the shape `make_data(m)` gives it, so a qpos of the wrong length, a (6,) xfrc_applied or a
scalar ctrl raise a ValueError naming the field instead of being broadcast or failing deep
inside JAX. Shapes are static, so the check costs nothing at run time. Under `jax.vmap`
the function sees one world's shapes; a batch of Data passed without vmap is refused with
the advice to vmap.
"""

from __future__ import annotations

import functools
import inspect

import jax
import jax.numpy as jnp

from jaxmj.io import make_data
from jaxmj.types import Data, Model


def _named_shapes(node, prefix: str = "") -> dict[str, tuple]:
  """{'qpos': (nq,), 'contact.dist': (ncon,), 'history': ...} for a Data of arrays or
  ShapeDtypeStructs; a field that is itself a pytree of arrays is listed leaf by leaf."""
  out = {}
  for name in type(node)._leaf_names:
    value = getattr(node, name)
    if hasattr(type(value), "_leaf_names"):
      out.update(_named_shapes(value, f"{prefix}{name}."))
      continue
    leaves, _ = jax.tree_util.tree_flatten_with_path(value)
    for path, leaf in leaves:
      out[prefix + name + jax.tree_util.keystr(path)] = tuple(getattr(leaf, "shape", ()))
  return out


@functools.lru_cache(maxsize=64)
def _wanted_shapes(treedef, leaf_specs: tuple) -> dict[str, tuple]:
  """make_data's field shapes for a Model of this structure (static fields and leaf shapes:
  everything they depend on), so eager calls pay for the abstract evaluation once."""
  m = jax.tree_util.tree_unflatten(treedef, [jax.ShapeDtypeStruct(s, t) for s, t in leaf_specs])
  return _named_shapes(jax.eval_shape(make_data, m))


def check_data_shapes(m: Model, d: Data, caller: str) -> None:
  """Raises ValueError naming the first Data field whose shape is not the one `m` gives it
  (and the expected and given shapes). Shapes are static: under jit this runs while
  tracing and leaves nothing in the compiled program."""
  if not isinstance(d, Data):
    raise TypeError(f"jaxmj.{caller}: expected a jaxmj.Data, got {type(d).__name__}")
  leaves, treedef = jax.tree_util.tree_flatten(m)
  want = _wanted_shapes(treedef, tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves))
  got = _named_shapes(d)
  for name, shape in want.items():
    if got.get(name) == shape:
      continue
    given = got.get(name)
    batched = given is not None and len(given) == len(shape) + 1 and given[1:] == shape
    advice = (" (a batch of Data: map over it with jax.vmap(jaxmj."
              f"{caller}, in_axes=(None, 0)))" if batched else "")
    raise ValueError(f"jaxmj.{caller}: Data field '{name}' has shape {given}, but model "
                     f"{m.model_name!r} needs {shape}{advice}")
  if got.keys() != want.keys():  # a history or contact layout from another model
    extra = sorted(got.keys() - want.keys())[0]
    raise ValueError(f"jaxmj.{caller}: Data field '{extra}' does not belong to a Data of "
                     f"model {m.model_name!r}; make the Data with jaxmj.make_data(m)")


def checks_data(fn, argnum: int = 1):
  """`fn(m, ..., d, ...)` with its Data (positional argument `argnum`) checked against `m`
  when it is traced."""

  name = list(inspect.signature(fn).parameters)[argnum]

  @functools.wraps(fn)
  def checked(m, *args, **kwargs):
    d = args[argnum - 1] if len(args) >= argnum else kwargs.get(name)
    if d is not None:
      check_data_shapes(m, d, fn.__name__)
    return fn(m, *args, **kwargs)

  return checked
