"""Immutable dataclasses registered as JAX pytrees, with static fields in aux data.

A field declared with `static()` (numpy arrays, ints, enums, dicts of names) lives in the
pytree's aux data: it is known at trace time, so code can index and branch on it, and
`jit` recompiles when it changes. Every other field is a leaf: traced, batchable with
`vmap`, differentiable with `grad`.

Aux data must be hashable and comparable, and numpy arrays are neither, so static fields
are wrapped in `_Static`, whose hash digests the arrays' bytes once per instance.
"""

from __future__ import annotations

import dataclasses
import hashlib
import operator
from typing import Any, TypeVar

import jax
import numpy as np

T = TypeVar("T")

_STATIC = "jaxmj_static"


def static(**kwargs) -> Any:
  """A dataclass field held in aux data (known at trace time)."""
  return dataclasses.field(metadata={_STATIC: True}, **kwargs)


def _digest(value: Any, h) -> None:
  if isinstance(value, np.ndarray):
    h.update(str(value.dtype).encode())
    h.update(str(value.shape).encode())
    h.update(np.ascontiguousarray(value).tobytes())
  elif isinstance(value, (tuple, list)):
    h.update(b"(")
    for v in value:
      _digest(v, h)
    h.update(b")")
  elif isinstance(value, (set, frozenset)):
    h.update(b"<")  # in sorted order: a set's own order follows the string-hash seed
    for r in sorted(repr(v) for v in value):
      h.update(r.encode())
    h.update(b">")
  elif isinstance(value, dict):
    h.update(b"{")
    for k in sorted(value):
      h.update(repr(k).encode())
      _digest(value[k], h)
    h.update(b"}")
  else:
    h.update(repr(value).encode())


def _equal(a: Any, b: Any) -> bool:
  if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
    return (
      isinstance(a, np.ndarray)
      and isinstance(b, np.ndarray)
      and a.dtype == b.dtype
      and np.array_equal(a, b)
    )
  if isinstance(a, (tuple, list)):
    return type(a) is type(b) and len(a) == len(b) and all(map(_equal, a, b))
  if isinstance(a, dict):
    return (
      isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    )
  return a == b


class _Static:
  """Hashable, comparable bundle of a node's static field values."""

  __slots__ = ("owner", "values", "_hash")

  def __init__(self, owner: type, values: tuple):
    self.owner = owner
    self.values = values
    self._hash = None

  def __hash__(self) -> int:
    if self._hash is None:
      h = hashlib.blake2b(digest_size=8)
      h.update(self.owner.__qualname__.encode())
      _digest(self.values, h)
      self._hash = int.from_bytes(h.digest(), "little")
    return self._hash

  def __eq__(self, other) -> bool:
    if self is other:
      return True
    if not isinstance(other, _Static) or other.owner is not self.owner:
      return False
    if hash(self) != hash(other):
      return False
    return _equal(self.values, other.values)


def static_bundle(node) -> _Static:
  """The hashable bundle of a node's static fields, built once per instance."""
  bundle = node.__dict__.get("_static_bundle")
  if bundle is None:
    cls = type(node)
    bundle = _Static(cls, tuple(getattr(node, n) for n in cls._static_names))
    object.__setattr__(node, "_static_bundle", bundle)
  return bundle


def pytree_dataclass(cls: type[T]) -> type[T]:
  """Makes `cls` a frozen dataclass registered as a pytree (see module docstring)."""
  cls = dataclasses.dataclass(frozen=True, eq=False)(cls)
  fields = dataclasses.fields(cls)
  static_names = tuple(f.name for f in fields if f.metadata.get(_STATIC))
  leaf_names = tuple(f.name for f in fields if not f.metadata.get(_STATIC))
  keys = tuple(jax.tree_util.GetAttrKey(n) for n in leaf_names)

  def flatten_with_keys(node):
    return tuple(zip(keys, (getattr(node, n) for n in leaf_names))), static_bundle(node)

  # jit flattens its arguments and unflattens its outputs on every call: with a step's
  # hundreds of leaves these run in C (attrgetter, dict.update), not per field in Python.
  get_leaves = operator.attrgetter(*leaf_names) if leaf_names else (lambda node: ())
  if len(leaf_names) == 1:
    get_leaves = lambda node, get=get_leaves: (get(node),)  # noqa: E731

  def flatten(node):
    return get_leaves(node), static_bundle(node)

  def unflatten(bundle: _Static, children):
    node = object.__new__(cls)
    fields = node.__dict__
    fields.update(zip(leaf_names, children))
    fields.update(zip(static_names, bundle.values))
    fields["_static_bundle"] = bundle
    return node

  jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)

  def replace(self, **changes):
    """Returns a copy with `changes` applied (the node itself is immutable)."""
    return dataclasses.replace(self, **changes)

  cls.replace = replace
  cls._static_names = static_names
  cls._leaf_names = leaf_names
  return cls
