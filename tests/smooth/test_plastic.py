"""Spring plasticity at run time (jaxmj/smooth/plastic.py) against mj_step: trajectories past the
yield point for hinge, slide and ball joints and for spatial and fixed tendons (a slack
range among them), energy, springs disabled, keyframes and the PLASTIC state component."""

import copy
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mujoco_compare import jit_fast, load_both, mujoco

import jaxmj
from jaxmj.smooth import plastic
from jaxmj.state import State

# Every spring here is pushed past its yield within the first steps: the hinge and slide by
# their start, the ball by its spin, the stiffness-free hinge by its velocity, the spatial
# tendon by the hinge, the fixed tendon (slack range [0, .3]) by the slide.
XML = """
<mujoco>
  <option timestep="0.01" integrator="{integrator}">
    <flag energy="enable" contact="disable"/>
  </option>
  <worldbody>
    <site name="s0" pos="0 0 1"/>
    <body><joint name="h" axis="0 1 0" stiffness="4" springyield="10" springref="5"
        damping=".05"/>
      <geom size=".1" pos=".5 0 0"/><site name="s1" pos=".5 0 0"/>
      <body pos=".5 0 0"><joint name="s" type="slide" axis="1 0 0" stiffness="30"
          springyield=".02"/><geom size=".08"/></body>
    </body>
    <body pos="1 1 0"><joint type="ball" stiffness=".5" springyield="8" damping=".01"/>
      <geom size=".1" pos=".3 .1 0"/></body>
    <body pos="0 -1 0"><joint name="z" springyield="5"/><geom size=".1" pos=".3 0 0"/></body>
  </worldbody>
  <tendon>
    <spatial stiffness="40" springyield=".05" springlength=".9 1.1">
      <site site="s0"/><site site="s1"/></spatial>
    <fixed stiffness="20" springyield=".02" springlength="0 .3"><joint joint="s" coef="-2"/>
      <joint joint="z" coef=".1"/></fixed>
  </tendon>
  <keyframe><key qpos=".3 .1 1 0 0 0 0" plastic=".2 .1 1 .5"/></keyframe>
</mujoco>
"""
NSTEP = 100
TOL = 1e-8
FIELDS = ("qpos", "qvel", "plastic", "energy")


def _start(m, mj):
  md = mujoco.MjData(mj)
  md.qpos[:] = [0.9, -0.3, 0.8, 0.4, 0.3, 0.1, 0.0]
  md.qpos[2:6] /= np.linalg.norm(md.qpos[2:6])
  md.qvel[:] = [1.0, 0.5, 3.0, -2.0, 1.0, 4.0]
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(md.qpos), qvel=jnp.asarray(md.qvel))
  return d, md


@functools.lru_cache
def _run(integrator: str):
  """NSTEP steps of jaxmj.rollout and of mj_step from the same start: (m, mj, final Data,
  final MjData, jaxmj trajectory, MuJoCo trajectory)."""
  m, mj = load_both(xml=XML.format(integrator=integrator))
  d, md = _start(m, mj)
  run = jit_fast(lambda m, d: jaxmj.rollout(m, d, nstep=NSTEP, fields=FIELDS))
  d, traj = run(m, d)
  ref = {f: [] for f in FIELDS}
  for _ in range(NSTEP):
    mujoco.mj_step(mj, md)
    for f in FIELDS:
      ref[f].append(np.copy(getattr(md, f)))
  return m, mj, d, md, traj, {f: np.array(v) for f, v in ref.items()}


@pytest.mark.parametrize("integrator", [
  "Euler", "RK4", pytest.param("implicitfast", marks=pytest.mark.slow)])
