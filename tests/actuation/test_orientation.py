"""<orientation> (SO3 servo) actuators and <general> with the so3 types, held against
mujoco 4.0.0: compiled fields (3 outputs each, 3 or 4 controls, 3 activations for an
integrator, acc0 per output, dampratio from the mean, gear/armature/damping stored), a
100-step trajectory with actuator sensors under Euler and (--runslow) implicitfast (1e-8,
see its docstring for the force cap) covering ball-joint and site/refsite transmissions,
expmap and quat inputs, an actearly, actlimited integrator and a control delay; d qfrc_actuator
/ d ctrl against finite differences of mj_fwdActuation; lengthrange mode 'all'; inert
activations of so3 actuators without dynamics (actdim > 1); and MuJoCo's compile errors."""

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

# Single-output actuators before and after the so3 ones, so control and output addresses
# shift; a force-limited orientation (the norm cap binds) with a control delay; a general so3
# with an offset and a gear, armature and damping (stored, unused, as in MuJoCo); a site so3
# with quaternion controls; an integrator so3 (3 activations, actearly, actlimited) on a
# site relative to a world site.
ACTUATORS = """
  <motor joint="h" ctrlrange="-1 1"/>
  <orientation name="o" joint="b" kp="3" dampratio="1" forcerange="0 4" ctrlrange="-1.5 1.5"
               delay=".012" nsample="4" interp="linear"/>
  <position joint="h" kp="2" dampratio=".5"/>
  <general name="g" joint="b2" gaintype="so3" biastype="so3" gainprm="2" biasprm=".1 -2 -.3"
           gear="2 3 4 0 0 1" armature=".5" damping=".3 .1 .2"/>
  <orientation name="q" site="s" refsite="w" kp="2" dampratio=".7" input="quat"
               ctrlrange="-1 1"/>
  <general name="i" site="w" refsite="ws" gaintype="so3" biastype="so3" gainprm="1.5"
           biasprm="0 -1.5 -.2" dyntype="integrator" actearly="true" actlimited="true"
           actrange="-.8 .8" ctrlrange="-2 2"/>
"""


