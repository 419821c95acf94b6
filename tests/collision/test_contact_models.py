"""The contact models of models/ step like mj_step for 300 steps (float64).

humanoid_floor (a humanoid landing on the floor and toppling), quadruped (landing on
spring-held legs) and box_pile (boxes, spheres and capsules falling into a heap) use only
MuJoCo's native primitive colliders, which jaxmj reproduces to round-off, and the Newton
solver, so the trajectories agree far below the 1e-5 required: measured max qpos errors over
300 steps are 4e-16 (quadruped), 7e-15 (humanoid_floor) and 7e-14 (box_pile). TOL is the
requirement. Each compiles a 300-step rollout (~80 s of CPU on a 2-core machine), so all
three are slow tests; tests/collision/test_contact_step.py keeps a resting box stack and a
primitives drop in the default suite.
"""

import os

import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import load_both, rollout_error

TOL = 1e-5


def _trajectory_error(name, nstep, key=None):
  return rollout_error(*load_both(os.path.join(MODELS, f"{name}.xml")), nstep, key)


@pytest.mark.slow
def test_quadruped_lands_and_stands_like_mj_step():
  err, final, dm, ncon = _trajectory_error("quadruped", 300, key=0)
  assert err < TOL, f"max qpos error {err:.3g}"
  assert ncon[-1] == 4 and dm.qpos[2] > 0.4  # standing on its four feet
  assert not np.any(np.asarray(final.warning))


@pytest.mark.slow
def test_humanoid_falls_on_floor_like_mj_step():
  err, final, dm, ncon = _trajectory_error("humanoid_floor", 300)
  assert err < TOL, f"max qpos error {err:.3g}"
  assert max(ncon) >= 4


@pytest.mark.slow
def test_box_pile_settles_like_mj_step():
  err, final, dm, ncon = _trajectory_error("box_pile", 300)
  assert err < TOL, f"max qpos error {err:.3g}"
  assert ncon[-1] >= 15
