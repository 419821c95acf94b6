"""Contact adhesion (geom / pair adhesion, jaxmj/constraint/adhesion.py) against mujoco 4.0.0.

A sphere (margin: it adheres before touching), a capsule with priority and a box on an
explicit <pair> rest on an adhesive floor. The pull in qfrc_passive and the shifted
efc_aref of the active rows (sorted sets: slot order is jaxmj's) are held to 1e-10; the
solver's outputs (efc_force, qfrc_constraint, qacc) to 1e-6, as without adhesion: the
solvers stop at different iterates (measured ~1e-7 at tolerance 1e-14, with or without
adhesion); a 200-step trajectory likewise (slow).
"""

import jax
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import FAST, load_both, rollout_error, to_jaxmj  # noqa: E402

import jaxmj  # noqa: E402

EXACT, SOLVED = 1e-10, 1e-6
XML = """<mujoco><option timestep="0.002" cone="{cone}" tolerance="1e-14"/><worldbody>
<geom name="floor" type="plane" size="1 1 .1" adhesion="1.5"/>
<body pos="0 0 .099"><freejoint/>
  <geom type="sphere" size=".1" adhesion="2" condim="{condim}" margin=".01"/></body>
<body pos=".5 0 .049"><freejoint/>
  <geom type="capsule" size=".05 .1" euler="90 0 0" priority="1" adhesion="3"/></body>
<body pos="0 .5 .099"><freejoint/><geom name="box" type="box" size=".1 .1 .1"/></body>
</worldbody>
<contact><pair geom1="floor" geom2="box" adhesion="4"/></contact></mujoco>"""


def _state(cone: str, condim: int):
  m, mj = load_both(xml=XML.format(cone=cone, condim=condim))
  dm = mujoco.MjData(mj)
  dm.qvel[:] = 0.3 * np.random.default_rng(0).normal(size=mj.nv)
  return m, mj, dm, to_jaxmj(m, dm)


@pytest.mark.parametrize("cone,condim", [
  ("elliptic", 3), pytest.param("pyramidal", 4, marks=pytest.mark.slow)])
def test_adhesion_rows_and_forces_match_mujoco(cone, condim):
  m, mj, dm, d = _state(cone, condim)
  mujoco.mj_forward(mj, dm)
  d = jax.jit(jaxmj.forward, compiler_options=FAST)(m, d)
  # sum of the geoms', the priority geom's alone, the explicit pair's
  assert {c.adhesion for c in dm.contact[: dm.ncon]} == {3.5, 3.0, 4.0}
  assert np.any(dm.qfrc_passive != 0)
  for name, tol in (("qfrc_passive", EXACT), ("qfrc_constraint", SOLVED), ("qacc", SOLVED)):
    np.testing.assert_allclose(getattr(d, name), getattr(dm, name), rtol=0, atol=tol,
                               err_msg=name)
  active = np.asarray(d.efc_active)
  assert active.sum() == dm.nefc
  for name, tol in (("efc_aref", EXACT), ("efc_force", SOLVED)):
    np.testing.assert_allclose(np.sort(np.asarray(getattr(d, name))[active]),
                               np.sort(getattr(dm, name)), rtol=0, atol=tol, err_msg=name)


