"""Actuation held against mujoco 4.0 (mj_forward) at random states, controls and activations:
actuator_length, actuator_moment, actuator_velocity, actuator_force, qfrc_actuator, act_dot
for every transmission, dynamics, gain and bias type; a 500-step Euler trajectory; and
gradients of a rollout w.r.t. ctrl and actuator_gainprm against finite differences."""

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from mujoco_compare import (  # noqa: E402
  FAST,
  assert_stage_matches,
  load_both,
  random_state,
  to_jaxmj,
)

import jaxmj  # noqa: E402
from jaxmj.actuation import driver as actuation  # noqa: E402
from jaxmj.dynamics.forward import fwd_position, fwd_velocity  # noqa: E402
from jaxmj.types import DisableBit  # noqa: E402

TOL = 1e-9

# Every transmission (hinge, slide, ball, free, joint in parent, site, refsite translation and
# rotation, slider-crank, tendon), dynamics, gain and bias type, clamping and actearly.
MODEL = """
<mujoco>
  <option timestep="0.005"/>
  <compiler autolimits="true"/>
  <worldbody>
    <site name="anchor" pos="0 .1 .3"/>
    <body name="upper">
      <joint name="shoulder" range="-60 90" damping=".1" actuatorfrcrange="-4 4"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04" contype="0" conaffinity="0"/>
      <site name="s_upper" pos=".15 0 .05"/>
      <body name="lower" pos=".3 0 0">
        <joint name="elbow" axis="0 1 0" range="-10 120"/>
        <geom type="capsule" fromto="0 0 0 .25 0 0" size=".03" contype="0" conaffinity="0"/>
        <site name="hand" pos=".25 0 0" quat="0.9 0.1 0.3 0"/>
        <body name="wrist" pos=".25 0 0">
          <joint name="ball" type="ball"/>
          <geom size=".05" pos=".05 0 0" contype="0" conaffinity="0"/>
          <site name="tip" pos=".1 0 0" euler="10 20 30"/>
        </body>
      </body>
    </body>
    <body name="slider" pos="1 0 0">
      <joint name="slide" type="slide" axis="1 0 0" range="-.2 .3"/>
      <geom type="box" size=".05 .05 .05" contype="0" conaffinity="0"/>
      <site name="crank" pos="0 0 .2"/>
    </body>
    <body name="float" pos="0 1 1">
      <freejoint name="free"/>
      <geom size=".1" contype="0" conaffinity="0"/>
      <site name="rotor" pos=".1 0 0" quat="0.7 0 0.7 0"/>
    </body>
  </worldbody>
  <tendon>
    <fixed name="fixed"><joint joint="shoulder" coef="1"/><joint joint="elbow" coef="-.5"/></fixed>
    <spatial name="cable"><site site="anchor"/><site site="s_upper"/><site site="hand"/></spatial>
  </tendon>
  <actuator>
    <motor joint="shoulder" gear="2" ctrlrange="-1 1"/>
    <position joint="elbow" kp="30" dampratio="0.7" forcerange="-5 5"/>
    <position joint="shoulder" kp="5" timeconst="0.1"/>
    <velocity joint="slide" kv="4"/>
    <intvelocity joint="elbow" kp="8" actrange="-1 1"/>
    <damper joint="elbow" kv="3" ctrlrange="0 2"/>
    <cylinder joint="slide" timeconst="0.3" area="2" bias="1 -2 3"/>
    <muscle joint="elbow" lengthrange="-0.1 1.5" force="20"/>
    <muscle joint="shoulder" lengthrange="-1 1.5" tausmooth=".3"/>
    <general joint="elbow" dyntype="filter" dynprm=".2" gaintype="affine" gainprm="1 2 3"
             biastype="affine" biasprm="4 5 6" actrange="-2 2" actearly="true"/>
    <general joint="slide" dyntype="filterexact" dynprm=".05" actearly="true" group="3"/>
    <motor jointinparent="ball" gear="1 2 3"/>
    <position joint="ball" gear="0 0 1" kp="3"/>
    <motor joint="free" gear="1 2 3 4 5 6"/>
    <motor jointinparent="free" gear="1 0 0 0 1 1"/>
    <motor site="tip" gear="1 0 0 0 0 1"/>
    <position site="hand" refsite="anchor" gear="0 1 0 0 0 0" kp="4"/>
    <motor site="tip" refsite="s_upper" gear="0 0 0 1 1 0"/>
    <motor cranksite="s_upper" slidersite="crank" cranklength="1.1"/>
    <motor tendon="fixed" gear="2"/>
    <muscle tendon="cable" lengthrange=".2 .8"/>
    <position site="tip" refsite="s_upper" gear="0 0 0 0 1 0" kp="2"/>
    <intvelocity joint="ball" gear="0 1 0" kp="2"/>
    <position jointinparent="ball" gear="1 0 .5" kp="1" timeconst=".05"/>
  </actuator>
</mujoco>
"""


def random_controls(mj, d, rng):
  """Controls and activations beyond every range, and setpoints more than pi away from
  rotational servos' lengths (MuJoCo 4.0 reads those on the circle)."""
  d.ctrl[:] = rng.uniform(-6, 6, mj.nu)
  d.act[:] = rng.uniform(-6, 6, mj.na)


