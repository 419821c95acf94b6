"""Named views (jaxmj.bind) against MuJoCo's own named accessors (m.body("x"), d.joint("x"))."""

import os

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from conftest import MODELS  # noqa: E402
from mujoco_compare import load_both, random_state, to_jaxmj  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.smooth.kinematics import kinematics  # noqa: E402


def _close(ours, ref):
  # kinematics agree with MuJoCo to rounding, the views add nothing to it
  np.testing.assert_allclose(ours, ref, atol=1e-12)


def _same(ours, ref):
  # MuJoCo's accessors give scalars as (1,) arrays, jaxmj's views give scalars; the
  # compiled values agree to the compiler tests' 1e-10
  np.testing.assert_allclose(np.ravel(ours), np.ravel(ref), atol=1e-10)


@pytest.fixture(scope="module")
def both():
  m, mj = load_both(os.path.join(MODELS, "humanoid.xml"))
  md = random_state(m, mj, seed=1)
  mujoco.mj_kinematics(mj, md)
  d = jax.jit(kinematics)(m, to_jaxmj(m, md))
  return m, mj, d, md


def test_data_views_equal_mujoco_accessors(both):
  m, mj, d, md = both
  v = jaxmj.bind(m, d)
  for i in range(mj.nbody):
    name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_BODY, i)
    _close(v.body(name).xpos, md.body(name).xpos)
    _close(v.body(i).xquat, md.body(i).xquat)
  for i in range(mj.njnt):
    name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, i)
    _close(v.joint(name).qpos, md.joint(name).qpos)
    _close(v.joint(name).qvel, md.joint(name).qvel)
    _close(v.joint(name).qfrc_applied, md.joint(name).qfrc_applied)
  for i in range(mj.ngeom):
    _close(v.geom(i).xpos, md.geom(i).xpos)
    _close(v.geom(i).xmat, md.geom(i).xmat.reshape(3, 3))
  for i in range(mj.nsite):
    _close(v.site(i).xpos, md.site(i).xpos)


def test_model_views_equal_mujoco_accessors(both):
  m, mj, _, _ = both
  v = jaxmj.bind(m)
  for i in range(mj.nbody):
    _same(v.body(i).mass, mj.body(i).mass)
    _same(v.body(i).inertia, mj.body(i).inertia)
  for i in range(mj.njnt):
    _same(v.joint(i).range, mj.joint(i).range)
    _same(v.joint(i).qpos0, mj.joint(i).qpos0)
    _same(v.joint(i).armature, mj.joint(i).armature)
  for i in range(mj.ngeom):
    _same(v.geom(i).size, mj.geom(i).size)


def test_views_work_inside_jit(both):
  m, _, d, _ = both
  name = jaxmj.id2name(m, "body", 1)
  xpos = jax.jit(lambda dd: jaxmj.bind(m, dd).body(name).xpos)(d)
  np.testing.assert_array_equal(xpos, d.xpos[1])


def test_unknown_names_and_ids_are_clear_errors(both):
  m, _, d, _ = both
  with pytest.raises(KeyError, match="no body named 'nope'"):
    jaxmj.bind(m, d).body("nope")
  with pytest.raises(IndexError, match="out of range"):
    jaxmj.bind(m, d).geom(10_000)


# nactuator 4, nu 7 (the orientation takes 3 controls, the pid 2), nout 6 (the orientation
# has 3 outputs): rows of per-output and per-control fields are not actuator ids
SLOTS = """<mujoco><worldbody><body><joint name="b" type="ball"/><geom size=".1" pos=".1 0 0"/>
  <body pos=".2 0 0"><joint name="h" axis="0 1 0"/><geom size=".05"/></body></body>
  </worldbody><actuator><motor joint="h" gear="2" ctrlrange="-1 1"/>
  <orientation name="o" joint="b" kp="3" ctrlrange="-1.5 1.5"/>
  <pid name="p" joint="h" kp="3" kv=".2" input="pos vel" posrange="-.5 .5"/>
  <motor name="last" joint="h" gear="3"/></actuator></mujoco>"""


