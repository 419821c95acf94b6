"""Contact sensor fields linvel/angvel and reduce="netforce" against mj_forward (MuJoCo 4.0).

A box resting on the floor with a ball on top, all moving: the sensors match the box's
contacts from both sides (direct and reversed), so flipped frames are covered. Contacts in
the gap layer (no rows) are matched as MuJoCo lists them.
"""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import assert_stage_matches, load_both  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.mjcf import MJCFError  # noqa: E402

XML = """
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body name="box" pos="0 0 .095">
      <freejoint/>
      <geom name="gbox" type="box" size=".1 .1 .1"/>
      <site name="bottom" pos="0 0 -.1" type="box" size=".2 .2 .02"/>
    </body>
    <body name="ball" pos=".03 .01 .28">
      <freejoint/>
      <geom name="gball" type="sphere" size=".09"/>
    </body>
  </worldbody>
  <sensor>
    <contact name="box_floor" geom1="gbox" geom2="floor" data="found dist linvel angvel"
             reduce="mindist" num="4"/>
    <contact name="floor_box" geom1="floor" geom2="gbox" data="linvel angvel"
             reduce="mindist" num="2"/>
    <contact name="ball_any" body1="ball" data="normal tangent linvel angvel"/>
    <contact name="site_vel" site="bottom" data="found linvel" reduce="maxforce" num="2"/>
    <contact name="box_net" body1="box" reduce="netforce"
             data="found force torque dist pos normal tangent"/>
    <contact name="net_box" body2="box" reduce="netforce" num="2" data="found force torque pos"/>
    <contact name="floor_net" subtree1="world" geom2="gbox" reduce="netforce" data="force"/>
    <contact name="none_net" body1="ball" body2="box" reduce="netforce" data="found force pos"/>
  </sensor>
</mujoco>"""


CAP = '<custom><numeric name="max_contact_points" data="5"/></custom>'


@pytest.mark.parametrize("cap", [False, True], ids=["static slots", "capped"])
def test_contact_linvel_angvel_netforce_match_mj_forward(cap):
  """Capped: MJX's max_contact_points = 5 of the 6 candidate slots, 5 contacts: the slots'
  geoms are traced (Contact.geom) and the sensors match them, and order them, as traced."""
  m, mj = load_both(xml=XML.replace("<mujoco>", "<mujoco>" + CAP) if cap else XML)
  assert m.unsupported == ()
  if cap:
    assert jaxmj.make_data(m).contact.geom.shape == (5, 2)
  np.testing.assert_array_equal(m.sensor_needstage, mj.sensor_needstage)
  def state(m, mj, seed):
    rng = np.random.default_rng(seed)
    d = mujoco.MjData(mj)
    d.qpos[2] -= rng.uniform(0, 0.004)
    d.qpos[7:10] += rng.normal(scale=0.01, size=3)
    d.qvel[:] = rng.normal(size=mj.nv)
    return d

  def check(out, d, seed):
    assert d.ncon == 5 if cap else d.ncon >= 5
    for i in range(mj.nsensor):
      a, n = mj.sensor_adr[i], mj.sensor_dim[i]
      np.testing.assert_allclose(out.sensordata[a:a + n], d.sensordata[a:a + n], rtol=1e-8,
                                 atol=1e-8, err_msg=mj.sensor(i).name)

  assert_stage_matches((m, mj), jaxmj.forward, mujoco.mj_forward, [], seeds=range(3),
                       state=state, check=check)


GAP = """<mujoco><worldbody><geom name="floor" type="plane" size="2 2 .1"/>
  <body name="hover" pos="0 0 .17"><freejoint/>
    <geom type="sphere" size=".1" margin=".02" gap=".1"/></body>
  <body name="rest" pos=".5 0 .11"><freejoint/>
    <geom type="sphere" size=".1" margin=".02" gap=".1"/></body>
</worldbody><sensor>
  <contact geom1="floor" data="found force dist normal" num="2"/>
  <contact body1="hover" data="found dist"/><contact body1="hover" reduce="mindist"/>
</sensor></mujoco>"""


# the hovering sphere's gap from an explicit pair; 2 of the 3 candidate slots (traced geoms)
PAIR_CAP = (CAP.replace('"5"', '"2"') + '<contact><pair geom1="floor" geom2="hover" '
            'margin=".02" gap=".1"/></contact></mujoco>')


@pytest.mark.parametrize("cap", [False, True], ids=["static slots", "capped"])
def test_contacts_in_the_gap_layer_are_listed_without_force(cap):
  """MuJoCo lists contacts out to margin + gap, those beyond the margin without rows: the
  contact sensor matches them too (found, dist, normal; force 0), in MuJoCo's order.
  Capped (2 slots of 3), the hovering sphere's gap is its explicit pair's."""
  xml = GAP
  if cap:
    xml = xml.replace('<geom type="sphere" size=".1" margin=".02" gap=".1"/></body>',
                      '<geom name="hover" type="sphere" size=".1"/></body>', 1)
    xml = xml.replace("</mujoco>", PAIR_CAP)
  m, mj = load_both(xml=xml)
  assert (jaxmj.make_data(m).contact.geom is not None) == cap

  def check(out, d, seed):
    assert d.ncon == 2 and d.contact[0].efc_address == -1  # the hovering sphere's
    np.testing.assert_allclose(out.sensordata, d.sensordata, atol=1e-8)

  assert_stage_matches((m, mj), jaxmj.forward, mujoco.mj_forward, [], seeds=range(1),
                       state=lambda m, mj, seed: mujoco.MjData(mj), check=check)


def test_netforce_with_linvel_is_an_error():
  xml = XML.replace('data="found force pos"/>', 'data="found linvel"/>')
  with pytest.raises(MJCFError, match="netforce reduction is incompatible"):
    jaxmj.Model.from_xml_string(xml)
