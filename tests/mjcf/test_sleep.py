"""<body sleep> against mujoco 4.0.0: the policy is taken and stored per tree as
tree_sleep_policy (auto resolved to AUTO_NEVER for actuated trees), and misplaced policies
get MuJoCo's error. The sleep flag itself stays refused by name (tests/test_flags.py)."""

import re

import pytest

mujoco = pytest.importorskip("mujoco")

import numpy as np  # noqa: E402
from test_compile import check  # noqa: E402

import jaxmj  # noqa: E402

# Trees: a (auto, unactuated), b (init), c (a tendon actuator reaches it from b), d (so3 on a
# ball joint), e (allowed, actuated), f (never: the root below a static body), g (site with
# refsite in the world: static targets reach no tree).
TREES = """<mujoco><worldbody><site name="w"/>
  <body name="a" pos="0 0 1"><freejoint/><geom size=".1"/>
    <body><joint/><geom size=".1"/></body></body>
  <body name="b" pos="1 0 1" sleep="init"><freejoint/><geom size=".1"/><site name="sb"/></body>
  <body name="c" pos="2 0 1" sleep="auto"><joint/><geom size=".1"/><site name="sc"/></body>
  <body name="d" pos="3 0 1"><joint name="jd" type="ball"/><geom size=".1"/></body>
  <body name="e" pos="4 0 1" sleep="allowed"><joint name="je"/><geom size=".1"/></body>
  <body pos="5 0 1"><geom size=".1"/>
    <body sleep="never"><joint/><geom size=".1"/></body></body>
  <body name="g" pos="6 0 1"><freejoint/><geom size=".1"/><site name="sg"/></body>
  <body mocap="true"><site name="sm"/></body>
</worldbody>
<tendon><spatial name="t"><site site="sb"/><site site="sc"/></spatial></tendon>
<actuator><motor tendon="t"/><orientation joint="jd" kp="1"/><motor joint="je"/>
  <motor site="sm"/></actuator></mujoco>"""


def test_tree_sleep_policy_is_mujocos():
  m, mj = check(TREES)
  np.testing.assert_array_equal(m.tree_sleep_policy, mj.tree_sleep_policy)
  assert list(m.tree_sleep_policy) == [2, 5, 1, 1, 4, 3, 2]


@pytest.mark.parametrize("body", [
  '<body sleep="never"><geom size=".1"/></body>',  # static
  '<body mocap="true" sleep="init"/>',
  '<body><freejoint/><geom size=".1"/><body sleep="allowed"><joint/><geom size=".1"/></body>'
  '</body>',  # not the root of its tree
  '<body sleep="never"><geom size=".1"/><body><joint/><geom size=".1"/></body></body>',
])
def test_policy_off_a_movable_root_is_mujocos_error(body):
  xml = f"<mujoco><worldbody>{body}</worldbody></mujoco>"
  msg = "sleep policy only allowed for movable root bodies"
  with pytest.raises(ValueError, match=re.escape(msg)):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match=re.escape(msg)) as info:
    jaxmj.Model.from_xml_string(xml)
  assert info.value.attribute == "sleep"
