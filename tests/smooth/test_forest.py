"""The mass matrix's factor and solves by kinematic tree (smooth/forest.py): on a model whose
dofs form several trees, each group of trees of one structure runs one tree's levels vmapped
over the group. Held against the whole-forest passes, a dense solve and MuJoCo 4.0."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mujoco_compare import mujoco

import jaxmj
from jaxmj.smooth import forest, mass

# a three-hinge arm, six free spheres, then a second arm: two groups of trees whose dofs are
# not laid end to end in dof order (the arms' dofs are 0-2 and 39-41), nv 42
ARM = """<body pos="{x} 2 .3"><joint type="hinge" axis="0 1 0" range="-.5 .5"/>
      <geom type="capsule" fromto="0 0 0 .2 0 0" size=".04"/>
      <body pos=".2 0 0"><joint type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .2 0 0" size=".04"/>
        <body pos=".2 0 0"><joint type="hinge" axis="1 0 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".04"/></body></body></body>"""
SPHERE = '<body pos="{x} 0 .1"><freejoint/><geom type="sphere" size=".1"/></body>'
XML = f"""<mujoco>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    {ARM.format(x=0)}
    {"".join(SPHERE.format(x=0.5 * i) for i in range(6))}
    {ARM.format(x=1)}
  </worldbody>
</mujoco>"""


@pytest.fixture(scope="module")
def models():
  jax.config.update("jax_enable_x64", True)
  return jaxmj.Model.from_xml_string(XML), mujoco.MjModel.from_xml_string(XML)


def test_plan_groups_trees_by_structure(models):
  m, _ = models
  f = forest.plan(m)
  assert [g.idx.tolist() for g in f.groups] == [
    [[0, 1, 2], [39, 40, 41]], [list(range(3 + 6 * i, 9 + 6 * i)) for i in range(6)]]
  order = np.concatenate([g.idx.ravel() for g in f.groups])
  np.testing.assert_array_equal(order[f.inverse], np.arange(m.nv))
  one_tree = jaxmj.Model.from_xml_path("models/humanoid.xml")
  small = jaxmj.Model.from_xml_path("models/box_stack.xml")  # three trees, nv 18
  assert forest.plan(one_tree) is None and forest.plan(small) is None


def _whole(monkeypatch):
  monkeypatch.setattr(mass.forest, "plan", lambda m: None)


def test_factor_and_solve_by_tree_match_the_whole_forest(models, monkeypatch):
  m, _ = models
  rng = np.random.default_rng(0)
  anc = np.asarray(m.dof_ancestor)
  lower = np.where(anc & ~np.eye(m.nv, dtype=bool), rng.normal(size=(m.nv, m.nv)) * 0.3, 0)
  lower += np.eye(m.nv)
  mat = lower.T @ np.diag(rng.uniform(0.5, 2.0, m.nv)) @ lower
  b = rng.normal(size=m.nv)

  def run(a, x):
    ld, diag_inv = mass._eliminate(m, a)
    return ld, diag_inv, mass._solve_sweeps(m, ld, diag_inv, x)

  by_tree = jax.jit(run)(jnp.asarray(mat), jnp.asarray(b))
  _whole(monkeypatch)
  whole = jax.jit(run)(jnp.asarray(mat), jnp.asarray(b))
  for got, want in zip(by_tree, whole):
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(by_tree[2], np.linalg.solve(mat, b), rtol=1e-10, atol=1e-12)


def test_forward_by_tree_matches_mujoco(models):
  m, mj = models
  md = mujoco.MjData(mj)
  md.qpos[:3] = [0.3, -0.2, 0.4]
  md.qpos[-3:] = [-0.4, 0.3, 0.2]
  md.qvel[:] = 0.3 * np.random.default_rng(1).normal(size=mj.nv)
  mujoco.mj_forward(mj, md)
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(md.qpos), qvel=jnp.asarray(md.qvel))
  d = jax.jit(jaxmj.forward)(m, d)
  np.testing.assert_allclose(d.qacc, md.qacc, rtol=1e-9, atol=1e-9)
  np.testing.assert_allclose(d.qLDiagInv, md.qLDiagInv, rtol=1e-12, atol=1e-12)
