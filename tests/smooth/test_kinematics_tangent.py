"""Tangent rule of kinematics in qpos (jaxmj/smooth/kinematics_tangent.py): the rigid-body
Jacobian against the composition's own derivative (jax.jvp of the undecorated arithmetic)
and central differences, float64, on models with hinge, slide, ball and free joints, several
joints in one body, mocap bodies, every sameframe kind and a chain deep enough for the scan
path; model tangents (body_pos, geom_pos) and reverse mode still differentiate."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mujoco_compare import jit_fast

import jaxmj
from jaxmj.smooth import kinematics

MODELS = os.path.join(os.path.dirname(__file__), "..", "..", "models")

# free, ball then hinge in one body, slide then hinge, a mocap body, geoms and sites at the
# body frame, at the inertial frame, rotated alike, and offset
MIXED = """
<mujoco>
  <worldbody>
    <body mocap="true" pos="0.1 0.2 0.3" quat="0.9 0.1 0.2 0.3"><geom size="0.1"/></body>
    <body pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.2 0.3" pos="0.1 0 0" quat="0.8 0.2 0.1 0.3"/>
      <site pos="0 0 0"/>
      <body pos="0.3 0 0" quat="0.7 0.1 0.7 0.1">
        <joint type="ball" pos="0.05 0 0"/>
        <joint type="hinge" axis="0 1 1" pos="0 0.1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.05"/>
        <geom type="sphere" size="0.05"/>
        <site pos="0.1 0.2 0" quat="0.5 0.5 0.5 0.5"/>
        <body pos="0.3 0 0">
          <joint type="slide" axis="1 0 1"/>
          <joint type="hinge" axis="0 0 1" pos="0.1 0 0"/>
          <joint type="ball"/>
          <inertial pos="0.1 0 0" mass="1" diaginertia="0.1 0.2 0.3" quat="0.9 0 0.4 0"/>
          <geom type="box" size="0.1 0.1 0.1" pos="0.1 0 0" quat="0.9 0 0.4 0" mass="0"/>
          <geom type="box" size="0.1 0.1 0.1" quat="0.9 0 0.4 0" mass="0"/>
          <site pos="0.1 0 0"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def chain(n: int) -> str:
  body = ""
  for i in range(n):
    body += (f'<body pos="0.2 0 0" quat="0.9 0.1 0 0.{i % 9 + 1}"><joint axis="0 {i % 2} 1"/>'
             f'<geom size="0.05" pos="0.1 0 0"/>')
  return f"<mujoco><worldbody>{body}{'</body>' * n}</worldbody></mujoco>"


def load(name, arithmetic="exact"):
  """A model; arithmetic "fast" drops the nofma guards (a smaller program to compile), which
  change no derivative rule."""
  if name == "mixed":
    m = jaxmj.Model.from_xml_string(MIXED)
    return m.replace(opt=m.opt.replace(arithmetic=arithmetic))
  if name == "chain12":
    return jaxmj.Model.from_xml_string(chain(12))
  return jaxmj.Model.from_xml_path(os.path.join(MODELS, f"{name}.xml"))


def state(m, seed):
  """Data at a random qpos (quaternions not normalized: their norm is part of the input)."""
  rng = np.random.default_rng(seed)
  d = jaxmj.make_data(m)
  return d.replace(qpos=d.qpos + jnp.asarray(0.4 * rng.normal(size=m.nq)),
                   mocap_pos=d.mocap_pos + 0.1, time=jnp.asarray(0.25))


def plain(m, d):
  """kinematics' outputs by the undecorated arithmetic (differentiated as composed)."""
  return lambda q: kinematics._frames(m, q, d.mocap_pos, d.mocap_quat, d.time)[0]


def rule(m, d):
  fields = kinematics._OUTPUTS
  return lambda q: tuple(getattr(kinematics.kinematics(m, d.replace(qpos=q)), f) for f in fields)


