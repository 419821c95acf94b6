"""State components as flat vectors (mj_stateSize, mj_getState, mj_setState, mj_copyState,
mj_extractState), and resets of diverged or finished worlds inside a batch.

A signature `sig` is a bitmask of `State` components; a state vector holds the selected
components concatenated in bit order, each flattened, booleans (eq_active) as 0/1. `sig`
is a host int: it fixes the vector's layout, so it is static under jit.
"""

from __future__ import annotations

import enum

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.io import make_data, reset
from jaxmj.types import Data, Model


class State(enum.IntFlag):
  """mjtState: state components, and MuJoCo's unions of them."""

  TIME = 1 << 0
  QPOS = 1 << 1
  QVEL = 1 << 2
  ACT = 1 << 3
  HISTORY = 1 << 4  # delayed actuator/sensor samples (mjData.history)
  WARMSTART = 1 << 5
  CTRL = 1 << 6
  QFRC_APPLIED = 1 << 7
  XFRC_APPLIED = 1 << 8
  EQ_ACTIVE = 1 << 9
  MOCAP_POS = 1 << 10
  MOCAP_QUAT = 1 << 11
  USERDATA = 1 << 12
  PLUGIN = 1 << 13  # plugin state: none in jaxmj models (size 0)
  PLASTIC = 1 << 14  # spring references of yielding joints and tendons (mjData.plastic)

  PHYSICS = QPOS | QVEL | ACT | HISTORY | PLASTIC
  FULLPHYSICS = PHYSICS | TIME | PLUGIN
  USER = CTRL | QFRC_APPLIED | XFRC_APPLIED | EQ_ACTIVE | MOCAP_POS | MOCAP_QUAT | USERDATA
  INTEGRATION = FULLPHYSICS | USER | WARMSTART


NSTATE = 15

# component -> the Data field that holds it (None: always empty in jaxmj)
STATE_FIELD = {
  State.TIME: "time", State.QPOS: "qpos", State.QVEL: "qvel", State.ACT: "act",
  State.HISTORY: "history", State.WARMSTART: "qacc_warmstart", State.CTRL: "ctrl",
  State.QFRC_APPLIED: "qfrc_applied", State.XFRC_APPLIED: "xfrc_applied",
  State.EQ_ACTIVE: "eq_active", State.MOCAP_POS: "mocap_pos", State.MOCAP_QUAT: "mocap_quat",
  State.USERDATA: "userdata", State.PLUGIN: None, State.PLASTIC: "plastic",
}


def _check_sig(sig: int, fn: str) -> None:
  if not isinstance(sig, int):
    raise TypeError(f"{fn}: the state signature must be a host int, got {type(sig).__name__}")
  if sig < 0:
    raise ValueError(f"{fn}: invalid state signature {sig} < 0")
  if sig >= 1 << NSTATE:
    raise ValueError(f"{fn}: invalid state signature {sig} >= 2^{NSTATE}")


def components(sig: int) -> list:
  """The State components in signature `sig`, in MuJoCo's order."""
  return [c for c in STATE_FIELD if sig & c]


def _size(m: Model, component: State) -> int:
  field = STATE_FIELD[component]
  if field is None:
    return 0
  return int(np.prod(_shape(m, component)))


def _shape(m: Model, component: State) -> tuple:
  return {
    State.TIME: (), State.QPOS: (m.nq,), State.QVEL: (m.nv,), State.ACT: (m.na,),
    State.HISTORY: (m.nhistory,),
    State.WARMSTART: (m.nv,), State.CTRL: (m.nu,), State.QFRC_APPLIED: (m.nv,),
    State.XFRC_APPLIED: (m.nbody, 6), State.EQ_ACTIVE: (m.neq,),
    State.MOCAP_POS: (m.nmocap, 3), State.MOCAP_QUAT: (m.nmocap, 4),
    State.USERDATA: (m.nuserdata,), State.PLASTIC: (m.nplastic,),
  }[component]


def state_size(m: Model, sig: int) -> int:
  """mj_stateSize: length of the state vector of signature `sig`."""
  _check_sig(sig, "state_size")
  return sum(_size(m, c) for c in components(sig))


def get_state(m: Model, d: Data, sig: int) -> jnp.ndarray:
  """mj_getState: (state_size(m, sig),) the selected components of `d`, in bit order."""
  _check_sig(sig, "get_state")
  dtype = d.qpos.dtype
  parts = [jnp.ravel(getattr(d, STATE_FIELD[c])).astype(dtype)
           for c in components(sig) if STATE_FIELD[c] is not None]
  return jnp.concatenate(parts) if parts else jnp.zeros(0, dtype)


def set_state(m: Model, d: Data, state: jnp.ndarray, sig: int) -> Data:
  """mj_setState: `d` with the components of `sig` taken from the vector `state`."""
  _check_sig(sig, "set_state")
  size = state_size(m, sig)
  if state.shape != (size,):
    raise ValueError(f"set_state: state has shape {state.shape}, signature {sig} needs "
                     f"({size},)")
  updates, adr = {}, 0
  for c in components(sig):
    field = STATE_FIELD[c]
    if field is None:
      continue
    n, old = _size(m, c), getattr(d, field)
    value = state[adr:adr + n].reshape(old.shape)
    updates[field] = value != 0 if old.dtype == jnp.bool_ else value.astype(old.dtype)
    adr += n
  return d.replace(**updates)


def copy_state(m: Model, src: Data, dst: Data, sig: int) -> Data:
  """mj_copyState: `dst` with the components of `sig` copied from `src`."""
  _check_sig(sig, "copy_state")
  fields = [STATE_FIELD[c] for c in components(sig) if STATE_FIELD[c] is not None]
  return dst.replace(**{f: getattr(src, f) for f in fields})


def extract_state(m: Model, src: jnp.ndarray, srcsig: int, dstsig: int) -> jnp.ndarray:
  """mj_extractState: the components of `dstsig` out of a state vector of `srcsig`;
  `dstsig` must be a subset of `srcsig`."""
  _check_sig(srcsig, "extract_state")
  _check_sig(dstsig, "extract_state")
  if dstsig & ~srcsig:
    raise ValueError("extract_state: dstsig is not a subset of srcsig")
  if src.shape != (state_size(m, srcsig),):
    raise ValueError(f"extract_state: src has shape {src.shape}, srcsig {srcsig} needs "
                     f"({state_size(m, srcsig)},)")
  parts, adr = [], 0
  for c in components(srcsig):
    n = _size(m, c)
    if dstsig & c:
      parts.append(src[adr:adr + n])
    adr += n
  return jnp.concatenate(parts) if parts else src[:0]


def reset_where(m: Model, d: Data, done: jnp.ndarray, key: int | str | None = None) -> Data:
  """`d` reset (to the defaults, or to keyframe `key`) where `done` is true, else unchanged.

  done: () bool for one world; under `jax.vmap` over `d` and `done`, only the flagged
  worlds of a batch are reset. Warning counters are kept.
  """
  fresh = (make_data(m) if key is None else reset(m, key)).replace(warning=d.warning)
  return jax.tree.map(lambda a, b: jnp.where(done, a, b), fresh, d)
