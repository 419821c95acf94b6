"""mj_comPos's outputs (subtree_com, cinert, cdof) at random states: the example of README's
"Adding a test against MuJoCo"."""

import os

import pytest
from conftest import MODELS
from mujoco_compare import assert_stage_matches, mujoco

from jaxmj.smooth import com, kinematics


def test_com_pos_matches_mj_compos():
  assert_stage_matches(os.path.join(MODELS, "arm.xml"),
                       lambda m, d: com.com_pos(m, kinematics.kinematics(m, d)),
                       lambda mj, md: (mujoco.mj_kinematics(mj, md), mujoco.mj_comPos(mj, md)),
                       ["subtree_com", "cinert", "cdof"], seeds=range(3), tol=1e-12)


def test_inert_com_rounds_as_mju_inertcom():
  """Given MuJoCo's own frames and subtree coms, cinert is MuJoCo's to the bit (float64): the
  rotated inertia and the parallel-axis terms summed in mju_inertCom's order, no fused
  multiply-adds."""
  import jax
  import numpy as np

  from jaxmj import math

  mj = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "humanoid_floor.xml"))
  md = mujoco.MjData(mj)
  rng = np.random.default_rng(0)
  fn = jax.jit(lambda i, mat, off, mass, t: math.inert_com(i, mat, off, mass,
                                                           math.opaque_zero(t * t)))
  for _ in range(5):
    mujoco.mj_resetData(mj, md)
    md.qpos[:] = md.qpos + 0.5 * rng.normal(size=mj.nq)
    mujoco.mj_normalizeQuat(mj, md.qpos)
    mujoco.mj_forward(mj, md)
    offset = md.xipos - md.subtree_com[mj.body_rootid]
    cinert = fn(mj.body_inertia, md.ximat.reshape(-1, 3, 3), offset, mj.body_mass, 0.0)
    np.testing.assert_array_equal(np.asarray(cinert)[1:], md.cinert[1:])


@pytest.mark.parametrize("unroll", [True, False])
def test_com_pos_and_crb_are_mujocos_to_the_bit(unroll, monkeypatch):
  """From the same qpos, subtree_com (MuJoCo's backward accumulation, times the reciprocal
  subtree mass), cinert, cdof (mju_cross without fused multiply-adds) and qM (mj_crb's
  accumulation, mju_mulInertVec and mji_dot6 in their order) are MuJoCo's bit for bit
  (float64), with the subtree sums in straight-line code and in rounds of gathers."""
  import jax
  import numpy as np
  from mujoco_compare import full_m, load_both, random_state, to_jaxmj

  from jaxmj.smooth import mass

  if not unroll:
    monkeypatch.setattr(com, "SUBTREE_UNROLL_MAX", 0)
  m, mj = load_both(os.path.join(MODELS, "humanoid_floor.xml"))
  fn = jax.jit(lambda m, d: mass.crb(m, com.com_pos(m, kinematics.kinematics(m, d))))
  for seed in range(3):
    md = random_state(m, mj, seed)
    mujoco.mj_kinematics(mj, md)
    mujoco.mj_comPos(mj, md)
    mujoco.mj_crb(mj, md)
    d = fn(m, to_jaxmj(m, md))
    for name in ("subtree_com", "cinert", "cdof"):
      np.testing.assert_array_equal(np.asarray(getattr(d, name)), getattr(md, name), name)
    np.testing.assert_array_equal(np.asarray(d.qM), full_m(mj, md))


@pytest.mark.parametrize("unroll", [True, False])
@pytest.mark.parametrize("name", ["humanoid_floor.xml", "sensors.xml", "swimmer.xml",
                                  "box_stack.xml"])
def test_com_vel_and_rne_are_mujocos_to_the_bit(name, unroll, monkeypatch):
  """From the same state, cvel and cdof_dot (mj_comVel's forward pass over free, ball, hinge and
  slide dofs, mju_mulDofVec's sums, mji_crossMotion) and qfrc_bias (mj_rne's forward and
  backward passes, mju_mulInertVec, mji_crossForce, mji_dot6) are MuJoCo's bit for bit
  (float64), with the tree passes in straight-line code and in rounds of gathers."""
  import jax
  import numpy as np
  from mujoco_compare import load_both, random_state, to_jaxmj

  from jaxmj.smooth import rne

  if not unroll:
    monkeypatch.setattr(com, "SUBTREE_UNROLL_MAX", 0)
  m, mj = load_both(os.path.join(MODELS, name))
  fn = jax.jit(lambda m, d: rne.rne(m, com.com_vel(m, com.com_pos(m, kinematics.kinematics(m, d)))))
  for seed in range(2):
    md = random_state(m, mj, seed)
    mujoco.mj_forward(mj, md)
    d = fn(m, to_jaxmj(m, md))
    for field in ("cvel", "cdof_dot", "qfrc_bias"):
      np.testing.assert_array_equal(np.asarray(getattr(d, field)),
                                    getattr(md, field).reshape(getattr(d, field).shape), field)


@pytest.mark.parametrize("name", ["humanoid_floor.xml", "sensors.xml"])
def test_com_vel_and_rne_derivatives_equal_finite_differences(name):
  """The forward passes' derivatives (products with the tree's 0/1 matrices, at the ordered
  passes' values) against central differences along a direction in qpos, qvel and gravity."""
  import jax
  import jax.numpy as jnp
  import numpy as np
  from mujoco_compare import load_both, random_state, to_jaxmj

  import jaxmj
  from jaxmj.smooth import rne

  m, mj = load_both(os.path.join(MODELS, name))
  d = to_jaxmj(m, random_state(m, mj, 0))
  rng = np.random.default_rng(1)
  dq, dv, dg = (jnp.asarray(rng.normal(size=n)) for n in (m.nv, m.nv, 3))

  def outputs(s):
    mm = m.replace(opt=m.opt.replace(gravity=m.opt.gravity + s * dg))
    dd = d.replace(qpos=jaxmj.integrate_pos(m, d.qpos, dq, s), qvel=d.qvel + s * dv)
    dd = rne.rne(mm, com.com_vel(mm, com.com_pos(mm, kinematics.kinematics(mm, dd))))
    return jnp.concatenate([dd.cvel.ravel(), dd.cdof_dot.ravel(), dd.qfrc_bias])

  tangent = jax.jit(lambda: jax.jvp(outputs, (0.0,), (1.0,))[1])()
  eps = 1e-6
  fd = (jax.jit(outputs)(eps) - jax.jit(outputs)(-eps)) / (2 * eps)
  np.testing.assert_allclose(tangent, fd, atol=1e-8 * float(jnp.max(jnp.abs(fd))))
