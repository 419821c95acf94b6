"""A singular joint-space inertia against MuJoCo 4.0: three slide joints in one plane leave
M a null direction, whose pivot MuJoCo raises to MINVAL (qacc 0 along it, Warning INERTIA
counted once per factorization) where jaxmj divided by zero (NaN qacc; the world was reset).
Once in a shallow tree (the levels), once at the tip of a chain deeper than
mass.LEVELS_UNROLL_MAX (the scan), and the off-CPU levels on the shallow one."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import FAST  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.constants import MINVAL  # noqa: E402
from jaxmj.smooth import mass  # noqa: E402

BOX = """<body name="box" pos="0 0 .5">
  <joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/>
  <joint type="slide" axis="0 0 1"/><joint type="slide" axis="1 1 0"/>
  <geom type="box" size=".05 .05 .05" mass="1"/>{inner}</body>"""


def _chain(n):
  inner = BOX.format(inner="")
  for _ in range(n):
    inner = f'<body pos="0 0 .1"><joint axis="0 1 0"/><geom size=".02" mass=".1"/>{inner}</body>'
  return inner


@pytest.mark.parametrize("depth", [0, mass.LEVELS_UNROLL_MAX + 2])
def test_singular_inertia_pivots_and_steps_as_mujoco(depth):
  xml = f"<mujoco><worldbody>{_chain(depth) if depth else BOX.format(inner='')}</worldbody>" \
        "</mujoco>"
  m, mj = jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
  assert (mass._ld_plan(m)["scan"] is not None) == bool(depth)
  dm = mujoco.MjData(mj)
  dm.qvel[:] = 0.1 * np.arange(mj.nv)
  d = jaxmj.make_data(m).replace(qvel=jnp.asarray(dm.qvel))
  mujoco.mj_forward(mj, dm)
  out = jax.jit(jaxmj.forward, compiler_options=FAST)(m, d)
  diag = np.asarray(out.qLD).diagonal()
  rows = np.cumsum(mj.M_rownnz) - 1  # MuJoCo's diagonal entries in its sparse qLD
  # the chain's pivots sum many terms (the scan's order is not MuJoCo's): 2e-12 apart
  np.testing.assert_allclose(diag, dm.qLD[rows], rtol=1e-10, atol=1e-20)
  assert (diag == MINVAL).sum() == 1
  np.testing.assert_allclose(out.qLDiagInv, dm.qLDiagInv, rtol=1e-10)
  np.testing.assert_allclose(out.qacc, dm.qacc, atol=1e-9)
  assert int(out.warning[jaxmj.Warning.INERTIA]) == dm.warning[0].number == 1
  step = jax.jit(jaxmj.step, compiler_options=FAST)
  d = out  # its count included, as MuJoCo's
  for _ in range(20):
    mujoco.mj_step(mj, dm)
    d = step(m, d)
  if depth:  # the chain swings: its forces' round-off along the null direction, over a pivot
    # of 1e-15, moves the box apart in the two engines (3e-4 after 20 steps), as any
    # difference in rounding would; finite, with MuJoCo's warnings
    assert np.isfinite(np.asarray(d.qpos)).all()
  else:
    np.testing.assert_allclose(d.qpos, dm.qpos, atol=1e-10)
  assert int(d.warning[jaxmj.Warning.INERTIA]) == dm.warning[0].number == 21  # once a step


def test_singular_pivot_off_the_cpu_matches_the_cpu():
  m = jaxmj.Model.from_xml_string(f"<mujoco><worldbody>{BOX.format(inner='')}</worldbody>"
                                  "</mujoco>")
  d = jax.jit(jaxmj.forward, compiler_options=FAST)(m, jaxmj.make_data(m))
  plan = mass._ld_plan(m)
  m_rows = jnp.append(d.qM.reshape(-1), 0.0)[plan["take_m"]]
  np.testing.assert_array_equal(mass._levels_reduce(plan, m_rows), mass._levels_cpu(plan, m_rows))
