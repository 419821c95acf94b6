"""transition_jacobians against mujoco.mjd_transitionFD (centred, eps 1e-6, float64).

Cases: the cart-pole (no contact, a motor), a two-link arm without constraint rows, with
and without joint damping (mj_Euler's damped update, whose tangent takes only the branch
the damping picks), and a small contact scene (a box sliding on a
plane beside a position-actuated arm with an activation (filter) state, sensors on both)
where the contact set does not change within eps. Agreement to 1e-5 relative to each
matrix's largest entry.
"""

import os

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import jit_fast

import jaxmj
from jaxmj.dynamics.transition import _contacts_inactive

RTOL = 1e-5
FD_EPS = 1e-6

CONTACT_XML = """<mujoco><option timestep="0.004"/>
  <worldbody>
    <geom type="plane" size="3 3 .1" friction=".6 .01 .001"/>
    <body pos="0 0 .05"><freejoint/>
      <geom type="box" size=".1 .08 .05" friction=".6 .01 .001"/>
      <site name="box"/></body>
    <body pos="0 1 .5"><joint name="j" type="hinge" axis="0 1 0" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03" contype="0" conaffinity="0"/>
      <site name="tip" pos=".3 0 0"/></body>
  </worldbody>
  <actuator>
    <general name="pos" joint="j" gainprm="5" biastype="affine" biasprm="0 -5"
             dyntype="filter" dynprm=".05"/>
    <motor joint="j" gear="2"/>
  </actuator>
  <sensor>
    <jointpos joint="j"/><jointvel joint="j"/><accelerometer site="tip"/>
    <framepos objtype="site" objname="box"/><framequat objtype="site" objname="box"/>
    <velocimeter site="box"/><gyro site="box"/><actuatorfrc actuator="pos"/>
  </sensor>
</mujoco>"""

ARM_XML = """<mujoco><option timestep="0.004"/>
  <worldbody>
    <body pos="0 0 1"><joint name="a" type="hinge" axis="0 1 0" damping="{damping}"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
      <body pos=".3 0 0"><joint type="hinge" axis="1 0 0" damping="{damping}"/>
        <geom type="capsule" fromto="0 0 0 .2 0 .1" size=".03"/></body></body>
  </worldbody>
  <actuator><motor joint="a" gear="2"/></actuator>
  <sensor><jointvel joint="a"/></sensor>
</mujoco>"""

_jacobians = jax.jit(jaxmj.transition_jacobians, static_argnames=("eps", "chunk", "block"))


def _mujoco_state(mm: mujoco.MjModel, nstep: int, seed: int) -> mujoco.MjData:
  """A state after `nstep` MuJoCo steps from random velocities and controls."""
  md = mujoco.MjData(mm)
  rng = np.random.default_rng(seed)
  md.qvel[:] = 0.5 * rng.normal(size=mm.nv)
  if mm.nv == 7:  # the contact scene: the box slides flat (linear x, y and yaw only)
    md.qvel[2:5] = 0.0
  md.ctrl[:] = 0.3 * rng.normal(size=mm.nu)
  md.act[:] = 0.1 * rng.normal(size=mm.na)
  for _ in range(nstep):
    mujoco.mj_step(mm, md)
  return md


def _mujoco_jacobians(mm, md):
  nx = 2 * mm.nv + mm.na
  a, b = np.zeros((nx, nx)), np.zeros((nx, mm.nu))
  c, d = np.zeros((mm.nsensordata, nx)), np.zeros((mm.nsensordata, mm.nu))
  mujoco.mjd_transitionFD(mm, md, FD_EPS, True, a, b, c, d)
  return a, b, c, d


def _jaxmj_data(m, md):
  return jaxmj.make_data(m).replace(
    time=jnp.asarray(md.time), qpos=jnp.asarray(md.qpos), qvel=jnp.asarray(md.qvel),
    act=jnp.asarray(md.act), ctrl=jnp.asarray(md.ctrl),
    qacc_warmstart=jnp.asarray(md.qacc_warmstart))


def _assert_close(ours, ref):
  for name, x, y in zip("ABCD", ours, ref):
    x = np.asarray(x)
    assert x.shape == y.shape, name
    if y.size:
      scale = np.max(np.abs(y))
      np.testing.assert_allclose(x, y, rtol=0, atol=RTOL * scale, err_msg=name)


@pytest.mark.parametrize("source", ["cartpole", "contact", "arm_damped", "arm_undamped"])
def test_transition_jacobians_match_mjd_transitionFD(source):
  if source == "contact":
    mm, m = mujoco.MjModel.from_xml_string(CONTACT_XML), jaxmj.Model.from_xml_string(CONTACT_XML)
  elif source.startswith("arm"):
    xml = ARM_XML.format(damping=".2" if source == "arm_damped" else "0")
    mm, m = mujoco.MjModel.from_xml_string(xml), jaxmj.Model.from_xml_string(xml)
    assert jaxmj.make_data(m).efc_J.shape[0] == 0  # no rows: mj_Euler's row-free path
  else:
    path = os.path.join(MODELS, f"{source}.xml")
    mm, m = mujoco.MjModel.from_xml_path(path), jaxmj.Model.from_xml_path(path)
  md = _mujoco_state(mm, 30, seed=1)
  if source == "contact":
    assert md.ncon == 4  # the box slides on its face
  _assert_close(_jacobians(m, _jaxmj_data(m, md)), _mujoco_jacobians(mm, md))


