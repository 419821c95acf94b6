"""Integrators against mj_step (mujoco 4.0.0): Euler, RK4 (Munthe-Kaas on ball joints),
implicit and implicitfast, with joint and tendon damping, springs and actuators whose forces
depend on velocity; step1 / step2 with ctrl set in between as mj_step1 / mj_step2.
500-step trajectories are slow tests; the default suite checks single steps."""

import jax
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import FAST, load_both, to_jaxmj  # noqa: E402

import jaxmj  # noqa: E402

INTEGRATORS = ("Euler", "RK4", "implicit", "implicitfast")

ARM = """<mujoco><option integrator="{integ}" timestep="0.005"><flag contact="disable"/>
</option><worldbody>
<body pos="0 0 1"><joint name="h1" axis="0 1 0" damping=".3"/>
  <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/>
  <body pos=".5 0 0"><joint name="h2" axis="1 1 0" damping=".1" stiffness="2"/>
    <geom type="box" size=".2 .05 .03" pos=".2 0 0"/>
    <body pos=".4 0 0"><joint type="ball" damping=".05"/>
      <geom type="ellipsoid" size=".1 .05 .08" pos=".1 0 0"/></body></body></body>
<body pos="1 1 0"><joint name="s" type="slide" axis="0 0 1" damping="1"/>
  <joint name="h3" axis="1 0 0"/><geom type="box" size=".1 .2 .3"/></body>
</worldbody>
<tendon><fixed name="t" damping=".4"><joint joint="h1" coef="1"/><joint joint="h3" coef="-.5"/>
</fixed></tendon>
<actuator><motor joint="h1" gear="2"/><position joint="h2" kp="5" kv=".5"/>
  <velocity joint="s" kv="3"/><motor tendon="t"/></actuator></mujoco>"""


def _start(m, mj, seed=0):
  dm = mujoco.MjData(mj)
  rng = np.random.default_rng(seed)
  dm.qvel[:] = 2 * rng.normal(size=mj.nv)
  dm.ctrl[:] = rng.normal(size=mj.nu)
  return dm, to_jaxmj(m, dm).replace(ctrl=dm.ctrl.copy())


@pytest.mark.parametrize("integ", [
  pytest.param("Euler", marks=pytest.mark.slow), pytest.param("RK4", marks=pytest.mark.slow),
  "implicit", pytest.param("implicitfast", marks=pytest.mark.slow)])
def test_one_step_matches_mj_step(integ):
  m, mj = load_both(xml=ARM.format(integ=integ))
  dm, d = _start(m, mj)
  step = jax.jit(jaxmj.step, compiler_options=FAST)
  for _ in range(2):
    mujoco.mj_step(mj, dm)
    d = step(m, d)
    np.testing.assert_allclose(d.qpos, dm.qpos, atol=1e-12)
    np.testing.assert_allclose(d.qvel, dm.qvel, atol=1e-11)


# a box resting on a plane (contact rows) and a hinge arm; {damping} on the arm's joint
DAMPABLE = """<mujoco><option timestep="0.005">{flags}</option><worldbody>
<geom type="plane" size="2 2 .1"/>
<body pos="0 0 .1"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
<body pos="0 0 1"><joint axis="0 1 0"{damping}/>
  <geom type="capsule" fromto="0 0 0 .4 0 0" size=".04"/></body>
</worldbody></mujoco>"""


