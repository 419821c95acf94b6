"""Constraint islands (solver/island.py) and the per-island solve (solver/driver.py) against
MuJoCo 4.0, whose solver treats each island as its own problem (islands on by default): at
few iterations (what RL users run) that differs from one global solve, since every island
takes its own step sizes and stops on its own.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import full_m, mujoco, rollout_error

import jaxmj
from jaxmj.solver import driver as solver
from jaxmj.solver import island
from jaxmj.types import DisableBit, Solver

# two boxes on the floor (two islands), a pendulum pressed into its limit (one island), two
# free bodies joined by a connect equality (two trees, one island), a sphere in the air (none)
XML = """<mujoco>
  <option solver="{solver}" iterations="{iterations}" ls_iterations="{ls}" cone="{cone}">
    <flag island="{island}"/></option>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body pos="0 0 .098"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body pos="1 0 .097" euler="10 20 30"><freejoint/><geom type="box" size=".1 .08 .1"/></body>
    {extra}
  </worldbody>
  {equality}
</mujoco>"""
EXTRA = """
    <body pos="3 0 1"><joint type="hinge" axis="0 1 0" range="-.2 .2" frictionloss=".1"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.4" size=".04"/></body>
    <body pos="4 0 1"><freejoint/><geom type="sphere" size=".1"/></body>
    <body name="a" pos="0 3 1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body name="b" pos=".3 3 1"><freejoint/><geom type="sphere" size=".08"/></body>"""
EQUALITY = '<equality><connect body1="a" body2="b" anchor=".15 0 0"/></equality>'


def xml(solver_name="Newton", iterations=100, ls=50, cone="pyramidal", island_flag="enable",
        extra=True):
  return XML.format(solver=solver_name, iterations=iterations, ls=ls, cone=cone,
                    island=island_flag, extra=EXTRA if extra else "",
                    equality=EQUALITY if extra else "")


def state(mj):
  d = mujoco.MjData(mj)
  if mj.njnt > 2:
    d.qpos[mj.jnt_qposadr[2]] = 0.3  # the pendulum beyond its limit
  d.qvel[:] = 0.5 * np.random.default_rng(1).normal(size=mj.nv)
  return d


JIT = dict(compiler_options={"xla_backend_optimization_level": 0})


@pytest.fixture(scope="module")
def full():
  """jaxmj and MuJoCo after mj_forward on the full model, Newton at 2 iterations with truncated
  line searches (far from converged: each island's iterates are MuJoCo's), islands on."""
  text = xml("Newton", 2, 4)
  m, mj = jaxmj.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
  dm = state(mj)
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(dm.qpos), qvel=jnp.asarray(dm.qvel))
  mujoco.mj_forward(mj, dm)
  return m, mj, jax.jit(jaxmj.forward, **JIT)(m, d), dm


def test_islands_match_mujoco(full):
  """nisland, tree_island, dof_island and the per-island counts equal mj_island's (numbering
  too: by smallest tree); efc_island of the equality, friction and limit rows (same row order
  as MuJoCo's) too, and the contact rows' islands as a set. qacc (2 Newton iterations per
  island) and the per-island iteration counts are MuJoCo's. With islands disabled there are
  none, as in MuJoCo."""
  m, mj, d, dm = full
  ni = dm.nisland
  assert int(d.nisland) == ni == 4
  np.testing.assert_array_equal(d.tree_island, dm.tree_island)
  np.testing.assert_array_equal(d.dof_island, dm.dof_island)
  for name in ("island_ntree", "island_nv", "island_nefc", "island_ne", "island_nf"):
    np.testing.assert_array_equal(np.asarray(getattr(d, name))[:ni], getattr(dm, name), name)
    assert not np.any(np.asarray(getattr(d, name))[ni:])
  active = np.asarray(d.efc_active)
  ours = np.asarray(d.efc_island)[active]
  nfixed = dm.ne + dm.nf + dm.nl
  assert nfixed == 5
  np.testing.assert_array_equal(ours[:nfixed], dm.efc_island[:nfixed])
  np.testing.assert_array_equal(np.sort(ours[nfixed:]), np.sort(dm.efc_island[nfixed:]))
  assert np.all(np.asarray(d.efc_island)[~active] == -1)
  np.testing.assert_allclose(d.qacc, dm.qacc, atol=1e-8 * np.abs(dm.qacc).max())
  np.testing.assert_array_equal(d.solver_niter, dm.solver_niter[:len(d.solver_niter)])
  off = m.replace(opt=m.opt.replace(disableflags=m.opt.disableflags | DisableBit.ISLAND))
  d0 = jax.jit(island.island, **JIT)(off, d)
  assert int(d0.nisland) == 0
  assert np.all(np.asarray(d0.tree_island) == -1) and np.all(np.asarray(d0.efc_island) == -1)


