"""Joint-space inertia: composite rigid bodies (mj_crb), L'DL factorization and solves.

The factorization follows MuJoCo's tree-sparse L'DL (M = L' D L, L unit lower triangular
with nonzeros only at dof-tree ancestors, so no fill-in). Every dof at one depth of the dof
tree is eliminated at once: the graph grows with the depth of the tree, not with nv, and
there is no batched LAPACK call (which deadlocked under vmap on XLA:CPU for MJX's dense
Cholesky).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.constants import MINVAL
from jaxmj.data import count_warning
from jaxmj.loops import kept
from jaxmj.platform import by_platform
from jaxmj.scan import body_plan, cached_plan, levels
from jaxmj.smooth import armature, com, forest
from jaxmj.types import Data, Model, Warning

# Trees up to this many dof levels factor and solve level by level in straight-line code
# (`factor`, `solve_ld`); deeper trees run one lax.scan trip per level on a padded working
# matrix (`_factor_scan`, `_solve_scan`), which keeps their compile time bounded.
LEVELS_UNROLL_MAX = 16


@cached_plan
def _ld_plan(m) -> dict:
  """`_ld_plan_of` m's whole dof forest."""
  return _ld_plan_of(np.asarray(m.dof_ancestor, bool), np.asarray(m.dof_depth))


def _group_plan(g: forest.Group) -> dict:
  """`_ld_plan_of` one tree of a forest group (cached by its structure)."""
  return _tree_plan(g.ancestor.tobytes(), np.asarray(g.depth, np.int64).tobytes())


@functools.lru_cache(maxsize=64)
def _tree_plan(ancestor: bytes, depth: bytes) -> dict:
  depth = np.frombuffer(depth, np.int64)
  return _ld_plan_of(np.frombuffer(ancestor, bool).reshape(len(depth), len(depth)), depth)


def _ld_plan_of(anc: np.ndarray, depth: np.ndarray) -> dict:
  """Static index sets of the tree-sparse L'DL factorization and solve of the dofs of
  dof_ancestor `anc` (nv, nv) bool and dof_depth `depth` (nv,).

  For `factor`: dof levels deepest first (`levels`), each level's rows contiguous in a
  working state of (nv, w + 1) rows ordered that way (`starts`, `row` maps a dof to its
  state row); row i holds its entries in path coordinates, column q for the ancestor
  `paths[i][q]` at depth q (w = tree depth + 1), then 1/D. `below[l]` (r, starts[l]) marks
  the deeper state rows that descend from each dof of level l.
  Trees deeper than LEVELS_UNROLL_MAX levels get `scan` (`_scan_plan`) instead.
  `ancestor` is anc.
  """
  nv = len(depth)
  by_level = levels(depth)[::-1]
  order = np.concatenate(by_level) if nv else np.zeros(0, int)
  row = np.empty(nv, int)
  row[order] = np.arange(nv)
  starts = np.cumsum([0] + [len(ks) for ks in by_level])
  below = [anc[order[:starts[l]]][:, ks].T for l, ks in enumerate(by_level)]
  paths = [np.flatnonzero(anc[i]) for i in range(nv)]
  w = int(depth.max()) + 1 if nv else 0
  # take_m (nv, w): a static gather (index nv * nv: a zero appended) of M's entries of each
  # state row in path coordinates; put_ld (w, nv, nv): where ld's entry of each dof row at
  # path position q goes; strict (nv, w) the state entries left of the diagonal
  take_m = np.full((nv, w), nv * nv)
  put_ld = np.zeros((w, nv, nv), bool)
  strict = np.zeros((nv, w), bool)
  for i, path in enumerate(paths):
    take_m[row[i], :len(path)] = i * nv + path
    put_ld[np.arange(len(path)), i, path] = True
    strict[row[i], :len(path) - 1] = True
  return {"levels": by_level, "starts": starts, "row": row, "below": below, "paths": paths,
          "width": w, "take_m": take_m, "put_ld": put_ld, "strict": strict,
          "ancestor": anc, "scan": _scan_plan(anc, depth) if len(by_level) > LEVELS_UNROLL_MAX
          else None}


