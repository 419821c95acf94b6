"""How MuJoCo 4.0 sets each contact's parameters, written as a small numpy reference and held
against MuJoCo's own d.contact after mj_forward. It tests MuJoCo, not jaxmj: it documents the
rules for the JAX implementation (jaxmj.collision), which should agree with
`contact_param_mix` below; tests/collision/test_pair_table.py holds jaxmj's own pair table
and parameters against MuJoCo's contacts.

The rules (mjModel field names; g1, g2 the contact's geoms):

Dynamic pairs (found by the broadphase):
  margin = geom_margin[g1] + geom_margin[g2]    sum; priority plays no part
  gap    = geom_gap[g1] + geom_gap[g2]          sum; priority plays no part
  If geom_priority differs, the higher-priority geom gives condim, friction, solref, solimp
  and adhesion. With equal priority:
    condim   = max of the two
    friction = element-wise max of the 3-vectors
    mix      = solmix1 / (solmix1 + solmix2) if both solmix >= mjMINVAL (1e-15);
               0.5 if both are below; 0 if only solmix1 is below; 1 if only solmix2 is
    solref   = mix * solref1 + (1 - mix) * solref2 if solref1[0] > 0 and solref2[0] > 0,
               else the element-wise min (a zero or negative solref[0] means "direct")
    solimp   = mix * solimp1 + (1 - mix) * solimp2 (all 5, no clamping here)
    adhesion = adhesion1 + adhesion2
  friction (5) = (f[0], f[0], f[1], f[2], f[2]) of the 3-vector above
  solreffriction = (0, 0)
Explicit <pair>: condim, friction (5), solref, solreffriction, solimp, margin, gap, adhesion
  are the pair's, verbatim; the geoms' parameters are not used at all. A dynamic candidate
  with the same two geoms as some pair is dropped (the pair replaces it); <exclude> drops
  dynamic candidates whose bodies (body ids, not weld ids) match, never explicit pairs.
Override (enableflags & mjENBL_OVERRIDE), for dynamic and explicit contacts alike:
  margin = opt.o_margin; solref = solreffriction = opt.o_solref; solimp = opt.o_solimp;
  friction = opt.o_friction (all 5). Unchanged: condim, gap, adhesion.
Last, always: friction = max(friction, mjMINMU = 1e-5) element-wise.
Stored in mjContact: includemargin = margin (NOT margin - gap). A contact exists when
  dist < margin + gap; it gets constraint rows (efc_address >= 0) when dist < margin, and is
  an inactive contact (efc_address = -1) in between.
With adhesion > 0, a contact in the gap zone still gets one CONTACT_FRICTIONLESS row (mu 0)
  for the tensile adhesion branch; without adhesion it gets none.
Constraint stage: mu = friction[0] * sqrt(1 / impratio) for active contacts (dist < margin)
  with condim > 1; 0 for condim 1 and for gap-zone contacts; either cone.
Solref/solimp are stored raw: clamping and the "mixed solref format" fallback happen later,
  when the constraint rows are made.
"""

import pytest

mujoco = pytest.importorskip("mujoco")

import numpy as np  # noqa: E402

MINVAL = 1e-15  # mjMINVAL
MINMU = 1e-5  # mjMINMU
OVERRIDE = 1  # mjENBL_OVERRIDE