def problem(d, qm):
  return dict(qM=qm, qacc_smooth=d.qacc_smooth, qfrc_smooth=qm @ d.qacc_smooth,
              qacc_warmstart=jnp.zeros_like(d.qacc_smooth), efc_J=d.efc_J, efc_D=d.efc_D,
              efc_R=d.efc_R, efc_aref=d.efc_aref, efc_frictionloss=d.efc_frictionloss,
              efc_type=d.efc_type, efc_active=d.efc_active, dof_island=d.dof_island,
              efc_island=d.efc_island)


def test_pgs_runs_per_island_and_converges_to_mujoco(full):
  """PGS per island (MuJoCo 4.0 runs PGS per island too), on jaxmj's rows and islands: each
  island counts its own sweeps (they differ), the empty slots none; run to convergence, qacc
  is MuJoCo's optimum (its iterates: test_pgs_few_iterations_matches_mj_step)."""
  m, mj, d, dm = full
  qm = jnp.asarray(full_m(mj, dm))
  res = jax.jit(lambda a: solver.solve_arrays(**a, solver=Solver.PGS, iterations=2000,
                                              tolerance=1e-14, nisland_max=4), **JIT)(
    problem(d, qm))
  niter = np.asarray(res.solver_niter)
  assert np.all(niter > 0) and len(set(niter.tolist())) > 1
  ref = mujoco.MjModel.from_xml_string(xml())
  dr = state(ref)
  mujoco.mj_forward(ref, dr)
  np.testing.assert_allclose(res.qacc, dr.qacc, atol=1e-6 * np.abs(dr.qacc).max())


def test_per_island_gradient_matches_finite_differences(full):
  """Reverse mode through the unrolled per-island iterations (implicit_grad=False) at
  iterations=2, on the full model's rows and islands: the derivative of qacc w.r.t.
  qacc_smooth equals central finite differences of the same truncated solve (line searches
  resolved tightly: their step's derivative is that of the line minimum)."""
  m, mj, d, dm = full
  qm = jnp.asarray(full_m(mj, dm))
  w = jnp.asarray(np.random.default_rng(3).normal(size=m.nv))

  @jax.jit
  def loss(qs):
    a = dict(problem(d, qm), qacc_smooth=qs, qfrc_smooth=qm @ qs)
    r = solver.solve_arrays(**a, iterations=2, tolerance=1e-12, implicit_grad=False,
                            nisland_max=4)
    return r.qacc @ w

  qs = d.qacc_smooth
  g = jax.grad(loss)(qs)
  assert np.all(np.isfinite(g))
  v = jnp.asarray(np.random.default_rng(4).normal(size=m.nv))
  fd = (loss(qs + 1e-6 * v) - loss(qs - 1e-6 * v)) / 2e-6
  np.testing.assert_allclose(float(g @ v), float(fd), rtol=1e-5)


