"""`jaxmj simulate`: the trace and persistent compilation caches (a second process hits both;
--no-cache turns them off) and worlds sharded over devices (bit for bit the unsharded batch's);
`jaxmj train`: a second run's programs come from the persistent cache."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM = [sys.executable, "-m", "jaxmj.cli", "simulate", os.path.join(ROOT, "models", "pendulum.xml"),
       "--steps", "4", "--chunk", "2", "--batch", "2", "--quiet"]


def _run(args, **env):
  out = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, timeout=1200,
                       env={**os.environ, "PYTHONPATH": ROOT, **env})
  assert out.returncode == 0, out.stderr[-2000:]
  return out.stdout


@pytest.mark.slow
def test_second_process_hits_the_persistent_cache(tmp_path):
  cache = str(tmp_path / "xla")
  first = _run(SIM + ["--cache-dir", cache])
  assert "trace cache miss" in first and "persistent cache miss" in first
  assert os.listdir(cache)
  second = _run(SIM + ["--cache-dir", cache])
  assert "trace cache hit" in second and "persistent cache hit" in second
  off = _run(SIM + ["--cache-dir", cache, "--no-cache"])
  assert "trace cache off" in off and "persistent cache off" in off
  # without the cache the loop is jitted as traced, not through an export: the same worlds
  state = [[x for x in out.splitlines() if x.startswith("state")] for out in (first, off)]
  assert state[0] == state[1]


@pytest.mark.slow
def test_sharded_run_hits_both_caches_in_a_second_process(tmp_path):
  cache = str(tmp_path / "xla")
  argv = SIM + ["--cache-dir", cache, "--devices", "2"]
  flags = "--xla_force_host_platform_device_count=2"
  first = _run(argv, XLA_FLAGS=flags)
  assert "trace cache miss" in first and "worlds sharded" in first
  second = _run(argv, XLA_FLAGS=flags)
  assert "trace cache hit" in second and "persistent cache hit" in second
  state = [[x for x in out.splitlines() if x.startswith("state")] for out in (first, second)]
  assert state[0] == state[1]


TRAIN = [sys.executable, "-m", "jaxmj.cli", "train", "CartpoleBalance", "--num-timesteps", "400",
         "--num-evals", "2", "--num-envs", "8", "--episode-length", "50", "--quiet"]


def _loaded(out: str) -> tuple[int, int]:
  """(programs loaded, programs compiled) from `jaxmj train`'s last line."""
  found = re.search(r"(\d+) of (\d+) compiled programs loaded", out)
  assert found, out[-500:]
  return int(found[1]), int(found[2])


@pytest.mark.slow
def test_a_second_training_run_loads_its_programs_and_trains_the_same(tmp_path):
  cache = str(tmp_path / "xla")
  first, second = (_run(TRAIN + ["--out", str(tmp_path / run), "--cache-dir", cache])
                   for run in ("a", "b"))
  (hit0, n0), (hit1, n1) = _loaded(first), _loaded(second)
  assert n1 == n0 and hit1 == n1 > hit0  # every program of the second run came from the cache
  evals = [[x for x in out.splitlines() if x.startswith("eval")] for out in (first, second)]
  assert evals[0] == evals[1]
  off = _run(TRAIN + ["--out", str(tmp_path / "c"), "--cache-dir", cache, "--no-cache"])
  assert "persistent cache off" in off


SHARDED = """
import jax, jax.numpy as jnp, numpy as np
import jaxmj
from jax.sharding import Mesh, NamedSharding, PartitionSpec
assert len(jax.devices()) == 2
m = jaxmj.Model.from_xml_path({path!r})
d = jaxmj.make_data(m)
qvel = d.qvel + 0.1 * jnp.asarray(np.random.default_rng(0).normal(size=(4, m.nv)), d.qvel.dtype)
batch = jax.vmap(lambda v: d.replace(qvel=v))(qvel)
worlds = NamedSharding(Mesh(np.array(jax.devices()), ("worlds",)), PartitionSpec("worlds"))
step = jax.vmap(jaxmj.step, in_axes=(None, 0))
def run(b):
  return jax.lax.fori_loop(0, 3, lambda _, b: step(m, b), b)
plain = jax.jit(run)(batch)
sharded = jax.jit(run, in_shardings=worlds, out_shardings=worlds)(jax.device_put(batch, worlds))
assert sharded.qpos.sharding.is_equivalent_to(worlds, 2), sharded.qpos.sharding
assert len(sharded.qpos.addressable_shards) == 2
halves = [jax.jit(run)(jax.tree.map(lambda x: x[i:i + 2], batch)) for i in (0, 2)]
for a, b, h0, h1 in zip(*map(jax.tree.leaves, (plain, sharded, *halves))):
  # each device's worlds exactly as stepped alone at that batch size, and as in one batch
  np.testing.assert_array_equal(np.concatenate([h0, h1]), np.asarray(b))
  np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
print("ok")
"""


@pytest.mark.slow
def test_sharded_worlds_equal_unsharded_bit_for_bit():
  """Two CPU devices (XLA's host-platform device count), a model with contacts."""
  code = SHARDED.format(path=os.path.join(ROOT, "models", "box_stack.xml"))
  out = _run([sys.executable, "-c", code],
             XLA_FLAGS="--xla_force_host_platform_device_count=2")
  assert out.strip().endswith("ok")
