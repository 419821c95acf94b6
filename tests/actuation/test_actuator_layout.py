"""MuJoCo 4.0's actuator layout (nactuator actuators, nu controls, nout outputs) and the
multi-input <pid> (one control per input) held against mujoco 4.0.0: compiled fields,
100-step trajectories under Euler and (--runslow) implicitfast (1e-8), d qfrc_actuator /
d ctrl against finite differences of mj_fwdActuation."""

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import numpy as np  # noqa: E402
from mujoco_compare import (  # noqa: E402
  FAST,
  assert_ctrl_jacobian_matches,
  load_both,
  model_differences,
  to_jaxmj,
)

import jaxmj  # noqa: E402
from jaxmj.mjcf.errors import MJCFError  # noqa: E402

# A plain <pid> (input "pos vel"), pid states with two inputs, three inputs with per-input
# ranges and a control delay, inheritrange on the position control, <general> with the pid
# types, around single-control actuators so the control addresses shift.
ACTUATORS = """
  <motor joint="h0" ctrlrange="-1 1"/>
  <pid name="p" joint="h1" kp="3" kv=".2"/>
  <pid joint="h1" kp="3" kv=".2" ki="1" imax=".3" slewmax="4" posrange="-.5 .5"/>
  <pid joint="s" kp="2" dampratio="1" input="pos vel ff" velrange="-.1 .1" ffrange="-1 1"
       nsample="3" delay=".01"/>
  <pid joint="h1" kp="1" kv=".1" input="vel ff" inheritrange="0"/>
  <pid joint="h0" kp="2" kv=".3" inheritrange=".5"/>
  <general joint="s" gaintype="pid" biastype="affine" gainprm="0" biasprm="0 -2 -.5"
           input="pos vel"/>
  <motor joint="s" gear="2"/>
"""


def _xml(integrator: str = "Euler", actuators: str = ACTUATORS) -> str:
  sensor = '<actuatorfrc actuator="p"/>' if 'name="p"' in actuators else ""
  return f"""
<mujoco>
  <option timestep="0.005" integrator="{integrator}"/>
  <worldbody>
    <body>
      <joint name="h0" axis="0 1 0" range="-1 1" damping=".05"/>
      <geom size=".1" pos=".2 0 0" mass="1"/>
      <body pos=".4 0 0">
        <joint name="h1" axis="0 1 0"/>
        <geom size=".1" mass="1"/>
      </body>
    </body>
    <body pos="1 0 0"><joint name="s" type="slide" axis="1 0 0"/><geom size=".1"/></body>
  </worldbody>
  <actuator>{actuators}</actuator>
  <sensor>{sensor}<jointactuatorfrc joint="h1"/></sensor>
</mujoco>"""


@pytest.fixture(scope="module")
def euler():
  return load_both(xml=_xml())


def _state(mj, seed: int = 0):
  rng = np.random.default_rng(seed)
  dm = mujoco.MjData(mj)
  dm.qpos[:] = rng.uniform(-.5, .5, mj.nq)
  dm.qvel[:] = rng.normal(size=mj.nv)
  dm.ctrl[:] = rng.uniform(-1.2, 1.2, mj.nu)
  return dm


def test_multi_input_pid_compiles_as_mujoco(euler):
  m, mj = euler
  assert (m.nactuator, m.nu, m.nout) == (mj.nactuator, mj.nu, mj.nout) == (8, 15, 8)
  assert model_differences(m, mj) == []
  d = jaxmj.make_data(m)
  assert d.ctrl.shape == (mj.nu,) and d.actuator_force.shape == (mj.nout,)
  np.testing.assert_array_equal(jaxmj.bind(m, d).actuator("p").ctrl, d.ctrl[1:3])


@pytest.mark.parametrize("actuators", [
  '<pid joint="h0" kp="3" kv=".2" input="vel ff" inheritrange="1"/>',
  '<pid joint="h0" kp="3" kv=".2" input="vel" inheritrange="1"/>',
  '<pid joint="h0" kp="3" kv=".2" ctrllimited="true" posrange="-.5 .5"/>',
  '<pid joint="s" kp="4" input="pos ff" ffrange="-1 1" nsample="3" delay=".01"/>',
])
def test_pid_input_variants_compile_as_mujoco(actuators):
  m, mj = load_both(xml=_xml(actuators=actuators))
  assert model_differences(m, mj) == []
  assert m.nhistory == mj.nhistory  # ctrl buffers hold ctrlnum values per sample


@pytest.mark.parametrize("integrator", ["Euler", pytest.param("implicitfast",
                                                                marks=pytest.mark.slow)])
def test_multi_input_pid_trajectory_matches_mj_step(integrator, euler):
  m, mj = euler if integrator == "Euler" else load_both(xml=_xml(integrator))
  dm = _state(mj)
  d = to_jaxmj(m, dm).replace(ctrl=dm.ctrl.copy())
  run = jax.jit(lambda m, d: jaxmj.rollout(m, d, nstep=100, fields=("qpos", "act",
                                                                      "sensordata")),
                compiler_options=FAST)
  _, traj = run(m, d)
  ref = {"qpos": [], "act": [], "sensordata": []}
  for _ in range(100):
    mujoco.mj_step(mj, dm)
    for k, v in ref.items():
      v.append(getattr(dm, k).copy())
  for k, v in ref.items():
    np.testing.assert_allclose(np.asarray(traj[k]), np.array(v), atol=1e-8, err_msg=k)


def test_multi_input_pid_force_gradient_matches_finite_differences(euler):
  m, mj = euler
  dm = _state(mj, seed=1)
  dm.act[:] = [.1, .05]
  mujoco.mj_forward(mj, dm)
  d = to_jaxmj(m, dm).replace(act=dm.act.copy())
  assert_ctrl_jacobian_matches(m, mj, dm, d)


@pytest.mark.parametrize("actuator, message", [
  ('<orientation joint="h0" kp="2"/>', "requires a ball joint"),
  ('<pid joint="h1" kp="2" input="vel pos"/>', "canonical order"),
  ('<dcmotor joint="h1" motorconst="1" resistance="1" input="voltage pos"/>', "canonical order"),
])
def test_unsupported_inputs_are_refused_clearly(actuator, message):
  with pytest.raises(MJCFError, match=message):
    jaxmj.Model.from_xml_string(_xml(actuators=actuator))
