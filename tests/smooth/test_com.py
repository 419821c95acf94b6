"""mj_comPos's outputs (subtree_com, cinert, cdof) at random states: the example of README's
"Adding a test against MuJoCo"."""

import os

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
