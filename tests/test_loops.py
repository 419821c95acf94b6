"""jaxmj/loops.py's bounded loops under vmap: each world's result its own, the carry updated in
place (no select of the old and new carry each trip)."""

import re

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import platform
from jaxmj.collision.ccd import convex, epa
from jaxmj.collision.ccd.convex import GeomFrame
from jaxmj.loops import FIXED_TRIPS_MAX, bounded_loop
from jaxmj.types import GeomType


def _halve(_, c):
  """Halves c[0] until it is below 1, counting trips in c[1]; a finished carry is unchanged."""
  return jnp.where(c[0] >= 1, jnp.stack([c[0] / 2, c[1] + 1]), c)


def _count_down(x, n):
  return bounded_loop(n, _halve, jnp.stack([x, jnp.zeros_like(x)]), lambda c: c[0] < 1,
                      early_exit=True)


def test_vmapped_early_exit_keeps_each_worlds_result_and_selects_nothing():
  n = FIXED_TRIPS_MAX + 20
  x = jnp.array([0.5, 3.0, 1000.0, 2.0 ** 20])
  out = jax.jit(jax.vmap(lambda x: _count_down(x, n)))(x)
  # the fixed-trip loop (every world runs every trip) and each world alone agree
  fixed = jax.vmap(lambda x: jax.lax.fori_loop(0, n, _halve, jnp.stack([x, 0.0])))(x)
  np.testing.assert_array_equal(out, fixed)
  np.testing.assert_array_equal(out[:, 1], [0, 2, 10, 21])
  for xi, oi in zip(x, out):
    np.testing.assert_array_equal(_count_down(xi, n), oi)
  # the predicate is reduced over the batch in the loop's cond: a batched predicate makes the
  # loop's lowering select between every carried array's old and new value each trip
  jaxpr = jax.make_jaxpr(jax.vmap(lambda x: _count_down(x, n)))(x)
  (loop,) = [e for e in jaxpr.eqns if e.primitive.name == "while"]
  assert loop.params["cond_jaxpr"].out_avals[0].shape == ()


def _while_body_copies(hlo: str, shape: str) -> int:
  """Copies of arrays of `shape` (e.g. 's32[8,210,3]') inside the bodies of while loops."""
  comps, cur = {}, None
  for line in hlo.splitlines():
    head = re.match(r"^(?:ENTRY )?%?([\w.\-]+) ", line)
    if head and not line.startswith(" ") and line.rstrip().endswith("{"):
      cur = comps.setdefault(head.group(1), [])
    elif cur is not None and line.startswith(" "):
      cur.append(line)
  bodies = {b for lines in comps.values() for line in lines
            for b in re.findall(r" while\(.*body=%?([\w.\-]+)", line)}
  return sum(f"= {shape}" in line and " copy(" in line
             for b in bodies for line in comps.get(b, []))


def test_epa_updates_its_polytope_in_place_under_vmap():
  """EPA's faces, adjacency and face points (210 faces at ccd_iterations 35) are written by
  scatters that a finished search drops: XLA updates them in place, where a select of the
  old and new polytope made it copy every array each trip."""
  batch, rng = 8, np.random.default_rng(0)
  def verts(scale):
    v = rng.normal(size=(12, 3))
    return jnp.asarray(v / np.linalg.norm(v, axis=1, keepdims=True) * scale, jnp.float32)
  v1, v2 = verts([0.1, 0.08, 0.06]), verts([0.07, 0.09, 0.05])
  eye = jnp.broadcast_to(jnp.eye(3, dtype=jnp.float32), (batch, 3, 3))
  g1 = GeomFrame(jnp.zeros((batch, 3)), eye, jnp.zeros((batch, 3)))
  g2 = GeomFrame(jnp.asarray(rng.normal(size=(batch, 3)) * 0.02 + [0.1, 0, 0], jnp.float32),
                 eye, jnp.zeros((batch, 3)))
  plan = jax.jit(jax.vmap(lambda a, b: convex.convex_plan(
    GeomType.MESH, GeomType.MESH, a, b, jnp.float32(0), 1e-6, verts1=v1, verts2=v2)))
  hlo = plan.lower(g1, g2).compile().as_text()
  assert " while(" in hlo
  for n in (210, epa._FIRST_FACES):  # the full polytope, the CPU's first pass
    for shape in (f"s32[{batch},{n},3]", f"f32[{batch},{n},3]", f"f32[{batch},{n}]"):
      assert _while_body_copies(hlo, shape) == 0, shape


def _deep_pairs(batch, rng):
  """`batch` poses of an ellipsoid sunk deep into another (EPA's polytopes grow past 48 faces
  on some) or only touching it (a few faces)."""
  eye = np.broadcast_to(np.eye(3), (batch, 3, 3))
  depth = rng.uniform(0.02, 0.2, size=batch)
  axis = rng.normal(size=(batch, 3))
  axis /= np.linalg.norm(axis, axis=1, keepdims=True)
  g1 = GeomFrame(jnp.zeros((batch, 3)), jnp.asarray(eye, jnp.float32),
                 jnp.broadcast_to(jnp.float32([0.12, 0.08, 0.06]), (batch, 3)))
  g2 = GeomFrame(jnp.asarray(axis * (0.2 - depth[:, None]), jnp.float32),
                 jnp.asarray(eye, jnp.float32),
                 jnp.broadcast_to(jnp.float32([0.09, 0.07, 0.05]), (batch, 3)))
  return g1, g2


def test_epa_first_pass_resumes_to_the_full_loops_result(monkeypatch):
  """On the CPU EPA's first pass has few face slots and horizon edges, and the full
  polytope's loop resumes at the trip where a search of the batch would outgrow them: the
  plans equal, bit for bit, those of the one full loop (the GPU's form). Small first sizes
  make most searches resume, some mid-search, others after finishing in the first pass; (8,
  24) resumes on the faces, (12, 4) mostly on the horizon. One test, so that the one loop's
  plans compile once."""
  g1, g2 = _deep_pairs(16, np.random.default_rng(1))
  plan = lambda a, b: convex.convex_plan(GeomType.ELLIPSOID, GeomType.ELLIPSOID, a, b,
                                         jnp.float32(0), 1e-6)
  jax.clear_caches()
  try:
    with monkeypatch.context() as gpu:
      gpu.setattr(platform, "TRACE_FOR", "gpu")
      one = jax.jit(jax.vmap(plan))(g1, g2)
    assert np.any(np.asarray(one.deep))
    for first_faces, first_horizon in ((8, 24), (12, 4)):
      monkeypatch.setattr(epa, "_FIRST_FACES", first_faces)
      monkeypatch.setattr(epa, "_FIRST_HORIZON", first_horizon)
      jax.clear_caches()
      two = jax.jit(jax.vmap(plan))(g1, g2)
      for a, b in zip(jax.tree.leaves(two), jax.tree.leaves(one)):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b),
                                      f"first pass ({first_faces}, {first_horizon})")
  finally:
    jax.clear_caches()
