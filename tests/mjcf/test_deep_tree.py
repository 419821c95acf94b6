"""Deep body trees: parsed as deep as MuJoCo's XML parser goes, refused past it as MuJoCo
refuses them."""

import mujoco
import pytest
from test_compile import differences

import jaxmj
from jaxmj.mjcf.spec import parse


def chain(n: int) -> str:
  """n nested bodies, one per line, each with a hinge and a sphere; body k is on line k."""
  bodies = "".join('<body pos="0 0 .1"><joint axis="1 0 0"/><geom size=".01"/>\n'
                   for _ in range(n))
  return f"<mujoco><worldbody>{bodies}{'</body>' * n}</worldbody></mujoco>"


def test_400_deep_chain_compiles_as_mujoco():
  m = jaxmj.Model.from_xml_string(chain(400))
  assert differences(m, mujoco.MjModel.from_xml_string(chain(400))) == []
  assert m.nbody == 401


def test_parse_reaches_mujocos_depth_and_stops_with_its_error():
  """496 bodies with geoms put the geoms 499 elements deep, MuJoCo's last level; one more
  body is MuJoCo's XML_ELEMENT_DEPTH_EXCEEDED, and jaxmj's, naming the line."""
  mujoco.MjModel.from_xml_string(chain(496))
  assert len(parse.parse_string(chain(496)).children[0].children) == 1
  with pytest.raises(ValueError, match="XML_ELEMENT_DEPTH_EXCEEDED"):
    mujoco.MjModel.from_xml_string(chain(497))
  with pytest.raises(jaxmj.MJCFError, match="Element nesting is too deep") as info:
    jaxmj.Model.from_xml_string(chain(497))
  assert info.value.line == 497 and "499 levels" in str(info.value)


def test_nesting_past_libxml2s_huge_limit_gives_the_same_error():
  with pytest.raises(jaxmj.MJCFError, match="XML_ELEMENT_DEPTH_EXCEEDED"):
    jaxmj.Model.from_xml_string(chain(3000))


def test_deep_included_file_is_held_to_the_limit(tmp_path):
  """MuJoCo parses each file on its own, so the limit applies per file."""
  (tmp_path / "part.xml").write_text(chain(497).replace("mujoco>", "mujocoinclude>"))
  (tmp_path / "main.xml").write_text('<mujoco><include file="part.xml"/></mujoco>')
  with pytest.raises(jaxmj.MJCFError, match="Element nesting is too deep") as info:
    jaxmj.Model.from_xml_path(tmp_path / "main.xml")
  assert info.value.file.endswith("part.xml")
