"""<orientation> (SO3 servo) actuators and <general> with the so3 types, held against
mujoco 4.0.0: compiled fields (3 controls and 3 outputs each, acc0 per dof, dampratio from
the mean), a 100-step trajectory with actuator sensors under Euler and (--runslow)
implicitfast (1e-8, see its docstring for the force cap), d qfrc_actuator / d ctrl against
finite differences of mj_fwdActuation, and MuJoCo's compile errors."""

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from mujoco_compare import (  # noqa: E402
  assert_ctrl_jacobian_matches,
  load_both,
  model_differences,
  to_jaxmj,
)

import jaxmj  # noqa: E402
from jaxmj.mjcf.errors import MJCFError  # noqa: E402

FAST = {"xla_backend_optimization_level": 0}

# Single-output actuators before and after the so3 ones, so control and output addresses
# shift; a force-limited orientation (the norm cap binds), a general so3 with an offset.
ACTUATORS = """
  <motor joint="h" ctrlrange="-1 1"/>
  <orientation name="o" joint="b" kp="3" dampratio="1" forcerange="0 4" ctrlrange="-1.5 1.5"/>
  <position joint="h" kp="2" dampratio=".5"/>
  <general name="g" joint="b2" gaintype="so3" biastype="so3" gainprm="2" biasprm=".1 -2 -.3"/>
"""


def _xml(integrator: str = "Euler", actuators: str = ACTUATORS, joint: str = "ball") -> str:
  sensors = ("""<actuatorpos actuator="o"/><actuatorvel actuator="g"/>
    <actuatorfrc actuator="o"/><actuatorfrc actuator="g"/>""" if 'name="o"' in actuators
             else "")
  return f"""
<mujoco>
  <option timestep="0.005" integrator="{integrator}" gravity="0 0 -2"/>
  <worldbody>
    <body pos="0 0 1">
      <joint name="b" type="{joint}" damping=".1"/>
      <geom type="capsule" size=".05" fromto="0 0 0 .3 .1 0" mass="1"/>
      <body pos=".3 .1 0"><joint name="h" axis="0 1 0"/><geom size=".07" mass=".5"/></body>
    </body>
    <body pos="1 0 1"><joint name="b2" type="ball"/><geom type="box" size=".1 .2 .05"/></body>
  </worldbody>
  <actuator>{actuators}</actuator>
  <sensor>{sensors}<jointactuatorfrc joint="h"/></sensor>
</mujoco>"""


@pytest.fixture(scope="module")
def euler():
  return load_both(xml=_xml())


def _state(mj, seed: int = 0):
  rng = np.random.default_rng(seed)
  dm = mujoco.MjData(mj)
  for j in range(mj.njnt):
    adr = mj.jnt_qposadr[j]
    if mj.jnt_type[j] == mujoco.mjtJoint.mjJNT_BALL:
      q = rng.normal(size=4)
      dm.qpos[adr:adr + 4] = q / np.linalg.norm(q)
    else:
      dm.qpos[adr] = rng.uniform(-1, 1)
  dm.qvel[:] = rng.normal(size=mj.nv)
  dm.ctrl[:] = rng.uniform(-2, 2, mj.nu)
  return dm


def test_orientation_compiles_as_mujoco(euler):
  m, mj = euler
  assert (m.nactuator, m.nu, m.nout) == (mj.nactuator, mj.nu, mj.nout) == (4, 8, 8)
  assert model_differences(m, mj) == []
  np.testing.assert_array_equal(m.sensor_dim, mj.sensor_dim)
  np.testing.assert_array_equal(m.actuator_outadr, [0, 1, 4, 5])


def _trajectories(m, mj, dm, fields=("qpos", "sensordata", "actuator_force")):
  d = to_jaxmj(m, dm).replace(ctrl=dm.ctrl.copy())
  run = jax.jit(lambda m, d: jaxmj.rollout(m, d, nstep=100, fields=fields),
                compiler_options=FAST)
  _, traj = run(m, d)
  ref = {k: [] for k in fields}
  for _ in range(100):
    mujoco.mj_step(mj, dm)
    for k, v in ref.items():
      v.append(getattr(dm, k).copy())
  return {k: np.asarray(v) for k, v in traj.items()}, {k: np.array(v) for k, v in ref.items()}


