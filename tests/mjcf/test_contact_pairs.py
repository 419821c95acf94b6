"""<contact> against MuJoCo 4.0: explicit <pair>s and <exclude>s compile to the same
npair, nexclude, pair_* and exclude_signature as mjModel, along with every other field.

What MuJoCo 4.0 does, and these cases pin down:
- a pair's parameters come from the pair and its default class only; the two geoms'
  parameters are never mixed in (an unspecified attribute keeps the <pair> default);
- friction may have up to 5 values, solimp up to 5: the rest keep the (class) defaults;
- the geoms are swapped when geom1's body id is above geom2's (same body: written order);
  pair_signature = body1 << 16 | body2;
- exclude_signature = min(body) << 16 | max(body), with body ids (not weld ids);
- both lists are stable-sorted by signature (mjModel's order, not the document's).
"""

import pytest

mujoco = pytest.importorskip("mujoco")


import jax  # noqa: E402
import numpy as np  # noqa: E402
from mujoco_compare import model_differences  # noqa: E402

import jaxmj  # noqa: E402

PAIR_FIELDS = ("pair_dim", "pair_geom1", "pair_geom2", "pair_signature", "pair_solref",
               "pair_solreffriction", "pair_solimp", "pair_margin", "pair_gap", "pair_friction",
               "exclude_signature")


def contact_differences(m, mj) -> list[str]:
  out = [f"{n}: {getattr(m, n)} != {getattr(mj, n)}" for n in ("npair", "nexclude")
         if getattr(m, n) != getattr(mj, n)]
  for n in PAIR_FIELDS:
    ours, ref = np.asarray(getattr(m, n)), np.asarray(getattr(mj, n))
    if ours.size == ref.size:
      ours = ours.reshape(ref.shape)
    if ours.shape != ref.shape:
      out.append(f"{n}: shape {ours.shape} != {ref.shape}")
    elif not np.array_equal(ours.astype(float), ref.astype(float)):
      out.append(f"{n}: {ours.tolist()} != {ref.tolist()}")
  return out


def check(xml: str):
  m, mj = jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
  assert contact_differences(m, mj) == []
  assert model_differences(m, mj) == []
  return m, mj


# Geoms with distinct contact parameters, so that any mixing into a pair would show.
WORLD = """<worldbody>
  <geom name="floor" type="plane" size="1 1 .1" condim="1" friction=".5 .1 .2" priority="1"
        solref=".05 2" solimp=".5 .6 .01 .3 4" margin=".1" gap=".02" solmix="3"/>
  <geom name="post" size=".1" pos="1 0 0"/>
  <body name="a" pos="0 0 1"><freejoint/>
    <geom name="a0" size=".1" condim="4" friction=".9 .3 .4" solref=".03 .5" margin=".2"
          gap=".05" solmix=".5"/>
    <geom name="a1" size=".1" pos=".2 0 0" condim="6" solref="-100 -10"/>
    <body name="b" pos="0 0 1"><joint/><geom name="b0" size=".1"/></body>
  </body>
  <frame pos="0 2 0"><body name="c" pos="0 0 1"><freejoint/><geom name="c0" size=".1"/></body>
  </frame>
</worldbody>"""


def model(contact: str, default: str = "", head: str = "") -> str:
  return (f"<mujoco>{head}<default>{default}</default>{WORLD}<contact>{contact}</contact>"
          "</mujoco>")


