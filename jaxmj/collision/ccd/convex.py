"""Convex-convex narrowphase: MuJoCo 4.0's native GJK/EPA ("nativeccd") in JAX.

Entry points (one pair per call; the driver vmaps):

  collide_convex(type1, type2, g1, g2, margin, tolerance, iterations=35, verts1=, verts2=)
      -> (dist (), pos (3,), frame (3, 3)). The geom types may be TRACED int arrays, so one
      compiled function serves every convex pair type (vmap over all convex pairs at once:
      the search compiles once, which matters, see "Cost" below).
  convex_collider(type1, type2, n, iterations) -> fn(g1, g2, margin, tolerance=1e-6,
      verts1=None, verts2=None) -> (dist (n,), pos (n, 3), frame (n, 3, 3)), static types;
      slot 0 holds the contact, the others are empty.
  convex_plan / contact_from_plan: the two stages of collide_convex (search, then the
      differentiable contact), for callers that want to reuse a compiled search.

`frame` rows are [normal (geom1 -> geom2), tangent1, tangent2] as in `mjContact.frame`, the
tangents made like `mju_makeFrame`. `dist` is negative in penetration; no contact gives
dist = 1e10 (finite), pos 0 and an identity frame. `margin` is the pair margin (geom_margin1 +
geom_margin2, or pair/margin); a contact exists when the signed distance is below it.
CONVEX_PAIRS lists the primitive pairs MuJoCo 4.0 routes to this collider.

Algorithm, reproducing MuJoCo 4.0's mjc_Convex with nativeccd as measured against the 4.0.0
binary (tests/collision/test_convex.py; the stored C sources differ in details, and where
they disagreed the binary decided: no gjkIntersect fallback, EPA stops on the current
iteration's support gap, margins handled by the core pass below):

* Supports S_1(d) - S_2(-d) of the Minkowski difference, each geom inflated by margin/2.
* Core pass, when a sphere or capsule is involved or the margin is positive: GJK distance
  between the cores (sphere -> point, capsule -> segment, other shapes uninflated). When the
  cores are apart, the contact is their closest-point pair pushed out by the radii and
  margin/2, and dist is exact up to GJK's tolerance.
* Otherwise GJK in intersection mode on the inflated shapes, then EPA on the polytope grown
  from GJK's simplex (MuJoCo's polytope2/3/4 constructions), until the support gap of the
  closest face is below ccd_tolerance or ccd_iterations have run. GJK starts from the
  centres' difference, or +x when the centres coincide.
* x1, x2 = witness points; pos = (x1 + x2)/2, normal = (x1 - x2)/|x1 - x2|, which points from
  geom 1 into geom 2; dist = margin + the ccd distance.

Near touching (MuJoCo 4.0's rules, read from the 4.0.0 binary; the stored C sources are
older): GJK stops once its iterate (the origin's projection on the simplex) is shorter than
ccd_tolerance on curved shapes and ends with a separating-plane test that rules out contact
(see gjk); EPA starts from 4.0's polytope3 (supports along both normals of GJK's triangle,
then the hexahedron or tetrahedron of those five points that encloses the segment between
them, faces turned away from the vertices' centroid, the origin allowed within the tolerance
outside a face) and reports no contact when its first support falls short of the closest
face by more than the tolerance; so barely touching shapes get MuJoCo's contact or none
(tests/collision/test_convex.py, near-touching cases and testdata/model.xml's cylinder on a
heightfield prism). Known differences: (1) 4.0's polytope3 rebuilds from an edge of the
triangle with polytope2 when the origin lies exactly on a face (within 1e-15); here that is
no contact. (2) polytope2/4 hand a failed face to polytope3 as before (4.0 picks it with a
new replaceBestSimplex3). GJK's distance subalgorithm is 4.0's (S1D / S2D differ from the
stored sources, see gjk.py). The GJK distance pass is chaotic where it converges slowly (a
curved core within ~1e-5 of another shape): last-bit rounding, XLA's batched vs unbatched
arithmetic included, decides its last iteration, so such contacts agree to ~1e-5 in the
normal (test_convex's GJK_TOL). Measured on a sphere-ellipsoid pair (MuJoCo's iterates read
through ccd_iterations = k): the witness normal agrees to 1e-16 at the first iterations and
the difference grows to 1e-11 by the 32nd (nearly flat tetrahedra decide the sub-simplex by
rounding), where MuJoCo stops one iteration earlier: 3.7e-6 in the final normal.

float32 (jax's default, what RL users run): MuJoCo's exact tests (mjMINVAL) sit below float32's
resolution, so with exact support ties (axis-aligned, centred placements) GJK ended on a flat
tetrahedron or stalled on a box corner tie and EPA's start polytope failed: clearly
penetrating pairs got no contact. For dtypes narrower than float64 those thresholds scale with
the rounding noise of the pair's coordinates (rounding_noise), and EPA runs whenever GJK's last
support does not prove the shapes apart; float64 runs MuJoCo's thresholds unchanged (bit for
bit). Held by tests/collision/test_convex_float32.py; one known remainder: an ellipsoid on a
box face's symmetry plane 1e-5..1e-4 deep can still be missed (GJK stalls on a segment in
that plane and polytope2's hexahedron around it fails).

JAX structure: loops of at most ccd_iterations trips over fixed-size arrays (MuJoCo's own
polytope capacity, 6 * ccd_iterations faces), no Python branching on traced values; GJK and
EPA stop once every pair of a vmapped call is done (loops.bounded_loop: a fixed-trip loop
under vmap computes every trip's step), and EPA does not start on pairs GJK found apart.
EPA's horizon is found for all visible faces at once (flood fill through visible neighbours)
instead of MuJoCo's depth-first walk: the polytope is the same, only the numbering of new
faces differs, which matters only for exactly tied face distances.

Gradients: the search runs on stop_gradient-ed inputs (and as its own jit, so a top-level
jax.grad reuses its compiled executable). Values are the search's (straight-through);
gradients are those of a smooth recomputation from the search's outcome (see _surrogate):
dist is the gap of the shapes along the reported normal, -n.(S_1(n) - S_2(-n)), whose
gradient is the signed distance's gradient by the envelope theorem (d/d pos2 = n,
d/d pos1 = -n, d/d sphere radius = -1, d/d margin = 0); pos goes through the final simplex /
face with recomputed barycentric weights. Nothing of the loops is stored for reverse mode.

Support functions: sphere, capsule, ellipsoid, cylinder, box, and a convex mesh given as a
(V, 3) vertex array in the geom frame (support = vertex with the largest dot product, like
MuJoCo's exhaustive mesh support), passed as verts1 / verts2. For a batch mixing meshes and
primitives pass a (V, 3) array for every geom (ignored unless the type is MESH).

Multiple contacts: this module gives MuJoCo's first (EPA or GJK) contact. MuJoCo 4.0's
multiccd, which turns it into up to four contacts when flat features of the two geoms align
(box faces, cylinder caps as 16-gons, mesh polygons, capsule / cylinder side / box / mesh
edges), is collision/multiccd.py, which runs this module's search and then its own stage; the
driver uses it for every convex pair of capsules, cylinders, boxes and meshes. MuJoCo's mesh
hill-climbing and support caching only matter for exactly tied vertices. Where a search direction is
exactly parallel to a box face, last-bit rounding picks the corner and may send EPA down a
different (equally valid) path than the C build: seen in ~2% of random cylinder-box cases.

Cost: the search is a large program; it compiles in ~11 s of CPU time (once for all pair
types when the types are traced; GJK's loop body is the largest part, which is why the
triangle and segment cases of its subdistance reuse the tetrahedron's face computations) and
runs at ~1.5 ms per pair vmapped.

GeomFrame (pos (3,), mat (3, 3) with the geom's local axes as columns, size (3,)) is
primitive.GeomFrame, re-exported here.

Modules: ccd_support.py (mjMINVAL and float32 thresholds, vector helpers, support functions),
gjk.py (GJK and its distance subalgorithm), polytope.py (EPA's start polytope), epa.py (EPA);
this module runs them as mjc_ccd does and makes the differentiable contact.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from jaxmj import math
from jaxmj.collision.ccd.epa import epa
from jaxmj.collision.ccd.gjk import GjkPass, gjk, lincomb, s1d
from jaxmj.collision.ccd.polytope import polytope, tri_affine
from jaxmj.collision.ccd.support import (
  BOX,
  CAPSULE,
  LINE,
  MESH,
  POINT,
  PRISM,
  SPHERE,
  cross,
  dot,
  mul,
  normalize3,
  pair_support,
  project_origin_plane,
  rounding_noise,
  tree_get,
)
from jaxmj.collision.primitive import GeomFrame
from jaxmj.types import GeomType

NO_CONTACT_DIST = 1e10

# geom types with a support function here
_CONVEX_TYPES = (GeomType.SPHERE, GeomType.CAPSULE, GeomType.ELLIPSOID, GeomType.CYLINDER,
                 GeomType.BOX, GeomType.MESH)

# Pairs that MuJoCo 4.0's mjCOLLISIONFUNC sends to mjc_Convex among primitive geoms (type1 <=
# type2, the order in which the driver passes them), with the number of contact slots this
# collider fills. Pairs with a sphere or an ellipsoid give one contact in MuJoCo too. For the
# capsule/cylinder/box pairs MuJoCo 4.0 adds multiccd points when faces or edges are aligned
# (a resting cylinder gets 4, a capsule lying on a cylinder cap 2): collision/multiccd.py.
CONVEX_PAIRS: dict[tuple[GeomType, GeomType], int] = {
  (GeomType.SPHERE, GeomType.ELLIPSOID): 1,
  (GeomType.CAPSULE, GeomType.ELLIPSOID): 1,
  (GeomType.CAPSULE, GeomType.CYLINDER): 1,
  (GeomType.ELLIPSOID, GeomType.ELLIPSOID): 1,
  (GeomType.ELLIPSOID, GeomType.CYLINDER): 1,
  (GeomType.ELLIPSOID, GeomType.BOX): 1,
  (GeomType.CYLINDER, GeomType.CYLINDER): 1,
  (GeomType.CYLINDER, GeomType.BOX): 1,
}

# The most contacts MuJoCo 4.0 itself returns for these pairs (multicontact), for reference.
MUJOCO_MAX_CONTACTS: dict[tuple[GeomType, GeomType], int] = {
  **{k: 1 for k in CONVEX_PAIRS},
  (GeomType.CAPSULE, GeomType.CYLINDER): 2,
  (GeomType.CYLINDER, GeomType.CYLINDER): 4,
  (GeomType.CYLINDER, GeomType.BOX): 4,
  # mesh pairs (measured, tests/collision/test_multicontact_survey.py)
  (GeomType.SPHERE, GeomType.MESH): 1,
  (GeomType.CAPSULE, GeomType.MESH): 2,
  (GeomType.ELLIPSOID, GeomType.MESH): 1,
  (GeomType.CYLINDER, GeomType.MESH): 4,
  (GeomType.BOX, GeomType.MESH): 4,
  (GeomType.MESH, GeomType.MESH): 4,
}


def make_frame(normal: jax.Array) -> jax.Array:
  """Contact frame rows [normal, tangent1, tangent2] like mju_makeFrame with no tangent given."""
  x = normalize3(normal, None)
  use_y = (x[..., 1] < 0.5) & (x[..., 1] > -0.5)
  zero = jnp.zeros_like(x[..., 0])
  one = jnp.ones_like(zero)
  y = jnp.stack([zero, jnp.where(use_y, one, zero), jnp.where(use_y, zero, one)], axis=-1)
  y = y - x * dot(x, y, None)[..., None]
  y = normalize3(y, None)
  z = cross(x, y, None)
  return jnp.stack([x, y, z], axis=-2)


# --------------------------------------------------------------------------------------------
# mjc_ccd and the contact


class _Plan(NamedTuple):
  """Combinatorial outcome of one mjc_ccd call, enough to recompute it differentiably."""

  shallow: jax.Array  # cores apart: result from the GJK distance pass
  deep: jax.Array  # result from EPA
  dist: jax.Array  # forward values of mjc_ccd
  x1: jax.Array
  x2: jax.Array
  core_dirs: jax.Array  # (4, 3) support directions of the final GJK simplex
  core_n: jax.Array
  core_lam: jax.Array
  face_dirs: jax.Array  # (3, 3) support directions of the vertices of EPA's face


def _core(code):
  """The code of a geom's core (sphere -> point, capsule -> segment, others themselves);
  static for a static code."""
  if isinstance(code, int):
    return {SPHERE: POINT, CAPSULE: LINE}.get(code, code)
  return jnp.where(code == SPHERE, POINT, jnp.where(code == CAPSULE, LINE, code))


def _codes(code1, code2, g1, g2, margin):
  """Per-pair quantities: core codes, inflations, full margins, discreteness (Python values
  where the codes are static)."""
  half = 0.5 * margin  # margins are >= 0; no max() so that d/d margin is one-sided-consistent
  cap1 = (code1 == SPHERE) | (code1 == CAPSULE)
  cap2 = (code2 == SPHERE) | (code2 == CAPSULE)
  core1, core2 = _core(code1), _core(code2)
  fm1 = jnp.where(cap1, g1.size[0], 0.0) + half
  fm2 = jnp.where(cap2, g2.size[0], 0.0) + half
  poly = (BOX, MESH, PRISM)
  disc = functools.reduce(jnp.logical_or, [code1 == c for c in poly]) & functools.reduce(
    jnp.logical_or, [code2 == c for c in poly])
  return half, cap1 | cap2, core1, core2, fm1, fm2, disc


def _ccd_plan(code1, code2, g1, g2, verts1, verts2, margin, iterations, tolerance, guard) -> _Plan:
  """Forward mjc_ccd on stop-gradient inputs. dist < 0 means contact (dist = signed - margin)."""
  dtype = g1.pos.dtype
  big = jnp.asarray(jnp.finfo(dtype).max, dtype)
  half, has_core, core1, core2, fm1, fm2, disc = _codes(code1, code2, g1, g2, margin)
  noise = rounding_noise(g1, g2, verts1, verts2, margin)
  zero = jnp.zeros((), dtype)
  # pass 0: distance between the cores (sphere -> point, capsule -> segment, others
  # uninflated), run when a sphere/capsule is involved or the margin is positive
  # pass 1: penetration on the full, margin-inflated shapes (intersection mode)
  passes = GjkPass(
    code1=jnp.stack([core1, code1]).astype(jnp.int32),
    code2=jnp.stack([core2, code2]).astype(jnp.int32),
    half1=jnp.stack([zero, half]),
    half2=jnp.stack([zero, half]),
    discrete=jnp.stack([disc, disc & (margin == 0)]),
    get_dist=jnp.array([True, False]),
    cutoff=jnp.stack([fm1 + fm2, zero]),
  )
  # static codes the same in both passes (no sphere or capsule) stay static in the search
  same = _fixed(core1, code1), _fixed(core2, code2)
  dist_k, x1_k, x2_k, n_k, simplex_k, lam_k, none_k = jax.vmap(
    lambda pp: gjk(pp._replace(code1=_or(same[0], pp.code1), code2=_or(same[1], pp.code2)), g1,
                   g2, verts1, verts2, iterations, tolerance, guard, noise))(passes)

  use_core = has_core | (margin > 0)
  cdist, cx1, cx2, cnone = dist_k[0], x1_k[0], x2_k[0], none_k[0]
  nvec = normalize3(cx2 - cx1, guard)
  sx1 = cx1 + fm1 * nvec
  sx2 = cx2 - fm2 * nvec
  sdist = jnp.where(cnone, big, cdist - (fm1 + fm2))
  shallow = use_core & (cnone | (cdist > tolerance))

  full = pair_support(code1, g1, verts1, half, code2, g2, verts2, half, guard)
  gsimplex = tree_get(simplex_k, 1)
  near = dist_k[1] <= tolerance
  if noise is not None:
    # float32: GJK may end a few rounding units short of enclosing the origin (a face of its
    # last tetrahedron within noise of it), or stall on a support tie (a flat face met
    # head-on: the sign of its iterate's tiny transverse part is rounding, so it keeps
    # picking the same corner): EPA decides whenever the support opposite GJK's last
    # iterate does not prove the shapes apart
    xk = x1_k[1] - x2_k[1]
    unproven = dot(xk, full(-normalize3(xk, guard)).vert, guard) <= 0
    near = near | (dist_k[1] <= 4 * noise) | unproven
  run_epa = ~none_k[1] & near & (n_k[1] > 1)
  pverts, pnverts, pfaces, padj, pnfaces, pcenter, pok = polytope(full, gsimplex, n_k[1],
                                                                  tolerance, guard, noise)
  found, fidx, everts, fv, fd2 = epa(full, pverts, pnverts, pfaces, padj, pnfaces, pcenter,
                                     iterations, tolerance, disc & (margin == 0), guard, noise,
                                     active=run_epa)
  deep = ~shallow & run_epa & pok & found
  tri = tree_get(everts, fidx)
  lam = tri_affine(tri.vert[0], tri.vert[1], tri.vert[2], fv, guard)
  ex1 = (mul(tri.vert1[0], lam[0], guard) + mul(tri.vert1[1], lam[1], guard)
         + mul(tri.vert1[2], lam[2], guard))
  ex2 = (mul(tri.vert2[0], lam[0], guard) + mul(tri.vert2[1], lam[1], guard)
         + mul(tri.vert2[2], lam[2], guard))
  edist = -jnp.sqrt(jnp.maximum(fd2, 0.0))

  dist = jnp.where(shallow, jnp.where(sdist > 0, big, sdist), jnp.where(deep, edist, big))
  x1 = jnp.where(shallow, sx1, ex1)
  x2 = jnp.where(shallow, sx2, ex2)
  return _Plan(shallow, deep, dist, x1, x2, simplex_k.dir[0], n_k[0], lam_k[0], tri.dir)


def _fixed(core, code):
  """The code where it is static and the core's too (a geom with no core), else None."""
  return code if isinstance(code, int) and core == code else None


