"""Joint-space inertia: composite rigid bodies (mj_crb), L'DL factorization and solves.

The factorization follows MuJoCo's tree-sparse L'DL (M = L' D L, L unit lower triangular
with nonzeros only at dof-tree ancestors, so no fill-in). Eliminating a dof updates only
entries between its ancestors, so every dof at one depth is eliminated at once: the graph
grows with the depth of the dof tree, not with nv, and there is no batched LAPACK call
(which deadlocked under vmap on XLA:CPU for MJX's dense Cholesky).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.scan import body_plan, cached_plan, levels
from jaxmj.smooth import armature
from jaxmj.types import Data, Model


@cached_plan
def _ld_plan(m) -> dict:
  """Static index arrays per dof level (deepest first), padded to one width for lax.scan.

  pair_k, pair_i: (dof k, strict ancestor i); upd_k, upd_i, upd_j: (dof k, ancestors
  i >= j) for the rank-one update of the ancestor block. Padding uses two extra slots of
  the working matrix: ONE = nv (its diagonal is 1 and is never written) as k, and
  SINK = nv + 1 (written, never divided by) as i, j, so padded entries are exact zeros.
  """
  anc = np.asarray(m.dof_ancestor) & ~np.eye(m.nv, dtype=bool)
  one, sink = m.nv, m.nv + 1
  pairs, upds = [], []
  for ks in reversed(levels(m.dof_depth, start=1)):
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


def crb(m: Model, d: Data) -> Data:
  """mj_crb and mj_tendonArmature: composite inertias and the joint-space inertia qM, with
  dof, actuator and tendon armature (jaxmj/smooth/armature.py).

  Reads cinert, cdof, ten_J. Writes crb, qM (dense, symmetric).
  """
  subtree = jnp.asarray(body_plan(m)["subtree"], d.cinert.dtype)
  # The world accumulates nothing in MuJoCo: its row stays its own (zero) cinert.
  crb_ = (subtree @ d.cinert).at[0].set(d.cinert[0])
  force = math.inert_mul(crb_[m.dof_bodyid], d.cdof)  # (nv, 6): crb of dof's body * cdof
  lower = jnp.where(m.dof_ancestor, force @ d.cdof.T, 0.0)  # [i, j]: j ancestor-or-self
  qm = lower + lower.T - jnp.diag(jnp.diag(lower)) + jnp.diag(m.dof_armature)
  qm = armature.add_inertia(m, d, qm)  # actuators' and tendons' (mj_tendonArmature)
  return d.replace(crb=crb_, qM=qm)


def factor_m(m: Model, d: Data) -> Data:
  """mj_factorM: qLD and qLDiagInv from qM."""
  qld, diag_inv = factor(m, d.qM)
  return d.replace(qLD=qld, qLDiagInv=diag_inv)


# Trees up to this many dof levels run their level loops unrolled: on a GPU each trip of a
# loop is its own kernel launches, which for a batch of small matrices cost more than the
# work (see linalg.SPD_UNROLL_MAX); deeper trees keep a scan (compile time).
LEVELS_UNROLL_MAX = 16


def _unroll(levels) -> bool:
  return len(levels) <= LEVELS_UNROLL_MAX


def factor(m: Model, mat: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
  """Tree-sparse L'DL of a matrix with qM's sparsity (e.g. qM + h*diag(damping)).

  Returns (ld, diag_inv): ld holds D on the diagonal and L strictly below it (dense
  storage, nonzero only at ancestor entries); diag_inv = 1 / D. One lax.scan step per dof
  level, deepest first; dofs of a level are eliminated together.
  """
  nv = m.nv
  plan = _ld_plan(m)
  a = _padded(jnp.where(m.dof_ancestor, mat, 0.0))

  def level(a, idx):
    pk, pi, uk, ui, uj = idx
    a = a.at[ui, uj].add(-a[uk, ui] * a[uk, uj] / a[uk, uk])
    return a.at[pk, pi].set(a[pk, pi] / a[pk, pk]), None

  if len(plan["pair_k"]):
    xs = tuple(plan[k] for k in ("pair_k", "pair_i", "upd_k", "upd_i", "upd_j"))
    a, _ = jax.lax.scan(level, a, xs, unroll=_unroll(xs[0]))
  ld = a[:nv, :nv]
  return ld, 1.0 / jnp.diag(ld)


def solve_ld(m: Model, qld: jnp.ndarray, diag_inv: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
  """x -> M^-1 x for M = L' D L given as (qld, diag_inv) (mj_solveLD). x: (nv,)."""
  plan = _ld_plan(m)
  if not len(plan["pair_k"]):
    return x * diag_inv
  nv = m.nv
  ld = _padded(qld)
  x = jnp.zeros(nv + 2, x.dtype).at[:nv].set(x)

  def up(x, idx):  # L' y = x, deepest dofs first
    k, i = idx
    return x.at[i].add(-ld[k, i] * x[k]), None

  def down(x, idx):  # L z = y, root dofs first
    k, i = idx
    return x.at[k].add(-ld[k, i] * x[i]), None

  idx = (plan["pair_k"], plan["pair_i"])
  x, _ = jax.lax.scan(up, x, idx, unroll=_unroll(idx[0]))
  x = x.at[:nv].multiply(diag_inv)
  x, _ = jax.lax.scan(down, x, idx, reverse=True, unroll=_unroll(idx[0]))
  return x[:nv]


def solve_m(m: Model, d: Data, x: jnp.ndarray) -> jnp.ndarray:
  """mj_solveM: M^-1 x using the factorization stored in d. x: (nv,)."""
  return solve_ld(m, d.qLD, d.qLDiagInv, x)


def mul_m(m: Model, d: Data, x: jnp.ndarray) -> jnp.ndarray:
  """mj_mulM: qM @ x. x: (nv,)."""
  return d.qM @ x
