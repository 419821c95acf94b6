"""Control and sensor histories (nsample, delay, interp, interval) against mj_step.

One model carries every mode: a delayed motor (zero-order hold) and a delayed position
servo (linear, delay off the timestep grid), history-only, delayed (zoh, linear, cubic),
periodic (with and without a phase) and periodic-and-delayed sensors, one of them 3-wide;
a negative delay (MuJoCo 4.0 takes it: an actuator reads its newest sample, a sensor
reports its current value).
mjData.history, sensordata and qpos are compared after every step of a rollout.
"""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
from mujoco_compare import FAST, load_both  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.mjcf import MJCFError  # noqa: E402

XML = """
<mujoco>
  <option timestep="0.01"/>
  <worldbody>
    <body name="arm">
      <joint name="hinge" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
      <site name="tip" pos=".3 0 0"/>
      <body pos=".3 0 0">
        <joint name="slide" type="slide" axis="1 0 0"/>
        <geom size=".05" mass=".5"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="m0" joint="hinge" nsample="3" delay="0.03"/>
    <position joint="slide" kp="20" nsample="4" delay="0.025" interp="linear"/>
    <motor joint="slide" nsample="2" delay="-0.02"/>
  </actuator>
  <sensor>
    <jointpos joint="hinge" nsample="3"/>
    <jointvel joint="hinge" nsample="5" delay="0.02"/>
    <framepos objtype="site" objname="tip" nsample="4" delay="0.015" interp="linear"/>
    <jointpos joint="slide" nsample="6" delay="0.035" interp="cubic"/>
    <clock nsample="2" interval="0.025"/>
    <actuatorfrc actuator="m0" nsample="3" interval="0.03 -0.01"/>
    <framelinvel objtype="site" objname="tip" nsample="5" interval="0.02" delay="0.03"
                 interp="cubic"/>
    <jointvel joint="slide" nsample="2" delay="-0.01"/>
    <clock/>
  </sensor>
</mujoco>"""


@pytest.mark.parametrize("integrator", ["Euler", pytest.param("RK4", marks=pytest.mark.slow)])
def test_history_sensordata_and_qpos_match_mj_step(integrator):
  """RK4 also checks that its later stages neither push nor change sensordata."""
  xml = XML.replace('<option timestep="0.01"/>',
                    f'<option timestep="0.01" integrator="{integrator}"/>')
  m, mj = load_both(xml=xml)
  assert m.unsupported == () and m.nhistory == mj.nhistory
  for f in ("actuator_historyadr", "actuator_history", "sensor_historyadr", "sensor_history"):
    np.testing.assert_array_equal(getattr(m, f), getattr(mj, f), err_msg=f)
  np.testing.assert_array_equal(m.actuator_delay, mj.actuator_delay)
  dm = mujoco.MjData(mj)
  d = jaxmj.make_data(m)
  np.testing.assert_array_equal(d.history, dm.history)
  nstep = 25
  ctrl = np.stack([np.sin(0.7 * np.arange(nstep)), 0.2 * np.cos(np.arange(nstep)),
                   np.linspace(-1, 1, nstep)], axis=1)
  fields = ("qpos", "sensordata", "history")
  roll = jax.jit(lambda d, u: jaxmj.rollout(m, d, u, fields=fields)[1], compiler_options=FAST)
  ours = roll(d, ctrl)
  for k in range(nstep):
    dm.ctrl[:] = ctrl[k]
    mujoco.mj_step(mj, dm)
    for f in fields:
      np.testing.assert_allclose(ours[f][k], getattr(dm, f), atol=1e-10, rtol=1e-10,
                                 err_msg=f"{f} after step {k}")


def test_forward_reads_delays_without_pushing():
  m, mj = load_both(xml=XML)
  dm = mujoco.MjData(mj)
  d = jaxmj.make_data(m).replace(ctrl=np.array([1.0, 0.5, -1.0]))
  dm.ctrl[:] = d.ctrl
  mujoco.mj_forward(mj, dm)
  out = jax.jit(jaxmj.forward, compiler_options=FAST)(m, d)
  np.testing.assert_array_equal(out.history, dm.history)
  np.testing.assert_allclose(out.actuator_force, dm.actuator_force, atol=1e-12)
  np.testing.assert_allclose(out.sensordata, dm.sensordata, atol=1e-12)
  sig = int(mujoco.mjtState.mjSTATE_PHYSICS)  # the history is part of the physics state
  state = np.zeros(mujoco.mj_stateSize(mj, sig))
  mujoco.mj_getState(mj, dm, state, sig)
  np.testing.assert_array_equal(jaxmj.get_state(m, out, sig), state)


