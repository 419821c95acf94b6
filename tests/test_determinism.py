"""A jitted step's bits depend on its inputs alone: not on Python's string-hash seed, not on
`jax.clear_caches()`, not on which models the process traced before (issue 18).

Each case runs tests/determinism_probe.py in fresh processes, under different PYTHONHASHSEED
values, with and without `jax.clear_caches()` before the first trace, and with the models in
different orders (so each one is traced both before and after the others), and requires the
same digest of qpos, qvel and act after the steps in every run.
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROBE = os.path.join(HERE, "determinism_probe.py")
MODELS = os.path.join(ROOT, "models")


def probe(models: list[str], seed: int, clear: bool = False, nstep: int = 10,
          with_mujoco: bool = False, timeout: float = 1800) -> dict[str, list[str]]:
  """{model: [digest, max qpos error or '-'] or ['SKIP', reason...]} from one fresh process."""
  env = dict(os.environ, PYTHONHASHSEED=str(seed),
             PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
  cmd = [sys.executable, PROBE, *models, "--nstep", str(nstep)]
  cmd += ["--clear"] * clear + ["--mujoco"] * with_mujoco
  out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
  assert out.returncode == 0, out.stderr[-3000:]
  lines = [line.split() for line in out.stdout.splitlines()]
  return {words[0]: words[1:] for words in lines}


def assert_same_bits(models: list[str], runs: list[dict], nstep: int = 10) -> dict:
  """Runs the probe once per (seed, clear, order) in `runs` and requires one result per model.
  Returns the first run's results."""
  results = [probe(models[::-1] if r.get("reverse") else models, r["seed"], r.get("clear", False),
                   nstep, r.get("mujoco", False)) for r in runs]
  for model in models:
    seen = [res[model][0] if res[model][0] != "SKIP" else " ".join(res[model]) for res in results]
    assert len(set(seen)) == 1, f"{model}: {seen} under {runs}"
  return results[0]


# seed 0 in file order; seed 5 after jax.clear_caches() in reverse order: each model is traced
# both first and after the other
RUNS = [{"seed": 0, "mujoco": True}, {"seed": 5, "clear": True, "reverse": True}]

# a cylinder and an ellipsoid pressed 1 mm into a box: contacts from the first step through
# the jitted GJK/EPA search (4 multiccd points for the cylinder, 1 for the ellipsoid)
CONVEX_REST = """
<mujoco model="convex_rest">
  <worldbody>
    <geom name="table" type="box" size="1 1 0.1" pos="0 0 -0.1"/>
    <body name="can" pos="0 0 0.099" euler="0 0 10">
      <freejoint/>
      <geom type="cylinder" size="0.1 0.1"/>
    </body>
    <body name="egg" pos="0.4 0 0.049" euler="4 3 0">
      <freejoint/>
      <geom type="ellipsoid" size="0.1 0.07 0.05"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_step_bits_independent_of_hash_seed_cache_and_order(tmp_path):
  # convex contacts and an actuated model (cartpole); ~30 s of CPU per process, nearly all
  # compiling. The bits are also held against mj_step (measured: 4e-17 and 8e-22).
  convex = tmp_path / "convex_rest.xml"
  convex.write_text(CONVEX_REST)
  models = [str(convex), os.path.join(MODELS, "cartpole.xml")]
  first = assert_same_bits(models, RUNS, nstep=5)
  for m in models:
    assert float(first[m][1]) < 1e-12, f"{m}: max |qpos - mj_step qpos| {first[m][1]}"


def _all_models() -> list[str]:
  return sorted(os.path.join(MODELS, f) for f in os.listdir(MODELS) if f.endswith(".xml"))


def _bundled() -> list[str]:
  sys.path.insert(0, os.path.join(HERE, "collision"))
  sys.path.insert(0, os.path.join(HERE, "mjcf"))
  from test_bundled_contacts import SKIPPED
  from test_compile import BUNDLED

  return [f"bundled:{rel}" for rel in BUNDLED if rel not in SKIPPED]


def _chunks(items: list[str], n: int) -> list[list[str]]:
  return [items[i:i + n] for i in range(0, len(items), n)]


@pytest.mark.slow
@pytest.mark.parametrize("models", _chunks(_all_models(), 7) + _chunks(_bundled(), 8),
                         ids=lambda ms: f"{os.path.basename(ms[0])}..{os.path.basename(ms[-1])}")
def test_every_model_steps_to_the_same_bits_in_every_process(models):
  assert_same_bits(models, [{"seed": 0}, {"seed": 3, "clear": True, "reverse": True}])


MANIPULATOR = None
try:
  import dm_control

  MANIPULATOR = os.path.join(os.path.dirname(dm_control.__file__), "suite", "manipulator.xml")
except ImportError:
  pass


@pytest.mark.slow
@pytest.mark.skipif(MANIPULATOR is None, reason="dm_control is not installed")
def test_dm_control_manipulator_follows_mj_step_under_every_hash_seed():
  # issue 18's reproduction: said to be 2.3e-3 off mj_step from the first step under hash
  # seeds 0-4 and 2.4e-17 under seed 5 or after jax.clear_caches()
  runs = [{"seed": s, "mujoco": True} for s in range(6)] + [
    {"seed": 0, "clear": True, "mujoco": True}]
  first = assert_same_bits([MANIPULATOR], runs, nstep=100)
  err = float(first[MANIPULATOR][1])
  assert err < 1e-12, f"max |qpos - mj_step qpos| over 100 steps: {err:.3g}"
