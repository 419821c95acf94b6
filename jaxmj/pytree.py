"""Immutable dataclasses registered as JAX pytrees, with static fields in aux data.

A field declared with `static()` (numpy arrays, ints, enums, dicts of names) lives in the
pytree's aux data: it is known at trace time, so code can index and branch on it, and
`jit` recompiles when it changes. Every other field is a leaf: traced, batchable with
`vmap`, differentiable with `grad`; in a class with a `batch_ref`, a field with no entries is
not (`_Aux`): there is nothing to trace, and jit pays for every leaf on every call.

Aux data must be hashable and comparable, and numpy arrays are neither, so static fields
are wrapped in `_Static`, whose hash digests the arrays' bytes once per instance.
"""

from __future__ import annotations

import dataclasses
import hashlib
import operator
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
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


class _Aux:
  """A node's aux data: its static bundle and the leaf fields that hold no entries.

  An empty field is left out of the leaves and rebuilt on unflattening, with the leading
  batch axes of the node's reference field (`batch_ref`): jit hands each leaf of its
  arguments and results across on every call (~1-3 us a leaf) and XLA copies an empty
  result like any other, for arrays that hold nothing. `empties`: ((name, shape without
  the batch axes, dtype name), ...). `names`, `keys`, `get`: the leaf fields kept."""

  __slots__ = ("bundle", "empties", "leaf_names", "spec", "names", "keys", "get", "_filled",
               "_hash")

  def __init__(self, bundle: _Static, empties: tuple, leaf_names: tuple):
    self.bundle, self.empties, self.leaf_names = bundle, empties, leaf_names
    self.spec = {n: (shape, dtype) for n, shape, dtype in empties}
    gone = self.spec.keys()
    self.names = tuple(n for n in leaf_names if n not in gone)
    self.keys = tuple(jax.tree_util.GetAttrKey(n) for n in self.names)
    get = operator.attrgetter(*self.names) if self.names else (lambda node: ())
    self.get = (lambda node, g=get: (g(node),)) if len(self.names) == 1 else get
    self._filled = {}  # batch shape -> {name: empty array}
    self._hash = None

  def __reduce__(self):  # `get` may be a lambda, `_filled` holds device arrays
    return _Aux, (self.bundle, self.empties, self.leaf_names)

  def __hash__(self) -> int:
    if self._hash is None:
      self._hash = hash((hash(self.bundle), self.empties))
    return self._hash

  def __eq__(self, other) -> bool:
    return self is other or (isinstance(other, _Aux) and self.empties == other.empties
                             and self.bundle == other.bundle)

  def filled(self, batch: tuple) -> dict:
    """The empty fields as arrays with leading axes `batch`, made once (concrete even when
    unflattened inside a trace, so that a cached one never holds a tracer)."""
    out = self._filled.get(batch)
    if out is None:
      with jax.ensure_compile_time_eval():
        out = {n: jnp.zeros(batch + shape, dtype) for n, shape, dtype in self.empties}
      self._filled[batch] = out
    return out


def named_leaves(node, prefix: str = "") -> dict[str, Any]:
  """{'qpos': array, 'contact.dist': array, 'opt.gravity': array, ...}: each leaf field of a
  node (empty fields included), nested nodes and pytree-valued fields listed leaf by leaf."""
  out = {}
  for name in type(node)._leaf_names:
    value = getattr(node, name)
    if hasattr(type(value), "_leaf_names"):
      out.update(named_leaves(value, f"{prefix}{name}."))
      continue
    leaves, _ = jax.tree_util.tree_flatten_with_path(value)
    for path, leaf in leaves:
      out[prefix + name + jax.tree_util.keystr(path)] = leaf
  return out


def named_shapes(node) -> dict[str, tuple]:
  """{'qpos': (nq,), 'opt.gravity': (3,), ...}: named_leaves' shapes (arrays or
  ShapeDtypeStructs)."""
  return {k: tuple(getattr(v, "shape", ())) for k, v in named_leaves(node).items()}


def _batch_shape(ref, rank: int) -> tuple | None:
  shape = getattr(ref, "shape", None)
  if shape is None or len(shape) < rank:
    return None
  return tuple(shape[:len(shape) - rank])