@pytest.mark.parametrize("flags", ["", '<flag contact="disable"/>'])
def test_damping_set_at_run_time_acts_on_a_model_compiled_without_it(flags):
  """A model compiled without damping (m.ndamped 0) takes mj_Euler's damped solve under a
  cond on the CPU: damping set at run time still acts as MuJoCo's, with contact rows and
  without, and a batch of models damped in some worlds only steps each world as alone."""
  m0 = jaxmj.Model.from_xml_string(DAMPABLE.format(flags=flags, damping=""))
  m, mj = load_both(xml=DAMPABLE.format(flags=flags, damping=' damping="2"'))
  assert (m0.ndamped, m.ndamped) == (0, 1)
  m0d = m0.replace(dof_damping=m.dof_damping)
  dm, d = _start(m, mj)
  step = jax.jit(jaxmj.step, compiler_options=FAST)
  d0, d1 = d, d
  for _ in range(3):
    mujoco.mj_step(mj, dm)
    d0, d1 = step(m0d, d0), step(m0, d1)
    np.testing.assert_allclose(d0.qpos, dm.qpos, atol=1e-12)
    np.testing.assert_allclose(d0.qvel, dm.qvel, atol=1e-11)
  assert np.max(np.abs(d1.qvel - d0.qvel)) > 1e-3  # the damping acted
  models = jax.tree.map(lambda a, b: np.stack([a, b]), m0d, m0)
  batch = jax.tree.map(lambda x: np.stack([x, x]), d)
  step_batch = jax.jit(jax.vmap(jaxmj.step), compiler_options=FAST)  # one compile, not three
  for _ in range(3):
    batch = step_batch(models, batch)
  for i, alone in enumerate((d0, d1)):
    np.testing.assert_allclose(batch.qvel[i], alone.qvel, atol=1e-12)


def test_step1_step2_with_control_in_between():
  m, mj = load_both(xml=ARM.format(integ="implicitfast"))
  dm, d = _start(m, mj)
  s1 = jax.jit(jaxmj.step1, compiler_options=FAST)
  s2 = jax.jit(jaxmj.step2, compiler_options=FAST)
  for k in range(2):
    mujoco.mj_step1(mj, dm)
    d = s1(m, d)
    np.testing.assert_allclose(d.actuator_length, dm.actuator_length, atol=1e-12)
    ctrl = np.sin(np.arange(mj.nu) + k) - 0.1 * dm.qvel[: mj.nu]
    dm.ctrl[:] = ctrl
    mujoco.mj_step2(mj, dm)
    d = s2(m, d.replace(ctrl=ctrl))
    np.testing.assert_allclose(d.qpos, dm.qpos, atol=1e-12)
    np.testing.assert_allclose(d.qvel, dm.qvel, atol=1e-11)


FREE = """<mujoco><option integrator="{integ}" timestep="0.01"><flag contact="disable"/>
</option><worldbody>
<body pos="0 0 1"><joint type="free" damping="{damping}"/>
  <geom type="box" size=".1 .2 .3" pos=".05 .02 0" euler="10 20 30"/>
  <body pos=".3 0 0"><geom size=".1"/></body></body>
<body pos="1 0 1"><joint axis="1 0 0" damping=".1"/>
  <geom type="capsule" size=".05" fromto="0 0 0 .3 0 0"/></body>
<body pos="2 0 1"><freejoint/><geom type="ellipsoid" size=".1 .2 .05"/></body>
</worldbody></mujoco>"""


def _free_trajectory_error(integ: str, damping: float, nstep: int) -> float:
  """Largest qpos/qvel gap to mj_step over `nstep` steps of two spinning free rigid bodies
  (one with a welded child, off-com joint frame) beside a damped hinge, under gravity."""
  m, mj = load_both(xml=FREE.format(integ=integ, damping=damping))
  dm = mujoco.MjData(mj)
  dm.qvel[:] = [0.1, .2, .3, 3, -2, 5, 1, 0, 0, 0, 4, 1, -3]
  d = to_jaxmj(m, dm)
  roll = jax.jit(lambda m, d: jaxmj.rollout(m, d, nstep=nstep, fields=("qpos", "qvel")),
                 compiler_options=FAST)
  _, traj = roll(m, d)
  gap = 0.0
  for k in range(nstep):
    mujoco.mj_step(mj, dm)
    gap = max(gap, np.abs(traj["qpos"][k] - dm.qpos).max(),
              np.abs(traj["qvel"][k] - dm.qvel).max())
  return gap


