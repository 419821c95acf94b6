"""Tendon armature and the armature and damping actuators reflect (jaxmj/smooth/armature.py) against
mujoco 4.0: qM, qLD, qfrc_bias (mj_tendonBias), passive damping, qacc at random states, and
500-step trajectories under every integrator."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import (  # noqa: E402
  assert_stage_matches,
  full_m,
  jit_fast,
  load_both,
  random_state,
  rollout_error,
  to_jaxmj,
)

import jaxmj  # noqa: E402
from jaxmj.smooth import armature, com, kinematics, tendon  # noqa: E402

TOL = 1e-9

# A tendon between two branches couples dofs that qM's tree sparsity keeps apart (MuJoCo
# drops those entries); a pulley halves a branch; a slide + ball body moves the third site.
# Actuators reflect armature and (polynomial) damping onto a hinge, a ball joint and tendons.
XML = """<mujoco><option integrator="{integrator}"><flag contact="disable"/></option>
 <worldbody>
  <body><joint name="j0" axis="0 1 0" damping=".1"/><geom size=".1" pos="0 0 -.3"/>
   <site name="s0" pos="0 0 -.3"/>
   <body pos="0 0 -.3"><joint name="jb" type="ball"/><geom size=".1" pos=".1 0 -.3"/>
    <site name="s2" pos="0 0 -.3"/></body></body>
  <body pos=".5 0 0"><joint name="j1" axis="0 1 0"/><geom size=".1" pos="0 0 -.3"/>
   <site name="s1" pos="0 .1 -.3"/></body>
  <body pos="0 .5 0"><joint type="slide" axis="1 0 0"/><joint type="ball"/><geom size=".1"/>
   <site name="s3" pos=".1 0 0"/></body>
 </worldbody>
 <tendon>
  <spatial name="t0" armature=".7" damping=".2 .1"><site site="s2"/><site site="s1"/>
   <site site="s3"/></spatial>
  <fixed armature=".3"><joint joint="j0" coef="1"/><joint joint="j1" coef="-2"/></fixed>
  <spatial name="t2" armature=".2"><site site="s0"/><site site="s1"/><pulley divisor="2"/>
   <site site="s2"/><site site="s3"/></spatial>
  <spatial name="t3"><site site="s0"/><site site="s3"/></spatial>
 </tendon>
 <actuator>
  <motor joint="j0" gear="2" armature=".5" damping=".3 .1 .2"/>
  <motor joint="j0" gear="3" armature=".25" damping=".1"/>
  <motor joint="jb" gear="1.5 0 0 0 0 0" armature=".3" damping=".2 0 .3"/>
  <motor joint="j1"/>
  <motor tendon="t0" gear="1.5" armature=".4" damping=".7 .2"/>
  <motor tendon="t3" gear="2" armature=".1" damping=".5 .1 .1"/>
 </actuator>
 <keyframe><key qpos=".4 .9 .1 .3 .3 -.3 .2 1 0 0 0" qvel="1 -2 1 .5 2 -1 1 .5 -1"/></keyframe>
