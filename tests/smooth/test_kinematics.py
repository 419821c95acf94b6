"""Forward kinematics equals mj_kinematics bit for bit (given the same model numbers), and its
exact-arithmetic guards keep derivatives right."""

import functools

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
from mujoco_compare import (
  FAST,
  assert_stage_matches,
  load_both,
  random_state,
  to_jaxmj,
)

from jaxmj import math
from jaxmj.smooth import kinematics as kinematics_module
from jaxmj.smooth.kinematics import kinematics

# Every joint type, several joints in one body, a mocap body, a quaternion given unnormalized,
# geoms and sites in each sameframe class: at the body frame, rotated only (one by -identity,
# the same rotation), at the inertial frame (a lone capsule) and elsewhere.
XML = """<mujoco><worldbody><geom type="plane" size="1 1 .1"/>
  <site pos=".1 .2 .3" euler="10 20 30"/>
  <body pos="0 0 1"><freejoint/><geom type="box" size=".1 .2 .3"/><site/>
    <body pos=".1 .2 .3" quat=".8 .2 .3 .4">
      <joint axis="1 2 3" pos=".1 0 0"/><joint type="slide" axis="0 1 1"/><joint type="ball"/>
      <geom type="box" size=".1 .1 .1" pos=".1 0 0"/>
      <geom type="sphere" size=".1" quat="-1 0 0 0" pos=".2 0 0"/><site pos=".1 .1 .1"/>
      <body pos="0 .3 0" euler="30 40 50"><joint axis="0 0 1"/>
        <joint axis="0 1 0" pos="0 .1 0"/><geom type="capsule" fromto="0 0 0 .3 .1 0" size=".05"/>
      </body>
    </body>
  </body>
  <body mocap="true" pos=".5 .5 .5" quat=".6 0 .8 0"><geom type="sphere" size=".1"/></body>
</worldbody></mujoco>"""

# model numbers kinematics reads; jaxmj's compiler may round some differently (fromto, euler)
MODEL_FIELDS = ("body_pos", "body_quat", "body_ipos", "body_iquat", "jnt_pos", "jnt_axis",
                "geom_pos", "geom_quat", "site_pos", "site_quat", "qpos0")
FRAME_FIELDS = ("xpos", "xquat", "xmat", "xipos", "ximat", "xanchor", "xaxis", "geom_xpos",
                "geom_xquat", "geom_xmat", "site_xpos", "site_xquat", "site_xmat")


def _with_mujoco_numbers(m, mj):
  return m.replace(**{k: jnp.asarray(getattr(mj, k).reshape(np.shape(getattr(m, k))))
                      for k in MODEL_FIELDS})


@pytest.mark.parametrize("layout", ["stacked", "components"])
@pytest.mark.parametrize("unrolled_levels", [None, 0], ids=["unrolled", "scan"])
def test_frames_equal_mj_kinematics_bit_for_bit(unrolled_levels, layout, monkeypatch):
  """Shallow trees take the unrolled pass over levels, deep ones the scan, in either vector
  layout (stacked: the CPU's, components: other platforms'): all exact."""
  if unrolled_levels is not None:
    monkeypatch.setattr(kinematics_module, "_UNROLLED_LEVELS", unrolled_levels)
  monkeypatch.setattr(kinematics_module, "_bodies", getattr(kinematics_module, f"_bodies_{layout}"))
  m, mj = load_both(xml=XML)
  m = _with_mujoco_numbers(m, mj)
  plan = kinematics_module._level_plan if layout == "stacked" else (
    kinematics_module._component_plan)
  assert plan(m, kinematics_module._UNROLLED_LEVELS)["unroll"] == (unrolled_levels is None)
  def state(m, mj, seed):
    d = random_state(m, mj, seed)
    if seed == 1:
      # unnormalized quaternions: free, ball and mocap, each normalized where it is read
      d.qpos[3:7] *= 1.3
      d.qpos[9:13] *= 0.7
      d.mocap_quat[0] *= 2.0
    return d

  # a new function, traced with this setting
  assert_stage_matches((m, mj), lambda m, d: kinematics(m, d), mujoco.mj_kinematics,
                       FRAME_FIELDS, seeds=range(4), tol=0, state=state)


def test_copied_frames_keep_derivatives_of_composed_frames():
  """Geoms at their body's (or inertial) frame copy it, as MuJoCo does, but their derivatives
  with respect to the local pose are those of the composed frame: d geom_xpos / d geom_pos
  is the body's xmat, d geom_xmat / d geom_quat that of xmat(xquat * geom_quat)."""
  m, mj = load_both(xml=XML)
  d = to_jaxmj(m, random_state(m, mj, 0))
  assert set(m.geom_sameframe) >= {1, 2, 3}  # body, inertia and body-rotation copies
  rng = np.random.default_rng(0)
  tpos, tquat = (jnp.asarray(rng.normal(size=np.shape(x))) for x in (m.geom_pos, m.geom_quat))

  @functools.partial(jax.jit, compiler_options=FAST)
  def derivatives(pos, quat):
    def frames(p, q):
      out = kinematics(m.replace(geom_pos=p, geom_quat=q), d)
      return out.geom_xpos, out.geom_xmat, out.xquat, out.xmat

    _, (dpos, dmat, _, _) = jax.jvp(frames, (pos, quat), (tpos, tquat))
    _, _, xquat, xmat = frames(pos, quat)
    b = m.geom_bodyid
    _, ref = jax.jvp(lambda q: math.quat_to_mat(math.quat_mul(xquat[b], q)), (quat,), (tquat,))
    return dpos, jnp.einsum("gij,gj->gi", xmat[b], tpos), dmat, ref

  dpos, dpos_ref, dmat, dmat_ref = derivatives(m.geom_pos, m.geom_quat)
  np.testing.assert_allclose(dpos, dpos_ref, atol=1e-12)
  np.testing.assert_allclose(dmat, dmat_ref, atol=1e-12)


