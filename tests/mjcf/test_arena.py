"""<size memory> against mujoco 4.0.0: read as MuJoCo reads it, and a warning naming it where
MuJoCo's arena may overflow (MuJoCo then drops constraints or stops; jaxmj has no arena)."""

import re
import warnings

import pytest

mujoco = pytest.importorskip("mujoco")

from test_compile import check  # noqa: E402

import jaxmj  # noqa: E402

STACK = """<mujoco><size memory="{}"/><worldbody><geom type="plane" size="2 2 .1"/>
  <body pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
  <body pos="0 0 .31"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
</worldbody></mujoco>"""


def test_small_arena_warns_where_mujoco_drops_constraints():
  mj = mujoco.MjModel.from_xml_string(STACK.format("6K"))
  d = mujoco.MjData(mj)
  for _ in range(3):
    mujoco.mj_step(mj, d)
  assert d.ncon == 4 and d.nefc == 0  # MuJoCo: every row of the step dropped
  assert d.warning[mujoco.mjtWarning.mjWARN_CNSTRFULL].number > 0
  with pytest.warns(UserWarning, match=re.escape('<size memory="6K">') + ".*keeps every"):
    jaxmj.Model.from_xml_string(STACK.format("6K"))


@pytest.mark.parametrize("memory", ["1M", "64m", "-1"])
def test_ample_or_default_arena_compiles_quietly(memory):
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    check(STACK.format(memory))


@pytest.mark.parametrize("memory", ["1.5M", "abc", "-5", "10KB", "99999999999999999999"])
def test_malformed_memory_is_mujocos_error(memory):
  msg = "unsigned integer with an optional suffix {K,M,G,T,P,E} is expected"
  with pytest.raises(ValueError, match=re.escape(msg)):
    mujoco.MjModel.from_xml_string(STACK.format(memory))
  with pytest.raises(jaxmj.MJCFError, match=re.escape(msg)) as info:
    jaxmj.Model.from_xml_string(STACK.format(memory))
  assert info.value.attribute == "memory"
