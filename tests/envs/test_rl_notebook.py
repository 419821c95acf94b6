"""notebooks/rl_training.ipynb runs end to end in its smoke setting (JAXMJ_NOTEBOOK_SMOKE)."""

import os

import jax
import pytest
from conftest import ROOT
from test_notebook import run_cells

pytest.importorskip("brax")

NOTEBOOK = os.path.join(ROOT, "notebooks", "rl_training.ipynb")


@pytest.mark.slow  # five compiles (two evaluations, PPO, load_policy, the filmed episode)
def test_rl_notebook_trains_saves_and_reloads_a_policy(tmp_path, monkeypatch):
  monkeypatch.setenv("MPLBACKEND", "Agg")
  monkeypatch.setenv("JAXMJ_NOTEBOOK_SMOKE", "1")
  monkeypatch.chdir(tmp_path)  # the notebook writes runs/ where it runs
  jax.config.update("jax_enable_x64", False)  # float32, as users train
  try:
    scope = run_cells(NOTEBOOK)
  finally:
    jax.config.update("jax_enable_x64", True)
  assert len(scope["result"].curve) == 6
  assert (tmp_path / "runs" / "notebook-cartpole" / "curve.png").exists()
  assert scope["returns"].shape == (8,)
  if scope["frames"] is not None:  # 100 steps, every 4th filmed
    assert scope["frames"].shape == (25, 240, 320, 3)
  if scope["plt"] is not None:
    scope["plt"].close("all")
