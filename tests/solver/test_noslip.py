"""The noslip post-processing solver (jaxmj/solver/noslip.py) against mujoco 4.0.0's mj_solNoSlip.

Scene: a box resting on a plane under tilted gravity (4 contacts) and a sphere on two slide
joints, one with friction loss: two islands, friction-loss rows, pyramidal or elliptic
contacts. `test_noslip_sweeps_match_mujoco` starts jaxmj's noslip from MuJoCo's main-solver
forces, so it holds the noslip sweeps alone (whatever the main solver does); the step and
trajectory tests hold the whole pipeline.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jaxmj
from jaxmj.solver import noslip

mujoco = pytest.importorskip("mujoco")

XML = """<mujoco><option gravity="2 1 -9.81" cone="{cone}" noslip_iterations="{n}"
  noslip_tolerance="{tol}">{flag}</option>
<worldbody><geom type="plane" size="5 5 .1"/>
<body pos="0 0 .099"><freejoint/>
  <geom type="box" size=".1 .1 .1" condim="{condim}" friction=".5 .01 .001"/></body>
<body pos=".5 0 .1"><joint type="slide" axis="1 0 0" frictionloss=".3"/>
  <joint type="slide" axis="0 0 1"/><geom type="sphere" size=".1" condim="{condim}"/></body>
</worldbody></mujoco>"""
QVEL = [0.05, 0.03, -0.01, 0.02, 0.01, 0.1, 0.04, -0.02]
_fast = dict(compiler_options={"xla_backend_optimization_level": 0})
_forward = jax.jit(jaxmj.forward, **_fast)
_noslip = jax.jit(noslip.noslip, **_fast)


def _mujoco(cone, condim, n, tol=1e-6, flag=""):
  xml = XML.format(cone=cone, condim=condim, n=n, tol=tol, flag=flag)
  mj = mujoco.MjModel.from_xml_string(xml)
  dm = mujoco.MjData(mj)
  dm.qvel[:] = QVEL
  mujoco.mj_forward(mj, dm)
  return xml, mj, dm


def _stats(dm):
  ni = max(1, dm.nisland)
  niter = dm.solver_niter[:ni]
  return niter, np.array([dm.solver[i * mujoco.mjNSOLVER + niter[i] - 1].improvement
                          for i in range(ni)])


def _check_sweeps(cone, condim, n, flag=""):
  """jaxmj's noslip from MuJoCo's main-solver forces equals MuJoCo's noslip result."""
  tol = 1e-6 if n < 10 else 1e-13
  _, _, d0 = _mujoco(cone, condim, 0, flag=flag)
  xml, _, dm = _mujoco(cone, condim, n, tol, flag)
  m = jaxmj.Model.from_xml_string(xml)
  d = jaxmj.make_data(m).replace(qpos=dm.qpos.copy(), qvel=dm.qvel.copy())
  d = _forward(m.replace(opt=m.opt.replace(noslip_iterations=0)), d)
  act = np.asarray(d.efc_active)
  assert act.sum() == dm.nefc
  f = np.zeros(len(act))
  f[act] = d0.efc_force
  niter0, _ = _stats(d0)
  niter = np.zeros_like(np.asarray(d.solver_niter))
  niter[:len(niter0)] = niter0
  d = _noslip(m, d.replace(efc_force=f, solver_niter=niter))
  assert np.abs(d0.efc_force - dm.efc_force).max() > 1e-3  # noslip changes the forces
  np.testing.assert_allclose(np.asarray(d.efc_force)[act], dm.efc_force, rtol=0, atol=1e-10)
  np.testing.assert_allclose(d.qacc, dm.qacc, rtol=0, atol=1e-10)
  np.testing.assert_allclose(d.qfrc_constraint, dm.qfrc_constraint, rtol=0, atol=1e-10)
  ref_niter, ref_imp = _stats(dm)
  np.testing.assert_array_equal(np.asarray(d.solver_niter)[:len(ref_niter)], ref_niter)
  np.testing.assert_allclose(np.asarray(d.solver_improvement)[:len(ref_imp)], ref_imp,
                             rtol=1e-6, atol=1e-12)
  # an elliptic cone that noslip leaves on the dual cone's surface (forces put on the ellipsoid)
  # is in the top or middle zone by roundoff: states are compared on the other rows
  rows = dm.efc_type != mujoco.mjtConstraint.mjCNSTR_CONTACT_ELLIPTIC
  np.testing.assert_array_equal(np.asarray(d.efc_state)[act][rows], dm.efc_state[rows])


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("n", [1, 2, 3, 30])
def test_noslip_sweeps_match_mujoco(cone, n):
  """Sweeps 1..3 and a converged run (30 sweeps, tolerance 1e-13: per-island early stop),
  condim 3 with a friction-loss row: forces, qacc, per-island iteration counts and last
  improvement (scaled by the island's inertia) are MuJoCo's."""
  _check_sweeps(cone, 3, n)


