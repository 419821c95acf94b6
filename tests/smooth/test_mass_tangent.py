"""Tangent rules of the tree-sparse L'DL (jaxmj/smooth/mass.py): factor, solve_ld and
solve_factored against central finite differences of the primal arithmetic (float64), on
random SPD matrices with the humanoid's dof-tree sparsity; jvp against grad; primal values
bit for bit those of the elimination."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mujoco_compare import FAST

import jaxmj
from jaxmj.smooth import mass

MODEL = os.path.join(os.path.dirname(__file__), "..", "..", "models", "humanoid.xml")


@pytest.fixture(scope="module")
def model():
  return jaxmj.Model.from_xml_path(MODEL)


def tree_spd(m, rng):
  """A random SPD matrix with qM's sparsity (nonzero only at ancestor pairs, both sides):
  L' D L with L unit lower triangular on the ancestor pattern and D > 0."""
  anc = np.asarray(m.dof_ancestor)
  lower = np.where(anc & ~np.eye(m.nv, dtype=bool), rng.normal(size=(m.nv, m.nv)) * 0.3, 0)
  lower += np.eye(m.nv)
  return lower.T @ np.diag(rng.uniform(0.5, 2.0, m.nv)) @ lower


def sym_direction(m, rng):
  anc = np.asarray(m.dof_ancestor)
  low = np.where(anc, rng.normal(size=(m.nv, m.nv)), 0)
  return low + low.T - np.diag(np.diag(low))


def central(f, x, dx, eps=1e-6):
  """Central differences of f at x (a pytree) in direction dx."""
  step = lambda s: jax.tree.map(lambda a, t: a + s * eps * t, x, dx)  # noqa: E731
  plus, minus = f(step(1.0)), f(step(-1.0))
  return jax.tree.map(lambda a, b: (a - b) / (2 * eps), plus, minus)


def assert_close(a, b, tol):
  for u, v in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
    scale = max(np.max(np.abs(v)), 1.0)
    np.testing.assert_allclose(u, v, atol=tol * scale, rtol=0)


def test_factor_primal_is_the_elimination_and_jvp_matches_central_differences(model):
  m, rng = model, np.random.default_rng(0)
  mat, dmat = jnp.asarray(tree_spd(m, rng)), jnp.asarray(sym_direction(m, rng))
  f = jax.jit(lambda a: mass.factor(m, a))
  (ld, diag_inv), (dld, ddiag) = jax.jit(lambda a, t: jax.jvp(lambda b: mass.factor(m, b),
                                                              (a,), (t,)))(mat, dmat)
  eliminate = jax.jit(lambda a: mass._eliminate(m, a))
  ref = eliminate(mat)
  np.testing.assert_array_equal(ld, ref[0])
  np.testing.assert_array_equal(diag_inv, ref[1])
  np.testing.assert_array_equal(f(mat)[0], ref[0])
  lower = np.tril(np.asarray(ld), -1) + np.eye(m.nv)  # M = L' D L holds
  np.testing.assert_allclose(lower.T @ np.diag(np.diag(ld)) @ lower, mat, atol=1e-12)
  fd = central(eliminate, mat, dmat)
  assert_close((dld, ddiag), fd, 1e-8)
  outside = ~np.asarray(m.dof_ancestor)
  assert np.all(np.asarray(dld)[outside] == 0)  # the tangent keeps L's sparsity


def test_solves_jvp_match_central_differences_and_grad(model):
  m, rng = model, np.random.default_rng(1)
  mat, dmat = jnp.asarray(tree_spd(m, rng)), jnp.asarray(sym_direction(m, rng))
  b, db = jnp.asarray(rng.normal(size=m.nv)), jnp.asarray(rng.normal(size=m.nv))
  w = jnp.asarray(rng.normal(size=m.nv))

  def through_factor(a, v):  # factor's tangent, then solve_ld's
    return mass.solve_ld(m, *mass.factor(m, a), v)

  def factored(a, v):  # solve_factored: derivative through the matrix directly
    return mass.solve_factored(m, a, *mass.factor(m, a), v)

  def primal(a, v):
    return mass._solve_sweeps(m, *mass._eliminate(m, a), v)

  fd = central(lambda t: jax.jit(primal)(t[0], t[1]), (mat, b), (dmat, db))
  x = jax.jit(primal)(mat, b)
  for fn in (through_factor, factored):
    y, dy = jax.jit(lambda a, v, da, dv, fn=fn: jax.jvp(fn, (a, v), (da, dv)))(mat, b, dmat, db)
    np.testing.assert_array_equal(y, x)  # primal unchanged
    assert_close(dy, fd, 1e-8)
    # reverse mode is the transpose of the same linear map: <w, J t> = <J' w, t>
    ga, gb = jax.jit(jax.grad(lambda a, v, fn=fn: jnp.dot(w, fn(a, v)), argnums=(0, 1)))(mat, b)
    lhs = float(jnp.dot(w, dy))
    rhs = float(jnp.sum(ga * dmat) + jnp.dot(gb, db))
    np.testing.assert_allclose(lhs, rhs, rtol=1e-10)