@pytest.mark.parametrize("integ,damping,nstep", [
  ("implicitfast", 0.3, 100),
  pytest.param("implicitfast", 0.0, 500, marks=pytest.mark.slow),
  pytest.param("implicitfast", 0.3, 500, marks=pytest.mark.slow),
  pytest.param("implicit", 0.0, 500, marks=pytest.mark.slow),
  pytest.param("implicit", 0.3, 500, marks=pytest.mark.slow)])
def test_free_rigid_bodies_under_implicit_match_mj_step(integ, damping, nstep):
  """MuJoCo 4.0's implicitfast keeps the bias (gyroscopic) derivative on the 6x6 block of a
  free joint without jointed descendants; without it the spin drifts by ~1e-3 per step."""
  assert _free_trajectory_error(integ, damping, nstep) < 1e-7


@pytest.mark.slow
@pytest.mark.parametrize("integ", INTEGRATORS)
def test_500_step_trajectory_matches_mj_step(integ):
  m, mj = load_both(xml=ARM.format(integ=integ))
  dm, d = _start(m, mj)
  roll = jax.jit(lambda m, d: jaxmj.rollout(m, d, nstep=500, fields=("qpos", "qvel")))
  _, traj = roll(m, d)
  qpos, qvel = [], []
  for _ in range(500):
    mujoco.mj_step(mj, dm)
    qpos.append(dm.qpos.copy())
    qvel.append(dm.qvel.copy())
  np.testing.assert_allclose(traj["qpos"], np.array(qpos), atol=1e-7)
  np.testing.assert_allclose(traj["qvel"], np.array(qvel), atol=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("name,nstep", [("swimmer", 500), ("gripper", 200)])
def test_repository_model_trajectory_matches_mj_step(name, nstep):
  """The swimmer (RK4 through the fluid model) and the gripper (equality-closed fingers
  squeezing a box: contacts, weld, joint coupling) follow mj_step."""
  import os

  from conftest import MODELS

  m, mj = load_both(path=os.path.join(MODELS, f"{name}.xml"))
  dm = mujoco.MjData(mj)
  ctrl = 0.8 * np.sin(np.arange(mj.nu) * 1.3) if name == "swimmer" else np.full(mj.nu, .04)
  dm.ctrl[:] = ctrl
  d = to_jaxmj(m, dm).replace(ctrl=ctrl)
  roll = jax.jit(lambda m, d: jaxmj.rollout(m, d, nstep=nstep, fields=("qpos", "qvel")))
  _, traj = roll(m, d)
  qpos = []
  for _ in range(nstep):
    mujoco.mj_step(mj, dm)
    qpos.append(dm.qpos.copy())
  atol = 1e-7 if name == "swimmer" else 1e-5
  np.testing.assert_allclose(traj["qpos"], np.array(qpos), atol=atol)


RK4_FIELDS = """<mujoco><option integrator="RK4" timestep="0.01">
<flag contact="disable" energy="enable"/></option><worldbody><site name="anchor" pos="0 0 2"/>
<body pos="0 0 1"><joint name="h1" axis="0 1 0" damping=".3" range="-.05 .05"/>
  <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/><site name="s1" pos=".3 0 0"/>
  <body pos=".5 0 0"><joint name="h2" axis="1 1 0" stiffness="2"/>
    <geom type="box" size=".2 .05 .03" pos=".2 0 0"/><site name="s2" pos=".2 0 0"/>
    <camera pos="0 .1 0"/></body></body>
<body pos="1 0 0"><joint type="ball"/><geom size=".1" pos=".1 0 0"/></body></worldbody>
<tendon><fixed name="t" damping=".4"><joint joint="h1" coef="1"/><joint joint="h2" coef="-.5"/>
</fixed><spatial name="sp" stiffness="3"><site site="anchor"/><site site="s1"/><site site="s2"/>
</spatial></tendon>
<actuator><motor name="a0" joint="h1" gear="2"/><position joint="h2" kp="5" kv=".5"/>
  <general tendon="sp" dyntype="filter" dynprm=".1" gainprm="2"/></actuator>
<sensor><jointpos joint="h1"/><tendonpos tendon="sp"/><actuatorfrc actuator="a0"/>
  <accelerometer site="s2"/><framelinacc objtype="site" objname="s1"/></sensor></mujoco>"""


def _mjdata_field(mj, dm, name: str, ours: np.ndarray) -> np.ndarray:
  """MjData's `name` in jaxmj's layout (dense ten_J and actuator_moment, active efc rows,
  per-island arrays cut to nisland)."""
  sparse = {"ten_J": (mj.ten_J_rownnz, mj.ten_J_rowadr, mj.ten_J_colind),
            "actuator_moment": (dm.moment_rownnz, dm.moment_rowadr, dm.moment_colind)}
  if name in sparse:
    out = np.zeros(ours.shape)
    mujoco.mju_sparse2dense(out, getattr(dm, name), *sparse[name])
    return out
  return np.asarray(getattr(dm, name))


def test_rk4_step_leaves_every_data_field_as_mj_step():
  """After an RK4 mj_step MuJoCo 4.0 holds the last stage's computed fields (positions,
  tendons, actuators, constraint rows, solver_niter, energy, cameras) except qacc, the
  combined sum b_i a_i, and the fields only sensors write (sensordata, cacc, cfrc_int,
  cfrc_ext), which stay stage 1's: its later stages skip the sensors. Every Data field MjData
  also has is compared (float64); the joint limit turns active only in the later stages of
  the first step."""
  m, mj = load_both(xml=RK4_FIELDS)
  dm = mujoco.MjData(mj)
  dm.qvel[:] = [3, -2, 1, 2, -1]
  dm.ctrl[:] = [.5, -.3, 1]
  dm.act[:] = [.2]
  d = to_jaxmj(m, dm).replace(ctrl=dm.ctrl.copy(), act=dm.act.copy())
  step = jax.jit(jaxmj.step, compiler_options=FAST)
  skip = {"contact", "warning", "qLD"}  # MjContact structs, MjWarningStat, sparse factor
  for _ in range(2):
    mujoco.mj_step(mj, dm)
    d = step(m, d)
    compared = 0
    for name in type(d)._leaf_names + type(d)._static_names:
      if name in skip or not hasattr(dm, name):
        continue
      ours = np.asarray(getattr(d, name))
      ref = _mjdata_field(mj, dm, name, ours)
      if name.startswith("efc_"):
        ours = ours[np.asarray(d.efc_active)]
      if name.startswith("island_") or name == "solver_niter":
        ours, ref = ours[:max(1, dm.nisland)], ref[:max(1, dm.nisland)]
      np.testing.assert_allclose(ours.reshape(ref.shape).astype(float), ref.astype(float),
                                 atol=1e-9, err_msg=name)
      compared += 1
    assert compared > 50


def test_rk4_fast_spin_uses_the_exact_dexp_inverse():
  """A free body and a ball joint spinning at ~30 rad/s with h = 0.01: stage rotations of
  ~0.3 rad, where the dexp^-1 series cut at [theta, [theta, w]] / 12 was 5e-8 off MuJoCo 4.0
  (which uses the closed form) in qpos after one step."""
  xml = """<mujoco><option integrator="RK4" timestep="0.01" gravity="0 0 0"/><worldbody>
  <body><freejoint/><geom type="box" size=".1 .2 .3"/>
    <body pos=".2 0 0"><joint type="ball"/><geom type="ellipsoid" size=".1 .05 .08"/></body>
  </body></worldbody></mujoco>"""
  m, mj = load_both(xml=xml)
  dm = mujoco.MjData(mj)
  dm.qvel[:] = 30 * np.random.default_rng(1).normal(size=mj.nv)
  d = jax.jit(jaxmj.step, compiler_options=FAST)(m, to_jaxmj(m, dm))
  mujoco.mj_step(mj, dm)
  np.testing.assert_allclose(d.qpos, dm.qpos, atol=1e-12)
  np.testing.assert_allclose(d.qvel, dm.qvel, atol=1e-10)


# ARM with a yielding spring, sensors with histories (delayed, held at an interval, and an
# acceleration-stage one) and a delayed actuator: what mj_advance updates besides the state
HISTORY_ARM = ARM.replace('stiffness="2"', 'stiffness="2" springyield=".05"').replace(
  "</mujoco>", """<sensor><jointpos joint="h1" nsample="3" interp="linear" delay="0.007"/>
  <jointvel joint="h2" nsample="2" interval="0.01"/>
  <accelerometer site="tip" nsample="2" delay="0.005"/></sensor></mujoco>""").replace(
  '<geom type="ellipsoid"', '<site name="tip"/><geom type="ellipsoid"').replace(
  '<motor joint="h1" gear="2"/>', '<motor joint="h1" gear="2" nsample="2" delay="0.005"/>')

_BY_NAME = {"Euler": ("euler", lambda mj, dm: mujoco.mj_Euler(mj, dm)),
            "RK4": ("rungekutta4", lambda mj, dm: mujoco.mj_RungeKutta(mj, dm, 4)),
            "implicit": ("implicit", lambda mj, dm: mujoco.mj_implicit(mj, dm)),
            "implicitfast": ("implicit", lambda mj, dm: mujoco.mj_implicit(mj, dm))}


@pytest.mark.parametrize("integ", [
  "Euler", pytest.param("RK4", marks=pytest.mark.slow),
  pytest.param("implicit", marks=pytest.mark.slow), "implicitfast"])
def test_integrator_by_name_after_forward_matches_mujoco(integ):
  """jaxmj.euler / implicit / rungekutta4 after forward, as mj_Euler / mj_implicit /
  mj_RungeKutta after mj_forward: state, time, warmstart, spring references and history."""
  name, mj_integrate = _BY_NAME[integ]
  m, mj = load_both(xml=HISTORY_ARM.format(integ=integ))
  dm, d = _start(m, mj)
  fwd = jax.jit(jaxmj.forward, compiler_options=FAST)
  integrate = jax.jit(getattr(jaxmj, name), compiler_options=FAST)
  for _ in range(4):
    mujoco.mj_forward(mj, dm)
    mj_integrate(mj, dm)
    d = integrate(m, fwd(m, d))
    for f in ("qpos", "qvel", "act", "time", "qacc_warmstart", "history", "plastic"):
      np.testing.assert_allclose(getattr(d, f), getattr(dm, f), atol=1e-11, err_msg=f)


def test_integrator_by_name_after_forward_is_step():
  """For a model of that integrator, forward then the integrator is step (to the last bit a
  separate compile may round differently)."""
  m, mj = load_both(xml=HISTORY_ARM.format(integ="implicitfast"))
  _, d = _start(m, mj)
  a = jax.jit(lambda m, d: jaxmj.implicit(m, jaxmj.forward(m, d)))(m, d)
  b = jax.jit(jaxmj.step)(m, d)
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
    np.testing.assert_allclose(x, y, rtol=1e-14, atol=1e-15)


def test_implicit_refuses_an_explicit_model_as_mujoco_does():
  m, mj = load_both(xml=ARM.format(integ="Euler"))
  with pytest.raises(mujoco.FatalError, match="implicit"):
    mujoco.mj_implicit(mj, mujoco.MjData(mj))
  with pytest.raises(ValueError, match="IMPLICIT or IMPLICITFAST"):
    jaxmj.implicit(m, jaxmj.make_data(m))
