"""Test configuration: float64 everywhere (comparisons with MuJoCo), --runslow for slow tests."""

import os
import sys

import jaxlib  # noqa: E402


def _fast_compile_flags() -> str:
  """XLA flags that make the suite's compiles cheap (compiling dominates its time).

  XLA's LLVM optimizations (level 2, the default) are a third of each compile and buy run
  time that these single steps and short rollouts do not need. On jaxlib 0.10 the CPU fusion
  emitters take most of the rest: without them the pipeline's compile is ~3x faster (and
  runs no slower, measured on models/box_pile.xml's forward). XLA aborts on a flag it does
  not know, so that one is set only on the jaxlib minor version it was measured on.
  """
  flags = " --xla_backend_optimization_level=0"
  if jaxlib.__version__.split(".")[:2] == ["0", "10"]:
    flags += " --xla_cpu_use_fusion_emitters=false"
  return flags


# Set before jax starts its CPU client, so it holds in every xdist worker;
# JAXMJ_TEST_XLA_OPT=1 keeps XLA's defaults (results agree to round-off either way).
if not os.environ.get("JAXMJ_TEST_XLA_OPT"):
  os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + _fast_compile_flags()).strip()

# MuJoCo picks its OpenGL backend once, at import: a headless one for the rendering tests,
# which skip where none works. Only one whose library is installed: naming a missing one
# makes `import mujoco` fail (jaxmj.rendering.headless_gl; jaxmj is imported after x64 is on).
if "MUJOCO_GL" not in os.environ and not os.environ.get("DISPLAY"):
  import ctypes.util  # noqa: E402

  for _gl, _lib in (("egl", "EGL"), ("osmesa", "OSMesa")):
    if sys.platform.startswith("linux") and ctypes.util.find_library(_lib):
      os.environ["MUJOCO_GL"] = _gl
      break

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, os.path.dirname(__file__))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "models")


def pytest_addoption(parser):
  parser.addoption("--runslow", action="store_true", help="run tests marked slow")


def pytest_collection_modifyitems(config, items):
  if config.getoption("--runslow"):
    return
  skip = pytest.mark.skip(reason="slow: run with --runslow")
  for item in items:
    if "slow" in item.keywords:
      item.add_marker(skip)


@pytest.fixture(scope="module", autouse=True)
def _free_compiled_programs():
  """Drops jax's compiled programs after each test module: a worker runs hundreds of
  modules, and keeping every executable alive grows its memory without bound."""
  yield
  jax.clear_caches()


@pytest.fixture
def fast_jit():
  """jax.jit with the cheapest XLA compile (mujoco_compare.FAST), for a test's own jit."""
  from mujoco_compare import jit_fast

  return jit_fast


@pytest.fixture(scope="module")
def gl():
  """Skips where MuJoCo has no working OpenGL backend (MUJOCO_GL, set above)."""
  import mujoco

  m = mujoco.MjModel.from_xml_string("<mujoco/>")
  try:
    with mujoco.Renderer(m, 8, 8):
      pass
  except Exception as e:
    pytest.skip(f"no OpenGL backend for mujoco.Renderer (MUJOCO_GL="
                f"{os.environ.get('MUJOCO_GL')}): {e}")
