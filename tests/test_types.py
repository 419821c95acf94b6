"""Model and Data fields carry mjModel / mjData names and shapes."""

import glob
import os

import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import mujoco

import jaxmj

# jaxmj fields that mjModel / mjData do not have, each documented in jaxmj/types.py
# and jaxmj/data.py.
MODEL_ONLY = {"body_depth", "dof_depth", "dof_ancestor", "dof_hasfrictionloss", "unsupported",
              "model_name", "path", "opt", "names", "mesh_hullnum", "mesh_hullvert",
              "geom_inertiakind", "geom_meshinertia", "geom_density", "geom_mass",
              "geom_hfieldwindow", "sensor_hfieldwindow", "tendon_hasfrictionloss", "wrap_sideid",
              "body_fluidellipsoid", "tendon_hasarmature",
              "jnt_limitboth", "tendon_limitboth", "actuator_slots", "source", "ndamped",
              "leaf_shapes", "flg_adhesiongap"}
# dense d.M / d.qLD; masks; the last iteration's entry of mjData.solver (mjSolverStat)
DATA_ONLY = {"qM", "qLD", "qLDiagInv", "warning", "efc_active", "solver_improvement",
             "solver_gradient"}
# mjData sizes these by the constraints (islands) present at a state; jaxmj uses fixed sizes.
PER_STATE = ("efc_", "contact", "solver_niter", "island_")


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(MODELS, "*.xml"))),
                         ids=os.path.basename)
def test_model_fields_match_mjmodel_names_and_shapes(path):
  m = jaxmj.Model.from_xml_path(path)
  mj = mujoco.MjModel.from_xml_path(path)
  for name in type(m)._static_names + type(m)._leaf_names:
    if name in MODEL_ONLY:
      continue
    assert hasattr(mj, name), f"mjModel has no field {name}"
    ours, ref = getattr(m, name), getattr(mj, name)
    if isinstance(ours, (int, bytes)):
      continue
    assert np.asarray(ours).size == np.asarray(ref).size, name
    if name.startswith("key_m"):
      continue  # mjModel stores key_mpos/key_mquat as (nkey, 3*nmocap) too
    assert np.asarray(ours).shape == np.asarray(ref).shape, name


def test_option_fields_match_mjoption():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "humanoid.xml"))
  mj = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "humanoid.xml"))
  for name in type(m.opt)._static_names + type(m.opt)._leaf_names:
    if name in ("grad", "grad_smoothing", "grad_smoothing_friction", "arithmetic",
                "jac_products"):  # jaxmj's own (types.py)
      continue
    ours, ref = np.asarray(getattr(m.opt, name)), np.asarray(getattr(mj.opt, name))
    np.testing.assert_allclose(ours, ref, err_msg=name)


def test_data_fields_match_mjdata_names_and_shapes():
  path = os.path.join(MODELS, "humanoid.xml")
  m = jaxmj.Model.from_xml_path(path)
  mj = mujoco.MjModel.from_xml_path(path)
  d, dm = jaxmj.make_data(m), mujoco.MjData(mj)
  for name in type(d)._leaf_names:
    if name in DATA_ONLY:
      continue
    assert hasattr(dm, name), f"mjData has no field {name}"
    if name.startswith(PER_STATE):
      continue
    ref = np.asarray(getattr(dm, name))
    assert np.asarray(getattr(d, name)).size == ref.size, name


def test_contact_fields_match_mjcontact_names():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "pendulum.xml"))
  dm = mujoco.MjData(mujoco.MjModel.from_xml_path(os.path.join(MODELS, "pendulum.xml")))
  contact = jaxmj.make_data(m).contact
  for name in type(contact)._static_names + type(contact)._leaf_names:
    # jaxmj: fixed slots need a validity mask, and capped slots their traced contact order
    if name not in ("active", "rank"):
      assert hasattr(dm.contact, name), f"mjContact has no field {name}"


def test_model_is_a_pytree_with_static_structure():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "pendulum.xml"))
  import jax

  leaves = jax.tree.leaves(m)
  assert all(isinstance(x, jax.Array) for x in leaves)
  m2 = jax.tree.map(lambda x: x * 1.0, m)
  assert jax.tree.structure(m2) == jax.tree.structure(m)
  assert hash(jax.tree.structure(m)) == hash(jax.tree.structure(m.replace(body_mass=m.body_mass)))


def test_pytree_flatten_agrees_with_its_keyed_flatten_and_round_trips():
  # jit walks a Model and a Data with the fast `flatten` on every call; tree paths come from
  # `flatten_with_keys`: both must list the same leaves in the same order
  import jax
  import jax.numpy as jnp

  from jaxmj.pytree import pytree_dataclass, static

  @pytree_dataclass
  class OneLeaf:
    a: jax.Array
    tag: np.ndarray = static(default=None)

  @pytree_dataclass
  class NoLeaf:
    tag: int = static(default=3)

  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "humanoid_floor.xml"))
  for x in (m, jaxmj.make_data(m), OneLeaf(jnp.ones(2), np.arange(3)), NoLeaf()):
    leaves, treedef = jax.tree_util.tree_flatten(x)
    assert [id(v) for v in leaves] == [id(v) for _, v in jax.tree_util.tree_leaves_with_path(x)]
    y = treedef.unflatten(leaves)
    assert type(y) is type(x) and jax.tree.structure(y) == treedef
    assert [id(v) for v in jax.tree.leaves(y)] == [id(v) for v in leaves]
    for name in type(x)._static_names:
      assert getattr(y, name) is getattr(x, name), name


