"""Soft silhouettes (camera_image's softness) and colours as a traced argument (rgba).

Soft: pixels just outside a sphere's and a box's exact silhouettes, where the exact image's
gradient w.r.t. the bodies' positions is zero, get gradients equal to the soft image's
central finite differences; a small softness gives the exact image away from edges.
Colours: vmapping over colour sets compiles the camera once and each image shows its own."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmj
from jaxmj.smooth.kinematics import kinematics

XML = """<mujoco><worldbody>
  <light pos=".5 -1 2" dir="-.2 .4 -1"/>
  <camera name="c" pos="0 -2 .5" xyaxes="1 0 0 0 0 1" fovy="40"/>
  <camera name="ortho" pos="0 -2 .5" xyaxes="1 0 0 0 0 1" fovy="1.2" projection="orthographic"/>
  <geom type="plane" size="2 2 .1" rgba=".3 .5 .3 1"/>
  <body name="ball" pos="-.3 0 .5"><joint type="slide" axis="1 0 0"/>
    <geom name="ball" type="sphere" size=".25" rgba=".8 .3 .2 1"/></body>
  <body name="box" pos=".4 .2 .45" euler="10 0 30"><joint type="slide" axis="1 0 .5"/>
    <geom name="box" type="box" size=".15 .15 .15" rgba=".2 .3 .9 1"/></body>
</worldbody></mujoco>"""
H, W = 24, 32


def _scene():
  m = jaxmj.Model.from_xml_string(XML)
  return m, jax.jit(jaxmj.forward)(m, jaxmj.make_data(m))


def _rim(seg, geom):
  """Pixels within 2 of `geom`'s silhouette, outside it."""
  inside = seg[..., 0] == geom
  near = np.zeros_like(inside)
  for di in range(-2, 3):
    for dj in range(-2, 3):
      near |= np.roll(inside, (di, dj), (0, 1))
  return near & ~inside


def test_soft_silhouettes_carry_gradients_across_edges():
  m, d = _scene()
  seg = np.asarray(jaxmj.camera_image(m, d, "c", H, W, ("segmentation",))["segmentation"])
  rim = jnp.asarray(_rim(seg, 1) | _rim(seg, 2))
  assert int(rim.sum()) > 10

  def loss(q, softness):
    dd = kinematics(m, d.replace(qpos=q))
    img = jaxmj.camera_image(m, dd, "c", H, W, ("rgb", "depth"), softness=softness)
    return jnp.stack([jnp.sum(img["depth"] * rim), jnp.sum(img["rgb"].sum(-1) * rim)])

  q = d.qpos
  exact = np.asarray(jax.jit(jax.jacrev(lambda q: loss(q, None)))(q))
  np.testing.assert_array_equal(exact, 0.0)  # the exact image: no gradient off the geoms
  eps = 1e-6

  @jax.jit
  def soft(q):  # one compile for the Jacobian and the shifted images
    shifts = jnp.concatenate([jnp.eye(2), -jnp.eye(2)]) * eps
    shifted = jax.vmap(lambda s: loss(q + s, 0.02))(shifts)
    return jax.jacrev(lambda q: loss(q, 0.02))(q), shifted

  jac, shifted = (np.asarray(x) for x in soft(q))
  fd = ((shifted[:2] - shifted[2:]) / (2 * eps)).T
  assert np.abs(jac).min() > 1e-2  # both bodies move both sums
  np.testing.assert_allclose(jac, fd, rtol=1e-5, atol=1e-7 * np.abs(fd).max())


@pytest.mark.parametrize("cam", ["c", "ortho"])
def test_small_softness_gives_the_exact_image_away_from_edges(cam):
  m, d = _scene()
  render = jax.jit(lambda d, s: jaxmj.camera_image(m, d, cam, H, W, softness=s),
                   static_argnums=1)
  exact, soft = render(d, None), render(d, 1e-4)
  seg = np.asarray(exact["segmentation"])
  edge = _rim(seg, 1) | _rim(seg, 2) | _rim(seg, -1) | _rim(seg, 0)
  np.testing.assert_array_equal(soft["segmentation"], seg)
  np.testing.assert_allclose(np.asarray(soft["depth"])[~edge], np.asarray(exact["depth"])[
    ~edge], rtol=1e-9)
  np.testing.assert_allclose(np.asarray(soft["rgb"])[~edge], np.asarray(exact["rgb"])[~edge],
                             atol=1e-9)


def test_colours_vmapped_as_an_argument_compile_once():
  m, d = _scene()
  traces = []

  @jax.jit
  def images(rgba):
    traces.append(None)  # runs once per trace
    return jax.vmap(lambda c: jaxmj.camera_image(m, d, "c", H, W, ("rgb", "segmentation"),
                                                 rgba=c))(rgba)

  base = np.array(m.geom_rgba)
  ball = jaxmj.name2id(m, jaxmj.ObjType.GEOM, "ball")
  colours = np.eye(4)[:, :3]  # red, green, blue, black
  sets = np.repeat(base[None], 4, 0)
  sets[:, ball, :3] = colours
  first = images(jnp.asarray(sets))
  images(jnp.asarray(sets[::-1].copy()))
  assert len(traces) == 1
  for i in range(4):
    pixels = np.asarray(first["rgb"][i])[np.asarray(first["segmentation"][i, ..., 0]) == ball]
    assert len(pixels) > 20
    # diffuse and ambient light carry the geom's colour; specular adds white to all three
    mean = pixels.mean(0)
    if i < 3:
      assert mean.argmax() == i and mean[i] > mean.min() + 0.3
    ref = jaxmj.camera_image(m.replace(geom_rgba=sets[i].astype(np.float32)), d, "c", H, W,
                             ("rgb",))["rgb"]
    np.testing.assert_allclose(first["rgb"][i], ref, atol=1e-6)
