"""notebooks/system_identification.ipynb runs with short settings: L-BFGS lowers the fit
error, and MJX's gradient of the same fit error agrees with jaxmj's (the README shows the
full run, within 1% of every parameter)."""

import os

import pytest
from conftest import ROOT
from test_notebook import run_cells

NOTEBOOK = os.path.join(ROOT, "notebooks", "system_identification.ipynb")
SHORT = {"NSEG": 4, "SEG": 30, "ITERS": 4}


@pytest.mark.slow  # several gradient compiles (minutes on 2 shared cores)
def test_system_identification_notebook_runs_short(monkeypatch):
  monkeypatch.setenv("MPLBACKEND", "Agg")  # no display in tests
  scope = run_cells(NOTEBOOK, SHORT)
  history = scope["history"]
  assert scope["result"].fun < 0.5 * history[0]
  assert scope["mjx_gap"] < 1e-4
  if scope["plt"] is not None:
    scope["plt"].close("all")
