"""Tendons (smooth/tendon.py, smooth/wrap.py) against mujoco 4.0 at random states: lengths,
dense Jacobians, velocities, drawn path points, tendon passive forces, tendon friction and
limit efc rows, and a 500-step trajectory of models/tendon_arm.xml."""

import os

import jax
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from conftest import MODELS  # noqa: E402
from mujoco_compare import (  # noqa: E402
  assert_stage_matches,
  jit_fast,
  load_both,
  random_state,
  to_jaxmj,
)

import jaxmj  # noqa: E402
from jaxmj.constraint.driver import make_constraint  # noqa: E402
from jaxmj.constraint.layout import efc_layout  # noqa: E402
from jaxmj.smooth import com, kinematics, passive, tendon, wrap  # noqa: E402
from jaxmj.types import ConstraintType  # noqa: E402

TOL = 1e-9
# A side site inside the obstacle: mujoco 4.0 solves for the pass-through point less tightly
# than jaxmj (its points differ from the converged root by up to ~1e-7; lengths, stationary
# in that point, agree to 1e-13).
INSIDE_TOL = 1e-6
ARM = os.path.join(MODELS, "tendon_arm.xml")
MJX = os.path.join(os.path.dirname(mujoco.__file__), "mjx", "test_data", "tendon")
CASES = {  # tendon_arm is held in test_tendon_arm_matches_mujoco (one compile)
  "pulley_fixed_site_wrap": (os.path.join(MJX, "pulley_fixed_site_wrap.xml"), TOL),
  "wrap_sidesite": (os.path.join(MJX, "wrap_sidesite.xml"), INSIDE_TOL),
}


def stages(m, d):
  """Everything the tendon quantities depend on, then tendon passive forces."""
  d = com.com_pos(m, kinematics.kinematics(m, d))
  d = tendon.tendon(m, d)
  d = tendon.velocity(m, com.com_vel(m, d))
  return passive.passive(m, d)


def dense_ten_J(mj, d) -> np.ndarray:
  """MjData.ten_J is stored sparse in mujoco 4.0 (rows described on MjModel)."""
  out = np.zeros((mj.ntendon, mj.nv))
  for i in range(mj.ntendon):
    a = mj.ten_J_rowadr[i]
    for k in range(mj.ten_J_rownnz[i]):
      out[i, mj.ten_J_colind[a + k]] = d.ten_J[a + k]
  return out


def check_quantities(mj, d, dm, tol):
  """ten_length/J/velocity, path points and passive forces of `d` equal MjData `dm`'s."""
  np.testing.assert_allclose(d.ten_length, dm.ten_length, atol=TOL, rtol=0)
  np.testing.assert_allclose(d.ten_J, dense_ten_J(mj, dm), atol=tol, rtol=0)
  np.testing.assert_allclose(d.ten_velocity, dm.ten_velocity, atol=tol, rtol=0)
  np.testing.assert_array_equal(d.ten_wrapadr, dm.ten_wrapadr)
  np.testing.assert_array_equal(d.ten_wrapnum, dm.ten_wrapnum)
  n = int(dm.ten_wrapnum.sum())
  np.testing.assert_array_equal(np.asarray(d.wrap_obj).ravel()[:n], dm.wrap_obj.ravel()[:n])
  np.testing.assert_allclose(np.asarray(d.wrap_xpos).reshape(-1, 3)[:n],
                             dm.wrap_xpos.reshape(-1, 3)[:n], atol=tol, rtol=0)
  # random_state applies no spring-free configuration: these carry every tendon force
  np.testing.assert_allclose(d.qfrc_spring, dm.qfrc_spring, atol=tol, rtol=0)
  np.testing.assert_allclose(d.qfrc_damper, dm.qfrc_damper, atol=tol, rtol=0)
  np.testing.assert_allclose(d.qfrc_passive, dm.qfrc_passive, atol=tol, rtol=0)


@pytest.mark.parametrize("name", CASES)
def test_tendon_quantities_match_mujoco(name):
  path, tol = CASES[name]
  m, mj = load_both(path)
  assert_stage_matches((m, mj), stages, mujoco.mj_forward, [], seeds=range(4),
                       check=lambda d, dm, seed: check_quantities(mj, d, dm, tol))