CASES = {
  "pair_defaults_not_mixed": model('<pair geom1="a0" geom2="floor"/>'
                                   '<pair geom1="a1" geom2="a0"/>'),
  "pair_all_attributes": model(
    '<pair name="p" geom1="floor" geom2="b0" condim="6" friction=".1 .2 .3 .4 .5" '
    'solref="-100 -10" solreffriction=".01 .3" solimp=".1 .2 .003 .4 5" margin=".3" '
    'gap=".1"/>'),
  "pair_partial_vectors": model(
    '<pair geom1="a0" geom2="c0" friction=".1"/><pair geom1="a0" geom2="b0" friction=".1 .2"/>'
    '<pair geom1="b0" geom2="c0" friction=".1 .2 .3 .4" solimp=".1 .2"/>'
    '<pair geom1="post" geom2="c0" friction="" solimp=".7"/>'),
  "pair_condims": model("".join(f'<pair geom1="a0" geom2="post" condim="{c}"/>'
                                for c in (1, 3, 4, 6))),
  "pair_negative_and_zero_values": model(
    '<pair geom1="a0" geom2="post" friction="0 -1" margin="-.1" gap="0" solref="0 0"/>'),
  "pair_main_default": model('<pair geom1="a0" geom2="post"/><pair geom1="b0" geom2="a1" '
                             'friction=".4" margin=".2"/>',
                             '<pair condim="4" friction=".3 .2 .1 .05 .04" solref=".01 .9" '
                             'solimp=".8 .9" margin=".05" gap=".01" solreffriction=".1 .2"/>'),
  "pair_nested_classes": model(
    '<pair geom1="a0" geom2="post"/><pair class="c" geom1="a0" geom2="b0" friction="9 8"/>'
    '<pair class="d" geom1="b0" geom2="floor" solimp=".5"/>'
    '<pair class="d" geom1="c0" geom2="floor" condim="1" gap="0"/>',
    '<pair condim="4" friction=".3 .2 .1 .05 .04"/><default class="c"><pair friction=".7" '
    'solref="-1 -2" margin=".1"/><default class="d"><pair gap=".3" solimp=".1 .2 .3"/>'
    "</default></default>"),
  "pair_class_beside_geom_class": model(
    '<pair class="k" geom1="a0" geom2="post"/>',
    '<default class="k"><geom condim="6" friction=".1"/><pair condim="1"/></default>'),
  "pair_order_and_sorting": model(
    '<pair name="p0" geom1="c0" geom2="b0" condim="1"/>'
    '<pair name="p1" geom1="a1" geom2="a0" condim="4"/>'
    '<pair name="p2" geom1="post" geom2="floor" condim="6"/>'
    '<pair name="p3" geom1="a1" geom2="floor" condim="3"/>'
    '<pair name="p4" geom1="b0" geom2="a0" condim="1"/>'
    '<pair name="p5" geom1="a0" geom2="b0" condim="4"/>'
    '<pair geom1="a0" geom2="a0" condim="6"/>'),
  "pair_duplicates": model('<pair geom1="a0" geom2="floor" condim="1"/>'
                           '<pair geom1="floor" geom2="a0" condim="4"/>'
                           '<pair geom1="a0" geom2="floor" condim="6"/>'),
  "excludes": model('<exclude name="e0" body1="c" body2="b"/><exclude body1="a" body2="a"/>'
                    '<exclude body1="world" body2="c"/><exclude body1="b" body2="a"/>'
                    '<exclude body1="a" body2="b"/><exclude body1="world" body2="world"/>'),
  "pairs_and_excludes_mixed": model('<exclude body1="a" body2="world"/>'
                                    '<pair geom1="a0" geom2="floor"/>'
                                    '<exclude body1="c" body2="a"/>'
                                    '<pair geom1="c0" geom2="a1" margin=".5"/>'),
  "empty_contact": model(""),
  "two_contact_sections": model('<pair geom1="a0" geom2="floor"/></contact><contact>'
                                '<exclude body1="a" body2="c"/><pair geom1="b0" '
                                'geom2="post" condim="1"/>'),
  "same_names_as_other_kinds": model('<pair name="a0" geom1="a0" geom2="floor"/>'
                                     '<exclude name="a0" body1="a" body2="c"/>'),
}


@pytest.mark.parametrize("xml", CASES.values(), ids=CASES.keys())
def test_contact_section(xml):
  check(xml)


