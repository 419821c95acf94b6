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
