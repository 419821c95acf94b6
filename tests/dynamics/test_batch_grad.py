"""Batching (vmap over Data and over Model leaves), gradients against finite differences,
the divergence guard (warning counters, autoreset) and keyframe resets.

Compilation dominates the run time, so the jitted functions are module-level and take the
Model and Data as arguments: each model structure compiles once and every test reuses it
(a changed leaf such as gravity, qpos or body_mass is a new value, not a new program).
They are compiled with XLA's backend (LLVM) optimization off, which halves compile time
and changes nothing these tests look at; every comparison of jitted results is between
programs compiled alike.
"""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import jit_fast

import jaxmj
from jaxmj import math
from jaxmj.types import JointType

NSTEP = 50  # rollout length of the gradient tests
FD_EPS = 1e-6  # central finite-difference step (float64)
FD_RTOL = 1e-5


def load(name: str) -> jaxmj.Model:
  return jaxmj.Model.from_xml_path(os.path.join(MODELS, f"{name}.xml"))


def perturbed_state(m: jaxmj.Model, rng: np.random.Generator, vel_scale: float = 1.0):
  """Data with qpos moved on the joint manifold (random unit quaternions) and random qvel."""
  qpos = np.array(m.qpos0)
  for j, t in enumerate(m.jnt_type):
    a = m.jnt_qposadr[j]
    if t == JointType.FREE:
      qpos[a:a + 3] += rng.normal(scale=0.3, size=3)
      q = rng.normal(size=4)
      qpos[a + 3:a + 7] = q / np.linalg.norm(q)
    elif t == JointType.BALL:
      q = rng.normal(size=4)
      qpos[a:a + 4] = q / np.linalg.norm(q)
    else:
      qpos[a] += rng.uniform(-1.0, 1.0)
  qvel = vel_scale * rng.normal(size=m.nv)
  return jaxmj.make_data(m).replace(qpos=jnp.asarray(qpos), qvel=jnp.asarray(qvel))


def with_gravity(m: jaxmj.Model, g) -> jaxmj.Model:
  return m.replace(opt=m.opt.replace(gravity=jnp.asarray(g, m.opt.gravity.dtype)))


def stack(items):
  return jax.tree.map(lambda *xs: jnp.stack(xs), *items)


def model_axes(m: jaxmj.Model, field: str):
  """vmap in_axes for a Model: 0 on one leaf (`body_mass` or `gravity`), None elsewhere."""
  ax = jax.tree.map(lambda _: None, m)
  if field == "gravity":
    return ax.replace(opt=ax.opt.replace(gravity=0))
  return ax.replace(**{field: 0})


jit = jit_fast
_step = jit(jaxmj.step)
_vstep = jit(jax.vmap(jaxmj.step, in_axes=(None, 0)))


def run(step_fn, m, d, n):
  for _ in range(n):
    d = step_fn(m, d)
  return d


# ------------------------------------------------------------------ vmap over Data


