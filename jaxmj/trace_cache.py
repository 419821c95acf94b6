"""Traced and lowered programs kept on disk, so that a later process skips tracing too.

XLA's persistent compilation cache keys a compiled program by its lowered module, so a process
must trace and lower before it can hit that cache: for `jaxmj simulate` of a batched step
loop, tracing is seconds (quadruped ~6 s, a mesh model ~20 s on 2 CPU cores) against the
fraction of a second XLA then takes from its cache. Here the lowered program is kept as a
serialized `jax.export.Exported`, keyed by everything that shapes the trace: the Model's
arrays and static fields (pickled), the arguments' shapes, dtypes and shardings, jaxmj's
source files, the JAX and Python versions, the backend and the JAX flags a trace reads.
Both the first and later processes compile the Exported's module, so the first run's XLA
cache entry is the one later runs hit. The folder keeps within `MAX_BYTES` (1 GiB), the least
recently used entries removed first.

`enable_compilation_cache` turns XLA's own persistent cache on (what every `jaxmj` command
does), bounded: a notebook or script that calls it compiles a model's step once per machine.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
import time
import warnings
from collections.abc import Callable

import jax

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
# flags that change what a trace computes (the Model's own options are part of the Model)
_TRACE_FLAGS = ("jax_enable_x64", "jax_default_matmul_precision", "jax_numpy_dtype_promotion",
                "jax_numpy_rank_promotion", "jax_enable_checks", "jax_debug_nans",
                "jax_debug_infs")


# XLA's cache folder's budget. Programs are stored compressed: `jaxmj simulate` of
# humanoid_floor left 155 programs in 1.2 MiB, a short `jaxmj train` run 174 in 3.4 MiB; every
# model, size, flag and jaxmj revision adds its own, and nothing else would ever remove them
XLA_MAX_BYTES = 2 << 30


def default_directory() -> str:
  """$JAXMJ_CACHE_DIR, else ~/.cache/jaxmj/xla: where `jaxmj` commands keep XLA's programs."""
  return os.environ.get("JAXMJ_CACHE_DIR") or os.path.join(
    os.path.expanduser("~"), ".cache", "jaxmj", "xla")


def enable_compilation_cache(directory: str | None = None,
                             max_bytes: int = XLA_MAX_BYTES) -> str:
  """Turns XLA's persistent compilation cache on in `directory` (default: default_directory())
  for every later compile of this process, programs of any compile time kept, the folder
  bounded by `max_bytes` (JAX evicts the least recently used programs; its
  `jax_compilation_cache_max_size`). Returns the directory. A program compiled once on this
  machine (same program, JAX version, backend and XLA flags) then loads in a fraction of a
  second, in any later process. It may be called at any point: programs compiled before it
  are not written."""
  from jax.experimental.compilation_cache import compilation_cache

  directory = directory or default_directory()
  _stamp_unbounded_entries(directory)
  jax.config.update("jax_enable_compilation_cache", True)
  jax.config.update("jax_compilation_cache_dir", directory)
  jax.config.update("jax_compilation_cache_max_size", max_bytes)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
  compilation_cache.reset_cache()  # JAX keeps the folder its first cached compile opened
  return directory


# the traced programs' folder inside XLA's cache folder (`jaxmj simulate`'s step loops)
TRACES = "jaxmj-traces"


def _cache_files(directory: str) -> dict[str, list[str]]:
  """The files of a cache folder by kind: "compiled" (XLA's KEY-cache and KEY-atime) and
  "traced" (TRACES/*.exported and partial .tmp files); anything else is not ours."""
  def listed(folder, keep):
    try:
      return [os.path.join(folder, n) for n in sorted(os.listdir(folder)) if keep(n)]
    except OSError:
      return []

  return {"compiled": listed(directory, lambda n: n.endswith(("-cache", "-atime"))),
          "traced": listed(os.path.join(directory, TRACES),
                           lambda n: n.endswith((".exported", ".tmp")))}


def _size(path: str) -> int:
  try:
    return os.stat(path).st_size
  except OSError:
    return 0


def _usage(files: dict[str, list[str]]) -> dict[str, tuple[int, int]]:
  """(entries, bytes) of each kind of _cache_files' listing."""
  return {"compiled": (sum(f.endswith("-cache") for f in files["compiled"]),
                       sum(map(_size, files["compiled"]))),
          "traced": (sum(f.endswith(".exported") for f in files["traced"]),
                     sum(map(_size, files["traced"])))}


def cache_usage(directory: str | None = None) -> dict[str, tuple[int, int]]:
  """{"compiled": (programs, bytes), "traced": (step loops, bytes)} held in a cache folder
  (default: default_directory()): what `jaxmj cache` reports."""
  return _usage(_cache_files(directory or default_directory()))


def clear_cache(directory: str | None = None) -> dict[str, tuple[int, int]]:
  """Removes the compiled and traced programs of a cache folder (default:
  default_directory()), nothing else in it; returns cache_usage's counts of what went."""
  files = _cache_files(directory or default_directory())
  gone = _usage(files)  # from the listing removed, not from a second one
  for paths in files.values():
    for path in paths:
      _remove(path)
  return gone