@pytest.mark.slow
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
@pytest.mark.parametrize("condim", [4, 6])
@pytest.mark.parametrize("n", [1, 3, 30])
def test_noslip_sweeps_match_mujoco_condim(cone, condim, n):
  _check_sweeps(cone, condim, n)


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 30])
def test_noslip_without_islands_matches_mujoco(n):
  """<flag island="disable">: one problem, scaled by the trace of the whole inertia."""
  _check_sweeps("pyramidal", 3, n, flag='<flag island="disable"/>')


STACK = """<mujoco><option gravity="1 .5 -9.81" noslip_iterations="3"/>
<worldbody><geom type="plane" size="5 5 .1"/>
<body pos="0 0 .1"><freejoint/><geom type="box" size=".2 .2 .1" friction=".6"/></body>
<body pos=".05 0 .3"><freejoint/><geom type="box" size=".1 .1 .1" friction=".6"/></body>
</worldbody></mujoco>"""


@pytest.mark.parametrize("solver, cone", [
  ("Newton", "pyramidal"), pytest.param("PGS", "pyramidal", marks=pytest.mark.slow),
  pytest.param("CG", "pyramidal", marks=pytest.mark.slow),
  pytest.param("Newton", "elliptic", marks=pytest.mark.slow)])
def test_step_with_noslip_matches_mj_step(solver, cone):
  """The whole pipeline: 100 steps of a sliding stack of boxes with noslip after each main
  solver stay within 1e-8 of mj_step's (measured 1e-15 with Newton, both cones); noslip
  moves the boxes by ~1e-4 over the run."""
  xml = STACK.replace('noslip_iterations="3"',
                      f'noslip_iterations="3" solver="{solver}" cone="{cone}"')
  m = jaxmj.Model.from_xml_string(xml)
  mj = mujoco.MjModel.from_xml_string(xml)
  dm = mujoco.MjData(mj)
  dm.qvel[0] = 1.0
  d = jaxmj.make_data(m).replace(qvel=dm.qvel.copy())
  run = jax.jit(lambda m, d: jaxmj.rollout(m, d, nstep=100), **_fast)
  _, traj = run(m, d)
  ref = []
  for _ in range(100):
    mujoco.mj_step(mj, dm)
    ref.append(dm.qpos.copy())
  assert np.abs(np.asarray(traj["qpos"]) - np.array(ref)).max() < 1e-8