def _or(static, traced):
  return traced if static is None else static


def _surrogate(plan: _Plan, code1, code2, g1, g2, verts1, verts2, margin):
  """mjc_ccd's (dist, x1, x2) recomputed smoothly from the plan: the functions whose gradients
  `contact_from_plan` reports (its values are the plan's).

  dist is the gap of the two shapes along the plan's contact normal u (held fixed):
  -u . (S_1(u) - S_2(-u)), with the cores' supports minus the radii and margin/2 when the
  cores are apart, and the inflated shapes' supports for a penetration. At the exact normal
  this IS the signed distance, and by the envelope theorem its gradient is the distance's
  gradient (translation: -+u, sphere radius: -1, margin: 0); at the search's normal it differs
  from the reported distance by the search's error (GJK ~1e-10, EPA its last face's gap).
  x1, x2 are the witness points through the final GJK simplex / EPA face (barycentric
  weights recomputed), for the gradient of the contact position.
  """
  half, _, core1, core2, fm1, fm2, _ = _codes(code1, code2, g1, g2, margin)
  u = lax.stop_gradient(normalize3(plan.x1 - plan.x2, None))

  # supports: final GJK simplex (cores, rows 0-3), EPA face (rows 4-6), and along u (row 7)
  dirs = jnp.concatenate([plan.core_dirs, plan.face_dirs, u[None]])
  row = jnp.arange(8)
  full_row = (row >= 4) & ((row < 7) | ~plan.shallow)
  c1 = jnp.where(full_row, code1, core1)
  c2 = jnp.where(full_row, code2, core2)
  hh = jnp.where(full_row, half, 0.0)
  same = _fixed(core1, code1), _fixed(core2, code2)
  allv = jax.vmap(lambda d, a, b, h: pair_support(_or(same[0], a), g1, verts1, h, _or(same[1], b),
                                                  g2, verts2, h, None)(d))(dirs, c1, c2, hh)
  cv = tree_get(allv, jnp.arange(4))
  tv = tree_get(allv, jnp.arange(4, 7))
  gap = -dot(u, allv.vert[7], None)
  dist = jnp.where(plan.shallow, gap - (fm1 + fm2), gap)

  # shallow: the origin's projection on the final GJK simplex (all weights positive after
  # GJK's pruning), pushed out by the radii and margin/2; an empty simplex (GJK stopped at
  # its first check, e.g. two points) keeps the centres
  l2 = s1d(cv.vert[0], cv.vert[1], None)
  p3, _ = project_origin_plane(cv.vert[0], cv.vert[1], cv.vert[2], None)
  l3 = tri_affine(cv.vert[0], cv.vert[1], cv.vert[2], p3, None)
  z = jnp.zeros_like(l2[:1])
  lam = jnp.where(plan.core_n == 3, jnp.concatenate([l3, z]),
                  jnp.where(plan.core_n == 2, jnp.concatenate([l2, z, z]),
                            jnp.concatenate([z + 1, z, z, z])))
  cx1 = jnp.where(plan.core_n > 0, lincomb(lam, plan.core_n, cv.vert1, None), g1.pos)
  cx2 = jnp.where(plan.core_n > 0, lincomb(lam, plan.core_n, cv.vert2, None), g2.pos)
  nvec = normalize3(cx2 - cx1, None)
  sx1 = cx1 + fm1 * nvec
  sx2 = cx2 - fm2 * nvec

  # deep: witness points through the EPA face
  fv, _ = project_origin_plane(tv.vert[2], tv.vert[1], tv.vert[0], None)
  lamf = tri_affine(tv.vert[0], tv.vert[1], tv.vert[2], fv, None)
  ex1 = tv.vert1[0] * lamf[0] + tv.vert1[1] * lamf[1] + tv.vert1[2] * lamf[2]
  ex2 = tv.vert2[0] * lamf[0] + tv.vert2[1] * lamf[1] + tv.vert2[2] * lamf[2]

  used = plan.shallow | plan.deep
  dist = jnp.where(used, dist, jnp.zeros_like(dist))
  x1 = jnp.where(plan.shallow, sx1, ex1)
  x2 = jnp.where(plan.shallow, sx2, ex2)
  return dist, x1, x2


