"""notebooks/trajectory_optimization.ipynb runs with short settings: the swing-up's segment
gaps close, the exact pushing gradient is zero where the smoothed one lowers the cost, and
MJX's attempts behave as the notebook states (the README shows the full run)."""

import os

import numpy as np
import pytest
from conftest import ROOT
from test_notebook import run_cells

NOTEBOOK = os.path.join(ROOT, "notebooks", "trajectory_optimization.ipynb")
SHORT = {"CART_ITERS": 4, "PUSH_ITERS": 6}


@pytest.mark.slow  # several gradient compiles (minutes on 2 shared cores)
def test_trajectory_optimization_notebook_runs_short(monkeypatch):
  monkeypatch.setenv("MPLBACKEND", "Agg")  # no display in tests
  scope = run_cells(NOTEBOOK, SHORT)
  gaps = scope["gap_history"]
  assert np.all(np.isfinite(scope["cart_history"])) and gaps[-1] < gaps[0]
  exact, smooth = scope["push_histories"].values()
  assert exact == [exact[0]] * len(exact)  # zero gradient: Adam never moves
  assert smooth[-1] < smooth[0]
  assert scope["mjx_cart_gap"] < 1e-4  # MJX differentiates the constraint-free cartpole
  assert "while_loop" in scope["mjx_push_error"]  # and refuses the contact
  if scope["plt"] is not None:
    scope["plt"].close("all")
