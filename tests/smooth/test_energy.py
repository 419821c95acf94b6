"""Potential and kinetic energy against mj_energyPos / mj_energyVel (energy flag on)."""

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from mujoco_compare import assert_stage_matches, load_both  # noqa: E402

import jaxmj  # noqa: E402

# Springs on every joint type, with springref and a tilted free-body reference.
XML = """
<mujoco>
  <option>
    <flag energy="{energy}" gravity="{gravity}" spring="{spring}" contact="disable"/>
  </option>
  <worldbody>
    <body pos="0 0 1">
      <joint type="free" stiffness="3"/>
      <geom type="box" size=".1 .2 .3" mass="2"/>
      <body pos="0 .3 0">
        <joint type="ball" stiffness="2"/>
        <geom type="capsule" size=".05" fromto="0 0 0 0 .3 0"/>
        <body pos="0 .3 0">
          <joint type="hinge" axis="1 0 0" stiffness="5" springref="30"/>
          <joint type="slide" axis="0 1 0" stiffness="7" springref=".1"/>
          <geom size=".07"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.mark.parametrize("gravity,spring", [("enable", "enable"), ("disable", "enable"),
                                            ("enable", "disable")])
def test_energy_equals_mujoco(gravity, spring):
  m, mj = load_both(xml=XML.format(energy="enable", gravity=gravity, spring=spring))
  def check(d, md, seed):
    np.testing.assert_allclose(jaxmj.energy_pos(m, d), md.energy[0], atol=1e-10)
    np.testing.assert_allclose(jaxmj.energy_vel(m, d), md.energy[1], atol=1e-10)

  assert_stage_matches((m, mj), jaxmj.forward, mujoco.mj_forward, ["energy"], seeds=range(3),
                       tol=1e-10, rtol=1e-12, check=check)


def test_energy_is_zero_without_the_flag():
  m, _ = load_both(xml=XML.format(energy="disable", gravity="enable", spring="enable"))
  d = jax.jit(jaxmj.forward)(m, jaxmj.make_data(m))
  np.testing.assert_array_equal(d.energy, [0.0, 0.0])