def test_transition_jacobians_batch_chunk_and_finite_difference_options():
  """vmap over states equals one state at a time, so do a batch passed as one Data (blocks
  of states, the last padded) and tangents in chunks (lax.map over groups of basis columns,
  the last one padded); eps gives centred differences."""
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  rng = np.random.default_rng(0)
  ds = [jaxmj.make_data(m).replace(qpos=jnp.asarray(rng.normal(size=m.nq)),
                                   qvel=jnp.asarray(rng.normal(size=m.nv)))
        for _ in range(3)]
  batch = jax.tree.map(lambda *x: jnp.stack(x), *ds)
  many = jax.jit(jax.vmap(jaxmj.transition_jacobians, in_axes=(None, 0)))(m, batch)
  blocked = _jacobians(m, batch, block=2)  # the batch itself: 2 states, then 1 padded
  for i, d in enumerate(ds):
    one = _jacobians(m, d)
    for x, y, z in zip(many, one, blocked):
      np.testing.assert_allclose(x[i], y, rtol=1e-12, atol=1e-12)
      np.testing.assert_allclose(z[i], y, rtol=1e-12, atol=1e-12)
  grid = jax.tree.map(lambda x: jnp.stack([x, x]), batch)  # leading axes (2, 3)
  for x, y in zip(_jacobians(m, grid, block=2), blocked):
    np.testing.assert_allclose(x[1], y, rtol=1e-12, atol=1e-12)
  with pytest.raises(ValueError, match=r"every field batched; d.*time"):
    _jacobians(m, batch.replace(time=batch.time[0]))
  for x, y in zip(_jacobians(m, ds[0], chunk=2), _jacobians(m, ds[0])):
    np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
  fd = _jacobians(m, ds[0], eps=1e-6)
  for x, y in zip(fd, _jacobians(m, ds[0])):
    if y.size:
      np.testing.assert_allclose(x, y, rtol=0, atol=1e-6 * max(1.0, np.max(np.abs(y))))


def test_transition_jacobians_outside_jit_take_their_options_by_position_or_name():
  # the public function is a jit of its own (chunk and block static, eps traced), so that
  # a call outside jit runs compiled instead of operation by operation
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  d = jaxmj.make_data(m).replace(qvel=jnp.ones(m.nv))
  for x, y in zip(jaxmj.transition_jacobians(m, d, None, 2), _jacobians(m, d)):
    np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)
  for x, y in zip(jaxmj.transition_jacobians(m, d, eps=jnp.float32(1e-3), chunk=None),
                  _jacobians(m, d, eps=1e-3)):
    np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


BALL_XML = """<mujoco><option timestep="0.004"/>
  <worldbody>
    <geom type="plane" size="3 3 .1"/>
    <body pos="0 0 .1"><freejoint/><geom type="sphere" size=".1"/><site name="c"/></body>
  </worldbody>
  <sensor><framepos objtype="site" objname="c"/><velocimeter site="c"/></sensor>
</mujoco>"""


def test_transition_jacobians_batch_without_active_contacts():
  """A batch passed as one Data takes a block's Jacobians without its contact rows when none
  is active in any of its states: two balls in flight (block 1) and one rolling on the floor
  (block 2, padded) all match mjd_transitionFD."""
  mm, m = mujoco.MjModel.from_xml_string(BALL_XML), jaxmj.Model.from_xml_string(BALL_XML)
  mds = []
  for seed, height in ((1, 1.0), (2, 0.7), (3, 0.0)):
    md = _mujoco_state(mm, 0, seed)
    md.qpos[2] += height
    md.qvel[2] = 0.0 if height == 0.0 else md.qvel[2]
    for _ in range(20):
      mujoco.mj_step(mm, md)
    assert (md.ncon == 1) == (height == 0.0)
    mds.append(md)
  batch = jax.tree.map(lambda *x: jnp.stack(x), *[_jaxmj_data(m, md) for md in mds])
  # the shortcut's test: the balls in flight are out of every pair's reach, the rolling one not
  inactive = jax.jit(jax.vmap(lambda d: _contacts_inactive(m, d)))(batch)
  assert np.asarray(inactive).tolist() == [True, True, False]
  ours = jit_fast(jaxmj.transition_jacobians, static_argnames=("block",))(m, batch, block=2)
  for i, md in enumerate(mds):
    _assert_close([x[i] for x in ours], _mujoco_jacobians(mm, md))
