"""Rows whose Jacobian is one +-1 on a dof (friction loss of a dof, hinge and slide limits) in
the Newton Hessian (solver/problem.py `hessian`, `unit_plan`; constraint/layout.py
`unit_rows`): their D goes on the diagonal, the product J' D J runs over the other rows.
Held against the dense product and against MuJoCo 4.0."""

import jax
import jax.numpy as jnp
import numpy as np
from mujoco_compare import mujoco

import jaxmj
from jaxmj.constraint.layout import efc_layout, unit_rows
from jaxmj.solver import problem
from jaxmj.solver.problem import Cones, hessian, make_problem, unit_plan
from jaxmj.types import ConstraintType

# a limited arm of ten hinges with friction loss (the unit rows, first in MuJoCo's order),
# a ball joint and a slide with limits, and twelve spheres of condim 6 on the floor: J is
# beyond HESSIAN_LAST_AXIS_MAX entries, where the Hessian takes the unit rows apart
SPHERE = '<body pos="{x} {y} .1"><freejoint/><geom type="sphere" size=".1" condim="6"/></body>'


def arm(n):
  if n == 0:
    return ""
  return (f'<body pos=".1 0 0"><joint axis="0 1 0" range="-.1 .1" frictionloss=".2"/>'
          f'<geom type="capsule" fromto="0 0 0 .1 0 0" size=".02"/>{arm(n - 1)}</body>')


XML = f"""<mujoco>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    {"".join(SPHERE.format(x=0.5 * (i % 4), y=0.5 * (i // 4) - 1.5) for i in range(12))}
    <body pos="0 2 1">{arm(10)}</body>
    <body pos="1 2 1"><joint type="ball" range="0 .3"/><geom size=".05"/>
      <body pos="0 0 -.2"><joint type="slide" axis="0 0 1" range="-.05 .05"/><geom size=".05"/>
      </body></body>
  </worldbody>
</mujoco>"""


def test_unit_rows_are_the_rows_with_one_unit_entry():
  m = jaxmj.Model.from_xml_string(XML)
  d = jax.jit(jaxmj.forward)(m, jaxmj.make_data(m))
  rows, dofs = unit_rows(efc_layout(m, d.contact.dim), m.jnt_dofadr)
  assert len(rows) == 21  # ten friction-loss rows, ten hinge limits, the slide's limit
  J = np.asarray(d.efc_J)
  unit = np.zeros((len(rows), m.nv))
  unit[np.arange(len(rows)), dofs] = 1
  np.testing.assert_array_equal(np.abs(J[rows]), unit)
  # the ball's limit row (three entries) is not one of them
  limits = np.flatnonzero(np.asarray(d.efc_type) == ConstraintType.LIMIT_JOINT)
  assert len(limits) == 12 and np.isin(limits, rows).sum() == 11


def test_unit_plan_keeps_the_other_rows_one_slice():
  # rows 0-3 unit (two on dof 2), row 4 not, row 5 unit again, row 6 not, rows 7-8 unit
  u = unit_plan(np.array([0, 1, 2, 3, 5, 7, 8]), np.array([2, 0, 2, 1, 4, 3, 3]), 9, 5)
  np.testing.assert_array_equal(u.rows, [0, 1, 2, 3, 7, 8])  # row 5 stays in the product
  assert u.rest == slice(4, 7)
  # each dof's first, second ... unit row; 6 (len(rows)): none
  np.testing.assert_array_equal(u.diag, [[1, 3, 0, 4, 6], [6, 6, 2, 5, 6]])
  assert unit_plan(np.array([1]), np.array([0]), 3, 2) is None  # inside the others' range


def test_hessian_with_unit_rows_equals_the_dense_product():
  jax.config.update("jax_enable_x64", True)
  rng = np.random.default_rng(0)
  nefc, nv = 150, 70  # 10500 entries: beyond HESSIAN_LAST_AXIS_MAX
  assert nefc * nv > problem.HESSIAN_LAST_AXIS_MAX
  rows = np.r_[0:30, 140:150]
  dofs = rng.integers(0, nv, len(rows))
  J = rng.normal(size=(nefc, nv))
  J[rows] = 0
  J[rows, dofs] = rng.choice([-1.0, 1.0], len(rows))
  x = rng.normal(size=(nv, nv))
  M = x @ x.T + nv * np.eye(nv)
  Dq = np.where(rng.random(nefc) < 0.3, 0.0, rng.random(nefc))
  z = jnp.zeros(nv)
  cones = Cones(rows=np.zeros((0, 6), np.int32), dim=np.zeros(0, np.int32))

  def p(unit):
    return make_problem(jnp.asarray(M), z, z, jnp.asarray(J), jnp.ones(nefc), jnp.ones(nefc),
                        jnp.zeros(nefc), jnp.zeros(nefc), np.zeros(nefc, np.int32),
                        jnp.ones(nefc, bool), cones, None, None, unit)

  plan = unit_plan(rows, dofs, nefc, nv)
  assert len(plan.rows) == 40 and plan.rest == slice(30, 140)
  h = jax.jit(lambda q: hessian(p(plan), q, jnp.zeros((0, 6, 6))))(jnp.asarray(Dq))
  np.testing.assert_allclose(h, M + J.T @ (Dq[:, None] * J), rtol=1e-13, atol=1e-12)
  dense = jax.jit(lambda q: hessian(p(None), q, jnp.zeros((0, 6, 6))))(jnp.asarray(Dq))
  np.testing.assert_allclose(h, dense, rtol=1e-13, atol=1e-12)


def test_forward_matches_mujoco_with_unit_rows_taken_apart():
  jax.config.update("jax_enable_x64", True)
  mj = mujoco.MjModel.from_xml_string(XML)
  md = mujoco.MjData(mj)
  for i in range(12):  # every sphere pressed 1 mm into the floor, spinning
    md.qpos[7 * i + 2] = 0.099
  md.qpos[84:94] = np.linspace(-0.12, 0.12, 10)  # the arm's hinges at and past their limits
  md.qpos[98] = 0.06  # the slide past its upper limit
  md.qvel[:] = 0.3 * np.random.default_rng(1).normal(size=mj.nv)
  mujoco.mj_forward(mj, md)
  m = jaxmj.Model.from_xml_string(XML)
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(md.qpos), qvel=jnp.asarray(md.qvel))
  d = jax.jit(jaxmj.forward)(m, d)
  lay = efc_layout(m, d.contact.dim)
  plan = unit_plan(*unit_rows(lay, m.jnt_dofadr), lay.nefc, m.nv)
  assert len(plan.rows) == 20 and lay.nefc * m.nv > problem.HESSIAN_LAST_AXIS_MAX
  scale = np.max(np.abs(md.qacc))
  np.testing.assert_allclose(d.qacc, md.qacc, rtol=0, atol=1e-9 * scale)
  np.testing.assert_allclose(d.qfrc_constraint, md.qfrc_constraint, rtol=0,
                             atol=1e-9 * np.max(np.abs(md.qfrc_constraint)))