def _scan_plan(anc: np.ndarray, depth: np.ndarray) -> dict:
  """Deep trees (`_factor_scan`, `_solve_scan`): static index arrays per dof level
  (deepest first), padded to one width for lax.scan.

  pair_k, pair_i: (dof k, strict ancestor i); upd_k, upd_i, upd_j: (dof k, ancestors
  i >= j) for the rank-one update of the ancestor block. Padding uses two extra slots of
  the working matrix: ONE = nv (its diagonal is 1 and is never written) as k, and
  SINK = nv + 1 (written, never divided by) as i, j, so padded entries are exact zeros.
  """
  nv = len(depth)
  anc = anc & ~np.eye(nv, dtype=bool)
  one, sink = nv, nv + 1
  pairs, upds = [], []
  for ks in reversed(levels(depth, start=1)):
    pk, pi, uk, ui, uj = [], [], [], [], []
    for k in ks:
      a = np.flatnonzero(anc[k])
      pk += [k] * len(a)
      pi += list(a)
      for p, i in enumerate(a):
        uk += [k] * (p + 1)
        ui += [i] * (p + 1)
        uj += list(a[: p + 1])
    pairs.append((pk, pi))
    upds.append((uk, ui, uj))

  def pad(rows, fill):
    width = max((len(r[0]) for r in rows), default=0)
    return [np.array([list(r[c]) + [fill[c]] * (width - len(r[c])) for r in rows], np.int32)
            .reshape(len(rows), width) for c in range(len(fill))]

  pair_k, pair_i = pad(pairs, (one, sink))
  upd_k, upd_i, upd_j = pad(upds, (one, sink, sink))
  return {"pair_k": pair_k, "pair_i": pair_i, "upd_k": upd_k, "upd_i": upd_i, "upd_j": upd_j}


def _padded(mat: jnp.ndarray) -> jnp.ndarray:
  """mat in an (nv + 2)^2 working matrix with the ONE slot's diagonal set to 1."""
  nv = mat.shape[0]
  out = jnp.zeros((nv + 2, nv + 2), mat.dtype).at[:nv, :nv].set(mat)
  return out.at[nv, nv].set(1.0)


@jax.custom_jvp
def _dot6(a: jnp.ndarray, b: jnp.ndarray, z) -> jnp.ndarray:
  """(n, n) a_i . b_j of rows a, b (n, 6), each as mji_dot6 sums it, products rounded on
  their own (z: `math.nofma`); derivatives by products (a tangent needs no order)."""
  return math.dot6_nofma(a[:, None, :], b[None, :, :], z)


@_dot6.defjvp
def _dot6_jvp(primals, tangents):
  (a, b, z), (da, db, _) = primals, tangents
  return _dot6(a, b, z), da @ b.T + a @ db.T


def crb(m: Model, d: Data) -> Data:
  """mj_crb and mj_tendonArmature: composite inertias and the joint-space inertia qM, with
  dof, actuator and tendon armature (jaxmj/smooth/armature.py).

  Reads cinert, cdof, ten_J. Writes crb, qM (dense, symmetric).
  """
  z = math.opaque_zero(d.time * d.time) if m.opt.exact else None
  # The world accumulates nothing in MuJoCo: its row stays its own (zero) cinert.
  crb_ = com.subtree_sum(m, d.cinert, world=False)
  # (nv, 6): crb of the dof's body times cdof
  force = (math.inert_mul(crb_[m.dof_bodyid], d.cdof) if z is None else
           math.inert_mul_nofma(crb_[m.dof_bodyid], d.cdof, z))
  # [i, j] is qM's entry where j is i or an ancestor of i
  fc = force @ d.cdof.T if z is None else _dot6(force, d.cdof, z)
  # qM mirrored from its lower part in one select (no lower + lower' - diag pass over qM)
  strict = np.asarray(m.dof_ancestor, bool) & ~np.eye(m.nv, dtype=bool)
  qm = jnp.where(strict, fc, jnp.where(strict.T, fc.T, 0.0))
  qm = jnp.where(np.eye(m.nv, dtype=bool), fc + m.dof_armature, qm)
  qm = armature.add_inertia(m, d, qm)  # actuators' and tendons' (mj_tendonArmature)
  return d.replace(crb=crb_, qM=qm)


def factor_m(m: Model, d: Data) -> Data:
  """mj_factorM: qLD and qLDiagInv from qM. A pivot below MINVAL (a singular inertia, e.g.
  three slide joints in a plane) is raised to MINVAL, as MuJoCo 4.0 does, and the call
  counts Warning.INERTIA once."""
  qld, diag_inv = factor(m, d.qM)
  if not m.nv:
    return d.replace(qLD=qld, qLDiagInv=diag_inv)
  singular = jnp.any(jax.lax.stop_gradient(diag_inv) == 1.0 / jnp.asarray(MINVAL, qld.dtype))
  return d.replace(qLD=qld, qLDiagInv=diag_inv,
                   warning=count_warning(d.warning, Warning.INERTIA, singular))


