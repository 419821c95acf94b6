"""Trace-time checks of a Model's and a Data's field shapes.

Every public function taking (Model, Data) checks once per trace that each Model field has
the shape it was compiled with (`Model.leaf_shapes`) and each Data field the shape
`make_data(m)` gives it, so a body_mass of the wrong length, a qpos of the wrong length, a
(6,) xfrc_applied or a scalar ctrl raise a ValueError naming the field instead of being
broadcast or failing deep inside JAX. Shapes are static, so the check costs nothing at run
time. Under `jax.vmap` the function sees one world's shapes; a batch of Models or Data
passed without vmap is refused with the advice to vmap.
"""

from __future__ import annotations

import functools
import inspect

import jax
import jax.numpy as jnp

from jaxmj.io import make_data
from jaxmj.pytree import named_leaves, named_shapes
from jaxmj.types import Data, Model


@functools.lru_cache(maxsize=64)
def _wanted(treedef, leaf_specs: tuple) -> dict[str, tuple]:
  """{field: (shape, dtype)} as make_data gives them for a Model of this structure (static
  fields and leaf shapes: everything they depend on), so eager calls pay for the abstract
  evaluation once."""
  m = jax.tree_util.tree_unflatten(treedef, [jax.ShapeDtypeStruct(s, t) for s, t in leaf_specs])
  return {k: (tuple(v.shape), v.dtype)
          for k, v in named_leaves(jax.eval_shape(make_data, m)).items()}


def _kind(dtype) -> str:
  """'float', 'int' or 'bool': a float32 Data under x64 (or the reverse) is a precision
  choice, an integer qpos a mistake."""
  dtype = jnp.dtype(dtype)
  return ("float" if jnp.issubdtype(dtype, jnp.inexact) else
          "bool" if dtype == jnp.bool_ else "int")


@functools.lru_cache(maxsize=64)
def _model_mismatch(treedef, leaf_specs: tuple) -> tuple | None:
  """(field, shape, compiled shape) of the first Model field whose shape is not the one it
  was compiled with, or None (static fields and leaf shapes decide it: cached)."""
  m = jax.tree_util.tree_unflatten(treedef, [jax.ShapeDtypeStruct(s, t) for s, t in leaf_specs])
  got = named_shapes(m)
  for name, shape in m.leaf_shapes:
    if got.get(name) != shape:
      return name, got.get(name), shape
  return None


def _batch_advice(given, shape, what: str, caller: str, axes: str) -> str:
  batched = given is not None and len(given) == len(shape) + 1 and given[1:] == shape
  return (f" (a batch of {what}: map over it with jax.vmap(jaxmj.{caller}, in_axes={axes}))"
          if batched else "")


def check_data_shapes(m: Model, d: Data, caller: str) -> None:
  """Raises ValueError naming the first Model field whose shape is not its compiled one, or
  else the first Data field whose shape is not the one `m` gives it (and the expected and
  given shapes). Shapes are static: under jit this runs while tracing and leaves nothing in
  the compiled program."""
  if not isinstance(m, Model):
    raise TypeError(f"jaxmj.{caller}: expected a jaxmj.Model, got {type(m).__name__}")
  if not isinstance(d, Data):
    raise TypeError(f"jaxmj.{caller}: expected a jaxmj.Data, got {type(d).__name__}")
  leaves, treedef = jax.tree_util.tree_flatten(m)
  specs = tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves)
  wrong = _model_mismatch(treedef, specs)
  if wrong is not None:
    name, given, shape = wrong
    advice = _batch_advice(given, shape, "Models", caller, "(0, None)")
    raise ValueError(f"jaxmj.{caller}: Model field '{name}' has shape {given}, but model "
                     f"{m.model_name!r} was compiled with {shape}{advice}")
  want = _wanted(treedef, specs)
  got = named_leaves(d)
  for name, (shape, dtype) in want.items():
    leaf = got.get(name)
    given = None if leaf is None else tuple(getattr(leaf, "shape", ()))
    if given != shape:
      advice = _batch_advice(given, shape, "Data", caller, "(None, 0)")
      raise ValueError(f"jaxmj.{caller}: Data field '{name}' has shape {given}, but model "
                       f"{m.model_name!r} needs {shape}{advice}")
    # a Python number (time=0; weakly typed once jit has it) takes the field's dtype where used
    weak = isinstance(leaf, (bool, int, float)) or getattr(leaf, "weak_type", False)
    if not weak and _kind(jnp.result_type(leaf)) != _kind(dtype):
      raise ValueError(f"jaxmj.{caller}: Data field '{name}' has dtype "
                       f"{jnp.result_type(leaf)}, but model {m.model_name!r} needs a {_kind(dtype)}"
                       f" dtype ({jnp.dtype(dtype)} in make_data)")
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
