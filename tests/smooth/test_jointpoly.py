"""Polynomial joint stiffness and damping (MuJoCo 4.0 jnt_stiffnesspoly, dof_dampingpoly)
against mujoco 4.0: compiled fields (default classes included), spring and damper forces,
spring energy (tendon polynomials too), trajectories with implicit damping (Euler) and
implicitfast, and the discrete inverse."""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import (  # noqa: E402
  assert_stage_matches,
  jit_fast,
  load_both,
  model_differences,
  random_state,
  rollout_error,
  to_jaxmj,
)

import jaxmj  # noqa: E402

# Values written on a joint replace only the leading values of its class's (the slide keeps
# the class's cubic damping); the free joint takes the polynomials from the main class.
XML = """<mujoco><option integrator="{integrator}"><flag contact="disable" energy="enable"/>
 </option>
 <default><joint damping=".05 .1 .02" stiffness=".5 .3 .2"/>
  <default class="soft"><joint stiffness="2 -1"/></default></default>
 <worldbody>
  <body><joint name="h" axis="0 1 0" damping=".1 .3" stiffness="1 .5 2" springref="20"/>
   <geom size=".1" pos="0 0 -.3"/>
   <body pos="0 0 -.3"><joint name="s" type="slide" axis="1 0 0" class="soft" damping=".2"/>
    <geom size=".1"/>
    <body><joint name="b" type="ball" damping=".2 .4 .3" stiffness="3 1 .5"/>
     <geom size=".1" pos=".1 0 -.2"/></body></body></body>
  <body pos="1 0 0"><freejoint/><geom size=".1"/></body>
 </worldbody>
 <keyframe><key qpos=".5 .3 .8 .2 .4 -.4 1 .2 .1 .6 .3 .1 .3"
   qvel="2 -1 1 -2 3 1 -1 .5 2 -1 .5"/></keyframe>
</mujoco>"""


def test_polynomial_fields_match_mujoco_with_default_classes():
  m, mj = load_both(xml=XML.format(integrator="Euler"))
  assert model_differences(m, mj) == []
  np.testing.assert_array_equal(m.jnt_stiffnesspoly, mj.jnt_stiffnesspoly)
  np.testing.assert_array_equal(m.dof_dampingpoly, mj.dof_dampingpoly)
  assert m.jnt_stiffnesspoly.shape == (4, 2) and m.dof_dampingpoly.shape == (11, 2)
  np.testing.assert_array_equal(m.dof_dampingpoly[1], [0.1, 0.02])  # from the main class
  np.testing.assert_array_equal(m.jnt_stiffnesspoly[1], [-1, 0.2])


def test_too_many_polynomial_values_are_rejected():
  xml = XML.format(integrator="Euler").replace('damping=".2"', 'damping=".2 1 2 3"')
  with pytest.raises(jaxmj.MJCFError, match="damping"):
    jaxmj.Model.from_xml_string(xml)


def test_spring_damper_forces_and_energy_match_mujoco_at_random_states():
  m, mj = load_both(xml=XML.format(integrator="Euler"))
  peak = np.zeros(2)

  def state(m, mj, seed):
    dm = random_state(m, mj, seed)
    dm.qvel[:] *= 2  # where the quadratic and cubic terms dominate
    return dm

  def check(d, dm, seed):
    peak[:] = np.abs(dm.qfrc_spring).max(), np.abs(dm.qfrc_damper).max()

  assert_stage_matches((m, mj), jaxmj.forward, mujoco.mj_forward,
                       ["qfrc_spring", "qfrc_damper", "qfrc_passive", "energy"], seeds=range(4),
                       tol=1e-10, rtol=1e-7, state=state, check=check)
  assert peak[0] > 1 and peak[1] > 1  # at the last state, as MuJoCo computes them


@pytest.mark.parametrize("integrator", ["Euler", "implicitfast"])
def test_trajectory_with_implicit_polynomial_damping_matches_mj_step(integrator):
  m, mj = load_both(xml=XML.format(integrator=integrator))
  err, _, dm, _ = rollout_error(m, mj, 300, key=0)
  assert np.abs(dm.qvel).max() > 0.5
  assert err < 1e-8


@pytest.mark.parametrize("integrator", ["Euler", pytest.param("implicitfast",
                                                                  marks=pytest.mark.slow)])
def test_invdiscrete_inverse_with_polynomial_damping_matches_mj_inverse(integrator):
  xml = XML.format(integrator=integrator).replace('energy="enable"', 'invdiscrete="enable"')
  m, mj = load_both(xml=xml)
  dm = random_state(mj, mj, 1)
  dm.qvel[:] *= 2
  dm.qacc[:] = np.random.default_rng(2).normal(size=mj.nv)
  mujoco.mj_inverse(mj, dm)
  inv = jit_fast(jaxmj.inverse)
  d = inv(m, to_jaxmj(m, dm).replace(qacc=dm.qacc.copy()))
  np.testing.assert_allclose(d.qfrc_inverse, dm.qfrc_inverse, rtol=1e-10, atol=1e-10)


def test_tendon_spring_energy_includes_the_polynomial():
  xml = """<mujoco><option gravity="0 0 0"><flag energy="enable"/></option><worldbody>
   <body><joint name="a" type="slide"/><geom size=".1"/></body></worldbody>
   <tendon><fixed stiffness="1 2 3" springlength="-.1 .2"><joint joint="a" coef="1"/></fixed>
   </tendon></mujoco>"""
  m, mj = load_both(xml=xml)
  fwd = jit_fast(jaxmj.forward)
  dm = mujoco.MjData(mj)
  for q in (-0.7, 0.0, 0.9):
    dm.qpos[0] = q
    mujoco.mj_forward(mj, dm)
    np.testing.assert_allclose(fwd(m, to_jaxmj(m, dm)).energy, dm.energy, atol=1e-12)
