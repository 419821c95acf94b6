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
    _assert_fields(jax.tree.map(lambda x, k=k: x[k] if isinstance(x, jax.Array) else x, batched),
                   ref)

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


CAMLIGHT_XML = """<mujoco><worldbody><light pos="0 0 3" dir="0 0 -1"/>
  <light mode="targetbody" target="b" pos="1 0 3"/>
  <light mode="targetbodycom" target="b" pos="1 0 3" dir="0 1 0"/><site pos="1 2 0"/>
  <body name="a" pos="0 0 1" euler="10 20 30"><joint type="hinge" axis="1 0 0" pos=".1 0 0"/>
    <geom type="box" size=".1 .2 .3" pos=".1 0 0"/>
    <camera mode="trackcom" pos="0 -1 0" xyaxes="1 0 0 0 0 1"/>
    <light mode="track" pos=".2 .1 1" dir="1 0 0"/>
    <body name="b" pos=".3 0 .5" euler="5 5 5"><joint type="ball"/>
      <geom type="capsule" size=".1 .2" pos="0 .2 0"/><geom type="sphere" size=".05" pos=".2 0 0"/>
      <camera mode="targetbodycom" target="a" pos="0 -1 0"/>
      <camera mode="track" pos=".1 -1 .2" euler="3 4 5"/>
      <light mode="trackcom" pos="0 0 1" dir="0 1 1"/></body></body>
  <body pos="1 1 1"><freejoint/><geom type="cylinder" size=".1 .3"/></body></worldbody></mujoco>"""
CAMLIGHT_FIELDS = ["cam_pos0", "cam_poscom0", "cam_mat0", "light_pos0", "light_poscom0",
                   "light_dir0", "dof_length", "geom_rbound", "geom_aabb"] + FIELDS


def _random_edit(m, seed):
  """Random qpos0 (unit quaternions), masses, geom sizes and positions, camera and light
  placements: the fields mj_setConst propagates."""
  rng = np.random.default_rng(seed)
  qpos0 = np.asarray(m.qpos0) + rng.uniform(-0.3, 0.3, m.nq)
  for adr, n in ((1, 4), (8, 4)):  # the ball's and the free joint's quaternions
    qpos0[adr:adr + n] /= np.linalg.norm(qpos0[adr:adr + n])

  def scale(x, lo=0.5, hi=2.0):
    return np.asarray(x) * rng.uniform(lo, hi, np.shape(x))

  return dict(qpos0=qpos0, body_mass=scale(m.body_mass), body_inertia=scale(m.body_inertia),
              geom_size=scale(m.geom_size), geom_pos=scale(m.geom_pos, 0.8, 1.2),
              cam_pos=scale(m.cam_pos), light_pos=scale(m.light_pos),
              light_dir=scale(m.light_dir, 0.9, 1.1))


def test_set_const_camlight_and_dof_length_match_mj_setConst():
  """cam/light *0 and dof_length (with the geom bounds they read) after random edits, for
  each camera and light mode, jitted and vmapped over the edits."""
  m = jaxmj.Model.from_xml_string(CAMLIGHT_XML)
  edits = [_random_edit(m, seed) for seed in range(3)]
  stacked = {k: jnp.asarray(np.stack([e[k] for e in edits])) for k in edits[0]}
  batched = jax.jit(jax.vmap(lambda e: jaxmj.set_const(m.replace(**e))))(stacked)
  for k, edit in enumerate(edits):
    mm = mujoco.MjModel.from_xml_string(CAMLIGHT_XML)
    for f, v in edit.items():
      getattr(mm, f)[:] = v
    mujoco.mj_setConst(mm, mujoco.MjData(mm))
    for f in CAMLIGHT_FIELDS:
      ref = getattr(mm, f)
      if not ref.size:
        continue
      np.testing.assert_allclose(np.asarray(getattr(batched, f)[k]).reshape(ref.shape), ref,
                                 rtol=0, atol=1e-12 * max(1.0, np.max(np.abs(ref))), err_msg=f)


