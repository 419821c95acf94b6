"""jaxmj.to_mujoco / Model.from_mujoco: MuJoCo's structures hold jaxmj's values and state,
and come back unchanged."""

import os

import jax
import mujoco
import numpy as np
import pytest
from conftest import MODELS

import jaxmj
from jaxmj.interop import from_mujoco, to_mujoco
from jaxmj.pytree import static_bundle
from jaxmj.smooth.kinematics import kinematics


def model_differences(a, b) -> list[str]:
  """Fields (static and leaves, options and statistics) whose values differ exactly."""
  bad = []
  for name in type(a)._static_names + type(a)._leaf_names:
    if name in ("source", "path"):
      continue
    x, y = getattr(a, name), getattr(b, name)
    if name == "opt":
      if any(not np.array_equal(np.asarray(getattr(x, f)), np.asarray(getattr(y, f)))
             for f in type(x)._static_names + type(x)._leaf_names):
        bad.append(name)
    elif isinstance(x, tuple | str | bytes | int) or name in ("stat", "vis"):
      if x != y:
        bad.append(name)
    elif not np.array_equal(np.asarray(x), np.asarray(y)):
      bad.append(name)
  return bad


def moved(m, seed=0, stage=jaxmj.forward):
  """A Data of `m` off its reference pose, with velocities and controls, through `stage`."""
  rng = np.random.default_rng(seed)
  d = jaxmj.make_data(m)
  d = d.replace(qpos=d.qpos + 0.1 * rng.normal(size=m.nq), qvel=rng.normal(size=m.nv),
                ctrl=0.5 * rng.uniform(-1, 1, size=m.nu),
                mocap_pos=d.mocap_pos + rng.normal(size=(m.nmocap, 3)))
  return jax.jit(stage)(m, d.replace(qpos=jaxmj.normalize_quat(m, d.qpos)))


@pytest.mark.parametrize("name", ["humanoid.xml", "free_body.xml", "mesh_drop.xml",
                                  "tendon_arm.xml"])
def test_mj_forward_on_converted_state_gives_our_positions(name):
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, name))
  d = moved(m, stage=kinematics)  # positions only: a cheap compile
  mjm, mjd = to_mujoco(m, d)  # runs mj_forward
  for field in ("xpos", "xquat", "xipos", "geom_xpos", "site_xpos"):
    np.testing.assert_allclose(getattr(mjd, field), getattr(d, field), rtol=0, atol=1e-12,
                               err_msg=field)
  for field in ("qpos", "qvel", "ctrl", "mocap_pos"):
    np.testing.assert_array_equal(getattr(mjd, field), getattr(d, field), err_msg=field)


def test_converted_state_has_our_forward_dynamics():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  d = moved(m)
  _, mjd = to_mujoco(m, d)
  np.testing.assert_allclose(mjd.qfrc_bias, d.qfrc_bias, rtol=1e-10, atol=1e-10)
  np.testing.assert_allclose(mjd.qacc, d.qacc, rtol=1e-10, atol=1e-10)


def test_batched_data_gives_one_mjdata_per_world():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  batch = jax.tree.map(lambda *x: np.stack(x), *[moved(m, s) for s in range(3)])
  mjm, datas = to_mujoco(m, batch)
  assert isinstance(mjm, mujoco.MjModel) and len(datas) == 3
  for i, mjd in enumerate(datas):
    np.testing.assert_allclose(mjd.xpos, batch.xpos[i], rtol=0, atol=1e-12)


def test_data_from_mujoco_takes_mujocos_state_one_world_or_a_batch():
  """MJX's put_data: a keyframe MuJoCo reset to (and a batch of states) steps as in MuJoCo,
  and a state round-trips through to_mujoco exactly."""
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  d = moved(m)
  back = jaxmj.data_from_mujoco(m, to_mujoco(m, d, forward=False)[1])
  state = jaxmj.State.INTEGRATION
  np.testing.assert_array_equal(jaxmj.get_state(m, back, state), jaxmj.get_state(m, d, state))
  mjm = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  datas = [mujoco.MjData(mjm) for _ in range(2)]
  for i, mjd in enumerate(datas):
    mjd.qpos[:] = [0.1 * i, 0.3]
    mjd.qvel[:] = [0.2, -0.1 * i]
    mjd.ctrl[:] = 0.5
  batch = jaxmj.data_from_mujoco(m, datas)
  assert batch.qpos.shape == (2, m.nq)
  stepped = jax.jit(jax.vmap(jaxmj.step, in_axes=(None, 0)))(m, batch)
  for i, mjd in enumerate(datas):
    mujoco.mj_step(mjm, mjd)
    np.testing.assert_allclose(stepped.qpos[i], mjd.qpos, atol=1e-12)
  other = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "pendulum.xml"))
  with pytest.raises(ValueError, match="another model"):
    jaxmj.data_from_mujoco(m, mujoco.MjData(other))


