"""Every sensor type jaxmj computes, against mj_forward's sensordata at random states.

The closed-form sensors are held to 1e-9, relative to the value's size for the large
accelerations and forces random applied forces produce on light bodies.
"""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
from conftest import MODELS  # noqa: E402
from mujoco_compare import (  # noqa: E402
  FAST,
  assert_stage_matches,
  load_both,
  random_state,
)

import jaxmj  # noqa: E402
from jaxmj.types import SensorType  # noqa: E402

PATH = f"{MODELS}/sensors.xml"


def _state(mj, seed: int):
  """Moderate random states: joints within reach of their limits, the free bodies resting
  on (or slightly in) the floor so that contacts and touch forces occur."""
  rng = np.random.default_rng(seed)
  d = mujoco.MjData(mj)
  d.qpos[:] = mj.qpos0
  d.qpos[0] = rng.uniform(-1.3, 1.3)  # hinge, limits at +-60 degrees
  d.qpos[1] = rng.uniform(-0.15, 0.25)  # slider
  q = rng.normal(size=4)
  d.qpos[2:6] = q / np.linalg.norm(q)  # ball, limited to 50 degrees
  for adr in (6, 13):  # free bodies: shifted, slightly sunk, tilted a little
    d.qpos[adr:adr + 2] += rng.normal(scale=0.05, size=2)
    d.qpos[adr + 2] -= rng.uniform(0.0, 0.01)
    q = np.array([1.0, *rng.normal(scale=0.05, size=3)])
    d.qpos[adr + 3:adr + 7] = q / np.linalg.norm(q)
  d.qvel[:] = rng.normal(size=mj.nv)
  d.qfrc_applied[:] = rng.normal(size=mj.nv)
  d.xfrc_applied[:] = rng.normal(scale=0.3, size=(mj.nbody, 6))
  d.ctrl[:] = rng.normal(size=mj.nu)
  d.time = rng.uniform(0, 10)
  return d


@pytest.fixture(scope="module")
def model():
  m, mj = load_both(PATH)
  return m, mj, jax.jit(jaxmj.forward, compiler_options=FAST)


def _compare(m, mj, fwd, state, seeds, seen=None):
  """Every sensor within 1e-9 of mj_forward's (relative above magnitude 1), and cacc,
  cfrc_int and cfrc_ext, at the states `state(m, mj, seed)`; `seen` gathers the nonzero
  sensordata entries."""

  def check(out, d, seed):
    bad = []
    for i in range(mj.nsensor):
      a, n = mj.sensor_adr[i], mj.sensor_dim[i]
      ours, ref = np.asarray(out.sensordata[a:a + n]), d.sensordata[a:a + n]
      if not np.all(np.abs(ours - ref) <= 1e-9 * np.maximum(1.0, np.abs(ref))):
        bad.append((mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_SENSOR, i), ours, ref))
    assert bad == []
    for f in ("cacc", "cfrc_int", "cfrc_ext"):
      ref = getattr(d, f)
      assert np.all(np.abs(np.asarray(getattr(out, f)) - ref)
                    <= 1e-9 * np.maximum(1, np.abs(ref)))
    if seen is not None:
      np.logical_or(seen, d.sensordata != 0, out=seen)

  assert_stage_matches((m, mj), fwd, mujoco.mj_forward, [], seeds=seeds, state=state,
                       inputs=("ctrl",), check=check)


def test_model_has_every_supported_type(model):
  m, mj, _ = model
  assert set(mj.sensor_type) == {int(t) for t in jaxmj.sensor.driver.SUPPORTED}
  assert m.unsupported == ()


def test_sensordata_matches_mj_forward(model):
  m, mj, fwd = model
  seen = np.zeros(mj.nsensordata, bool)
  _compare(m, mj, fwd, lambda m, mj, seed: _state(mj, seed), range(6), seen)
  # Each sensor was nonzero at some state (touch, limits, rays and insidesite included).
  for i in range(mj.nsensor):
    a, n = mj.sensor_adr[i], mj.sensor_dim[i]
    assert seen[a:a + n].any(), mujoco.mj_id2name(mj, mujoco.mjtObj.mjOBJ_SENSOR, i)


def test_sensordata_at_extreme_states(model):
  """Far-off states: free bodies flung away, large velocities and applied forces (rays
  miss, cutoffs clamp)."""
  m, mj, fwd = model
  _compare(m, mj, fwd, random_state, range(2))


