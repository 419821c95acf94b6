"""Domain randomization: the in_axes helper and per-world Models held against MuJoCo."""

import functools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

import jaxmj.envs as E


@pytest.fixture(scope="module")
def env():
  return E.load("CartpoleBalance")


def test_model_in_axes_marks_named_fields_only(env):
  axes = E.model_in_axes(env.sys, "body_mass", "opt.timestep")
  assert axes.body_mass == 0 and axes.opt.timestep == 0
  marked = [x for x in jax.tree.leaves(axes) if x is not None]
  assert marked == [0, 0]
  with pytest.raises(ValueError, match="no field 'body_mas'"):
    E.model_in_axes(env.sys, "body_mas")
  with pytest.raises(ValueError, match="'nq' is static"):
    E.model_in_axes(env.sys, "nq")


def _heavier(m, rng):
  k1, k2 = jax.random.split(rng)
  mass = m.body_mass * jax.random.uniform(k1, (m.nbody,), minval=0.5, maxval=2.0)
  damping = m.dof_damping + jax.random.uniform(k2, (m.nv,), maxval=0.5)
  return m.replace(body_mass=mass, dof_damping=damping)


def test_randomization_finds_changed_fields_and_batches_only_those(env):
  assert E.changed_fields(_heavier, env.sys) == ["body_mass", "dof_damping"]
  sys_v, axes = E.randomization(_heavier)(env.sys, jax.random.split(jax.random.PRNGKey(0), 4))
  assert sys_v.body_mass.shape == (4, 3) and sys_v.dof_damping.shape == (4, 2)
  assert sys_v.geom_size.shape == env.sys.geom_size.shape  # shared, not copied
  assert axes.body_mass == 0 and axes.geom_size is None


def test_each_world_steps_with_its_own_model_as_mujoco_does(env):
  n = 4
  rand = functools.partial(E.randomization(_heavier), rng=jax.random.split(
    jax.random.PRNGKey(3), n))
  wrapped = E.wrap(env, episode_length=100, randomization_fn=rand)
  state = jax.jit(wrapped.reset)(jax.random.split(jax.random.PRNGKey(4), n))
  action = jnp.linspace(-1, 1, n)[:, None]
  new = jax.jit(wrapped.step)(state, action)
  sys_v, _ = rand(env.sys)
  mj = mujoco.MjModel.from_xml_path(E.asset_path("cartpole.xml"))
  data = mujoco.MjData(mj)
  qacc = []
  for i in range(n):
    mj.body_mass[:] = np.asarray(sys_v.body_mass[i])
    mj.dof_damping[:] = np.asarray(sys_v.dof_damping[i])
    data.qpos[:] = np.asarray(state.pipeline_state.qpos[i])
    data.qvel[:] = np.asarray(state.pipeline_state.qvel[i])
    data.ctrl[:] = np.asarray(action[i])  # ctrlrange is [-1, 1]: the action is the ctrl
    mujoco.mj_forward(mj, data)
    qacc.append(data.qacc.copy())
  # body_inertia was not rescaled with the mass in either engine: same model both sides
  np.testing.assert_allclose(new.pipeline_state.qacc, np.array(qacc), rtol=1e-9, atol=1e-9)
  assert len(np.unique(np.round(np.asarray(new.pipeline_state.qacc[:, 0]), 6))) == n


def _thicker(m, rng):
  """Each geom's first size (box x half-size, capsule radius) scaled by 0.7..1.5."""
  scale = jax.random.uniform(rng, (m.ngeom,), minval=0.7, maxval=1.5)
  return m.replace(geom_size=m.geom_size.at[:, 0].multiply(scale))


def test_randomized_geometry_updates_derived_fields_over_1024_worlds(env):
  """set_const in the randomization: 1024 worlds of randomized geom sizes, each world's
  inertia (given masses, so only the moments move), invweight0, acc0 and bounds as MuJoCo
  recompiling the model with that world's sizes (the batch steps as in the test above)."""
  n = 1024
  rand = functools.partial(E.randomization(_thicker, set_const=True, from_geoms=True),
                           rng=jax.random.split(jax.random.PRNGKey(5), n))
  sys_v, axes = rand(env.sys)
  assert sys_v.body_inertia.shape == (n, env.sys.nbody, 3) and axes.body_inertia == 0
  assert axes.dof_invweight0 == 0 and axes.actuator_acc0 == 0 and axes.geom_rbound == 0
  for k in (0, n // 2, n - 1):
    spec = mujoco.MjSpec.from_file(E.asset_path("cartpole.xml"))
    for g, size in zip(spec.geoms, np.asarray(sys_v.geom_size[k])):
      g.size = [size[0], *g.size[1:]]
    mm = spec.compile()
    for f in ("body_mass", "body_inertia", "body_iquat", "body_ipos", "dof_M0",
              "dof_invweight0", "body_invweight0", "actuator_acc0", "geom_rbound", "geom_aabb"):
      ref = getattr(mm, f)
      np.testing.assert_allclose(np.asarray(getattr(sys_v, f)[k]).reshape(ref.shape), ref,
                                 rtol=0, atol=1e-12 * np.max(np.abs(ref)), err_msg=f)
