"""Each pipeline stage equals its MuJoCo counterpart on random states (float64, 1e-9)."""

import functools
import glob
import os

import jax
import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import full_m, load_both, mujoco, random_state, to_jaxmj

import jaxmj
from jaxmj.smooth import com, kinematics, mass, passive, rne, tendon  # noqa: E402

TOL = 1e-9
# Their forward pass jit-compiles the mesh / heightfield colliders: minutes on 2 cores.
SLOW_MODELS = ("mesh_drop.xml", "mesh_stack.xml", "terrain.xml")
PATHS = [pytest.param(p, marks=pytest.mark.slow) if os.path.basename(p) in SLOW_MODELS else p
         for p in sorted(glob.glob(os.path.join(MODELS, "*.xml")))]


# One compiled program per model and function, shared by the seeds and by the kinematics,
# com/crb and velocity tests (the velocity stages' Data carries every field they compare).
_forward = jax.jit(jaxmj.forward)


def _close(ours, ref, name, rtol=0.0):
  ours = np.asarray(ours)
  np.testing.assert_allclose(ours, np.asarray(ref).reshape(ours.shape), atol=TOL, rtol=rtol,
                             err_msg=name)


@functools.cache
def _load(path):
  return load_both(path)


@pytest.fixture(scope="module", params=PATHS, ids=os.path.basename)
def pair(request):
  return _load(request.param)


@pytest.mark.parametrize("seed", [0, 1])
def test_kinematics_matches_mj_kinematics(pair, seed):
  m, mj = pair
  dm = random_state(m, mj, seed)
  d = _velocity(m, to_jaxmj(m, dm))
  mujoco.mj_kinematics(mj, dm)
  for name in ("xpos", "xquat", "xmat", "xipos", "ximat", "xanchor", "xaxis", "geom_xpos",
               "geom_xquat", "geom_xmat", "site_xpos", "site_xquat", "site_xmat"):
    _close(getattr(d, name), getattr(dm, name), name)


def _position_stages(m, d):
  d = kinematics.kinematics(m, d)
  d = tendon.tendon(m, com.com_pos(m, d))
  return mass.factor_m(m, mass.crb(m, d))


@pytest.mark.parametrize("seed", [0, 1])
def test_com_and_crb_match_mj_compos_and_mj_crb(pair, seed):
  m, mj = pair
  dm = random_state(m, mj, seed)
  d = _velocity(m, to_jaxmj(m, dm))
  mujoco.mj_kinematics(mj, dm)
  mujoco.mj_comPos(mj, dm)
  mujoco.mj_crb(mj, dm)
  for name in ("subtree_com", "cinert", "cdof", "crb"):
    _close(getattr(d, name), getattr(dm, name), name)
  _close(d.qM, full_m(mj, dm), "qM")
  # The factorization reproduces qM: L' D L == M.
  ld = np.asarray(d.qLD)
  lower = np.tril(ld, -1) + np.eye(m.nv)
  np.testing.assert_allclose(lower.T @ np.diag(np.diag(ld)) @ lower, np.asarray(d.qM),
                             atol=1e-10)
  np.testing.assert_allclose(np.asarray(d.qLDiagInv), 1 / np.diag(ld))


def _velocity_stages(m, d):
  d = _position_stages(m, d)
  d = tendon.velocity(m, com.com_vel(m, d))
  return rne.rne(m, passive.passive(m, d))


_velocity = jax.jit(_velocity_stages)


@pytest.mark.parametrize("seed", [0, 1])
def test_velocity_stages_match_mj_comvel_passive_rne(pair, seed):
  m, mj = pair
  dm = random_state(m, mj, seed)
  d = _velocity(m, to_jaxmj(m, dm))
  mujoco.mj_forward(mj, dm)
  for name in ("cvel", "cdof_dot", "qfrc_bias", "qfrc_spring", "qfrc_damper", "qfrc_passive"):
    _close(getattr(d, name), getattr(dm, name), name)
  # mj_rne alone, with zero acceleration, is the bias force.
  bias = np.zeros(mj.nv)
  mujoco.mj_rne(mj, dm, 0, bias)
  _close(d.qfrc_bias, bias, "mj_rne")


@pytest.mark.parametrize("seed", [0, 1])
def test_forward_matches_mj_forward(pair, seed):
  m, mj = pair
  dm = random_state(m, mj, seed)
  d = _forward(m, to_jaxmj(m, dm))
  mujoco.mj_forward(mj, dm)
  for name in ("qfrc_smooth", "qacc_smooth", "qacc"):
    # Long chains amplify round-off in M^-1; accelerations reach 1e3, hence rtol.
    _close(getattr(d, name), getattr(dm, name), name, rtol=1e-10)


# qfrc_smooth and qacc_smooth do not depend on contacts, so the split stages run on one contact
# model by default; the other contact models compile the colliders and constraint rows once
# more (their forward is held against mj_forward above) and run with --runslow.
CONTACT_SLOW = ("box_pile.xml", "gripper.xml", "humanoid_floor.xml", "primitives_drop.xml",
                "quadruped.xml", "sensors.xml") + SLOW_MODELS
ACC_PATHS = [pytest.param(p, marks=pytest.mark.slow) if os.path.basename(p) in CONTACT_SLOW
             else p for p in sorted(glob.glob(os.path.join(MODELS, "*.xml")))]


