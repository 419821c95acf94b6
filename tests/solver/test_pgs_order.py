"""MuJoCo 4.0's PGS sweep order (jaxmj/solver/pgs_order.py): PCG32 and the shuffled block lists.

The solver's sweeps against MuJoCo: tests/test_solver.py (its rows) and tests/test_island.py
(mj_step trajectories per island).
"""

import jax
import jax.numpy as jnp
import numpy as np
from mujoco_compare import mujoco

from jaxmj.solver import pgs_order

_MASK64 = (1 << 64) - 1


def pcg32_reference(state: int, n: int) -> list:
  """PCG32 (XSH-RR, increment 1) on Python integers: n outputs from `state`."""
  out = []
  for _ in range(n):
    x = (((state >> 18) ^ state) >> 27) & 0xFFFFFFFF
    r = state >> 59
    out.append(((x >> r) | (x << ((32 - r) & 31))) & 0xFFFFFFFF)
    state = (state * 6364136223846793005 + 1) & _MASK64
  return out


def test_pcg32_on_32_bit_halves_is_pcg32():
  """The uint32-limb PCG32 (no uint64 needed) draws the 64-bit generator's numbers."""
  def draws(hi, lo):
    def step(c, _):
      out, hi, lo = pgs_order.pcg32(*c)
      return (hi, lo), out
    return jax.lax.scan(step, (hi, lo), None, length=3000)[1]

  seed = 0x853C49E6748FEA9B
  got = jax.jit(draws)(jnp.uint32(seed >> 32), jnp.uint32(seed & 0xFFFFFFFF))
  np.testing.assert_array_equal(np.asarray(got, np.int64), pcg32_reference(seed, 3000))
  first = jax.jit(draws)(jnp.uint32(0), jnp.uint32(1))
  np.testing.assert_array_equal(np.asarray(first, np.int64), pcg32_reference(1, 3000))


def chain_first_sweep(n: int) -> list:
  """MuJoCo's first PGS sweep order over n equality rows (a hinge chain, each joint held by a
  joint equality; no warm start, so the sweep starts from 0): recovered from its forces, since
  row i's force is -(b_i + sum of AR_ij f_j over the rows swept before it) / AR_ii."""
  body = "".join(f'<body pos="0 0 -.3"><joint name="j{i}" axis="0 1 0"/><geom type="capsule" '
                 f'fromto="0 0 0 0 0 -.3" size=".05" mass="{1 + .3 * i}"/>' for i in range(n))
  eqs = "".join(f'<joint joint1="j{i}" polycoef="{.1 * i} 0 0 0 0"/>' for i in range(n))
  mj = mujoco.MjModel.from_xml_string(
    f'<mujoco><option solver="PGS" iterations="1"><flag warmstart="disable"/></option>'
    f'<worldbody><body pos="0 0 1">{body}{"</body>" * (n + 1)}</worldbody>'
    f'<equality>{eqs}</equality></mujoco>')
  d = mujoco.MjData(mj)
  d.qpos[:] = 0.3 * np.random.default_rng(0).normal(size=n)
  mujoco.mj_forward(mj, d)
  ar, b, f = d.efc_AR.reshape(n, n), d.efc_b, d.efc_force
  order, cur = [], np.zeros(n)
  while len(order) < n:
    fits = [i for i in range(n) if i not in order
            and abs((b[i] + ar[i] @ cur) / ar[i, i] + f[i]) < 1e-9 * np.abs(f).max()]
    assert len(fits) == 1, fits
    order.append(fits[0])
    cur[fits[0]] = f[fits[0]]
  return order


def test_first_sweep_is_mujocos_shuffle():
  """One Fisher-Yates pass from PCG32 state 1 over n = 1..9 blocks (a 10-entry list, its first n
  in use; the rest and the state stay put) is the order MuJoCo's first sweep takes."""
  nb = 10
  shuffle = jax.jit(pgs_order.shuffle)
  for n in range(1, nb):
    perm, hi, lo = pgs_order.init_state(2, nb)
    perm, hi, lo = shuffle(perm, hi, lo, jnp.array([n, n]), jnp.array([True, False]))
    assert np.asarray(perm[0, :n]).tolist() == chain_first_sweep(n), n
    np.testing.assert_array_equal(perm[0, n:], np.arange(n, nb))
    np.testing.assert_array_equal(perm[1], np.arange(nb))
    assert int(hi[1]) == 0 and int(lo[1]) == 1


