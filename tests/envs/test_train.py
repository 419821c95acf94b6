"""Training through Brax: a PPO smoke run, its checkpoint read back bit-identically in a
fresh process, resume, and APG (jaxmj's gradients) raising the return."""

import json
import logging
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("brax")
pytest.importorskip("orbax.checkpoint")

import jax  # noqa: E402

from jaxmj.envs import train as T  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = dict(num_envs=8, batch_size=8, unroll_length=5, num_minibatches=2,
            num_updates_per_batch=1, num_eval_envs=4)

# float32 as users train (conftest turns on float64 for comparisons with MuJoCo)
_LOAD = """
import json, sys, jax, numpy as np
jax.config.update("jax_enable_x64", False)
import jaxmj.envs
policy = jaxmj.envs.load_policy(sys.argv[1])
obs = np.asarray(json.loads(sys.argv[2]), np.float32)
print(json.dumps(np.asarray(policy(obs)).view(np.uint32).tolist()))
"""


@pytest.fixture
def float32():
  jax.config.update("jax_enable_x64", False)
  yield
  jax.config.update("jax_enable_x64", True)


def test_ppo_run_saves_a_policy_a_fresh_process_reads_back_bit_identically(tmp_path, float32):
  out = str(tmp_path / "run")
  result = T.train("CartpoleBalance", "ppo", num_timesteps=400, out_dir=out, num_evals=2,
                   episode_length=50, progress=False, **TINY)
  assert os.path.exists(os.path.join(out, "curve.png"))
  run = json.load(open(os.path.join(out, "run.json")))
  assert run["algo"] == "ppo" and len(run["curve"]) == 2 and run["steps"] >= 400
  obs = np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32)
  policy = result.make_policy(result.params, deterministic=True)
  mine = np.asarray(policy(obs, jax.random.PRNGKey(0))[0]).view(np.uint32)
  env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
  proc = subprocess.run([sys.executable, "-c", _LOAD, out, json.dumps(obs.tolist())],
                        capture_output=True, text=True, env=env, timeout=600)
  assert proc.returncode == 0, proc.stderr[-2000:]
  theirs = np.array(json.loads(proc.stdout.strip().splitlines()[-1]), np.uint32)
  np.testing.assert_array_equal(theirs, mine)


def test_presets_are_json_safe_and_their_initializer_names_build_networks():
  from brax.training.agents.ppo import networks

  for preset, algos in T.PRESETS.items():
    for algo in algos:
      cfg, net = T.settings_for(algo, preset)
      json.dumps({**cfg, "network": net})  # run.json holds them
  _, net = T.settings_for("ppo", "cpu", network={"init_noise_std": 0.3})
  assert net["init_noise_std"] == 0.3 and net["policy_hidden_layer_sizes"] == (32, 32)
  ppo = T.network_factory(networks.make_ppo_networks, net)(5, 1)
  params = ppo.policy_network.init(jax.random.PRNGKey(0))
  assert params is not None
  cfg, _ = T.settings_for("ppo", "cpu", num_envs=256)  # the minibatch follows the worlds
  assert (cfg["num_envs"], cfg["batch_size"]) == (256, 256)
  with pytest.raises(ValueError, match="num_envs=96 does not divide; choose num_envs"):
    T.settings_for("ppo", "cpu", num_envs=96, batch_size=64)
  with pytest.raises(ValueError, match="unknown preset 'gpu'; one of cpu, playground"):
    T.settings_for("ppo", "gpu")
  with pytest.raises(ValueError, match="preset 'playground' has no sac settings"):
    T.settings_for("sac", "playground")


@pytest.mark.slow
def test_resume_continues_the_run_from_its_checkpoint(tmp_path, float32):
  out = str(tmp_path / "run")
  T.train("CartpoleBalance", "ppo", num_timesteps=400, out_dir=out, num_evals=2,
          episode_length=50, progress=False, **TINY)
  first = json.load(open(os.path.join(out, "run.json")))
  T.train("CartpoleBalance", "ppo", num_timesteps=400, out_dir=out, resume=True,
          num_evals=2, progress=False)
  run = json.load(open(os.path.join(out, "run.json")))
  assert run["steps"] > first["steps"] and len(run["curve"]) == 4
  assert run["curve"][:2] == first["curve"]
  with pytest.raises(ValueError, match="holds a ppo run on CartpoleBalance"):
    T.train("CartpoleBalance", "sac", num_timesteps=400, out_dir=out, resume=True)


@pytest.mark.slow
def test_apg_through_jaxmj_gradients_raises_the_return(tmp_path, float32):
  result = T.train("CartpoleBalance", "apg", num_timesteps=64 * 32 * 40, out_dir=str(tmp_path),
                   num_evals=5, progress=False, num_envs=64)
  returns = [r for _, r in result.curve]
  assert json.load(open(tmp_path / "run.json"))["episode_length"] == 200  # the preset's
  assert returns[-1] > returns[0] + 20, returns



class _Compiles(logging.Handler):
  """The names of the programs jax reports compiling (under jax.log_compiles)."""

  def __init__(self):
    super().__init__()
    self.names = []

  def emit(self, record):
    message = record.getMessage()
    if message.startswith("Finished XLA compilation of "):
      self.names.append(message.split()[4])


def test_a_pmapped_epoch_compiles_once_whatever_its_first_inputs_placement():
  """APG's first epoch gets a single-device key and env state, every later one the
  epoch's own outputs; under placing_pmap the three calls run one program."""
  from jaxmj.envs import brax_compat

  pmap = jax.pmap
  with brax_compat.placing_pmap():
    epoch = jax.pmap(lambda x, k: (x * 2 + 1, k), axis_name="i")
  assert jax.pmap is pmap
  out = (jax.device_put(np.zeros((1, 3), np.float32), jax.devices()[0]),
         jax.random.split(jax.random.PRNGKey(0), 1))
  compiles, logger = _Compiles(), logging.getLogger("jax")
  logger.addHandler(compiles)
  try:
    with jax.log_compiles(True):
      for _ in range(3):
        out = epoch(*out)
  finally:
    logger.removeHandler(compiles)
  np.testing.assert_array_equal(out[0], 7.0)
  assert compiles.names.count("jit(_fun)") == 1, compiles.names
