"""Joint-space inertia: composite rigid bodies (mj_crb), L'DL factorization and solves.

The factorization follows MuJoCo's tree-sparse L'DL (M = L' D L, L unit lower triangular
with nonzeros only at dof-tree ancestors, so no fill-in). Eliminating a dof updates only
entries between its ancestors, so every dof at one depth is eliminated at once: the graph
grows with the depth of the dof tree, not with nv, and there is no batched LAPACK call
(which deadlocked under vmap on XLA:CPU for MJX's dense Cholesky).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.scan import body_plan, cached_plan, levels
from jaxmj.types import Data, Model


@cached_plan
def _ld_plan(m) -> list[dict]:
  """Static index arrays per dof level, deepest first.

  For each level: `k`, `i` index pairs (dof k, strict ancestor i), and `uk`, `ui`, `uj`
  triples (dof k, ancestors i >= j) for the rank-one update of the ancestor block.
  """
  anc = np.asarray(m.dof_ancestor) & ~np.eye(m.nv, dtype=bool)
  plan = []
  for ks in reversed(levels(m.dof_depth, start=1)):
    k, i, uk, ui, uj = [], [], [], [], []
    for kk in ks:
      a = np.flatnonzero(anc[kk])
      k += [kk] * len(a)
      i += list(a)
      for p, ii in enumerate(a):
        for jj in a[: p + 1]:
          uk.append(kk)
          ui.append(ii)
          uj.append(jj)
    plan.append({n: np.asarray(v, np.int32) for n, v in
                 dict(k=k, i=i, uk=uk, ui=ui, uj=uj).items()})
  return plan


def crb(m: Model, d: Data) -> Data:
  """mj_crb: composite inertias and the joint-space inertia matrix qM (armature included).

  Reads cinert, cdof. Writes crb, qM (dense, symmetric).
  """
  subtree = jnp.asarray(body_plan(m)["subtree"], d.cinert.dtype)
  crb_ = subtree @ d.cinert
  force = math.inert_mul(crb_[m.dof_bodyid], d.cdof)  # (nv, 6): crb of dof's body * cdof
  lower = jnp.where(m.dof_ancestor, force @ d.cdof.T, 0.0)  # [i, j]: j ancestor-or-self
  qm = lower + lower.T - jnp.diag(jnp.diag(lower)) + jnp.diag(m.dof_armature)
  return d.replace(crb=crb_, qM=qm)


def factor_m(m: Model, d: Data) -> Data:
  """mj_factorM: qLD and qLDiagInv from qM."""
  qld, diag_inv = factor(m, d.qM)
  return d.replace(qLD=qld, qLDiagInv=diag_inv)


def factor(m: Model, mat: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
  """Tree-sparse L'DL of a matrix with qM's sparsity (e.g. qM + h*diag(damping)).

  Returns (ld, diag_inv): ld holds D on the diagonal and L strictly below it (dense
  storage, nonzero only at ancestor entries); diag_inv = 1 / D.
  """
  a = jnp.where(m.dof_ancestor, mat, 0.0)
  for lvl in _ld_plan(m):
    if len(lvl["uk"]):
      uk, ui, uj = lvl["uk"], lvl["ui"], lvl["uj"]
      a = a.at[ui, uj].add(-a[uk, ui] * a[uk, uj] / a[uk, uk])
    if len(lvl["k"]):
      k, i = lvl["k"], lvl["i"]
      a = a.at[k, i].set(a[k, i] / a[k, k])
  return a, 1.0 / jnp.diag(a)


def solve_ld(m: Model, qld: jnp.ndarray, diag_inv: jnp.ndarray, x: jnp.ndarray) -> jnp.ndarray:
  """x -> M^-1 x for M = L' D L given as (qld, diag_inv) (mj_solveLD). x: (nv,)."""
  plan = _ld_plan(m)
  for lvl in plan:  # L' y = x, deepest dofs first
    if len(lvl["k"]):
      x = x.at[lvl["i"]].add(-qld[lvl["k"], lvl["i"]] * x[lvl["k"]])
  x = x * diag_inv
  for lvl in reversed(plan):  # L z = y, root dofs first
    if len(lvl["k"]):
      x = x.at[lvl["k"]].add(-qld[lvl["k"], lvl["i"]] * x[lvl["i"]])
  return x


def solve_m(m: Model, d: Data, x: jnp.ndarray) -> jnp.ndarray:
  """mj_solveM: M^-1 x using the factorization stored in d. x: (nv,)."""
  return solve_ld(m, d.qLD, d.qLDiagInv, x)


def mul_m(m: Model, d: Data, x: jnp.ndarray) -> jnp.ndarray:
  """mj_mulM: qM @ x. x: (nv,)."""
  return d.qM @ x