def test_orientation_trajectory_matches_mj_step(euler):
  m, mj = euler
  ours, ref = _trajectories(m, mj, _state(mj))
  capped = np.linalg.norm(ref["actuator_force"][:, 1:4], axis=1) > 4 - 1e-9
  assert capped.any() and not capped.all()  # the norm cap binds for part of the run
  for k in ours:
    np.testing.assert_allclose(ours[k], ref[k], atol=1e-8, err_msg=k)


def test_delayed_orientation_matches_mj_step():
  """A control delay on the 3-control so3 actuator: its history holds 3 values per sample."""
  acts = ACTUATORS.replace('dampratio="1" forcerange',
                           'dampratio="1" delay=".012" nsample="4" interp="linear" forcerange')
  m, mj = load_both(xml=_xml("Euler", acts))
  assert mj.actuator_history[1].tolist() == [4, 1]
  ours, ref = _trajectories(m, mj, _state(mj))
  for k in ours:
    np.testing.assert_allclose(ours[k], ref[k], atol=1e-8, err_msg=k)


@pytest.mark.slow
def test_orientation_implicitfast_matches_mj_step():
  """MuJoCo's implicit derivative drops a capped so3 actuator's velocity term when the
  capped force's norm rounds to >= forcerange[1], so with a binding cap the last bit decides:
  the trajectory runs uncapped; one capped step where MuJoCo's norm is exactly the cap."""
  m, mj = load_both(xml=_xml("implicitfast", ACTUATORS.replace('"0 4"', '"0 40"')))
  ours, ref = _trajectories(m, mj, _state(mj))
  for k in ours:
    np.testing.assert_allclose(ours[k], ref[k], atol=1e-8, err_msg=k)
  m, mj = load_both(xml=_xml("implicitfast"))
  dm = _state(mj)
  d = to_jaxmj(m, dm).replace(ctrl=dm.ctrl.copy())
  mujoco.mj_forward(mj, dm)
  assert np.linalg.norm(dm.actuator_force[1:4]) == 4.0
  mujoco.mj_step(mj, dm)
  np.testing.assert_allclose(np.asarray(jax.jit(jaxmj.step)(m, d).qvel), dm.qvel, atol=1e-10)


def test_orientation_force_gradient_matches_finite_differences(euler):
  m, mj = euler
  dm = _state(mj, seed=1)
  dm.ctrl[:] *= .3  # inside the ranges and under the force cap
  mujoco.mj_forward(mj, dm)
  d = to_jaxmj(m, dm)
  assert_ctrl_jacobian_matches(m, mj, dm, d)


@pytest.mark.parametrize("actuator, joint, message", [
  ('<orientation joint="b" kp="2"/>', "free", "requires a ball joint"),
  ('<orientation joint="b" kp="2" forcerange="-1 1"/>', "ball", "lower bound must be 0"),
  ('<general joint="b" gaintype="so3" biastype="so3" gainprm="2" biasprm="0 -1"/>', "ball",
   r"gainprm\[0\] == -biasprm\[1\]"),
  ('<general joint="b" gaintype="so3" biastype="affine"/>', "ball", "both be 'so3'"),
  ('<general joint="b" gaintype="so3" biastype="so3" gainprm="1" biasprm="0 -1" '
   'dyntype="filter"/>', "ball", "dyntype 'none' or 'integrator'"),
  ('<general joint="b" gaintype="so3" biastype="so3" gainprm="1" biasprm="0 -1" '
   'dyntype="integrator"/>', "ball", "not supported by jaxmj yet"),
  ('<orientation joint="b" kp="2" input="pos"/>', "ball", "input is not supported by jaxmj"),
])
def test_so3_errors(actuator, joint, message):
  with pytest.raises(MJCFError, match=message):
    jaxmj.Model.from_xml_string(_xml(actuators=actuator, joint=joint))
  if "jaxmj" not in message:  # MuJoCo refuses it too
    with pytest.raises(ValueError):
      mujoco.MjModel.from_xml_string(_xml(actuators=actuator, joint=joint))