def _stages(m, d):
  d = fwd_position(m, d)
  d = fwd_velocity(m, d)
  return actuation.fwd_actuation(m, d)


@pytest.fixture(scope="module")
def arm():
  m, mj = load_both(xml=MODEL)
  return m, mj, jax.jit(_stages, compiler_options=FAST)


FIELDS = ("actuator_length", "actuator_moment", "actuator_velocity", "actuator_force",
          "qfrc_actuator", "act_dot")


def _compare(m, mj, stages, d, fields=FIELDS):
  ours = stages(m, to_jaxmj(m, d).replace(ctrl=d.ctrl.copy(), act=d.act.copy()))
  mujoco.mj_forward(mj, d)
  _assert_outputs(mj, ours, d, fields)


def _assert_outputs(mj, ours, d, fields=FIELDS):
  """jaxmj's actuation outputs `ours` against MjData `d` after mj_forward (MuJoCo's sparse
  actuator_moment made dense)."""
  moment = np.zeros((mj.nu, mj.nv))
  mujoco.mju_sparse2dense(moment, d.actuator_moment, d.moment_rownnz, d.moment_rowadr,
                          d.moment_colind)
  for name in fields:
    ref = moment if name == "actuator_moment" else getattr(d, name)
    np.testing.assert_allclose(getattr(ours, name), ref, atol=TOL, rtol=0, err_msg=name)


@pytest.mark.parametrize("seed", range(4))
def test_actuation_matches_mujoco_at_random_states(arm, seed):
  m, mj, stages = arm
  rng = np.random.default_rng(seed)
  d = random_state(m, mj, seed)
  random_controls(mj, d, rng)
  _compare(m, mj, stages, d)
  # mj_step's activation update (mj_advance), from the same forward pass
  ours = stages(m, to_jaxmj(m, d).replace(ctrl=d.ctrl.copy(), act=d.act.copy()))
  mujoco.mj_step(mj, d)
  np.testing.assert_allclose(actuation.next_act(m, ours), d.act, atol=TOL, rtol=0)


def _controls(mj, steps: int) -> np.ndarray:
  """Smooth controls inside each actuator's ctrlrange."""
  t = np.arange(steps)[:, None] * mj.opt.timestep
  phase = np.arange(mj.nu)[None]
  lo, hi = mj.actuator_ctrlrange[:, 0], mj.actuator_ctrlrange[:, 1]
  return lo + (hi - lo) * (0.5 + 0.4 * np.sin(3 * t + phase))


@pytest.fixture(scope="module")
def muscle_arm():
  import os

  from conftest import MODELS

  return load_both(os.path.join(MODELS, "muscle_arm.xml"))


def test_euler_trajectory_with_actuators_matches_mj_step(muscle_arm):
  m, mj = muscle_arm
  steps = 500
  ctrl = _controls(mj, steps)
  d = mujoco.MjData(mj)
  d.qpos[:] = [0.3, 0.5, -0.2]
  ref = []
  for u in ctrl:
    d.ctrl[:] = u
    mujoco.mj_step(mj, d)
    ref.append(np.concatenate([d.qpos, d.qvel, d.act]))
  d0 = jaxmj.make_data(m).replace(qpos=jnp.array([0.3, 0.5, -0.2]))
  run = jax.jit(lambda m, d, u: jaxmj.rollout(m, d, u)[1], compiler_options=FAST)
  traj = run(m, d0, jnp.asarray(ctrl))
  ours = np.concatenate([traj["qpos"], traj["qvel"], traj["act"]], axis=1)
  np.testing.assert_allclose(ours, np.array(ref), atol=1e-7, rtol=0)


def _loss(m, d, ctrl):
  final, traj = jaxmj.rollout(m, d, ctrl)
  return jnp.sum(final.qpos ** 2) + jnp.sum(final.qvel ** 2) + jnp.sum(traj["act"] ** 2)


def _check_directional(f, x, seed, eps=1e-6, rtol=1e-5):
  """jax.grad of f at x (a tuple of arrays) against central differences along two random
  directions."""
  grad = jax.jit(jax.grad(f), compiler_options=FAST)(x)
  fj = jax.jit(f, compiler_options=FAST)
  rng = np.random.default_rng(seed)
  for _ in range(2):
    v = tuple(rng.normal(size=a.shape) for a in x)
    plus = tuple(a + eps * b for a, b in zip(x, v, strict=True))
    minus = tuple(a - eps * b for a, b in zip(x, v, strict=True))
    fd = (fj(plus) - fj(minus)) / (2 * eps)
    slope = sum(jnp.sum(g * b) for g, b in zip(grad, v, strict=True))
    np.testing.assert_allclose(slope, fd, rtol=rtol, atol=1e-8)