def test_solve_rules_batch_under_vmap(model):
  m, rng = model, np.random.default_rng(2)
  mats = jnp.asarray(np.stack([tree_spd(m, rng) for _ in range(3)]))
  dmats = jnp.asarray(np.stack([sym_direction(m, rng) for _ in range(3)]))
  b = jnp.asarray(rng.normal(size=(3, m.nv)))

  def tangent(a, da, v):
    return jax.jvp(lambda t: mass.solve_factored(m, t, *mass.factor(m, t), v), (a,), (da,))[1]

  batched = jax.jit(jax.vmap(tangent))(mats, dmats, b)
  for i in range(3):
    np.testing.assert_allclose(batched[i], jax.jit(tangent)(mats[i], dmats[i], b[i]),
                               rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["humanoid", "tendon_arm"])
def test_mul_m_tree_is_mj_mulM(name):
  import mujoco

  path = os.path.join(os.path.dirname(MODEL), f"{name}.xml")
  mm = mujoco.MjModel.from_xml_path(path)
  md = mujoco.MjData(mm)
  rng = np.random.default_rng(3)
  mujoco.mj_forward(mm, md)
  md.qvel[:] = rng.normal(size=mm.nv)
  mujoco.mj_step(mm, md)
  mujoco.mj_forward(mm, md)
  m = jaxmj.Model.from_xml_path(path)
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(md.qpos))
  d = jax.jit(jaxmj.forward)(m, d)
  x = rng.normal(size=mm.nv)
  ref = np.zeros(mm.nv)
  mujoco.mj_mulM(mm, md, ref, x)
  got = jax.jit(lambda d, x: mass.mul_m_tree(m, d.cinert, d.cdof, d.ten_J, x))(d, jnp.asarray(x))
  np.testing.assert_allclose(got, ref, atol=1e-10 * np.max(np.abs(ref)), rtol=0)


def test_solve_m_tree_jvp_in_positions_matches_central_differences_and_grad(model):
  """solve_m_tree's derivative (dM x from mul_m_tree, a damping diagonal) along a position
  tangent: central differences of the primal pipeline; reverse mode its transpose."""
  m, rng = model, np.random.default_rng(4)
  d0 = jaxmj.make_data(m)
  b = jnp.asarray(rng.normal(size=m.nv))
  dq, w = (jnp.asarray(rng.normal(size=m.nv)) for _ in range(2))
  damping = jnp.asarray(rng.uniform(0.1, 1.0, m.nv))

  def solved(q, diag, tree=True):
    from jaxmj.dynamics.stages import fwd_position
    from jaxmj.smooth.qpos import integrate_pos

    d = fwd_position(m, d0.replace(qpos=integrate_pos(m, d0.qpos, q, 1.0)))
    ld, diag_inv = mass.factor(m, d.qM + jnp.diag(diag))
    if tree:
      return mass.solve_m_tree(m, d, b, ld, diag_inv, diag)
    return mass._solve_sweeps(m, ld, diag_inv, b)

  q0 = jnp.zeros(m.nv)
  y, dy = jax.jit(lambda q, t, g, dg: jax.jvp(solved, (q, g), (t, dg)))(q0, dq, damping, damping)
  np.testing.assert_array_equal(y, jax.jit(lambda q, g: solved(q, g, False))(q0, damping))
  fd = central(lambda t: jax.jit(lambda q, g: solved(q, g, False))(*t), (q0, damping),
               (dq, damping))
  assert_close(dy, fd, 1e-7)
  gq, gg = jax.jit(jax.grad(lambda q, g: jnp.dot(w, solved(q, g)), argnums=(0, 1)))(q0, damping)
  np.testing.assert_allclose(float(jnp.dot(w, dy)), float(gq @ dq + gg @ damping), rtol=1e-10)


ARM_XML = """<mujoco><option timestep="0.01"/><worldbody><geom type="plane" size="2 2 .1"/>
  <body pos="0 0 .3"><joint name="h" axis="0 1 0" armature=".02" damping=".3"/>
    <geom type="capsule" size=".05" fromto="0 0 0 .3 0 -.28"/></body></worldbody>
  <actuator><motor joint="h" gear="2" armature=".01"/></actuator></mujoco>"""


def test_step_derivative_in_the_armatures_matches_central_differences():
  """qM's armature terms come from the Model inside solve_m_tree's and the solver's custom
  rules (arguments, not closures): d(qvel after a step in contact) / d(dof_armature,
  actuator_armature), forward and reverse mode, against central differences."""
  m = jaxmj.Model.from_xml_string(ARM_XML)
  d = jaxmj.make_data(m).replace(qvel=jnp.array([2.0]), ctrl=jnp.array([0.5]))

  def qvel(arm):
    return jaxmj.step(m.replace(dof_armature=arm[:1], actuator_armature=arm[1:]), d).qvel[0]

  arm = jnp.concatenate([m.dof_armature, m.actuator_armature])
  fast = dict(compiler_options=FAST)
  # one program for the gradient and the central differences' values
  value_and_grad = jax.jit(jax.value_and_grad(qvel), **fast)
  want = np.array([central(lambda a: value_and_grad(a)[0], arm, np.eye(2)[i]) for i in range(2)])
  np.testing.assert_allclose(jax.jit(jax.jacfwd(qvel), **fast)(arm), want, rtol=1e-6, atol=1e-9)
  np.testing.assert_allclose(value_and_grad(arm)[1], want, rtol=1e-6, atol=1e-9)
