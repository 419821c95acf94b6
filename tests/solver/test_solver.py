"""Constraint solvers (jaxmj.solver) against MuJoCo, on MuJoCo's own constraint rows.

MuJoCo builds the rows (mj_forward with a dense Jacobian, islands off so that its solver is the
monolithic one we mirror); jaxmj solves them. Newton, CG and PGS follow MuJoCo iteration for
iteration, Newton and CG also with truncated line searches (small ls_iterations); PGS run to
convergence reaches MuJoCo's optimum (the constrained problem has a unique solution). A few
inactive garbage rows (and an inactive elliptic contact) are appended to every problem:
efc_active False must make them absent.
"""

import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import jaxmj  # noqa: E402
from jaxmj.smooth import mass  # noqa: E402
from jaxmj.solver import driver as solver  # noqa: E402
from jaxmj.types import ConstraintState, ConstraintType, Contact, Solver  # noqa: E402

XML = """<mujoco>
  <option impratio="{impratio}" cone="{cone}" jacobian="dense"><flag island="disable"/></option>
  <worldbody>
    <geom type="plane" size="5 5 .1" condim="1"/>
    <body pos="0 0 .095"><freejoint/><geom type="sphere" size=".1" condim="{c0}"/></body>
    <body pos=".5 0 .098" euler="0 0 20"><freejoint/>
      <geom type="box" size=".1 .08 .1" condim="{c1}"/></body>
    <body pos="1 0 .09"><freejoint/>
      <geom type="capsule" size=".05 .1" euler="0 90 0" condim="{c2}" friction=".7 .01 .002"/>
    </body>
    <body pos="0 1 1">
      <joint name="h1" type="hinge" axis="0 1 0" range="-.2 .2" frictionloss=".3"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.4" size=".04"/>
      <body pos="0 0 -.4">
        <joint name="h2" type="hinge" axis="1 0 0" range="-.1 .3" frictionloss="2"/>
        <joint name="s1" type="slide" axis="0 0 1" range="-.05 .05"/>
        <geom type="sphere" size=".06"/>
      </body>
    </body>
    {eq_bodies}
  </worldbody>
  {eq}
</mujoco>"""
EQ_BODIES = """
    <body name="a" pos="0 2 1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body name="b" pos=".3 2 1"><freejoint/><geom type="sphere" size=".08"/></body>
    <body name="c" pos="0 2.5 1"><joint type="ball"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/></body>"""
EQ = """<equality>
    <connect body1="a" body2="b" anchor=".15 0 0"/>
    <weld body1="c" relpose="0 0 0 1 0 0 0"/>
  </equality>"""

# pyramidal: condim 1 (frictionless), 6 and 4, impratio 3; elliptic: condim 6, 3, 4, impratio 5.
# Both: connect + weld equalities, two dof friction losses, three violated joint limits.
CASES = {
  "pyramidal": dict(cone="pyramidal", impratio=3, c0=1, c1=6, c2=4),
  "elliptic": dict(cone="elliptic", impratio=5, c0=6, c1=3, c2=4),
}
SOLVERS = {"PGS": Solver.PGS, "CG": Solver.CG, "Newton": Solver.NEWTON}


def xml(case: str, equality: bool = True) -> str:
  return XML.format(**CASES[case], eq_bodies=EQ_BODIES if equality else "",
                    eq=EQ if equality else "")


def mj_solve(case, solver_name="Newton", iterations=100, tolerance=1e-8, equality=True,
             ls_iterations=50):
  """MjModel and MjData after mj_forward, with violated limits and random velocities."""
  m = mujoco.MjModel.from_xml_string(xml(case, equality))
  m.opt.solver = int(SOLVERS[solver_name])
  m.opt.iterations = iterations
  m.opt.ls_iterations = ls_iterations
  m.opt.tolerance = tolerance
  d = mujoco.MjData(m)
  for name, value in (("h1", 0.3), ("h2", -0.2), ("s1", 0.08)):
    d.qpos[m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)]] = value
  d.qvel[:] = 0.5 * np.random.default_rng(1).normal(size=m.nv)
  d.qacc_warmstart[:] = 0.0  # what mj_forward warm-starts from
  mujoco.mj_forward(m, d)
  return m, d


