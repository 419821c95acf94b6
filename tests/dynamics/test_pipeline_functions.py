"""MuJoCo's pipeline functions one at a time (jaxmj.kinematics, com_pos, ..., MJX's names):
chained in MuJoCo's order they fill the fields fwd_position and fwd_velocity fill, with the
same values (to the last bits a separate compile may round differently: 1e-12), and
kinematics alone gives mj_kinematics' frames."""

import copy
import os

import jax
import numpy as np
from conftest import MODELS
from mujoco_compare import load_both, mujoco, random_state, to_jaxmj

import jaxmj

POSITION = ("kinematics", "com_pos", "camlight", "tendon", "crb", "factor_m", "collision",
            "transmission")
VELOCITY = ("com_vel", "passive", "rne", "make_constraint")


def _leaves(d) -> dict:
  return {jax.tree_util.keystr(path): np.asarray(x)
          for path, x in jax.tree_util.tree_leaves_with_path(d)}


def _assert_same(ours, want, skip: set):
  """Every Data leaf of ours equals want's within 1e-12, those named in skip aside."""
  a, b = _leaves(ours), _leaves(want)
  for k in a.keys() - skip:
    np.testing.assert_allclose(a[k], b[k], rtol=1e-12, atol=1e-12, err_msg=k)


def test_chained_pipeline_functions_fill_what_the_stages_fill():
  """tendon_arm: tendons, actuators (transmission), passive forces, limit rows."""
  m, mj = load_both(os.path.join(MODELS, "tendon_arm.xml"))
  d0 = to_jaxmj(m, random_state(m, mj, 2))
  d = d0
  for name in POSITION:
    d = getattr(jaxmj, name)(m, d)
  want = jaxmj.fwd_position(m, d0)
  _assert_same(d, want, set())
  want = jaxmj.fwd_velocity(m, want)
  # mj_fwdVelocity's own lines (no function of their own): tendon and actuator velocities,
  # which mj_passive reads
  d = d.replace(ten_velocity=want.ten_velocity, actuator_velocity=want.actuator_velocity)
  for name in VELOCITY:
    d = getattr(jaxmj, name)(m, d)
  _assert_same(d, want, set())
  filled = {k for k, x in _leaves(d).items() if not np.array_equal(x, _leaves(d0)[k])}
  assert {".cvel", ".qfrc_passive", ".qfrc_bias", ".ten_length", ".efc_J"} <= filled


def test_collision_is_callable_as_mjx_collision_and_finds_mujocos_contacts():
  """jaxmj.collision, the subpackage, is also MJX's collision(m, d): after kinematics it
  fills the contacts mj_collision finds (a resting stack: 1e-12)."""
  m, mj = load_both(os.path.join(MODELS, "box_stack.xml"))
  md = random_state(m, mj, 0)
  mujoco.mj_forward(mj, md)
  d = jaxmj.collision(m, jaxmj.kinematics(m, to_jaxmj(m, md)))
  active = np.asarray(d.contact.active)
  assert active.sum() == md.ncon > 0
  np.testing.assert_allclose(np.sort(np.asarray(d.contact.dist)[active]),
                             np.sort(md.contact.dist), atol=1e-12)
  assert jaxmj.collision.plan.collision_plan(m)["groups"]  # still the subpackage


def test_kinematics_alone_matches_mj_kinematics():
  m, mj = load_both(os.path.join(MODELS, "humanoid.xml"))
  md = random_state(m, mj, 0)
  d = jaxmj.kinematics(m, to_jaxmj(m, md))
  mujoco.mj_kinematics(mj, md)
  for field in ("xpos", "xquat", "xipos", "geom_xpos", "site_xpos"):
    np.testing.assert_allclose(getattr(d, field), getattr(md, field), atol=1e-12,
                               err_msg=field)


