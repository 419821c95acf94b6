"""notebooks/compose.ipynb runs: its code cells build the multi-robot scene from parts,
simulate it and plot (plotting only where matplotlib is installed)."""

import functools
import json
import os

import jax
import numpy as np
from conftest import ROOT

# jaxmj's own jits (e.g. rollout's) are decorated before the tests patch jax.jit:
# compiler_options are refused on a nested jit
import jaxmj  # noqa: F401

NOTEBOOK = os.path.join(ROOT, "notebooks", "compose.ipynb")


def code_cells(path: str) -> list[str]:
  # nbformat validates the notebook where installed; the cells are plain JSON either way.
  try:
    import nbformat
  except ImportError:
    with open(path) as f:
      cells = json.load(f)["cells"]
  else:
    cells = nbformat.read(path, as_version=4).cells
  return ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]


def run_cells(path: str, short: dict | None = None) -> dict:
  """Runs the notebook's code cells in one scope and returns it; `short` replaces the values
  of the settings cell (the first after which its first key is defined) for a quick run."""
  scope: dict = {}
  pending = dict(short or {})
  for i, source in enumerate(code_cells(path)):
    exec(compile(source, f"{path}:cell{i}", "exec"), scope)
    if pending and next(iter(pending)) in scope:
      scope.update(pending)
      pending = {}
  return scope


def run_headless(monkeypatch, path: str, short: dict | None = None) -> dict:
  """run_cells with matplotlib's non-interactive backend (no display in tests), its figures
  closed afterwards."""
  monkeypatch.setenv("MPLBACKEND", "Agg")
  scope = run_cells(path, short)
  if scope.get("plt") is not None:
    scope["plt"].close("all")
  return scope


def test_compose_notebook_builds_simulates_and_plots(monkeypatch):
  monkeypatch.setenv("MPLBACKEND", "Agg")  # no display in tests
  # The notebook's jax.jit, compiled with XLA's fast, unoptimized backend (tests only).
  monkeypatch.setattr(jax, "jit", functools.partial(
    jax.jit, compiler_options={"xla_backend_optimization_level": 0}))
  scope = run_cells(NOTEBOOK)
  m, scene = scope["m"], scope["scene"]
  assert m.nu == 4 and m.nbody == 1 + 1 + 2 * 3 + 2
  # The balls came to rest on the floor (height = radius), the servo follows its target.
  np.testing.assert_allclose(scope["ball_z"]["ball"][-1], 0.06, atol=2e-3)
  np.testing.assert_allclose(scope["ball_z"]["ball_1"][-1], 0.08, atol=2e-3)
  follow = np.corrcoef(scope["shoulder"][100:], scope["targets"][100:, 0])[0, 1]
  assert follow > 0.9
  assert scene.find("joint", "arm/elbow") is scope["arms"][0].find("joint", "elbow")
  assert [a.model for a in scope["arms"]] == ["arm", "arm_1"]  # renamed as dm_control
  if scope["plt"] is not None:
    scope["plt"].close("all")
