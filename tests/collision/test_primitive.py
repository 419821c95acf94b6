"""Primitive colliders against MuJoCo's own (mj_collision on two geoms).

Each pair type is tried on randomized configurations placed relative to the touching
distance (found by bisection on MuJoCo's reported distance): penetrating, touching,
separated inside the margin and separated beyond it, plus hand-picked degenerate ones
(aligned stacks, parallel and nearly parallel axes, coincident centres, centres inside,
crossed box edges). MuJoCo gets the geom frames directly (d.geom_xpos / geom_xmat, then
mj_collision), the colliders get the same numbers; contacts are matched by position and
must agree in count, and in dist, pos and frame to 1e-8 (they agree to ~1e-14: the
colliders follow MuJoCo 4.0's algorithms, box-box included, so no pair needs a looser
tolerance).
"""

import pytest

mujoco = pytest.importorskip("mujoco")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from jaxmj.collision import primitive  # noqa: E402
from jaxmj.collision.primitive import COLLIDERS, NO_CONTACT, GeomFrame  # noqa: E402
from jaxmj.types import GeomType as G  # noqa: E402

TOL = 1e-8
NAMES = {
  G.PLANE: "plane",
  G.SPHERE: "sphere",
  G.CAPSULE: "capsule",
  G.ELLIPSOID: "ellipsoid",
  G.CYLINDER: "cylinder",
  G.BOX: "box",
}
NSIZE = {G.PLANE: 3, G.SPHERE: 1, G.CAPSULE: 2, G.ELLIPSOID: 3, G.CYLINDER: 2, G.BOX: 3}
PAIRS = sorted(COLLIDERS)


def _rbound(t, size):
  if t == G.PLANE:
    return 0.0
  if t == G.SPHERE:
    return size[0]
  if t == G.CAPSULE:
    return size[0] + size[1]
  if t == G.ELLIPSOID:
    return max(size)
  if t == G.CYLINDER:
    return float(np.hypot(size[0], size[1]))
  return float(np.linalg.norm(size))


class Scene:
  """Two geoms, each alone on a free body (a plane sits in the world body)."""

  def __init__(self, t1, t2):
    self.types = (t1, t2)

    def geom(t):
      size = " ".join(["1"] * NSIZE[t]) if t != G.PLANE else "0 0 1"
      return f'<geom type="{NAMES[t]}" size="{size}"/>'

    if t1 == G.PLANE:
      world, bodies = geom(t1), [geom(t2)]
    else:
      world, bodies = "", [geom(t1), geom(t2)]
    body_xml = "".join(f"<body><freejoint/>{g}</body>" for g in bodies)
    xml = f"<mujoco><worldbody>{world}{body_xml}</worldbody></mujoco>"
    self.m = mujoco.MjModel.from_xml_string(xml)
    self.d = mujoco.MjData(self.m)
    mujoco.mj_kinematics(self.m, self.d)

  def collide(self, cfg):
    """MuJoCo's contacts (dist, pos, frame) for one configuration."""
    m, d = self.m, self.d
    for g in range(2):
      m.geom_size[g] = 0
      m.geom_size[g, : len(cfg["size"][g])] = cfg["size"][g]
      m.geom_rbound[g] = _rbound(self.types[g], cfg["size"][g])
      # MuJoCo 4.0 detects at the SUM of the geom margins (plus gaps): give it all to geom 1
      m.geom_margin[g] = cfg["margin"] if g == 0 else 0.0
      d.geom_xpos[g] = cfg["pos"][g]
      d.geom_xmat[g] = cfg["mat"][g].reshape(9)
    mujoco.mj_collision(m, d)
    n = d.ncon
    c = d.contact
    return c.dist[:n].copy(), c.pos[:n].copy(), c.frame[:n].reshape(n, 3, 3).copy()


def _quat_mat(q):
  mat = np.zeros(9)
  mujoco.mju_quat2Mat(mat, q / np.linalg.norm(q))
  return mat.reshape(3, 3)


def _random_size(rng, t):
  if t == G.PLANE:
    return np.zeros(3)
  return rng.uniform(0.1, 0.5, NSIZE[t])