</mujoco>"""


def dense_qld(mj, d) -> np.ndarray:
  """MjData.qLD (rows of M's sparsity, diagonal last) as jaxmj stores it: D on the
  diagonal, L below it."""
  out = np.zeros((mj.nv, mj.nv))
  for i in range(mj.nv):
    adr, nnz = mj.M_rowadr[i], mj.M_rownnz[i]
    out[i, mj.M_colind[adr:adr + nnz]] = d.qLD[adr:adr + nnz]
  return out


@pytest.fixture(scope="module")
def pair():
  return load_both(xml=XML.format(integrator="Euler"))


def test_targets_and_qpos0_constants_match_mujoco(pair):
  from mujoco_compare import model_differences

  m, mj = pair
  assert model_differences(m, mj) == []
  assert list(m.tendon_actuatorid) == [4, -1, -1, 5]
  assert list(m.tendon_hasarmature) == [True, True, True, True]


def test_inertia_bias_damping_and_qacc_match_mujoco(pair):
  m, mj = pair
  bias = jax.jit(lambda m, d: armature.tendon_bias(m, d.replace(qfrc_bias=0 * d.qfrc_bias)))

  def check(d, dm, seed):
    np.testing.assert_allclose(d.qM, full_m(mj, dm), atol=TOL, rtol=0)
    np.testing.assert_allclose(d.qLD, dense_qld(mj, dm), atol=TOL, rtol=0)
    # the states exercise the tendon Coriolis term: it is far above the tolerance
    assert np.abs(bias(m, d).qfrc_bias).max() > 1e-2

  assert_stage_matches(pair, jaxmj.forward, mujoco.mj_forward,
                       ["qLDiagInv", "qfrc_bias", "qfrc_damper", "qfrc_passive", "qfrc_smooth",
                        "qacc"], seeds=range(3), tol=TOL, rtol=0, check=check)


def test_jdot_qvel_is_the_length_acceleration(pair):
  """d/dt ten_J . qvel equals the second derivative of ten_length along a qacc = 0 path,
  by central differences of ten_J qvel over time."""
  m, mj = pair
  d = to_jaxmj(m, random_state(m, mj, 0))

  @jax.jit
  def stages(h):
    qpos = jaxmj.integrate_pos(m, jnp.asarray(d.qpos), jnp.asarray(d.qvel), h)
    dd = com.com_pos(m, kinematics.kinematics(m, d.replace(qpos=qpos)))
    dd = tendon.velocity(m, com.com_vel(m, tendon.tendon(m, dd)))
    return dd.ten_velocity, armature.jdot_qvel(m, dd)

  h = 1e-5
  fd = (np.asarray(stages(h)[0]) - np.asarray(stages(-h)[0])) / (2 * h)
  exact = stages(0.0)[1]
  has = np.asarray(m.tendon_hasarmature)
  np.testing.assert_allclose(np.asarray(exact)[has], fd[has], atol=1e-6)


@pytest.mark.parametrize("integrator", [
  "Euler", "implicit", pytest.param("RK4", marks=pytest.mark.slow),
  pytest.param("implicitfast", marks=pytest.mark.slow)])
def test_trajectory_matches_mj_step(integrator):
  """500 steps: Euler's implicit joint damping includes the actuators' (polynomial)
  damping; implicit / implicitfast differentiate tendon and actuator damping but, as MuJoCo,
  not the tendon armature's Coriolis term."""
  m, mj = load_both(xml=XML.format(integrator=integrator))
  err, _, dm, _ = rollout_error(m, mj, 500, key=0)
  assert np.abs(dm.qvel).max() > 1
  assert err < 1e-7


@pytest.mark.slow
def test_qacc_gradient_wrt_armature_and_damping_matches_finite_differences():
  m = jaxmj.Model.from_xml_string(XML.format(integrator="Euler"))
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(m.key_qpos[0]),
                                 qvel=jnp.asarray(m.key_qvel[0]))

  def loss(arm, damp):
    mm = m.replace(tendon_armature=arm, actuator_damping=damp)
    return jnp.sum(jaxmj.forward(mm, d).qacc ** 2)

  arm, damp = m.tendon_armature, m.actuator_damping
  grads = jit_fast(jax.grad(loss, argnums=(0, 1)))(arm, damp)
  f = jit_fast(loss)
  eps = 1e-6
  for k, (x, g) in enumerate(zip((arm, damp), grads, strict=True)):
    for i in range(len(x)):
      e = jnp.zeros_like(x).at[i].set(eps)
      args = [(arm, damp), (arm, damp)]
      args[0] = (arm + e, damp) if k == 0 else (arm, damp + e)
      args[1] = (arm - e, damp) if k == 0 else (arm, damp - e)
      fd = (f(*args[0]) - f(*args[1])) / (2 * eps)
      np.testing.assert_allclose(g[i], fd, rtol=1e-5, atol=1e-6)
