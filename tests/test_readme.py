"""The README's set-up commands are the ones CI runs."""

import os
import re

from conftest import ROOT


def _read(*parts):
  with open(os.path.join(ROOT, *parts)) as f:
    return f.read()


def _readme_commands():
  block = re.search(r"```bash\n(.*?)```", _read("README.md"), re.S).group(1)
  return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_ci_runs_the_readme_test_command():
  main, tests = _readme_commands()[:2]
  assert "jaxmj simulate models/" in main
  assert tests in _read(".ci", "run").splitlines()


def test_readme_main_command_names_a_bundled_model():
  main = _readme_commands()[0]
  model = re.search(r"(models/\S+\.xml)", main).group(1)
  assert os.path.exists(os.path.join(ROOT, model))
