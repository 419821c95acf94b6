"""Test configuration: float64 everywhere (comparisons with MuJoCo), --runslow for slow tests."""

import os
import sys

import jax
import pytest

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