@pytest.mark.slow
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_forward_gradient_with_noslip_matches_finite_differences(cone):
  """d qacc / d qvel through forward with noslip (grad="unrolled": reverse mode through the
  sweeps and the main solver's iterations; the contact set does not depend on qvel): finite
  and equal to central differences, evaluated as one vmapped batch whose unperturbed world
  equals the unbatched forward.

  The main solver runs to convergence: its implicit derivative is the optimum's, and under
  the default tolerance (1e-8) the elliptic Newton solve stops far enough from the optimum
  that the noslip sweeps, which start from its forces, carry the difference (3e-3 relative)."""
  xml = XML.format(cone=cone, condim=3, n=3, tol=1e-6, flag="")
  m = jaxmj.Model.from_xml_string(xml)
  m = m.replace(opt=m.opt.replace(tolerance=1e-15, iterations=100, grad="unrolled"))
  d = jaxmj.make_data(m)

  def qacc_fn(qvel):
    return jaxmj.forward(m, d.replace(qvel=qvel)).qacc

  v = np.asarray(QVEL)
  qacc, jac = jax.jit(lambda v: (qacc_fn(v), jax.jacrev(qacc_fn)(v)), **_fast)(v)
  assert np.all(np.isfinite(jac))
  eps = 1e-6
  vs = np.concatenate([v[None], v + eps * np.eye(len(v)), v - eps * np.eye(len(v))])
  batched = np.asarray(jax.jit(jax.vmap(qacc_fn), **_fast)(vs))
  np.testing.assert_allclose(batched[0], qacc, rtol=0, atol=1e-12)
  fd = (batched[1:len(v) + 1] - batched[len(v) + 1:]).T / (2 * eps)
  np.testing.assert_allclose(jac, fd, rtol=1e-4, atol=1e-4 * np.abs(fd).max())


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_unrolled_noslip_gradient_matches_finite_differences(cone):
  """d (efc_force, qacc) / d qacc_smooth through the 3 noslip sweeps alone as run
  (grad="unrolled"; the rows fixed): finite and equal to central differences."""
  xml = XML.format(cone=cone, condim=3, n=3, tol=1e-6, flag="")
  m = jaxmj.Model.from_xml_string(xml)
  m = m.replace(opt=m.opt.replace(grad="unrolled"))
  main = m.replace(opt=m.opt.replace(noslip_iterations=0))  # compiled by the sweep tests
  d = _forward(main, jaxmj.make_data(m).replace(qvel=np.asarray(QVEL)))

  def out(acc):
    e = noslip.noslip(m, d.replace(qacc_smooth=acc))
    return jax.numpy.concatenate([e.efc_force, e.qacc])

  a = np.asarray(d.qacc_smooth)
  _assert_jacobian_matches_central_differences(out, a)


def _assert_jacobian_matches_central_differences(out, a, eps=1e-6):
  """jacrev of `out` at `a` (one compile with the 2n shifted evaluations) is finite and equals
  central differences to 1e-5."""
  xs = np.concatenate([a + eps * np.eye(len(a)), a - eps * np.eye(len(a))])
  jac, batched = jax.jit(lambda a, xs: (jax.jacrev(out)(a), jax.vmap(out)(xs)), **_fast)(a, xs)
  assert np.all(np.isfinite(jac))
  fd = (np.asarray(batched[:len(a)]) - np.asarray(batched[len(a):])).T / (2 * eps)
  np.testing.assert_allclose(jac, fd, rtol=1e-5, atol=1e-5 * np.abs(fd).max())


def _noslip_alone(cone, n, tol, grad="implicit"):
  """The noslip pass as a function of qacc_smooth (the main solver's result and rows fixed)."""
  m = jaxmj.Model.from_xml_string(XML.format(cone=cone, condim=3, n=n, tol=tol, flag=""))
  m = m.replace(opt=m.opt.replace(grad=grad))
  main = jaxmj.Model.from_xml_string(XML.format(cone=cone, condim=3, n=0, tol=1e-6, flag=""))
  d = _forward(main, jaxmj.make_data(m).replace(qvel=np.asarray(QVEL)))  # as the sweep tests
  return (lambda acc: noslip.noslip(m, d.replace(qacc_smooth=acc)).qacc), np.asarray(
    d.qacc_smooth)


@pytest.mark.parametrize("cone", ["pyramidal", pytest.param("elliptic", marks=pytest.mark.slow)])
def test_implicit_noslip_gradient_matches_finite_differences(cone):
  """grad="implicit" (default): d qacc / d qacc_smooth at converged sweeps (200 at tolerance
  1e-15) is the derivative of their fixed point: equal to central differences. The box's
  four corner contacts make the friction forces non-unique (the minimum-norm derivative);
  qacc, which they move through J', is unique."""
  out, a = _noslip_alone(cone, 200, 1e-15)
  _assert_jacobian_matches_central_differences(out, a)


def test_implicit_noslip_gradient_memory_is_independent_of_iterations():
  """Reverse mode stores one sweep's residuals, not every sweep's: the compiled gradient's
  temporaries are the same at 5 and 50 noslip iterations (grad="unrolled" stores each)."""
  def temp_bytes(n):
    out, a = _noslip_alone("pyramidal", n, 0.0)
    loss = jax.grad(lambda acc: jax.numpy.sum(out(acc) ** 2))
    return jax.jit(loss, **_fast).lower(a).compile().memory_analysis().temp_size_in_bytes

  assert temp_bytes(5) == temp_bytes(50)