@pytest.mark.slow
def test_mjx_sensor_test_model():
  """MuJoCo's own sensor test model (mjx/test_data/sensor/sensor.xml): every sensor."""
  import os

  path = os.path.join(os.path.dirname(mujoco.__file__), "mjx/test_data/sensor/sensor.xml")
  m, mj = load_both(path)

  def state(m, mj, seed):
    d = random_state(m, mj, seed)
    d.ctrl[:] = np.random.default_rng(seed).uniform(-1, 1, size=mj.nu)
    return d

  _compare(m, mj, jax.jit(jaxmj.forward, compiler_options=FAST), state, range(3))


def test_sensor_disable_flag_leaves_sensordata():
  xml = open(PATH).read().replace('<option timestep="0.005"/>',
                                  '<option timestep="0.005"><flag sensor="disable"/></option>')
  m = jaxmj.Model.from_xml_string(xml)
  d = jaxmj.make_data(m).replace(sensordata=np.full(m.nsensordata, 7.0))
  out = jaxmj.sensor.driver.sensor_pos(m, d)
  np.testing.assert_array_equal(out.sensordata, 7.0)


def test_sensor_stage_vmaps_and_differentiates():
  m = jaxmj.Model.from_xml_string("""<mujoco><worldbody><body><joint name="j" axis="0 1 0"/>
    <geom size=".1"/><site name="s" pos=".3 0 .1"/></body></worldbody>
    <sensor><framepos objtype="site" objname="s"/><jointpos joint="j"/></sensor></mujoco>""")
  d = jaxmj.make_data(m)

  @jax.jit
  def framepos(qpos):
    dd = jaxmj.smooth.kinematics.kinematics(m, d.replace(qpos=qpos))
    return jaxmj.sensor_pos(m, dd).sensordata[:3]

  batch = jax.vmap(framepos)(np.array([[0.0], [0.3]]))
  assert batch.shape == (2, 3) and not np.allclose(batch[0], batch[1])
  jac = jax.jit(jax.jacfwd(framepos))(np.array([0.3]))
  fd = (framepos(np.array([0.3 + 1e-6])) - framepos(np.array([0.3 - 1e-6]))) / 2e-6
  np.testing.assert_allclose(jac[:, 0], fd, atol=1e-6)


CAMPROJECTION = """<mujoco><worldbody>
  <camera name="plain" pos="0 -2 1" xyaxes="1 0 0 0 .5 1" resolution="320 240" fovy="50"/>
  <camera name="physical" pos=".3 -1.5 .8" xyaxes="1 .2 0 0 .5 1" resolution="640 480"
          sensorsize=".006 .004" focal=".004 .005" principalpixel="10 -5"/>
  <body pos="0 0 .5"><freejoint/><geom size=".1"/><site name="s" pos=".05 0 0"/></body>
  <site name="on_plane" pos=".1 -2 1"/>
</worldbody><sensor><camprojection site="s" camera="plain"/>
  <camprojection site="s" camera="physical"/><camprojection site="on_plane" camera="plain"/>
</sensor></mujoco>"""


def test_camprojection_with_fovy_or_a_sensor_size_matches_mj_forward():
  """Focal lengths from fovy, or from the intrinsics over the sensor size (in float32, as
  MuJoCo; the principal point unused), and a site on the camera's plane (z = 0: MuJoCo
  divides by +mjMINVAL)."""
  assert_stage_matches(CAMPROJECTION, jaxmj.forward, mujoco.mj_forward, ["sensordata"],
                       seeds=range(2), tol=0.0, rtol=1e-14)


@pytest.mark.parametrize("sensor, feature", [
  ('<insidesite objtype="geom" objname="e" site="s" enclosed="true"/>',
   "enclosed='true' of hfield objects"),
])
def test_unsupported_sensors_are_named(sensor, feature):
  xml = f"""<mujoco><asset><hfield name="h" nrow="2" ncol="2" size="1 1 .1 .1"/></asset>
    <worldbody><body><joint name="j"/><geom name="a" size=".1"/><site name="s"/>
    </body><geom name="e" type="hfield" hfield="h" pos="1 0 0"/></worldbody>
    <sensor>{sensor}</sensor></mujoco>"""
  m = jaxmj.Model.from_xml_string(xml)
  with pytest.raises(NotImplementedError, match=feature):
    if m.unsupported:  # listed by the compiler: forward refuses before computing anything
      jaxmj.forward(m, jaxmj.make_data(m))
    else:  # found when the sensor stage is traced
      jaxmj.sensor_pos(m, jaxmj.make_data(m))
  off = xml.replace("<mujoco>", '<mujoco><option><flag sensor="disable"/></option>')
  m = jaxmj.Model.from_xml_string(off)
  jaxmj.smooth.kinematics.kinematics(m, jaxmj.make_data(m))  # compiles; nothing left to refuse
  assert all(int(t) in range(len(SensorType)) for t in m.sensor_type)
