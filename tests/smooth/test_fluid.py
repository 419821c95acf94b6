"""The ellipsoid fluid model (fluidshape="ellipsoid") against mujoco 4.0.0: compiled
geom_fluid, qfrc_fluid / qfrc_passive at random states with bodies of both models, a
swimmer trajectory, and gradients against central differences."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import (  # noqa: E402
  FAST,
  assert_stage_matches,
  load_both,
  model_differences,
  random_state,
  to_jaxmj,
)

import jaxmj  # noqa: E402
from jaxmj.smooth import com, kinematics, passive  # noqa: E402

# An inertia-box arm carrying an ellipsoid-model capsule (own fluidcoef), and a free body
# with one ellipsoid geom of each primitive type plus a plain box (flag 0: no force). Small
# geoms at low speed are where MuJoCo 4.0's scale-free projected area matters.
MIXED = """<mujoco><option density="1.2" viscosity="0.3" wind="1 -2 .5">
  <flag contact="disable"/></option><worldbody>
<body pos="0 0 1"><joint axis="0 1 0" damping=".3"/>
  <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
  <body pos=".5 0 0"><joint type="ball"/>
    <geom type="capsule" size=".05 .2" pos=".2 0 0" euler="0 90 0" fluidshape="ellipsoid"
      fluidcoef=".4 .3 1.2 .8 .6"/></body></body>
<body pos="1 1 0"><freejoint/>
  <geom type="sphere" size=".1" fluidshape="ellipsoid"/>
  <geom type="cylinder" size=".05 .2" pos=".2 0 0" euler="30 0 0" fluidshape="ellipsoid"/>
  <geom type="box" size=".01 .004 .002" pos="0 .2 0" euler="10 20 30" fluidshape="ellipsoid"/>
  <geom type="ellipsoid" size=".1 .05 .2" pos="0 0 .2" fluidshape="ellipsoid"/>
  <geom type="box" size=".1 .1 .1" pos="0 -.3 0"/>
