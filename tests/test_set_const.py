"""jaxmj.set_const against mujoco.mj_setConst after the same random change of masses and
inertias (float64, 1e-12 relative to each field's largest entry), batched over randomized
models with vmap, and differentiated (against central differences)."""

import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from conftest import MODELS

import jaxmj

FIELDS = ["body_subtreemass", "dof_M0", "body_invweight0", "dof_invweight0", "tendon_length0",
          "tendon_invweight0", "actuator_acc0"]

_set_const = jax.jit(jaxmj.set_const)


def _randomized(mm: mujoco.MjModel, seed: int):
  """(body_mass, body_inertia) scaled at random (the world's untouched)."""
  rng = np.random.default_rng(seed)
  s = rng.uniform(0.5, 2.0, size=mm.nbody)
  s[0] = 1.0
  return mm.body_mass * s, mm.body_inertia * s[:, None] * rng.uniform(0.8, 1.2, (mm.nbody, 3))


def _mujoco_constants(mm, mass, inertia):
  mm.body_mass[:], mm.body_inertia[:] = mass, inertia
  mujoco.mj_setConst(mm, mujoco.MjData(mm))
  return {f: getattr(mm, f).copy() for f in FIELDS}


def _assert_fields(m, ref):
  for f in FIELDS:
    ours = np.asarray(getattr(m, f)).reshape(ref[f].shape)
    if ref[f].size:
      np.testing.assert_allclose(ours, ref[f], rtol=0, atol=1e-12 * np.max(np.abs(ref[f])),
                                 err_msg=f)


# muscle_arm: tendons, muscles (actuator_acc0); humanoid: free and ball joints, many bodies
@pytest.mark.parametrize("name", ["muscle_arm", "humanoid"])
def test_set_const_matches_mj_setConst_after_mass_changes(name):
  path = os.path.join(MODELS, f"{name}.xml")
  mm, m = mujoco.MjModel.from_xml_path(path), jaxmj.Model.from_xml_path(path)
  mass, inertia = _randomized(mm, 0)
  ref = _mujoco_constants(mm, mass, inertia)
  _assert_fields(_set_const(m.replace(body_mass=jnp.asarray(mass),
                                      body_inertia=jnp.asarray(inertia))), ref)


def test_set_const_batches_over_models_and_differentiates():
  path = os.path.join(MODELS, "tendon_arm.xml")
  mm, m = mujoco.MjModel.from_xml_path(path), jaxmj.Model.from_xml_path(path)
  draws = [_randomized(mm, seed) for seed in range(3)]
  masses = jnp.asarray(np.stack([d[0] for d in draws]))
  inertias = jnp.asarray(np.stack([d[1] for d in draws]))
  batched = jax.jit(jax.vmap(lambda b, i: jaxmj.set_const(
    m.replace(body_mass=b, body_inertia=i))))(masses, inertias)
  for k, (mass, inertia) in enumerate(draws):
    ref = _mujoco_constants(mm, mass, inertia)
    _assert_fields(jax.tree.map(lambda x: x[k] if isinstance(x, jax.Array) else x, batched), ref)

  def score(mass):
    c = jaxmj.set_const(m.replace(body_mass=mass))
    return jnp.sum(c.dof_invweight0) + jnp.sum(c.tendon_invweight0) + jnp.sum(c.body_invweight0)

  value_and_grad = jax.jit(jax.value_and_grad(score))
  mass = m.body_mass
  _, g = value_and_grad(mass)
  eps = 1e-6
  fd = np.zeros(m.nbody)
  for i in range(1, m.nbody):
    e = jnp.zeros_like(mass).at[i].set(eps)
    fd[i] = (value_and_grad(mass + e)[0] - value_and_grad(mass - e)[0]) / (2 * eps)
  np.testing.assert_allclose(g[1:], fd[1:], rtol=0, atol=1e-6 * np.max(np.abs(fd)))
  assert np.max(np.abs(fd)) > 1e-3


GEOMS_XML = """<mujoco><worldbody><geom type="plane" size="1 1 .1"/>
  <body><freejoint/><geom type="sphere" size=".1"/><geom type="capsule" size=".05 .2"/>
    <geom type="cylinder" size=".07 .1"/><geom type="ellipsoid" size=".1 .2 .05"/>
    <geom type="box" size=".1 .15 .05"/></body></worldbody></mujoco>"""


def test_set_const_geometry_bounds_match_a_recompiled_model():
  """geom_size changed: geom_rbound and geom_aabb as MuJoCo compiles the changed model."""
  m = jaxmj.Model.from_xml_string(GEOMS_XML)
  spec = mujoco.MjSpec.from_string(GEOMS_XML)
  rng = np.random.default_rng(0)
  size = np.asarray(m.geom_size) * rng.uniform(0.5, 2.0, size=(m.ngeom, 3))
  size[0] = np.asarray(m.geom_size[0])  # the plane
  for g, s in zip(spec.geoms, size):
    g.size = s
  mm = spec.compile()
  ours = jax.jit(jaxmj.set_const)(m.replace(geom_size=jnp.asarray(size)))
  np.testing.assert_allclose(ours.geom_rbound, mm.geom_rbound, rtol=1e-15)
  np.testing.assert_allclose(ours.geom_aabb, mm.geom_aabb, rtol=1e-15, atol=1e-300)