def _stamp_unbounded_entries(directory: str) -> None:
  """Gives each program an unbounded cache wrote (jaxmj before 2026-12-06, or JAX at its
  default) the last-use stamp (`KEY-atime`, from its mtime) that JAX's bounded cache reads for
  every entry when it evicts: without one, every later write to the folder failed with a
  warning."""
  try:
    names = set(os.listdir(directory))
  except OSError:
    return
  for name in names:
    key = name.removesuffix("-cache")
    if key == name or f"{key}-atime" in names:
      continue
    try:
      stamp = os.stat(os.path.join(directory, name)).st_mtime_ns
      with open(os.path.join(directory, f"{key}-atime"), "wb") as f:
        f.write(stamp.to_bytes(8, "little"))
    except OSError:
      pass


# the trace folder's budget: an entry is a few hundred kB to a few MB, and one is written per model,
# sizes and jaxmj source revision, so a developer editing jaxmj would otherwise grow it forever
MAX_BYTES = 1 << 30
# a partial file this old is no writer's any more (a process killed while writing)
_STALE_TMP_S = 3600.0


def _touch(path: str) -> None:
  """Marks an entry used now (its mtime: eviction's order), where the folder lets us."""
  try:
    os.utime(path)
  except OSError:
    pass


def _evict(directory: str, max_bytes: int, keep: str) -> None:
  """Removes the least recently used entries until those left take at most max_bytes
  (`keep` is never removed), and partial files of writers long gone. Entries another process
  removes meanwhile are skipped: eviction is best effort, as reading is."""
  entries, now = [], time.time()
  for name in os.listdir(directory):
    path = os.path.join(directory, name)
    try:
      st = os.stat(path)
    except OSError:
      continue
    if name.endswith(".tmp") and now - st.st_mtime > _STALE_TMP_S:
      _remove(path)
    elif name.endswith(".exported"):
      entries.append((st.st_mtime, st.st_size, path))
  total = sum(size for _, size, _ in entries)
  for _, size, path in sorted(entries):
    if total <= max_bytes:
      break
    if path != keep:
      _remove(path)
      total -= size


def _remove(path: str) -> None:
  try:
    os.remove(path)
  except OSError:
    pass


def _sources_digest() -> bytes:
  """sha256 over jaxmj's Python sources (paths and contents), so any edit is a new key."""
  h = hashlib.sha256()
  for root, dirs, files in os.walk(_PACKAGE):
    dirs.sort()
    for name in sorted(f for f in files if f.endswith(".py")):
      path = os.path.join(root, name)
      h.update(os.path.relpath(path, _PACKAGE).encode())
      with open(path, "rb") as f:
        h.update(f.read())
  return h.digest()


def key(model, args, extra: tuple = ()) -> str:
  """The cache key (hex) of a program over `model` (closed over) and `args` (a pytree of
  arrays or ShapeDtypeStructs; their shapes, dtypes and shardings count, not values)."""
  import jaxlib

  h = hashlib.sha256(_sources_digest())
  h.update(pickle.dumps(model, protocol=5))
  leaves, tree = jax.tree.flatten(args)
  dev = jax.devices()[0]
  h.update(repr((
    str(tree), [(tuple(x.shape), str(x.dtype), str(getattr(x, "sharding", None))) for x in leaves],
    jax.__version__, jaxlib.__version__, sys.version, dev.platform, dev.device_kind,
    len(jax.devices()), [(f, getattr(jax.config, f, None)) for f in _TRACE_FLAGS], extra,
  )).encode())
  return h.hexdigest()


def exported(fun: Callable, specs: tuple, directory: str | None, cache_key: str,
             max_bytes: int = MAX_BYTES):
  """(`jax.export.Exported` of the jitted `fun` at argument `specs`, whether it came from
  `directory`). A missing or unreadable entry is traced, lowered and written (atomically:
  another process reading at the same time sees the old entry or the new, never a part);
  directory None: no cache; one that cannot be written: a warning, and the traced program.
  After a write the least recently used entries are removed until the folder's entries
  take at most `max_bytes` (the new one always stays)."""
  from jax import export

  path = None if directory is None else os.path.join(directory, f"{cache_key}.exported")
  if path is not None and os.path.exists(path):
    try:
      with open(path, "rb") as f:
        exp = export.deserialize(bytearray(f.read()))
      _touch(path)
      return exp, True
    except Exception:  # noqa: BLE001  (written by another version of JAX: trace anew)
      pass
  exp = export.export(fun)(*specs)
  if path is not None:
    tmp = None
    try:
      os.makedirs(directory, exist_ok=True)
      fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
      with os.fdopen(fd, "wb") as f:
        f.write(exp.serialize())
      os.replace(tmp, path)
      _evict(directory, max_bytes, keep=path)
    except OSError as e:  # as XLA's cache: a cache that cannot be written is not an error
      if tmp is not None:  # a full disk must not keep the part written
        _remove(tmp)
      warnings.warn(f"jaxmj trace cache: cannot write {path}: {e}", stacklevel=2)
  return exp, False
