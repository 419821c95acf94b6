"""Newton's step by kinematic tree (solver/tree_blocks.py): where no weighted row couples two
trees the Hessian's diagonal blocks are solved apart, else the whole Hessian. Held against
MuJoCo 4.0 in both cases, against a dense solve, and under vmap with a batch that mixes the
two cases (the batch then takes the dense step)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mujoco_compare import mujoco

import jaxmj
from jaxmj.linalg import spd_solve
from jaxmj.solver import tree_blocks

# seven trees of 33 dofs (six spheres, one hinge arm of three dofs) resting apart on the floor
XML = """<mujoco>
  <option cone="{cone}"/>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    {spheres}
    <body pos="0 2 .3"><joint type="hinge" axis="0 1 0" range="-.5 .5"/>
      <geom type="capsule" fromto="0 0 0 .2 0 0" size=".04"/>
      <body pos=".2 0 0"><joint type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .2 0 0" size=".04"/>
        <body pos=".2 0 0"><joint type="hinge" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".04"/></body></body></body>
  </worldbody>
</mujoco>"""
SPHERE = '<body pos="{x} 0 .1"><freejoint/><geom type="sphere" size=".1" condim="{condim}"/></body>'


def model_xml(cone="pyramidal", condim=3):
  spheres = "\n".join(SPHERE.format(x=0.5 * i, condim=condim) for i in range(6))
  return XML.format(cone=cone, spheres=spheres)


def state(mj, touching):
  """Every sphere pressed 1 mm into the floor, the arm bent so that its tip is in the floor
  (a tree with contact and limit rows); with `touching` the second sphere pressed 1 mm into
  the first (a row spanning two trees)."""
  d = mujoco.MjData(mj)
  for i in range(6):
    d.qpos[7 * i + 2] = 0.099
  if touching:
    d.qpos[7] = 0.199
  d.qpos[42:45] = [0.4, 0.2, -0.2]
  d.qvel[:] = 0.3 * np.random.default_rng(2).normal(size=mj.nv)
  return d


def jax_data(m, md):
  return jaxmj.make_data(m).replace(qpos=jnp.asarray(md.qpos), qvel=jnp.asarray(md.qvel))


# trees of one dof count and different structure: a free sphere (its dofs a chain) and a hinge
# with two hinge chains of 2 and 3 below it
MIXED = """<mujoco><worldbody>
  {s}<body pos="0 1 1">{chain}</body>{s}{s}
  <body pos="0 2 1"><joint axis="0 1 0"/><geom size=".1"/>
    <body><joint axis="0 1 0"/><geom size=".1"/><body><joint axis="0 1 0"/><geom size=".1"/>
    </body></body></body>{s}
</worldbody></mujoco>"""


def nested_hinges(n):
  return "" if n == 0 else (f'<body pos="0 0 -.2"><joint axis="1 0 0"/><geom size=".05"/>'
                            f'{nested_hinges(n - 1)}</body>')


FORK = f'<joint axis="1 0 0"/><geom size=".05"/>{nested_hinges(2)}{nested_hinges(3)}'


def test_plan_groups_trees_by_structure():
  s = '<body pos="0 0 1"><freejoint/><geom size=".1"/></body>'
  m = jaxmj.Model.from_xml_string(MIXED.format(s=s, chain=FORK))
  assert m.nv == 33
  tb = tree_blocks.plan(m)
  assert [g.idx.tolist() for g in tb.forest.groups] == [
    [list(range(a, a + 6)) for a in (0, 12, 18, 27)], [list(range(6, 12))], [[24, 25, 26]]]
  order = np.concatenate([g.idx.ravel() for g in tb.forest.groups])
  np.testing.assert_array_equal(order[tb.forest.inverse], np.arange(33))
  assert not tb.off_block[0, 5] and tb.off_block[5, 6] and not tb.off_block[26, 24]
  assert tb.off_block[26, 27]
  # one tree, or a system the dense step solves cheaply: no plan
  assert tree_blocks.plan(jaxmj.Model.from_xml_string(
    f"<mujoco><worldbody><body>{nested_hinges(40)}</body></worldbody></mujoco>")) is None
  assert tree_blocks.plan(jaxmj.Model.from_xml_string(model_xml())).forest.inverse is None
  assert tree_blocks.plan(jaxmj.Model.from_xml_string(
    f"<mujoco><worldbody>{s}{s}</worldbody></mujoco>")) is None


def test_block_solve_equals_dense_solve_on_block_diagonal_matrix():
  jax.config.update("jax_enable_x64", True)
  rng = np.random.default_rng(0)
  s = '<body pos="0 0 1"><freejoint/><geom size=".1"/></body>'
  m = jaxmj.Model.from_xml_string(MIXED.format(s=s, chain=FORK))
  tb = tree_blocks.plan(m)
  h = np.zeros((33, 33))
  for a, n in zip(m.tree_dofadr, m.tree_dofnum):
    x = rng.normal(size=(n, n))
    h[a:a + n, a:a + n] = x @ x.T + n * np.eye(n)
  g = rng.normal(size=33)
  assert not tree_blocks.coupled(tb, jnp.asarray(h))
  x = tree_blocks.block_solve(tb, jnp.asarray(h), jnp.asarray(g))
  np.testing.assert_allclose(x, np.linalg.solve(h, g), rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(x, spd_solve(jnp.asarray(h), jnp.asarray(g))[0], rtol=1e-12,
                             atol=1e-12)
  h[2, 10] = h[10, 2] = 0.1
  assert tree_blocks.coupled(tb, jnp.asarray(h))


@pytest.mark.parametrize("cone,condim", [("pyramidal", 3), ("elliptic", 3), ("elliptic", 6)])
@pytest.mark.parametrize("touching", [False, True])
def test_forward_matches_mujoco_with_and_without_coupling(cone, condim, touching):
  jax.config.update("jax_enable_x64", True)
  xml = model_xml(cone, condim)
  mj = mujoco.MjModel.from_xml_string(xml)
  md = state(mj, touching)
  mujoco.mj_forward(mj, md)
  m = jaxmj.Model.from_xml_string(xml)
  assert m.nv == 39 and tree_blocks.plan(m) is not None
  # the trees' coupling is what MuJoCo's islands see: one island per touching group
  assert md.nisland == (6 if touching else 7)
  d = jax.jit(jaxmj.forward)(m, jax_data(m, md))
  scale = np.max(np.abs(md.qacc))
  np.testing.assert_allclose(d.qacc, md.qacc, rtol=0, atol=1e-9 * scale)
  np.testing.assert_allclose(d.qfrc_constraint, md.qfrc_constraint, rtol=0,
                             atol=1e-9 * np.max(np.abs(md.qfrc_constraint)))


def test_batch_with_one_coupled_world_matches_each_world_alone():
  jax.config.update("jax_enable_x64", True)
  xml = model_xml()
  mj = mujoco.MjModel.from_xml_string(xml)
  m = jaxmj.Model.from_xml_string(xml)
  worlds = [jax_data(m, state(mj, touching)) for touching in (False, True)]
  alone = [jax.jit(jaxmj.forward)(m, d).qacc for d in worlds]
  batch = jax.tree.map(lambda *x: jnp.stack(x), *worlds)
  both = jax.jit(jax.vmap(jaxmj.forward, in_axes=(None, 0)))(m, batch).qacc
  for i in range(2):
    np.testing.assert_allclose(both[i], alone[i], rtol=0, atol=1e-10 * np.max(np.abs(alone[i])))
