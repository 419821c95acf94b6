"""Option flags and options jaxmj does not simulate: each one either changes MuJoCo 4.0's
physics and is refused by name (jaxmj/dynamics/flags.py, the compiler for ipc), or is shown here to
leave MuJoCo's trajectory unchanged, so ignoring it is exact. The fwdinv diagnostics
(jaxmj/dynamics/fwdinv.py) are held against mj_step."""

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from mujoco_compare import jit_fast  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.dynamics.forward import check_supported  # noqa: E402
from jaxmj.types import DisableBit, EnableBit  # noqa: E402

# a box resting on a plane and a sphere falling fast onto a thin plate
SCENE = """
<mujoco>
  <option timestep="0.01" {opt}><flag {flag}/></option>
  <worldbody>
    <geom type="plane" size="2 2 .1"/>
    <geom name="plate" type="box" pos="1 0 .5" size=".3 .3 .005"/>
    <body pos="0 0 .05"><freejoint/><geom type="box" size=".1 .1 .05"/></body>
    <body pos="1 0 1"><freejoint/><geom size=".05"/></body>
  </worldbody>
</mujoco>
"""


def _mj_run(opt="", flag="", nstep=100):
  """qpos after each of `nstep` MuJoCo steps, the sphere thrown down at 60 m/s."""
  mj = mujoco.MjModel.from_xml_string(SCENE.format(opt=opt, flag=flag))
  d = mujoco.MjData(mj)
  d.qvel[8] = -60.0
  out = []
  for _ in range(nstep):
    mujoco.mj_step(mj, d)
    out.append(d.qpos.copy())
  return np.array(out), d


def _refused(xml_or_model, name):
  m = (jaxmj.Model.from_xml_string(xml_or_model) if isinstance(xml_or_model, str)
       else xml_or_model)
  with pytest.raises(NotImplementedError, match=name):
    check_supported(m)


def test_sleep_changes_mujoco_and_is_refused_by_name():
  """MuJoCo 4.0 freezes the resting box (qvel exactly 0, tree asleep); jaxmj refuses."""
  _, d_on = _mj_run(flag='sleep="enable"', nstep=200)
  _, d_off = _mj_run(nstep=200)
  assert np.all(d_on.qvel[:6] == 0) and d_on.tree_asleep[0] >= 0
  assert np.any(d_off.qvel[:6] != 0)
  _refused(SCENE.format(opt="", flag='sleep="enable"'), "flag sleep")


def test_speculative_changes_mujoco_and_is_refused_by_name():
  """Without speculative contacts the fast sphere tunnels through the plate; with them
  MuJoCo 4.0 stops it on top. jaxmj refuses the flag unless no contact pair exists."""
  q_on, _ = _mj_run(flag='speculative="enable"', nstep=30)
  q_off, _ = _mj_run(nstep=30)
  assert q_on[-1, 9] > 0.5 > q_off[-1, 9]
  xml = SCENE.format(opt="", flag='speculative="enable"')
  _refused(xml, "flag speculative")
  check_supported(jaxmj.Model.from_xml_string(
    SCENE.format(opt="", flag='speculative="enable" contact="disable"')))


def test_ipc_is_refused_by_both_compilers():
  """MuJoCo 4.0 allows ipc only with the discrete integrator, which jaxmj lacks."""
  xml = SCENE.format(opt="", flag='ipc="enable"')
  with pytest.raises(ValueError, match="ipc"):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match="ipc") as info:
    jaxmj.Model.from_xml_string(xml)
  assert info.value.attribute == "ipc"


@pytest.mark.parametrize("bit,name", [(EnableBit.SLEEP, "flag sleep"),
                                      (EnableBit.IPC, "flag ipc"),
                                      (EnableBit.SPECULATIVE, "flag speculative")])
def test_flag_set_after_compiling_is_refused(bit, name):
  m = jaxmj.Model.from_xml_string(SCENE.format(opt="", flag=""))
  check_supported(m)
  _refused(m.replace(opt=m.opt.replace(enableflags=m.opt.enableflags | bit)), name)