def pytree_dataclass(cls: type[T] | None = None, *,
                     batch_ref: tuple[str, int] | None = None) -> type[T]:
  """Makes `cls` a frozen dataclass registered as a pytree (see module docstring).

  batch_ref: (field, rank) of a leaf field with `rank` axes in one unbatched node (Data's
  `time`: 0; Contact's `dist`: 1, a leaf even without entries). Given it, the other leaf
  fields without entries are kept out of the leaves (`_Aux`) and rebuilt with the
  reference's leading axes: outside a vmap a batch of Data still has act (B, 0), inside it
  (0,).
  """
  if cls is None:
    return lambda c: pytree_dataclass(c, batch_ref=batch_ref)
  cls = dataclasses.dataclass(frozen=True, eq=False)(cls)
  fields = dataclasses.fields(cls)
  static_names = tuple(f.name for f in fields if f.metadata.get(_STATIC))
  leaf_names = tuple(f.name for f in fields if not f.metadata.get(_STATIC))
  leaf_set = frozenset(leaf_names)
  field_names = frozenset(f.name for f in fields)
  ref_name, ref_rank = batch_ref if batch_ref else (None, 0)

  def empty_spec(name: str, x, batch: tuple):
    """(shape without the batch axes, dtype name) of field `name` holding x, where x has no
    entries and carries the batch axes and the field is not the reference; else None (a
    leaf)."""
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if (name == ref_name or shape is None or dtype is None or 0 not in shape or 0 in batch
        or tuple(shape[:len(batch)]) != batch):
      return None
    return tuple(shape[len(batch):]), np.dtype(dtype).name

  def batch_of(fields: dict) -> tuple:
    """The batch axes of a node's fields; none where the reference is not an array (a tree
    of vmap axes or shardings, whose empty fields are unbatched arrays: unflatten)."""
    batch = _batch_shape(fields[ref_name], ref_rank)
    return () if batch is None else batch

  def aux_of(node) -> _Aux:
    """The node's aux data, made once per instance (a node from unflattening has its own)."""
    aux = node.__dict__.get("_aux")
    if aux is None:
      empties = ()
      if ref_name:
        batch = batch_of(node.__dict__)
        specs = ((n, empty_spec(n, getattr(node, n), batch)) for n in leaf_names)
        empties = tuple((n,) + s for n, s in specs if s is not None)
      aux = _Aux(static_bundle(node), empties, leaf_names)
      object.__setattr__(node, "_aux", aux)
    return aux

  def flatten_with_keys(node):
    aux = aux_of(node)
    return tuple(zip(aux.keys, aux.get(node))), aux

  # jit flattens its arguments and unflattens its outputs on every call: with a step's
  # hundreds of leaves these run in C (attrgetter, dict.update), not per field in Python.
  def flatten(node):
    aux = aux_of(node)
    return aux.get(node), aux

  def unflatten(aux: _Aux, children):
    node = object.__new__(cls)
    fields = node.__dict__
    fields.update(zip(aux.names, children))
    fields.update(zip(static_names, aux.bundle.values))
    fields["_static_bundle"] = aux.bundle
    fields["_aux"] = aux
    if aux.empties:
      fields.update(aux.filled(batch_of(fields)))
    return node

  jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten)

  def replace(self, **changes):
    """Returns a copy with `changes` applied (the node itself is immutable). The copy keeps
    the original's aux data while the changes keep its static fields and which fields are
    empty, so that `d.replace(ctrl=u)` in a loop costs no walk over every field."""
    bad = changes.keys() - field_names
    if bad:
      raise TypeError(f"{cls.__name__}.replace() got an unexpected field {sorted(bad)[0]!r}")
    node = object.__new__(cls)
    state = node.__dict__
    state.update(self.__dict__)
    state.update(changes)
    if not changes.keys() <= leaf_set:
      state.pop("_static_bundle", None)
      state.pop("_aux", None)
    elif ref_name and "_aux" in state:  # kept while no change moves a field in or out
      aux, batch = state["_aux"], batch_of(state)
      if any(aux.spec.get(n) != empty_spec(n, v, batch) for n, v in changes.items()):
        state.pop("_aux")
      elif ref_name in changes and aux.empties:  # the empties take the new batch axes
        state.update(aux.filled(batch))
    return node

  cls.replace = replace
  cls._static_names = static_names
  cls._leaf_names = leaf_names
  return cls
