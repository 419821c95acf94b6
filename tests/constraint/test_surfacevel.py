"""Geom surface velocity (geom surfacevel, jaxmj/constraint/surfacevel.py) against mujoco 4.0.0.

A tilted conveyor box carries a ball; a floor spinning about its normal carries a sphere
with its own surface velocity (condim 4: spin row). Held to 1e-10: the contacts'
surface velocities (MjContact.surfacevel) and the active rows' efc_vel and efc_aref (sorted
sets: slot order is jaxmj's); the solver's qacc to 1e-6 (the solvers stop at different
iterates, as without surfacevel); a 200-step trajectory likewise (slow).
"""

import jax
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import FAST, load_both, rollout_error, to_jaxmj  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.constraint.surfacevel import contact_surfacevel  # noqa: E402

EXACT, SOLVED = 1e-10, 1e-6
XML = """<mujoco><option timestep="0.002" cone="{cone}" tolerance="1e-14"/><worldbody>
<geom type="plane" size="2 2 .1" surfacevel="0 0 0 0 0 .7" condim="4"/>
<geom type="box" size=".4 .2 .05" pos="1 0 .05" euler="0 10 30" surfacevel=".5 .2 0 0 0 0"/>
<body pos="1 0 .149"><freejoint/><geom type="sphere" size=".05"/></body>
<body pos="-.5 .3 .099"><freejoint/>
  <geom type="sphere" size=".1" condim="4" surfacevel=".1 0 0 .3 -.2 .5"/></body>
</worldbody></mujoco>"""


def _state(cone: str):
  m, mj = load_both(xml=XML.format(cone=cone))
  dm = mujoco.MjData(mj)
  dm.qvel[:] = 0.2 * np.random.default_rng(1).normal(size=mj.nv)
  return m, mj, dm, to_jaxmj(m, dm)


def _sorted_rows(x):
  x = np.round(np.asarray(x), 9)
  return x[np.lexsort(x.T[::-1])]


# slow: the default suite's time budget; test_contact_pairs checks the compiled fields
@pytest.mark.slow
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_surface_velocity_rows_match_mujoco(cone):
  m, mj, dm, d = _state(cone)
  mujoco.mj_forward(mj, dm)
  d = jax.jit(jaxmj.forward, compiler_options=FAST)(m, d)
  active = np.asarray(d.contact.active)
  assert active.sum() == dm.ncon == 2
  ours = np.asarray(contact_surfacevel(m, d))[active]
  ref = np.array([c.surfacevel for c in dm.contact[: dm.ncon]])
  assert np.abs(ref).max() > 0.1
  np.testing.assert_allclose(_sorted_rows(ours), _sorted_rows(ref), rtol=0, atol=EXACT)
  rows = np.asarray(d.efc_active)
  for name in ("efc_vel", "efc_aref"):
    np.testing.assert_allclose(np.sort(np.asarray(getattr(d, name))[rows]),
                               np.sort(getattr(dm, name)), rtol=0, atol=EXACT, err_msg=name)
  np.testing.assert_allclose(d.qacc, dm.qacc, rtol=0, atol=SOLVED)


@pytest.mark.slow
def test_conveyor_trajectory_matches_mj_step():
  m, mj, dm, _ = _state("pyramidal")
  err, *_ = rollout_error(m, mj, 200, dm=dm)
  assert err < SOLVED