def _min_dist(scene, cfg):
  dist, _, _ = scene.collide(cfg)
  return dist.min() if len(dist) else np.inf


def _place(cfg, base, u, t):
  cfg = dict(cfg)
  cfg["pos"] = (cfg["pos"][0], base + u * t)
  return cfg


def random_configs(t1, t2, n, seed):
  """n configurations cycling through penetrating, touching, inside and beyond the margin."""
  rng = np.random.default_rng(seed)
  scene = Scene(t1, t2)
  out = []
  while len(out) < n:
    size = (_random_size(rng, t1), _random_size(rng, t2))
    mat = (_quat_mat(rng.normal(size=4)), _quat_mat(rng.normal(size=4)))
    pos1 = rng.uniform(-0.5, 0.5, 3)
    margin = rng.uniform(0.01, 0.1)
    if t1 == G.PLANE:
      u = mat[0][:, 2]
      base = pos1 + rng.uniform(-0.5, 0.5, 3)
      base = base - u * np.dot(u, base - pos1)  # a point in the plane
    else:
      u = rng.normal(size=3)
      u /= np.linalg.norm(u)
      base = pos1
    cfg = {"pos": (pos1, pos1), "mat": mat, "size": size, "margin": margin}
    # bisection on MuJoCo's distance, with a margin wide enough to see separated pairs
    probe = dict(cfg, margin=10.0)
    lo, hi = (-3.0, 3.0) if t1 == G.PLANE else (0.0, 3.0)
    if not _min_dist(scene, _place(probe, base, u, lo)) < 0:
      continue
    if not _min_dist(scene, _place(probe, base, u, hi)) > 0:
      continue
    for _ in range(60):
      mid = 0.5 * (lo + hi)
      if _min_dist(scene, _place(probe, base, u, mid)) < 0:
        lo = mid
      else:
        hi = mid
    kind = len(out) % 4
    offset = [
      -rng.uniform(0.01, 0.15),
      0.0,
      margin * rng.uniform(0.2, 0.8),
      3 * margin + rng.uniform(0.0, 0.2),
    ][kind]
    out.append(_place(cfg, base, u, hi + offset))
  return out


def _aligned(pos2, size1, size2, margin=0.05, mat1=None, mat2=None):
  eye = np.eye(3)
  return {
    "pos": (np.zeros(3), np.asarray(pos2, float)),
    "mat": (eye if mat1 is None else mat1, eye if mat2 is None else mat2),
    "size": (np.asarray(size1, float), np.asarray(size2, float)),
    "margin": margin,
  }


