"""notebooks/trajectory_optimization.ipynb runs with short settings: the swing-up's cost and
segment gaps fall, the exact pushing gradient is zero where the smoothed one lowers the cost;
with --runslow, MJX's attempts behave as the notebook states (the README shows the full run)."""

import os

import numpy as np
import pytest
from conftest import ROOT
from test_notebook import run_headless

NOTEBOOK = os.path.join(ROOT, "notebooks", "trajectory_optimization.ipynb")
# Three gradient compiles (cartpole, pushing exact and smoothed; MJX's with --runslow);
# iterations cost milliseconds.
SHORT = {"CART_ITERS": 30, "PUSH_ITERS": 20, "RUN_MJX": False}


def _run(monkeypatch, **settings):
  return run_headless(monkeypatch, NOTEBOOK, dict(SHORT, **settings))


def test_trajectory_optimization_notebook_runs_short(monkeypatch):
  scope = _run(monkeypatch)
  costs, gaps = scope["cart_history"], scope["gap_history"]
  print(f"swing-up cost {costs[0]:.3g} -> {costs[-1]:.3g}; pushing "
        f"{[h[-1] for h in scope['push_histories'].values()]}")
  assert np.all(np.isfinite(costs)) and costs[-1] < 0.2 * costs[0] and gaps[-1] < gaps[0]
  exact, smooth = scope["push_histories"].values()
  assert exact == [exact[0]] * len(exact)  # zero gradient: Adam never moves
  assert smooth[-1] < 0.1 * smooth[0]


@pytest.mark.slow  # MJX's gradient compiles
def test_trajectory_optimization_notebook_mjx_attempts(monkeypatch):
  scope = _run(monkeypatch, CART_ITERS=2, PUSH_ITERS=2, RUN_MJX=True)
  assert scope["mjx_cart_gap"] < 1e-4  # MJX differentiates the constraint-free cartpole
  assert "while_loop" in scope["mjx_push_error"]  # and refuses the contact
