"""notebooks/compose.ipynb runs: its code cells build the multi-robot scene from parts,
simulate it and plot (plotting only where matplotlib is installed)."""

import functools
import json
import os

import jax
import numpy as np
from conftest import ROOT

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


def test_compose_notebook_builds_simulates_and_plots(monkeypatch):
  monkeypatch.setenv("MPLBACKEND", "Agg")  # no display in tests
  # The notebook's jax.jit, compiled with XLA's fast, unoptimized backend (tests only).
  monkeypatch.setattr(jax, "jit", functools.partial(
    jax.jit, compiler_options={"xla_backend_optimization_level": 0}))
  scope: dict = {}
  for i, source in enumerate(code_cells(NOTEBOOK)):
    exec(compile(source, f"{NOTEBOOK}:cell{i}", "exec"), scope)
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