def test_contact_forces_and_force_sensors_report_the_net_force_as_mujoco():
  """mj_contactForce reports the net interface force, the cone force less the contact's
  adhesion: so do contact_forces, the touch and contact sensors and cfrc_ext (1e-6, the
  solver's tolerance). The contact sensor (reduce none) lists MuJoCo's first contacts in
  mj_collision's order, where the explicit pair's body pair sorts last."""
  xml = XML.format(cone="pyramidal", condim=3).replace(
    '<geom name="box" type="box" size=".1 .1 .1"/>',
    '<geom name="box" type="box" size=".1 .1 .1"/><site name="s" type="box" size=".2 .2 .2"/>')
  xml = xml.replace("</mujoco>", """<sensor><touch site="s"/>
    <contact body1="world" data="found force" num="3"/></sensor></mujoco>""")
  m, mj = load_both(xml=xml)
  dm = mujoco.MjData(mj)
  mujoco.mj_forward(mj, dm)
  d = jax.jit(jaxmj.forward, compiler_options=FAST)(m, to_jaxmj(m, dm))
  forces = np.asarray(jaxmj.contact_forces(m, d))
  active = np.flatnonzero(np.asarray(d.contact.active))
  assert len(active) == dm.ncon > 0
  res = np.zeros(6)
  for i in range(dm.ncon):
    mujoco.mj_contactForce(mj, dm, i, res)
    c = dm.contact[i]
    k = [k for k in active if {int(d.contact.geom1[k]), int(d.contact.geom2[k])} == set(
      c.geom) and np.allclose(d.contact.pos[k], c.pos, atol=1e-9)]
    assert len(k) == 1
    np.testing.assert_allclose(forces[k[0]], res, atol=SOLVED)
  assert all(c.adhesion > 0 for c in dm.contact[:dm.ncon])  # every force is net of a pull
  np.testing.assert_allclose(d.sensordata, dm.sensordata, atol=SOLVED)
  mujoco.mj_rnePostConstraint(mj, dm)
  post = jaxmj.rne_post_constraint(m, d)
  np.testing.assert_allclose(post.cfrc_ext, dm.cfrc_ext, atol=SOLVED)


@pytest.mark.slow
def test_adhesive_trajectory_matches_mj_step():
  m, mj, dm, _ = _state("pyramidal", 3)
  err, *_ = rollout_error(m, mj, 200, dm=dm)
  assert err < SOLVED


GAP = """<mujoco><option gravity="0 0 -1" cone="{cone}"/><worldbody>
<geom name="floor" type="plane" size="2 2 .1"/>
<body pos="0 0 .17"><freejoint/>
  <geom type="sphere" size=".1" margin=".02" gap=".1" adhesion="3" condim="{condim}"/>
  <site name="s" type="sphere" size=".2"/></body>
<body pos=".5 0 .11"><freejoint/><geom type="box" size=".1 .1 .1" margin=".02" gap=".1"/></body>
<body pos="-.5 0 .12"><freejoint/><geom type="capsule" size=".05 .1" euler="90 0 0" gap=".1"/>
</body></worldbody>
<sensor><touch site="s"/><contact geom1="floor" data="found force dist" num="3"/></sensor>
</mujoco>"""


@pytest.mark.parametrize("cone,condim,vz", [("pyramidal", 3, 0.0), ("elliptic", 4, -3.0),
                                            ("pyramidal", 1, -3.0)])
def test_adhering_contacts_in_the_gap_layer_get_one_frictionless_row(cone, condim, vz):
  """With a gap, MuJoCo 4.0 gives an adhering contact past the margin one frictionless row
  whatever its condim and cone, and pulls it in qfrc_passive; a non-adhering one (the box,
  the capsule) has none. At rest the row is satisfied (force 0: the net force is the pull);
  approaching fast it turns active and pushes. Rows, forces, contact forces and sensors as
  MuJoCo's (1e-10; the solver's 1e-6)."""
  m, mj = load_both(xml=GAP.format(cone=cone, condim=condim))
  assert m.unsupported == () and m.flg_adhesiongap
  dm = mujoco.MjData(mj)
  dm.qvel[2] = vz
  mujoco.mj_forward(mj, dm)
  gap = [c.efc_address >= 0 and c.dist > c.includemargin for c in dm.contact[:dm.ncon]]
  assert sum(gap) == 1 and dm.ncon == 1 + 4 + 2
  d = jax.jit(jaxmj.forward, compiler_options=FAST)(m, to_jaxmj(m, dm))
  active = np.asarray(d.efc_active)
  assert active.sum() == dm.nefc
  np.testing.assert_array_equal(np.sort(np.asarray(d.efc_type)[active]), np.sort(dm.efc_type))
  np.testing.assert_allclose(d.qfrc_passive, dm.qfrc_passive, rtol=0, atol=EXACT)
  for name in ("efc_aref", "efc_force"):
    np.testing.assert_allclose(np.sort(np.asarray(getattr(d, name))[active]),
                               np.sort(getattr(dm, name)), rtol=0,
                               atol=EXACT if name == "efc_aref" else SOLVED, err_msg=name)
  np.testing.assert_allclose(d.qacc, dm.qacc, rtol=0, atol=SOLVED)
  np.testing.assert_allclose(d.sensordata, dm.sensordata, rtol=0, atol=SOLVED)
  forces = np.asarray(jaxmj.contact_forces(m, d))
  i = gap.index(True)
  res = np.zeros(6)
  mujoco.mj_contactForce(mj, dm, i, res)
  assert (res[0] > 0) == (vz < 0)  # pushing when approaching fast, else the pull -3
  k = int(np.argmin(np.abs(np.asarray(d.contact.dist) - dm.contact[i].dist)))
  np.testing.assert_allclose(forces[k], res, atol=SOLVED)