def _ccd_recompute(plan: _Plan, code1, code2, g1, g2, verts1, verts2, margin):
  """mjc_ccd's (dist, x1, x2): the plan's values, with the surrogate's gradient."""
  dist, x1, x2 = _surrogate(plan, code1, code2, g1, g2, verts1, verts2, margin)
  fwd_dist = jnp.where(plan.shallow | plan.deep, plan.dist, jnp.zeros_like(dist))

  def st(re, fw):  # forward value of the search, gradient of the recomputation
    return re + lax.stop_gradient(fw - re)

  return st(dist, fwd_dist), st(x1, plan.x1), st(x2, plan.x2)


def type_codes(type1, type2):
  """The pair's codes: Python ints where both types are (the search and the contact then
  compile for that pair type alone), else int32 arrays (one program for every type)."""
  if isinstance(type1, int) and isinstance(type2, int):
    return int(type1), int(type2)
  return jnp.asarray(type1, jnp.int32), jnp.asarray(type2, jnp.int32)


def _prepare(type1, type2, g1, g2, margin, tolerance, verts1, verts2):
  dtype = jnp.result_type(g1.pos, g2.pos, float)
  g1 = GeomFrame(*(jnp.asarray(x, dtype) for x in g1))
  g2 = GeomFrame(*(jnp.asarray(x, dtype) for x in g2))
  g1 = g1._replace(mat=g1.mat.reshape(3, 3))
  g2 = g2._replace(mat=g2.mat.reshape(3, 3))
  return (*type_codes(type1, type2), g1, g2,
          jnp.asarray(margin, dtype), jnp.asarray(tolerance, dtype),
          None if verts1 is None else jnp.asarray(verts1, dtype),
          None if verts2 is None else jnp.asarray(verts2, dtype))


