"""The utility API (jaxmj.support) against MuJoCo's mj_jac*, mj_applyFT, mj_angmomMat,
mj_subtreeVel, mj_objectVelocity, mj_local2Global, mj_differentiatePos, mj_normalizeQuat,
mj_mulM2, mj_solveM2, mj_addM, and against jax.jacfwd of the kinematics (mj_contactForce:
tests/constraint)."""

import os

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from conftest import MODELS  # noqa: E402
from mujoco_compare import FAST, load_both, random_state, to_jaxmj  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.smooth import com, kinematics, mass, support  # noqa: E402
from jaxmj.types import ObjType, SameFrame  # noqa: E402

TOL = 1e-9
CASES = ["humanoid.xml", "arm.xml", "chain.xml"]


def _kin(m, d):
  d = kinematics.kinematics(m, d)
  d = com.com_pos(m, d)
  return com.com_vel(m, d)


_KIN = jax.jit(_kin)


@pytest.fixture(scope="module", params=CASES)
def case(request):
  m, mj = load_both(os.path.join(MODELS, request.param))
  md = random_state(m, mj, seed=3)
  mujoco.mj_forward(mj, md)
  d = _KIN(m, to_jaxmj(m, md))
  return m, mj, d, md


def _mj_jac(fn, mj, md, i):
  jacp, jacr = np.zeros((3, mj.nv)), np.zeros((3, mj.nv))
  fn(mj, md, jacp, jacr, i)
  return jacp, jacr


def test_jacobians_of_bodies_geoms_sites_equal_mujoco(case):
  m, mj, d, md = case
  for b in range(m.nbody):
    for ours, fn in ((support.jac_body, mujoco.mj_jacBody),
                     (support.jac_body_com, mujoco.mj_jacBodyCom)):
      np.testing.assert_allclose(ours(m, d, b), _mj_jac(fn, mj, md, b), atol=TOL)
    jacp = np.zeros((3, mj.nv))
    mujoco.mj_jacSubtreeCom(mj, md, jacp, b)
    np.testing.assert_allclose(support.jac_subtree_com(m, d, b), jacp, atol=TOL)
  for g in range(m.ngeom):
    np.testing.assert_allclose(support.jac_geom(m, d, g), _mj_jac(mujoco.mj_jacGeom, mj, md, g),
                               atol=TOL)
  for s in range(m.nsite):
    np.testing.assert_allclose(support.jac_site(m, d, s), _mj_jac(mujoco.mj_jacSite, mj, md, s),
                               atol=TOL)


def test_jac_at_a_point_and_its_time_derivative_equal_mujoco(case):
  m, mj, d, md = case
  rng = np.random.default_rng(0)
  for b in range(1, m.nbody):
    point = md.xpos[b] + rng.normal(size=3)
    jacp, jacr = np.zeros((3, mj.nv)), np.zeros((3, mj.nv))
    mujoco.mj_jac(mj, md, jacp, jacr, point, b)
    np.testing.assert_allclose(support.jac(m, d, jnp.asarray(point), b), (jacp, jacr), atol=TOL)
    mujoco.mj_jacDot(mj, md, jacp, jacr, point, b)
    np.testing.assert_allclose(support.jac_dot(m, d, jnp.asarray(point), b), (jacp, jacr),
                               atol=TOL)


def test_apply_ft_equals_mj_applyFT(case):
  """jaxmj.apply_ft (one trace for every body id) against mj_applyFT into a zero target; its
  generalized force does the virtual work of the force and torque."""
  m, mj, d, md = case
  rng = np.random.default_rng(1)
  for b in range(m.nbody):
    force, torque = rng.normal(size=3), rng.normal(size=3)
    point = md.xpos[b] + rng.normal(size=3)
    want = np.zeros(mj.nv)
    mujoco.mj_applyFT(mj, md, force, torque, point, b, want)
    ours = jaxmj.apply_ft(m, d, force, torque, point, b)
    np.testing.assert_allclose(ours, want, atol=TOL)
    jacp, jacr = support.jac(m, d, jnp.asarray(point), b)
    qvel = rng.normal(size=mj.nv)
    np.testing.assert_allclose(ours @ qvel, force @ (jacp @ qvel) + torque @ (jacr @ qvel),
                               atol=TOL)