def _xml(integrator: str = "Euler", actuators: str = ACTUATORS, joint: str = "ball",
         compiler: str = "") -> str:
  sensors = ("""<actuatorpos actuator="o"/><actuatorvel actuator="g"/>
    <actuatorfrc actuator="o"/><actuatorfrc actuator="g"/><actuatorpos actuator="q"/>
    <actuatorfrc actuator="i"/>""" if 'name="o"' in actuators else "")
  return f"""
<mujoco>
  <compiler>{compiler}</compiler>
  <option timestep="0.005" integrator="{integrator}" gravity="0 0 -2"/>
  <worldbody>
    <site name="ws" pos=".3 .2 .1" euler="20 40 -10"/>
    <body pos="0 0 1">
      <joint name="b" type="{joint}" damping=".1"/>
      <geom type="capsule" size=".05" fromto="0 0 0 .3 .1 0" mass="1"/>
      <site name="s" pos=".1 0 0" euler="5 15 -40"/>
      <body pos=".3 .1 0"><joint name="h" axis="0 1 0"/><geom size=".07" mass=".5"/></body>
    </body>
    <body pos="1 0 1" euler="0 30 0">
      <joint name="b2" type="ball"/><geom type="box" size=".1 .2 .05"/>
      <site name="w" pos="0 .1 0" euler="30 -20 50"/>
    </body>
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
  dm.act[:] = rng.uniform(-1, 1, mj.na)
  return dm


def test_orientation_compiles_as_mujoco(euler):
  m, mj = euler
  counts = (m.nactuator, m.nu, m.nout, m.na)
  assert counts == (mj.nactuator, mj.nu, mj.nout, mj.na) == (6, 15, 14, 3)
  assert model_differences(m, mj) == []
  np.testing.assert_array_equal(m.sensor_dim, mj.sensor_dim)
  np.testing.assert_array_equal(m.actuator_outadr, [0, 1, 4, 5, 8, 11])
  np.testing.assert_array_equal(m.actuator_ctrlnum, [1, 3, 1, 3, 4, 3])
  assert mj.actuator_history[1].tolist() == [4, 1]  # 3 delayed controls a sample
  assert np.all(mj.actuator_length0[8:11] != 0)  # the two sites' frames differ at qpos0


def _trajectories(m, mj, dm, fields=("qpos", "act", "sensordata", "actuator_force")):
  d = to_jaxmj(m, dm).replace(ctrl=dm.ctrl.copy(), act=dm.act.copy(),
                              act_dot=dm.act_dot.copy())
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
  held = np.abs(ref["act"]) == .8
  assert held.any() and not held.all()  # the integrator's actrange binds for part of it
  for k in ours:
    np.testing.assert_allclose(ours[k], ref[k], atol=1e-8, err_msg=k)


@pytest.mark.slow
def test_orientation_implicitfast_matches_mj_step():
  """MuJoCo's implicit derivative drops a capped so3 actuator's velocity term when the norm
  of its capped force is >= forcerange[1]; jaxmj drops it whenever the force is capped (see
  orientation.implicit_correction), so with a binding cap the last bit can decide: the
  trajectory runs uncapped; one capped step where MuJoCo's norm is exactly the cap."""
  m, mj = load_both(xml=_xml("implicitfast", ACTUATORS.replace('"0 4"', '"0 40"')))
  ours, ref = _trajectories(m, mj, _state(mj))
  for k in ours:
    np.testing.assert_allclose(ours[k], ref[k], atol=1e-8, err_msg=k)
  m, mj = load_both(xml=_xml("implicitfast"))
  dm = _state(mj)
  d = to_jaxmj(m, dm).replace(ctrl=dm.ctrl.copy(), act=dm.act.copy())
  mujoco.mj_forward(mj, dm)
  assert np.linalg.norm(dm.actuator_force[1:4]) == 4.0
  mujoco.mj_step(mj, dm)
  np.testing.assert_allclose(np.asarray(jax.jit(jaxmj.step)(m, d).qvel), dm.qvel, atol=1e-10)


def test_orientation_force_gradient_matches_finite_differences(euler):
  """Through expmap and quat controls and the actearly integrator's next activations."""
  m, mj = euler
  dm = _state(mj, seed=1)
  dm.ctrl[:] *= .3  # inside the ranges and under the force cap
  mujoco.mj_forward(mj, dm)
  d = to_jaxmj(m, dm).replace(act=dm.act.copy())
  assert_ctrl_jacobian_matches(m, mj, dm, d)


_LR = '<lengthrange mode="all" inttotal="2" interval=".5"/>'  # the cone limit stops it fast


@pytest.mark.slow
def test_orientation_lengthrange_all_matches_mujoco():
  """mode 'all' simulates the first output only (the others keep their range); the ball's
  cone limit stops it. Without a limit neither converges."""
  acts = """<orientation joint="b" kp="2"/><motor joint="h"/>
    <general joint="b2" gaintype="so3" biastype="so3" gainprm="1" biasprm="0 -1"
             lengthrange="-1 1"/>"""
  xml = _xml(actuators=acts, compiler=_LR).replace(
    'type="ball" damping=".1"', 'type="ball" damping=".1" range="0 30"').replace(
    'axis="0 1 0"', 'axis="0 1 0" range="-40 40"')
  m, mj = load_both(xml=xml)
  assert model_differences(m, mj, atol=1e-8) == []
  assert np.all(mj.actuator_lengthrange[0] != 0) and np.all(mj.actuator_lengthrange[1:3] == 0)
  with pytest.raises(MJCFError, match="did not converge"):
    jaxmj.Model.from_xml_string(_xml(actuators=acts, compiler=_LR))
  with pytest.raises(ValueError, match="did not converge"):
    mujoco.MjModel.from_xml_string(_xml(actuators=acts, compiler=_LR))


_GEN = '<general joint="b" gaintype="so3" biastype="so3" gainprm="1" biasprm="0 -1" '