@pytest.mark.parametrize("attrs, message", [
  ('delay="0.1"', "delay > 0 without a history buffer"),
  ('nsample="16777217"', "at most 2^24 samples in history buffer"),
])
def test_bad_actuator_histories_are_mujocos_errors(attrs, message):
  xml = XML.replace('<motor joint="slide" nsample="2" delay="-0.02"/>',
                    f'<motor joint="slide" {attrs}/>')
  with pytest.raises(ValueError, match=message.replace("^", r"\^")):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(MJCFError, match=message.replace("^", r"\^")):
    jaxmj.Model.from_xml_string(xml)


# One hinge: delayed position and velocity sensors (linear, cubic), interval sensors (with
# and without a phase), a delayed acceleration-stage sensor and a delayed motor. Keyframe
# times fall after the buffers (0.5), inside their span (-0.015), on a sample (-0.02),
# before them (-0.0333) or leave samples a rounding error apart (-0.06).
KEY_TIMES = (0.5, -0.015, -0.02, -0.0333, -0.06)
SMALL = f"""
<mujoco>
  <option timestep="0.01"/>
  <worldbody>
    <body><joint name="h" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/></body>
  </worldbody>
  <actuator><motor name="m" joint="h" nsample="3" delay="0.02"/></actuator>
  <sensor>
    <jointpos joint="h" nsample="4" delay="0.015" interp="linear"/>
    <jointvel joint="h" nsample="5" delay="0.02" interp="cubic"/>
    <clock nsample="2" interval="0.025"/>
    <jointvel joint="h" nsample="3" interval="0.03 -0.01"/>
    <actuatorfrc actuator="m" nsample="3" delay="0.01"/>
  </sensor>
  <keyframe>{"".join(f'<key time="{t}"/>' for t in KEY_TIMES)}</keyframe>
</mujoco>"""
# Shared by the tests below: one compile of each.
STEP1 = jax.jit(jaxmj.step1, compiler_options=FAST)
STEP2 = jax.jit(jaxmj.step2, compiler_options=FAST)


def _split_steps(m, mj, d, dm, nstep: int, label: str):
  """mj_step1 / mj_step2 beside step1 / step2 from (d, dm): sensordata after step1, then
  sensordata, history and qpos after step2."""
  for k in range(nstep):
    mujoco.mj_step1(mj, dm)
    d = STEP1(m, d)
    np.testing.assert_allclose(d.sensordata, dm.sensordata, atol=1e-10,
                               err_msg=f"{label}: step1 {k}")
    dm.ctrl[:] = np.sin(k)
    mujoco.mj_step2(mj, dm)
    d = STEP2(m, d.replace(ctrl=dm.ctrl.copy()))
    for f in ("sensordata", "history", "qpos"):
      np.testing.assert_allclose(getattr(d, f), getattr(dm, f), atol=1e-10, rtol=1e-10,
                                 err_msg=f"{label}: {f} after step {k}")


def test_step1_reports_delayed_position_and_velocity_sensors():
  """mj_step1 already reads delayed and held interval values of position- and velocity-stage
  sensors; step2 still records their computed values."""
  m, mj = load_both(xml=SMALL)
  _split_steps(m, mj, jaxmj.make_data(m), mujoco.MjData(mj), 6, "reset")


def test_history_after_keyframe_reset_matches_mj_resetDataKeyframe():
  """A keyframe resets the buffers as mj_resetData does, and later steps insert samples in
  time order (mju_historyInsert) and read near-duplicate stamps as MuJoCo does."""
  m, mj = load_both(xml=SMALL)
  for key, time in enumerate(KEY_TIMES):
    dm = mujoco.MjData(mj)
    mujoco.mj_resetDataKeyframe(mj, dm, key)
    d = jaxmj.reset(m, key)
    np.testing.assert_array_equal(d.history, dm.history)
    _split_steps(m, mj, d, dm, 7, f"key time {time}")