def test_angmom_mat_and_jac_point_axis_equal_mujoco(case):
  """jaxmj.angmom_mat (every body's subtree) and jac_point_axis against mj_angmomMat and
  mj_jacPointAxis."""
  m, mj, d, md = case
  rng = np.random.default_rng(2)
  for b in range(m.nbody):
    want = np.zeros((3, mj.nv))
    mujoco.mj_angmomMat(mj, md, want, b)
    np.testing.assert_allclose(jaxmj.angmom_mat(m, d, b), want,
                               atol=TOL * max(1.0, np.abs(want).max()))
    point, axis = md.xpos[b] + rng.normal(size=3), rng.normal(size=3)
    jacp, jaca = np.zeros((3, mj.nv)), np.zeros((3, mj.nv))
    mujoco.mj_jacPointAxis(mj, md, jacp, jaca, point, axis, b)
    np.testing.assert_allclose(jaxmj.jac_point_axis(m, d, point, axis, b), (jacp, jaca),
                               atol=TOL)


def test_subtree_vel_equals_mj_subtreeVel(case):
  m, mj, d, md = case
  mujoco.mj_subtreeVel(mj, md)
  linvel, angmom = jaxmj.subtree_vel(m, d)
  np.testing.assert_allclose(linvel, md.subtree_linvel, atol=TOL)
  np.testing.assert_allclose(angmom, md.subtree_angmom, atol=TOL)


def test_jacobian_equals_jacfwd_of_kinematics(case):
  """d(site position)/d(qpos) along the manifold: qvel -> integrate_pos -> site_xpos."""
  m, _, d, _ = case
  site_or_body = m.nsite > 0

  def position(v):
    qpos = support.integrate_pos(m, d.qpos, v, 1.0)
    k = kinematics.kinematics(m, d.replace(qpos=qpos))
    return k.site_xpos[0] if site_or_body else k.xpos[-1]

  jac_fd = jax.jit(jax.jacfwd(position))(jnp.zeros(m.nv))
  ours = support.jac_site(m, d, 0)[0] if site_or_body else support.jac_body(m, d, m.nbody - 1)[0]
  np.testing.assert_allclose(ours, jac_fd, atol=1e-9)


def test_jac_dot_equals_time_derivative_of_jac(case):
  """jac_dot = d/dt jac along qvel: a central difference of jac over +-h of integration."""
  m, _, d, _ = case
  b, h = m.nbody - 1, 1e-6

  def jac_at(t):
    dd = _KIN(m, d.replace(qpos=support.integrate_pos(m, d.qpos, d.qvel, t)))
    return np.asarray(support.jac_body(m, dd, b)[0])

  fd = (jac_at(h) - jac_at(-h)) / (2 * h)
  # jac_dot of the body origin moving with the body: the point is re-evaluated at each t.
  np.testing.assert_allclose(support.jac_dot(m, d, d.xpos[b], b)[0], fd, atol=1e-5)


@pytest.mark.parametrize("local", [False, True])
def test_object_velocity_equals_mujoco(case, local):
  m, mj, d, md = case
  res = np.zeros(6)
  objects = [(ObjType.BODY, m.nbody), (ObjType.XBODY, m.nbody), (ObjType.GEOM, m.ngeom),
             (ObjType.SITE, m.nsite)]
  for t, n in objects:
    for i in range(n):
      mujoco.mj_objectVelocity(mj, md, int(t), i, res, int(local))
      np.testing.assert_allclose(support.object_velocity(m, d, t, i, local), res, atol=TOL,
                                 err_msg=f"{t.name} {i}")


def test_object_velocity_of_traced_id_under_vmap(case):
  m, _, d, _ = case
  ids = jnp.arange(m.nbody)
  batched = jax.vmap(lambda i: support.object_velocity(m, d, "xbody", i))(ids)
  for i in range(m.nbody):
    np.testing.assert_allclose(batched[i], support.object_velocity(m, d, "xbody", i), atol=1e-15)


