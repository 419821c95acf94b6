"""Trajectories of jaxmj.step / rollout equal mj_step's (float64)."""

import os

import jax
import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import load_both, mujoco, random_state, to_jaxmj

import jaxmj

NSTEP = 500
TOL = 1e-7  # issue #2: 500-step qpos within 1e-7; observed <= 2e-12


# Smooth dynamics (no constraint rows). Random states would sink the contact models deep
# into the floor; tests/collision/test_contact_step.py covers those from their own poses.
SMOOTH = ("pendulum", "double_pendulum", "cartpole", "arm", "free_body", "humanoid", "chain")

# one compiled rollout per model, shared by the tests that step the same model
_rollout = jax.jit(lambda m, d: jaxmj.rollout(m, d, nstep=NSTEP))


@pytest.mark.parametrize("path", [os.path.join(MODELS, f"{n}.xml") for n in SMOOTH],
                         ids=SMOOTH)
def test_500_step_rollout_matches_mj_step(path):
  m, mj = load_both(path)
  dm = random_state(m, mj, 1)
  dm.xfrc_applied[:] *= 0.1
  d = to_jaxmj(m, dm)
  _, traj = _rollout(m, d)
  ref_qpos, ref_qvel = [], []
  for _ in range(NSTEP):
    mujoco.mj_step(mj, dm)
    ref_qpos.append(dm.qpos.copy())
    ref_qvel.append(dm.qvel.copy())
  np.testing.assert_allclose(np.asarray(traj["qpos"]), np.array(ref_qpos), atol=TOL, rtol=0)
  # Velocities are not integrated once more, so round-off shows earlier: the whipping tip
  # of the 30-link chain (|qvel| up to ~1e2) reaches 1.7e-6 after 500 steps; others < 1e-10.
  np.testing.assert_allclose(np.asarray(traj["qvel"]), np.array(ref_qvel), atol=1e-5,
                             rtol=1e-9)
  np.testing.assert_allclose(np.asarray(traj["time"])[-1], dm.time)


def test_step_from_keyframe_matches_mj_step():
  m, mj = load_both(os.path.join(MODELS, "humanoid.xml"))
  d = jaxmj.reset(m, "crouch")
  dm = mujoco.MjData(mj)
  mujoco.mj_resetDataKeyframe(mj, dm, jaxmj.name2id(m, "key", "crouch"))
  # the humanoid's rollout compiled for the 500-step test above; step 50 is checked
  _, traj = _rollout(m, d)
  for _ in range(50):
    mujoco.mj_step(mj, dm)
  np.testing.assert_allclose(np.asarray(traj["qpos"][49]), dm.qpos, atol=1e-9)


def test_eulerdamp_disabled_is_explicit_like_mujoco():
  xml = """<mujoco><option timestep="0.01"><flag eulerdamp="disable"/></option><worldbody>
    <body><joint axis="0 1 0" damping="30"/><geom type="capsule" fromto="0 0 0 .3 0 -.3"
    size=".05"/></body></worldbody></mujoco>"""
  m, mj = load_both(xml=xml)
  dm = random_state(m, mj, 0)
  d = to_jaxmj(m, dm)
  step = jax.jit(jaxmj.step)
  for _ in range(20):
    d = step(m, d)
    mujoco.mj_step(mj, dm)
  np.testing.assert_allclose(np.asarray(d.qpos), dm.qpos, atol=1e-9)
