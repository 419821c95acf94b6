"""Divergence checks and autoreset (jaxmj/dynamics/autoreset.py) against mujoco 4.0.0's mj_step and
mj_step1/mj_step2: which warning counts, what is reset, and where the step continues."""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
from mujoco_compare import FAST, load_both  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.types import Warning  # noqa: E402

XML = """<mujoco><option timestep="0.005"/><worldbody>
  <body><joint name="a" axis="0 1 0" damping=".1"/><geom type="capsule" size=".05"
    fromto="0 0 0 .3 0 0"/><body pos=".3 0 0"><joint axis="0 1 0"/>
    <geom type="capsule" size=".05" fromto="0 0 0 .3 0 0"/></body></body></worldbody>
  <actuator><motor joint="a"/></actuator>{}</mujoco>"""
_STEP = jax.jit(jaxmj.step, compiler_options=FAST)
_STEP1 = jax.jit(jaxmj.step1, compiler_options=FAST)
_STEP2 = jax.jit(jaxmj.step2, compiler_options=FAST)


def _pair(extra: str = ""):
  m, mj = load_both(xml=XML.format(extra))
  d, dm = jaxmj.make_data(m), mujoco.MjData(mj)
  for _ in range(3):  # away from the reset state, with a warning counted already
    dm.ctrl[0] = 0.3
    mujoco.mj_step(mj, dm)
    d = _STEP(m, d.replace(ctrl=d.ctrl.at[0].set(0.3)))
  dm.warning[Warning.BADCTRL].number = 2
  d = d.replace(warning=d.warning.at[Warning.BADCTRL].set(2))
  return m, mj, d, dm


def _spoil(d, dm, case: str):
  """The same divergence in both: NaN qpos, huge qvel, both, or a force making qacc bad."""
  if case in ("qpos", "both"):
    dm.qpos[0] = np.nan
    d = d.replace(qpos=d.qpos.at[0].set(np.nan))
  if case in ("qvel", "both"):
    dm.qvel[1] = 2e10
    d = d.replace(qvel=d.qvel.at[1].set(2e10))
  if case == "qacc":
    dm.qfrc_applied[0] = 1e20
    d = d.replace(qfrc_applied=d.qfrc_applied.at[0].set(1e20))
  return d


def _same(d, dm, label):
  for f in ("time", "qpos", "qvel", "act", "ctrl", "qfrc_applied"):
    np.testing.assert_allclose(np.asarray(getattr(d, f)), getattr(dm, f), rtol=0, atol=1e-12,
                               err_msg=f"{f} {label}")
  np.testing.assert_array_equal(np.asarray(d.warning), [w.number for w in dm.warning],
                                err_msg=f"warning {label}")


@pytest.mark.parametrize("case", ["qpos", "qvel", "both"])
def test_bad_state_resets_then_steps_as_mj_step(case):
  m, mj, d, dm = _pair()
  d = _spoil(d, dm, case)
  mujoco.mj_step(mj, dm)
  d = _STEP(m, d)
  _same(d, dm, "after the resetting step")  # one count (qpos first), the rest cleared
  mujoco.mj_step(mj, dm)
  _same(_STEP(m, d), dm, "after the next step")


def test_a_reset_clears_what_the_step_does_not_write():
  m, mj, d, dm = _pair()
  d = _spoil(d, dm, "qvel").replace(cacc=jax.numpy.full_like(d.cacc, 5.0))  # left by a user
  mujoco.mj_step(mj, dm)
  d = _STEP(m, d)
  _same(d, dm, "after the resetting step")
  np.testing.assert_array_equal(np.asarray(d.cacc), dm.cacc)  # mj_resetData's zeros


def test_bad_qacc_resets_one_step_behind_mujoco():
  """MuJoCo reruns forward on the reset state and integrates; jaxmj returns the reset
  state, and its next step is MuJoCo's resetting step."""
  m, mj, d, dm = _pair()
  d = _spoil(d, dm, "qacc")
  mujoco.mj_step(mj, dm)
  d = _STEP(m, d)
  assert float(d.time) == 0 and list(np.asarray(d.warning)) == [
    w.number for w in dm.warning]
  np.testing.assert_array_equal(d.qpos, m.qpos0)
  _same(_STEP(m, d).replace(warning=d.warning), dm, "one step later")


def test_step1_checks_the_state_and_step2_the_acceleration():
  m, mj, d, dm = _pair()
  d = _spoil(d, dm, "qvel")
  mujoco.mj_step1(mj, dm)
  d = _STEP1(m, d)
  _same(d, dm, "after step1")
  mujoco.mj_step2(mj, dm)
  _same(_STEP2(m, d), dm, "after step2")


def test_without_autoreset_every_bad_kind_counts_and_stays():
  m, mj, d, dm = _pair('<option><flag autoreset="disable"/></option>')
  d = _spoil(d, dm, "both")
  mujoco.mj_step(mj, dm)
  d = _STEP(m, d)
  np.testing.assert_array_equal(np.asarray(d.warning), [w.number for w in dm.warning])
  assert np.asarray(d.warning)[[Warning.BADQPOS, Warning.BADQVEL, Warning.BADQACC]].tolist() \
    == [1, 1, 1]
  assert np.isnan(np.asarray(d.qpos)).any() and np.isnan(dm.qpos).any()


def test_a_step_hands_back_its_inputs_static_parts():
  """jit's dispatch compares each call's argument structure with the compiled one's: the
  Data a step returns (its reset selects included) carries the input's static objects (the
  Contact's bundle of numpy arrays), so that `d = step(m, d)` in a loop matches by identity
  instead of comparing those arrays on every call (~10% of a one-world call, measured)."""
  from conftest import MODELS

  from jaxmj.pytree import static_bundle

  m = jaxmj.Model.from_xml_path(f"{MODELS}/box_stack.xml")
  d = jaxmj.make_data(m)
  out = jax.jit(jaxmj.step)(m, d)
  assert static_bundle(out.contact) is static_bundle(d.contact)
  assert jax.jit(jaxmj.step)(m, out).contact._aux is out.contact._aux