def problem(m, d, pad: int = 3):
  """solve_arrays' inputs from MuJoCo's rows, plus `pad` inactive garbage rows at the end
  (and, for elliptic cones, an inactive 3-row contact)."""
  nv, nefc = m.nv, d.nefc
  qm = np.zeros((nv, nv))
  mujoco.mj_fullM(m, d, qm)
  rng = np.random.default_rng(7)
  elliptic = m.opt.cone == mujoco.mjtCone.mjCONE_ELLIPTIC
  npad = pad + (3 if elliptic else 0)
  junk = lambda *s: rng.normal(size=s)  # noqa: E731
  efc_type = np.concatenate([d.efc_type, rng.integers(0, 7, pad),
                             np.full(npad - pad, ConstraintType.CONTACT_ELLIPTIC)])
  arrays = dict(
    qM=qm, qacc_smooth=d.qacc_smooth.copy(), qfrc_smooth=d.qfrc_smooth.copy(),
    qacc_warmstart=np.zeros(nv),
    efc_J=np.concatenate([np.asarray(d.efc_J).reshape(nefc, nv), junk(npad, nv)]),
    efc_D=np.concatenate([d.efc_D, np.abs(junk(npad)) * 1e3]),
    efc_R=np.concatenate([d.efc_R, np.abs(junk(npad))]),
    efc_aref=np.concatenate([d.efc_aref, junk(npad) * 1e2]),
    efc_frictionloss=np.concatenate([d.efc_frictionloss, np.abs(junk(npad))]),
    efc_type=efc_type.astype(np.int32),
    efc_active=np.arange(nefc + npad) < nefc,
  )
  arrays = {k: jnp.asarray(v) for k, v in arrays.items()}
  cones, fric, mu = None, None, None
  if elliptic:
    dim = np.array([c.dim for c in d.contact] + [3])
    adr = np.array([c.efc_address for c in d.contact] + [nefc + pad])
    sel = dim > 1
    cones = solver.cone_layout(adr[sel], dim[sel])
    fric = jnp.asarray(np.concatenate([d.contact.friction, [[1, 1, 0.1, 0.1, 0.1]]])[sel])
    mu = jnp.asarray(np.concatenate([d.contact.mu, [0.5]])[sel])
  opts = dict(iterations=m.opt.iterations, ls_iterations=m.opt.ls_iterations,
              tolerance=m.opt.tolerance, ls_tolerance=m.opt.ls_tolerance)
  return arrays, (cones, fric, mu), opts


def run(arrays, cone_args, solver_kind, **opts):
  cones, fric, mu = cone_args
  f = jax.jit(lambda a, fr, mu: solver.solve_arrays(
    **a, cones=cones, cone_friction=fr, cone_mu=mu, solver=solver_kind, **opts))
  return f(arrays, fric, mu)


def assert_close(ours, ref, rtol, what):
  """Agreement relative to the array's largest entry (MuJoCo's own stopping point is only
  accurate to roundoff of its cost, ~1e-9 of the largest acceleration here)."""
  ours, ref = np.asarray(ours), np.asarray(ref)
  err = np.max(np.abs(ours - ref), initial=0.0)
  bound = rtol * max(1.0, np.max(np.abs(ref), initial=0.0))
  assert err <= bound, f"{what}: max error {err:.3g} > {bound:.3g}"


