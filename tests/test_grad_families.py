"""Gradient contract: jax.jvp and jax.grad of a short rollout against central finite
differences, for one scene holding every constraint family -- a joint at its limit, a
fixed tendon at its limit, a joint equality, a muscle with activation, a hinge with dof
friction, and a free box sliding on a plane -- per friction cone and contact condim, with
the contact set and every row's solver state unchanged by the probes (the default suite runs
pyramidal condim 3; --runslow adds condim 1 and 4 and the elliptic cone, condim 3, 4, 6).
Also: gradients are finite at a tricky state (a sphere exactly touching the plane).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmj

FD_EPS = 1e-6
RTOL = 1e-5
NSTEP = 8


def scene(cone: str, condim: int) -> str:
  return f"""<mujoco><option timestep="0.004" cone="{cone}"/>
  <worldbody>
    <geom type="plane" size="3 3 .1" condim="{condim}" friction=".6 .02 .002"/>
    <body pos="0 0 .05"><freejoint/>
      <geom type="box" size=".1 .08 .05" condim="{condim}" friction=".6 .02 .002"/></body>
    <body pos="0 1 .5">
      <joint name="a" type="hinge" axis="0 1 0" range="-.3 .3" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03" contype="0" conaffinity="0"/>
      <body pos=".3 0 0">
        <joint name="b" type="hinge" axis="0 1 0" frictionloss=".01"/>
        <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03" contype="0" conaffinity="0"/>
        <body pos=".3 0 0">
          <joint name="c" type="hinge" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 .2 0 0" size=".03" contype="0" conaffinity="0"/>
        </body>
      </body>
    </body>
  </worldbody>
  <tendon><fixed name="t" limited="true" range="-.2 .2"><joint joint="a" coef="1"/>
    <joint joint="b" coef="-1"/></fixed></tendon>
  <equality><joint joint1="c" joint2="b" polycoef="0 .5 0 0 0"/></equality>
  <actuator><muscle joint="b" ctrlrange="0 1" lengthrange="-1 1"/></actuator>
</mujoco>"""


# box: slides flat; arm: starts at its joint limit (a = -0.3) and its tendon limit (a - b)
QPOS_ARM = np.array([-0.31, 0.05, 0.025])


def _setup(cone, condim):
  m = jaxmj.Model.from_xml_string(scene(cone, condim))
  d = jaxmj.make_data(m)
  qpos = np.asarray(d.qpos).copy()
  qpos[2] = 0.0499  # resting on the plane, slightly in penetration
  qpos[7:] = QPOS_ARM
  qvel = np.array([0.8, 0.3, 0.0, 0.0, 0.0, 0.4, -0.2, 0.3, 0.1])
  d = d.replace(qpos=jnp.asarray(qpos), ctrl=jnp.asarray([0.4]), act=jnp.asarray([0.3]))
  proj = jnp.asarray(np.random.default_rng(0).normal(size=m.nq + m.nv + m.na))

  def loss(v):
    final, traj = jaxmj.rollout(m, d.replace(qvel=v), nstep=NSTEP,
                                fields=("efc_state", "efc_type"))
    value = proj @ jnp.concatenate([final.qpos, final.qvel, final.act])
    return value, (traj["efc_state"], traj["efc_type"])

  return loss, jnp.asarray(qvel)


def _check(cone, condim):
  loss, qvel = _setup(cone, condim)
  value_and_grad = jax.jit(jax.value_and_grad(loss, has_aux=True))
  jvp = jax.jit(lambda v, t: jax.jvp(lambda x: loss(x)[0], (v,), (t,))[1])
  (_, aux), g = value_and_grad(qvel)
  assert np.all(np.isfinite(g))
  types = np.asarray(aux[1])
  # every family has rows: limits (joint 3, tendon 4), equality 0, dof friction 1, contact
  assert {0, 1, 3, 4} <= set(types.ravel().tolist()) and types.max() >= 5
  rng = np.random.default_rng(1)
  for _ in range(2):
    t = jnp.asarray(rng.normal(size=qvel.shape))
    (fp, ap), _ = value_and_grad(qvel + FD_EPS * t)
    (fm, am), _ = value_and_grad(qvel - FD_EPS * t)
    for a in (ap, am):
      np.testing.assert_array_equal(a[0], aux[0])
    fd = (float(fp) - float(fm)) / (2 * FD_EPS)
    np.testing.assert_allclose(float(g @ t), fd, rtol=RTOL)
    np.testing.assert_allclose(float(jvp(qvel, t)), fd, rtol=RTOL)


@pytest.mark.parametrize("cone,condim", [
  ("pyramidal", 3),
  pytest.param("elliptic", 6, marks=pytest.mark.slow),
  pytest.param("pyramidal", 1, marks=pytest.mark.slow),
  pytest.param("pyramidal", 4, marks=pytest.mark.slow),
  pytest.param("elliptic", 3, marks=pytest.mark.slow),
  pytest.param("elliptic", 4, marks=pytest.mark.slow),
])
def test_rollout_gradient_of_every_constraint_family(cone, condim):
  _check(cone, condim)


def test_gradient_finite_when_exactly_touching():
  xml = """<mujoco><worldbody><geom type="plane" size="1 1 .1"/>
    <body pos="0 0 .1"><freejoint/><geom type="sphere" size=".1"/></body>
    </worldbody></mujoco>"""
  m = jaxmj.Model.from_xml_string(xml)
  d = jaxmj.make_data(m)  # the sphere touches the plane at distance 0, at rest

  def loss(qpos):
    return jnp.sum(jaxmj.rollout(m, d.replace(qpos=qpos), nstep=3)[0].qpos ** 2)

  g = jax.jit(jax.grad(loss))(d.qpos)
  assert np.all(np.isfinite(g))
