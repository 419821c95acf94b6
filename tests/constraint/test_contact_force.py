"""mj_contactForce (jaxmj/constraint/contact_force.py): every active slot's force and torque
in its contact frame equals MuJoCo's for the contact with the same geoms and position, under
both cones; inactive slots read zero. Adhesion's net force: tests/constraint/test_adhesion.py."""

import jax
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import FAST, load_both, to_jaxmj  # noqa: E402

import jaxmj  # noqa: E402

RESTING = """
<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <body pos="0 0 .2"><freejoint/><geom type="sphere" size=".1" condim="1"/></body>
    <body pos=".5 0 .2" euler="0 90 0"><freejoint/><geom type="capsule" size=".05 .2"/></body>
    <body pos="-.5 0 .2"><freejoint/><geom type="box" size=".1 .1 .1" condim="4"/></body>
    <body pos="0 .5 .2"><freejoint/><geom type="sphere" size=".1" condim="6"/></body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_contact_force_equals_mujoco(cone):
  """Resting primitives (condim 1 to 6): every active slot's force equals mj_contactForce of
  the MuJoCo contact with the same geoms and position; inactive slots are zero."""
  xml = RESTING.replace("<option ", f'<option cone="{cone}" ')
  m, mj = load_both(xml=xml)
  md = mujoco.MjData(mj)
  for _ in range(300):
    mujoco.mj_step(mj, md)
  mujoco.mj_forward(mj, md)
  d = to_jaxmj(m, md).replace(qacc_warmstart=md.qacc_warmstart.copy())
  d = jax.jit(jaxmj.forward, compiler_options=FAST)(m, d)
  forces = np.asarray(jaxmj.contact_forces(m, d))
  active = np.flatnonzero(np.asarray(d.contact.active))
  assert len(active) == md.ncon > 0
  res = np.zeros(6)
  for i in range(md.ncon):
    c = md.contact[i]
    mujoco.mj_contactForce(mj, md, i, res)
    match = [k for k in active if {d.contact.geom1[k], d.contact.geom2[k]} == set(c.geom)
             and np.allclose(d.contact.pos[k], c.pos, atol=1e-6)]
    assert len(match) == 1, (i, c.geom)
    np.testing.assert_allclose(forces[match[0]], res, atol=1e-6 * max(1, np.abs(res).max()))
  inactive = np.setdiff1d(np.arange(len(forces)), active)
  assert np.all(forces[inactive] == 0)
  np.testing.assert_allclose(jaxmj.contact_force(m, d, int(active[0])), forces[active[0]])