CCD = """
<mujoco>
  <option><flag nativeccd="{flag}"/></option>
  <asset><hfield name="h" nrow="3" ncol="3" size=".5 .5 .1 .05"
                 elevation="0 .5 0 .3 1 .2 0 .1 .4"/></asset>
  <worldbody>
    <body euler="5 7 3"><geom {g1}/></body>
    <body pos=".02 .03 .12" euler="30 20 10"><freejoint/><geom {g2}/></body>
  </worldbody>
</mujoco>
"""
CYL = 'type="cylinder" size=".06 .1"'
BOX = 'type="box" size=".08 .1 .06"'
HFIELD = 'type="hfield" hfield="h"'
SPHERE = 'size=".1"'
CAPSULE = 'type="capsule" size=".05 .1"'


def _contacts(g1, g2, flag):
  mj = mujoco.MjModel.from_xml_string(CCD.format(g1=g1, g2=g2, flag=flag))
  d = mujoco.MjData(mj)
  mujoco.mj_forward(mj, d)
  return np.array([[c.dist, *c.pos, *c.frame[:3]] for c in d.contact])


@pytest.mark.parametrize("g1,g2,libccd", [(CYL, BOX, True), (HFIELD, SPHERE, True),
                                          (BOX, BOX, False), (SPHERE, CAPSULE, False)],
                         ids=["cylinder-box", "hfield-sphere", "box-box", "sphere-capsule"])
def test_nativeccd_disabled_refused_where_mujoco_uses_libccd(g1, g2, libccd):
  """With nativeccd disabled MuJoCo 4.0 collides convex and heightfield pairs with libccd
  (other contacts); pairs with a primitive collider are unchanged and jaxmj runs them."""
  native, legacy = _contacts(g1, g2, "enable"), _contacts(g1, g2, "disable")
  assert len(native) and native.shape == legacy.shape
  assert (np.abs(native - legacy).max() > 1e-3) == libccd
  m = jaxmj.Model.from_xml_string(CCD.format(g1=g1, g2=g2, flag="disable"))
  if libccd:
    _refused(m, "flag nativeccd disabled")
  else:
    check_supported(m)
  check_supported(m.replace(opt=m.opt.replace(
    disableflags=m.opt.disableflags & ~DisableBit.NATIVECCD)))


@pytest.mark.parametrize("opt,flag,atol", [
  ("", 'fwdinv="enable"', 0.0),  # fills diagnostics only (test_fwdinv_matches_mujoco)
  ('sleep_tolerance="0.5"', "", 0.0),  # read only by the sleep flag
  ('sdf_iterations="2" sdf_initpoints="3"', "", 0.0),  # read only by sdf geoms (refused)
  ('magnetic="1 2 3"', "", 0.0),  # read only by magnetometers (honoured)
  ('jacobian="sparse"', "", 1e-9),  # another factorization: rounding only
  ('jacobian="dense"', "", 1e-9),
], ids=["fwdinv", "sleep_tolerance", "sdf", "magnetic", "sparse", "dense"])
def test_options_jaxmj_ignores_leave_mujoco_unchanged(opt, flag, atol):
  base, _ = _mj_run(nstep=60)
  q, _ = _mj_run(opt, flag, nstep=60)
  np.testing.assert_allclose(q, base, rtol=0, atol=atol)
  check_supported(jaxmj.Model.from_xml_string(SCENE.format(opt=opt, flag=flag)))



@pytest.mark.parametrize("size", ['nconmax="1" njmax="2"', 'nstack="1000"', 'memory="1M"'])
def test_size_capacities_leave_mujoco_unchanged(size):
  """MuJoCo 4.0 no longer caps contacts or rows at nconmax / njmax; memory and nstack only
  size its arena (one too small for the rows drops them with a warning, not modelled)."""
  xml = SCENE.format(opt="", flag="").replace("<worldbody>", f"<size {size}/><worldbody>")
  mj = mujoco.MjModel.from_xml_string(xml)
  d = mujoco.MjData(mj)
  d.qvel[8] = -60.0
  for _ in range(60):
    mujoco.mj_step(mj, d)
  base, _ = _mj_run(nstep=60)
  np.testing.assert_array_equal(d.qpos, base[-1])
  assert d.ncon > 1 and not d.warning[mujoco.mjtWarning.mjWARN_CNSTRFULL].number
  check_supported(jaxmj.Model.from_xml_string(xml))


