"""MuJoCo's divergence checks (mj_checkPos, mj_checkVel, mj_checkAcc) and autoreset.

A qpos, qvel or qacc entry that is NaN, infinite or beyond mjMAXVAL (1e10) counts in
`d.warning` (BADQPOS, BADQVEL, BADQACC). Unless `<flag autoreset="disable"/>`, the world is
then reset as mj_resetData resets it (qpos0, zero velocities, controls, applied forces and
history, and every warning counter cleared) and the bad kind counts once. Worlds are reset
one by one (a `where` per field), so one diverged world of a batch never spreads NaN.

What mujoco 4.0.0 does, and jaxmj with it (probed, tests/test_autoreset.py):
- a bad qpos or qvel at the start of mj_step (or mj_step1) resets the world before the
  step, and the step then runs from the reset state: the result equals mj_step from
  mj_resetData (time = one timestep). A bad qpos is checked first: when both are bad,
  only BADQPOS counts;
- a bad qacc after forward resets the world and MuJoCo runs forward again before it
  integrates. jaxmj returns the reset state itself (time 0, not yet integrated), so such a
  world runs one step behind MuJoCo from then on: integrating it in the same call would
  need a second forward pass in every step's graph (twice the compile time, and twice the
  run time without vmap), for a state that only exists after divergence;
- with autoreset disabled each bad kind counts, the state is kept and nothing is reset.

`step` selects between a world's state and the reset state once per field (one pass over
Data, which at batch 1024 costs as much as a light pipeline stage): before the step only
the fields the step reads (the integration state and the warning counters), after it the
fields the step left untouched (found at trace time: the same array comes out as went in)
and, for a bad qacc, everything.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jaxmj.constants import MAXVAL
from jaxmj.data import count_warning
from jaxmj.io import make_data
from jaxmj.state import STATE_FIELD, State, components
from jaxmj.types import Data, DisableBit, Model, Warning


def bad(x: jnp.ndarray) -> jnp.ndarray:
  """mju_isBad over an array: any entry NaN, infinite or beyond MAXVAL."""
  return jnp.any(~jnp.isfinite(x) | (jnp.abs(x) > MAXVAL))


# the Data fields a step reads from the previous step (MuJoCo's mjSTATE_INTEGRATION) and the
# warning counters; every other field a step reads it has written first
_READ = tuple(STATE_FIELD[c] for c in components(State.INTEGRATION) if STATE_FIELD[c]) + (
  "warning",)


def _check_state(m: Model, d: Data, fields) -> tuple[Data, jnp.ndarray]:
  """mj_checkPos then mj_checkVel: (d with `fields` reset where qpos or qvel is bad, that
  flag). A bad qpos is counted first: when both are bad only BADQPOS counts."""
  bad_pos, bad_vel = bad(d.qpos), bad(d.qvel)
  if m.opt.disabled(DisableBit.AUTORESET):
    d = d.replace(warning=count_warning(d.warning, Warning.BADQPOS, bad_pos))
    return d.replace(warning=count_warning(d.warning, Warning.BADQVEL, bad_vel)), jnp.asarray(False)
  fresh = make_data(m)
  code = jnp.where(bad_pos, Warning.BADQPOS, Warning.BADQVEL)
  fresh = fresh.replace(warning=count_warning(fresh.warning, code, jnp.asarray(True)))
  reset = bad_pos | bad_vel
  # mapped over d's fields (the structure comes from the first tree): see check_step
  return d.replace(**{f: jax.tree.map(lambda b, a: jnp.where(reset, a, b),
                                      getattr(d, f), getattr(fresh, f)) for f in fields}), reset


def check_state(m: Model, d: Data) -> Data:
  """mj_checkPos then mj_checkVel at the start of mj_step1: every field reset."""
  return _check_state(m, d, [f.name for f in dataclasses.fields(d)])[0]


def check_acc(m: Model, d: Data, new: Data) -> Data:
  """mj_checkAcc on the forward pass `d`: `new` (the integrated state) where qacc is good;
  where it is bad, the count, and with autoreset the reset state (see the module note)."""
  return check_step(m, d, d, new, jnp.asarray(False))


def check_state_read(m: Model, d: Data) -> tuple[Data, jnp.ndarray]:
  """check_state on the fields a step reads only: (d, reset) where `reset` () marks a
  world reset for a bad qpos or qvel; `check_step` resets its other fields."""
  return _check_state(m, d, _READ)


def check_step(m: Model, d_in: Data, d: Data, new: Data, reset: jnp.ndarray) -> Data:
  """check_acc on the forward pass `d` of a step from `d_in` (after check_state_read) that
  integrated to `new`; worlds marked `reset` get make_data's values in every field the step
  neither read nor wrote, as mj_resetData left them."""
  bad_acc = bad(d.qacc)
  if m.opt.disabled(DisableBit.AUTORESET):
    return new.replace(warning=count_warning(new.warning, Warning.BADQACC, bad_acc))
  fresh = make_data(m)
  fresh = fresh.replace(warning=count_warning(fresh.warning, Warning.BADQACC, jnp.asarray(True)))
  out = {}
  for f in (field.name for field in dataclasses.fields(new)):
    a, b, old = getattr(fresh, f), getattr(new, f), getattr(d_in, f)
    untouched = all(x is y for x, y in zip(jax.tree.leaves(b), jax.tree.leaves(old)))
    flag = bad_acc | reset if untouched and f not in _READ else bad_acc
    # mapped over the new state's field first: the result takes its pytree structure, whose
    # static parts are the input Data's objects (a Contact's bundle), so that jit's dispatch
    # finds the next call's arguments identical to this one's, not merely equal (a deep
    # comparison of numpy arrays on every call)
    out[f] = jax.tree.map(lambda y, x, flag=flag: jnp.where(flag, x, y), b, a)
  return new.replace(**out)
