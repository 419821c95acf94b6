"""State vectors (jaxmj.state) against mj_stateSize / mj_getState / mj_setState /
mj_extractState, round trips for every component, and batched resets."""

import os

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from conftest import MODELS  # noqa: E402
from mujoco_compare import load_both, random_state, to_jaxmj  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.state import NSTATE, State  # noqa: E402

# A free body, a hinge, a mocap body and user data: every component has a nonzero size
# except plugin (none in jaxmj models), history and plastic (no delays or springyield here;
# tests/test_history.py, tests/test_plastic.py) and act/ctrl/eq_active (no actuators or
# equality constraints here).
XML = """
<mujoco>
  <size nuserdata="3"/>
  <worldbody>
    <body mocap="true" pos="1 0 0"><geom size=".1" contype="0" conaffinity="0"/></body>
    <body><freejoint/><geom size=".1"/>
      <body pos="0 0 .3"><joint type="hinge"/><geom size=".1"/></body>
    </body>
  </worldbody>
</mujoco>
"""
COMPONENTS = [State(1 << i) for i in range(NSTATE)]
SIGS = COMPONENTS + [State.PHYSICS, State.FULLPHYSICS, State.USER, State.INTEGRATION,
                     State.TIME | State.QPOS | State.CTRL]


@pytest.fixture(scope="module")
def both():
  m, mj = load_both(xml=XML)
  md = random_state(m, mj, seed=0)
  md.time = 1.25
  md.userdata[:] = [1.0, 2.0, 3.0]
  md.qacc_warmstart[:] = np.arange(mj.nv)
  d = to_jaxmj(m, md).replace(userdata=jnp.asarray(md.userdata),
                              qacc_warmstart=jnp.asarray(md.qacc_warmstart))
  return m, mj, d, md


def test_enum_values_are_mujocos():
  for c in State:
    assert int(c) == int(getattr(mujoco.mjtState, f"mjSTATE_{c.name}")), c.name


@pytest.mark.parametrize("sig", SIGS, ids=lambda s: str(int(s)))
def test_state_size_and_get_state_equal_mujoco(both, sig):
  m, mj, d, md = both
  size = mujoco.mj_stateSize(mj, int(sig))
  assert jaxmj.state_size(m, int(sig)) == size
  ref = np.zeros(size)
  mujoco.mj_getState(mj, md, ref, int(sig))
  np.testing.assert_array_equal(jaxmj.get_state(m, d, int(sig)), ref)


@pytest.mark.parametrize("sig", SIGS, ids=lambda s: str(int(s)))
def test_set_state_of_get_state_round_trips(both, sig):
  m, _, d, _ = both
  blank = jaxmj.make_data(m)
  state = jaxmj.get_state(m, d, int(sig))
  restored = jaxmj.set_state(m, blank, state, int(sig))
  np.testing.assert_array_equal(jaxmj.get_state(m, restored, int(sig)), state)
  copied = jaxmj.copy_state(m, d, blank, int(sig))
  np.testing.assert_array_equal(jaxmj.get_state(m, copied, int(State.INTEGRATION)),
                                jaxmj.get_state(m, restored, int(State.INTEGRATION)))


def test_step_from_restored_state_equals_step_from_original_bitwise(both):
  m, _, d, _ = both
  step = jax.jit(jaxmj.step)
  state = jaxmj.get_state(m, d, int(State.INTEGRATION))
  restored = jaxmj.set_state(m, jaxmj.make_data(m), state, int(State.INTEGRATION))
  a, b = step(m, d), step(m, restored)
  for f in ("qpos", "qvel", "time", "qacc"):
    np.testing.assert_array_equal(getattr(a, f), getattr(b, f))


def test_extract_state_equals_mujoco(both):
  m, mj, d, md = both
  src, dst = int(State.INTEGRATION), int(State.QVEL | State.TIME | State.MOCAP_QUAT)
  full = jaxmj.get_state(m, d, src)
  ref = np.zeros(mujoco.mj_stateSize(mj, dst))
  mujoco.mj_extractState(mj, np.asarray(full), src, ref, dst)
  np.testing.assert_array_equal(jaxmj.extract_state(m, full, src, dst), ref)


@pytest.mark.parametrize("call", ["size", "get", "set", "extract"])
@pytest.mark.parametrize("sig", [-1, 1 << NSTATE])
def test_bad_signature_is_an_error(both, call, sig):
  m, _, d, _ = both
  with pytest.raises(ValueError, match="invalid state signature"):
    if call == "size":
      jaxmj.state_size(m, sig)
    elif call == "get":
      jaxmj.get_state(m, d, sig)
    elif call == "set":
      jaxmj.set_state(m, d, jnp.zeros(1), sig)
    else:
      jaxmj.extract_state(m, jnp.zeros(1), sig, 1)


def test_extract_needs_a_subset_and_set_needs_the_right_size(both):
  m, _, d, _ = both
  qpos = jaxmj.get_state(m, d, int(State.QPOS))
  with pytest.raises(ValueError, match="not a subset"):
    jaxmj.extract_state(m, qpos, int(State.QPOS), int(State.QVEL))
  with pytest.raises(ValueError, match="shape"):
    jaxmj.set_state(m, d, qpos[:-1], int(State.QPOS))


def test_get_state_under_vmap_and_jit(both):
  m, _, d, _ = both
  batch = jax.tree.map(lambda x: jnp.stack([x, x]), d)
  states = jax.jit(jax.vmap(lambda dd: jaxmj.get_state(m, dd, int(State.PHYSICS))))(batch)
  assert states.shape == (2, jaxmj.state_size(m, int(State.PHYSICS)))


def test_reset_where_resets_only_flagged_worlds():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "pendulum.xml"))
  d = jaxmj.make_data(m)
  batch = jax.vmap(lambda q: d.replace(qpos=q))(jnp.linspace(0.1, 0.8, 8)[:, None])
  done = jnp.arange(8) % 3 == 0
  out = jax.jit(jax.vmap(lambda dd, f: jaxmj.reset_where(m, dd, f)))(batch, done)
  np.testing.assert_array_equal(out.qpos[:, 0],
                                jnp.where(done, m.qpos0[0], batch.qpos[:, 0]))