def test_public_jacobians_trace_once_for_every_id_and_take_traced_ids(case, monkeypatch):
  from jaxmj.smooth import jac as jac_lib

  m, mj, d, md = case
  traces = []
  point_jacobians = jac_lib.point_jacobians
  monkeypatch.setattr(jac_lib, "point_jacobians",
                      lambda *a: traces.append(1) or point_jacobians(*a))
  b = m.nbody - 1
  jax.clear_caches()  # no trace of an earlier test serves this model
  try:
    for i in (b, np.int64(b), np.array(b), 0):  # one trace: the id is traced
      np.testing.assert_allclose(jaxmj.jac_body(m, d, i),
                                 _mj_jac(mujoco.mj_jacBody, mj, md, int(i)), atol=TOL)
    assert len(traces) == 1
    batched = jax.vmap(lambda i: jnp.stack(jaxmj.jac_body(m, d, i)))(jnp.arange(m.nbody))
  finally:
    jax.clear_caches()  # nor does the counting trace serve later tests
  for i in range(m.nbody):
    np.testing.assert_allclose(batched[i], _mj_jac(mujoco.mj_jacBody, mj, md, i), atol=TOL)
  for bad in (m.nbody, -1):  # a traced id would be clamped: a host id is checked
    with pytest.raises(IndexError, match=f"jac_body: body {bad} is out of range"):
      jaxmj.jac_body(m, d, bad)
  with pytest.raises(IndexError, match="object_velocity: objid 99 is out of range"):
    jaxmj.object_velocity(m, d, "site", 99)


@pytest.mark.parametrize("sameframe", list(SameFrame))
def test_local2global_equals_mujoco(case, sameframe):
  m, _, d, md = case
  rng = np.random.default_rng(1)
  pos, quat = rng.normal(size=3), rng.normal(size=4)
  quat /= np.linalg.norm(quat)
  for b in range(m.nbody):
    xpos, xmat = np.zeros(3), np.zeros(9)
    mujoco.mj_local2Global(md, xpos, xmat, pos, quat, b, int(sameframe))
    ours = support.local2global(d, jnp.asarray(pos), jnp.asarray(quat), b, sameframe)
    np.testing.assert_allclose(ours[0], xpos, atol=TOL)
    np.testing.assert_allclose(ours[1], xmat.reshape(3, 3), atol=TOL)


def test_differentiate_pos_equals_mujoco_and_inverts_integrate_pos(case):
  m, mj, _, _ = case
  rng = np.random.default_rng(2)
  d1, d2 = random_state(m, mj, seed=5), random_state(m, mj, seed=6)
  dt = 0.37
  qvel = np.zeros(mj.nv)
  mujoco.mj_differentiatePos(mj, qvel, dt, d1.qpos, d2.qpos)
  ours = support.differentiate_pos(m, dt, jnp.asarray(d1.qpos), jnp.asarray(d2.qpos))
  np.testing.assert_allclose(ours, qvel, atol=TOL)
  back = support.integrate_pos(m, jnp.asarray(d1.qpos), ours, dt)
  # quaternions are equal up to sign on the manifold
  np.testing.assert_allclose(support.differentiate_pos(m, 1.0, back, jnp.asarray(d2.qpos)),
                             np.zeros(mj.nv), atol=1e-9)
  del rng


def test_normalize_quat_equals_mujoco(case):
  m, mj, _, md = case
  qpos = md.qpos * 1.7
  ref = qpos.copy()
  mujoco.mj_normalizeQuat(mj, ref)
  np.testing.assert_allclose(support.normalize_quat(m, jnp.asarray(qpos)), ref, atol=1e-12)


def test_mass_matrix_helpers_equal_mujoco(case):
  m, mj, _, md = case
  d = mass.factor_m(m, mass.crb(m, _KIN(m, to_jaxmj(m, md))))
  full = np.zeros((mj.nv, mj.nv))
  mujoco.mj_fullM(mj, md, full)
  np.testing.assert_allclose(support.full_m(m, d), full, atol=TOL)
  vec = np.random.default_rng(4).normal(size=mj.nv)
  res = np.zeros(mj.nv)
  mujoco.mj_mulM(mj, md, res, vec)
  np.testing.assert_allclose(support.mul_m(m, d, jnp.asarray(vec)), res, atol=TOL)
  x = np.zeros((1, mj.nv))
  mujoco.mj_solveM(mj, md, x, vec[None])
  np.testing.assert_allclose(support.solve_m(m, d, jnp.asarray(vec)), x[0], atol=1e-8)


