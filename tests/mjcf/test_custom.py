"""<custom> numeric/text/tuple data compile to mjModel's numeric_*, text_*, tuple_* fields."""

import pytest

mujoco = pytest.importorskip("mujoco")

import numpy as np  # noqa: E402
from mujoco_compare import load_both  # noqa: E402

import jaxmj  # noqa: E402

XML = """<mujoco>
  <custom>
    <numeric name="a" data="1 2 3"/><numeric name="b" size="5" data="1 2"/>
    <numeric name="c" size="2"/>
    <text name="t" data="hello world"/><text name="u" data="x"/>
    <tuple name="tp">
      <element objtype="body" objname="b1" prm="0.5"/><element objtype="geom" objname="g"/>
      <element objtype="numeric" objname="a" prm="2"/><element objtype="tuple" objname="tq"/>
    </tuple>
    <tuple name="tq"><element objtype="xbody" objname="world"/></tuple>
  </custom>
  <worldbody><body name="b1"><geom name="g" size="1"/></body></worldbody>
</mujoco>"""

FIELDS = ("nnumeric", "nnumericdata", "numeric_adr", "numeric_size", "numeric_data", "ntext",
          "ntextdata", "text_adr", "text_size", "text_data", "ntuple", "ntupledata",
          "tuple_adr", "tuple_size", "tuple_objtype", "tuple_objid", "tuple_objprm")


def test_custom_fields_match_mujoco():
  m, mj = load_both(xml=XML)
  for name in FIELDS:
    ours, ref = getattr(m, name), getattr(mj, name)
    if isinstance(ref, bytes):
      assert ours == ref, name
    else:
      np.testing.assert_array_equal(np.asarray(ours), ref, err_msg=name)
  assert jaxmj.id2name(m, "numeric", 1) == "b" and jaxmj.name2id(m, "tuple", "tq") == 1
  assert jaxmj.name2id(m, "text", "u") == 1


@pytest.mark.parametrize("custom, message", [
  ('<numeric name="a" size="1" data="1 2"/>', "too much data"),
  ('<numeric name="a"/>', "size must be positive"),
  ('<numeric data="1"/>', "missing required attribute 'name'"),
  ('<text name="x"/>', "cannot be empty"),
  ('<tuple name="x"><element objtype="body" objname="zz"/></tuple>', "unrecognized object"),
  ('<tuple name="x"/>', "is empty"),
  ('<numeric name="a" data="1"/><numeric name="a" data="1"/>', "repeated name"),
])
def test_bad_custom_data_is_named(custom, message):
  xml = f"<mujoco><custom>{custom}</custom></mujoco>"
  with pytest.raises(ValueError):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match=message):
    jaxmj.Model.from_xml_string(xml)