DAMPED_ARM = """<mujoco><option integrator="{integ}"><flag contact="disable"/></option><worldbody>
<body pos="0 0 1"><joint name="h1" axis="0 1 0" damping=".3"/>
  <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
  <body pos=".5 0 0"><joint name="h2" axis="1 1 0" damping=".1"/>
    <geom type="box" size=".2 .05 .03" pos=".2 0 0"/>
    <body pos=".4 0 0"><joint type="ball" damping=".05"/>
      <geom type="ellipsoid" size=".1 .05 .08" pos=".1 0 0"/></body></body></body>
</worldbody>
<tendon><fixed name="t" damping=".4"><joint joint="h1" coef="1"/><joint joint="h2" coef="-.5"/>
</fixed></tendon>
<actuator><position joint="h2" kp="5" kv=".5"/><velocity joint="h1" kv="3"/></actuator>
</mujoco>"""


def _dense_qderiv(mj, md) -> np.ndarray:
  """MuJoCo's qDeriv (the D sparsity: rows of D_rownnz entries at D_colind) as (nv, nv)."""
  out = np.zeros((mj.nv, mj.nv))
  for i in range(mj.nv):
    adr = mj.D_rowadr[i]
    cols = mj.D_colind[adr:adr + mj.D_rownnz[i]]
    out[i, cols] = md.qDeriv[adr:adr + mj.D_rownnz[i]]
  return out


def test_deriv_smooth_vel_is_the_matrix_mujocos_implicit_integrators_use():
  """mjd_smooth_vel as mj_implicit leaves it in qDeriv: without the bias derivative under
  implicitfast (MJX's deriv_smooth_vel), with it under implicit."""
  m, mj = load_both(xml=DAMPED_ARM.format(integ="implicitfast"))
  md0 = random_state(m, mj, 0)
  md0.ctrl[:] = [0.3, -0.2]
  d = jaxmj.forward(m, to_jaxmj(m, md0).replace(ctrl=md0.ctrl.copy()))
  for integ, bias in ((mujoco.mjtIntegrator.mjINT_IMPLICITFAST, False),
                      (mujoco.mjtIntegrator.mjINT_IMPLICIT, True)):
    mj.opt.integrator = integ
    md = copy.copy(md0)
    mujoco.mj_step(mj, md)  # qDeriv of the state before the step
    got = jaxmj.deriv_smooth_vel(m, d, flg_bias=bias) if bias else jaxmj.deriv_smooth_vel(m, d)
    np.testing.assert_allclose(got, _dense_qderiv(mj, md), atol=1e-12)


def test_solve_and_xfrc_accumulate_fill_what_forward_fills():
  """mjx.solve (mj_fwdConstraint) after the stages before it gives forward's constraint
  solution; xfrc_accumulate is the xfrc_applied share of MuJoCo's qfrc_smooth."""
  m, mj = load_both(os.path.join(MODELS, "box_stack.xml"))
  md = random_state(m, mj, 1)
  md.xfrc_applied[1:] = np.random.default_rng(0).normal(size=(mj.nbody - 1, 6))
  mujoco.mj_forward(mj, md)
  d0 = to_jaxmj(m, md).replace(xfrc_applied=md.xfrc_applied.copy())
  d = jaxmj.fwd_acceleration(m, jaxmj.fwd_actuation(m, jaxmj.fwd_velocity(
    m, jaxmj.fwd_position(m, d0))))
  d = jaxmj.solve(m, d)
  want = jaxmj.forward(m, d0)
  for f in ("qacc", "qfrc_constraint", "efc_force"):
    np.testing.assert_allclose(getattr(d, f), getattr(want, f), rtol=1e-9, atol=1e-10, err_msg=f)
  np.testing.assert_allclose(d.qacc, md.qacc, rtol=1e-8, atol=1e-8)
  share = md.qfrc_smooth - (md.qfrc_passive - md.qfrc_bias + md.qfrc_applied
                            + md.qfrc_actuator)
  np.testing.assert_allclose(jaxmj.xfrc_accumulate(m, d), share, atol=1e-12)
  assert jaxmj.rne_postconstraint is jaxmj.rne_post_constraint