def test_actuator_views_follow_output_and_control_addresses():
  """Per-output (gear, acc0, length0, lengthrange; length, velocity, force, moment) and
  per-control (ctrlrange, ctrllimited; ctrl) rows are read through actuator_outadr/outnum
  and ctrladr/ctrlnum, as mujoco's m.actuator(i) / d.actuator(i): one row as a scalar (or
  row) when the actuator has one, else its block."""
  m, mj = load_both(xml=SLOTS)
  assert (mj.nactuator, mj.nu, mj.nout) == (4, 7, 6)
  md = mujoco.MjData(mj)
  md.qvel[:] = [.3, -.2, .5, 1.0]
  md.ctrl[:] = np.arange(mj.nu) / 10
  mujoco.mj_forward(mj, md)
  moment = np.zeros((mj.nout, mj.nv))
  mujoco.mju_sparse2dense(moment, md.actuator_moment, md.moment_rownnz, md.moment_rowadr,
                          md.moment_colind)
  d = jaxmj.make_data(m).replace(
    ctrl=md.ctrl.copy(), actuator_length=md.actuator_length.copy(),
    actuator_velocity=md.actuator_velocity.copy(), actuator_force=md.actuator_force.copy(),
    actuator_moment=moment)
  for i in range(mj.nactuator):
    ours, ref = jaxmj.bind(m).actuator(i), mj.actuator(i)
    for name in ("gear", "acc0", "length0", "lengthrange", "ctrlrange", "ctrllimited",
                 "gainprm", "trnid"):
      _same(getattr(ours, name), getattr(ref, name))
    ours, ref = jaxmj.bind(m, d).actuator(i), md.actuator(i)
    for name in ("ctrl", "length", "velocity", "force", "moment"):  # moment: dense rows
      _same(getattr(ours, name), getattr(ref, name))


# ------------------------------------------------------------------ binding jaxmj.mjcf elements


def _composed():
  """A scene with two copies of an arm (ball shoulder, hinge elbow, motor, sensor)."""
  from jaxmj import mjcf

  def arm():
    root = mjcf.RootElement(model="arm")
    upper = root.worldbody.add("body", name="upper")
    upper.add("joint", name="shoulder", type="ball", damping=0.5)
    upper.add("geom", type="capsule", fromto=[0, 0, 0, 0, 0, -0.3], size=[0.04])
    fore = upper.add("body", name="fore", pos=[0, 0, -0.3])
    elbow = fore.add("joint", name="elbow", axis=[0, 1, 0], damping=0.2)
    fore.add("geom", name="hand", size=[0.05], pos=[0, 0, -0.3])
    root.actuator.add("motor", name="m", joint=elbow, gear=[2.0])
    root.sensor.add("jointpos", name="q", joint=elbow)
    return root

  scene = mjcf.RootElement(model="scene")
  arms = [arm(), arm()]
  for i, a in enumerate(arms):
    scene.worldbody.add("site", name=f"s{i}", pos=[i, 0, 1]).attach(a)
  return scene, arms


@pytest.fixture(scope="module")
def composed():
  scene, arms = _composed()
  m = jaxmj.Model.from_mjcf(scene)
  mj = mujoco.MjModel.from_xml_string(scene.to_xml_string())
  md = mujoco.MjData(mj)
  rng = np.random.default_rng(3)
  md.qpos[:] = rng.normal(size=mj.nq)
  md.qvel[:] = rng.normal(size=mj.nv)
  md.ctrl[:] = rng.normal(size=mj.nu)
  mujoco.mj_forward(mj, md)
  d = jaxmj.make_data(m).replace(qpos=md.qpos.copy(), qvel=md.qvel.copy(),
                                 ctrl=md.ctrl.copy(), xpos=md.xpos.copy(),
                                 sensordata=md.sensordata.copy())
  return scene, arms, m, mj, d, md


def test_elements_bind_like_their_names(composed):
  """Elements of attached (and renamed: `arm_1`) models give the views of their names in
  the composed model, which are MuJoCo's accessors of those names."""
  scene, arms, m, mj, d, md = composed
  assert arms[1].model == "arm_1"
  v, vm = jaxmj.bind(m, d), jaxmj.bind(m)
  for a in arms:
    elbow, shoulder = a.find("joint", "elbow"), a.find("joint", "shoulder")
    fore, hand = a.find("body", "fore"), a.find("geom", "hand")
    _close(v.joint(elbow).qpos, md.joint(elbow.full_identifier).qpos)
    _close(v(shoulder).qvel, md.joint(a.model + "/shoulder").qvel)
    _close(v.body(fore).xpos, md.body(fore.full_identifier).xpos)
    _close(v(a.find("actuator", "m")).ctrl, md.actuator(a.model + "/m").ctrl)
    _close(v(a.find("sensor", "q")).data, md.sensor(a.model + "/q").data)
    _same(vm.joint(shoulder).damping, mj.joint(a.model + "/shoulder").damping)
    _same(vm(hand).size, mj.geom(a.model + "/hand").size)
    _same(vm(a.attachment_frame).pos, mj.body(a.model + "/").pos)
  _close(v(scene.worldbody).xpos, md.body("world").xpos)
  _close(v(arms[0].worldbody).xpos, md.body("arm/").xpos)  # an attached world: its frame