def test_tendon_arm_matches_mujoco():
  """tendon_arm's tendon quantities (as above), and its tendon friction and limit rows
  (types, ids, J, pos, margin, R, D, aref) at states where limits engage; inactive jaxmj
  rows are exactly the ones MuJoCo does not build."""
  m, mj = load_both(ARM)
  mj.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE

  def rows(m, d):
    return make_constraint(m, stages(m, d))

  seen = set()

  def check(d, dm, seed):
    check_quantities(mj, d, dm, TOL)
    J = dm.efc_J.reshape(dm.nefc, mj.nv)
    ours_type, ours_id = np.asarray(d.efc_type), np.asarray(d.efc_id)
    for r in np.flatnonzero(np.isin(dm.efc_type, (ConstraintType.FRICTION_TENDON,
                                                   ConstraintType.LIMIT_TENDON))):
      (o,) = np.flatnonzero((ours_type == dm.efc_type[r]) & (ours_id == dm.efc_id[r]))
      seen.add(int(dm.efc_type[r]))
      assert bool(d.efc_active[o])
      np.testing.assert_allclose(d.efc_J[o], J[r], atol=TOL, rtol=0)
      for k in ("efc_pos", "efc_margin", "efc_frictionloss", "efc_vel"):
        np.testing.assert_allclose(getattr(d, k)[o], getattr(dm, k)[r], atol=TOL, rtol=0)
      for k in ("efc_diagA", "efc_R", "efc_D", "efc_aref"):
        np.testing.assert_allclose(getattr(d, k)[o], getattr(dm, k)[r], atol=0, rtol=TOL)
    for o in np.flatnonzero(ours_type == ConstraintType.LIMIT_TENDON):
      built = np.any((dm.efc_type == ConstraintType.LIMIT_TENDON) & (dm.efc_id == ours_id[o]))
      assert built == bool(d.efc_active[o])

  assert_stage_matches((m, mj), rows, mujoco.mj_forward, [], seeds=range(12), check=check)
  assert seen == {ConstraintType.FRICTION_TENDON, ConstraintType.LIMIT_TENDON}


def test_tendon_rows_follow_mujoco_order():
  """Friction: dofs then tendons; limits: joints then tendons (mj_makeConstraint)."""
  m = jaxmj.Model.from_xml_path(ARM)
  lay = efc_layout(m)
  order = [ConstraintType.FRICTION_DOF] * int(m.dof_hasfrictionloss.sum()) + [
    ConstraintType.FRICTION_TENDON] * 2 + [ConstraintType.LIMIT_JOINT] * 4 + [
    ConstraintType.LIMIT_TENDON] * 3
  assert lay.efc_type.tolist() == order
  assert lay.efc_id.tolist()[:2] == [0, 1]


SIDE_CASES = [  # (end0, end1, side): 2D cases around the unit-radius-0.3 circle
  ((-0.127, 0.433), (0.172, 0.284), (-0.6, -0.13)),  # misses, same winding: straight
  ((0.627, 1.195), (-1.007, 1.211), (-0.39, -0.08)),  # long way round, past the side
  ((0.0013, 0.0313), (0.12, -0.02), (0.0, -0.08)),  # cuts the circle: short way
]


@pytest.mark.parametrize("case", range(len(SIDE_CASES)))
def test_side_site_winding_matches_mujoco(case):
  """mujoco 4.0 wraps along the homotopy class of end0 -> side -> end1 (XMLreference
  spatial/geom sidesite); compared through a one-tendon model."""
  (x0, y0), (x1, y1), (sx, sy) = SIDE_CASES[case]
  xml = f"""<mujoco><worldbody><geom name="c" type="cylinder" size="0.03 1" contype="0"
    conaffinity="0"/><site name="side" pos="{sx / 10} {sy / 10} 0"/>
    <site name="a" pos="{x0 / 10} {y0 / 10} 0"/><site name="b" pos="{x1 / 10} {y1 / 10} 0"/>
    </worldbody><tendon><spatial><site site="a"/><geom geom="c" sidesite="side"/>
    <site site="b"/></spatial></tendon></mujoco>"""
  mj = mujoco.MjModel.from_xml_string(xml)
  dm = mujoco.MjData(mj)
  mujoco.mj_forward(mj, dm)
  wlen, t0, t1 = wrap.wrap(dm.site_xpos[1][None], dm.site_xpos[2][None], np.zeros((1, 3)),
                           np.eye(3)[None], np.array([0.03]), np.array([False]),
                           dm.site_xpos[0][None], np.array([True]), np)
  if dm.ten_wrapnum[0] == 2:
    assert wlen[0] < 0
  else:
    np.testing.assert_allclose(np.concatenate([t0[0], t1[0]]),
                               dm.wrap_xpos.reshape(-1, 3)[1:3].ravel(), atol=1e-12)