def _pivot_column(u: jnp.ndarray, depth: int) -> jnp.ndarray:
  """A level's U rows (rows, depth + 1) with their diagonal (column `depth`) as _pivot: one
  elementwise select, which fuses into the row update."""
  low = (np.arange(u.shape[1]) == depth) & (u < MINVAL)
  return jnp.where(low, jnp.asarray(MINVAL, u.dtype), u)


def _pivot(u: jnp.ndarray) -> jnp.ndarray:
  """mj_factorI's pivot: u, or MINVAL where u is below it (MuJoCo 4.0, probed: a singular
  inertia gets D = 1e-15 and qacc 0 along its null space, not a division by zero)."""
  return jnp.where(u < MINVAL, jnp.asarray(MINVAL, u.dtype), u)


def factor(m: Model, mat: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
  """Tree-sparse L'DL of a matrix with qM's sparsity (e.g. qM + h*diag(damping)).

  Returns (ld, diag_inv): ld holds D on the diagonal and L strictly below it (dense
  storage, nonzero only at ancestor entries); diag_inv = 1 / D. Only mat's entries at
  ancestor pairs below the diagonal are read (the matrix is their symmetric completion).
  Derivatives are the closed form at the primal factor (see _factor_tangent), not those of
  the elimination.
  """

  @jax.custom_jvp
  def fac(mat):
    return _eliminate(m, mat)

  @fac.defjvp
  def fac_jvp(primals, tangents):
    # kept: the tangent reads the factor, which rematerializing reverse mode would otherwise
    # reassemble row by row from the levels' products (loops.kept)
    ld, diag_inv = kept(_eliminate(m, primals[0]))
    return (ld, diag_inv), _factor_tangent(m, ld, diag_inv, tangents[0])

  return fac(mat) if m.nv else _eliminate(m, mat)


def _eliminate(m: Model, mat: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
  """factor's arithmetic.

  Left-looking, one dof level at a time, deepest first: a row i of the level is final once
  every descendant k has been subtracted, U_i = M_i - sum_k L_ki U_k (U: rows before
  scaling, L_ki = U_ki / D_k, as mj_factorI forms them), all rows of a level in one matrix
  product with the deeper rows. Rows are kept in path coordinates (their ancestors' entries
  only, root first), so the ancestors of any deeper row k share row i's first entries.
  Each term is mj_factorI's product; the sums run in the product's order, not MuJoCo's
  (round-off). One product and one write of the new rows per level (`_put_rows`); M's
  entries are read by one static gather (a gather of batched data costs XLA:CPU a pass
  over the whole batch, a kernel per row, slices and concatenates, more compile time: on
  MJX's humanoid 1.8 s instead of 0.9 s of XLA's compile CPU time, and a slower run), ld's
  placed by one select per path position. Off the CPU the levels run as `_levels_reduce`.
  Where m's dofs form a forest (`forest.plan`), each group of trees of one structure runs
  the levels of one tree, vmapped over the group (`_forest_rows`): the same products less
  the other trees' zeros.
  """
  nv = m.nv
  if not nv:
    return mat, jnp.zeros(0, mat.dtype)
  plan = _ld_plan(m)
  if plan["scan"] is not None:
    return _factor_scan(plan, mat)
  f = forest.plan(m)
  if f is None:
    m_rows = jnp.append(mat.reshape(-1), 0.0)[plan["take_m"]]
    rows, diag_inv = _ld_rows(plan, by_platform(
      m_rows, cpu=lambda m_rows: _levels_cpu(plan, m_rows),
      default=lambda m_rows: _levels_reduce(plan, m_rows)))
  else:
    rows, diag_inv = _forest_rows(f, plan["width"], mat)
  # each path position of ld's rows placed by a select: an elementwise kernel that writes
  # the dense (nv, nv) matrix in the layout its readers take, where a static gather wrote it
  # batch-minor and the step's output copied it back (04_humanoids, nv 108, 256 worlds: a
  # 12 MB transposing copy each step)
  dense = jnp.zeros((nv, nv), rows.dtype)
  for q, at in enumerate(plan["put_ld"]):
    dense = jnp.where(at, rows[:, q:q + 1], dense)
  return dense, diag_inv


def _ld_rows(plan: dict, state: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
  """ld's rows in path coordinates (nv, w), in dof order, and diag_inv (nv,) from the
  levels' state (nv, w + 1): L = U / D left of each row's diagonal, D on it."""
  w = plan["width"]
  ld = jnp.where(plan["strict"], state[:, :w] * state[:, w:], state[:, :w])
  return ld[plan["row"]], state[plan["row"], w]


def _forest_rows(f: forest.Forest, width: int,
                 mat: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
  """`_ld_rows` of mat (nv, nv) by tree: each group's trees read their M rows from mat by one
  static gather (k, n, w_g), run one tree's levels vmapped over the k trees, and their rows
  (padded to the forest's path width) are laid back in dof order."""
  nv = mat.shape[0]
  flat = jnp.append(mat.reshape(-1), 0.0)
  rows, diag_inv = [], []
  for g in f.groups:
    plan = _group_plan(g)
    n, a = len(g.depth), g.idx[:, :1, None]
    take = plan["take_m"][None]  # the tree's flat indices i * n + j (n * n: the zero)
    take = np.where(take < n * n, (a + take // n) * nv + a + take % n, nv * nv)
    r, di = jax.vmap(lambda m_rows, plan=plan: _ld_rows(plan, _levels_cpu(plan, m_rows)))(
      flat[take])
    rows.append(jnp.pad(r, ((0, 0), (0, 0), (0, width - r.shape[-1]))))
    diag_inv.append(di)
  return forest.put(f, rows), forest.put(f, diag_inv)


def _levels_cpu(plan: dict, m_rows: jnp.ndarray) -> jnp.ndarray:
  """_eliminate's levels on the CPU: (nv, w + 1) state rows [U in path coordinates | 1 / D]
  from M's rows m_rows (nv, w), each level's rows one matrix product with the deeper rows,
  written into one state (`_put_rows`). plan: `_ld_plan_of`."""
  w, starts, paths = plan["width"], plan["starts"], plan["paths"]
  state = jnp.zeros((len(paths), w + 1), m_rows.dtype)  # U in path coordinates | 1 / D
  for lv, ks in enumerate(plan["levels"]):
    depth, s0, s1 = len(paths[ks[0]]) - 1, starts[lv], starts[lv + 1]
    u = m_rows[s0:s1, :depth + 1]
    if s0:
      l_k = state[:s0, depth] * state[:s0, w]  # L[k, i] of each deeper row k, i at this depth
      u = u - jnp.where(plan["below"][lv], l_k[None, :], 0.0) @ state[:s0, :depth + 1]
    u = _pivot_column(u, depth)
    new = jnp.concatenate([u, jnp.zeros((s1 - s0, w - 1 - depth), u.dtype),
                           1.0 / u[:, depth:]], axis=1)
    state = _put_rows(state, new, s0)
  return state


def _levels_reduce(plan: dict, m_rows: jnp.ndarray) -> jnp.ndarray:
  """_levels_cpu off the CPU: each level's sum over the deeper rows as, per deeper level, a
  broadcast product and a reduction (no GEMM, no concatenate), with no state written in
  place, so that a GPU runs a level as one kernel where the masked product and the row
  update took three (H200 target, batch 8192, MJX's humanoid: mj_factorM 35 -> 16
  kernels). The sums run in the reduction's order, not the product's (round-off)."""
  w, starts, paths = plan["width"], plan["starts"], plan["paths"]
  us, inv = [], []  # each level's U rows (rows, depth + 1) and 1 / D (rows,)
  for lv, ks in enumerate(plan["levels"]):
    depth, s0, s1 = len(paths[ks[0]]) - 1, starts[lv], starts[lv + 1]
    u = m_rows[s0:s1, :depth + 1]
    for lk, (x, r) in enumerate(zip(us, inv)):
      below = plan["below"][lv][:, starts[lk]:starts[lk + 1]]  # (rows, rows of level lk)
      if below.any():
        l_k = x[:, depth] * r  # L[k, i] of level lk's rows k, i at this depth
        u = u - jnp.sum(jnp.where(below[:, :, None], (l_k[:, None] * x[:, :depth + 1])[None],
                                  0.0), axis=1)
    u = _pivot_column(u, depth)
    us.append(u)
    inv.append(1.0 / u[:, depth])
  return jnp.concatenate([jnp.concatenate([u, jnp.zeros((len(u), w - u.shape[1]), u.dtype),
                                           r[:, None]], axis=1) for u, r in zip(us, inv)])


def _put_rows(state: jnp.ndarray, new: jnp.ndarray, s0: int) -> jnp.ndarray:
  """state with rows [s0, s0 + len(new)) replaced by new, as a select: XLA:CPU fuses a
  one-row dynamic_update_slice into the next level's slice of the state too, so that the
  state was copied and the row's division and concatenate ran as kernels of their own (MJX's
  humanoid: `factor` 75 -> 57 kernels)."""
  rows = (np.arange(len(state)) >= s0) & (np.arange(len(state)) < s0 + len(new))
  return jnp.where(rows[:, None], jnp.pad(new, ((s0, len(state) - s0 - len(new)), (0, 0))), state)


def _factor_scan(plan: dict, mat: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
  """`factor` for deep trees: one lax.scan step per dof level, deepest first, on a padded
  dense working matrix (right-looking rank-one updates of each dof's ancestor block)."""
  nv = mat.shape[0]
  a = _padded(jnp.where(plan["ancestor"], mat, 0.0))
  plan = plan["scan"]

  def level(a, idx):
    pk, pi, uk, ui, uj = idx
    a = a.at[ui, uj].add(-a[uk, ui] * a[uk, uj] / _pivot(a[uk, uk]))
    return a.at[pk, pi].set(a[pk, pi] / _pivot(a[pk, pk])), None

  if len(plan["pair_k"]):
    xs = tuple(plan[k] for k in ("pair_k", "pair_i", "upd_k", "upd_i", "upd_j"))
    a, _ = jax.lax.scan(level, a, xs)
  ld = a[:nv, :nv]
  d = _pivot(jnp.diag(ld))
  return ld.at[np.diag_indices(nv)].set(d), 1.0 / d


def _solve_scan(plan: dict, qld: jnp.ndarray, diag_inv: jnp.ndarray,
                x: jnp.ndarray) -> jnp.ndarray:
  """`solve_ld` for deep trees: one lax.scan step per dof level and pass."""
  plan = plan["scan"]
  if not len(plan["pair_k"]):
    return x * diag_inv
  nv = x.shape[0]
  ld = _padded(qld)
  x = jnp.zeros(nv + 2, x.dtype).at[:nv].set(x)

  def up(x, idx):  # L' y = x, deepest dofs first
    k, i = idx
    return x.at[i].add(-ld[k, i] * x[k]), None

  def down(x, idx):  # L z = y, root dofs first
    k, i = idx
    return x.at[k].add(-ld[k, i] * x[i]), None

  idx = (plan["pair_k"], plan["pair_i"])
  x, _ = jax.lax.scan(up, x, idx)
  x = x.at[:nv].multiply(diag_inv)
  x, _ = jax.lax.scan(down, x, idx, reverse=True)
  return x[:nv]


def _symmetric(m: Model, mat: jnp.ndarray) -> jnp.ndarray:
  """The symmetric matrix factor reads from mat: its ancestor entries below the diagonal."""
  low = jnp.where(m.dof_ancestor, mat, 0.0)
  return low + low.T - jnp.diag(jnp.diag(low))


def _unit_lower(m: Model, ld: jnp.ndarray) -> jnp.ndarray:
  """L (unit lower triangular, ancestor entries) from ld's storage."""
  strict = np.asarray(m.dof_ancestor) & ~np.eye(m.nv, dtype=bool)
  return jnp.where(strict, ld, 0.0) + jnp.eye(m.nv, dtype=ld.dtype)


def _factor_tangent(m: Model, ld, diag_inv, dmat) -> tuple[jnp.ndarray, jnp.ndarray]:
  """(d ld, d diag_inv) of M = L' D L for dM (mat's tangent), at the primal factor.

  With X = L^-T dM L^-1 = dD + D W + W' D, where W = dL L^-1 is strictly lower: dD =
  diag(X), dL = D^-1 strict_lower(X) L. L^-1 = M^-1 L' D comes from nv solves with the
  primal factor, once (no tangent in it); each tangent is then three dense products
  (humanoid, 32 tangents at batch 64: 1.1 ms/state of CPU against 3.2 for the
  elimination's own derivative and 21 for two solves per column). Linear in dmat.
  """
  lower = _unit_lower(m, ld)
  minv = jax.vmap(lambda v: _solve_sweeps(m, ld, diag_inv, v))(jnp.eye(m.nv, dtype=ld.dtype))
  lower_inv = minv @ (lower.T * jnp.diag(ld)[None, :])
  x = lower_inv.T @ _symmetric(m, dmat) @ lower_inv
  d_diag = jnp.diag(x)
  strict = np.asarray(m.dof_ancestor) & ~np.eye(m.nv, dtype=bool)
  d_lower = jnp.where(strict, (jnp.tril(x, -1) * diag_inv[:, None]) @ lower, 0.0)
  return d_lower + jnp.diag(d_diag), -d_diag * diag_inv ** 2


def solve_ld(m: Model, qld: jnp.ndarray, diag_inv: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
  """x -> M^-1 x for M = L' D L given as (qld, diag_inv) (mj_solveLD). x: (nv,).

  Reads qld's ancestor entries below the diagonal (L) and diag_inv (D^-1). Derivatives at
  the primal factor: dx = M^-1 (db - dM x), dM from (dL, dD) by matrix-vector products.
  """

  @jax.custom_jvp
  def solve(qld, diag_inv, x):
    return _solve_sweeps(m, qld, diag_inv, x)

  @solve.defjvp
  def solve_jvp(primals, tangents):
    qld, diag_inv, b = primals
    dqld, ddiag_inv, db = tangents
    x = kept(_solve_sweeps(m, qld, diag_inv, b))  # see solve_factored
    lower, d_lower = _unit_lower(m, qld), _unit_lower(m, dqld) - jnp.eye(m.nv, dtype=x.dtype)
    lx, d = lower @ x, 1.0 / diag_inv
    dd = -ddiag_inv * d * d
    dm_x = d_lower.T @ (d * lx) + lower.T @ (dd * lx + d * (d_lower @ x))
    return x, solve_tangent(m, qld, diag_inv, db - dm_x)

  return solve(qld, diag_inv, x) if m.nv else x * diag_inv


def solve_factored(m: Model, mat: jnp.ndarray, qld: jnp.ndarray, diag_inv: jnp.ndarray,
                   x: jnp.ndarray) -> jnp.ndarray:
  """x -> mat^-1 x with (qld, diag_inv) = factor(m, mat), differentiated as a function of
  mat and x: dx = mat^-1 (db - dmat x), one solve with the primal factor per tangent.

  The tangents of qld and diag_inv are not read: they must be factor's of mat (as
  mj_factorM leaves qLD for qM), so that this is the derivative along them. x: (nv,).
  """

  @jax.custom_jvp
  def solve(mat, qld, diag_inv, x):
    return _solve_sweeps(m, qld, diag_inv, x)

  @solve.defjvp
  def solve_jvp(primals, tangents):
    mat, qld, diag_inv, b = primals
    dmat, _, _, db = tangents
    # kept: the tangent reads x, which rematerializing reverse mode would rebuild from every
    # level's product of the sweeps (loops.kept)
    x = kept(_solve_sweeps(m, qld, diag_inv, b))
    return x, solve_tangent(m, qld, diag_inv, db - _symmetric(m, dmat) @ x)

  return solve(mat, qld, diag_inv, x) if m.nv else x * diag_inv


def _solve_sweeps(m: Model, qld: jnp.ndarray, diag_inv: jnp.ndarray,
                  x: jnp.ndarray) -> jnp.ndarray:
  """solve_ld's arithmetic: L' y = x up the tree, D^-1, then L z = y down.

  One dof level at a time, as `factor`: L' y = x from the deepest level up (a level's
  entries are final once its descendants are subtracted, then pushed to all ancestors in
  one product with the level's rows of L), L z = y from the root down (a level's entries in
  one product of its rows of L with the entries above). Round-off differs from
  mj_solveLD's row-by-row sums. On a forest (`forest.plan`) each group of trees of one
  structure is solved as one tree, vmapped over the group.
  """
  f = forest.plan(m)
  if f is None:
    return _sweeps_tree(_ld_plan(m), qld, diag_inv, x)
  parts = [jax.vmap(functools.partial(_sweeps_tree, _group_plan(g)))(
    forest.blocks(qld, g.idx), forest.take(diag_inv, g.idx), forest.take(x, g.idx))
    for g in f.groups]
  return forest.put(f, parts)


def _sweeps_tree(plan: dict, qld: jnp.ndarray, diag_inv: jnp.ndarray,
                 x: jnp.ndarray) -> jnp.ndarray:
  """_solve_sweeps on the dofs of `plan` (`_ld_plan_of`): qld (nv, nv), x (nv,)."""
  if plan["scan"] is not None:
    return _solve_scan(plan, qld, diag_inv, x)
  nv = x.shape[0]
  lower = jnp.where(plan["ancestor"] & ~np.eye(nv, dtype=bool), qld, 0.0)
  deep_first = [ks for ks in plan["levels"] if len(plan["paths"][ks[0]]) > 1]
  rows = {id(ks): jnp.stack([lower[k] for k in ks]) for ks in deep_first}
  for ks in deep_first:  # L' y = x
    x = x - jnp.stack([x[k] for k in ks]) @ rows[id(ks)]
  x = x * diag_inv
  return by_platform(
    x, cpu=lambda x: _down_cpu(rows, deep_first, x),
    default=lambda x: _down_push(plan, lower, x))


def solve_tangent(m: Model, qld: jnp.ndarray, diag_inv: jnp.ndarray,
                  x: jnp.ndarray) -> jnp.ndarray:
  """M^-1 x in the derivative rules, x (nv,) a tangent: `_solve_sweeps`, declared a symmetric
  linear solve (`lax.custom_linear_solve`), so that reverse mode transposes it to the same
  sweeps (M^-1 is symmetric) where the sweeps' own transpose was a chain of scatters, pads
  and splits per dof level in every step's backward pass. Forward-mode values unchanged."""
  def matvec(v):  # M v = L' D L v; read only to differentiate the solve itself
    lower = _unit_lower(m, qld)
    return lower.T @ ((lower @ v) / diag_inv)

  return jax.lax.custom_linear_solve(
    matvec, x, lambda _, b: _solve_sweeps(m, qld, diag_inv, b), symmetric=True)


def _down_cpu(rows: dict, deep_first: list, x: jnp.ndarray) -> jnp.ndarray:
  """L z = y of `_solve_sweeps` on the CPU, root levels first: each level's products with
  its rows of L (`rows`, by level id), placed by one static gather."""
  for ks in deep_first[::-1]:
    x = x - math.place_gather(rows[id(ks)] @ x, ks, x.shape[0])
  return x


def _down_push(plan: dict, lower: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
  """L z = y off the CPU, column by column: once a level's entries are final (root levels
  first), L's columns of the level times them are subtracted from every dof below, each level
  one product over the level's few dofs (as the up sweep), which XLA fuses across levels as
  elementwise arithmetic, where the CPU's row products and their placing gathers took a GPU
  two kernels a level (H200 target, batch 8192, MJX's humanoid: mj_fwdAcceleration 26 -> 16
  kernels). The products are those of the rows; their sums run level by level (round-off)."""
  for ks in plan["levels"][:0:-1]:  # root first; the deepest level has no dof below
    x = x - lower[:, ks] @ x[ks]
  return x


def solve_m(m: Model, d: Data, x: jnp.ndarray) -> jnp.ndarray:
  """mj_solveM: M^-1 x using the factorization stored in d. x: (nv,).

  Differentiated through qM and x (solve_factored): d.qLD and d.qLDiagInv must be qM's
  factor, as factor_m leaves them; their own tangents are not read. So a tangent of the
  positions costs one solve per use, not a factorization's derivative.
  """
  return solve_factored(m, d.qM, d.qLD, d.qLDiagInv, x)


def mul_m(m: Model, d: Data, x: jnp.ndarray) -> jnp.ndarray:
  """mj_mulM: qM @ x. x: (nv,)."""
  return d.qM @ x


def mul_m_tree(m: Model, cinert: jnp.ndarray, cdof: jnp.ndarray, ten_J: jnp.ndarray,
               x: jnp.ndarray) -> jnp.ndarray:
  """qM x from the quantities `crb` builds qM from (cinert (nbody, 10), cdof (nv, 6), com
  frame; ten_J (ntendon, nv)), without forming qM: M = sum_b J_b' I_b J_b, so each body's
  velocity under x (the cdof of its dofs and its ancestors' times x), its inertia times it,
  those forces summed over subtrees, projected on each dof's cdof (mj_rne with qacc = x, no
  velocity, no gravity), plus armature. O(nbody + nv) per vector where qM x's derivative in
  the positions forms dqM, nv^2 entries per tangent. Round-off differs from qM @ x.
  """
  plan = body_plan(m)
  dt = x.dtype
  vel = jnp.asarray(plan["body_dof"], dt) @ (cdof * x[:, None])  # (nbody, 6)
  force = com.subtree_product(m, math.inert_mul(cinert, vel))
  return (jnp.sum(cdof * force[m.dof_bodyid], axis=1) + m.dof_armature * x
          + armature.mul_inertia(m, ten_J, x))


def solve_m_tree(m: Model, d: Data, x: jnp.ndarray, qld: jnp.ndarray | None = None,
                 diag_inv: jnp.ndarray | None = None,
                 diag: jnp.ndarray | None = None) -> jnp.ndarray:
  """x -> (qM + diag(diag))^-1 x (mj_solveM when diag is None), differentiated through the
  quantities qM is built from (cinert, cdof, ten_J: `mul_m_tree`) instead of qM: dx =
  mat^-1 (db - dM x - ddiag x), dM x by one derivative of `mul_m_tree` per tangent, so no
  position tangent forms dqM. (qld, diag_inv): factor(qM + diag(diag)) (default: d's qLD,
  qLDiagInv, for diag None); their tangents are not read. d.qM must be crb's, from d's
  cinert, cdof and ten_J, as in the pipeline (`solve_m` differentiates through qM itself).
  x, diag: (nv,).
  """
  if not m.nv:
    return x
  qld = d.qLD if qld is None else qld
  diag_inv = d.qLDiagInv if diag_inv is None else diag_inv
  diag = jnp.zeros_like(x) if diag is None else diag

  # the Model is an argument, not a closure: its leaves (dof_armature, actuator gears and
  # armature, tendon_armature) carry tangents too (system identification)
  @jax.custom_jvp
  def solve(m, qld, diag_inv, cinert, cdof, ten_J, diag, b):
    return _solve_sweeps(m, qld, diag_inv, b)

  @solve.defjvp
  def solve_jvp(primals, tangents):
    m, qld, diag_inv, cinert, cdof, ten_J, diag, b = primals
    dm, _, _, dcinert, dcdof, dten_J, ddiag, db = tangents
    x = kept(_solve_sweeps(m, qld, diag_inv, b))  # see solve_factored
    return x, _solve_tree_tangent(m, qld, diag_inv, (cinert, cdof, ten_J), x,
                                  (dm, dcinert, dcdof, dten_J), ddiag, db)

  return solve(m, qld, diag_inv, d.cinert, d.cdof, d.ten_J, diag, x)


def _solve_tree_tangent(m, qld, diag_inv, tree, x, dtree, ddiag, db):
  """The tangent of x = (qM + diag(diag))^-1 b, (qld, diag_inv) its factor: mat^-1 (db -
  dM x - ddiag x) (ddiag None: no diagonal), dM x the derivative of `mul_m_tree` along
  dtree = (dm, dcinert, dcdof, dten_J) at tree = (cinert, cdof, ten_J)."""
  dm_x = jax.jvp(lambda *a: mul_m_tree(*a, x), (m,) + tuple(tree), tuple(dtree))[1]
  rhs = db - dm_x if ddiag is None else db - dm_x - ddiag * x
  return solve_tangent(m, qld, diag_inv, rhs)


def solve_m_tree_select(m: Model, d: Data, pred: jnp.ndarray, x: jnp.ndarray, qld: jnp.ndarray,
                        diag_inv: jnp.ndarray, diag: jnp.ndarray,
                        x_plain: jnp.ndarray) -> jnp.ndarray:
  """where(pred, (qM + diag(diag))^-1 x, x_plain), x_plain = qM^-1 x: mj_Euler's choice
  of velocity update without constraint rows (x qfrc_smooth, x_plain qacc_smooth, pred
  whether some dof has damping). Values as `solve_m_tree` and the select give them; the
  tangent is `solve_m_tree`'s of the branch pred picks, under a lax.cond, so that a
  tangent costs one solve's derivative where the select's took both (pred is the model's,
  unbatched unless the model is: then both, as a select). x_plain's own tangent is not
  read, qM^-1 x's is taken instead: x_plain must be that solve with d's factor (qLD,
  qLDiagInv), as fwd_acceleration leaves qacc_smooth. (qld, diag_inv): factor(qM +
  diag(diag)). x, diag, x_plain: (nv,); pred: a boolean scalar.
  """
  if not m.nv:
    return x_plain

  @jax.custom_jvp
  def select(m, qld, diag_inv, qld_plain, diag_inv_plain, cinert, cdof, ten_J, diag, pred, b,
             x_plain):
    return jnp.where(pred, _solve_sweeps(m, qld, diag_inv, b), x_plain)

  @select.defjvp
  def select_jvp(primals, tangents):
    m, qld, diag_inv, qld_plain, diag_inv_plain, cinert, cdof, ten_J, diag, pred, b, x_plain = (
      primals)
    dm, _, _, _, _, dcinert, dcdof, dten_J, ddiag, _, db, _ = tangents
    x = kept(_solve_sweeps(m, qld, diag_inv, b))  # see solve_factored
    tree, dtree = (cinert, cdof, ten_J), (dm, dcinert, dcdof, dten_J)
    dx = jax.lax.cond(
      pred, lambda: _solve_tree_tangent(m, qld, diag_inv, tree, x, dtree, ddiag, db),
      lambda: _solve_tree_tangent(m, qld_plain, diag_inv_plain, tree, x_plain, dtree, None, db))
    return jnp.where(pred, x, x_plain), dx

  return select(m, qld, diag_inv, d.qLD, d.qLDiagInv, d.cinert, d.cdof, d.ten_J, diag, pred,
                x, x_plain)