def test_trajectory_through_the_gap_layer_matches_mj_step():
  """Adhering bodies falling through the gap layer onto the floor (rows switching from the
  gap row to the cone's and back as they bounce)."""
  m, mj = load_both(xml=GAP.format(cone="pyramidal", condim=3).replace(
    'gravity="0 0 -1"', 'gravity="0 0 -9.81" timestep=".002"'))
  dm = mujoco.MjData(mj)
  dm.qpos[2] += 0.1
  err, *_ = rollout_error(m, mj, 150, dm=dm)
  assert err < SOLVED


def test_from_mujoco_lays_out_gap_rows_for_a_gap_set_in_memory():
  """An MjModel whose gap was set after compiling (not in its MJCF) gets the gap rows."""
  mj = mujoco.MjModel.from_xml_string(GAP.format(cone="pyramidal", condim=3).replace(
    'gap=".1"', ""))
  mj.geom_gap[:] = 0.1
  m = jaxmj.Model.from_mujoco(mj)
  assert m.flg_adhesiongap
  dm = mujoco.MjData(mj)
  mujoco.mj_forward(mj, dm)
  d = jax.jit(jaxmj.forward, compiler_options=FAST)(m, to_jaxmj(m, dm))
  assert np.asarray(d.efc_active).sum() == dm.nefc
  np.testing.assert_allclose(d.qacc, dm.qacc, rtol=0, atol=SOLVED)


GAP_ACTUATORS = """<mujoco><worldbody><geom type="plane" size="2 2 .1"/>
<body name="ball" pos=".5 0 .115"><freejoint/><geom size=".11" gap=".01"/></body>
<body name="ball2" pos="0 0 .105"><freejoint/><geom size=".11" gap=".01"/></body></worldbody>
<actuator><adhesion body="ball" ctrlrange="0 1" gain="5"/>
<adhesion body="ball2" ctrlrange="0 1" gain="3"/></actuator></mujoco>"""


@pytest.mark.slow  # the default suite's time budget
def test_adhesion_actuator_pulls_through_gap_layer_contacts():
  """An adhesion actuator counts every contact of its body, also one in the gap layer
  (dist between margin and margin + gap: no constraint rows), as MuJoCo does."""
  from importlib import import_module

  from jaxmj.actuation import driver as actuation

  fwd = import_module("jaxmj.dynamics.forward")
  m, mj = load_both(xml=GAP_ACTUATORS)
  dm = mujoco.MjData(mj)
  dm.ctrl[:] = [0.4, 0.7]
  mujoco.mj_forward(mj, dm)
  assert [c.efc_address >= 0 for c in dm.contact[: dm.ncon]] == [False, True]

  def stages(m, d):
    return actuation.fwd_actuation(m, actuation.velocity(m, fwd.fwd_position(m, d)))

  d = jax.jit(stages, compiler_options=FAST)(m, to_jaxmj(m, dm).replace(ctrl=dm.ctrl.copy()))
  np.testing.assert_allclose(d.qfrc_actuator, dm.qfrc_actuator, rtol=0, atol=EXACT)
  assert dm.qfrc_actuator[2] == -2.0
