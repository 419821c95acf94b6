"""MuJoCo 4.0's PGS sweep order and extrapolation, with fixed shapes (used by solver/driver.py).

MuJoCo 4.0's PGS (solPGS, per island) is not the published engine_solver.c sweep in row
order; read from the 4.0.0 binary and held against it (tests/test_pgs_order.py):
- The constraint blocks of an island (one per scalar row, one per elliptic contact) are
  listed in the island's row order, and before every sweep that list is shuffled in place
  (the shuffles compound) by a Fisher-Yates pass (i = n .. 2: j = r % i, swap entries i-1
  and j) whose numbers r come from PCG32 (XSH-RR output of the old state, then state =
  state * 6364136223846793005 + 1 mod 2^64), its state 1 at the start of every island's
  solve. Nothing is carried between solves, so it is no Data or mjSTATE field.
- From the third sweep on, a Nesterov step with adaptive restart: before sweep t (k sweeps
  since the last restart, beta = (k-1)/(k+2) > 0) force += beta * (force - prev), where prev
  is the force the previous sweep started from before its own step, and the result is
  projected back onto the constraint set (friction loss box, nonnegative normal, the dual
  friction cone scaled onto its surface); k restarts at 0 when (force after the sweep -
  force it started from) . (force it started from - prev) < 0.

MuJoCo sweeps the blocks of an island in its own row order, which for contact rows is
MuJoCo's contact order (`efc_order` gives it for jaxmj's rows, see `mujoco_efc_order`): each
island's block list is ranked by it, islands are independent, so one pass over all blocks in
(island, shuffled position) order is each island's own sweep.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.collision.plan import contact_rank
from jaxmj.constraint.layout import efc_layout
from jaxmj.types import Model

_U32 = jnp.uint32
_MUL_HI, _MUL_LO = 0x5851F42D, 0x4C957F2D  # PCG32's 64-bit multiplier, as two 32-bit halves


def _mul32(a, b):
  """Full 64-bit product of uint32 a, b as (hi, lo) uint32 (16-bit limbs: no uint64 needed,
  so this also runs without jax_enable_x64)."""
  m16 = _U32(0xFFFF)
  a0, a1, b0, b1 = a & m16, a >> 16, b & m16, b >> 16
  p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
  mid = p01 + p10
  mid_carry = (mid < p01).astype(_U32)
  lo = p00 + (mid << 16)
  lo_carry = (lo < p00).astype(_U32)
  hi = p11 + (mid >> 16) + (mid_carry << 16) + lo_carry
  return hi, lo


def pcg32(hi, lo):
  """One PCG32 draw: (output uint32, next state hi, lo) from the 64-bit state (hi, lo)."""
  x = (((lo ^ ((lo >> 18) | (hi << 14))) >> 27) | ((hi ^ (hi >> 18)) << 5))
  rot = hi >> 27
  out = (x >> rot) | (x << ((_U32(32) - rot) & _U32(31)))
  phi, plo = _mul32(lo, _U32(_MUL_LO))
  phi = phi + lo * _U32(_MUL_HI) + hi * _U32(_MUL_LO)
  nlo = plo + _U32(1)
  nhi = phi + (nlo == 0).astype(_U32)
  return out, nhi, nlo


def shuffle(perm, hi, lo, n, go):
  """One Fisher-Yates pass per island over the first n entries of perm (ni, nb) int32, drawing
  from PCG32 states (hi, lo) (ni,) uint32; islands with go False keep perm and state."""
  nb = perm.shape[1]

  def one(perm, hi, lo, n, go):
    def step(s, c):
      perm, hi, lo = c
      i = nb - s  # nb .. 2
      out, nhi, nlo = pcg32(hi, lo)
      act = go & (i <= n)
      j = (out % i.astype(_U32)).astype(jnp.int32)
      a, b = perm[i - 1], perm[j]  # two element writes per step, not a select over perm
      perm = perm.at[i - 1].set(jnp.where(act, b, a)).at[j].set(jnp.where(act, a, b))
      return perm, jnp.where(act, nhi, hi), jnp.where(act, nlo, lo)

    return jax.lax.fori_loop(0, nb - 1, step, (perm, hi, lo))

  return jax.vmap(one)(perm, hi, lo, n, go)


def block_ranks(block_isl, key, ni: int):
  """Rank of each block within its island by `key` (nb,), and the islands' block counts.

  block_isl: (nb,) int island of the block (-1: inactive). Returns rank (nb,) int32 and
  count (ni,) int32.
  """
  nb = block_isl.shape[0]
  isl = jnp.where(block_isl >= 0, block_isl, ni)
  srt = jnp.argsort(isl * nb + jnp.argsort(jnp.argsort(key)))
  count = jnp.sum(isl[:, None] == jnp.arange(ni)[None, :], axis=0).astype(jnp.int32)
  first = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(count)])
  pos = jnp.zeros(nb, jnp.int32).at[srt].set(jnp.arange(nb, dtype=jnp.int32))
  return pos - first[jnp.minimum(isl, ni)], count


def sweep_order(perm, rank, block_isl):
  """Global block order for one sweep: island by island, each in its shuffled order.

  perm (ni, nb): island list position -> block rank; rank, block_isl (nb,). Inactive blocks
  (island -1) go last.
  """
  ni, nb = perm.shape
  inv = jax.vmap(lambda p: jnp.zeros(nb, jnp.int32).at[p].set(jnp.arange(nb, dtype=jnp.int32)))(
    perm)
  safe = jnp.maximum(block_isl, 0)
  pos = inv[safe, jnp.clip(rank, 0, nb - 1)]
  key = jnp.where(block_isl >= 0, safe * nb + pos, ni * nb + jnp.arange(nb))
  return jnp.argsort(key)


def init_state(ni: int, nb: int):
  """Identity block lists and PCG32 state 1 for every island."""
  perm = jnp.broadcast_to(jnp.arange(nb, dtype=jnp.int32), (ni, nb))
  return perm, jnp.zeros(ni, _U32), jnp.ones(ni, _U32)


# ------------------------------------------------------------------ MuJoCo's contact order


def mujoco_efc_order(m: Model, con):
  """(nefc,) int: a key per efc row whose order is MuJoCo's row order, were every contact
  slot active (ranks among the active rows are then MuJoCo's). Non-contact rows already come
  in MuJoCo's order; contact rows follow collision/plan.py's `contact_rank`. con: the Data's
  Contact. Static (numpy) where the slots are; traced under a contact cap, where each slot's
  place comes from `con.rank` (the keys then rank, not number, the rows)."""
  layout = efc_layout(m, con.dim)
  order = np.arange(layout.nefc)
  adr = np.asarray(layout.contact_efc_address)
  slots = np.flatnonzero(adr >= 0)
  if not len(slots):
    return order
  nrows = np.bincount(np.asarray(layout.con_slot), minlength=len(adr))
  if con.rank is not None:
    rows = np.concatenate([np.arange(adr[s], adr[s] + nrows[s]) for s in slots])
    slot = np.repeat(slots, nrows[slots])
    within = rows - adr[slot]
    key = layout.contact0 + con.rank[slot] * int(nrows.max()) + within
    return jnp.asarray(order).at[rows].set(key.astype(jnp.int32))
  rank = contact_rank(m)
  pos = layout.contact0
  for s in slots[np.argsort(rank[slots])]:  # ranks are distinct
    order[adr[s]:adr[s] + nrows[s]] = np.arange(pos, pos + nrows[s])
    pos += nrows[s]
  return order