def convex_plan(type1, type2, g1: GeomFrame, g2: GeomFrame, margin, tolerance=1e-6, *,
                iterations: int = 35, verts1=None, verts2=None):
  """First stage of `collide_convex`: the GJK/EPA search, on stop-gradient inputs.

  Returns an opaque pytree (fixed shapes) for `contact_from_plan`. This stage holds all the
  loops and most of the compile time; it has no gradient.
  """
  args = _prepare(type1, type2, g1, g2, margin, tolerance, verts1, verts2)
  # stop the gradient before entering the jitted search: its tangents are then symbolic zeros
  # and a top-level jax.grad reuses the compiled search instead of recompiling it
  codes, rest = args[:2], jax.tree.map(lax.stop_gradient, args[2:])
  if isinstance(codes[0], int):
    return _plan_static(*codes, *rest, iterations=iterations)
  return _plan_jit(*codes, *rest, iterations=iterations)


def traced_types_search(tolerance, iterations: int):
  """convex_plan as a search over per-pair arguments (a, b, margin, type1, type2[, verts1,
  verts2]) with the geom types traced (cull.near_only's `search`): the heightfield prisms'
  search, alone or merged with the convex group's."""

  def search(a, b, margin, type1, type2, verts1=None, verts2=None):
    return convex_plan(type1, type2, a, b, margin, tolerance, iterations=iterations,
                       verts1=verts1, verts2=verts2)

  return search