def test_rollout_gradient_wrt_ctrl_and_gainprm_matches_finite_differences(muscle_arm):
  m, mj = muscle_arm
  # Smooth dynamics only (no limit rows): the gradient check is about the actuators.
  m = m.replace(opt=m.opt.replace(disableflags=int(DisableBit.CONSTRAINT)))
  d = jaxmj.make_data(m).replace(qpos=jnp.array([0.3, 0.5, -0.2]))
  x = (jnp.asarray(_controls(mj, 10)), m.actuator_gainprm)
  _check_directional(lambda x: _loss(m.replace(actuator_gainprm=x[1]), d, x[0]), x, seed=0)


def test_bad_ctrl_zeroes_all_controls_and_warns(arm):
  m, mj, stages = arm
  d = random_state(m, mj, 7)
  random_controls(mj, d, np.random.default_rng(7))
  d.ctrl[3] = np.nan
  ours = stages(m, to_jaxmj(m, d).replace(ctrl=d.ctrl.copy(), act=d.act.copy()))
  mujoco.mj_forward(mj, d)
  np.testing.assert_allclose(ours.actuator_force, d.actuator_force, atol=TOL, rtol=0)
  np.testing.assert_allclose(ours.act_dot, d.act_dot, atol=TOL, rtol=0)
  assert int(ours.warning[jaxmj.types.Warning.BADCTRL]) == 1


FLAGS = [
  pytest.param('<option actuatorgroupdisable="0 3"><flag clampctrl="disable"/></option>',
               id="groups_clampctrl"),
  pytest.param('<option><flag actuation="disable"/></option>', id="actuation_off",
               marks=pytest.mark.slow),
]


@pytest.mark.parametrize("flags", FLAGS)
def test_disable_flags_match_mujoco(flags):
  xml = MODEL.replace('<option timestep="0.005"/>', flags)
  m, mj = load_both(xml=xml)
  d = random_state(m, mj, 3)
  random_controls(mj, d, np.random.default_rng(3))
  ours = jax.jit(_stages, compiler_options=FAST)(
    m, to_jaxmj(m, d).replace(ctrl=d.ctrl.copy(), act=d.act.copy(), act_dot=jnp.zeros(m.na)))
  mujoco.mj_forward(mj, d)
  fields = ("actuator_velocity", "actuator_force", "qfrc_actuator")
  for name in fields + (("act_dot",) if "groups" in flags else ()):
    np.testing.assert_allclose(getattr(ours, name), getattr(d, name), atol=TOL, rtol=0,
                               err_msg=name)
  # mj_advance holds the activations of disabled groups (and all of them without actuation)
  act = actuation.next_act(m, ours)
  mujoco.mj_step(mj, d)
  np.testing.assert_allclose(act, d.act, atol=TOL, rtol=0)


ADHESION = """
<mujoco>
  <option cone="{cone}"/>
  <worldbody>
    <geom name="floor" type="plane" size="2 2 .1"/>
    <body name="box" pos="0 0 .09">
      <freejoint/>
      <geom type="box" size=".1 .1 .1" condim="{condim}"/>
    </body>
    <body name="ball" pos=".5 0 .1">
      <freejoint/>
      <geom size=".11"/>
    </body>
  </worldbody>
  <actuator>
    <adhesion body="box" ctrlrange="0 1" gain="20"/>
    <adhesion body="ball" ctrlrange="0 1" gain="5"/>
    <adhesion body="world" ctrlrange="0 1"/>
  </actuator>
</mujoco>
"""


@pytest.mark.parametrize("cone,condim", [
  ("pyramidal", 3), pytest.param("elliptic", 4, marks=pytest.mark.slow)])
def test_adhesion_body_transmission_matches_mujoco(cone, condim):
  m, mj = load_both(xml=ADHESION.format(cone=cone, condim=condim))
  d = mujoco.MjData(mj)
  d.qpos[:] = mj.qpos0
  d.qpos[3:7] = [0.999, 0.02, -0.03, 0.01]
  d.qpos[3:7] /= np.linalg.norm(d.qpos[3:7])
  d.qvel[:] = np.random.default_rng(0).normal(size=mj.nv) * 0.1
  d.ctrl[:] = [0.7, 0.4, 0.5]
  _compare(m, mj, jax.jit(_stages, compiler_options=FAST), d,
           fields=("actuator_moment", "actuator_force", "qfrc_actuator"))


def _bundled(name):
  import os

  return os.path.join(os.path.dirname(mujoco.__file__), "mjx", "test_data", "actuator", name)


@pytest.mark.parametrize("name", [
  "tendon_force_clamp.xml",  # tendon actuatorfrcrange: forces scaled to the tendon's range
  pytest.param("arm21.xml", marks=pytest.mark.slow),
  pytest.param("general_dyntype.xml", marks=pytest.mark.slow),
])
def test_bundled_actuator_models_match_mujoco(name):
  import warnings

  with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)  # cameras and lights are skipped
    m, mj = load_both(_bundled(name))

  def state(m, mj, seed):
    d = random_state(m, mj, seed)
    random_controls(mj, d, np.random.default_rng(seed))
    return d

  assert_stage_matches((m, mj), _stages, mujoco.mj_forward, [], seeds=range(2), state=state,
                       inputs=("ctrl", "act"),
                       check=lambda ours, d, seed: _assert_outputs(mj, ours, d))
