"""<body sleep> against mujoco 4.0.0: the policy is taken and stored per tree as
tree_sleep_policy (auto resolved to AUTO_NEVER for actuated trees and trees a tendon couples),
and misplaced policies get MuJoCo's error. The sleep flag itself stays refused by name
(tests/test_flags.py)."""

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


# trees a, b, c, d, e with hinges; each case: tendons over them, the policies MuJoCo gives
_COUPLED = """<mujoco><worldbody><site name="w" pos="0 0 3"/>{}</worldbody>
<tendon>{{}}</tendon></mujoco>""".format("".join(
  f'<body pos="{i} 0 1"><joint name="j{n}"/><geom name="g{n}" size=".1"/><site name="s{n}"/>'
  '</body>' for i, n in enumerate("abcde")))


@pytest.mark.parametrize("tendons, policy", [
  ('<spatial stiffness="10"><site site="w"/><site site="sa"/></spatial>', [2] * 5),
  ('<spatial range="0 2"><site site="sa"/><site site="sb"/></spatial>', [2] * 5),
  ('<spatial damping="1"><site site="sa"/><site site="sb"/></spatial>', [1, 1, 2, 2, 2]),
  ('<fixed stiffness="0 1"><joint joint="ja" coef="1"/><joint joint="jb" coef="1"/></fixed>',
   [1, 1, 2, 2, 2]),
  ('<fixed frictionloss="1" armature="1"><joint joint="ja" coef="1"/><joint joint="jb" '
   'coef="1"/></fixed>', [2] * 5),
  ('<spatial><site site="sa"/><geom geom="gb"/><site site="sc"/></spatial>', [1, 1, 1, 2, 2]),
  ('<spatial stiffness="1"><site site="sa"/><site site="sb"/></spatial><fixed><joint '
   'joint="jb" coef="1"/><joint joint="jc" coef="1"/></fixed>', [1, 1, 2, 2, 2]),
])
def test_a_tendon_coupling_trees_keeps_them_awake_as_in_mujoco(tendons, policy):
  # more than two trees, or two with a spring or damper: AUTO_NEVER (MuJoCo's
  # model/replicate/tendon.xml: 18 limit tendons, each through three trees, all 37 never)
  m, mj = check(_COUPLED.format(tendons))
  np.testing.assert_array_equal(m.tree_sleep_policy, mj.tree_sleep_policy)
  assert list(m.tree_sleep_policy) == policy


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
