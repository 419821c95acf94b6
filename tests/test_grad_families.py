"""Gradient contract: jax.jvp and jax.grad of a short rollout against central finite
differences, for one scene holding every constraint family -- a joint at its limit, a
fixed tendon at its limit, a joint equality, a muscle with activation, a hinge with dof
friction, and a free box sliding on a plane -- per friction cone and contact condim, with
the contact set and every row's solver state unchanged by the probes (the default suite runs
pyramidal condim 3; --runslow adds condim 1 and 4 and the elliptic cone, condim 3, 4, 6).
A ball sliding on a heightfield (--runslow) holds the heightfield collider to the same contract.
Also: gradients are finite at tricky states (a sphere exactly touching the plane, a resting
stack, singular configurations).
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


def _check_against_central_differences(loss, qvel, rows):
  """grad and jvp of loss(qvel) -> (value, aux) along random directions against central
  differences, with aux (per-step row arrays) unchanged by the probes; rows(aux) asserts
  which rows the rollout has."""
  value_and_grad = jax.jit(jax.value_and_grad(loss, has_aux=True))
  jvp = jax.jit(lambda v, t: jax.jvp(lambda x: loss(x)[0], (v,), (t,))[1])
  (_, aux), g = value_and_grad(qvel)
  assert np.all(np.isfinite(g))
  rows(aux)
  rng = np.random.default_rng(1)
  for _ in range(2):
    t = jnp.asarray(rng.normal(size=qvel.shape))
    (fp, ap), _ = value_and_grad(qvel + FD_EPS * t)
    (fm, am), _ = value_and_grad(qvel - FD_EPS * t)
    for a in (ap, am):
      for x, y in zip(a, aux):
        np.testing.assert_array_equal(x, y)
    fd = (float(fp) - float(fm)) / (2 * FD_EPS)
    np.testing.assert_allclose(float(g @ t), fd, rtol=RTOL)
    np.testing.assert_allclose(float(jvp(qvel, t)), fd, rtol=RTOL)


def _check(cone, condim):
  def rows(aux):
    types = np.asarray(aux[1])
    # every family has rows: limits (joint 3, tendon 4), equality 0, dof friction 1, contact
    assert {0, 1, 3, 4} <= set(types.ravel().tolist()) and types.max() >= 5

  _check_against_central_differences(*_setup(cone, condim), rows)


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


def _heightfield_setup():
  """A ball sliding over a heightfield, resting in one triangle's interior (one prism in
  contact through the rollout: the window holds 24 others, none within reach)."""
  nrow = ncol = 6
  size = (1.0, 1.0, 0.3, 0.1)
  elevation = np.random.default_rng(4).uniform(0.2, 1, (nrow, ncol))
  xml = f"""<mujoco><option timestep="0.004"/><asset><hfield name="h" nrow="{nrow}"
    ncol="{ncol}" size="{' '.join(map(str, size))}"
    elevation="{' '.join(f'{v:.4f}' for v in elevation.ravel())}"/></asset><worldbody>
    <geom type="hfield" hfield="h" friction=".6 .02 .002"/>
    <body><freejoint/><geom size=".1" friction=".6 .02 .002"/></body></worldbody></mujoco>"""
  m = jaxmj.Model.from_xml_string(xml)
  # triangle k=1 of cell (row 2, column 3): grid points (c-1, r), (c, r+1), (c, r)
  heights = size[2] * np.asarray(m.hfield_data).reshape(nrow, ncol)  # normalized data
  grid = lambda c, r: np.array([-1 + 2 * c / (ncol - 1), -1 + 2 * r / (nrow - 1),  # noqa: E731
                                heights[r, c]])
  tri = [grid(2, 2), grid(3, 3), grid(3, 2)]
  normal = np.cross(tri[1] - tri[0], tri[2] - tri[0])
  normal *= np.sign(normal[2]) / np.linalg.norm(normal)
  qpos = np.concatenate([sum(tri) / 3 + (0.1 - 1e-4) * normal, [1, 0, 0, 0]])
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(qpos))
  proj = jnp.asarray(np.random.default_rng(0).normal(size=m.nq + m.nv))

  def loss(v):
    final, traj = jaxmj.rollout(m, d.replace(qvel=v), nstep=NSTEP,
                                fields=("efc_state", "efc_active"))
    return proj @ jnp.concatenate([final.qpos, final.qvel]), (traj["efc_state"],
                                                                traj["efc_active"])

  return loss, jnp.asarray([0.3, -0.2, 0.0, 0.5, 0.4, -0.3])


@pytest.mark.slow
def test_rollout_gradient_on_a_heightfield():
  """The heightfield collider's contact (a prism searched by GJK/EPA) differentiates like
  the primitives': jvp and grad of a sliding ball's rollout against central differences."""
  def rows(aux):  # one pyramidal contact (4 rows) every step, the same rows
    active = np.asarray(aux[1])
    assert np.all(active.sum(axis=1) == 4) and np.all(active == active[0])

  _check_against_central_differences(*_heightfield_setup(), rows)


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


TRICKY = {
  # a spatial tendon whose sites meet (length 0: |x1 - x0| has no derivative there)
  "tendon_zero_length": ("""<mujoco><worldbody><site name="s0" pos=".1 .2 .3"/>
    <body><joint type="slide" axis="1 1 0"/><joint type="hinge" axis="0 0 1"/><geom size=".1"/>
      <site name="s1" pos=".1 .2 .3"/></body></worldbody>
    <tendon><spatial name="t" limited="true" range="0 .5" stiffness="10"><site site="s0"/>
      <site site="s1"/></spatial></tendon><actuator><motor tendon="t"/></actuator>
    <sensor><tendonpos tendon="t"/><tendonvel tendon="t"/></sensor></mujoco>""", None),
  # ball joints: one turned by exactly 180 degrees, one limited at its identity (angle 0)
  "ball_joints": ("""<mujoco><worldbody>
    <body pos="0 0 1"><joint name="b0" type="ball" range="0 170" damping=".1"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.5" size=".05"/></body>
    <body pos="1 0 1"><joint name="b1" type="ball" range="0 60"/>
      <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/></body></worldbody>
    <sensor><ballquat joint="b0"/><ballquat joint="b1"/><ballangvel joint="b1"/></sensor>
    </mujoco>""", np.array([0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])),
  # an arm stretched straight (a kinematic singularity) against both joints' limits
  "stretched_arm": ("""<mujoco><worldbody><body>
    <joint type="hinge" axis="0 1 0" range="-1 0"/>
    <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/><body pos=".5 0 0">
      <joint type="hinge" axis="0 1 0" range="0 1"/>
      <geom type="capsule" fromto="0 0 0 .5 0 0" size=".05"/><site name="tip" pos=".5 0 0"/>
    </body></body></worldbody><sensor><framepos objtype="site" objname="tip"/>
    <framequat objtype="site" objname="tip"/><framelinvel objtype="site" objname="tip"/>
    </sensor></mujoco>""", None),
  # three boxes stacked at rest, each slightly in penetration; a free body's quaternion -1
  "resting_stack": ("""<mujoco><worldbody><geom type="plane" size="2 2 .1"/>
    <body pos="0 0 .0999"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body pos="0 0 .2998"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    <body pos="0 0 .4997" quat="-1 0 0 0"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    </worldbody></mujoco>""", None),
}


@pytest.mark.parametrize("name", [
  "tendon_zero_length",
  pytest.param("ball_joints", marks=pytest.mark.slow),
  pytest.param("stretched_arm", marks=pytest.mark.slow),
  pytest.param("resting_stack", marks=pytest.mark.slow),
])
def test_gradients_finite_at_singular_and_resting_states(name, fast_jit):
  """jax.grad and jax.jvp of a short rollout (positions, velocities, sensors) w.r.t. qpos and
  qvel, and the transition Jacobians, all finite, from a state at rest (qvel 0)."""
  xml, qpos = TRICKY[name]
  m = jaxmj.Model.from_xml_string(xml)
  d = jaxmj.make_data(m)
  if qpos is not None:
    d = d.replace(qpos=jnp.asarray(qpos))

  def loss(qpos, qvel):
    final, traj = jaxmj.rollout(m, d.replace(qpos=qpos, qvel=qvel), nstep=3,
                                fields=("sensordata",))
    return (jnp.sum(final.qpos ** 2) + jnp.sum(final.qvel ** 2)
            + jnp.sum(traj["sensordata"] ** 2))

  args = (d.qpos, d.qvel)
  grads = fast_jit(jax.grad(loss, argnums=(0, 1)))(*args)
  tangents = tuple(jnp.ones_like(a) for a in args)
  _, jvp = fast_jit(lambda a, t: jax.jvp(loss, a, t))(args, tangents)
  jacobians = fast_jit(jaxmj.transition_jacobians)(m, d)
  for x in (*grads, jvp, *jacobians):
    assert np.all(np.isfinite(np.asarray(x)))