</body>
</worldbody></mujoco>"""

# A planar swimmer whose links all use the ellipsoid model, in water with a weak current.
SWIMMER = """<mujoco><option timestep="0.004" density="1000" viscosity="0.1" wind="0.02 0 0">
  <flag gravity="disable" contact="disable"/></option>
  <default><joint type="hinge" axis="0 0 1" damping=".001"/>
    <geom type="capsule" size=".025" density="1000" fluidshape="ellipsoid"/></default>
  <worldbody><body><joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/>
    <joint/><geom type="ellipsoid" size=".05 .03 .02" pos=".05 0 0" fluidcoef=".5 .25 1.5 1 1"/>
    <body pos=".1 0 0"><joint/><geom fromto="0 0 0 .1 0 0"/>
      <body pos=".1 0 0"><joint/><geom fromto="0 0 0 .1 0 0"/>
        <body pos=".1 0 0"><joint/><geom type="box" size=".05 .02 .01" pos=".05 0 0"/>
  </body></body></body></body></worldbody>
  <actuator><motor joint="j1" gear=".1"/></actuator></mujoco>""".replace(
  '<body pos=".1 0 0"><joint/>', '<body pos=".1 0 0"><joint name="j1"/>', 1)


def test_geom_fluid_compiles_as_mujoco():
  m, mj = load_both(xml=MIXED)
  assert model_differences(m, mj) == []
  np.testing.assert_array_equal(m.body_fluidellipsoid, [False, False, True, True])


def _passive(m, d):
  """qfrc_passive and qfrc_fluid through the stages they depend on."""
  d = kinematics.kinematics(m, d)
  return passive.passive(m, com.com_vel(m, com.com_pos(m, d)))


PASSIVE = jax.jit(_passive, compiler_options=FAST)


def _state(m, mj, seed):
  dm = random_state(m, mj, seed)
  dm.qvel[:] *= 0.2 if seed else 3.0
  return dm


def test_mixed_models_match_at_random_states():
  m, mj = load_both(xml=MIXED)
  for wind in ([1.0, -2.0, 0.5], [0.0, 0.0, 0.0]):
    mj.opt.wind[:] = wind
    mw = m.replace(opt=m.opt.replace(wind=jnp.asarray(wind)))
    assert_stage_matches((mw, mj), PASSIVE, mujoco.mj_forward, ["qfrc_fluid", "qfrc_passive"],
                         seeds=range(2), tol=1e-9, state=_state)


def test_swimmer_trajectory_matches_mj_step():
  m, mj = load_both(xml=SWIMMER)
  qvel = np.array([0.3, -0.2, 1.0, 2.0, -3.0, 1.5])
  dm = mujoco.MjData(mj)
  dm.qvel[:], dm.ctrl[:] = qvel, 0.5
  d = jaxmj.make_data(m).replace(qvel=qvel, ctrl=np.full(1, 0.5))
  run = jax.jit(lambda m, d: jaxmj.rollout(m, d, nstep=200), compiler_options=FAST)
  _, traj = run(m, d)
  ref = []
  for _ in range(200):
    mujoco.mj_step(mj, dm)
    ref.append(np.concatenate([dm.qpos, dm.qvel]))
  ours = np.concatenate([traj["qpos"], traj["qvel"]], axis=1)
  np.testing.assert_allclose(ours, np.array(ref), rtol=1e-8, atol=1e-8)


def test_fluid_gradient_matches_central_differences():
  """jax.grad of qfrc_passive (projected on a fixed vector) w.r.t. qpos, qvel and the
  medium's density, each checked along a random direction."""
  m, mj = load_both(xml=MIXED)
  d0 = to_jaxmj(m, random_state(m, mj, 3))
  w = np.random.default_rng(0).normal(size=m.nv)

  def loss(qpos, qvel, density, run=_passive):
    mm = m.replace(opt=m.opt.replace(density=density))
    return jnp.dot(w, run(mm, d0.replace(qpos=qpos, qvel=qvel)).qfrc_passive)

  args = (d0.qpos, d0.qvel, m.opt.density)
  grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2)), compiler_options=FAST)(*args)
  eps = 1e-6
  for i, (arg, grad) in enumerate(zip(args, grads)):
    direction = np.random.default_rng(i).normal(size=np.shape(arg))
    plus = [a + eps * direction if k == i else a for k, a in enumerate(args)]
    minus = [a - eps * direction if k == i else a for k, a in enumerate(args)]
    fd = (loss(*plus, run=PASSIVE) - loss(*minus, run=PASSIVE)) / (2 * eps)
    np.testing.assert_allclose(np.sum(grad * direction), fd, rtol=1e-6, atol=1e-8)


def test_without_a_medium_fluid_is_skipped_and_keeps_its_derivative():
  """Density and viscosity 0 in a program whose Model is an argument (the medium a run-time
  value, a lax.cond on the CPU): qfrc_fluid is 0 and qfrc_passive MuJoCo's, which skips
  mj_fluid; the derivative in the density at 0 is still the medium's (a forward difference:
  below 0 there is no medium, in MuJoCo either)."""
  m, mj = load_both(xml=MIXED)
  mj.opt.density, mj.opt.viscosity = 0.0, 0.0
  m0 = m.replace(opt=m.opt.replace(density=jnp.zeros(()), viscosity=jnp.zeros(())))
  assert_stage_matches((m0, mj), PASSIVE, mujoco.mj_forward, ["qfrc_fluid", "qfrc_passive"],
                       seeds=range(2), tol=1e-12, state=_state)
  d0 = to_jaxmj(m, random_state(m, mj, 3))
  w = np.random.default_rng(0).normal(size=m.nv)

  def loss(density, run=_passive):
    mm = m0.replace(opt=m0.opt.replace(density=density))
    return jnp.dot(w, run(mm, d0).qfrc_passive)

  grad = jax.jit(jax.grad(loss), compiler_options=FAST)(jnp.zeros(()))
  eps = 1e-7
  assert abs(float(grad)) > 1e-3
  fd = (loss(jnp.asarray(eps), run=PASSIVE) - loss(jnp.zeros(()), run=PASSIVE)) / eps
  np.testing.assert_allclose(grad, fd, rtol=1e-5)