@pytest.mark.parametrize("actuator, joint, message", [
  ('<orientation joint="b" kp="2"/>', "free", "requires a ball joint"),
  ('<orientation joint="b" kp="2" forcerange="-1 1"/>', "ball", "lower bound must be 0"),
  ('<general joint="b" gaintype="so3" biastype="so3" gainprm="2" biasprm="0 -1"/>', "ball",
   r"gainprm\[0\] == -biasprm\[1\]"),
  ('<general joint="b" gaintype="so3" biastype="affine"/>', "ball", "both be 'so3'"),
  (_GEN + 'dyntype="filter"/>', "ball", "dyntype 'none' or 'integrator'"),
  (_GEN + 'dyntype="integrator" actdim="1"/>', "ball", "so3 integrator requires actdim 3"),
  (_GEN + 'actdim="1"/>', "ball", "invalid actdim 1 in stateless actuator"),
  (_GEN + 'dyntype="integrator" input="quat"/>', "ball", "quat input requires dyntype"),
  ('<orientation site="s" kp="2"/>', "ball", "site transmission requires refsite"),
  ('<general jointinparent="b" gaintype="so3" biastype="so3" gainprm="1" biasprm="0 -1"/>',
   "ball", "requires site or ball joint transmission"),
  ('<orientation joint="b" kp="2" input="pos vel"/>', "ball", "input must be expmap or quat"),
  ('<orientation joint="b" kp="2" input="pos quat"/>', "ball", "invalid keyword"),
  ('<orientation joint="b" kp="2" gear="2"/>', "ball", "gear"),
  ('<orientation joint="b" kp="2" armature="1"/>', "ball", "armature"),
])
def test_so3_errors(actuator, joint, message):
  with pytest.raises(MJCFError, match=message):
    jaxmj.Model.from_xml_string(_xml(actuators=actuator, joint=joint))
  with pytest.raises(ValueError):  # MuJoCo refuses it too
    mujoco.MjModel.from_xml_string(_xml(actuators=actuator, joint=joint))


@pytest.mark.parametrize("attrs", ['input="expmap"', 'input="pos"', 'input="quat"',
                                   'input="vel"', 'dyntype="integrator" actdim="0"',
                                   'dyntype="integrator" actdim="3"',
                                   'dyntype="integrator" actdim="-2"', 'actdim="-2"',
                                   'actdim="2"', 'actdim="5"'])
def test_so3_inputs_and_actdim_compile_as_mujoco(attrs):
  m, mj = load_both(xml=_xml(actuators=_GEN + attrs + "/>"))
  assert (m.nu, m.na, m.nout) == (mj.nu, mj.na, mj.nout)
  assert model_differences(m, mj) == []


# so3 actuators without dynamics take actdim > 1 inert activations (mujoco 4.0.0 allocates
# them; they never change, their act_dot is 0, nothing reads them); the filter between them
# shifts act addresses.
INERT = """
  <general joint="b" gaintype="so3" biastype="so3" gainprm="2" biasprm="0 -2 -.3" actdim="3"
           actearly="true"/>
  <general joint="h" dyntype="filter" dynprm=".1" ctrlrange="-1 1"/>
  <general site="w" refsite="ws" gaintype="so3" biastype="so3" gainprm="1" biasprm="0 -1 -.2"
           actdim="4" input="quat"/>
"""


def test_so3_inert_activations_match_mj_step():
  m, mj = load_both(xml=_xml(actuators=INERT))
  assert mj.actuator_actnum.tolist() == [3, 1, 4] and mj.actuator_actadr.tolist() == [0, 3, 4]
  assert model_differences(m, mj) == []
  dm = _state(mj, seed=2)
  dm.act_dot[:] = 5.0  # stale rates: MuJoCo zeroes the inert ones
  held = np.delete(dm.act.copy(), 3)
  ours, ref = _trajectories(m, mj, dm, fields=("qpos", "act", "act_dot", "actuator_force"))
  assert np.all(np.delete(ref["act"], 3, axis=1) == held)
  assert np.all(np.delete(ref["act_dot"], 3, axis=1) == 0) and np.all(ref["act_dot"][:, 3])
  for k in ours:
    np.testing.assert_allclose(ours[k], ref[k], atol=1e-8, err_msg=k)
