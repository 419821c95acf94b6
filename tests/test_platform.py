"""The platform's forms of a pass (jaxmj/platform.py): the CPU's are traced here, and the
GPU's, traced on demand (`platform.TRACE_FOR`), step like MuJoCo on the CPU too.

Since the choice is made at trace time, the CPU suite no longer traces the GPU's forms as a
side effect (`lax.platform_dependent` traced every form): these tests trace and run them.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mujoco_compare import FAST, load_both, mujoco

import jaxmj
from jaxmj import linalg, platform

# A hinge chain ending in a box (kinematics' and mass' level passes), a box on a box
# (box-box clipping, `short_scan`) and a capsule on the same table (capsule-box's candidate
# search, `short_scan`), all in contact from the first step.
XML = """<mujoco model="platform_forms"><option timestep="0.005"/><worldbody>
  <geom name="floor" type="plane" size="3 3 .1"/>
  <geom name="table" type="box" size=".4 .4 .05" pos="1 0 .05"/>
  <body pos="0 0 .35"><joint axis="0 1 0" damping=".1"/>
    <geom type="capsule" fromto="0 0 0 .2 0 0" size=".04"/>
    <body pos=".2 0 0"><joint axis="0 1 0"/><geom type="capsule" fromto="0 0 0 .2 0 0" size=".04"/>
      <body pos=".2 0 0"><joint axis="1 0 0"/>
        <geom type="box" size=".05 .05 .05" pos=".05 0 0"/></body></body></body>
  <body pos=".9 -.2 .148" euler="0 0 20"><freejoint/><geom type="box" size=".05 .06 .05"/></body>
  <body pos="1.1 .15 .128" euler="0 90 10"><freejoint/><geom type="capsule" size=".03 .1"/></body>
</worldbody></mujoco>"""

# A cylinder on a box: the GJK/EPA search (EPA's visibility rounds); ~6 s to trace
CONVEX = """<mujoco><worldbody><geom type="box" size=".4 .4 .05" pos="1 0 .05"/>
  <body pos="1.1 -.15 .199"><freejoint/><geom type="cylinder" size=".05 .1"/></body>
</worldbody></mujoco>"""


@pytest.fixture
def gpu_forms():
  """Traces take the GPU's forms for the test; JAX's caches are cleared on both sides, so
  that no trace of one form serves the other."""
  jax.clear_caches()
  platform.TRACE_FOR = "gpu"
  try:
    yield
  finally:
    platform.TRACE_FOR = None
    jax.clear_caches()


def _pick():
  return platform.by_platform(1, cpu=lambda x: ("cpu", x), default=lambda x: ("other", x))


def test_traces_take_the_default_backends_forms():
  on_cpu = jax.default_backend() == "cpu"
  assert platform.traces_for_cpu() == on_cpu
  assert _pick() == (("cpu", 1) if on_cpu else ("other", 1))


def test_trace_for_gpu_takes_the_other_forms(gpu_forms):
  assert not platform.traces_for_cpu() and _pick() == ("other", 1)


def _barriers(f, x) -> int:
  return str(jax.make_jaxpr(f)(x)).count("optimization_barrier")


def test_materialized_is_a_barrier_off_the_cpu_only(gpu_forms):
  x = jnp.arange(6.0).reshape(2, 3)
  f = lambda x: platform.materialized(x * 2.0)[:, 0]  # noqa: E731
  assert _barriers(f, x) == 1
  np.testing.assert_array_equal(jax.jit(f)(x), [0.0, 6.0])
  grad = jax.grad(lambda x: jnp.sum(f(x) ** 2))(x)  # the barrier transposes
  np.testing.assert_array_equal(grad, [[0, 0, 0], [24, 0, 0]])
  platform.TRACE_FOR = "cpu"
  jax.clear_caches()  # the trace above would serve this one
  assert _barriers(f, x) == 0


def test_gpu_forms_step_like_mj_step(gpu_forms):
  # one step from each of MuJoCo's states along its trajectory (the stack's resting contacts
  # make a rollout's round-off grow, in MuJoCo's own trajectories too)
  m, mj = load_both(xml=XML)
  dm = mujoco.MjData(mj)
  step = jax.jit(jaxmj.step, compiler_options=FAST)
  d = jaxmj.make_data(m)
  for _ in range(4):
    d = step(m, d.replace(qpos=dm.qpos.copy(), qvel=dm.qvel.copy(),
                          qacc_warmstart=dm.qacc_warmstart.copy()))
    mujoco.mj_step(mj, dm)
    assert dm.ncon >= 6 and int(np.asarray(d.contact.active).sum()) == dm.ncon
    # the GPU's forms sum in other orders (the mass matrix's factor, the SPD solve)
    np.testing.assert_allclose(d.qpos, dm.qpos, rtol=0, atol=1e-12)
    np.testing.assert_allclose(d.qvel, dm.qvel, rtol=0, atol=1e-9)


def test_gpu_forms_differentiate(gpu_forms):
  # off the CPU the implicit derivative always forms H^-1 (no branch on the rows' weights)
  m, _ = load_both(xml=XML)
  d = jaxmj.make_data(m)
  g = jax.eval_shape(jax.grad(lambda v: jaxmj.step(m, d.replace(qvel=v)).qpos.sum()), d.qvel)
  assert g.shape == (m.nv,)


@pytest.mark.slow
def test_gpu_forms_gradient_is_the_cpu_forms():
  # the GPU's Newton step solves by the Pallas kernel (interpreted here) and differentiates it
  # by solving again: the gradient of a step through the solver is the CPU forms' gradient
  m, _ = load_both(xml=XML)
  d = jaxmj.make_data(m)

  def grad():
    jax.clear_caches()
    loss = lambda v: jnp.sum(jaxmj.step(m, d.replace(qvel=v)).qvel ** 2)  # noqa: E731
    return jax.jit(jax.grad(loss))(d.qvel + 0.1)

  want = grad()
  platform.TRACE_FOR = "gpu"
  try:
    got = grad()
  finally:
    platform.TRACE_FOR = None
    jax.clear_caches()
  assert np.all(np.isfinite(got)) and np.max(np.abs(want)) > 1e-3
  np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)


@pytest.mark.slow
def test_gpu_forms_trace_convex_collisions(gpu_forms):
  m = jaxmj.Model.from_xml_string(CONVEX)
  d = jax.eval_shape(jaxmj.step, m, jaxmj.make_data(m))
  assert d.qpos.shape == (m.nq,)


@pytest.mark.parametrize("n", [12, 40])
def test_gpu_forms_spd_solve(gpu_forms, n):
  # n <= SPD_UNROLL_MAX: the elimination unrolled; above: Cholesky and two triangular solves
  rng = np.random.default_rng(n)
  a = rng.normal(size=(n, n))
  a = a @ a.T + n * np.eye(n)
  b = rng.normal(size=n)
  x, ok = jax.jit(lambda a, b: linalg.spd_solve(a, b, 1e-15))(jnp.asarray(a), jnp.asarray(b))
  assert bool(ok)
  np.testing.assert_allclose(np.asarray(x), np.linalg.solve(a, b), rtol=1e-12, atol=1e-12)
