"""notebooks/getting_started.ipynb runs with short settings: it loads, steps, batches,
plots, and films (the video only where MuJoCo has an OpenGL backend)."""

import functools
import os

import jax
import mujoco
import numpy as np
import pytest
from conftest import MODELS, ROOT
from test_notebook import run_cells

# jaxmj's own jits (e.g. rollout's) are decorated before the tests patch jax.jit:
# compiler_options are refused on a nested jit
import jaxmj  # noqa: F401

NOTEBOOK = os.path.join(ROOT, "notebooks", "getting_started.ipynb")
SHORT = {"NSTEP": 60, "NWORLD": 4, "FILM_EVERY": 20, "ROOT": ROOT}


@pytest.mark.usefixtures("cli_cache_restored")  # the notebook turns XLA's persistent cache on
def test_getting_started_notebook_runs_short(monkeypatch, tmp_path):
  monkeypatch.setenv("MPLBACKEND", "Agg")  # no display in tests
  monkeypatch.chdir(tmp_path)  # the video is written to the working directory
  monkeypatch.setattr(jax, "jit", functools.partial(
    jax.jit, compiler_options={"xla_backend_optimization_level": 0}))
  scope = run_cells(NOTEBOOK, SHORT)
  pole = scope["pole"]
  assert pole.shape == (4, 60)
  # The batch's last world (start +0.4 rad) as MuJoCo simulates it.
  mjm = mujoco.MjModel.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  mjd = mujoco.MjData(mjm)
  mjd.qpos[1] = 0.4
  for _ in range(60):
    mujoco.mj_step(mjm, mjd)
  np.testing.assert_allclose(pole[-1, -1], mjd.qpos[1], rtol=0, atol=1e-10)
  if scope["frames"] is not None:
    assert scope["frames"].shape == (3, 240, 320, 3)
    assert (tmp_path / "cartpole.mp4").stat().st_size > 0
  if scope["plt"] is not None:
    scope["plt"].close("all")