def test_trajectory_past_yield_matches_mj_step(integrator):
  """RK4 predicts tendon lengths from the whole step's dq, not h qvel: Euler cannot tell."""
  m, mj, _, _, traj, ref = _run(integrator)
  for f in FIELDS:
    np.testing.assert_allclose(traj[f], ref[f], atol=TOL, rtol=TOL, err_msg=f)
  # the references did yield, every one of them
  moved = np.abs(ref["plastic"][-1] - jaxmj.make_data(m).plastic) > 1e-3
  assert moved[[0, 1, 6, 7, 8, 9, 10]].all() and moved[2:6].any()
  # the slack range [0, .3] of the fixed tendon yields in tension first, keeping its lower
  # end, then in compression, moving both
  assert ref["plastic"][10][9] == 0.0 and ref["plastic"][10][10] > 0.5
  assert ref["plastic"][-1][9] < -1.0


def test_plastic_state_layout_equals_mj_getState_bitwise():
  """MuJoCo's state after the yields, set into jaxmj whole, read back per signature."""
  m, mj, d, md, _, _ = _run("Euler")
  ref = {}
  for sig in (State.PLASTIC, State.PHYSICS, State.FULLPHYSICS, State.INTEGRATION):
    ref[sig] = np.zeros(mujoco.mj_stateSize(mj, int(sig)))
    mujoco.mj_getState(mj, md, ref[sig], int(sig))
    assert jaxmj.state_size(m, int(sig)) == ref[sig].size
  ours = jaxmj.set_state(m, jaxmj.make_data(m), jnp.asarray(ref[State.INTEGRATION]),
                         int(State.INTEGRATION))
  np.testing.assert_array_equal(ours.plastic, md.plastic)
  for sig, vec in ref.items():
    np.testing.assert_array_equal(jaxmj.get_state(m, ours, int(sig)), vec, err_msg=str(sig))
  np.testing.assert_allclose(jaxmj.get_state(m, d, int(State.PHYSICS)), ref[State.PHYSICS],
                             atol=TOL)


def test_keyframe_reset_sets_plastic_as_mujoco():
  m, mj, _, _, _, _ = _run("Euler")
  md = mujoco.MjData(mj)
  mujoco.mj_resetDataKeyframe(mj, md, 0)
  np.testing.assert_array_equal(jaxmj.reset(m, 0).plastic, md.plastic)


def test_disabled_springs_do_not_yield_as_mujoco():
  m, mj, d, md, _, _ = _run("Euler")
  mj, md = copy.deepcopy(mj), copy.deepcopy(md)  # _run's are shared
  mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_SPRING
  m = m.replace(opt=m.opt.replace(disableflags=m.opt.disableflags
                                  | int(jaxmj.DisableBit.SPRING)))
  before = md.plastic.copy()
  mujoco.mj_step(mj, md)
  np.testing.assert_array_equal(md.plastic, before)
  moved = d.replace(qpos=d.qpos + 1.0)
  np.testing.assert_array_equal(plastic.update(m, d, moved).plastic, d.plastic)


@pytest.mark.slow
def test_gradient_through_yield_matches_finite_differences():
  """d/d springyield of a 20-step rollout past the yield point, joints and tendons."""
  m, mj = load_both(xml=XML.format(integrator="Euler"))
  d, _ = _start(m, mj)
  weights = jnp.linspace(0.5, 1.5, m.nplastic)

  def loss(jnt_yield, ten_yield):
    mm = m.replace(jnt_springyield=jnt_yield, tendon_springyield=ten_yield)
    end, _ = jaxmj.rollout(mm, d, nstep=20)
    return jnp.sum(weights * end.plastic) + jnp.sum(jnp.arange(m.nq) * end.qpos)

  args = (m.jnt_springyield, m.tendon_springyield)
  grads = jax.jit(jax.grad(loss, argnums=(0, 1)))(*args)
  value, eps = jax.jit(loss), 1e-6
  for k, (arg, grad) in enumerate(zip(args, grads)):
    for i in range(arg.shape[0]):
      step = [jnp.zeros_like(a) for a in args]
      step[k] = step[k].at[i].set(eps)
      plus = value(*(a + s for a, s in zip(args, step)))
      minus = value(*(a - s for a, s in zip(args, step)))
      np.testing.assert_allclose(grad[i], (plus - minus) / (2 * eps), rtol=1e-5, atol=1e-6)