def test_inertia_square_root_and_add_m_equal_mujoco(case):
  """mj_mulM2, mj_solveM2 (MuJoCo's sqrtInvD and another, several vectors) and mj_addM
  (dense: the lower triangle only), through the public jitted functions; and the identities
  that make them square roots: |mulM2 x|^2 = x'Mx, |solveM2 y|^2 = y'M^-1 y."""
  m, mj, _, md = case
  d = mass.factor_m(m, mass.crb(m, _KIN(m, to_jaxmj(m, md))))
  rng = np.random.default_rng(5)
  vec = rng.normal(size=mj.nv)
  res = np.zeros(mj.nv)
  mujoco.mj_mulM2(mj, md, res, vec)
  ours = np.asarray(jaxmj.mul_m2(m, d, jnp.asarray(vec)))
  np.testing.assert_allclose(ours, res, atol=TOL)
  assert np.isclose(ours @ ours, vec @ np.asarray(d.qM) @ vec, rtol=1e-12)
  ys = rng.normal(size=(3, mj.nv))
  for sqrt_inv_d in (np.sqrt(md.qLDiagInv), rng.uniform(0.5, 2, mj.nv)):
    x = np.zeros((3, mj.nv))
    mujoco.mj_solveM2(mj, md, x, ys, sqrt_inv_d)
    np.testing.assert_allclose(jaxmj.solve_m2(m, d, ys, jnp.asarray(sqrt_inv_d)), x,
                               atol=TOL, rtol=1e-10)
  one = np.asarray(jaxmj.solve_m2(m, d, ys[0]))
  assert one.shape == (mj.nv,)
  assert np.isclose(one @ one, ys[0] @ np.linalg.solve(np.asarray(d.qM), ys[0]), rtol=1e-10)
  # mj_addM: the binding takes only a destination in M's own sparse pattern (nM entries);
  # placed densely, its sum is dst plus M's stored (lower) triangle, the dense case's result
  dst = np.zeros((mj.nv, mj.nv))
  rows = np.repeat(np.arange(mj.nv), mj.M_rownnz)
  dst[rows, mj.M_colind] = rng.normal(size=mj.nM)
  sparse = dst[rows, mj.M_colind].copy()
  mujoco.mj_addM(mj, md, sparse, mj.M_rownnz.copy(), mj.M_rowadr.copy(), mj.M_colind.copy())
  ref = dst.copy()
  ref[rows, mj.M_colind] = sparse
  np.testing.assert_allclose(jaxmj.add_m(m, d, jnp.asarray(dst)), ref, atol=TOL)


@pytest.mark.parametrize("local", [False, True])
def test_object_acceleration_equals_mujoco(local):
  """After forward and rne_post_constraint (mj_rnePostConstraint), on a model with a free
  body, a ball joint and hinges."""
  from jaxmj.constraint import extforce

  m, mj = load_both(os.path.join(MODELS, "arm.xml"))
  md = random_state(m, mj, seed=8)
  mujoco.mj_forward(mj, md)
  mujoco.mj_rnePostConstraint(mj, md)
  fwd = jax.jit(lambda dd: extforce.rne_post_constraint(m, jaxmj.forward(m, dd)),
                compiler_options=FAST)
  d = fwd(to_jaxmj(m, md))
  res = np.zeros(6)
  for t, n in ((ObjType.BODY, m.nbody), (ObjType.XBODY, m.nbody), (ObjType.SITE, m.nsite)):
    for i in range(n):
      mujoco.mj_objectAcceleration(mj, md, int(t), i, res, int(local))
      np.testing.assert_allclose(support.object_acceleration(m, d, t, i, local), res,
                                 atol=1e-8, err_msg=f"{t.name} {i}")
