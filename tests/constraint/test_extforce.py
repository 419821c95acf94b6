"""cfrc_ext terms of constraint/extforce.py against mujoco 4.0.0: connect and weld (body and site
forms) constraint forces and spatial-tendon forces (spring, damper, limit, friction loss,
armature, an actuator and a tendon equality; a path over a wrapping sphere) in cfrc_ext,
cfrc_int and the force / torque sensors that read them."""

import jax
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import FAST, load_both, random_state, to_jaxmj  # noqa: E402

import jaxmj  # noqa: E402

XML = """<mujoco><option><flag contact="disable"/></option><worldbody>
<site name="w" pos="0 0 2"/>
<body name="a" pos="0 0 1"><joint axis="0 1 0" damping=".1"/>
  <geom type="capsule" fromto="0 0 0 .4 0 0" size=".05"/><site name="sa" pos=".3 0 .05"/>
  <body name="b" pos=".4 0 0"><joint type="ball"/><geom type="box" size=".2 .05 .05" pos=".2 0 0"/>
    <site name="sb" pos=".1 0 0"/><site name="sb2" pos=".35 0 .05"/></body></body>
<body name="c" pos="1 0 1"><freejoint/><geom name="wrapc" type="sphere" size=".1"/>
  <site name="sc" pos="0 .05 .1"/>
  <body name="d" pos=".2 0 0"><joint axis="0 0 1"/><geom type="sphere" size=".05" pos=".1 0 0"/>
    <site name="sd" pos=".1 0 0"/></body></body>
<body name="e" pos="0 1 1"><freejoint/><geom type="box" size=".1 .1 .1"/>
  <site name="se" pos=".1 0 0"/></body>
</worldbody>
<equality><connect body1="b" body2="c" anchor=".4 0 0"/>
  <weld body1="e" body2="a" relpose="0 1 0 1 0 0 0"/><weld site1="sd" site2="sb2"/>
  <tendon tendon1="t2" tendon2="t" polycoef="0 .5 .1 0 0"/></equality>
<tendon>
  <spatial name="t" stiffness="20" damping=".5" limited="true" range="0 .9">
    <site site="w"/><site site="sa"/><geom geom="wrapc"/><site site="sc"/><site site="sd"/>
  </spatial>
  <spatial name="t2" armature=".3" frictionloss=".2" stiffness="5">
    <site site="sb"/><site site="se"/></spatial></tendon>
<actuator><motor tendon="t" gear="3"/></actuator>
<sensor><force site="sa"/><torque site="sa"/><force site="sb"/><torque site="sb"/>
  <force site="sc"/><torque site="sc"/><force site="sd"/><torque site="se"/></sensor>
</mujoco>"""


def test_cfrc_ext_and_force_torque_sensors_match():
  m, mj = load_both(xml=XML)
  assert not m.unsupported
  run = jax.jit(jaxmj.forward, compiler_options=FAST)  # the sensors run mj_rnePostConstraint
  dm = random_state(m, mj, 0)
  dm.ctrl[:] = 0.8
  mujoco.mj_forward(mj, dm)
  mujoco.mj_rnePostConstraint(mj, dm)
  assert {2, 4} <= set(dm.efc_type.tolist())  # the tendons' friction and limit rows
  d = run(m, to_jaxmj(m, dm).replace(ctrl=dm.ctrl.copy()))
  for k in ("cfrc_ext", "cfrc_int", "sensordata"):
    ref = getattr(dm, k)
    np.testing.assert_allclose(getattr(d, k), ref, atol=1e-11 * np.abs(ref).max(), err_msg=k)
