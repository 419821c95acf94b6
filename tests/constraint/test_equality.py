"""Equality constraints against mujoco 4.0.0: compiled eq_* fields, their efc rows (J, pos,
diagA, R, D, vel, aref incl. the Jdot v term of connect / weld) and forces, eq_active.
(mjx/test_data/constraints.xml has every equality type but mujoco 4.0 rejects that file.)"""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import assert_stage_matches, load_both, random_state  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.types import ConstraintType  # noqa: E402

EQ_FIELDS = ("neq", "eq_type", "eq_obj1id", "eq_obj2id", "eq_objtype", "eq_active0",
             "eq_solref", "eq_solimp", "eq_data")

# Every connect / weld form, joint couplings, classes with <equality> defaults, a well
# conditioned chain (every constraint can be satisfied) so that forces are comparable.
CHAIN = """<mujoco><option jacobian="dense"><flag contact="disable"/></option>
<default><equality solref=".05 .8"/><default class="soft">
  <equality solimp=".6 .8 .1" active="false"/></default></default>
<worldbody>
  <body name="a" pos="0 0 1" euler="10 20 30"><joint name="j1" axis="1 0 0"/>
    <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
    <site name="s1" pos=".3 0 0" euler="5 6 7"/>
    <body name="b" pos=".3 0 0" euler="0 30 0"><joint name="j2" type="slide" ref=".2"/>
      <joint name="j3" axis="0 1 0"/><geom type="box" size=".1 .05 .03" pos=".1 0 0"/>
      <site name="s2" pos=".2 0 .01" euler="30 0 9"/></body></body>
  <body name="c" pos=".6 0 1.2"><joint type="ball"/><geom type="capsule" size=".03 .1"/>
    <site name="s3" pos="0 0 -.1"/></body>
  <body name="e" pos="-.5 0 1"><joint name="j4" axis="0 1 0"/><joint name="j5" axis="1 0 0"/>
    <geom type="box" size=".05 .1 .2" pos=".15 0 0"/></body>
</worldbody>
<tendon><fixed name="t1"><joint joint="j1" coef=".5"/><joint joint="j3" coef="-1"/></fixed>
  <fixed name="t2"><joint joint="j4" coef="1"/><joint joint="j2" coef=".3"/></fixed></tendon>
<equality>
  <connect name="c1" body1="b" body2="c" anchor=".2 0 0"/>
  <connect site1="s2" site2="s3" class="soft"/>
  <weld body1="e" solref=".02 1" torquescale=".3"/>
  <weld body1="c" body2="b" relpose=".1 0 0 1 .1 0 0" anchor=".05 0 0"/>
  <weld site1="s1" site2="s2" torquescale="2" active="false"/>
  <joint joint1="j5" joint2="j4" polycoef=".1 .5 .2 -.3 .05"/>
  <joint name="fixed" joint1="j2"/>
  <tendon tendon1="t1" tendon2="t2" polycoef="0 .5 .1 .2 0"/>
</equality></mujoco>"""


def _dense_efc_j(mj, dm):
  if dm.efc_J.size == dm.nefc * mj.nv:
    return dm.efc_J.reshape(dm.nefc, mj.nv)
  out = np.zeros((dm.nefc, mj.nv))
  mujoco.mju_sparse2dense(out, dm.efc_J, dm.efc_J_rownnz, dm.efc_J_rowadr, dm.efc_J_colind)
  return out


def _compare_rows(m, mj, d, dm, atol=1e-9):
  rows = np.flatnonzero(np.asarray(d.efc_active) & (np.asarray(d.efc_type)
                                                    == ConstraintType.EQUALITY))
  ne = dm.ne
  assert len(rows) == ne
  np.testing.assert_array_equal(np.asarray(d.efc_id)[rows], dm.efc_id[:ne])
  np.testing.assert_allclose(np.asarray(d.efc_J)[rows], _dense_efc_j(mj, dm)[:ne], atol=atol)
  for k in ("efc_pos", "efc_vel", "efc_diagA", "efc_R", "efc_D", "efc_aref"):
    ours, ref = np.asarray(getattr(d, k))[rows], getattr(dm, k)[:ne]
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=atol, err_msg=k)


def test_compiled_fields_match():
  m, mj = load_both(xml=CHAIN)
  for k in EQ_FIELDS:
    np.testing.assert_allclose(np.asarray(getattr(m, k), float),
                               np.asarray(getattr(mj, k), float), atol=1e-12, err_msg=k)
  for i in range(mj.neq):
    assert (jaxmj.id2name(m, "equality", i) or "") == (
      mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_EQUALITY, i) or "")


def test_rows_and_forces_match_with_eq_active_toggled():
  m, mj = load_both(xml=CHAIN)
  actives = {1: [1, 0, 1, 1, 1, 0, 1, 1], 2: [0, 1, 0, 1, 0, 1, 0, 1]}

  def state(m, mj, seed):
    dm = random_state(m, mj, seed)
    dm.qpos[:] = mj.qpos0 + 0.1 * (dm.qpos - mj.qpos0)
    mujoco.mj_normalizeQuat(mj, dm.qpos)
    if seed in actives:
      dm.eq_active[:] = actives[seed]
    return dm

  assert_stage_matches((m, mj), jaxmj.forward, mujoco.mj_forward, ["qfrc_constraint", "qacc"],
                       seeds=range(3), tol=1e-6, state=state, inputs=("eq_active",),
                       check=lambda d, dm, seed: _compare_rows(m, mj, d, dm))


def test_equality_flag_disables_rows():
  xml = CHAIN.replace('<option jacobian="dense"><flag ', '<option><flag equality="disable" ')
  m, mj = load_both(xml=xml)
  d = jaxmj.make_data(m)
  assert not np.any(np.asarray(d.efc_type) == ConstraintType.EQUALITY)


@pytest.mark.parametrize("eq,message", [
  ('<connect body1="a"/>', "anchor"),
  ('<connect site1="s1" body1="a" anchor="0 0 0"/>', "either"),
  ('<weld body1="zz"/>', "unknown body"),
  ('<joint joint1="j1" joint2="j1"/>', "repeated"),
  ('<connect site1="s1"/>', "site2"),
  ('<flex flex="f"/>', "flex"),
])
def test_errors_name_the_problem(eq, message):
  xml = CHAIN[:CHAIN.index("<equality>")] + f"<equality>{eq}</equality></mujoco>"
  with pytest.raises(jaxmj.MJCFError, match=message):
    jaxmj.Model.from_xml_string(xml)


def test_ball_joint_coupling_rejected():
  xml = CHAIN[:CHAIN.index("<equality>")].replace('<joint type="ball"/>',
                                                   '<joint name="bj" type="ball"/>')
  with pytest.raises(jaxmj.MJCFError, match="hinge and slide"):
    jaxmj.Model.from_xml_string(xml + '<equality><joint joint1="bj"/></equality></mujoco>')