def _plan(code1, code2, g1, g2, margin, tolerance, verts1, verts2, *, iterations):
  d = g1.pos - g2.pos
  # a zero the compiler cannot fold (a sum of squares of traced data is never negative)
  guard = math.opaque_zero(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
  return _ccd_plan(code1, code2, g1, g2, verts1, verts2, margin, iterations, tolerance, guard)


_plan_jit = jax.jit(_plan, static_argnames=("iterations",))
_plan_static = jax.jit(_plan, static_argnames=("code1", "code2", "iterations"))


def contact_from_plan(plan, type1, type2, g1: GeomFrame, g2: GeomFrame, margin, *, verts1=None,
                      verts2=None):
  """Second stage of `collide_convex`: (dist, pos, frame) of the contact, differentiable in
  the geoms and the margin with the plan's combinatorics held fixed. Values are the plan's."""
  code1, code2, g1, g2, margin, _, verts1, verts2 = _prepare(
    type1, type2, g1, g2, margin, 0.0, verts1, verts2)
  dtype = g1.pos.dtype
  valid = (plan.shallow | plan.deep) & (plan.dist < 0)
  dist, x1, x2 = _ccd_recompute(plan, code1, code2, g1, g2, verts1, verts2, margin)
  normal = normalize3(x1 - x2, None)
  pos = (x1 + x2) * 0.5
  frame = make_frame(normal)
  dist = jnp.where(valid, margin + dist, NO_CONTACT_DIST)
  pos = jnp.where(valid, pos, 0.0)
  frame = jnp.where(valid, frame, jnp.eye(3, dtype=dtype))
  return dist, pos, frame


def collide_convex(type1, type2, g1: GeomFrame, g2: GeomFrame, margin, tolerance=1e-6, *,
                   iterations: int = 35, verts1=None, verts2=None):
  """MuJoCo's first convex contact for one pair: (dist (), pos (3,), frame (3, 3)).

  type1, type2: GeomType values, Python ints or traced int arrays, so that one compiled
  function (vmapped by the driver) serves every convex pair type at once. dist = 1e10 and an
  identity frame when there is no contact. margin: the pair margin (geom margins summed).
  tolerance: opt.ccd_tolerance (may be traced); iterations: opt.ccd_iterations (static).
  verts1 / verts2: (V, 3) mesh vertices in the geom frame, required when the corresponding
  type is GeomType.MESH (otherwise leave None).
  """
  plan = convex_plan(type1, type2, g1, g2, margin, tolerance, iterations=iterations,
                     verts1=verts1, verts2=verts2)
  return contact_from_plan(plan, type1, type2, g1, g2, margin, verts1=verts1, verts2=verts2)


def convex_collider(
  type1: GeomType, type2: GeomType, n: int = 1, iterations: int = 35
) -> Callable[..., tuple[jax.Array, jax.Array, jax.Array]]:
  """Collision function for one pair of convex geoms of the given (static) types.

  Returns fn(g1, g2, margin, tolerance=1e-6, verts1=None, verts2=None) -> (dist (n,),
  pos (n, 3), frame (n, 3, 3)). `iterations` is opt.ccd_iterations (static: it sizes the
  loops and the EPA polytope); `tolerance` is opt.ccd_tolerance and may be traced. Only the
  first slot can hold a contact (see CONVEX_PAIRS); the others always read dist = 1e10.
  """
  for t in (type1, type2):
    if GeomType(t) not in _CONVEX_TYPES:
      raise ValueError(f"no convex support function for geom type {GeomType(t)!r}")
  if n < 1:
    raise ValueError("n must be at least 1")
  if iterations < 1:
    raise ValueError("iterations must be at least 1")
  t1, t2 = int(type1), int(type2)

  def collide(g1: GeomFrame, g2: GeomFrame, margin, tolerance=1e-6, verts1=None, verts2=None):
    if (t1 == MESH and verts1 is None) or (t2 == MESH and verts2 is None):
      raise ValueError("mesh geoms need their vertex array (verts1 / verts2)")
    dist, pos, frame = collide_convex(t1, t2, g1, g2, margin, tolerance, iterations=iterations,
                                      verts1=verts1, verts2=verts2)
    dtype = dist.dtype
    pad = n - 1
    dist = jnp.concatenate([dist[None], jnp.full((pad,), NO_CONTACT_DIST, dtype)])
    pos = jnp.concatenate([pos[None], jnp.zeros((pad, 3), dtype)])
    frame = jnp.concatenate([frame[None], jnp.broadcast_to(jnp.eye(3, dtype=dtype),
                                                           (pad, 3, 3))])
    return dist, pos, frame

  return collide
