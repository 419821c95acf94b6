"""jaxmj/mjcf/engine0.py rounds as MuJoCo 4.0's engine: each helper against the mujoco
function it follows, on MuJoCo's own inputs (the compiled constants built from them are held
in test_frames_bits.py)."""

import os

import mujoco
import numpy as np
import pytest
from conftest import MODELS

from jaxmj.mjcf.compile import engine0


def _spread(rng, *shape):
  """Values over six decades, so that a different order of a sum rounds differently."""
  return rng.standard_normal(shape) * 10.0 ** rng.uniform(-3, 3, shape)


@pytest.mark.parametrize("n", [1, 3, 4, 6, 7, 11])
def test_dot_is_mju_dot(n):
  rng = np.random.default_rng(n)
  for _ in range(50):
    a, b = _spread(rng, n), _spread(rng, n)
    assert engine0.dot(a.tolist(), b.tolist()) == mujoco.mju_dot(a, b)


def test_normalize3_scales_even_near_unit_length():
  v = np.array([0.18257418583505536, 0.9128709291752768, -0.3651483716701107])
  ref = v.copy()
  mujoco.mju_normalize3(ref)
  assert engine0.normalize3(v.tolist()) == ref.tolist() != v.tolist()


@pytest.fixture(scope="module")
def humanoid():
  m = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "humanoid.xml"))
  d = mujoco.MjData(m)
  mujoco.mj_forward(m, d)
  f = {k: getattr(m, k) for k in ("body_parentid", "body_mass", "dof_parentid",
                                  "dof_simplenum")}
  return m, d, f


def _dense(m, values) -> np.ndarray:
  """MuJoCo's sparse lower-triangular rows (M_rowadr/rownnz/colind) as a dense array."""
  out = np.zeros((m.nv, m.nv))
  for i in range(m.nv):
    adr = slice(m.M_rowadr[i], m.M_rowadr[i] + m.M_rownnz[i])
    out[i, m.M_colind[adr]] = values[adr]
  return out


def test_subtree_com_factor_and_solve_are_mujocos(humanoid):
  m, d, f = humanoid
  com = engine0.subtree_com(f, {"xipos": d.xipos.copy()})
  np.testing.assert_array_equal(com, d.subtree_com)
  anc = engine0.ancestors(f)
  qld, dinv = engine0.factor(_dense(m, d.M), anc)
  np.testing.assert_array_equal(np.tril(qld), _dense(m, d.qLD))
  np.testing.assert_array_equal(dinv, d.qLDiagInv)
  rhs = _spread(np.random.default_rng(0), 6, m.nv)
  ref = np.zeros_like(rhs)
  mujoco.mj_solveM(m, d, ref, rhs)
  np.testing.assert_array_equal(engine0.solve(qld, dinv, anc, rhs.T).T, ref)
