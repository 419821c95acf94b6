"""opt.grad_smoothing: contact smoothing of the solver's implicit derivative.

A sphere on a slide joint, driven by a motor, pushes a box on a damped slide joint. With no
push the two never touch, so the exact derivative of the box's final position w.r.t. the
push is exactly 0 (a first-order optimizer never starts pushing); smoothed, it is positive
(more push, box further). Values are unchanged by the option (to the last bits: the
smoothed step is a different XLA program; off, the step is the one before the option, bit for
bit: scripts/compare_revisions.py), and the trajectory is MuJoCo's, also for a tilted cube
landing on a floor nearby, whose box-plane collider would pick other corners if it looked
further than its margin.
"""

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxmj

XML = """<mujoco><option timestep="0.01"/><worldbody>
  <body name="pusher" pos="-0.3 0 0.05">
    <joint name="pusher" type="slide" axis="1 0 0" damping="2"/>
    <geom type="sphere" size="0.05" mass="1"/></body>
  <body name="box" pos="0 0 0.05"><joint name="box" type="slide" axis="1 0 0" damping="5"/>
    <geom type="box" size="0.05 0.05 0.05" mass="1"/></body>
  </worldbody><actuator><motor joint="pusher" ctrlrange="-10 10"/></actuator></mujoco>"""
# plus a cube landing on a floor (neither touches the sphere or the box)
LANDING = XML.replace("</worldbody>", """
  <geom type="plane" size="1 1 .1" pos="0 1 0" contype="2" conaffinity="2"/>
  <body pos="0 1 .14" euler="10 20 0"><freejoint/>
    <geom type="box" size=".05 .05 .05" contype="2" conaffinity="2"/></body></worldbody>""")
NSTEP = 40
PUSH = 8.0  # N: the sphere reaches the box after ~22 steps


def _model(t: float = 0.0, xml: str = XML, **opt) -> jaxmj.Model:
  m = jaxmj.Model.from_xml_string(xml)
  return m.replace(opt=m.opt.replace(grad_smoothing=t, **opt))


def _trajectory(m, push):
  d = jaxmj.make_data(m)
  ctrl = jnp.full((NSTEP, 1), push)
  _, traj = jaxmj.rollout(m, d, ctrl, nstep=NSTEP, fields=("qpos", "qvel", "efc_force"))
  return traj


def _box_x(m):
  """push (N, constant) -> the box's final position."""
  return lambda push: _trajectory(m, push)["qpos"][-1, 1]


def test_forward_is_unchanged(fast_jit):
  off = fast_jit(lambda p: _trajectory(_model(xml=LANDING), p))(PUSH)
  on = fast_jit(lambda p: _trajectory(_model(0.05, xml=LANDING), p))(PUSH)
  qpos = np.asarray(off["qpos"])
  assert qpos[-1, 1] > 0.01 and qpos[-1, 4] < 0.07  # the box was pushed, the cube landed
  for k in off:
    np.testing.assert_allclose(np.asarray(on[k]), np.asarray(off[k]), rtol=1e-10, atol=1e-12,
                               err_msg=k)
  mjm = mujoco.MjModel.from_xml_string(LANDING)
  mjd = mujoco.MjData(mjm)
  mjd.ctrl[0] = PUSH
  for _ in range(NSTEP):
    mujoco.mj_step(mjm, mjd)
  np.testing.assert_allclose(np.asarray(off["qpos"])[-1], mjd.qpos, rtol=0, atol=1e-10)


@pytest.mark.slow  # 34 s on 2 cores: two gradient compiles of a 3-body contact rollout
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_smoothed_gradient_pushes_where_the_exact_one_is_zero(fast_jit, cone):
  """An elliptic contact apart is smoothed through its normal row (as if frictionless)."""
  xml = XML.replace('timestep="0.01"', f'timestep="0.01" cone="{cone}"')
  exact = fast_jit(jax.grad(_box_x(_model(xml=xml))))(0.0)
  smooth = fast_jit(jax.grad(_box_x(_model(0.05, xml=xml))))(0.0)
  assert float(exact) == 0.0
  assert float(smooth) > 1e-3  # more push, box further: the direction that makes contact


@pytest.mark.slow
def test_smoothed_gradient_in_contact_near_finite_differences(fast_jit):
  """Pushing: the rows that push keep their exact derivative, so a small temperature is
  close to central differences (the bias comes from the rows near touching)."""
  value = fast_jit(_box_x(_model()))
  fd = (float(value(PUSH + 1e-5)) - float(value(PUSH - 1e-5))) / 2e-5
  exact = float(fast_jit(jax.grad(_box_x(_model())))(PUSH))
  smooth = float(fast_jit(jax.grad(_box_x(_model(0.002))))(PUSH))
  assert fd > 0
  np.testing.assert_allclose(exact, fd, rtol=1e-5)
  np.testing.assert_allclose(smooth, fd, rtol=0.1)