def test_cg_runs_no_iteration_on_a_resting_island():
  """MuJoCo 4.0's CG skips an island whose scaled expected decrease 0.5 g'M^-1 g at the warm
  start is below tolerance: 14 steps into the two-box drop the second box rests, and from
  MuJoCo's state one jaxmj forward runs 2 iterations on the first island and none on the second,
  with MuJoCo's qacc (Newton runs one there)."""
  text = xml("CG", 2, 50, extra=False)
  m, mj = jaxmj.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
  dm = state(mj)
  dm.qvel[:] *= 0.1
  for _ in range(14):
    mujoco.mj_step(mj, dm)
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(dm.qpos), qvel=jnp.asarray(dm.qvel),
                                 qacc_warmstart=jnp.asarray(dm.qacc_warmstart))
  d = jax.jit(jaxmj.forward, **JIT)(m, d)
  mujoco.mj_forward(mj, dm)
  assert dm.nisland == 2
  np.testing.assert_array_equal(dm.solver_niter[:2], [2, 0])
  np.testing.assert_array_equal(d.solver_niter[:2], dm.solver_niter[:2])
  np.testing.assert_allclose(d.qacc, dm.qacc, atol=1e-8 * np.abs(dm.qacc).max())


def test_cg_start_test_also_without_islands():
  """The same CG start test in the monolithic solve (islands disabled): a damped sphere leaves
  the plane but stays within its margin (inactive rows), so from step 10 on MuJoCo runs no CG
  iteration although the warm start is slightly off qacc_smooth; each step from MuJoCo's
  state has MuJoCo's iteration count (without the test jaxmj runs one on steps 12, 14, 15) and
  qacc."""
  text = """<mujoco><option solver="CG"><flag island="disable"/></option><worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body pos="0 0 .5"><joint type="free" damping="1"/><geom type="sphere" size=".1" margin=".8"/>
    </body></worldbody></mujoco>"""
  m, mj = jaxmj.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
  dm = mujoco.MjData(mj)
  dm.qvel[:3] = [0.3, 0.1, 0]
  step = jax.jit(jaxmj.step, **JIT)
  ours, ref = [], []
  for _ in range(16):
    d = jaxmj.make_data(m).replace(qpos=jnp.asarray(dm.qpos), qvel=jnp.asarray(dm.qvel),
                                   qacc_warmstart=jnp.asarray(dm.qacc_warmstart))
    d = step(m, d)
    mujoco.mj_step(mj, dm)
    ours.append(int(d.solver_niter[0]))
    ref.append(int(dm.solver_niter[0]))
    np.testing.assert_allclose(d.qacc, dm.qacc, atol=1e-8 * np.abs(dm.qacc).max())
  assert ours == ref and ref[10:] == [0] * 6 and min(ref[:10]) > 0


def rollout_case(solver_name, iterations, ls):
  text = xml(solver_name, iterations, ls, extra=False)
  m, mj = jaxmj.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
  dm = state(mj)
  dm.qvel[:] *= 0.1
  err, final, dm, ncon = rollout_error(m, mj, 40, dm=dm)
  assert min(ncon) >= 4
  assert err < 1e-9, err
  assert int(final.nisland) == dm.nisland >= 1
  np.testing.assert_array_equal(final.solver_niter[:2], dm.solver_niter[:2])


@pytest.mark.slow
@pytest.mark.parametrize("solver_name,iterations,ls", [
  ("Newton", 1, 4), ("Newton", 3, 2), ("CG", 2, 50), ("CG", 3, 3)])
def test_two_islands_few_iterations_match_mj_step(solver_name, iterations, ls):
  """Two boxes dropped side by side (two islands) stepped at 1-3 iterations, with truncated
  line searches too: each island takes its own steps and stops on its own, as MuJoCo's (CG
  runs no iteration on the second box's island once it rests, from step ~14)."""
  rollout_case(solver_name, iterations, ls)