def _rotx(a):
  c, s = np.cos(a), np.sin(a)
  return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _rotz(a):
  c, s = np.cos(a), np.sin(a)
  return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def special_configs(t1, t2):
  """Degenerate configurations: exact alignment, parallel axes, coincident centres."""
  z = np.zeros(3)
  p3 = np.zeros(3)
  cfgs = []
  if t1 == G.PLANE:
    s2 = {
      G.SPHERE: [0.3],
      G.CAPSULE: [0.2, 0.4],
      G.ELLIPSOID: [0.2, 0.3, 0.4],
      G.CYLINDER: [0.2, 0.4],
      G.BOX: [0.2, 0.3, 0.4],
    }[t2]
    for h in (0.3, 0.4, 0.39, 0.45, 0.5):
      cfgs.append(_aligned([0.1, 0.2, h], p3, s2))
      cfgs.append(_aligned([0.1, 0.2, h], p3, s2, mat2=_rotx(np.pi / 2)))  # lying down
      cfgs.append(_aligned([0.1, 0.2, h], p3, s2, mat2=_rotx(0.3)))
  if (t1, t2) == (G.SPHERE, G.SPHERE):
    cfgs += [
      _aligned(z, [0.3], [0.2]),
      _aligned(z, [0.3], [0.2], mat2=_rotx(0.5)),
      _aligned([0, 0, 0.5], [0.3], [0.2]),
      _aligned([0.3, 0.4, 0], [0.3], [0.2]),
    ]
  if (t1, t2) == (G.SPHERE, G.CAPSULE):
    cfgs += [
      _aligned(z, [0.3], [0.2, 0.4]),
      _aligned([0, 0, 0.9], [0.3], [0.2, 0.4]),
      _aligned([0.5, 0, 0.2], [0.3], [0.2, 0.4]),
    ]
  if (t1, t2) == (G.SPHERE, G.CYLINDER):
    cfgs += [
      _aligned(z, [0.3], [0.2, 0.4]),
      _aligned([0, 0, 0.65], [0.3], [0.2, 0.4]),
      _aligned([0.45, 0, 0.1], [0.3], [0.2, 0.4]),
      _aligned([0.1, 0, 0.35], [0.3], [0.2, 0.4]),
      _aligned([0.15, 0, 0.1], [0.3], [0.2, 0.4]),
      _aligned([0.3, 0.1, 0.55], [0.1], [0.2, 0.4]),
    ]
  if (t1, t2) == (G.SPHERE, G.BOX):
    cfgs += [
      _aligned(z, [0.3], [0.2, 0.3, 0.4]),
      _aligned([0.05, 0.1, 0.3], [0.1], [0.2, 0.3, 0.4]),
      _aligned([0, 0, 0.65], [0.3], [0.2, 0.3, 0.4]),
      _aligned([0.25, 0.35, 0.45], [0.1], [0.2, 0.3, 0.4]),
    ]
  if (t1, t2) == (G.CAPSULE, G.CAPSULE):
    for off in ([0.3, 0, 0], [0.3, 0, 0.5], [0.3, 0, 0.9], [0.3, 0, 1.3], z, [0, 0, 0.3]):
      cfgs.append(_aligned(off, [0.2, 0.4], [0.15, 0.3]))
    cfgs.append(_aligned([0.3, 0, 0.2], [0.2, 0.4], [0.15, 0.3], mat2=_rotx(np.pi)))
    cfgs.append(_aligned([0, 0.3, 0], [0.2, 0.4], [0.15, 0.3], mat2=_rotx(np.pi / 2)))
    # nearly parallel: MuJoCo 4.0 switches to two contacts below sin^2(angle) = 1e-8
    for angle in (1e-7, 1e-5, 5e-5, 2e-4, 1e-3):
      for off in ([0, 0.3, 0.2], [0, 0.33, 0.5], [0, 0.3, 0.9]):
        cfgs.append(_aligned(off, [0.2, 0.4], [0.15, 0.3], mat2=_rotx(angle)))
    # one end inside the margin, the other not
    cfgs.append(_aligned([0, 0.45, 0.3], [0.2, 0.5], [0.2, 0.5], margin=0.05, mat2=_rotx(-5e-5)))
  if (t1, t2) == (G.CAPSULE, G.BOX):
    for r1 in (np.eye(3), _rotx(np.pi / 2), _rotx(0.2), _rotx(np.pi / 4)):
      for off in ([0, 0, 0.55], [0, 0, 0.6], [0.1, 0.05, 0.9], [0.25, 0.35, 0.7], z):
        cfgs.append(_aligned(off, [0.1, 0.3], [0.2, 0.3, 0.4], mat1=r1))
  if (t1, t2) == (G.BOX, G.BOX):
    s1, s2 = [0.2, 0.3, 0.4], [0.1, 0.15, 0.2]
    for off in ([0, 0, 0.6], [0, 0, 0.55], [0.15, 0.2, 0.58], [0.3, 0.3, 0.58], [0, 0, 0.63]):
      cfgs.append(_aligned(off, s1, s2))
    cfgs.append(_aligned([0, 0, 0.8], s1, s1))  # identical boxes stacked
    cfgs.append(_aligned([0, 0, 0.78], s1, s1))
    cfgs.append(_aligned([0.1, 0.1, 0.78], s1, s1))
    cfgs.append(_aligned([0, 0, 0.55], s1, s2, mat2=_rotx(np.pi / 4)))  # edge down
    cfgs.append(_aligned([0.05, 0, 0.45], s1, s2, mat2=_rotx(np.pi / 4)))
    cfgs.append(_aligned([0.2, 0, 0.55], s1, s2, mat2=_rotx(np.pi / 2)))  # lying on its side
    cfgs.append(_aligned([0.2, 0.1, 0.62], s1, s2, mat2=_rotz(0.3)))  # twisted on top
    cfgs.append(_aligned([0.3, 0.45, 0.6], s1, s2, mat2=_rotz(np.pi / 4)))  # over a corner
    # crossed edges (an edge-edge axis wins), including ambiguous supporting edges
    crossed = _rotz(np.pi / 4) @ _rotx(np.pi / 4)
    for off in ([0, 0, 0.66], [0.1, 0.05, 0.68], [0.2, 0.3, 0.6]):
      cfgs.append(_aligned(off, s1, s2, mat1=_rotx(np.pi / 4), mat2=crossed))
    cfgs.append(_aligned([0.1, 0.1, 0.1], s1, s2))  # box 2 inside box 1
    cfgs.append(_aligned(np.zeros(3), s1, s1))  # coincident
    cfgs.append(_aligned([0, 0, 5.0], s1, s1))  # far apart: all slots empty
  return cfgs