def test_sweep_order_goes_island_by_island():
  """Blocks ranked within their islands by MuJoCo's row order, then listed island by island
  in each island's shuffled order; inactive blocks (island -1) last."""
  isl = jnp.array([1, 0, -1, 1, 0, 1])
  key = np.array([5, 0, 2, 1, 3, 4])  # island 1: blocks 3, 5, 0 in MuJoCo's order
  rank, count = jax.jit(pgs_order.block_ranks, static_argnums=2)(isl, key, 2)
  np.testing.assert_array_equal(count, [2, 3])
  np.testing.assert_array_equal(np.asarray(rank)[[1, 4, 3, 5, 0]], [0, 1, 0, 1, 2])
  perm = jnp.array([[1, 0, 2, 3, 4, 5], [2, 0, 1, 3, 4, 5]])  # list position -> rank
  order = jax.jit(pgs_order.sweep_order)(perm, rank, isl)
  np.testing.assert_array_equal(order, [4, 1, 0, 3, 5, 2])


# predefined pairs (one between bodies that never collide otherwise, one replacing a dynamic
# pair), single-geom bodies, and two spheres of one body against the world's box and plane
# (midphase: sorted by geom ids, not the box-first loop order)
CONTACT_XML = """<mujoco><worldbody>
    <geom name="wall" type="box" pos="0 -.6 .2" size="1 .1 .2"/>
    <geom name="floor" type="plane" size="5 5 .1"/>
    <body pos="0 0 .099"><freejoint/><geom name="ga" type="box" size=".1 .1 .1"/></body>
    <body pos="0 0 .298"><freejoint/><geom name="gb" type="sphere" size=".1"/></body>
    <body pos="1 0 .099"><freejoint/>
      <geom name="gc" type="box" size=".1 .1 .1" contype="0" conaffinity="0"/></body>
    <body pos="0 -.401 .098"><freejoint/>
      <geom type="sphere" size=".1" pos=".2 0 0"/><geom type="sphere" size=".1" pos="-.2 0 0"/>
    </body>
  </worldbody>
  <contact><pair geom1="gc" geom2="floor"/><pair geom1="gb" geom2="ga"/></contact></mujoco>"""


def test_contact_rows_ranked_in_mujocos_contact_order():
  """mujoco_efc_order ranks jaxmj's active contacts (slots grouped by collider) in the order
  of MuJoCo's contact list: body pairs by signature, a <pair> before the dynamic contacts of its
  body pair, midphase geom pairs by geom ids."""
  import jaxmj
  from jaxmj.collision.driver import collision
  from jaxmj.smooth.kinematics import kinematics

  mj = mujoco.MjModel.from_xml_string(CONTACT_XML)
  dm = mujoco.MjData(mj)
  mujoco.mj_forward(mj, dm)
  m = jaxmj.Model.from_xml_string(CONTACT_XML)
  d = jax.jit(lambda m, d: collision(m, kinematics(m, d)))(m, jaxmj.make_data(m))
  slots = np.flatnonzero(np.asarray(d.contact.active))
  order = pgs_order.mujoco_efc_order(m, d.contact)
  ranked = slots[np.argsort(order[d.contact.efc_address[slots]])]
  pairs = lambda g1, g2: list(zip(np.asarray(g1).tolist(), np.asarray(g2).tolist()))  # noqa: E731
  assert pairs(d.contact.geom1[slots], d.contact.geom2[slots]) != pairs(dm.contact.geom1,
                                                                       dm.contact.geom2)
  assert pairs(d.contact.geom1[ranked], d.contact.geom2[ranked]) == pairs(dm.contact.geom1,
                                                                         dm.contact.geom2)
  np.testing.assert_allclose(np.asarray(d.contact.dist)[ranked], dm.contact.dist, atol=1e-12)
