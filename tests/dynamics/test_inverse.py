"""Inverse dynamics against mujoco 4.0.0: qfrc_inverse (and qfrc_constraint from the
inverse constraint problem) at random (qpos, qvel, qacc), and the forward -> inverse round
trip returning the applied forces; with the invdiscrete flag, under each integrator that
supports it. The forward pass's gravcomp and fluid forces are
compared on the way (test_passive holds them on more cases, slow)."""

import copy

import jax
import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import (  # noqa: E402
  FAST,
  assert_stage_matches,
  load_both,
  random_state,
  to_jaxmj,
)

import jaxmj  # noqa: E402
from jaxmj.smooth import rne  # noqa: E402

# Equality, limit and friction-loss rows, springs, dampers, gravcomp and a fluid medium;
# contact-free to keep the compile small (contacts share the same per-row update).
XML = """<mujoco><option density="1.2" viscosity=".1" wind="1 -2 .5" tolerance="1e-12">
  <flag contact="disable"/></option><worldbody>
<body pos="0 0 1" gravcomp=".7"><joint axis="0 1 0" damping=".2" range="-20 20"
    frictionloss=".3"/><geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
  <body pos=".5 0 0" name="b2"><joint axis="1 1 0" stiffness="2" range="-10 10"/>
    <geom type="box" size=".2 .05 .03" pos=".2 0 0"/>
    <body pos=".4 0 0"><joint type="ball"/><geom type="ellipsoid" size=".1 .05 .08"
      pos=".1 0 0"/></body></body></body>
<body pos="1 1 .2" name="c"><freejoint/><geom type="box" size=".1 .2 .3"/></body>
</worldbody><equality><connect body1="b2" body2="c" anchor=".3 0 0"/></equality></mujoco>"""


def test_qfrc_inverse_matches_mj_inverse_and_round_trips():
  m, mj = load_both(xml=XML)
  inv = jax.jit(jaxmj.inverse, compiler_options=FAST)
  def check(d, dm, seed):
    assert np.any(np.asarray(d.efc_active))
    back = inv(m, d)
    applied = d.qfrc_applied + d.qfrc_actuator + rne.xfrc_accumulate(m, d)
    np.testing.assert_allclose(back.qfrc_inverse, applied, rtol=1e-8, atol=1e-8)
    dm.qacc[:] = np.random.default_rng(seed).normal(size=mj.nv)
    mujoco.mj_inverse(mj, dm)
    d = inv(m, to_jaxmj(m, dm).replace(qacc=dm.qacc.copy()))
    scale = max(1.0, np.abs(dm.qfrc_inverse).max())
    np.testing.assert_allclose(d.qfrc_inverse, dm.qfrc_inverse, atol=1e-9 * scale)
    np.testing.assert_allclose(d.qfrc_constraint, dm.qfrc_constraint, atol=1e-9 * scale)

  # qfrc_gravcomp, qfrc_fluid and qfrc_passive are also held in test_passive
  assert_stage_matches((m, mj), jaxmj.forward, mujoco.mj_forward,
                       ["qfrc_gravcomp", "qfrc_fluid", "qfrc_passive"], seeds=range(3),
                       tol=1e-9, check=check)


# Dof dampers, a velocity actuator, an ellipsoid-model fluid medium (qDeriv's terms), a
# friction-loss row (its force depends on qacc) and a spinning free rigid body
# (implicitfast's own 6x6 block); no rows that random states violate.
DISCRETE = """<mujoco><option density="1.2" viscosity=".1" integrator="INTEG" tolerance="1e-12">
  <flag contact="disable" invdiscrete="enable"/></option><worldbody>
<body pos="0 0 1"><joint axis="0 1 0" damping=".2" frictionloss=".05"/>
  <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
  <body pos=".5 0 0"><joint name="j2" axis="1 1 0" stiffness="2" damping="1.5"/>
    <geom type="box" size=".2 .05 .03" pos=".2 0 0" fluidshape="ellipsoid"/>
    <body pos=".4 0 0"><joint type="ball" damping=".7"/>
      <geom type="ellipsoid" size=".1 .05 .08" pos=".1 0 0"/></body></body></body>
<body pos="1 1 .2"><freejoint/><geom type="box" size=".1 .2 .3"/></body>
</worldbody><actuator><velocity joint="j2" kv="3"/></actuator></mujoco>"""


@pytest.mark.parametrize("integrator", [
  pytest.param("Euler", marks=pytest.mark.slow), pytest.param("implicit", marks=pytest.mark.slow),
  "implicitfast"])
def test_invdiscrete_matches_mj_inverse_and_inverts_the_step(integrator):
  """qfrc_inverse with <flag invdiscrete> equals MuJoCo's for a random discrete qacc, and
  inverting one mj_step, qacc = (qvel' - qvel) / h, returns the applied forces: MuJoCo's
  step, not jaxmj's, so that the inverse alone compiles and its M - h qDeriv (the fluid's
  and actuator's terms included) is held to the matrix MuJoCo's step used."""
  m, mj = load_both(xml=DISCRETE.replace("INTEG", integrator))
  h = m.opt.timestep
  inv = jax.jit(jax.vmap(lambda m, d, a: jaxmj.inverse(m, d.replace(qacc=a)).qfrc_inverse,
                         in_axes=(None, None, 0)), compiler_options=FAST)
  dm = random_state(m, mj, 0)
  dm.ctrl[:] = 0.7
  dm.qacc[:] = np.random.default_rng(1).normal(size=mj.nv)
  stepped = copy.copy(dm)
  mujoco.mj_step(mj, stepped)  # its forward quantities are the start state's
  applied = stepped.qfrc_applied + stepped.qfrc_actuator
  for b in range(mj.nbody):  # mj_xfrcAccumulate
    mujoco.mj_applyFT(mj, stepped, dm.xfrc_applied[b, :3], dm.xfrc_applied[b, 3:],
                      stepped.xipos[b], b, applied)
  mujoco.mj_inverse(mj, dm)
  ours, back = inv(m, to_jaxmj(m, dm).replace(ctrl=dm.ctrl.copy()),
                   jnp.stack([dm.qacc, (stepped.qvel - dm.qvel) / h]))
  np.testing.assert_allclose(ours, dm.qfrc_inverse, rtol=1e-10, atol=1e-10)
  np.testing.assert_allclose(back, applied, rtol=1e-8, atol=1e-8)
  continuous = mj.opt.enableflags
  mj.opt.enableflags = 0
  mujoco.mj_inverse(mj, dm)  # the flag matters: the continuous inverse differs
  assert np.abs(dm.qfrc_inverse - ours).max() > 1e-4
  mj.opt.enableflags = continuous