def test_element_lists_stack_rows_and_concatenate_blocks(composed):
  _, arms, m, mj, d, md = composed
  v = jaxmj.bind(m, d)
  bodies = [a.find("body", "fore") for a in arms]
  np.testing.assert_array_equal(v.body(bodies).xpos, np.stack([v.body(b).xpos for b in bodies]))
  assert v(bodies).xpos.shape == (2, 3)
  joints = [arms[0].find("joint", "shoulder"), arms[1].find("joint", "elbow")]
  _close(v(joints).qpos, np.concatenate([md.joint("arm/shoulder").qpos,
                                         md.joint("arm_1/elbow").qpos]))
  assert v(joints).qvel.shape == (3 + 1,)
  np.testing.assert_array_equal(jaxmj.bind(m).joint(["arm/elbow", 1]).id, [1, 1])
  with pytest.raises(TypeError, match="is a joint, not a body"):
    v.body(joints[0])
  with pytest.raises(TypeError, match="one object type"):
    v([bodies[0], joints[0]])


def test_batched_data_and_model_views_keep_the_batch_axes(composed):
  _, arms, m, _, d, _ = composed
  elbow, fore = arms[1].find("joint", "elbow"), arms[1].find("body", "fore")
  batch = jax.tree.map(lambda x: np.stack([x, 2 * x, 3 * x]), d)
  v = jaxmj.bind(m, batch)
  assert v(elbow).qpos.shape == (3, 1) and v([fore, fore]).xpos.shape == (3, 2, 3)
  np.testing.assert_array_equal(v(elbow).qpos[2], 3 * jaxmj.bind(m, d)(elbow).qpos)
  models = jax.tree.map(lambda x: np.stack([x, x]), m)
  vm = jaxmj.bind(models)
  assert vm(fore).mass.shape == (2,) and vm(elbow).damping.shape == (2, 1)
  assert int(vm(elbow).dofadr) == int(jaxmj.bind(m)(elbow).dofadr)  # static: unbatched
  motor = vm(arms[1].find("actuator", "m"))
  assert motor.gear.shape == (2, 6) and np.shape(motor.ctrllimited) == ()


def test_unnamed_elements_bind_by_their_generated_names():
  """Unnamed bodies, geoms, sites... are written with dm_control's generated names
  (`arm//unnamed_geom_0`), so they bind too; elements the Model lacks are KeyErrors."""
  scene, arms = _composed()
  site = scene.worldbody.add("site", pos=[0, 0, 2])
  m = jaxmj.Model.from_mjcf(scene)
  mj = mujoco.MjModel.from_xml_string(scene.to_xml_string())
  geom = arms[1].find_all("geom")[0]
  assert geom.name is None and geom.full_identifier == "arm_1//unnamed_geom_0"
  _same(jaxmj.bind(m)(geom).size, mj.geom(geom.full_identifier).size)
  assert jaxmj.bind(m)(site).id == mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_SITE,
                                                     "//unnamed_site_2")
  with pytest.raises(KeyError, match="no site named '//unnamed_site_3'"):
    jaxmj.bind(m).site(scene.worldbody.add("site"))  # added after compiling
  with pytest.raises(jaxmj.MJCFError, match="unnamed <key> cannot be bound"):
    jaxmj.bind(m)(scene.keyframe.add("key"))
  with pytest.raises(TypeError, match="expected a name, an id or a jaxmj.mjcf element"):
    jaxmj.bind(m).body(1.5)


def test_replace_sets_the_rows_a_view_reads(composed):
  """replace writes exactly the rows a view reads (batched too), Data and Model leaves."""
  _, arms, m, _, d, _ = composed
  shoulder, elbow = arms[0].find("joint", "shoulder"), arms[1].find("joint", "elbow")
  new = jaxmj.bind(m, d).replace("joint", [shoulder, elbow], qpos=np.arange(5.0),
                                 qvel=-np.arange(4.0))
  v = jaxmj.bind(m, new)
  np.testing.assert_array_equal(v([shoulder, elbow]).qpos, np.arange(5.0))
  np.testing.assert_array_equal(v(elbow).qvel, [-3.0])
  changed = np.flatnonzero(np.asarray(new.qpos) != np.asarray(d.qpos))
  assert set(changed) <= {0, 1, 2, 3, 9}  # the shoulder's 4 rows and arm_1's elbow
  motor = arms[0].find("actuator", "m")
  np.testing.assert_array_equal(
    jaxmj.bind(m, jaxmj.bind(m, d).replace("actuator", motor, ctrl=0.25))(motor).ctrl, 0.25)
  batch = jax.tree.map(lambda x: np.stack([x, x]), d)
  batch = jaxmj.bind(m, batch).replace("joint", elbow, qpos=[[1.0], [2.0]])
  np.testing.assert_array_equal(jaxmj.bind(m, batch)(elbow).qpos, [[1.0], [2.0]])
  heavier = jaxmj.bind(m).replace("body", arms[0].find("body", "fore"), mass=3.0)
  assert float(jaxmj.bind(heavier)(arms[0].find("body", "fore")).mass) == 3.0
  with pytest.raises(ValueError, match="static Model structure"):
    jaxmj.bind(m).replace("joint", elbow, type=0)
  with pytest.raises(AttributeError, match="no field 'nope'"):
    jaxmj.bind(m, d).replace("joint", elbow, nope=1)