SENSED = """
<mujoco>
  <option><flag nativeccd="{flag}" contact="disable"/></option>
  <worldbody>
    <body><geom name="a" {g1}/></body>
    <body pos=".05 .3 .1" euler="30 20 10"><freejoint/><geom name="b" {g2}/></body>
  </worldbody>
  <sensor><distance geom1="a" geom2="b" cutoff="1"/></sensor>
</mujoco>
"""


@pytest.mark.parametrize("g1,g2,libccd", [(CYL, 'type="ellipsoid" size=".1 .05 .08"', True),
                                          (SPHERE, CAPSULE, False)],
                         ids=["cylinder-ellipsoid", "sphere-capsule"])
def test_nativeccd_disabled_refused_for_distance_sensors_on_convex_pairs(g1, g2, libccd):
  """mj_geomDistance also measures convex pairs with libccd when nativeccd is disabled."""
  out = []
  for flag in ("enable", "disable"):
    mj = mujoco.MjModel.from_xml_string(SENSED.format(g1=g1, g2=g2, flag=flag))
    d = mujoco.MjData(mj)
    mujoco.mj_forward(mj, d)
    out.append(d.sensordata[0])
  assert (abs(out[0] - out[1]) > 1e-3) == libccd
  from jaxmj.sensor.distance import pair_distances

  m = jaxmj.Model.from_xml_string(SENSED.format(g1=g1, g2=g2, flag="disable"))
  measure = lambda d: pair_distances(m, d, np.array([0]), np.array([1]), 1.0)
  if libccd:
    with pytest.raises(NotImplementedError, match="nativeccd disabled"):
      jax.eval_shape(measure, jaxmj.make_data(m))
  else:
    jax.eval_shape(measure, jaxmj.make_data(m))


FWDINV = """
<mujoco>
  <option timestep="0.005"><flag fwdinv="enable" invdiscrete="enable"/></option>
  <worldbody>
    <body>
      <joint name="h" axis="0 1 0" range="-20 20" damping=".3"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/>
      <body pos=".3 0 0">
        <joint type="slide" axis="1 0 0" range="-.05 .05" damping=".2"/>
        <geom size=".05"/>
      </body>
    </body>
  </worldbody>
  <actuator><motor joint="h" gear="2"/></actuator>
</mujoco>
"""


def test_fwdinv_matches_mujoco():
  """solver_fwdinv and qfrc_inverse of mj_step from states of its rollout (both joints at
  their limits). Under invdiscrete the inverse reads the continuous qacc as
  discrete, so solver_fwdinv[1] is far from 0 and checks the whole inverse path. MuJoCo
  4.0 computes them in mj_step only, not in mj_forward."""
  mj = mujoco.MjModel.from_xml_string(FWDINV)
  dm = mujoco.MjData(mj)
  m = jaxmj.Model.from_xml_string(FWDINV)
  dm.ctrl[:], dm.qfrc_applied[1], dm.xfrc_applied[2, :3] = 0.7, 0.1, (1.0, 2.0, 3.0)
  step = jit_fast(jaxmj.step)
  for nstep in (29, 5):  # the hinge just hit its limit; both joints at their limits
    for _ in range(nstep):
      mujoco.mj_step(mj, dm)
    d = jaxmj.make_data(m).replace(
      qpos=dm.qpos.copy(), qvel=dm.qvel.copy(), qacc_warmstart=dm.qacc_warmstart.copy(),
      ctrl=dm.ctrl.copy(), qfrc_applied=dm.qfrc_applied.copy(),
      xfrc_applied=dm.xfrc_applied.copy())
    d = step(m, d)
    mujoco.mj_step(mj, dm)
    assert dm.solver_fwdinv[1] > 0.01
    fresh = mujoco.MjData(mj)  # mj_forward alone leaves the diagnostics unset
    fresh.qpos[:], fresh.qvel[:] = dm.qpos, dm.qvel
    mujoco.mj_forward(mj, fresh)
    assert fresh.nefc and not fresh.solver_fwdinv.any()
    np.testing.assert_allclose(d.solver_fwdinv, dm.solver_fwdinv, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(d.qfrc_inverse, dm.qfrc_inverse, rtol=1e-8, atol=1e-10)