@pytest.mark.parametrize("path", ACC_PATHS, ids=os.path.basename)
def test_fwd_acceleration_matches_mj_fwdacceleration(path):
  m, mj = _load(path)
  dm = random_state(m, mj, 3)
  mujoco.mj_forward(mj, dm)
  dm.qfrc_applied[:] *= 2.0
  mujoco.mj_fwdAcceleration(mj, dm)
  d = to_jaxmj(m, dm)
  stages = lambda m, d: jaxmj.fwd_acceleration(
    m, jaxmj.fwd_actuation(m, jaxmj.fwd_velocity(m, jaxmj.fwd_position(m, d))))
  d = jax.jit(stages)(m, d)
  _close(d.qfrc_smooth, dm.qfrc_smooth, "qfrc_smooth", rtol=1e-10)
  _close(d.qacc_smooth, dm.qacc_smooth, "qacc_smooth", rtol=1e-10)


def test_disabled_gravity_spring_damper_flags():
  xml = """<mujoco><option gravity="0 0 -9.81"><flag gravity="disable" spring="disable"
    damper="disable"/></option><worldbody><body><joint axis="0 1 0" stiffness="5"
    damping="2"/><geom type="capsule" fromto="0 0 0 0 0 -1" size=".05"/></body></worldbody>
    </mujoco>"""
  m, mj = load_both(xml=xml)
  dm = random_state(m, mj, 0)
  d = jax.jit(jaxmj.forward)(m, to_jaxmj(m, dm))
  mujoco.mj_forward(mj, dm)
  for name in ("qfrc_passive", "qfrc_bias", "qacc"):
    _close(getattr(d, name), getattr(dm, name), name)


def test_forward_names_unsupported_features():
  # no compiled feature lacks a runtime now (adhesion with a gap was the last); the compiler's
  # list (Model.unsupported) still makes forward refuse by name
  xml = """<mujoco><worldbody><body pos="0 0 1"><freejoint/>
    <geom size=".1"/></body></worldbody></mujoco>"""
  m = jaxmj.Model.from_xml_string(xml)
  assert m.unsupported == ()
  m = m.replace(unsupported=(("a contact feature", int(jaxmj.DisableBit.CONTACT)),))
  with pytest.raises(NotImplementedError, match="a contact feature"):
    jaxmj.forward(m, jaxmj.make_data(m))
  # The disable bit named with the feature turns it off (compiled: op-by-op dispatch of the
  # whole pipeline costs ~5x its compile).
  m = m.replace(opt=m.opt.replace(disableflags=int(jaxmj.DisableBit.CONTACT)))
  _forward(m, jaxmj.make_data(m))


_TRACED_ONCE = """<mujoco model="traced_once"><worldbody><geom type="plane" size="1 1 .1"/>
  <body pos="0 0 .3"><freejoint/><geom size=".05"/></body></worldbody></mujoco>"""


def test_public_step_is_traced_once_for_every_enclosing_trace(monkeypatch):
  # a training run traces an environment's step in several programs (rollouts, evaluation,
  # under vmap and in loops): jaxmj.step is jitted, so they share one trace of the pipeline
  from jaxmj.dynamics import forward as recipe

  m = jaxmj.Model.from_xml_string(_TRACED_ONCE)
  d = jaxmj.make_data(m)
  traces = []
  step1 = recipe._step1
  monkeypatch.setattr(recipe, "_step1", lambda m, d: traces.append(1) or step1(m, d))
  jax.clear_caches()  # no trace of an earlier test serves this model
  try:
    jax.jit(lambda d: jaxmj.step(m, d)).lower(d)
    jax.jit(lambda d: jax.lax.fori_loop(0, 3, lambda _, d: jaxmj.step(m, d), d)).lower(d)
    batch = jax.tree.map(lambda x: np.stack([x] * 4), d)
    jax.jit(jax.vmap(lambda d: jaxmj.step(m, d))).lower(batch)
    assert len(traces) == 1
  finally:
    jax.clear_caches()  # nor does this one's, made with the counting stage, serve later tests


def test_public_step_computes_the_recipes_step_bit_for_bit():
  from jaxmj.dynamics import forward as recipe

  m = jaxmj.Model.from_xml_string(_TRACED_ONCE)
  ours, theirs = jaxmj.make_data(m), jaxmj.make_data(m)
  public, plain = jax.jit(jaxmj.step), jax.jit(recipe.step)
  for _ in range(30):  # the ball falls onto the plane and bounces
    ours, theirs = public(m, ours), plain(m, theirs)
  assert int(np.asarray(ours.contact.active).sum()) or float(ours.qvel[2]) != 0.0
  for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
    np.testing.assert_array_equal(a, b)


def test_a_new_data_can_be_donated_to_a_jitted_step():
  # make_data's qpos was the Model's qpos0 array itself, so XLA refused the donated Data
  # ("Attempt to donate a buffer which is also used by the same call")
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "quadruped.xml"))
  model_buffers = {x.unsafe_buffer_pointer() for x in jax.tree.leaves(m) if x.size}
  for d in (jaxmj.make_data(m), jaxmj.reset(m)):
    assert not model_buffers & {x.unsafe_buffer_pointer() for x in jax.tree.leaves(d) if x.size}
  step = jax.jit(jaxmj.step, donate_argnums=1)
  d = jaxmj.make_data(m)
  for _ in range(2):
    d = step(m, d)
  np.testing.assert_allclose(float(d.time), 2 * float(m.opt.timestep), rtol=1e-6)