@pytest.mark.parametrize("case", ["pyramidal", "elliptic"])
def test_newton_matches_mujoco(case):
  """Newton with MuJoCo's options: same solution, states and iteration count.

  Both cones iterate-for-iterate (1e-10; the elliptic case stops on the expected decrease
  0.5 g'H^-1 g, not on improvement or gradient). Pyramidal runs under vmap over two worlds, the
  second with every row inactive (it must return qacc_smooth).
  """
  m, d = mj_solve(case)
  arrays, cone_args, opts = problem(m, d)
  if case == "pyramidal":
    batch = jax.tree.map(lambda x: jnp.stack([x, x]), arrays)
    batch["efc_active"] = batch["efc_active"].at[1].set(False)
    f = jax.jit(jax.vmap(lambda a: solver.solve_arrays(**a, solver=Solver.NEWTON, **opts)))
    both = f(batch)
    res = jax.tree.map(lambda x: x[0], both)
    np.testing.assert_array_equal(both.qacc[1], arrays["qacc_smooth"])
    np.testing.assert_array_equal(both.efc_force[1], 0.0)
    assert int(both.solver_niter[1, 0]) == 0
  else:
    res = run(arrays, cone_args, Solver.NEWTON, **opts)
  n = d.nefc
  rtol = 1e-10
  assert_close(res.qacc, d.qacc, rtol, "qacc")
  assert_close(res.efc_force[:n], d.efc_force, rtol, "efc_force")
  assert_close(res.qfrc_constraint, d.qfrc_constraint, rtol, "qfrc_constraint")
  np.testing.assert_array_equal(res.efc_state[:n], d.efc_state)
  assert int(res.solver_niter[0]) == int(d.solver_niter[0])
  last = int(d.solver_niter[0]) - 1  # the last iteration's statistics (mjSolverStat)
  np.testing.assert_allclose(res.solver_improvement[0], d.solver.improvement[last], rtol=1e-9)
  np.testing.assert_allclose(res.solver_gradient[0], d.solver.gradient[last], rtol=1e-4,
                             atol=1e-12)
  # inactive rows are absent
  np.testing.assert_array_equal(res.efc_force[n:], 0.0)
  np.testing.assert_array_equal(res.efc_state[n:], ConstraintState.SATISFIED)
  kinds = set(np.asarray(d.efc_type[:n]).tolist())
  want = {ConstraintType.EQUALITY, ConstraintType.FRICTION_DOF, ConstraintType.LIMIT_JOINT}
  want |= ({ConstraintType.CONTACT_FRICTIONLESS, ConstraintType.CONTACT_PYRAMIDAL}
           if case == "pyramidal" else {ConstraintType.CONTACT_ELLIPTIC})
  assert want <= kinds, f"model lost a constraint kind: {kinds}"
  assert len(set(np.asarray(res.efc_state[:n]).tolist())) >= 3


@pytest.mark.parametrize("case,solver_name,iterations,ls_iterations", [
  ("pyramidal", "Newton", 3, 1), ("elliptic", "Newton", 4, 2),
  ("pyramidal", "CG", 100, 3), ("elliptic", "CG", 100, 4)])
def test_truncated_line_search_matches_mujoco(case, solver_name, iterations, ls_iterations):
  """Few line-search evaluations (MJX's test humanoids use ls_iterations=4): MuJoCo 4.0 keeps
  the first Newton step even when it raises the cost and returns the last Newton point when the
  budget runs out; CG's Hager-Zhang directions then differ from Polak-Ribiere's. Iterates,
  iteration count and the last iteration's statistics (improvement = the line search's shifted
  cost decrease, gradient; both scaled by 1 / trace(qM)) equal MuJoCo's."""
  m, d = mj_solve(case, solver_name, iterations=iterations, ls_iterations=ls_iterations)
  arrays, cone_args, opts = problem(m, d)
  res = run(arrays, cone_args, SOLVERS[solver_name], **opts)
  n, niter = d.nefc, int(d.solver_niter[0])
  assert_close(res.qacc, d.qacc, 1e-10, "qacc")
  assert_close(res.efc_force[:n], d.efc_force, 1e-10, "efc_force")
  np.testing.assert_array_equal(res.efc_state[:n], d.efc_state)
  assert int(res.solver_niter[0]) == niter
  if solver_name == "CG":
    assert 10 < niter < iterations  # converged, through many truncated searches
  # atol: roundoff at convergence; the gradient is a residual, after ~30 CG iterations it
  # carries their roundoff (1e-7 relative where the iterates agree to 1e-12)
  np.testing.assert_allclose(res.solver_improvement[0], d.solver.improvement[niter - 1], rtol=1e-9,
                             atol=1e-13)
  np.testing.assert_allclose(res.solver_gradient[0], d.solver.gradient[niter - 1],
                             rtol=1e-9 if solver_name == "Newton" else 1e-6, atol=1e-13)