@pytest.mark.slow
def test_box_pile_one_iteration_matches_mj_step():
  """The box pile at iterations=1 (several islands while it settles): 7e-3 off with one global
  solve, MuJoCo's trajectory with per-island solves."""
  path = os.path.join(MODELS, "box_pile.xml")
  m, mj = jaxmj.Model.from_xml_path(path), mujoco.MjModel.from_xml_path(path)
  mj.opt.iterations = 1
  m = m.replace(opt=m.opt.replace(iterations=1))
  err, _, dm, _ = rollout_error(m, mj, 150)
  assert dm.nisland >= 1
  assert err < 1e-8, err


# a box resting on a box (box-box contacts: jaxmj's slots list them before the plane's,
# MuJoCo's contact order after) and a sphere apart: two islands
PGS_XML = """<mujoco><option solver="PGS" iterations="{iterations}" cone="{cone}"/><worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body pos="0 0 .103"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body pos=".02 .01 .31" euler="0 0 20"><freejoint/><geom type="box" size=".08 .07 .09"/></body>
    <body pos="1 0 .102"><freejoint/><geom type="sphere" size=".1"/></body>
  </worldbody></mujoco>"""


@pytest.mark.parametrize("cone,iterations,nstep", [
  ("pyramidal", 3, 100), pytest.param("elliptic", 1, 200, marks=pytest.mark.slow),
  pytest.param("elliptic", 2, 200, marks=pytest.mark.slow)])
def test_pgs_few_iterations_matches_mj_step(cone, iterations, nstep):
  """PGS at 1-3 sweeps stepped from rest: MuJoCo 4.0's shuffled, extrapolated sweeps per
  island, over each island's rows in MuJoCo's contact order (not jaxmj's slot order), give
  MuJoCo's trajectory (1e-8) and per-island sweep counts."""
  text = PGS_XML.format(iterations=iterations, cone=cone)
  m, mj = jaxmj.Model.from_xml_string(text), mujoco.MjModel.from_xml_string(text)
  err, final, dm, ncon = rollout_error(m, mj, nstep)
  assert max(ncon) == 11 and dm.nisland == 2
  assert err < 1e-8, err
  np.testing.assert_array_equal(final.solver_niter[:2], dm.solver_niter[:2])


@pytest.mark.slow
@pytest.mark.parametrize("cone,iterations,nstep", [("pyramidal", 3, 150), ("elliptic", 2, 300)])
def test_box_pile_pgs_matches_mj_step(cone, iterations, nstep):
  """The box pile under PGS at 2-3 sweeps: MuJoCo's trajectory (several islands, up to 23
  contacts in MuJoCo's order)."""
  path = os.path.join(MODELS, "box_pile.xml")
  m, mj = jaxmj.Model.from_xml_path(path), mujoco.MjModel.from_xml_path(path)
  mj.opt.solver, mj.opt.iterations = mujoco.mjtSolver.mjSOL_PGS, iterations
  mj.opt.cone = mujoco.mjtCone.mjCONE_ELLIPTIC if cone == "elliptic" else mj.opt.cone
  m = m.replace(opt=m.opt.replace(solver=Solver.PGS, iterations=iterations, cone=mj.opt.cone))
  err, _, dm, _ = rollout_error(m, mj, nstep)
  assert err < 1e-8, err


@pytest.mark.slow
def test_gradient_through_step_with_islands():
  """jax.grad through jaxmj.step of the two-box model at iterations=2 (implicit derivative of
  each island's optimum) is finite and nonzero."""
  text = xml("Newton", 2, 50, extra=False)
  m = jaxmj.Model.from_xml_string(text)
  dm = state(mujoco.MjModel.from_xml_string(text))
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(dm.qpos), qvel=jnp.asarray(dm.qvel))

  def loss(qvel):
    return jnp.sum(jaxmj.step(m, d.replace(qvel=qvel)).qvel ** 2)

  g = jax.jit(jax.grad(loss), **JIT)(d.qvel)
  assert np.all(np.isfinite(g)) and np.any(g != 0)