def test_pair_keeps_its_own_defaults():
  m, _ = check(CASES["pair_defaults_not_mixed"])
  np.testing.assert_array_equal(m.pair_dim, [3, 3])
  np.testing.assert_array_equal(m.pair_friction, [[1, 1, .005, .0001, .0001]] * 2)
  np.testing.assert_array_equal(m.pair_solref, [[.02, 1]] * 2)
  np.testing.assert_array_equal(m.pair_solreffriction, [[0, 0]] * 2)
  np.testing.assert_array_equal(m.pair_margin, [0, 0])


def test_no_contact_section_gives_empty_arrays():
  m, _ = check(f"<mujoco>{WORLD}</mujoco>")
  assert m.npair == m.nexclude == 0
  assert m.pair_friction.shape == (0, 5) and m.pair_solimp.shape == (0, 5)
  assert m.pair_solref.shape == m.pair_solreffriction.shape == (0, 2)


def test_pair_and_exclude_names_follow_the_sorted_order():
  """Names live in MuJoCo's buffer after the materials, in the sorted object order."""
  m, mj = check(f"""<mujoco>{WORLD}<contact>
    <pair name="p_b" geom1="b0" geom2="a0"/><pair geom1="a0" geom2="floor"/>
    <pair name="p_a" geom1="a1" geom2="floor"/>
    <exclude name="x_ab" body1="b" body2="a"/><exclude body1="world" body2="b"/>
    </contact></mujoco>""")
  np.testing.assert_array_equal(m.name_pairadr, mj.name_pairadr)
  np.testing.assert_array_equal(m.name_excludeadr, mj.name_excludeadr)
  assert m.names == bytes(mj.names)
  assert jaxmj.name2id(m, "pair", "p_b") == mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_PAIR, "p_b")
  assert jaxmj.id2name(m, "exclude", 1) == "x_ab"


def test_pairs_are_jax_leaves_and_signatures_static():
  m, _ = check(CASES["pair_all_attributes"])
  leaves = type(m)._leaf_names
  for n in ("pair_solref", "pair_solreffriction", "pair_solimp", "pair_margin", "pair_gap",
            "pair_friction"):
    assert n in leaves
  for n in ("pair_dim", "pair_geom1", "pair_geom2", "pair_signature", "exclude_signature"):
    assert isinstance(getattr(m, n), np.ndarray) and getattr(m, n).dtype == np.int32


def test_contact_in_included_file():
  part = ('<mujoco><contact><pair geom1="a0" geom2="floor" condim="1"/>'
          '<exclude body1="a" body2="c"/></contact></mujoco>')
  xml = f'<mujoco>{WORLD}<include file="part.xml"/></mujoco>'
  m = jaxmj.Model.from_xml_string(xml, assets={"part.xml": part})
  mj = mujoco.MjModel.from_xml_string(xml, {"part.xml": part.encode()})
  assert contact_differences(m, mj) == []


# ---------------------------------------------------------------- geom contact attributes


def test_geom_adhesion_and_surfacevel_compile():
  """MuJoCo 4.0's geom adhesion and surfacevel (up to 6 values, the rest zero) and pair
  adhesion parse and take class defaults (both run: tests/constraint/test_adhesion.py,
  tests/constraint/test_surfacevel.py)."""
  xml = model('<pair geom1="a0" geom2="post" adhesion=".5"/>',
              '<geom adhesion=".2" surfacevel="1 2"/>')
  m, mj = check(xml)
  assert mj.geom_adhesion.ravel().tolist() == [.2] * mj.ngeom
  assert mj.geom_surfacevel[0].tolist() == [1, 2, 0, 0, 0, 0]
  features = " ".join(name for name, _ in m.unsupported)
  assert "surface" not in features
  assert "adhesion" not in features  # with a gap layer too
  assert m.flg_adhesiongap == int(bool(np.any(mj.geom_gap > 0) or np.any(mj.pair_gap > 0)))
  assert m.flg_adhesion == mj.flg_adhesion == 1 and m.flg_surfacevel == mj.flg_surfacevel == 1


