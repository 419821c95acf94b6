"""inverse_jacobians against mujoco.mjd_inverseFD (forward differences, eps 1e-7, float64):
every output, with and without flg_actuation, on a resting box stack (free joints, contact
rows whose inverse forces depend on qacc, qvel and qpos) and on a scene with a box on a
plane, an actuated arm with an activation state, and sensors of every stage. Agreement to
1e-5 of each matrix's largest entry (MuJoCo's one-sided differences); the centred
differences of `eps=` agree with the exact ones; a vmapped batch is each state's own."""

import os

import jax
import mujoco
import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import load_both, random_state, to_jaxmj

import jaxmj

RTOL = 1e-5
SCENE = """<mujoco><option timestep="0.004"/>
  <worldbody>
    <geom type="plane" size="3 3 .1" friction=".6 .01 .001"/>
    <body pos="0 0 .049"><freejoint/>
      <geom type="box" size=".1 .08 .05" friction=".6 .01 .001"/>
      <site name="box"/></body>
    <body pos="0 1 .5"><joint name="j" type="hinge" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03" contype="0" conaffinity="0"/>
      <body pos=".3 0 0"><joint name="k" type="hinge" axis="1 0 0" armature=".01"/>
        <geom type="capsule" fromto="0 0 0 .2 0 .1" size=".03" contype="0" conaffinity="0"/>
        <site name="tip" pos=".2 0 .1"/></body></body>
  </worldbody>
  <actuator>
    <general name="pos" joint="j" gainprm="5" biastype="affine" biasprm="0 -5 -.5"
             dyntype="filter" dynprm=".05"/>
    <motor joint="k" gear="2"/>
  </actuator>
  <sensor>
    <jointpos joint="j"/><jointvel joint="k"/><accelerometer site="tip"/>
    <framepos objtype="site" objname="box"/><velocimeter site="box"/><gyro site="tip"/>
    <actuatorfrc actuator="pos"/><framelinacc objtype="site" objname="tip"/>
  </sensor>
</mujoco>"""
_jacobians = jax.jit(jaxmj.inverse_jacobians, static_argnames=("flg_actuation",))


def _state(m, mj, seed):
  md = random_state(m, mj, seed)
  rng = np.random.default_rng(seed)
  md.qacc[:] = rng.normal(size=mj.nv)
  md.ctrl[:] = rng.uniform(-0.5, 0.5, mj.nu)
  md.act[:] = rng.uniform(-0.5, 0.5, mj.na)
  return md


def _data(m, md):
  return to_jaxmj(m, md).replace(qacc=md.qacc.copy(), ctrl=md.ctrl.copy(), act=md.act.copy())


def _mujoco(mj, md, flg_actuation: bool) -> dict:
  nv, ns = mj.nv, mj.nsensordata
  out = {k: np.zeros((nv, nv)) for k in ("DfDq", "DfDv", "DfDa")}
  out.update({k: np.zeros((nv, ns)) for k in ("DsDq", "DsDv", "DsDa")})
  out["DmDq"] = np.zeros((nv, mj.nC))
  mujoco.mjd_inverseFD(mj, md, 1e-7, flg_actuation, *out.values())
  return out


@pytest.mark.parametrize("model", ["box_stack", "scene"])
def test_inverse_jacobians_match_mjd_inverseFD(model):
  if model == "scene":
    m, mj = load_both(xml=SCENE)
  else:
    m, mj = load_both(os.path.join(MODELS, "box_stack.xml"))
  md = _state(m, mj, 0)
  rows = np.repeat(np.arange(mj.nv), mj.M_rownnz)  # MuJoCo's compressed M entries
  # mj_inverse leaves actuator_force as it was, so sensors of it are constant; under
  # flg_actuation mjd_inverseFD's mj_fwdActuation calls change it between its evaluations
  # and its sensor columns show that: compared without flg_actuation only
  reads_force = np.repeat(np.isin(mj.sensor_type, [mujoco.mjtSensor.mjSENS_ACTUATORFRC,
                                                   mujoco.mjtSensor.mjSENS_JOINTACTFRC,
                                                   mujoco.mjtSensor.mjSENS_TENDONACTFRC]),
                          mj.sensor_dim)
  for flg in (False, True):
    want = _mujoco(mj, md, flg)
    got = _jacobians(m, _data(m, md), flg_actuation=flg)._asdict()
    got["DmDq"] = np.asarray(got["DmDq"])[:, rows, mj.M_colind]
    for k, ref in want.items():
      ours = np.asarray(got[k])
      assert ours.shape == ref.shape, k
      if k.startswith("Ds") and flg:
        ours, ref = ours[:, ~reads_force], ref[:, ~reads_force]
      scale = max(np.abs(ref).max(initial=0), 1.0)
      np.testing.assert_allclose(ours, ref, atol=RTOL * scale, err_msg=f"{k} {flg}")
    assert np.abs(want["DfDq"]).max() > 1
    if model == "scene":  # (free bodies' M is constant)
      assert np.abs(want["DmDq"]).max() > 1e-3 and np.abs(want["DsDq"]).max() > 1


def test_inverse_jacobians_centred_differences_and_batch():
  m, mj = load_both(xml=SCENE)
  states = [_state(m, mj, s) for s in (1, 2)]
  batch = jax.tree.map(lambda *x: np.stack(x), *[_data(m, md) for md in states])
  exact = jax.jit(jax.vmap(lambda d: jaxmj.inverse_jacobians(m, d)))(batch)
  for i, md in enumerate(states):
    fd = jaxmj.inverse_jacobians(m, _data(m, md), eps=1e-6)
    for k, x, y in zip(exact._fields, exact, fd):
      x = np.asarray(x)[i]
      np.testing.assert_allclose(x, y, atol=1e-6 * max(np.abs(x).max(), 1), err_msg=k)


def test_inverse_jacobians_refuse_rk4_and_noslip_as_mujoco():
  m = jaxmj.Model.from_xml_string(SCENE)
  for opt, name in ((dict(integrator=jaxmj.Integrator.RK4), "RK4"),
                    (dict(noslip_iterations=2), "noslip")):
    bad = m.replace(opt=m.opt.replace(**opt))
    with pytest.raises(ValueError, match=name):
      jaxmj.inverse_jacobians(bad, jaxmj.make_data(bad))
