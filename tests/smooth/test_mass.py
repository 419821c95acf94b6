"""The L'DL factor's and solve's arithmetic off the CPU (jaxmj/smooth/mass.py: the levels as
fused reductions, the down sweep by columns), which a CPU run never lowers
(`lax.platform_dependent`): called directly here against the CPU's, on random SPD matrices
with the humanoid's dof-tree sparsity (float64)."""

import os

import jax.numpy as jnp
import numpy as np
import pytest

import jaxmj
from jaxmj.smooth import mass

MODEL = os.path.join(os.path.dirname(__file__), "..", "..", "models", "humanoid.xml")


@pytest.fixture(scope="module")
def model():
  return jaxmj.Model.from_xml_path(MODEL)


def test_factor_levels_off_the_cpu_match_the_cpu(model):
  m, rng = model, np.random.default_rng(0)
  anc = np.asarray(m.dof_ancestor)
  lower = np.where(anc & ~np.eye(m.nv, dtype=bool), rng.normal(size=(m.nv, m.nv)) * 0.3, 0)
  lower += np.eye(m.nv)
  mat = jnp.asarray(lower.T @ np.diag(rng.uniform(0.5, 2.0, m.nv)) @ lower)
  plan = mass._ld_plan(m)
  m_rows = jnp.append(mat.reshape(-1), 0.0)[plan["take_m"]]
  cpu, other = mass._levels_cpu(plan, m_rows), mass._levels_reduce(plan, m_rows)
  np.testing.assert_allclose(other, cpu, rtol=1e-12, atol=1e-12)


def test_down_sweep_off_the_cpu_matches_the_cpu(model):
  m, rng = model, np.random.default_rng(1)
  anc = np.asarray(m.dof_ancestor) & ~np.eye(m.nv, dtype=bool)
  lower = jnp.asarray(np.where(anc, rng.normal(size=(m.nv, m.nv)) * 0.3, 0))
  plan = mass._ld_plan(m)
  deep_first = [ks for ks in plan["levels"] if len(plan["paths"][ks[0]]) > 1]
  rows = {id(ks): jnp.stack([lower[k] for k in ks]) for ks in deep_first}
  y = jnp.asarray(rng.normal(size=m.nv))
  np.testing.assert_allclose(mass._down_push(plan, lower, y), mass._down_cpu(rows, deep_first, y),
                             rtol=1e-12, atol=1e-12)