@pytest.mark.slow
def test_length_gradient_is_ten_J():
  """Reverse-mode d ten_length / d qpos is finite and equals ten_J (hinge joints only, so
  qpos and dofs coincide), through sphere, cylinder and inside (side site) wraps."""
  m, mj = load_both(CASES["wrap_sidesite"][0])

  def lengths(q, d):
    d = tendon.tendon(m, com.com_pos(m, kinematics.kinematics(m, d.replace(qpos=q))))
    return d.ten_length, d.ten_J

  jac = jit_fast(jax.jacrev(lambda q, d: lengths(q, d)[0]))
  for seed in range(3):
    dm = random_state(m, mj, seed)
    d = to_jaxmj(m, dm)
    np.testing.assert_allclose(jac(d.qpos, d), lengths(d.qpos, d)[1], atol=1e-12, rtol=0)


ZERO_LENGTH = """<mujoco><worldbody><site name="s0" pos=".1 .2 .3"/>
  <body><joint type="slide" axis="1 1 0"/><joint type="hinge" axis="0 0 1"/><geom size=".1"/>
    <site name="s1" pos=".1 .2 .3"/></body></worldbody>
  <tendon><spatial limited="true" range="0 .5" stiffness="10"><site site="s0"/><site site="s1"/>
  </spatial></tendon></mujoco>"""


def test_length_gradient_at_zero_length_is_ten_J():
  """A spatial tendon whose two sites meet (length 0, where |x1 - x0| has no derivative):
  length, ten_J as MuJoCo's (mju_normalize's first basis vector as the direction), and
  d ten_length / d qpos finite and equal to that ten_J (was NaN)."""
  m = jaxmj.Model.from_xml_string(ZERO_LENGTH)
  mj = mujoco.MjModel.from_xml_string(ZERO_LENGTH)
  dm = mujoco.MjData(mj)
  mujoco.mj_forward(mj, dm)

  def lengths(q, d):
    d = tendon.tendon(m, com.com_pos(m, kinematics.kinematics(m, d.replace(qpos=q))))
    return d.ten_length, d.ten_J

  d = jaxmj.make_data(m)
  length, ten_J = jit_fast(lengths)(d.qpos, d)
  np.testing.assert_array_equal(length, dm.ten_length)
  np.testing.assert_allclose(ten_J, dense_ten_J(mj, dm), atol=1e-15, rtol=0)
  jac = jit_fast(jax.jacrev(lambda q, d: lengths(q, d)[0]))(d.qpos, d)
  np.testing.assert_allclose(jac, dense_ten_J(mj, dm), atol=1e-15, rtol=0)
  fwd = jit_fast(jax.jacfwd(lambda q, d: lengths(q, d)[0]))(d.qpos, d)
  np.testing.assert_allclose(fwd, jac, atol=1e-15, rtol=0)


@pytest.mark.slow
def test_tendon_arm_trajectory_matches_mj_step():
  """500 Euler steps (tendon springs, dampers, friction loss, limits) within 1e-7."""
  m, mj = load_both(ARM)
  dm = mujoco.MjData(mj)
  dm.qvel[:] = np.random.default_rng(0).normal(size=mj.nv)
  d = to_jaxmj(m, dm)
  _, traj = jit_fast(lambda m, d: jaxmj.rollout(m, d, nstep=500, fields=("qpos", "qvel")))(
    m, d)
  qpos = []
  for _ in range(500):
    mujoco.mj_step(mj, dm)
    qpos.append(dm.qpos.copy())
  np.testing.assert_allclose(traj["qpos"], np.array(qpos), atol=1e-7, rtol=0)
