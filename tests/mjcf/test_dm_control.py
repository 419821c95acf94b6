"""dm_control's models (installed package files, skipped without it) compile like MuJoCo:
the control suite, and the skinned walkers (dog, rodent) of its locomotion library."""

import glob
import os
import warnings

import pytest

mujoco = pytest.importorskip("mujoco")
dm_control = pytest.importorskip("dm_control")

from test_compile import differences, same_names  # noqa: E402

import jaxmj  # noqa: E402

ROOT = os.path.dirname(dm_control.__file__)
SLOW = {"suite/dog.xml", "locomotion/walkers/assets/dog_v2/dog.xml"}  # ~25 s each
FILES = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "suite", "*.xml")))
FILES += ["locomotion/walkers/assets/rodent.xml", "locomotion/walkers/assets/dog_v2/dog.xml"]


@pytest.mark.parametrize("rel", [pytest.param(r, marks=pytest.mark.slow) if r in SLOW else r
                                 for r in FILES])
def test_compiles_like_mujoco(rel, tmp_path, monkeypatch):
  """Every compared field equal to MuJoCo's, the suite's skybox's random dots included."""
  monkeypatch.chdir(tmp_path)  # mujoco may write MUJOCO_LOG.TXT
  path = os.path.join(ROOT, rel)
  if not os.path.exists(path):
    pytest.skip(f"{rel} not in this dm_control")
  mj = mujoco.MjModel.from_xml_path(path)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)  # settotalmass is deprecated
    m = jaxmj.Model.from_xml_path(path)
  assert differences(m, mj) == []
  same_names(m, mj)
  if "dog" in rel or "rodent" in rel:
    assert m.nskin == 1 and m.nskinbonevert > 1000