def contact_param_mix(m, g1: int, g2: int, pair: int = -1) -> dict:
  """Contact parameters of geoms g1, g2 (explicit pair `pair` if >= 0), per MuJoCo 4.0.

  `m` is anything with mjModel's field names (geom_*, pair_*, opt); geom_adhesion and
  pair_adhesion default to 0 when absent.
  """
  adh = lambda name, i: float(np.ravel(getattr(m, name, np.zeros(i + 1)))[i])
  if pair >= 0:
    condim = int(m.pair_dim[pair])
    friction = np.array(m.pair_friction[pair], float)
    solref = np.array(m.pair_solref[pair], float)
    solreffriction = np.array(m.pair_solreffriction[pair], float)
    solimp = np.array(m.pair_solimp[pair], float)
    margin, gap = float(m.pair_margin[pair]), float(m.pair_gap[pair])
    adhesion = adh("pair_adhesion", pair)
  else:
    margin = float(m.geom_margin[g1] + m.geom_margin[g2])
    gap = float(m.geom_gap[g1] + m.geom_gap[g2])
    p1, p2 = m.geom_priority[g1], m.geom_priority[g2]
    if p1 != p2:
      g = g1 if p1 > p2 else g2
      condim = int(m.geom_condim[g])
      fr = np.array(m.geom_friction[g], float)
      solref = np.array(m.geom_solref[g], float)
      solimp = np.array(m.geom_solimp[g], float)
      adhesion = adh("geom_adhesion", g)
    else:
      condim = int(max(m.geom_condim[g1], m.geom_condim[g2]))
      fr = np.maximum(m.geom_friction[g1], m.geom_friction[g2])
      s1, s2 = m.geom_solmix[g1], m.geom_solmix[g2]
      if s1 >= MINVAL and s2 >= MINVAL:
        mix = s1 / (s1 + s2)
      elif s1 < MINVAL and s2 < MINVAL:
        mix = 0.5
      else:
        mix = 0.0 if s1 < MINVAL else 1.0
      r1, r2 = np.array(m.geom_solref[g1]), np.array(m.geom_solref[g2])
      solref = mix * r1 + (1 - mix) * r2 if r1[0] > 0 and r2[0] > 0 else np.minimum(r1, r2)
      solimp = mix * np.array(m.geom_solimp[g1]) + (1 - mix) * np.array(m.geom_solimp[g2])
      adhesion = adh("geom_adhesion", g1) + adh("geom_adhesion", g2)
    friction = np.array([fr[0], fr[0], fr[1], fr[2], fr[2]])
    solreffriction = np.zeros(2)
  if m.opt.enableflags & OVERRIDE:
    margin = float(m.opt.o_margin)
    solref = np.array(m.opt.o_solref, float)
    solreffriction = solref.copy()
    solimp = np.array(m.opt.o_solimp, float)
    friction = np.array(m.opt.o_friction, float)
  friction = np.maximum(friction, MINMU)
  return {"dim": condim, "friction": friction, "solref": solref,
          "solreffriction": solreffriction, "solimp": solimp, "includemargin": margin,
          "detect": margin + gap, "adhesion": adhesion}


def contact_mu(friction0: float, condim: int, impratio: float) -> float:
  """mjContact.mu of an active contact (dist < includemargin); 0 for all others."""
  return 0.0 if condim == 1 else friction0 * np.sqrt(1.0 / impratio)


# ---------------------------------------------------------------- harness


def two_spheres(a: str = "", b: str = "", head: str = "", contact: str = "",
                dist: float = -0.05) -> str:
  """World sphere g1 (id 0) and a free sphere g2 (id 1), both radius .1, `dist` apart."""
  return (f'<mujoco>{head}<worldbody><geom name="g1" size=".1" {a}/>'
          f'<body name="b" pos="0 0 {0.2 + dist}"><freejoint/><geom name="g2" size=".1" {b}/>'
          f"</body></worldbody><contact>{contact}</contact></mujoco>")


def contacts(xml: str):
  m = mujoco.MjModel.from_xml_string(xml)
  d = mujoco.MjData(m)
  mujoco.mj_forward(m, d)
  return m, [d.contact[i] for i in range(d.ncon)]


def assert_matches(m, con, pair: int = -1):
  ref = contact_param_mix(m, int(con.geom1), int(con.geom2), pair)
  assert con.dim == ref["dim"]
  for k in ("friction", "solref", "solreffriction", "solimp", "includemargin", "adhesion"):
    np.testing.assert_allclose(getattr(con, k), ref[k], rtol=1e-12, atol=1e-15, err_msg=k)
  if con.dist < con.includemargin:
    assert np.isclose(con.mu, contact_mu(con.friction[0], con.dim, m.opt.impratio))


A = ('condim="1" friction=".5 .1 .2" solref=".05 2" solimp=".5 .6 .01 .3 4" margin=".1" '
     'gap=".02" solmix="3" adhesion=".3"')
B = 'condim="4" friction=".9 .03 .04" solref=".03 .5" margin=".2" gap=".05" solmix=".5"'
OVERRIDE_ON = ('<option o_margin=".05" o_solref=".07 3" o_solimp=".1 .2 .3 .4 5" '
               'o_friction=".11 .22 .33 .44 .55"><flag override="enable"/></option>')