@pytest.mark.parametrize("name", ["humanoid.xml", "mesh_drop.xml", "tendon_arm.xml"])
def test_from_mujoco_of_to_mujoco_is_the_same_model(name):
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, name))
  mjm, _ = to_mujoco(m)
  back = from_mujoco(mjm)
  assert model_differences(m, back) == []
  assert back.source == m.source


@pytest.mark.parametrize("name", ["humanoid.xml", "cartpole.xml", "muscle_arm.xml"])
def test_from_mujoco_equals_compiling_the_file(name):
  path = os.path.join(MODELS, name)
  m = jaxmj.Model.from_xml_path(path)
  assert model_differences(m, jaxmj.Model.from_mujoco(mujoco.MjModel.from_xml_path(path))) == []
  assert model_differences(m, jaxmj.Model.from_mujoco(mujoco.MjSpec.from_file(path))) == []


def test_randomized_fields_carry_over_both_ways():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  rng = np.random.default_rng(1)
  m = m.replace(body_mass=m.body_mass * rng.uniform(0.5, 1.5, m.nbody),
                geom_rgba=rng.uniform(0, 1, (m.ngeom, 4)).astype(np.float32),
                geom_friction=m.geom_friction * 0.7,
                opt=m.opt.replace(timestep=m.opt.timestep * 0.5))
  d = moved(m)
  mjm, mjd = to_mujoco(m, d)
  np.testing.assert_array_equal(mjm.body_mass, m.body_mass)
  np.testing.assert_array_equal(mjm.geom_rgba, m.geom_rgba)
  np.testing.assert_array_equal(mjm.geom_friction, m.geom_friction)
  assert mjm.opt.timestep == m.opt.timestep
  # MuJoCo steps the randomized model as jaxmj does.
  mujoco.mj_step(mjm, mjd)
  ours = jax.jit(jaxmj.step)(m, d)
  np.testing.assert_allclose(mjd.qpos, ours.qpos, rtol=0, atol=1e-10)
  assert model_differences(m, from_mujoco(mjm)) == []
  # An MjModel edited after conversion brings its edits back.
  mjm.body_mass[1] = 3.25
  mjm.opt.gravity[:] = (0, 0, -1.5)
  back = from_mujoco(mjm)
  assert float(back.body_mass[1]) == 3.25
  np.testing.assert_array_equal(back.opt.gravity, (0, 0, -1.5))
  assert model_differences(m.replace(body_mass=back.body_mass, opt=back.opt), back) == []


def test_batched_model_gives_one_mjmodel_per_world():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  masses = np.stack([m.body_mass * s for s in (1.0, 2.0)])
  batch = m.replace(body_mass=masses)
  d = jax.tree.map(lambda *x: np.stack(x), moved(m), moved(m, 1))
  models, datas = to_mujoco(batch, d)
  assert len(models) == len(datas) == 2
  for i in range(2):
    np.testing.assert_array_equal(models[i].body_mass, masses[i])
    assert datas[i].qpos.shape == (m.nq,)


def test_frames_moved_off_their_body_convert_as_jaxmj_composes_them():
  """A floor at the world's origin, a geom, a site and a com at their body's frame, moved by
  m.replace: MuJoCo, handed the moved numbers, composes them where it would have copied the
  body's frame, as jaxmj does (to_mujoco writes the classes jaxmj applies)."""
  xml = """<mujoco><worldbody><geom type="plane" size="2 2 .1"/>
    <body pos="0 0 1"><freejoint/><geom type="box" size=".1 .2 .3"/><site/></body>
  </worldbody></mujoco>"""
  m = jaxmj.Model.from_xml_string(xml)
  assert list(m.geom_sameframe) == [1, 1] and list(m.site_sameframe) == [1]
  quat = np.array([0.9, 0.1, 0.2, 0.3]) / np.linalg.norm([0.9, 0.1, 0.2, 0.3])
  moved_m = m.replace(geom_pos=m.geom_pos.at[0, 2].set(0.2).at[1, 0].set(0.05),
                      geom_quat=m.geom_quat.at[1].set(quat),
                      site_pos=m.site_pos.at[0].set([0.0, 0.1, 0.0]),
                      body_ipos=m.body_ipos.at[1].set([0.01, 0.0, 0.02]))
  d = jax.jit(kinematics)(moved_m, moved(m, stage=kinematics))
  mjm, mjd = to_mujoco(moved_m, d)
  assert list(mjm.geom_sameframe) == [3, 0] and list(mjm.site_sameframe) == [3]  # rotations kept
  for field in ("geom_xpos", "geom_xmat", "site_xpos", "site_xmat", "xipos"):
    np.testing.assert_allclose(getattr(mjd, field), np.reshape(getattr(d, field),
                                                               getattr(mjd, field).shape),
                               atol=1e-12, err_msg=field)


