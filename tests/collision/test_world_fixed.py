"""Geoms welded to the world: inside a forward pass their frames are functions of the Model
alone, so differentiated in the state their colliders' derivative is left out (a symbolic
zero), while derivatives in the Model fields that place them, and collision called on its
own in geom_xpos / geom_xmat, stay whole. Held against central finite differences."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmj
from jaxmj.collision import driver

XML = """
<mujoco>
  <option timestep="0.005" tolerance="1e-12" iterations="50"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" pos="0 0 -0.0005" euler="0.1 0 0"/>
    <body name="shelf" pos="0.6 0 0.1" euler="0 8 0">
      <geom name="ramp" type="box" size="0.2 0.2 0.02" pos="0.01 0 0" euler="0 2 0"/>
    </body>
    <body name="hand" mocap="true" pos="-0.6 0 0.12">
      <body name="finger" pos="0 0 0.02">
        <geom name="tip" type="box" size="0.1 0.1 0.02"/>
      </body>
    </body>
    <body name="ball" pos="0 0 0.099">
      <freejoint/>
      <geom type="sphere" size="0.1"/>
    </body>
    <body name="rolling" pos="0.6 0 0.219">
      <freejoint/>
      <geom type="sphere" size="0.1"/>
    </body>
    <body name="held" pos="-0.6 0 0.259">
      <freejoint/>
      <geom type="sphere" size="0.1"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def model():
  with jax.enable_x64(True):
    yield jaxmj.Model.from_xml_string(XML)


def test_world_fixed_geoms_are_the_world_welded_ones_without_mocap(model):
  names = [jaxmj.id2name(model, "geom", i) for i in range(model.ngeom)]
  fixed = dict(zip(names, driver.world_fixed_geoms(model)))
  assert fixed["floor"] and fixed["ramp"]
  assert not fixed["tip"]  # under a mocap body: moves with mocap_pos
  assert not any(v for k, v in fixed.items() if k not in ("floor", "ramp"))


def _rollout_loss(m, d, nstep=40):
  final, _ = jaxmj.rollout(m, d, nstep=nstep)
  return jnp.sum(final.qpos ** 2) + jnp.sum(final.qvel)


FIELDS = (("geom_pos", "floor"), ("geom_quat", "floor"), ("body_pos", "shelf"),
          ("body_quat", "shelf"))


def test_gradients_match_finite_differences(model):
  """In the state (the fixed frames' tangents symbolic zeros) and in the Model fields that
  place the fixed frames (kept: system identification of a floor's height and tilt, a
  shelf's pose). The floor is placed off its body's frame (geom_sameframe 0), so the
  forward pass reads these fields and finite differences of m.replace(...) see what the
  derivative says. One compiled gradient for all."""
  with jax.enable_x64(True):
    d = jaxmj.make_data(model)
    d = d.replace(qvel=d.qvel.at[0].set(0.3).at[7].set(-0.2))
    base = (d.qvel,) + tuple(getattr(model, f) for f, _ in FIELDS)

    def loss(qvel, *xs):
      m = model.replace(**{f: x for (f, _), x in zip(FIELDS, xs)})
      return _rollout_loss(m, d.replace(qvel=qvel))

    grads = jax.jit(jax.grad(loss, argnums=tuple(range(len(base)))))(*base)
    loss = jax.jit(loss)
    rng = np.random.default_rng(1)
    rows = [None] + [jaxmj.name2id(model, f.split("_")[0], r) for f, r in FIELDS]
    for k, (name, idx) in enumerate(zip(("qvel",) + tuple(f for f, _ in FIELDS), rows)):
      direction = np.zeros(base[k].shape)
      if idx is None:
        direction[:] = rng.normal(size=base[k].shape)
      else:
        direction[idx] = rng.normal(size=base[k].shape[1:])
      g = np.sum(np.asarray(grads[k]) * direction)
      assert g != 0, name
      eps = 1e-6
      shifted = [list(base), list(base)]
      shifted[0][k], shifted[1][k] = base[k] + eps * direction, base[k] - eps * direction
      fd = (loss(*shifted[0]) - loss(*shifted[1])) / (2 * eps)
      np.testing.assert_allclose(g, fd, rtol=1e-5, err_msg=name)


def test_collision_alone_differentiates_in_fixed_geom_frames(model):
  """collision(m, d) without from_kinematics: the floor's geom_xpos moves its contacts."""
  with jax.enable_x64(True):
    d = jax.jit(jaxmj.forward)(model, jaxmj.make_data(model))
    floor = np.zeros(d.geom_xpos.shape)
    floor[0, 2] = 1.0

    def dist(xpos, from_kinematics):
      return driver.collision(model, d.replace(geom_xpos=xpos), from_kinematics).contact.dist

    tangents = lambda x, t: [jax.jvp(functools.partial(dist, from_kinematics=k), (x,), (t,))[1]  # noqa: E731
                             for k in (False, True)]
    alone, inside = jax.jit(tangents)(d.geom_xpos, floor)
    touching = np.asarray(d.contact.active)
    assert touching.any()
    # the ball rests on the floor: its distance falls as the floor rises
    assert np.abs(np.asarray(alone)).max() > 0.5
    # from_kinematics: d's frames come from the Model, which is not differentiated here
    np.testing.assert_array_equal(np.asarray(inside), 0.0)