def test_set_const_height_field_bounds_match_mj_setConst():
  path = os.path.join(MODELS, "terrain.xml")
  mm, m = mujoco.MjModel.from_xml_path(path), jaxmj.Model.from_xml_path(path)
  size = mm.hfield_size * np.random.default_rng(0).uniform(0.5, 2.0, mm.hfield_size.shape)
  mm.hfield_size[:] = size
  mujoco.mj_setConst(mm, mujoco.MjData(mm))
  ours = _set_const(m.replace(hfield_size=jnp.asarray(size)))
  for f in ("geom_size", "geom_rbound", "geom_aabb", "dof_length"):
    np.testing.assert_allclose(getattr(ours, f), getattr(mm, f), rtol=1e-14, atol=1e-300,
                               err_msg=f)


@pytest.mark.parametrize("name", ["humanoid", "terrain", "tendon_arm"])
def test_statistic_matches_mujoco_recompiling_the_edited_model(name):
  """stat of the MjSpec recompiled with random geom sizes and body positions; the masses
  the recompiled model infers are copied over (inertia from geoms is tested apart), and
  qpos0 (a free joint's is its body's position)."""
  path = os.path.join(MODELS, f"{name}.xml")
  spec, m = mujoco.MjSpec.from_file(path), jaxmj.Model.from_xml_path(path)
  rng = np.random.default_rng(1)
  for g in spec.geoms:
    g.size = np.asarray(g.size) * rng.uniform(0.5, 1.5, 3)
  for b in spec.bodies[1:]:
    b.pos = np.asarray(b.pos) * rng.uniform(0.8, 1.2, 3)
  mm = spec.compile()
  edit = {f: jnp.asarray(getattr(mm, f)) for f in
          ("geom_size", "body_pos", "body_mass", "body_inertia", "body_ipos", "body_iquat",
           "qpos0")}
  stat = jax.jit(jaxmj.statistic)(m.replace(**edit))
  for f in ("meaninertia", "meanmass", "meansize", "extent", "center"):
    np.testing.assert_allclose(stat[f], getattr(mm.stat, f), rtol=1e-12, atol=1e-14, err_msg=f)


INFERRED_XML = """<mujoco><asset>
  <mesh name="tet" vertex="0 0 0 1 0 0 0 1 0 0 0 1" scale=".2 .3 .25"/></asset>
  <worldbody><geom type="plane" size="1 1 .1"/>
  <body name="multi"><freejoint/><geom type="sphere" size=".1" pos=".1 .05 0"/>
    <geom type="capsule" size=".05 .2" euler="20 10 5"/>
    <geom type="cylinder" size=".07 .1" pos="0 0 .2" mass=".3"/>
    <geom type="ellipsoid" size=".1 .2 .05" pos="-.1 0 0" density="500" euler="0 40 0"/>
    <geom type="box" size=".1 .15 .05" pos="0 -.2 .1" euler="5 0 50"/></body>
  <body name="single" pos="0 0 1"><joint type="hinge" axis="0 1 0"/>
    <geom type="capsule" size=".05 .2" pos=".1 0 0" euler="10 20 30"/></body>
  <body name="withmesh" pos="1 0 1"><joint type="slide"/><geom type="mesh" mesh="tet"/>
    <geom type="box" size=".1 .1 .1" pos=".2 0 0"/></body>
  <body name="explicit" pos="2 0 0"><joint type="hinge"/>
    <inertial pos="0 0 0" mass="1" diaginertia=".1 .1 .1"/><geom type="sphere" size=".1"/>
  </body></worldbody></mujoco>"""
INERTIA = ["body_mass", "body_ipos", "body_inertia", "body_iquat"]


def _edited_spec(seed):
  """(compiled model, geom densities) of the MjSpec with random primitive sizes, geom
  positions and densities."""
  spec = mujoco.MjSpec.from_string(INFERRED_XML)
  rng = np.random.default_rng(seed)
  for g in spec.geoms:
    if g.type not in (mujoco.mjtGeom.mjGEOM_PLANE, mujoco.mjtGeom.mjGEOM_MESH):
      g.size = np.asarray(g.size) * rng.uniform(0.5, 2.0, 3)
      # moved, a geom at its body's origin too: its frame and its body's com move off it
      g.pos = np.asarray(g.pos) * rng.uniform(0.8, 1.2, 3) + rng.uniform(-0.05, 0.05, 3)
    g.density = g.density * rng.uniform(0.5, 2.0)
  return spec.compile(), np.array([g.density for g in spec.geoms])