BATCH = 128  # configurations are padded to this many, so each collider compiles once


def _batch(cfgs):
  """GeomFrame batches (and margins) of the configurations, padded to a multiple of BATCH."""
  n = -(-len(cfgs) // BATCH) * BATCH
  cfgs = list(cfgs) + [cfgs[-1]] * (n - len(cfgs))

  def stack(key, g):
    rows = []
    for c in cfgs:
      x = np.asarray(c[key][g], float)
      if key == "size":
        x = np.concatenate([x, np.zeros(3 - len(x))])
      rows.append(x)
    return jnp.asarray(np.stack(rows))

  frames = [
    GeomFrame(pos=stack("pos", g), mat=stack("mat", g), size=stack("size", g)) for g in range(2)
  ]
  margin = jnp.asarray([c["margin"] for c in cfgs])
  return frames, margin


_JIT = {}


def ours(t1, t2, cfgs):
  fn, n = COLLIDERS[(t1, t2)]
  if (t1, t2) not in _JIT:
    _JIT[(t1, t2)] = jax.jit(jax.vmap(fn))
  (f1, f2), margin = _batch(cfgs)
  dist, pos, frame = (np.asarray(x)[: len(cfgs)] for x in _JIT[(t1, t2)](f1, f2, margin))
  assert dist.shape == (len(cfgs), n) and pos.shape == (len(cfgs), n, 3)
  assert frame.shape == (len(cfgs), n, 3, 3)
  assert np.all(np.isfinite(dist)) and np.all(np.isfinite(pos)) and np.all(np.isfinite(frame))
  return dist, pos, frame


def compare(t1, t2, cfgs):
  """Per configuration: (count ok, max |dist|, |pos|, |frame| errors) against MuJoCo."""
  scene = Scene(t1, t2)
  dist, pos, frame = ours(t1, t2, cfgs)
  results = []
  for k, cfg in enumerate(cfgs):
    md, mp, mf = scene.collide(cfg)
    keep = dist[k] < cfg["margin"]
    # slots without a contact hold NO_CONTACT (box-box edge contacts are accepted up to
    # margin plus 1e-6 of the box scale, as in MuJoCo)
    assert np.all((dist[k][~keep] == NO_CONTACT) | (dist[k][~keep] < cfg["margin"] + 1e-5))
    od, op, of = dist[k][keep], pos[k][keep], frame[k][keep]
    if len(od) != len(md):
      results.append((False, np.inf, np.inf, np.inf, len(md), len(od)))
      continue
    errs = [0.0, 0.0, 0.0]
    used = set()
    for i in range(len(md)):
      gap = np.linalg.norm(op - mp[i], axis=1)
      gap[list(used)] = np.inf
      j = int(np.argmin(gap))
      used.add(j)
      errs[0] = max(errs[0], abs(od[j] - md[i]))
      errs[1] = max(errs[1], np.abs(op[j] - mp[i]).max())
      errs[2] = max(errs[2], np.abs(of[j] - mf[i]).max())
    results.append((True, *errs, len(md), len(od)))
  return results


def _check(t1, t2, cfgs, tol=TOL):
  results = compare(t1, t2, cfgs)
  bad = [(k, r) for k, r in enumerate(results) if not r[0] or max(r[1:4]) > tol]
  assert not bad, f"{NAMES[t1]}-{NAMES[t2]}: {len(bad)} of {len(cfgs)} differ, e.g. {bad[:3]}"
  return results


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{NAMES[p[0]]}-{NAMES[p[1]]}")
def test_matches_mujoco_random(pair):
  t1, t2 = pair
  results = _check(t1, t2, random_configs(t1, t2, 48, seed=int(t1) * 10 + int(t2)))
  assert sum(r[4] for r in results) > 0  # some configurations do touch


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{NAMES[p[0]]}-{NAMES[p[1]]}")
def test_matches_mujoco_degenerate(pair):
  cfgs = special_configs(*pair)
  if not cfgs:
    pytest.skip("no degenerate configurations for this pair")
  _check(*pair, cfgs)


# HLO instructions of the largest vmapped colliders after XLA's optimizations (jax 0.10.2,
# CPU, float64; measured 1266, 1739 and 3364 where the straightforward formulation had 1720,
# 3119 and 5563), with ~20% headroom. Compile time grows with this count, which rises when a
# change makes XLA recompute a long chain of cheap ops in every kernel reading it (see
# primitive.py's docstring; scripts/compile_time.py measures times too).
HLO_BUDGET = {(G.CAPSULE, G.CAPSULE): 1500, (G.CAPSULE, G.BOX): 2100, (G.BOX, G.BOX): 4000}


@pytest.mark.parametrize("pair", sorted(HLO_BUDGET), ids=lambda p: f"{NAMES[p[0]]}-{NAMES[p[1]]}")
def test_compiled_size(pair):
  """Compiled size of the vmapped collider (the executable `ours` compiled for the same
  shapes, so no extra compile when the comparisons above ran)."""
  fn, _ = COLLIDERS[pair]
  jit = _JIT.setdefault(pair, jax.jit(jax.vmap(fn)))
  (f1, f2), margin = _batch(special_configs(*pair))
  text = jit.lower(f1, f2, margin).compile().as_text()
  count = sum(1 for line in text.splitlines() if " = " in line)
  assert count <= HLO_BUDGET[pair], (NAMES[pair[0]], NAMES[pair[1]], count)


def test_table():
  """Native pairs of MuJoCo 4.0's mjCOLLISIONFUNC (plane-ellipsoid is mjc_PlaneConvex, a
  closed-form support point for an ellipsoid); slot counts are MuJoCo's maxima."""
  assert {k: v[1] for k, v in COLLIDERS.items()} == {
    (G.PLANE, G.SPHERE): 1,
    (G.PLANE, G.CAPSULE): 2,
    (G.PLANE, G.ELLIPSOID): 1,
    (G.PLANE, G.CYLINDER): 4,
    (G.PLANE, G.BOX): 4,
    (G.SPHERE, G.SPHERE): 1,
    (G.SPHERE, G.CAPSULE): 1,
    (G.SPHERE, G.CYLINDER): 1,
    (G.SPHERE, G.BOX): 1,
    (G.CAPSULE, G.CAPSULE): 2,
    (G.CAPSULE, G.BOX): 2,
    (G.BOX, G.BOX): 8,
  }
  assert all(t1 <= t2 for t1, t2 in COLLIDERS)


def test_make_frame():
  """mju_makeFrame's conventions (the comparisons above check it against MuJoCo's frames)."""
  got = np.asarray(primitive.make_frame(jnp.array([0.0, 0.0, 1.0])))
  np.testing.assert_array_equal(got, [[0, 0, 1], [0, 1, 0], [-1, 0, 0]])
  got = np.asarray(primitive.make_frame(jnp.array([0.0, 1.0, 0.0])))  # y unusable: z
  np.testing.assert_array_equal(got, [[0, 1, 0], [0, 0, 1], [1, 0, 0]])
  tangent = jnp.array([1.0, 0.0, 1.0])  # a given tangent is orthogonalized and normalized
  got = np.asarray(primitive.make_frame(jnp.array([0.0, 0.0, 1.0]), tangent))
  np.testing.assert_allclose(got, [[0, 0, 1], [1, 0, 0], [0, 1, 0]], atol=1e-15)
  rng = np.random.default_rng(0)
  for n in rng.normal(size=(20, 3)):
    got = np.asarray(primitive.make_frame(jnp.asarray(n / np.linalg.norm(n))))
    np.testing.assert_allclose(got @ got.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(got) > 0


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: f"{NAMES[p[0]]}-{NAMES[p[1]]}")
def test_grad_finite(pair):
  """Gradients w.r.t. positions, orientations and sizes are finite in touching, coincident,
  parallel and aligned configurations: of the contact quantities in the live slots, and of
  the plain sum of dist over all slots (placeholders included)."""
  t1, t2 = pair
  fn, _ = COLLIDERS[pair]
  cfgs = special_configs(t1, t2)
  size = {
    G.PLANE: [0, 0, 0],
    G.SPHERE: [0.3, 0, 0],
    G.CAPSULE: [0.2, 0.4, 0],
    G.ELLIPSOID: [0.2, 0.3, 0.4],
    G.CYLINDER: [0.2, 0.4, 0],
    G.BOX: [0.2, 0.3, 0.4],
  }
  s1, s2 = np.array(size[t1]), np.array(size[t2])
  top = {G.PLANE: 0.0, G.SPHERE: 0.3, G.CAPSULE: 0.6, G.ELLIPSOID: 0.4, G.CYLINDER: 0.4, G.BOX: 0.4}
  cfgs.append(_aligned(np.zeros(3), s1, s2))  # coincident frames
  cfgs.append(_aligned(np.zeros(3), s1, s1 if t1 == t2 else s2))
  cfgs.append(_aligned([0, 0, top[t1] + top[t2]], s1, s2))  # exactly touching, aligned
  cfgs.append(_aligned([0, 0, top[t1] + top[t2]], s1, s1 if t1 == t2 else s2))

  def total(f1, f2, margin):
    # a NaN or inf in the gradient of either part shows in the gradient of the sum
    dist, pos, frame = fn(f1, f2, margin)
    live = dist < margin
    live_sum = (
      jnp.sum(jnp.where(live, dist, 0.0))
      + jnp.sum(jnp.where(live[:, None], pos, 0.0))
      + jnp.sum(jnp.where(live[:, None, None], frame, 0.0))
    )
    return live_sum + jnp.sum(dist)

  (f1, f2), margin = _batch(cfgs)
  # only finiteness is checked here: skip XLA's backend optimizations to halve compile time
  fast = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}
  out = jax.jit(jax.vmap(jax.grad(total, argnums=(0, 1))), compiler_options=fast)(f1, f2, margin)
  for leaf in jax.tree_util.tree_leaves(out):
    assert np.all(np.isfinite(np.asarray(leaf))), (NAMES[t1], NAMES[t2])


if __name__ == "__main__":  # report: max errors per pair
  jax.config.update("jax_enable_x64", True)
  for t1, t2 in PAIRS:
    cfgs = random_configs(t1, t2, 200, seed=1000 + int(t1) * 10 + int(t2)) + special_configs(t1, t2)
    res = compare(t1, t2, cfgs)
    ok = [r for r in res if r[0]]
    print(
      f"{NAMES[t1]:>9}-{NAMES[t2]:<9} n={COLLIDERS[(t1, t2)][1]} configs={len(cfgs)} "
      f"count mismatches={len(res) - len(ok)} contacts={sum(r[4] for r in res)} "
      f"max err dist={max(r[1] for r in ok):.1e} pos={max(r[2] for r in ok):.1e} "
      f"frame={max(r[3] for r in ok):.1e}"
    )