@pytest.mark.parametrize("case,iterations", [
  ("pyramidal", 3), ("elliptic", 12),
  pytest.param("pyramidal", 1, marks=pytest.mark.slow),
  pytest.param("elliptic", 2, marks=pytest.mark.slow),
  pytest.param("pyramidal", 40, marks=pytest.mark.slow)])
def test_pgs_matches_mujoco_sweep_for_sweep(case, iterations):
  """MuJoCo 4.0's PGS (PCG32-shuffled block order every sweep, Nesterov extrapolation from the
  third sweep, adaptive restarts: the elliptic case restarts on its way to stopping on the
  tolerance after 10 sweeps, and fails without them) at few sweeps: forces, qacc, dual states,
  sweep count and the last sweep's improvement are MuJoCo's (the inactive rows appended to the
  problem take no part in the order)."""
  m, d = mj_solve(case, "PGS", iterations=iterations)
  arrays, cone_args, opts = problem(m, d)
  res = run(arrays, cone_args, Solver.PGS, **opts)
  n, niter = d.nefc, int(d.solver_niter[0])
  assert niter <= iterations
  assert_close(res.efc_force[:n], d.efc_force, 1e-10, "efc_force")
  assert_close(res.qacc, d.qacc, 1e-10, "qacc")
  np.testing.assert_array_equal(res.efc_state[:n], d.efc_state)
  assert int(res.solver_niter[0]) == niter
  np.testing.assert_allclose(res.solver_improvement[0], d.solver.improvement[niter - 1],
                             rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("case", ["pyramidal", "elliptic"])
def test_pgs_long_runs_match_mujoco(case):
  """1000 PGS sweeps (tolerance < 0: never stop early) are MuJoCo's 1000 sweeps (1e-9 of the
  largest entry). Pyramidal: that is the optimum (MuJoCo Newton at tolerance 1e-12, to 1e-6),
  with MuJoCo's dual states. Elliptic: MuJoCo 4.0's PGS (shuffled, extrapolated sweeps) stalls
  short of the optimum (qacc ~6% off) and so does ours."""
  iterations = 1000
  m_ref, d_ref = mj_solve(case, "Newton", iterations=100, tolerance=1e-12)
  m, d = mj_solve(case, "PGS", iterations=iterations, tolerance=-1.0)
  arrays, cone_args, opts = problem(m, d)
  res = run(arrays, cone_args, Solver.PGS, **opts)
  n = d.nefc
  assert int(res.solver_niter[0]) == int(d.solver_niter[0]) == iterations
  assert_close(res.qacc, d.qacc, 1e-9, "qacc")
  assert_close(res.efc_force[:n], d.efc_force, 1e-9, "efc_force")
  np.testing.assert_array_equal(res.efc_force[n:], 0.0)
  np.testing.assert_array_equal(res.efc_state[:n], d.efc_state)
  off = np.max(np.abs(d.qacc - d_ref.qacc)) / np.max(np.abs(d_ref.qacc))
  if case == "pyramidal":
    assert_close(res.qacc, d_ref.qacc, 1e-6, "qacc")
    assert_close(res.qfrc_constraint, d_ref.qfrc_constraint, 1e-6, "qfrc_constraint")
  else:
    assert off > 1e-2


@pytest.mark.parametrize("case,implicit", [("elliptic", True), ("pyramidal", False)])
def test_gradients_finite_and_correct(case, implicit):
  """jax.grad through solve w.r.t. qacc_smooth (with qfrc_smooth = M qacc_smooth) and
  efc_aref: finite with active rows and with every row inactive (implicit derivative, and
  reverse mode through the unrolled iterations); the implicit derivative matches central
  finite differences of the converged solution."""
  m, d = mj_solve(case)
  arrays, (cones, fric, mu), opts = problem(m, d)
  w = jnp.asarray(np.random.default_rng(3).normal(size=m.nv))

  def loss(qs, aref, active):
    a = dict(arrays, qacc_smooth=qs, qfrc_smooth=arrays["qM"] @ qs, efc_aref=aref,
             efc_active=active)
    r = solver.solve_arrays(**a, cones=cones, cone_friction=fric, cone_mu=mu,
                            implicit_grad=implicit, **opts)
    return r.qacc @ w + 1e-6 * jnp.sum(r.efc_force ** 2)

  vg = jax.jit(jax.value_and_grad(loss, argnums=(0, 1)))
  qs, aref, active = arrays["qacc_smooth"], arrays["efc_aref"], arrays["efc_active"]
  _, (g_qs, g_aref) = vg(qs, aref, active)
  assert np.all(np.isfinite(g_qs)) and np.all(np.isfinite(g_aref))
  assert np.max(np.abs(g_aref)) > 0
  if implicit:
    v = jnp.asarray(np.random.default_rng(4).normal(size=m.nv))
    fd = (vg(qs + 1e-5 * v, aref, active)[0] - vg(qs - 1e-5 * v, aref, active)[0]) / 2e-5
    np.testing.assert_allclose(float(g_qs @ v), float(fd), rtol=1e-4)
  # nothing active: qacc = qacc_smooth, so d loss / d qacc_smooth = w and aref is unused
  _, (g_qs, g_aref) = vg(qs, aref, jnp.zeros_like(active))
  np.testing.assert_allclose(g_qs, w, atol=1e-12)
  np.testing.assert_array_equal(g_aref, 0.0)


def test_solve_on_data():
  """solve(m, d) with a jaxmj Model and Data (qLD, qLDiagInv from jaxmj.smooth.mass.factor; qM, rows
  and contacts from MuJoCo), elliptic cones taken from d.contact, options from m.opt."""
  m_mj, d_mj = mj_solve("elliptic", equality=False)
  m = jaxmj.Model.from_xml_string(xml("elliptic", equality=False))
  assert np.isclose(float(np.mean(m.dof_M0)), m_mj.stat.meaninertia)
  qm = np.zeros((m.nv, m.nv))
  mujoco.mj_fullM(m_mj, d_mj, qm)
  qld, qldiaginv = mass.factor(m, jnp.asarray(qm))
  d = jaxmj.make_data(m).replace(
    qpos=jnp.asarray(d_mj.qpos), qvel=jnp.asarray(d_mj.qvel), qM=jnp.asarray(qm), qLD=qld,
    qLDiagInv=qldiaginv, qacc_smooth=jnp.asarray(d_mj.qacc_smooth),
    qfrc_smooth=jnp.asarray(d_mj.qfrc_smooth))
  np.testing.assert_allclose(mass.solve_m(m, d, d.qfrc_smooth), d_mj.qacc_smooth, rtol=1e-10,
                             atol=1e-10)
  n, ncon = d_mj.nefc, d_mj.ncon
  c = d_mj.contact
  contact = Contact(
    dist=jnp.asarray(c.dist), pos=jnp.asarray(c.pos), frame=jnp.asarray(c.frame).reshape(-1, 3, 3),
    includemargin=jnp.asarray(c.includemargin), friction=jnp.asarray(c.friction),
    solref=jnp.asarray(c.solref), solreffriction=jnp.asarray(c.solreffriction),
    solimp=jnp.asarray(c.solimp), active=jnp.ones(ncon, bool), dim=np.asarray(c.dim, np.int32),
    geom1=np.asarray(c.geom1, np.int32), geom2=np.asarray(c.geom2, np.int32),
    efc_address=np.asarray(c.efc_address, np.int32))
  d = d.replace(
    contact=contact, qacc_warmstart=jnp.zeros(m.nv),
    efc_type=jnp.asarray(d_mj.efc_type), efc_id=jnp.asarray(d_mj.efc_id),
    efc_active=jnp.ones(n, bool), efc_J=jnp.asarray(d_mj.efc_J).reshape(n, m.nv),
    efc_D=jnp.asarray(d_mj.efc_D), efc_R=jnp.asarray(d_mj.efc_R),
    efc_aref=jnp.asarray(d_mj.efc_aref), efc_frictionloss=jnp.asarray(d_mj.efc_frictionloss),
    efc_force=jnp.zeros(n), efc_state=jnp.zeros(n, jnp.int32))
  out = jax.jit(solver.solve)(m, d)
  assert_close(out.qacc, d_mj.qacc, 1e-6, "qacc")
  assert_close(out.efc_force, d_mj.efc_force, 1e-6, "efc_force")
  assert_close(out.qfrc_constraint, d_mj.qfrc_constraint, 1e-6, "qfrc_constraint")
  np.testing.assert_array_equal(out.efc_state, d_mj.efc_state)
  assert int(out.solver_niter[0]) == int(d_mj.solver_niter[0])


def test_no_rows():
  """No rows: qacc = qacc_smooth, nothing iterates."""
  nv = 3
  qm = jnp.eye(nv) * 2.0
  qs = jnp.arange(1.0, nv + 1)
  res = solver.solve_arrays(qm, qs, qm @ qs, jnp.zeros(nv), jnp.zeros((0, nv)),
                            *(jnp.zeros(0),) * 4, jnp.zeros(0, jnp.int32), jnp.zeros(0, bool))
  np.testing.assert_array_equal(res.qacc, qs)
  np.testing.assert_array_equal(res.qfrc_constraint, 0.0)
  assert int(res.solver_niter[0]) == 0


@pytest.mark.slow
def test_mjx_humanoid_low_iterations_trajectory():
  """MJX's test humanoid (iterations=1, ls_iterations=4: every step's single line search is
  truncated) stepped 300 times like mj_step, from qpos0 (falls onto the floor)."""
  path = os.path.join(os.path.dirname(mujoco.__file__), "mjx/test_data/humanoid/humanoid.xml")
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    m = jaxmj.Model.from_xml_path(path)
  mj = mujoco.MjModel.from_xml_path(path)
  assert (mj.opt.iterations, mj.opt.ls_iterations) == (1, 4)
  d = mujoco.MjData(mj)
  ref = []
  for _ in range(300):
    mujoco.mj_step(mj, d)
    ref.append(d.qpos.copy())
  run = jax.jit(lambda m, d: jaxmj.rollout(m, d, nstep=300),
                compiler_options={"xla_backend_optimization_level": 0})
  _, traj = run(m, jaxmj.make_data(m))
  assert d.ncon > 0
  np.testing.assert_allclose(np.asarray(traj["qpos"]), np.array(ref), atol=1e-9)


def test_newton_stops_when_expected_decrease_is_below_tolerance():
  """MuJoCo 4.0's Newton also stops once 0.5 g'H^-1 g (scaled) is below tolerance, with the
  improvement and gradient still above it: mjx's sensor model, step 80 from MuJoCo's state,
  stops after 2 iterations (gradient ~4e-8, expected decrease ~1e-15)."""
  path = os.path.join(os.path.dirname(mujoco.__file__), "mjx/test_data/sensor/model.xml")
  m = mujoco.MjModel.from_xml_path(path)
  m.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
  d = mujoco.MjData(m)
  for _ in range(79):
    mujoco.mj_step(m, d)
  mujoco.mj_forward(m, d)
  last = d.solver[int(d.solver_niter[0]) - 1]
  assert int(d.solver_niter[0]) == 2 and min(last.improvement, last.gradient) > m.opt.tolerance
  arrays, _, opts = problem(m, d, pad=0)
  arrays["qacc_warmstart"] = jnp.asarray(d.qacc_warmstart)
  isl = np.asarray(d.dof_island)
  res = run(arrays, (None, None, None), Solver.NEWTON, **opts,
            dof_island=jnp.asarray(isl), efc_island=jnp.asarray(d.efc_island),
            nisland_max=max(1, d.nisland))
  assert int(res.solver_niter[0]) == 2
  assert_close(res.qacc, d.qacc, 1e-9, "qacc")


# a heavy free base with two hinges coupled by a tendon equality, falling: the previous
# step's qacc is a warm start good enough that MuJoCo often runs no iteration
_WARM_XML = """<mujoco><option solver="{solver}"/><worldbody>
  <body><freejoint/><geom type="sphere" size=".1" mass="10000"/>
    <body><joint name="a" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
      <body pos=".3 0 0"><joint name="b" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/></body></body></body>
  </worldbody>
  <tendon><fixed name="t"><joint joint="a" coef="1"/><joint joint="b" coef="-.5"/></fixed></tendon>
  <equality><tendon tendon1="t" solref=".005 1"/></equality></mujoco>"""


@pytest.mark.parametrize("solver_name", ["Newton", "CG"])
def test_no_iteration_where_the_warm_start_has_converged(solver_name):
  """MuJoCo 4.0's mj_solPrimal runs no iteration on an island already converged at its warm
  start (CG: the duality gap 0.5 g'M^-1 g below tolerance; Newton: the scaled gradient norm
  too, and the gap or the decrement 0.5 g'H^-1 g). jaxmj's step from each of MuJoCo's states
  (qacc_warmstart included) runs MuJoCo's iteration count and lands on its qvel; Newton
  iterating once more where MuJoCo stops had qvel 5e-5 off."""
  xml = _WARM_XML.format(solver=solver_name)
  mj = mujoco.MjModel.from_xml_string(xml)
  md = mujoco.MjData(mj)
  md.qvel[6:8] = 0.1, 0.2  # the coupled hinges turning, consistent with the coupling
  states, niter, qvel = [], [], []
  for _ in range(12):
    states.append([md.qpos.copy(), md.qvel.copy(), md.qacc_warmstart.copy(), md.time])
    mujoco.mj_step(mj, md)
    niter.append(int(md.solver_niter[0]))
    qvel.append(md.qvel.copy())
  assert 0 in niter and 1 in niter  # both branches taken
  m = jaxmj.Model.from_xml_string(xml)
  d0 = jaxmj.make_data(m)
  batch = jax.vmap(lambda q, v, w, t: d0.replace(qpos=q, qvel=v, qacc_warmstart=w, time=t))(
    *(jnp.asarray(np.array(x)) for x in zip(*states)))
  out = jax.jit(jax.vmap(jaxmj.step, in_axes=(None, 0)))(m, batch)
  np.testing.assert_array_equal(np.asarray(out.solver_niter)[:, 0], niter)
  np.testing.assert_allclose(np.asarray(out.qvel), np.array(qvel), rtol=0, atol=1e-12)


def _chain_xml(n: int) -> str:
  """A hanging chain of n limited hinges with dof friction loss."""
  body = ""
  for i in range(n):
    body += (f'<body pos="0 0 -0.1"><joint name="j{i}" axis="0 1 0" range="-10 10" '
             f'frictionloss="0.02" damping="0.01"/>'
             f'<geom type="capsule" fromto="0 0 0 0 0 -0.1" size="0.02"/>')
  body += "</body>" * n
  return (f'<mujoco><option solver="Newton" tolerance="1e-12"><flag warmstart="disable"/>'
          f'</option><compiler angle="degree"/><worldbody>{body}</worldbody></mujoco>')


def test_newton_on_large_system_with_limits_matches_mujoco():
  """nv 36 > SPD_UNROLL_MAX (the Newton step's solve in looped blocks of up to
  SPD_LOOP_BLOCK_MAX), joint limits and dof friction loss through mj_forward: MuJoCo's qacc,
  forces and iteration count at states with most limits active."""
  from jaxmj.linalg import SPD_UNROLL_MAX

  n = 36
  mj = mujoco.MjModel.from_xml_string(_chain_xml(n))
  md = mujoco.MjData(mj)
  m = jaxmj.Model.from_xml_string(_chain_xml(n))
  assert m.nv > SPD_UNROLL_MAX
  fwd = jax.jit(jaxmj.forward)
  rng = np.random.default_rng(0)
  for _ in range(2):
    md.qpos[:] = rng.uniform(-0.3, 0.3, n)  # past the +-10 degree limits mostly
    md.qvel[:] = rng.normal(0, 1, n)
    mujoco.mj_forward(mj, md)
    d = fwd(m, jaxmj.make_data(m).replace(qpos=jnp.asarray(md.qpos), qvel=jnp.asarray(md.qvel)))
    assert md.nefc > n
    assert_close(d.qacc, md.qacc, 1e-9, "qacc")
    assert_close(d.qfrc_constraint, md.qfrc_constraint, 1e-9, "qfrc_constraint")
    assert int(d.solver_niter[0]) == int(md.solver_niter[0])