# One rule each; every case also checks all other fields against the reference.
CASES = {
  "defaults": ("", "", "", {}),
  "equal_priority_mix": (A, B, "", {"dim": 4, "friction": [.9, .9, .1, .2, .2],
                                    "includemargin": .3}),
  "geom1_higher_priority": (A + ' priority="1"', B, "", {"dim": 1, "solref": [.05, 2],
                                                         "includemargin": .3,
                                                         "adhesion": .3}),
  "geom2_higher_priority": (A, B + ' priority="2"', "", {"dim": 4, "solref": [.03, .5],
                                                         "adhesion": 0}),
  "negative_priority_loses": (A + ' priority="-1"', B, "", {"dim": 4}),
  "solmix_both_zero_is_half": ('solref=".05 2" solimp=".5 .6 .01 .3 4" solmix="0"',
                               'solref=".03 .5" solmix="0"', "", {"solref": [.04, 1.25]}),
  "solmix_below_minval_is_zero": ('solref=".05 2" solmix="1e-16"', 'solref=".03 .5"', "",
                                  {"solref": [.03, .5]}),
  "solmix_other_below_minval": ('solref=".05 2"', 'solref=".03 .5" solmix="-1"', "",
                                {"solref": [.05, 2]}),
  "direct_solref_min": ('solref="-100 -10" solmix="3"', 'solref="-50 -20"', "",
                        {"solref": [-100, -20]}),
  "mixed_solref_formats_min": ('solref="-100 -10"', 'solref=".03 .5"', "",
                               {"solref": [-100, -10]}),
  "zero_solref_counts_as_direct": ('solref="0 1"', 'solref=".03 .5"', "",
                                   {"solref": [0, .5]}),
  "solimp_stored_unclamped": ('solimp="0 1.5 -1 2 .5"', 'solimp="0 1.5 -1 2 .5"', "",
                              {"solimp": [0, 1.5, -1, 2, .5]}),
  "friction_clamped_to_minmu": ('friction="0 0 0"', 'friction="-1 -2 0"', "",
                                {"friction": [MINMU] * 5}),
  "adhesion_sum": ('adhesion=".3"', 'adhesion=".5"', "", {"adhesion": .8}),
  "override": (A, B, OVERRIDE_ON, {"dim": 4, "includemargin": .05,
                                   "solreffriction": [.07, 3],
                                   "friction": [.11, .22, .33, .44, .55], "adhesion": .3}),
  "override_friction_clamped": (A, B, '<option o_friction="0 0 0 0 0"><flag override="enable"/>'
                                '</option>', {"friction": [MINMU] * 5,
                                              "solreffriction": [.02, 1]}),
  "impratio_mu": ('friction=".7"', "", '<option impratio="4" cone="elliptic"/>', {}),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_dynamic_rules(case):
  a, b, head, expected = case
  m, cons = contacts(two_spheres(a, b, head))
  assert len(cons) == 1
  assert_matches(m, cons[0])
  for k, v in expected.items():
    np.testing.assert_allclose(getattr(cons[0], k), v, rtol=1e-12, err_msg=k)


def _random_geom(rng) -> str:
  fr = rng.choice([0.0, 1.0], 3) * rng.uniform(-.1, 1.5, 3)  # some zero, some negative
  ref = rng.uniform(.01, .1), rng.uniform(.2, 2)
  if rng.random() < .3:
    ref = -rng.uniform(10, 500), -rng.uniform(1, 50)
  imp = rng.uniform(.1, .99, 2).tolist() + [rng.uniform(.001, .1), rng.uniform(.1, .9),
                                             rng.uniform(1, 6)]
  solmix = rng.choice([0.0, 1e-16, rng.uniform(.1, 5), -1.0], p=[.1, .1, .7, .1])
  return (f'condim="{rng.choice([1, 3, 4, 6])}" priority="{rng.integers(-1, 2)}" '
          f'friction="{fr[0]} {fr[1]} {fr[2]}" solref="{ref[0]} {ref[1]}" '
          f'solimp="{" ".join(map(str, imp))}" solmix="{solmix}" '
          f'margin="{rng.uniform(0, .1)}" gap="{rng.uniform(0, .05)}" '
          f'adhesion="{rng.choice([0.0, rng.uniform(0, 2)])}"')


@pytest.mark.parametrize("seed", range(8))
def test_dynamic_random(seed):
  rng = np.random.default_rng(seed)
  for _ in range(25):
    head = ""
    if rng.random() < .25:
      head = (f'<option impratio="{rng.uniform(.5, 5)}" o_margin="{rng.uniform(0, .1)}" '
              f'o_friction="{" ".join(map(str, rng.uniform(0, 1, 5)))}">'
              '<flag override="enable"/></option>')
    m, cons = contacts(two_spheres(_random_geom(rng), _random_geom(rng), head))
    assert len(cons) == 1
    assert_matches(m, cons[0])


PAIR = ('<pair geom1="g2" geom2="g1" margin=".3" gap=".1" solreffriction=".01 .2" condim="6" '
        'friction=".1 .2 0 .4 .5" solref=".04 .8" solimp=".2 .3 .4 .5 6" adhesion=".05"/>')


@pytest.mark.parametrize("head", ["", OVERRIDE_ON], ids=["plain", "override"])
def test_explicit_pair_replaces_geom_parameters(head):
  m, cons = contacts(two_spheres(A, B, head, contact=PAIR))
  assert len(cons) == 1  # the dynamic candidate with the same geoms is dropped
  assert_matches(m, cons[0], pair=0)
  if not head:
    assert cons[0].friction[2] == MINMU  # the pair's 0 is clamped too
  assert cons[0].adhesion == .05  # not the geoms' sum, even under override


def test_explicit_pair_unspecified_uses_pair_defaults():
  m, cons = contacts(two_spheres(A, B, contact='<pair geom1="g1" geom2="g2"/>'))
  assert_matches(m, cons[0], pair=0)
  assert cons[0].dim == 3 and cons[0].includemargin == 0 and cons[0].adhesion == 0


def test_two_pairs_on_the_same_geoms_make_two_contacts():
  m, cons = contacts(two_spheres(contact=PAIR + PAIR.replace('condim="6"', 'condim="1"')))
  assert [c.dim for c in cons] == [6, 1]
  for i, c in enumerate(cons):
    assert_matches(m, c, pair=i)


def test_exclude_drops_dynamic_not_explicit():
  _, cons = contacts(two_spheres(contact='<exclude body1="world" body2="b"/>'))
  assert cons == []
  m, cons = contacts(two_spheres(contact='<exclude body1="world" body2="b"/>' + PAIR))
  assert len(cons) == 1
  assert_matches(m, cons[0], pair=0)


def test_exclude_uses_body_ids_not_weld_ids():
  xml = ('<mujoco><worldbody><body name="s"><geom size=".1"/></body>'
         '<body name="b" pos="0 0 .15"><freejoint/><geom size=".1"/></body></worldbody>'
         '<contact><exclude body1="world" body2="b"/></contact></mujoco>')
  assert len(contacts(xml)[1]) == 1  # body s is welded to the world, yet not excluded
  assert contacts(xml.replace('body1="world"', 'body1="s"'))[1] == []


# (geom a, geom b, override head, pair): margin + gap decide detection; margin decides rows.
# Without adhesion: adhesion changes which gap-zone contacts get rows (see the test below).
A0, PAIR0 = A.replace(' adhesion=".3"', ""), PAIR.replace(' adhesion=".05"', "")
REGIMES = {
  "dynamic": (A0, B, "", ""),  # margin .3, gap .07
  "dynamic_override": (A0, B, OVERRIDE_ON, ""),  # margin .05 (o_margin), gap still .07
  "pair": (A0, B, "", PAIR0),  # margin .3, gap .1
  "pair_override": (A0, B, OVERRIDE_ON, PAIR0),  # margin .05, gap .1
  "gap_only": ('gap=".02"', 'gap=".05"', "", ""),  # margin 0, gap .07
}


@pytest.mark.parametrize("case", REGIMES.values(), ids=REGIMES.keys())
def test_margin_and_gap_regimes(case):
  a, b, head, pair = case
  m, _ = contacts(two_spheres(a, b, head, pair))
  ref = contact_param_mix(m, 0, 1, 0 if pair else -1)
  margin, detect = ref["includemargin"], ref["detect"]
  for dist in (margin - .01, margin + .01, detect - .01, detect + .01):
    m, cons = contacts(two_spheres(a, b, head, pair, dist=dist))
    if dist > detect:
      assert cons == [], dist
      continue
    assert len(cons) == 1, dist
    assert np.isclose(cons[0].dist, dist) and np.isclose(cons[0].includemargin, margin)
    assert (cons[0].efc_address >= 0) == (dist < margin), dist
    if cons[0].efc_address < 0:
      assert cons[0].mu == 0


def test_adhesion_gives_gap_zone_contacts_one_frictionless_row():
  """Not mixing, but decides which contacts are inactive: with adhesion > 0 a contact between
  margin and margin + gap keeps one CONTACT_FRICTIONLESS row (mu 0) instead of none."""
  xml = two_spheres('margin=".1" gap=".1" adhesion=".3"', dist=.15)
  m, cons = contacts(xml)
  d = mujoco.MjData(m)
  mujoco.mj_forward(m, d)
  assert len(cons) == 1 and cons[0].efc_address == 0 and cons[0].mu == 0
  assert d.efc_type.tolist() == [mujoco.mjtConstraint.mjCNSTR_CONTACT_FRICTIONLESS]
  m, cons = contacts(xml.replace('adhesion=".3"', ""))
  assert cons[0].efc_address == -1