def _moved(m, rng, scale):
  """Local frames of every geom and site and every body's inertial frame (the world's
  aside) moved by ~scale (unit quaternions), as `m.replace` or set_const may move a
  randomized model's."""
  out = {}
  for pos, quat in (("geom_pos", "geom_quat"), ("site_pos", "site_quat"),
                    ("body_ipos", "body_iquat")):
    p, q = np.array(getattr(m, pos)), np.array(getattr(m, quat))
    first = 1 if pos == "body_ipos" else 0
    p[first:] += scale * rng.normal(size=p[first:].shape)
    q[first:] += scale * rng.normal(size=q[first:].shape)
    out[pos], out[quat] = p, q / np.linalg.norm(q, axis=-1, keepdims=True)
  return out


@pytest.mark.parametrize("scale", [0.1, 1e-9])
def test_moved_frames_of_every_sameframe_class_follow_the_model(scale):
  """A frame compiled as its body's (or inertial) frame keeps being copied only while the
  Model's numbers still say so: moved by 0.1 (a randomized geom, site or com), every one
  is composed as a recompiled model composes it (MuJoCo with every sameframe class 0, to
  1e-12); moved by 1e-9, within the compiler's 1e-6, the copies stay (bit for bit MuJoCo
  with the compiled classes)."""
  m, mj = load_both(xml=XML)
  m = _with_mujoco_numbers(m, mj)
  assert {1, 2, 3} <= set(m.geom_sameframe) and 1 in set(m.site_sameframe)
  edits = _moved(m, np.random.default_rng(0), scale)
  for k, v in edits.items():
    getattr(mj, k)[:] = v.reshape(getattr(mj, k).shape)
  if scale > 1e-6:
    for k in ("body_sameframe", "geom_sameframe", "site_sameframe"):
      getattr(mj, k)[:] = 0
  mm = m.replace(**{k: jnp.asarray(v) for k, v in edits.items()})
  assert_stage_matches((mm, mj), lambda m, d: kinematics(m, d), mujoco.mj_kinematics,
                       FRAME_FIELDS, seeds=range(2), tol=1e-12 if scale > 1e-6 else 0)


def test_moved_copied_frames_move_as_their_derivative_says():
  """Finite differences of a copied geom's frame (moved by 1e-4, beyond the compiler's 1e-6)
  agree with its derivative in geom_pos and geom_quat: what gradient descent on a floor at
  the world's origin, or a box at its body's, needs to see its steps take effect."""
  m, mj = load_both(xml=XML)
  d = to_jaxmj(m, random_state(m, mj, 0))
  rng = np.random.default_rng(3)
  tpos, tquat = (rng.normal(size=np.shape(x)) for x in (m.geom_pos, m.geom_quat))

  @functools.partial(jax.jit, compiler_options=FAST)
  def frames(pos, quat):
    out = kinematics(m.replace(geom_pos=pos, geom_quat=quat), d)
    return out.geom_xpos, out.geom_xmat

  _, (dpos, dmat) = jax.jvp(frames, (m.geom_pos, m.geom_quat), (tpos, tquat))
  h = 1e-4
  (p1, m1), (p0, m0) = (frames(m.geom_pos + s * h * tpos, m.geom_quat + s * h * tquat)
                        for s in (1, -1))
  np.testing.assert_allclose((p1 - p0) / (2 * h), dpos, atol=1e-7)
  np.testing.assert_allclose((m1 - m0) / (2 * h), dmat, atol=1e-7)


def test_quaternion_normalization_derivative_is_projection():
  """qpos quaternions are normalized as mju_normalize4 (kept as is within 1e-15 of unit
  norm), yet differentiated as q/|q| everywhere: a radial change of a free body's quaternion
  moves nothing."""
  m, mj = load_both(xml=XML)
  d = to_jaxmj(m, random_state(m, mj, 2))

  radial = jnp.zeros(m.nq).at[3:7].set(d.qpos[3:7])
  @functools.partial(jax.jit, compiler_options=FAST)
  def xquat_jvp(qpos, tangent):
    return jax.jvp(lambda q: kinematics(m, d.replace(qpos=q)).xquat, (qpos,), (tangent,))[1]

  jvp = xquat_jvp(d.qpos, radial)
  np.testing.assert_allclose(jvp, 0.0, atol=1e-12)


def test_component_layout_derivatives_equal_stacked():
  """The components pass (other platforms') differentiates in the model's local poses and
  joint axes as the CPU's stacked pass does (its products and normalization in components)."""
  m, mj = load_both(xml=XML)
  d = to_jaxmj(m, random_state(m, mj, 1))
  names = ("body_pos", "body_quat", "jnt_pos", "jnt_axis")
  rng = np.random.default_rng(1)
  tangents = tuple(jnp.asarray(rng.normal(size=np.shape(getattr(m, k)))) for k in names)

  def jvp(layout):
    bodies = getattr(kinematics_module, f"_bodies_{layout}")

    @functools.partial(jax.jit, compiler_options=FAST)
    def run(*leaves):
      def frames(*leaves):
        return bodies(m.replace(**dict(zip(names, leaves))), d.qpos, d.mocap_pos,
                      d.mocap_quat, None)
      return jax.jvp(frames, leaves, tangents)
    return run(*(getattr(m, k) for k in names))

  (p_s, t_s), (p_c, t_c) = jvp("stacked"), jvp("components")
  for a, b in zip(p_s + t_s, p_c + t_c):
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
