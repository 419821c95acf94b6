"""Gravity compensation and the inertia-box fluid model against mujoco 4.0.0 (qfrc_gravcomp,
qfrc_fluid, qfrc_passive at random states, wind included; actuatorgravcomp joints route their
compensation to qfrc_actuator)."""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import assert_stage_matches, load_both  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.smooth import fluid  # noqa: E402

MEDIUM = """<mujoco><option density="1.2" viscosity="0.3" wind="1 -2 .5"/><worldbody>
<body pos="0 0 1" gravcomp=".7"><joint axis="0 1 0" damping=".3"/>
  <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
  <body pos=".5 0 0" gravcomp="1"><joint axis="1 1 0" actuatorgravcomp="true"/>
    <geom type="box" size=".2 .05 .03" pos=".2 0 0"/>
    <body pos=".4 0 0"><joint type="ball"/><geom type="ellipsoid" size=".1 .05 .08"
      pos=".1 0 0"/></body></body></body>
<body pos="1 1 0" gravcomp="-.5"><freejoint/><geom type="box" size=".1 .2 .3"
  euler="10 20 30"/></body>
</worldbody></mujoco>"""


@pytest.mark.slow
@pytest.mark.parametrize("head", [
  "", pytest.param("<option><flag gravity=\"disable\"/></option>", marks=pytest.mark.slow)],
  ids=["gravity", "no_gravity"])
def test_gravcomp_and_fluid_match(head):
  xml = MEDIUM.replace("<worldbody>", head + "<worldbody>", 1)
  tol = {"qfrc_gravcomp": 1e-9, "qfrc_fluid": 1e-9, "qfrc_passive": 1e-9,
         "qfrc_actuator": 1e-9, "qacc": 1e-8}
  assert_stage_matches(xml, jaxmj.forward, mujoco.mj_forward, tol, seeds=range(3), tol=tol)


@pytest.mark.slow
def test_no_medium_no_fluid_force():
  m, _ = load_both(xml=MEDIUM.replace('density="1.2" viscosity="0.3"', ""))
  d = jaxmj.forward(m, jaxmj.make_data(m).replace(qvel=np.ones(m.nv)))
  np.testing.assert_array_equal(d.qfrc_fluid, 0.0)


def test_gravcomp_set_at_run_time_needs_compiled_gravcomp():
  """As in MuJoCo (mj_gravcomp tests m->ngravcomp), body_gravcomp set on a model compiled
  without gravcomp compensates nothing."""
  m, mj = load_both(xml="""<mujoco><worldbody><body><joint axis="0 1 0"/>
    <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/></body></worldbody></mujoco>""")
  assert m.ngravcomp == mj.ngravcomp == 0
  mj.body_gravcomp[1] = 1.0
  dm = mujoco.MjData(mj)
  mujoco.mj_forward(mj, dm)
  edited = m.replace(body_gravcomp=m.body_gravcomp.at[1].set(1.0))
  np.testing.assert_array_equal(dm.qfrc_gravcomp, 0.0)
  np.testing.assert_array_equal(fluid.gravcomp(edited, jaxmj.make_data(m)), dm.qfrc_gravcomp)
