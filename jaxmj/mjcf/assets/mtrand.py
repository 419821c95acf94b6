"""std::mt19937_64 and libc++'s uniform_real_distribution<double>(0, 1) on top of it, as
MuJoCo's compiler draws a texture's random dots (user_objects.cc randomdot: a generator
seeded 42 per texture, one draw per pixel in row-major order, a dot where the draw is below
`random`). Host side, numpy."""

from __future__ import annotations

import functools

import numpy as np

_N, _M = 312, 156
_A = np.uint64(0xB5026F5AA96619E9)
_UPPER, _LOWER = np.uint64(0xFFFFFFFF80000000), np.uint64(0x7FFFFFFF)
_ONE = np.uint64(1)


def _twist(old: np.ndarray, new: np.ndarray) -> None:
  """new (312,) = the next state words: the recurrence in the two halves whose inputs are
  already known (word i + 156 of the old state, then of the new one), then the last word."""
  h = _N - _M
  y = (old[:h] & _UPPER) | (old[1:h + 1] & _LOWER)
  new[:h] = old[_M:] ^ (y >> _ONE) ^ ((y & _ONE) * _A)
  y = (old[h:_N - 1] & _UPPER) | (old[h + 1:] & _LOWER)
  new[h:_N - 1] = new[:_M - 1] ^ (y >> _ONE) ^ ((y & _ONE) * _A)
  y = (old[_N - 1] & _UPPER) | (new[0] & _LOWER)
  new[_N - 1] = new[_M - 1] ^ (y >> _ONE) ^ ((y & _ONE) * _A)


def _seeded(seed: int) -> np.ndarray:
  state = np.empty(_N, np.uint64)
  x = seed & 0xFFFFFFFFFFFFFFFF
  state[0] = x
  for i in range(1, _N):
    x = (6364136223846793005 * (x ^ (x >> 62)) + i) & 0xFFFFFFFFFFFFFFFF
    state[i] = x
  return state


def _tempered(y: np.ndarray) -> np.ndarray:
  y = y ^ ((y >> np.uint64(29)) & np.uint64(0x5555555555555555))
  y = y ^ ((y << np.uint64(17)) & np.uint64(0x71D67FFFEDA60000))
  y = y ^ ((y << np.uint64(37)) & np.uint64(0xFFF7EEE000000000))
  return y ^ (y >> np.uint64(43))


def _outputs(seed: int, n: int, chunk: int = 4096):
  """The first n outputs of std::mt19937_64(seed), in arrays of at most chunk * 312."""
  state = _seeded(seed)
  while n > 0:
    nblock = min(chunk, -(-n // _N))
    words = np.empty((nblock + 1, _N), np.uint64)
    words[0] = state
    for b in range(nblock):
      _twist(words[b], words[b + 1])
    state = words[-1].copy()
    out = _tempered(words[1:].reshape(-1)[:n])
    n -= len(out)
    yield out


def mt19937_64(seed: int, n: int) -> np.ndarray:
  """(n,) uint64: the first n outputs of std::mt19937_64(seed)."""
  return np.concatenate(list(_outputs(seed, n)) or [np.zeros(0, np.uint64)])


@functools.lru_cache(maxsize=8)
def dots(seed: int, n: int, probability: float) -> np.ndarray:
  """(n,) bool: where draws of uniform_real_distribution<double>(0, 1) on mt19937_64(seed)
  fall below `probability` (libc++'s generate_canonical: one 64-bit word, rounded to a
  double, over 2^64). Read-only (cached: every texture of a size draws the same)."""
  out = np.concatenate([w.astype(np.float64) / 2.0 ** 64 < probability
                        for w in _outputs(seed, n)] or [np.zeros(0, bool)])
  out.flags.writeable = False
  return out