def _filled(nstep=9):
  """Both engines' models and a Data each holding MuJoCo's buffers after nstep steps."""
  m, mj = load_both(xml=XML)
  dm = mujoco.MjData(mj)
  for k in range(nstep):
    dm.ctrl[:] = np.sin(0.7 * k + np.arange(mj.nu))
    mujoco.mj_step(mj, dm)
  d = jaxmj.make_data(m).replace(**{f: np.copy(getattr(dm, f)) for f in (
    "qpos", "qvel", "act", "qacc_warmstart", "history", "time", "ctrl", "sensordata")})
  return m, mj, d, dm


def _mj_read(fn, mj, dm, i, t, dim, interp):
  """A copy of what mj_readCtrl / mj_readSensor return: the binding's array can view the
  result buffer passed in, which must outlive the read (a temporary's memory was reused)."""
  result = np.zeros(dim)
  return np.array(fn(mj, dm, i, t, result, interp))


def test_read_ctrl_and_read_sensor_equal_mujoco():
  """mj_readCtrl / mj_readSensor on every actuator and sensor (with and without a buffer),
  each interpolation and the object's own (-1), at times on, between and outside the
  samples; the time may be traced."""
  m, mj, d, dm = _filled()
  times = dm.time + np.array([0.0, -0.004, -0.01, -0.027, -0.2, 0.05])
  for interp in (-1, 0, 1, 2):
    for i in range(mj.nu):
      for t in times:
        ref = _mj_read(mujoco.mj_readCtrl, mj, dm, i, t, mj.actuator_ctrlnum[i], interp)
        np.testing.assert_allclose(jaxmj.read_ctrl(m, d, i, t, interp), ref, atol=1e-12,
                                   err_msg=f"actuator {i} at {t}, interp {interp}")
    for i in range(mj.nsensor):
      for t in times:
        ref = _mj_read(mujoco.mj_readSensor, mj, dm, i, t, mj.sensor_dim[i], interp)
        np.testing.assert_allclose(jaxmj.read_sensor(m, d, i, t, interp), ref, atol=1e-12,
                                   err_msg=f"sensor {i} at {t}, interp {interp}")
  traced = jax.jit(lambda t: jaxmj.read_sensor(m, d, 2, t, 1))(times[1])
  np.testing.assert_allclose(traced, jaxmj.read_sensor(m, d, 2, times[1], 1), atol=1e-15)
  with pytest.raises(ValueError, match="invalid actuator id 7"):
    jaxmj.read_ctrl(m, d, 7, 0.0)


def test_init_histories_equal_mujoco_and_step_on():
  """mj_initCtrlHistory / mj_initSensorHistory with given times, with the stored ones (None),
  and a sensor's phase: the buffers equal MuJoCo's, and so do the next steps."""
  m, mj, d, dm = _filled()
  rng = np.random.default_rng(1)
  times = dm.time - 0.01 * np.arange(3, 0, -1)
  values = rng.normal(size=3)
  mujoco.mj_initCtrlHistory(mj, dm, 0, times, values[:, None])
  d = jaxmj.init_ctrl_history(m, d, 0, times, values[:, None])
  vals = rng.normal(size=(4, 1))
  mujoco.mj_initCtrlHistory(mj, dm, 1, None, vals)
  d = jaxmj.init_ctrl_history(m, d, 1, None, vals)
  svals = rng.normal(size=(4, 3))
  stimes = dm.time - np.array([0.03, 0.02, 0.012, 0.001])
  mujoco.mj_initSensorHistory(mj, dm, 2, stimes, svals, 0.4)
  d = jaxmj.init_sensor_history(m, d, 2, stimes, svals, 0.4)
  np.testing.assert_allclose(d.history, dm.history, atol=1e-15)
  step = jax.jit(jaxmj.step, compiler_options=FAST)
  for k in range(3):
    mujoco.mj_step(mj, dm)
    d = step(m, d)
    for f in ("qpos", "sensordata", "history"):
      np.testing.assert_allclose(getattr(d, f), getattr(dm, f), atol=1e-10, err_msg=f"{f} {k}")
  with pytest.raises(ValueError, match="strictly increasing"):
    jaxmj.init_ctrl_history(m, d, 0, times[::-1], values[:, None])
  with pytest.raises(ValueError, match="has no history buffer"):
    jaxmj.init_sensor_history(m, d, 8, None, np.zeros((1, 1)), 0.0)
