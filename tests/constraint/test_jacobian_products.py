"""mj_mulJacVec and mj_mulJacTVec (jaxmj.mul_jac_vec / mul_jac_t_vec) on a state with
contacts of each condim, joint limits and dof friction, rows matched to MuJoCo's as in
test_forward_solvers; and mj_isDual / mj_isPyramidal / mj_isSparse over solver, noslip, cone
and Jacobian settings."""

import functools

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from test_forward_solvers import XML, match_rows, state  # noqa: E402

import jaxmj  # noqa: E402


@functools.lru_cache
def _case():
  xml = XML.format(cone="pyramidal", solver="Newton", iterations=100)
  m, mj = jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
  dm = state(mj)
  mujoco.mj_forward(mj, dm)
  d = jax.jit(jaxmj.forward)(m, jaxmj.make_data(m).replace(qpos=dm.qpos.copy(),
                                                           qvel=dm.qvel.copy()))
  return m, mj, d, dm


def test_jacobian_products_equal_mujoco_on_matched_rows():
  m, mj, d, dm = _case()
  ours, ref = match_rows(d, dm)
  rng = np.random.default_rng(0)
  vec = rng.normal(size=mj.nv)
  res = np.zeros(dm.nefc)
  mujoco.mj_mulJacVec(mj, dm, res, vec)
  out = np.asarray(jaxmj.mul_jac_vec(m, d, jnp.asarray(vec)))
  np.testing.assert_allclose(out[ours], res[ref], atol=1e-9)
  inactive = np.setdiff1d(np.arange(out.shape[0]), ours)
  assert inactive.size and not out[inactive].any()  # rows that are no constraint give 0

  lam = rng.normal(size=dm.nefc)
  res = np.zeros(mj.nv)
  mujoco.mj_mulJacTVec(mj, dm, res, lam)
  rows = np.zeros(out.shape[0])
  rows[ours] = lam[ref]
  rows[inactive] = 1e3  # entries on inactive rows are no constraint's: not read
  np.testing.assert_allclose(jaxmj.mul_jac_t_vec(m, d, jnp.asarray(rows)), res, atol=1e-9)


@pytest.mark.parametrize("opt", [
  'solver="PGS"', 'solver="CG"', 'solver="Newton"', 'solver="Newton" noslip_iterations="2"',
  'cone="elliptic"', 'jacobian="sparse"', 'jacobian="dense"'])
@pytest.mark.parametrize("nv", [6, 60])
def test_model_kinds_equal_mujoco(opt, nv):
  """is_sparse's automatic choice turns at nv = 60 (free bodies: 6 dofs each)."""
  bodies = "".join(f'<body pos="{i} 0 1"><freejoint/><geom size=".1"/></body>'
                   for i in range(nv // 6))
  xml = f"<mujoco><option {opt}/><worldbody>{bodies}</worldbody></mujoco>"
  m, mj = jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
  assert m.nv == nv
  assert jaxmj.is_dual(m) == bool(mujoco.mj_isDual(mj))
  assert jaxmj.is_pyramidal(m) == bool(mujoco.mj_isPyramidal(mj))
  assert jaxmj.is_sparse(m) == bool(mujoco.mj_isSparse(mj))