@pytest.mark.parametrize("geom", ['type="mesh"', 'type="box"', 'type="capsule"'])
def test_surfacevel_of_a_mesh_geom_is_expressed_in_its_compiled_frame(geom):
  # the mesh's frame (an off-center, turned supertorus; a fitted primitive's center too)
  # moves the angular part's origin and turns both parts, as in MuJoCo's carousel model
  xml = f"""<mujoco><asset><mesh name="ring" builtin="supertorus" params="16 .2 .4 1"
    scale="1.7 1.2 .9" refpos=".1 .2 .3" refquat="1 .2 0 .1"/></asset>
  <worldbody><geom {geom} mesh="ring" pos="0 0 .24" surfacevel=".3 0 .1 .2 0 .4"/>
  </worldbody></mujoco>"""
  m, mj = jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
  assert abs(mj.geom_surfacevel[0, 3:]).max() > 0.1
  np.testing.assert_allclose(np.asarray(m.geom_surfacevel), mj.geom_surfacevel, rtol=0,
                             atol=1e-12)


def test_zero_adhesion_and_surfacevel_are_supported():
  m, _ = check(model('<pair geom1="a0" geom2="post" adhesion="0"/>',
                     '<geom adhesion="0" surfacevel="0 0 0 0 0 0"/>'))
  features = " ".join(name for name, _ in m.unsupported)
  assert "adhesion" not in features and "surfacevel" not in features


@pytest.mark.parametrize("contact, expect_contacts", [
  ("", True),  # the two free bodies overlap
  ('<exclude body1="p" body2="q"/>', False),  # their only candidate pair is excluded
  ('<exclude body1="p" body2="q"/><pair geom1="gp" geom2="gq"/>', True),  # pairs still count
])
def test_candidate_pairs_follow_excludes_and_pairs(contact, expect_contacts):
  """The collision driver's static pair plan admits a pair exactly when MuJoCo collides it."""
  from jaxmj.collision.driver import collision_plan

  xml = ('<mujoco><worldbody><body name="p"><freejoint/><geom name="gp" size=".1"/></body>'
         '<body name="q" pos="0 0 .15"><freejoint/><geom name="gq" size=".1"/></body>'
         f"</worldbody><contact>{contact}</contact></mujoco>")
  m, mj = check(xml)
  d = mujoco.MjData(mj)
  mujoco.mj_forward(mj, d)
  assert (d.ncon > 0) == expect_contacts
  assert (collision_plan(m)["ncon"] > 0) == expect_contacts


def test_pair_skips_only_its_own_geom_pair_dynamically():
  """A <pair> removes its geom pair (either order) from the dynamic pairs; the other geom
  pairs of the same two bodies still collide, as in mj_collision."""
  xml = ("<mujoco><worldbody><body name='A'><freejoint/><geom name='a1' size='.1'/>"
         "<geom name='a2' size='.1' pos='1 0 0'/></body><body name='B' pos='0 0 .15'>"
         "<freejoint/><geom name='b1' size='.1'/><geom name='b2' size='.1' pos='1 0 0'/>"
         "</body></worldbody><contact><pair geom1='b1' geom2='a1'/></contact></mujoco>")
  m, mj = check(xml)
  d = mujoco.MjData(mj)
  mujoco.mj_forward(mj, d)
  jd = jax.jit(jaxmj.forward)(m, jaxmj.make_data(m))
  active = np.asarray(jd.contact.active)
  ours = sorted(zip(np.asarray(jd.contact.geom1)[active].tolist(),
                    np.asarray(jd.contact.geom2)[active].tolist()))
  assert ours == sorted((int(c.geom1), int(c.geom2)) for c in d.contact) == [(0, 2), (1, 3)]