def test_bad_settings_are_refused():
  d = jaxmj.make_data(_model())
  with pytest.raises(ValueError, match="grad='implicit'"):
    jax.eval_shape(jaxmj.forward, _model(0.05, grad="unrolled"), d)
  with pytest.raises(ValueError, match="opt.grad_smoothing"):
    jax.eval_shape(jaxmj.forward, _model(-1.0), d)
  m = _model(grad_smoothing_friction=1.0)
  with pytest.raises(ValueError, match="grad='implicit'"):
    jax.eval_shape(jaxmj.forward, m.replace(opt=m.opt.replace(grad="unrolled")), d)
  with pytest.raises(ValueError, match="opt.grad_smoothing_friction"):
    jax.eval_shape(jaxmj.forward, _model(grad_smoothing_friction=-1.0), d)
  m = _model(grad_smoothing_friction=1.0, cone=jaxmj.types.Cone.ELLIPTIC)
  with pytest.raises(ValueError, match="pyramidal"):
    jax.eval_shape(jaxmj.forward, m, jaxmj.make_data(m))


# ------------------------------------------------------------------ static friction
# opt.grad_smoothing_friction: a box resting on a plane (mu = 0.5: it slides above 4.9 N),
# pushed along x by a motor at its bottom; the exact derivative of its position after 30 steps
# w.r.t. the push is that of the soft contact's creep while it sticks (~3e-4 m/N).
BOX = """<mujoco><option timestep="0.01"/><worldbody>
  <geom type="plane" size="2 2 .1" friction="0.5"/>
  <body name="box" pos="0 0 0.05"><freejoint/>
    <geom type="box" size="0.05 0.05 0.05" mass="1" friction="0.5"/>
    <site name="push" pos="0 0 -0.045"/></body></worldbody>
  <actuator><motor site="push" gear="1 0 0 0 0 0" ctrlrange="-20 20"/></actuator></mujoco>"""
BOX_NSTEP = 30
TAU = 2.0


def _box_model(tau: float = 0.0, xml: str = BOX, **opt) -> jaxmj.Model:
  m = jaxmj.Model.from_xml_string(xml)
  return m.replace(opt=m.opt.replace(grad_smoothing_friction=tau, **opt))


def _box_qpos(m):
  """push (N, constant) -> the box's qpos after each step (BOX_NSTEP, 7)."""
  d = jaxmj.make_data(m)
  return lambda push: jaxmj.rollout(m, d, jnp.full((BOX_NSTEP, 1), push), nstep=BOX_NSTEP,
                                    fields=("qpos",))[1]["qpos"]


def test_friction_smoothing_keeps_values_and_slopes_at_rest(fast_jit):
  """At no push the smoothed slope is positive and several times the creep's (MuJoCo's, by
  central differences); values stay the simulation's (MuJoCo's, to round-off)."""
  qpos, slope = fast_jit(lambda p: jax.jvp(_box_qpos(_box_model(TAU)), (p,), (1.0,)))(0.0)
  mjm = mujoco.MjModel.from_xml_string(BOX)

  def mujoco_qpos(push):
    mjd = mujoco.MjData(mjm)
    mjd.ctrl[0] = push
    out = []
    for _ in range(BOX_NSTEP):
      mujoco.mj_step(mjm, mjd)
      out.append(mjd.qpos.copy())
    return np.array(out)

  np.testing.assert_allclose(np.asarray(qpos), mujoco_qpos(0.0), rtol=0, atol=1e-10)
  fd = (mujoco_qpos(1e-4)[-1, 0] - mujoco_qpos(-1e-4)[-1, 0]) / 2e-4
  assert 0 < fd < 1e-3  # stuck: creep only
  assert np.isfinite(float(slope[-1, 0])) and float(slope[-1, 0]) > 5 * fd


@pytest.mark.slow  # two gradient compiles of a 30-step contact rollout
def test_friction_smoothing_gradient_descent_moves_a_resting_box(fast_jit):
  """Plain gradient descent on the push, from 0, towards a box position that needs sliding
  (0.05 m: ~6 N): exact gradients stay in the creep (< 1 N after 30 iterations); smoothed
  ones reach it. Sliding (8 N), the smoothed slope is biased against central differences
  (the slip mode drops the unloaded edge pairs' normal share), the exact one is not."""
  target, lr = 0.05, 500.0

  def descend(tau):
    x = lambda p: _box_qpos(_box_model(tau))(p)[-1, 0]  # noqa: E731
    vg = fast_jit(jax.value_and_grad(lambda p: (x(p) - target) ** 2))
    push = 0.0
    for _ in range(30):
      push -= lr * float(vg(push)[1])
    return push, float(vg(push)[0]), vg

  push_exact, loss_exact, vg_exact = descend(0.0)
  push_smooth, loss_smooth, vg_smooth = descend(TAU)
  assert push_exact < 1.0 and loss_exact > 0.9 * target**2
  assert loss_smooth < (0.2 * target) ** 2  # within 1 cm (lr 500 oscillates about it)
  value = fast_jit(lambda p: _box_qpos(_box_model())(p)[-1, 0])
  fd = (float(value(8.0 + 1e-5)) - float(value(8.0 - 1e-5))) / 2e-5
  slope = lambda vg: float(vg(8.0)[1]) / (2 * (float(value(8.0)) - target))  # noqa: E731
  np.testing.assert_allclose(slope(vg_exact), fd, rtol=1e-5)
  np.testing.assert_allclose(slope(vg_smooth), fd, rtol=0.15)
