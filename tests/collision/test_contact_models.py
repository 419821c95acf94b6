"""The contact models of models/ step like mj_step for 300 steps (float64).

humanoid_floor (a humanoid landing on the floor and toppling), quadruped (landing on
spring-held legs) and box_pile (boxes, spheres and capsules falling into a heap) use only
MuJoCo's native primitive colliders, which jaxmj reproduces to round-off, and the Newton
solver, so the trajectories agree far below the 1e-5 required: measured max qpos errors over
300 steps are 7e-15 (humanoid_floor) and 7e-14 (box_pile). curved_drop (cylinders and
ellipsoids on the floor and on each other) adds the convex collider's EPA path and multiccd
points (cylinder-cylinder, ellipsoid-cylinder, ellipsoid-ellipsoid): measured 7.5e-13.
The quadruped's four feet land in one step where MuJoCo itself is chaotic, so after landing
it is held step by step from MuJoCo's state. TOL is the requirement. Each compiles a 300-step
rollout (~80 s of CPU on a 2-core machine; curved_drop with the convex collider ~130 s under load),
so all four are slow tests; tests/collision/test_contact_step.py keeps a
resting box stack and a primitives drop in the default suite.
"""

import os

import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import load_both, mujoco, rollout_error

from jaxmj.conformance import single_step_error

TOL = 1e-5


def _trajectory_error(name, nstep, key=None):
  return rollout_error(*load_both(os.path.join(MODELS, f"{name}.xml")), nstep, key)


@pytest.mark.slow
def test_quadruped_lands_and_stands_like_mj_step():
  """Its four feet touch down in the same step (39), where MuJoCo itself is chaotic: a 1e-15
  nudge of its start moves its own trajectory by 4e-3. So the free trajectories must agree
  up to the landing, and from there every single step from MuJoCo's state."""
  m, mj = load_both(os.path.join(MODELS, "quadruped.xml"))
  err, final, dm, ncon = rollout_error(m, mj, 38, key=0)
  assert err < 1e-12, f"before landing: max qpos error {err:.3g}"
  worst, d = single_step_error(m, mj, dm, final, 262)
  assert worst < TOL, f"single steps from MuJoCo's state: max qpos/qvel error {worst:.3g}"
  assert dm.ncon == 4 and dm.qpos[2] > 0.4 and d.qpos[2] > 0.4  # standing on its four feet
  assert not np.any(np.asarray(d.warning))


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


@pytest.mark.slow
def test_cylinders_and_ellipsoids_drop_like_mj_step():
  m, mj = load_both(os.path.join(MODELS, "curved_drop.xml"))
  err, final, dm, ncon = rollout_error(m, mj, 300)
  assert err < TOL, f"max qpos error {err:.3g}"
  assert int(np.asarray(final.contact.active).sum()) == dm.ncon >= 5
  # every pair type the model is built for touched during the fall (MuJoCo's contacts)
  d = mujoco.MjData(mj)
  types = set()
  for _ in range(300):
    mujoco.mj_step(mj, d)
    types |= {tuple(sorted(mj.geom_type[c.geom])) for c in d.contact[:d.ncon]}
  G = mujoco.mjtGeom
  want = {(G.mjGEOM_PLANE, G.mjGEOM_CYLINDER), (G.mjGEOM_PLANE, G.mjGEOM_ELLIPSOID),
          (G.mjGEOM_CYLINDER, G.mjGEOM_CYLINDER), (G.mjGEOM_ELLIPSOID, G.mjGEOM_CYLINDER),
          (G.mjGEOM_ELLIPSOID, G.mjGEOM_ELLIPSOID)}
  assert {tuple(int(x) for x in t) for t in types} == {tuple(int(x) for x in t) for t in want}
