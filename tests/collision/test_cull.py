"""The narrow phase on near pairs only (jaxmj.collision.cull): no near pair is skipped, however
many there are per chunk, in every world of a batch, and the contacts stay MuJoCo's."""

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from mujoco_compare import jit_fast as jit0  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.collision import cull  # noqa: E402
from jaxmj.collision.driver import collision  # noqa: E402
from jaxmj.collision.plan import CONVEX, collision_plan  # noqa: E402
from jaxmj.smooth.kinematics import kinematics  # noqa: E402


@pytest.mark.parametrize("chunk", [None, 1, 3])  # None: the platform's default
def test_near_only_runs_every_near_pair_of_every_world(chunk):
  rng = np.random.default_rng(0)
  near = rng.uniform(size=(5, 23)) < np.array([0.0, 0.1, 0.5, 0.9, 1.0])[:, None]
  x = rng.normal(size=(5, 23, 2))

  def search(a):
    return {"y": 2.0 * a, "n": jnp.sum(a)}

  out = jax.jit(jax.vmap(lambda n, a: cull.near_only(search, n, (a,), chunk=chunk)))(near, x)
  np.testing.assert_array_equal(np.asarray(out["y"])[near], 2.0 * x[near])
  np.testing.assert_array_equal(np.asarray(out["n"])[near], x.sum(-1)[near])
  # far pairs hold zeros or, when a last chunk filled up with them, their own result
  y = np.asarray(out["y"])[~near]
  assert np.all((y == 0) | (y == 2.0 * x[~near]))


@pytest.mark.parametrize("chunk", [1, 3])
def test_near_only_traces_the_search_once_in_a_batch(chunk):
  # the output shapes and the loop body share one trace, and vmap over worlds re-batches no
  # Python: a GJK/EPA search traced twice or more cost a mesh model's step most of its trace
  near, x = np.ones((4, 7), bool), np.zeros((4, 7, 2))
  traced = []

  def search(a):
    traced.append(a.shape)
    return {"y": 2.0 * a}

  jax.jit(jax.vmap(lambda n, a: cull.near_only(search, n, (a,), chunk=chunk))).lower(near, x)
  # one pair's shape: the world axis is vmapped, the chunk's vmapped or indexed away (chunk 1)
  assert traced == [(2,)]


# six mesh cubes over a mesh slab: in world 0 four rest on it (four near pairs of 4 contacts
# each) and two hang far above; world 1 lifts all but one. 21 convex pairs, most far apart.
_CUBE = " ".join(f"{x:g} {y:g} {z:g}" for x in (-1, 1) for y in (-1, 1) for z in (-1, 1))
_XML = f"""<mujoco><asset><mesh name="cube" vertex="{_CUBE}" scale=".05 .05 .05"/>
  <mesh name="slab" vertex="{_CUBE}" scale="1 1 .05"/></asset><worldbody>
  <geom type="mesh" mesh="slab" pos="0 0 -.05"/>
  {"".join(f'<body pos="{.3 * (i % 3) - .3} {.3 * (i // 3)} 0"><freejoint/>'
           f'<geom type="mesh" mesh="cube"/></body>' for i in range(6))}
  </worldbody></mujoco>"""


def _qpos(mj, heights, tilt):
  qpos = mj.qpos0.copy().reshape(6, 7)
  qpos[:, 2] = heights
  qpos[:, 3:] = [np.cos(tilt / 2), np.sin(tilt / 2), 0, 0]
  return qpos.ravel()


@pytest.mark.slow  # its own GJK/EPA compile (minutes on 2 cores)
def test_culled_convex_pairs_keep_mujocos_contacts_and_finite_gradients(monkeypatch):
  # two chunks for world 0's four near pairs, whichever platform traces
  monkeypatch.setattr(cull, "CHUNK", 3)
  monkeypatch.setattr(cull, "CPU_CHUNK", 3)
  m, mj = jaxmj.Model.from_xml_string(_XML), mujoco.MjModel.from_xml_string(_XML)
  group = [g for g in collision_plan(m)["groups"] if g["types"] == CONVEX][0]
  assert len(group["g1"]) == 21 and group["slots"] == 4
  qpos = np.stack([_qpos(mj, [.049, .0492, .0494, .0496, .5, .8], 0.004),
                   _qpos(mj, [.049, .5, .6, .7, .8, .9], 0.004)])

  def loss(q):
    d = kinematics(m, jaxmj.make_data(m).replace(qpos=q))
    c = collision(m, d).contact
    return jnp.sum(jnp.where(c.active, c.dist, 0.0)), c

  grad, contact = jit0(jax.vmap(jax.grad(loss, has_aux=True)))(jnp.asarray(qpos))
  assert np.all(np.isfinite(np.asarray(grad)))
  for w in range(2):
    d = mujoco.MjData(mj)
    d.qpos[:] = qpos[w]
    mujoco.mj_forward(mj, d)
    act = np.asarray(contact.active[w])
    assert act.sum() == d.ncon and d.ncon >= 4
    ours = sorted(zip(contact.geom1[act], contact.geom2[act], np.asarray(contact.dist[w])[act]))
    theirs = sorted((c.geom1, c.geom2, c.dist) for c in d.contact[:d.ncon])
    for (a1, a2, da), (b1, b2, db) in zip(ours, theirs):
      assert (a1, a2) == (b1, b2)
      assert abs(da - db) < 1e-9


def test_near_only_takes_numpy_arguments_under_a_derivative():
  """A static table among the arguments (the convex group's geom types) is indexed by the
  loop's traced pair ids, also while a derivative is traced (system identification)."""
  near = np.array([True, False, True])
  types = np.array([1, 2, 3])

  def loss(x):
    out = cull.near_only(lambda a, t: {"y": a * t}, near, (x, types), chunk=2)
    return jnp.sum(out["y"]) + jnp.sum(x)

  np.testing.assert_array_equal(jax.grad(loss)(jnp.ones(3)), np.ones(3))
