"""Data of the wrong shape for its Model is refused at trace time, naming the field."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmj

# nq = nv = 2, one actuator, three bodies (world included)
XML = """<mujoco><worldbody><body><joint name="slide" type="slide"/><geom size=".1"/>
  <body pos="0 0 -.3"><joint axis="0 1 0"/><geom size=".1"/></body></body></worldbody>
  <actuator><motor joint="slide"/></actuator></mujoco>"""


@pytest.fixture(scope="module")
def md():
  m = jaxmj.Model.from_xml_string(XML)
  return m, jaxmj.make_data(m)


CASES = [  # the cases: (field, given value, needed shape)
  ("qpos", jnp.zeros(5), (2,)),
  ("qpos", jnp.zeros(1), (2,)),
  ("qvel", jnp.zeros(1), (2,)),
  ("xfrc_applied", jnp.zeros(6), (3, 6)),
  ("ctrl", jnp.zeros(()), (1,)),
  ("ctrl", jnp.zeros(3), (1,)),
]


@pytest.mark.parametrize("field, value, shape", CASES)
@pytest.mark.parametrize("fn", ["step", "forward"])
def test_wrong_shape_names_field_and_shapes(md, fn, field, value, shape):
  m, d = md
  with pytest.raises(ValueError) as info:
    jax.jit(getattr(jaxmj, fn))(m, d.replace(**{field: value}))
  assert str(info.value) == (f"jaxmj.{fn}: Data field '{field}' has shape {value.shape}, but "
                             f"model 'MuJoCo Model' needs {shape}")


@pytest.mark.parametrize("call", [
  lambda m, d: jaxmj.rollout(m, d, nstep=3),
  lambda m, d: jaxmj.inverse(m, d),
  lambda m, d: jaxmj.step1(m, d),
  lambda m, d: jaxmj.step2(m, d),
  lambda m, d: jaxmj.fwd_position(m, d),
  lambda m, d: jaxmj.sensor_pos(m, d),
  lambda m, d: jaxmj.jac_body(m, d, 1),
  lambda m, d: jaxmj.contact_forces(m, d),
  lambda m, d: jaxmj.get_state(m, d, jaxmj.State.PHYSICS),
  lambda m, d: jaxmj.reset_where(m, d, True),
  lambda m, d: jaxmj.copy_state(m, jaxmj.make_data(m), d, jaxmj.State.PHYSICS),
  lambda m, d: jaxmj.ray(m, d, jnp.zeros(3), jnp.ones(3)),
  lambda m, d: jaxmj.step(m, d=d),
], ids=["rollout", "inverse", "step1", "step2", "fwd_position", "sensor_pos", "jac_body",
        "contact_forces", "get_state", "reset_where", "copy_state", "ray", "keyword"])
def test_every_entry_point_checks(md, call):
  m, d = md
  with pytest.raises(ValueError, match="Data field 'qvel' has shape \\(1,\\)"):
    call(m, d.replace(qvel=jnp.zeros(1)))


def test_rollout_control_sequence_shape(md):
  m, d = md
  with pytest.raises(ValueError, match=r"ctrl has shape \(10, 3\).*needs \(T, nu\) = \(T, 1\)"):
    jaxmj.rollout(m, d, jnp.zeros((10, 3)))


def test_batch_without_vmap_says_to_vmap(md):
  m, d = md
  batch = jax.tree.map(lambda x: jnp.stack([x] * 4), d)
  with pytest.raises(ValueError, match=r"a batch of Data: map over it with "
                                       r"jax.vmap\(jaxmj.step, in_axes=\(None, 0\)\)"):
    jax.jit(jaxmj.step)(m, batch)


def test_vmap_sees_one_worlds_shapes(md):
  m, d = md
  batch = jax.tree.map(lambda x: jnp.stack([x] * 3), d).replace(qvel=jnp.ones((3, 2)))
  out = jax.jit(jax.vmap(jaxmj.forward, in_axes=(None, 0)))(m, batch)
  np.testing.assert_array_equal(out.qacc[0], out.qacc[2])


def test_check_adds_nothing_to_the_computation(md):
  m, d = md
  checked = jaxmj.forward.__wrapped__  # inside the public function's jit (and gc wrapper)
  unchecked = checked.__wrapped__.__wrapped__
  assert str(jax.make_jaxpr(checked)(m, d)) == str(jax.make_jaxpr(unchecked)(m, d))


@pytest.mark.parametrize("field, value, shape", [
  ("body_mass", jnp.ones(7), (3,)),
  ("dof_damping", jnp.ones((2, 1)), (2,)),
  ("opt.gravity", jnp.ones(2), (3,)),
])
def test_model_field_of_another_shape_is_named(md, field, value, shape):
  """A Model field replaced by an array of another shape is refused by name (it failed deep
  inside JAX: 'mul got incompatible shapes for broadcasting')."""
  m, d = md
  if field.startswith("opt."):
    m = m.replace(opt=m.opt.replace(**{field[4:]: value}))
  else:
    m = m.replace(**{field: value})
  for call in (jaxmj.step, lambda m, d: jaxmj.rollout(m, d, nstep=2)):
    with pytest.raises(ValueError) as info:
      call(m, d)
    assert str(info.value).endswith(
      f"Model field '{field}' has shape {value.shape}, but model 'MuJoCo Model' was "
      f"compiled with {shape}")


def test_batch_of_models_without_vmap_says_to_vmap(md):
  m, d = md
  models = jax.tree.map(lambda x: jnp.stack([x] * 3), m)
  with pytest.raises(ValueError, match=r"a batch of Models: map over it with "
                                       r"jax.vmap\(jaxmj.step, in_axes=\(0, None\)\)"):
    jaxmj.step(models, d)
  out = jax.vmap(jaxmj.step, in_axes=(0, None))(models, d)
  assert out.qpos.shape == (3, m.nq)


def test_integer_state_is_refused_by_name_python_numbers_are_not(md):
  """qpos=jnp.array([0, 1]) is an integer array: step promoted it, rollout failed on its scan's
  carry types; both now name the field. A Python number (time=0) still works."""
  m, d = md
  for call in (jaxmj.step, lambda m, d: jaxmj.rollout(m, d, nstep=2)):
    with pytest.raises(ValueError, match=r"Data field 'qpos' has dtype int(32|64), but model "
                                         r"'MuJoCo Model' needs a float dtype"):
      call(m, d.replace(qpos=jnp.array([0, 1])))
  assert jaxmj.step(m, d.replace(time=0)).time.dtype == d.time.dtype


def test_rollout_refuses_nstep_that_is_not_ctrls_length(md):
  m, d = md
  with pytest.raises(ValueError, match=r"nstep=10, but ctrl has shape \(5, 1\)"):
    jaxmj.rollout(m, d, jnp.zeros((5, 1)), nstep=10)
  final, traj = jaxmj.rollout(m, d, jnp.zeros((5, 1)), nstep=5)
  assert traj["qpos"].shape == (5, m.nq)


def test_compiled_model_records_every_array_fields_shape(md):
  m, _ = md
  recorded = dict(m.leaf_shapes)
  assert recorded["body_mass"] == (3,) and recorded["opt.gravity"] == (3,)
  assert recorded == {k: v.shape for k, v in jaxmj.pytree.named_leaves(m).items()}


def test_arguments_swapped_say_which_was_expected(md):
  m, d = md
  with pytest.raises(TypeError, match=r"jaxmj.step: expected a jaxmj.Model as the first "
                                      r"argument, got Data"):
    jaxmj.step(d, m)
