"""The README's set-up commands are the ones CI runs, and its "Use" snippet runs."""

import os
import re
import subprocess
import sys

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


def test_readme_main_command_simulates_contacts_and_limits():
  """The demo's humanoids land on a floor rather than fall through it."""
  import jaxmj

  model = re.search(r"(models/\S+\.xml)", _readme_commands()[0]).group(1)
  m = jaxmj.Model.from_xml_path(os.path.join(ROOT, model))
  off = jaxmj.DisableBit.CONTACT | jaxmj.DisableBit.LIMIT | jaxmj.DisableBit.CONSTRAINT
  assert not m.opt.disableflags & off
  assert jaxmj.GeomType.PLANE in set(m.geom_type.tolist())


def readme_use_snippet() -> str:
  """The python block of the README's "Use" section, as written."""
  return re.search(r"## Use\n\n```python\n(.*?)```", _read("README.md"), re.S).group(1)


def test_readme_use_snippet_runs_as_written():
  """The snippet runs in a fresh process from the repository root, as a user would paste
  it (float32, this checkout on the path; the suite's fast-compile XLA flags inherited)."""
  env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
  code = readme_use_snippet() + "\nprint(g.shape, traj['qpos'].shape)\n"
  run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=900)
  assert run.returncode == 0, run.stderr[-3000:]
  assert run.stdout.split("\n")[-2] == "(32,) (500, 36)"
