"""The primal line search (jaxmj/solver/linesearch.py) in float32: it ends within a few loop trips
from starts near and far from the solution, and its step lands where float64's does to float32
precision. (Its float64 results are MuJoCo's: tests/test_solver.py and tests/test_island.py.)"""

import jax
import jax.numpy as jnp
import numpy as np

import jaxmj
from jaxmj.solver import linesearch, problem

XML = """
<mujoco>
  <worldbody>
    <geom type="plane" size="2 2 0.1"/>
    <body pos="0 0 0.099" euler="0 0 20"><freejoint/><geom type="box" size="0.1 0.08 0.1"/></body>
    <body pos="0.3 0 0.049"><freejoint/><geom type="sphere" size="0.05" condim="6"/></body>
  </worldbody>
</mujoco>
"""


def _searches(d, qacc0, search, dt):
  """Line searches from starts qacc0 (k, nv) along search (k, nv), in dtype dt: points (k, 4)
  and loop trips (k,)."""
  c = lambda x: jnp.asarray(x, dt)  # noqa: E731
  nv, nefc = d.qM.shape[0], d.efc_J.shape[0]
  cones = problem.Cones(rows=np.zeros((0, 6), np.int32), dim=np.zeros(0, np.int32))
  p = problem.make_problem(c(d.qM), c(d.qacc_smooth), c(d.qfrc_smooth), c(d.efc_J),
                           c(d.efc_D), c(d.efc_R), c(d.efc_aref), c(d.efc_frictionloss),
                           d.efc_type, d.efc_active, cones, None, None)
  isl = problem.make_islands(jnp.zeros(nv, jnp.int32), jnp.zeros(nefc, jnp.int32), 1,
                             p.cidx, dt)

  def one(q, s):
    ma, mv, jar, jv = p.M @ q, p.M @ s, p.J @ q - p.aref, p.J @ s
    pr = linesearch.prepare(p, isl, ma, s, mv, jar, jv)
    snorm = jnp.sqrt(jnp.sum(s * s))[None]
    gtol = 1e-10 * snorm * jnp.trace(p.M)  # tolerance * ls_tolerance * snorm / scale
    pt, trips = linesearch._linesearch(p, isl, pr, snorm, gtol, 50)
    return pt[0], trips[0]

  return jax.jit(jax.vmap(one))(c(qacc0), c(search))


def test_float32_search_ends_in_few_trips_and_matches_float64():
  m = jaxmj.Model.from_xml_string(XML)
  # compiled: op-by-op dispatch of the whole pipeline costs several times its compile
  d = jax.jit(jaxmj.forward, compiler_options={"xla_backend_optimization_level": 0})(
    m, jaxmj.make_data(m))
  assert int(np.sum(np.asarray(d.efc_active))) > 10
  qstar = np.asarray(d.qacc)
  rng = np.random.default_rng(0)
  # starts at distances 10 .. 1e-8 (relative to |qacc|) from the solution in random
  # directions, searching along perturbed steps back to it and past it (rows change state
  # along the line)
  k = 64
  size = np.max(np.abs(qstar)) * np.logspace(1, -8, k)
  u = rng.normal(size=(k, qstar.size))
  qacc0 = qstar + size[:, None] * u / np.linalg.norm(u, axis=1, keepdims=True)
  search = 2 * (qstar - qacc0) * (1 + 0.5 * rng.normal(size=qacc0.shape))
  pt32, trips32 = _searches(d, qacc0, search, jnp.float32)
  pt64, trips64 = _searches(d, qacc0, search, jnp.float64)
  # MuJoCo's gtol is far below float32's roundoff: a search that followed roundoff instead
  # would run to its 50-evaluation budget
  assert int(np.max(trips32)) <= 3, np.asarray(trips32)
  assert int(np.max(trips64)) <= 5
  step32 = np.asarray(pt32[:, 0], np.float64)[:, None] * search
  step64 = np.asarray(pt64[:, 0])[:, None] * search
  scale = np.max(np.abs(qstar))
  np.testing.assert_allclose(step32, step64, rtol=0, atol=2e-5 * scale)