@pytest.mark.parametrize("name", ["double_pendulum", "free_body"])
def test_vmap_over_data_matches_single_worlds(name):
  m = load(name)
  rng = np.random.default_rng(0)
  worlds = [perturbed_state(m, rng) for _ in range(8)]
  batch = run(_vstep, m, stack(worlds), 20)
  for i, d in enumerate(worlds):
    alone = run(_step, m, d, 20)
    np.testing.assert_allclose(batch.qpos[i], alone.qpos, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(batch.qvel[i], alone.qvel, rtol=1e-12, atol=1e-12)
  assert not np.any(np.asarray(batch.warning))
  # The worlds really differ, so a broadcast mix-up could not pass.
  assert np.ptp(np.asarray(batch.qpos), axis=0).max() > 1e-2


# ------------------------------------------------------------------ vmap over Model leaves


@pytest.mark.parametrize("field", ["body_mass", "gravity"])
def test_vmap_over_model_leaf_matches_single_worlds(field):
  m = load("double_pendulum")
  rng = np.random.default_rng(1)
  nworld, nstep = 4, 10
  if field == "body_mass":
    values = m.body_mass[None] * jnp.asarray(rng.uniform(0.3, 3.0, size=(nworld, m.nbody)))
    set_value = lambda v: m.replace(body_mass=v)
  else:
    values = jnp.asarray(rng.normal(scale=10.0, size=(nworld, 3)))
    set_value = lambda v: with_gravity(m, v)
  # An applied force as well as gravity, so each world's mass or gravity shows in the motion.
  d0 = perturbed_state(m, rng).replace(qfrc_applied=jnp.asarray(rng.normal(size=m.nv)))
  vstep = jit(jax.vmap(jaxmj.step, in_axes=(model_axes(m, field), 0)))
  batch = run(vstep, set_value(values), stack([d0] * nworld), nstep)
  for i in range(nworld):
    alone = run(_step, set_value(values[i]), d0, nstep)
    np.testing.assert_allclose(batch.qpos[i], alone.qpos, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(batch.qvel[i], alone.qvel, rtol=1e-12, atol=1e-12)
  assert np.ptp(np.asarray(batch.qvel), axis=0).max() > 1e-3


def test_model_axes_tree_marks_one_leaf():
  m = load("double_pendulum")
  ax = model_axes(m, "body_mass")
  assert jax.tree.leaves(ax) == [0] and ax.body_mass == 0
  ax = model_axes(m, "gravity")
  assert jax.tree.leaves(ax) == [0] and ax.opt.gravity == 0


# ------------------------------------------------------------------ gradients


def _loss(m, d, qvel, body_mass, proj):
  """sum(qpos^2) + proj . qpos after NSTEP steps (the projection sees the quaternions too)."""
  final, _ = jaxmj.rollout(m.replace(body_mass=body_mass), d.replace(qvel=qvel), nstep=NSTEP)
  return jnp.sum(final.qpos**2) + proj @ final.qpos


_loss_and_grad = jit(jax.value_and_grad(_loss, argnums=(2, 3)))


def fd_gradient(f, x, eps=FD_EPS):
  """Central finite-difference gradient of scalar f at x, step eps * max(1, |x_i|)."""
  x = np.asarray(x, np.float64)
  g = np.zeros_like(x)
  for i in range(x.size):
    e = np.zeros_like(x)
    e.flat[i] = h = eps * max(1.0, abs(x.flat[i]))
    g.flat[i] = (float(f(x + e)) - float(f(x - e))) / (2 * h)
  return g


def check_rollout_gradients(m, d, proj):
  """jax.grad of the rollout loss w.r.t. qvel and body_mass against central differences."""
  qvel, mass = d.qvel, m.body_mass
  _, (g_qvel, g_mass) = _loss_and_grad(m, d, qvel, mass, proj)
  g_qvel, g_mass = np.asarray(g_qvel), np.asarray(g_mass)
  assert np.all(np.isfinite(g_qvel)) and np.all(np.isfinite(g_mass))
  fd_qvel = fd_gradient(lambda v: _loss_and_grad(m, d, v, mass, proj)[0], qvel)
  fd_mass = fd_gradient(lambda b: _loss_and_grad(m, d, qvel, b, proj)[0], mass)
  for g, fd in ((g_qvel, fd_qvel), (g_mass, fd_mass)):
    scale = np.max(np.abs(fd))
    np.testing.assert_allclose(g, fd, rtol=FD_RTOL, atol=FD_RTOL * scale)
  return g_qvel, g_mass


# Models with hinges only, a free joint (quaternion integration) and a ball joint.
GRAD_MODELS = ["double_pendulum", "free_body", "arm"]


# the arm's (ball joint) rollout gradient is the slowest to compile: --runslow
@pytest.mark.parametrize("name", GRAD_MODELS[:2] + [pytest.param("arm", marks=pytest.mark.slow)])
def test_rollout_gradient_matches_finite_differences(name):
  m = load(name)
  rng = np.random.default_rng(2)
  d = perturbed_state(m, rng)
  # Applied forces make every body's mass matter (free fall alone does not depend on it).
  d = d.replace(
    qfrc_applied=jnp.asarray(rng.normal(size=m.nv)),
    xfrc_applied=jnp.asarray(rng.normal(scale=5.0, size=(m.nbody, 6))),
  )
  proj = jnp.asarray(rng.normal(size=m.nq))
  g_qvel, g_mass = check_rollout_gradients(m, d, proj)
  assert np.max(np.abs(g_qvel)) > 1e-3
  assert np.max(np.abs(g_mass[1:])) > 1e-6


_forward_jvp = jit(
  lambda m, d, t: jax.jvp(lambda q: jaxmj.forward(m, d.replace(qpos=q)).qacc, (d.qpos,), (t,))
)


@pytest.mark.parametrize("name", GRAD_MODELS)
def test_forward_jvp_matches_finite_differences(name):
  m = load(name)
  rng = np.random.default_rng(3)
  d = perturbed_state(m, rng).replace(qfrc_applied=jnp.asarray(rng.normal(size=m.nv)))
  for _ in range(3):
    t = jnp.asarray(rng.normal(size=m.nq))
    _, tangent = _forward_jvp(m, d, t)
    plus, _ = _forward_jvp(m, d.replace(qpos=d.qpos + FD_EPS * t), t)
    minus, _ = _forward_jvp(m, d.replace(qpos=d.qpos - FD_EPS * t), t)
    fd = (np.asarray(plus) - np.asarray(minus)) / (2 * FD_EPS)
    np.testing.assert_allclose(tangent, fd, rtol=FD_RTOL, atol=FD_RTOL * np.max(np.abs(fd)))


# ------------------------------------------------------------------ gradients at the guards


def test_quat_integrate_derivative_at_zero_omega():
  dt = 0.01
  rng = np.random.default_rng(4)
  q = rng.normal(size=4)
  q = jnp.asarray(q / np.linalg.norm(q))
  f = jax.jit(lambda w: math.quat_integrate(q, w, dt))
  zero = jnp.zeros(3)
  rev, fwd = jax.jit(jax.jacrev(f))(zero), jax.jit(jax.jacfwd(f))(zero)
  # d/dw [q * (1, w dt/2)] = q * (0, e_i dt/2); normalization does not change it at w = 0.
  expected = np.stack([np.asarray(math.quat_mul(q, jnp.asarray(np.r_[0.0, e]))) * dt / 2
                       for e in np.eye(3)], axis=-1)
  np.testing.assert_allclose(rev, expected, atol=1e-15)
  np.testing.assert_allclose(fwd, expected, atol=1e-15)
  # Finite differences land in the large-|w| branch: both branches agree.
  fd = np.stack([(f(FD_EPS * e) - f(-FD_EPS * e)) / (2 * FD_EPS) for e in jnp.eye(3)], -1)
  np.testing.assert_allclose(rev, fd, rtol=0, atol=1e-9)
  # Second derivatives too (e.g. Hessian-based fitting through a rollout).
  assert np.all(np.isfinite(jax.jit(jax.hessian(lambda w: f(w)[0]))(zero)))


def test_quaternion_helpers_have_finite_gradients_at_guards():
  ident = jnp.array([1.0, 0.0, 0.0, 0.0])
  # quat_sub at the identity: d/dq vec(q) = 2 on the vector part (w = +1), -2 for q = -1.
  for sign in (1.0, -1.0):
    jac = jax.jit(jax.jacrev(lambda q: math.quat_sub(math.normalize_quat(q), ident)))(
      sign * ident)
    expected = sign * 2.0 * np.eye(4)[1:]
    np.testing.assert_allclose(jac, expected, atol=1e-12)
  # normalize_quat of a zero quaternion returns the identity, with a finite gradient.
  jac = jax.jit(jax.jacrev(math.normalize_quat))(jnp.zeros(4))
  assert np.all(np.isfinite(jac))
  np.testing.assert_allclose(math.normalize_quat(jnp.zeros(4)), ident)
  # safe_norm at zero.
  assert np.all(np.isfinite(jax.jit(jax.grad(math.safe_norm))(jnp.zeros(3))))


@pytest.mark.parametrize("name", ["free_body", "arm"])
def test_rollout_gradient_at_rest_and_identity_quaternions(name):
  """A world exactly at rest: omega = 0 in every quat_integrate, quaternions the identity.

  Zero gravity, zero qvel, no applied force and springs at rest length keep every step
  exactly at rest, so the gradient goes through the omega = 0 guard 50 times.
  """
  m = with_gravity(load(name), [0.0, 0.0, 0.0])
  qpos = np.array(m.qpos_spring)
  for j, t in enumerate(m.jnt_type):
    if t in (JointType.FREE, JointType.BALL):
      a = m.jnt_qposadr[j] + (3 if t == JointType.FREE else 0)
      qpos[a:a + 4] = [1.0, 0.0, 0.0, 0.0]
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(qpos))
  proj = jnp.asarray(np.random.default_rng(5).normal(size=m.nq))
  # Really at rest: the loss of the final qpos is the loss of the initial one.
  loss, _ = _loss_and_grad(m, d, d.qvel, m.body_mass, proj)
  np.testing.assert_allclose(loss, jnp.sum(d.qpos**2) + proj @ d.qpos, rtol=1e-14)
  g_qvel, _ = check_rollout_gradients(m, d, proj)
  assert np.max(np.abs(g_qvel)) > 1e-3


def test_rollout_gradient_from_zero_velocity_under_gravity():
  """Zero initial qvel at qpos0 (identity ball quaternion) for the arm under gravity."""
  m = load("arm")
  d = jaxmj.make_data(m)
  proj = jnp.asarray(np.random.default_rng(6).normal(size=m.nq))
  check_rollout_gradients(m, d, proj)


# ------------------------------------------------------------------ divergence


def _bad_states(m):
  d = jaxmj.make_data(m)
  return {
    "huge_qvel": (d.replace(qvel=jnp.full(m.nv, 1e12)), jaxmj.Warning.BADQVEL),
    "nan_qpos": (d.replace(qpos=d.qpos.at[0].set(jnp.nan)), jaxmj.Warning.BADQPOS),
  }


@pytest.mark.parametrize("case", ["huge_qvel", "nan_qpos"])
def test_divergence_is_flagged_and_reset(case):
  m = load("double_pendulum")
  d, code = _bad_states(m)[case]
  out = _step(m, d)
  warning = np.asarray(out.warning)
  assert warning[code] == 1 and warning.sum() == 1  # mj_resetData clears the others
  # Reset to the model defaults before the step, which then runs from there (as mj_step).
  fresh = _step(m, jaxmj.make_data(m))
  for f in ("time", "qpos", "qvel", "qacc"):
    np.testing.assert_array_equal(getattr(out, f), getattr(fresh, f), err_msg=f)
  # The reset world steps on normally and keeps its count.
  again = _step(m, out)
  assert np.asarray(again.warning)[code] == 1
  assert np.all(np.isfinite(np.asarray(again.qpos)))


def test_one_diverged_world_does_not_spread_in_a_batch():
  m = load("double_pendulum")
  rng = np.random.default_rng(7)
  worlds = [perturbed_state(m, rng) for _ in range(64)]
  bad = 5
  worlds[bad] = worlds[bad].replace(qpos=worlds[bad].qpos.at[1].set(jnp.nan))
  batch = run(_vstep, m, stack(worlds), 5)
  for i, d in enumerate(worlds):
    if i == bad:
      continue
    alone = run(_step, m, d, 5)
    np.testing.assert_allclose(batch.qpos[i], alone.qpos, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(batch.qvel[i], alone.qvel, rtol=1e-12, atol=1e-12)
    assert not np.any(np.asarray(batch.warning[i]))
  assert np.asarray(batch.warning[bad])[jaxmj.Warning.BADQPOS] == 1
  reset_then_stepped = run(_step, m, jaxmj.make_data(m), 5)  # reset before its first step
  np.testing.assert_allclose(batch.qpos[bad], reset_then_stepped.qpos, rtol=1e-12, atol=1e-12)
  assert np.all(np.isfinite(np.asarray(batch.qpos))) and np.all(np.isfinite(batch.qvel))


# ------------------------------------------------------------------ keyframes


@pytest.mark.parametrize("name, key", [("humanoid", "stand"), ("humanoid", "crouch"),
                                       ("free_body", "throw"), ("free_body", 1),
                                       ("double_pendulum", 0)])
def test_reset_to_keyframe(name, key):
  m = load(name)
  idx = key if isinstance(key, int) else jaxmj.name2id(m, "key", key)
  assert idx >= 0
  for d in (jaxmj.reset(m, key), jax.jit(lambda m: jaxmj.reset(m, key))(m)):
    np.testing.assert_array_equal(d.qpos, m.key_qpos[idx])
    np.testing.assert_array_equal(d.qvel, m.key_qvel[idx])
    np.testing.assert_array_equal(d.act, m.key_act[idx])
    np.testing.assert_array_equal(d.ctrl, m.key_ctrl[idx])
    np.testing.assert_array_equal(d.time, m.key_time[idx])
    np.testing.assert_array_equal(d.mocap_pos.reshape(-1), m.key_mpos[idx])
    np.testing.assert_array_equal(d.mocap_quat.reshape(-1), m.key_mquat[idx])
  # The name and the index give the same Data.
  by_index = jaxmj.reset(m, idx)
  for a, b in zip(jax.tree.leaves(by_index), jax.tree.leaves(jaxmj.reset(m, key))):
    np.testing.assert_array_equal(a, b)


def test_reset_defaults_and_errors():
  m = load("free_body")
  d = jax.jit(jaxmj.reset)(m)
  np.testing.assert_array_equal(d.qpos, m.qpos0)
  np.testing.assert_array_equal(d.qvel, np.zeros(m.nv))
  with pytest.raises(KeyError):
    jaxmj.reset(m, "no_such_key")
  with pytest.raises(IndexError):
    jaxmj.reset(m, m.nkey)


def test_reset_under_vmap_over_models():
  """Keyframe values come from Model leaves, so a batch of models resets per world."""
  m = load("double_pendulum")
  key_qpos = m.key_qpos[None] + jnp.arange(3.0)[:, None, None]
  batched = m.replace(key_qpos=key_qpos)
  ax = jax.tree.map(lambda _: None, m).replace(key_qpos=0)
  d = jax.jit(jax.vmap(lambda m: jaxmj.reset(m, "chaotic"), in_axes=(ax,)))(batched)
  np.testing.assert_array_equal(d.qpos, key_qpos[:, 0])