def test_model_without_source_is_refused_by_name():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml")).replace(source=None)
  with pytest.raises(ValueError, match="Model.source is None"):
    to_mujoco(m)


def test_from_mujoco_of_a_spec_built_in_python():
  spec = mujoco.MjSpec()
  body = spec.worldbody.add_body(name="ball", pos=[0, 0, 1])
  body.add_freejoint()
  body.add_geom(type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.1, 0, 0], mass=2.0)
  m = jaxmj.Model.from_mujoco(spec)
  mjm = spec.compile()
  assert m.nq == 7 and float(m.body_mass[1]) == 2.0
  np.testing.assert_allclose(m.body_inertia, mjm.body_inertia, rtol=1e-15)
  assert model_differences(m, from_mujoco(to_mujoco(m)[0])) == []


def test_mjmodel_mujoco_cannot_write_is_refused_with_the_way_out():
  first = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  mujoco.MjModel.from_xml_path(os.path.join(MODELS, "pendulum.xml"))  # compiled last
  with pytest.raises(ValueError, match="pass the MjSpec"):
    from_mujoco(first)


def test_source_is_compared_by_content_and_survives_jit():
  path = os.path.join(MODELS, "cartpole.xml")
  a, b = jaxmj.Model.from_xml_path(path), jaxmj.Model.from_xml_path(path)
  assert static_bundle(a) == static_bundle(b) and hash(static_bundle(a)) == hash(static_bundle(b))
  with open(path) as f:
    text = jaxmj.Model.from_xml_string(f.read())
  assert text.source != a.source and text.source.xml and not a.source.xml
  heavier = jax.jit(lambda m: m.replace(body_mass=m.body_mass * 2))(a)
  assert heavier.source == a.source
  np.testing.assert_array_equal(to_mujoco(heavier)[0].body_mass, 2 * np.asarray(a.body_mass))


def test_spec_with_mesh_files_resolves_them_in_its_folder(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)  # not the model's folder: files resolve by modelfiledir
  path = os.path.join(MODELS, "mesh_drop.xml")
  m = jaxmj.Model.from_mujoco(mujoco.MjSpec.from_file(path))
  assert model_differences(jaxmj.Model.from_xml_path(path), m) == []
  mjm, _ = to_mujoco(m)
  np.testing.assert_array_equal(mjm.mesh_vert, mujoco.MjModel.from_xml_path(path).mesh_vert)


def test_solver_iterations_given_in_the_file_carry_over():
  """The compiler holds option integers as numpy ints (jaxmj.envs' cart-pole sets iterations
  and ls_iterations): to_mujoco writes them as MuJoCo's ints (it raised TypeError)."""
  m = jaxmj.Model.from_xml_path(os.path.join(os.path.dirname(jaxmj.__file__), "envs", "assets",
                                             "cartpole.xml"))
  mjm, _ = to_mujoco(m, jaxmj.make_data(m))
  assert (mjm.opt.iterations, mjm.opt.ls_iterations) == (1, 4)


def test_edited_margins_and_cutoffs_resize_the_heightfield_windows():
  """An MjModel whose margins or sensor cutoffs were edited converts to the windows of cells
  a compile with those values gives (the heightfield collider and sensors search them)."""
  def scene(margin, cutoff):
    return f"""<mujoco><asset><hfield name="h" nrow="13" ncol="11" size="1.5 1 .5 .2"/>
      </asset><worldbody><body name="ground"><geom type="hfield" hfield="h"/></body>
      <body name="b" pos="0 0 1"><freejoint/><geom size=".12" margin="{margin}"/></body>
      </worldbody><sensor><distance body1="b" body2="ground" cutoff="{cutoff}"/></sensor>
      </mujoco>"""

  mjm = mujoco.MjModel.from_xml_string(scene(0, 0.1))
  mjm.geom_margin[1], mjm.sensor_cutoff[0] = 0.3, 1.0
  edited = from_mujoco(mjm)
  compiled = jaxmj.Model.from_xml_string(scene(0.3, 1.0))
  small = jaxmj.Model.from_xml_string(scene(0, 0.1))
  for name in ("geom_hfieldwindow", "sensor_hfieldwindow"):
    np.testing.assert_array_equal(getattr(edited, name), getattr(compiled, name))
    assert np.any(getattr(edited, name) > getattr(small, name))
