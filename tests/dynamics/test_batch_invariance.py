"""A world's step does not depend on how many worlds a vmap runs beside it (exact arithmetic,
CPU, from two worlds on), so that sharded batches equal unsharded ones bit for bit
(tests/test_cli_cache_devices.py, float32). At XLA's default LLVM optimization level: the
suite's level 0 (conftest.py) with jaxlib 0.10's legacy CPU emitters rounds some of the step
differently at different batch sizes (seen: qpos 2e-19 apart on box_stack, float64), neither
alone does."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import MODELS

import jaxmj


@pytest.mark.parametrize("name", ["box_stack.xml", pytest.param("humanoid_floor.xml",
                                                                  marks=pytest.mark.slow)])
def test_a_worlds_step_is_the_same_in_any_batch_of_two_or_more(name):
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, name))
  d = jaxmj.make_data(m)
  qvel = d.qvel + 0.5 * jnp.asarray(np.random.default_rng(0).normal(size=(5, m.nv)))
  batch = jax.vmap(lambda v: d.replace(qvel=v))(qvel)
  step = jax.jit(jax.vmap(jaxmj.step, in_axes=(None, 0)),
                 compiler_options={"xla_backend_optimization_level": 2})
  five = step(m, batch)
  two = step(m, jax.tree.map(lambda x: x[:2], batch))
  for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(two), jax.tree.leaves(five)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b)[:2], jax.tree_util.keystr(path))