def assert_close(a, b, tol):
  for name, u, v in zip(kinematics._OUTPUTS, a, b):
    scale = max(float(np.max(np.abs(v), initial=0.0)), 1.0)
    np.testing.assert_allclose(u, v, atol=tol * scale, rtol=0, err_msg=name)


@jit_fast
def tangents_and_differences(m, d, dq, eps):
  """(rule's primal, composition's primal, rule's tangent, composition's tangent, central
  differences of the composition), in one compile (the model traced, as in a step)."""
  out, tan = jax.jvp(rule(m, d), (d.qpos,), (dq,))
  ref_out, ref_tan = jax.jvp(plain(m, d), (d.qpos,), (dq,))
  f = plain(m, d)
  fd = [(a - b) / (2 * eps) for a, b in zip(f(d.qpos + eps * dq), f(d.qpos - eps * dq))]
  return out, plain(m, d)(d.qpos), tan, ref_tan, fd


@pytest.mark.parametrize("name", ["mixed", "chain12",
                                  pytest.param("humanoid", marks=pytest.mark.slow)])
def test_qpos_tangent_matches_the_composition_and_central_differences(name):
  m = load(name)
  d = state(m, 0)
  dq = jnp.asarray(np.random.default_rng(1).normal(size=m.nq))
  out, ref_out, tan, ref_tan, fd = tangents_and_differences(m, d, dq, 1e-6)
  for u, v in zip(out, ref_out):
    np.testing.assert_array_equal(u, v)
  assert_close(tan, ref_tan, 1e-12)
  assert_close(tan, fd, 1e-7)


@pytest.mark.slow  # ~90 s of compile at load 9 (tests/test_set_const.py keeps model gradients)
def test_model_and_mocap_tangents_still_differentiate():
  m = load("mixed", "fast")
  d = state(m, 2)
  rng = np.random.default_rng(3)
  dm = jax.tree.map(jnp.zeros_like, m).replace(
    body_pos=jnp.asarray(rng.normal(size=m.body_pos.shape)),
    geom_pos=jnp.asarray(rng.normal(size=m.geom_pos.shape)))
  dq = jnp.asarray(rng.normal(size=m.nq))
  dmocap = jnp.asarray(rng.normal(size=d.mocap_pos.shape))

  def with_rule(m, q, mp):
    return rule(m, d.replace(mocap_pos=mp))(q)

  def composed(m, q, mp):
    return kinematics._frames(m, q, mp, d.mocap_quat, d.time)[0]

  args, tans = (m, d.qpos, d.mocap_pos), (dm, dq, dmocap)
  tan, ref = jit_fast(lambda *a: tuple(jax.jvp(f, a, tans)[1] for f in (with_rule, composed)))(
    *args)
  assert_close(tan, ref, 1e-12)


def test_reverse_mode_matches_forward_mode():
  m = load("mixed", "fast")
  d = state(m, 4)
  w = jnp.asarray(np.random.default_rng(5).normal(size=(m.nbody, 3)))

  def loss(m, q):
    k = kinematics.kinematics(m, d.replace(qpos=q))
    return jnp.sum(w * k.xipos) + jnp.sum(k.geom_xmat ** 2 * k.geom_xpos[:, :1, None])

  def loss_plain(m, q):
    out = kinematics._frames(m, q, d.mocap_pos, d.mocap_quat, d.time)[0]
    return jnp.sum(w * out[3]) + jnp.sum(out[9] ** 2 * out[7][:, :1, None])

  g, g_ref = (jit_fast(jax.grad(f, argnums=(0, 1)))(m, d.qpos) for f in (loss, loss_plain))
  np.testing.assert_allclose(g[1], g_ref[1], atol=1e-12)
  np.testing.assert_allclose(g[0].body_pos, g_ref[0].body_pos, atol=1e-12)
  np.testing.assert_allclose(g[0].body_quat, g_ref[0].body_quat, atol=1e-12)
