"""CPython's cyclic garbage collector held back while jaxmj's functions are traced.

Tracing a step allocates millions of short-lived Python objects (tracers, equations, avals),
nearly all freed by reference counting. At CPython's default thresholds (700, 10, 10) the
collector still runs every 700 net allocations and walks the older generations every 7,000
and 70,000, over a heap that JAX's caches keep large: 12% of `jax.jit(jaxmj.step).lower(m, d)`
on humanoid_floor (0.55 of 4.5 s, ~470 collections) and 21% of the lowering of a 3-step
rollout's gradient (4.1 of 19.8 s, ~2,400 collections) went to collections that found little
(docs/speed.md, "Compile time").

`relaxed_gc()` raises the thresholds to at least `THRESHOLDS` for its duration and restores
the caller's on the way out, exception or not; nested and concurrent uses share one raise
(the first in raises, the last out restores). Collection still runs, every 100,000
allocations, so memory stays bounded; it applies to the whole process while held (other
threads included). It changes no value: which objects die when is invisible to a trace.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import threading

# gen0 every 100,000 net allocations, gen1 every 50 of those, gen2 every 100 of gen1's
# (CPython's own full-collection guard still applies: at most when the survivors grew by 25%)
THRESHOLDS = (100_000, 50, 100)

_lock = threading.Lock()
_holders = 0
_saved: tuple[int, ...] = ()


@contextlib.contextmanager
def relaxed_gc():
  """Raises CPython's collector thresholds to at least THRESHOLDS while the block runs."""
  global _holders, _saved
  with _lock:
    if _holders == 0:
      _saved = gc.get_threshold()
      gc.set_threshold(*(max(a, b) for a, b in zip(_saved, THRESHOLDS)))
    _holders += 1
  try:
    yield
  finally:
    with _lock:
      _holders -= 1
      if _holders == 0:
        gc.set_threshold(*_saved)


def relaxes_gc(fn):
  """`fn` run under `relaxed_gc()`: for the public functions, whose calls are traces under
  `jax.jit` (their own jit's first call included) and cheap otherwise (a lock and two
  threshold writes)."""

  @functools.wraps(fn)
  def relaxed(*args, **kwargs):
    with relaxed_gc():
      return fn(*args, **kwargs)

  return relaxed