def _edits(mm, density):
  edit = {f: jnp.asarray(getattr(mm, f)) for f in ("geom_size", "geom_pos", "geom_quat")}
  return {**edit, "geom_density": jnp.asarray(density)}


def test_set_const_infers_inertia_from_geoms_as_the_compiler():
  """from_geoms=True after random geom sizes, positions and densities: body inertia and every
  mj_setConst field as MuJoCo recompiling the edited MjSpec (which weighs given-mass,
  mesh and primitive geoms, and leaves the explicit <inertial>), jitted and vmapped."""
  m = jaxmj.Model.from_xml_string(INFERRED_XML)
  refs = [_edited_spec(seed) for seed in range(3)]
  edits = [_edits(*r) for r in refs]
  stacked = {f: jnp.stack([e[f] for e in edits]) for f in edits[0]}
  batched = jax.jit(jax.vmap(lambda e: jaxmj.set_const(m.replace(**e), from_geoms=True)))(
    stacked)
  for k, (mm, _) in enumerate(refs):
    for f in INERTIA + FIELDS + ["geom_rbound", "geom_aabb", "dof_length"]:
      ref = getattr(mm, f)
      if ref.size:
        np.testing.assert_allclose(np.asarray(getattr(batched, f)[k]).reshape(ref.shape), ref,
                                   rtol=0, atol=1e-12 * np.max(np.abs(ref)), err_msg=f)


def test_inferred_inertia_differentiates_through_geom_sizes():
  """d (body inertia, dof_invweight0) / d geom_size against central differences."""
  m = jaxmj.Model.from_xml_string(INFERRED_XML)
  v = jnp.asarray(np.random.default_rng(0).uniform(-1, 1, m.geom_size.shape))

  def score(t):
    c = jaxmj.set_const(m.replace(geom_size=m.geom_size + t * v), from_geoms=True)
    return (jnp.sum(c.body_inertia * jnp.arange(1, 4)) + jnp.sum(c.body_ipos)
            + jnp.sum(c.dof_invweight0) + jnp.sum(c.body_iquat[1] * c.body_iquat[1, 0]))

  vg = jax.jit(jax.value_and_grad(score))
  eps = 1e-6
  fd = (vg(eps)[0] - vg(-eps)[0]) / (2 * eps)
  np.testing.assert_allclose(vg(0.0)[1], fd, rtol=1e-6)


def test_set_const_outside_jit_takes_from_geoms_by_position_or_name():
  # a jit of its own (from_geoms static): outside jit it ran operation by operation
  from jaxmj.dynamics.set_const import set_const as recipe

  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  m = m.replace(geom_size=m.geom_size * 1.1)
  want = jax.jit(recipe, static_argnames="from_geoms")(m, from_geoms=True)
  for got in (jaxmj.set_const(m, True), jaxmj.set_const(m, from_geoms=True)):
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
      np.testing.assert_array_equal(a, b)
  assert float(jaxmj.statistic(m)["meanmass"]) > 0


def test_total_mass_and_set_total_mass_match_mujoco():
  """mj_getTotalmass, and mj_setTotalmass then mj_setConst, against jaxmj's (set_total_mass
  then set_const), and one compile serving a batch of randomized totals."""
  path = os.path.join(MODELS, "humanoid.xml")
  mm, m = mujoco.MjModel.from_xml_path(path), jaxmj.Model.from_xml_path(path)
  np.testing.assert_allclose(float(jaxmj.total_mass(m)), mujoco.mj_getTotalmass(mm), rtol=1e-15)
  scaled = jaxmj.set_total_mass(m, 71.5)
  mujoco.mj_setTotalmass(mm, 71.5)
  np.testing.assert_allclose(scaled.body_mass, mm.body_mass, rtol=1e-15)
  np.testing.assert_allclose(scaled.body_inertia, mm.body_inertia, rtol=1e-15)
  np.testing.assert_allclose(float(jaxmj.total_mass(scaled)), 71.5, rtol=1e-14)
  ref = _mujoco_constants(mm, mm.body_mass.copy(), mm.body_inertia.copy())
  _assert_fields(_set_const(scaled), ref)
  totals = jax.vmap(lambda x: jaxmj.total_mass(jaxmj.set_total_mass(m, x)))(
    jnp.array([40.0, 60.0, 80.0]))
  np.testing.assert_allclose(totals, [40.0, 60.0, 80.0], rtol=1e-14)

