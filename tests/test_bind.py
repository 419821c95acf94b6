"""Named views (jaxmj.bind) against MuJoCo's own named accessors (m.body("x"), d.joint("x"))."""

import os

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from conftest import MODELS  # noqa: E402
from mujoco_compare import load_both, random_state, to_jaxmj  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.smooth.kinematics import kinematics  # noqa: E402


def _close(ours, ref):
  # kinematics agree with MuJoCo to rounding, the views add nothing to it
  np.testing.assert_allclose(ours, ref, atol=1e-12)


def _same(ours, ref):
  # MuJoCo's accessors give scalars as (1,) arrays, jaxmj's views give scalars; the
  # compiled values agree to the compiler tests' 1e-10
  np.testing.assert_allclose(np.ravel(ours), np.ravel(ref), atol=1e-10)


@pytest.fixture(scope="module")
def both():
  m, mj = load_both(os.path.join(MODELS, "humanoid.xml"))
  md = random_state(m, mj, seed=1)
  mujoco.mj_kinematics(mj, md)
  d = jax.jit(kinematics)(m, to_jaxmj(m, md))
  return m, mj, d, md


def test_data_views_equal_mujoco_accessors(both):
  m, mj, d, md = both
  v = jaxmj.bind(m, d)
  for i in range(mj.nbody):
    name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_BODY, i)
    _close(v.body(name).xpos, md.body(name).xpos)
    _close(v.body(i).xquat, md.body(i).xquat)
  for i in range(mj.njnt):
    name = mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_JOINT, i)
    _close(v.joint(name).qpos, md.joint(name).qpos)
    _close(v.joint(name).qvel, md.joint(name).qvel)
    _close(v.joint(name).qfrc_applied, md.joint(name).qfrc_applied)
  for i in range(mj.ngeom):
    _close(v.geom(i).xpos, md.geom(i).xpos)
    _close(v.geom(i).xmat, md.geom(i).xmat.reshape(3, 3))
  for i in range(mj.nsite):
    _close(v.site(i).xpos, md.site(i).xpos)


def test_model_views_equal_mujoco_accessors(both):
  m, mj, _, _ = both
  v = jaxmj.bind(m)
  for i in range(mj.nbody):
    _same(v.body(i).mass, mj.body(i).mass)
    _same(v.body(i).inertia, mj.body(i).inertia)
  for i in range(mj.njnt):
    _same(v.joint(i).range, mj.joint(i).range)
    _same(v.joint(i).qpos0, mj.joint(i).qpos0)
    _same(v.joint(i).armature, mj.joint(i).armature)
  for i in range(mj.ngeom):
    _same(v.geom(i).size, mj.geom(i).size)


def test_views_work_inside_jit(both):
  m, _, d, _ = both
  name = jaxmj.id2name(m, "body", 1)
  xpos = jax.jit(lambda dd: jaxmj.bind(m, dd).body(name).xpos)(d)
  np.testing.assert_array_equal(xpos, d.xpos[1])


def test_unknown_names_and_ids_are_clear_errors(both):
  m, _, d, _ = both
  with pytest.raises(KeyError, match="no body named 'nope'"):
    jaxmj.bind(m, d).body("nope")
  with pytest.raises(IndexError, match="out of range"):
    jaxmj.bind(m, d).geom(10_000)


# nactuator 4, nu 7 (the orientation takes 3 controls, the pid 2), nout 6 (the orientation
# has 3 outputs): rows of per-output and per-control fields are not actuator ids
SLOTS = """<mujoco><worldbody><body><joint name="b" type="ball"/><geom size=".1" pos=".1 0 0"/>
  <body pos=".2 0 0"><joint name="h" axis="0 1 0"/><geom size=".05"/></body></body>
  </worldbody><actuator><motor joint="h" gear="2" ctrlrange="-1 1"/>
  <orientation name="o" joint="b" kp="3" ctrlrange="-1.5 1.5"/>
  <pid name="p" joint="h" kp="3" kv=".2" input="pos vel" posrange="-.5 .5"/>
  <motor name="last" joint="h" gear="3"/></actuator></mujoco>"""


def test_actuator_views_follow_output_and_control_addresses():
  """Per-output (gear, acc0, length0, lengthrange; length, velocity, force, moment) and
  per-control (ctrlrange, ctrllimited; ctrl) rows are read through actuator_outadr/outnum
  and ctrladr/ctrlnum, as mujoco's m.actuator(i) / d.actuator(i): one row as a scalar (or
  row) when the actuator has one, else its block."""
  m, mj = load_both(xml=SLOTS)
  assert (mj.nactuator, mj.nu, mj.nout) == (4, 7, 6)
  md = mujoco.MjData(mj)
  md.qvel[:] = [.3, -.2, .5, 1.0]
  md.ctrl[:] = np.arange(mj.nu) / 10
  mujoco.mj_forward(mj, md)
  moment = np.zeros((mj.nout, mj.nv))
  mujoco.mju_sparse2dense(moment, md.actuator_moment, md.moment_rownnz, md.moment_rowadr,
                          md.moment_colind)
  d = jaxmj.make_data(m).replace(
    ctrl=md.ctrl.copy(), actuator_length=md.actuator_length.copy(),
    actuator_velocity=md.actuator_velocity.copy(), actuator_force=md.actuator_force.copy(),
    actuator_moment=moment)
  for i in range(mj.nactuator):
    ours, ref = jaxmj.bind(m).actuator(i), mj.actuator(i)
    for name in ("gear", "acc0", "length0", "lengthrange", "ctrlrange", "ctrllimited",
                 "gainprm", "trnid"):
      _same(getattr(ours, name), getattr(ref, name))
    ours, ref = jaxmj.bind(m, d).actuator(i), md.actuator(i)
    for name in ("ctrl", "length", "velocity", "force", "moment"):  # moment: dense rows
      _same(getattr(ours, name), getattr(ref, name))