def test_empty_fields_are_not_leaves_and_keep_their_batch_axes():
  # jit pays per leaf on every call; an array without entries is rebuilt from the aux data,
  # with the batch axes of Data.time (Model.body_mass) outside a vmap and none inside it
  import jax
  import jax.numpy as jnp

  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "humanoid_floor.xml"))
  d = jaxmj.make_data(m)
  assert d.act.shape == (0,) and d.ten_J.shape == (0, m.nv)
  assert all(x.size for x in jax.tree.leaves(d)) and all(x.size for x in jax.tree.leaves(m))
  assert len(jax.tree.leaves(d)) < len(type(d)._leaf_names)

  db = jax.tree.map(lambda x: jnp.stack([x, x, x]), d)
  assert db.act.shape == (3, 0) and db.ten_J.shape == (3, 0, m.nv)
  seen = []

  def step(d):
    seen.append((d.act.shape, d.ten_J.shape))
    return jaxmj.step(m, d)

  # the jitted, vmapped step's trace and its output tree (shapes only: compiling the
  # humanoid's step would add ~15 s and check nothing more here)
  out = jax.eval_shape(jax.jit(jax.vmap(step)), db)
  assert seen == [((0,), (0, m.nv))]
  assert out.act.shape == (3, 0) and out.ten_J.shape == (3, 0, m.nv)
  assert out.act.dtype == d.act.dtype and out.ten_wrapadr.dtype == d.ten_wrapadr.dtype
  one = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), out)
  assert one.ten_J.shape == (0, m.nv)
  assert jax.tree.structure(out) == jax.tree.structure(db) == jax.tree.structure(d)
  # a spec tree (vmap's in_axes) has no leaf for an empty field
  axes = jax.tree.map(lambda _: 0, d)
  assert jax.tree.leaves(axes) == [0] * len(jax.tree.leaves(d))
  # a contact-free model's Contact keeps only dist, its batch reference, as a leaf
  p = jaxmj.make_data(jaxmj.Model.from_xml_path(os.path.join(MODELS, "pendulum.xml")))
  assert [x.shape for x in jax.tree.leaves(p.contact)] == [(0,)]
  pb = jax.jit(lambda p: jax.tree.map(lambda x: jnp.stack([x, x]), p))(p)
  assert pb.contact.frame.shape == (2, 0, 3, 3) and pb.contact.active.dtype == bool
  mb = jax.tree.map(lambda x: jnp.stack([x, x]), m)
  assert mb.actuator_gear.shape == (2,) + m.actuator_gear.shape
  inside = []
  jax.vmap(lambda m: inside.append(m.actuator_gear.shape))(mb)
  assert inside == [m.actuator_gear.shape]


def test_replace_moves_a_field_between_leaves_and_empties():
  import jax
  import jax.numpy as jnp

  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "humanoid_floor.xml"))
  d = jaxmj.make_data(m)
  n = len(jax.tree.leaves(d))
  assert len(jax.tree.leaves(d.replace(ctrl=jnp.zeros(2)))) == n + 1
  assert len(jax.tree.leaves(d.replace(qvel=jnp.zeros(0)))) == n - 1
  assert len(jax.tree.leaves(d.replace(qvel=d.qvel + 1))) == n
  assert jax.tree.structure(d.replace(qvel=d.qvel + 1)) == jax.tree.structure(d)
  assert jax.tree.structure(d.replace(act=jnp.zeros(0, jnp.int32))) != jax.tree.structure(d)
  assert d.replace(time=jnp.zeros(4)).ten_J.shape == (4, 0, m.nv)
  # vmap axes for a randomized Model, as envs.randomize builds them
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  ax = jax.tree.map(lambda _: None, m).replace(body_mass=0)
  assert jax.tree.leaves(ax) == [0] and ax.tendon_range.shape == m.tendon_range.shape == (0, 2)
  masses = jnp.stack([m.body_mass, 2 * m.body_mass])
  out = jax.vmap(jaxmj.step, in_axes=(ax, None))(m.replace(body_mass=masses),
                                                 jaxmj.make_data(m))
  assert out.qpos.shape == (2, m.nq) and out.ten_J.shape == (2, 0, m.nv)
  with pytest.raises(TypeError, match="unexpected field 'nope'"):
    d.replace(nope=1)


def test_model_and_data_pickle_round_trip():
  # multiprocessing and user checkpoints pickle a Model; its Visual held mappingproxies
  import pickle

  import jax

  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "humanoid_floor.xml"))
  d = jaxmj.make_data(m)
  jax.tree.leaves((m, d))  # each node then holds its aux data (pytree._Aux)
  for x in (m, d, jax.jit(jaxmj.forward)(m, d)):
    y = pickle.loads(pickle.dumps(x))
    assert jax.tree.structure(y) == jax.tree.structure(x)
    for a, b in zip(jax.tree.leaves(x), jax.tree.leaves(y)):
      np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
  assert pickle.loads(pickle.dumps(m)).vis == m.vis
