"""Simulations with contacts, joint limits and friction loss equal mj_step's (float64)."""

import os

import jax
import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import load_both, mujoco

import jaxmj

LIMITS_XML = """<mujoco><option timestep="0.005"><flag contact="disable"/></option><worldbody>
  <body><joint name="hinge" axis="0 1 0" range="-30 30" frictionloss=".5" damping=".1"/>
  <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
  <body pos=".5 0 0"><joint type="ball" range="0 40"/><joint type="slide" axis="1 0 0"
    range="-.1 .1" frictionloss=".2"/>
  <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/></body></body>
  </worldbody></mujoco>"""


def _compare(m, mj, dm, nstep, tol, every=1):
  d = jaxmj.make_data(m).replace(qpos=dm.qpos.copy(), qvel=dm.qvel.copy())
  final, traj = jax.jit(lambda m, d: jaxmj.rollout(m, d, nstep=nstep))(m, d)
  ref = []
  for _ in range(nstep):
    mujoco.mj_step(mj, dm)
    ref.append(dm.qpos.copy())
  err = np.abs(np.asarray(traj["qpos"]) - np.array(ref)).max()
  assert err < tol, f"max qpos error {err:.3g} over {nstep} steps"
  return final, dm


# Two of the four solver x cone pairs run by default; the other two with --runslow.
@pytest.mark.parametrize("solver,cone", [
  ("Newton", "pyramidal"), ("CG", "elliptic"),
  pytest.param("CG", "pyramidal", marks=pytest.mark.slow),
  pytest.param("Newton", "elliptic", marks=pytest.mark.slow)])
def test_drop_on_plane_matches_mj_step(solver, cone):
  with open(os.path.join(MODELS, "primitives_drop.xml")) as f:
    xml = f.read().replace('<option timestep="0.002"/>',
                           f'<option timestep="0.002" solver="{solver}" cone="{cone}"/>')
  m, mj = load_both(xml=xml)
  dm = mujoco.MjData(mj)
  # Newton converges in a few iterations and follows MuJoCo step for step. CG follows
  # MuJoCo 4.0's CG (Hager-Zhang directions, test_solver.py) iteration for iteration too:
  # measured 3.3e-8 (pyramidal) and 5e-12 (elliptic) over 300 steps, where both stop at
  # opt.tolerance on round-off-level differences.
  # With elliptic cones MuJoCo's Newton can stop one iteration before ours (its line search
  # cannot see the last decrease of a ~1e9 cost), a 1e-12-level difference per step that
  # grows to ~3e-7 (measured) over 300 steps.
  tol = {"Newton": 1e-8 if cone == "pyramidal" else 1e-6, "CG": 1e-6}[solver]
  final, dm = _compare(m, mj, dm, 300, tol)
  assert int(np.asarray(final.contact.active).sum()) == dm.ncon


def test_box_stack_rests_like_mujoco():
  m, mj = load_both(os.path.join(MODELS, "box_stack.xml"))
  _compare(m, mj, mujoco.MjData(mj), 300, 1e-8)


def test_limits_and_frictionloss_match_mj_step():
  m, mj = load_both(xml=LIMITS_XML)
  dm = mujoco.MjData(mj)
  dm.qvel[:] = [3.0, 2.0, -1.0, 4.0, 1.0]
  _compare(m, mj, dm, 400, 1e-8)


# tests/test_contact_grad.py checks contact gradients against finite differences in the
# default suite; this longer one runs with --runslow.
@pytest.mark.slow
def test_gradient_through_contacts_is_finite():
  m, _ = load_both(os.path.join(MODELS, "primitives_drop.xml"))
  d = jaxmj.make_data(m)

  def loss(qvel):
    final, _ = jaxmj.rollout(m, d.replace(qvel=qvel), nstep=30)
    return final.qpos.sum()

  g = jax.jit(jax.grad(loss))(d.qvel)
  assert np.all(np.isfinite(np.asarray(g)))
