"""The dof space as a forest: per-tree blocks of the joint-space quantities.

The joint-space inertia qM never couples two kinematic trees (its sparsity is dof_ancestor's),
so its factor and its solves are block diagonal over the trees. The level passes of
`smooth/mass.py` treat all trees as one: each level's product runs over every deeper row of
every tree, the other trees' entries masked to zero, so k trees of n dofs cost about k^2
times one tree's work where k times would do (MJX's 04_humanoids: four trees of 27 dofs).
`plan` groups the trees by their dof structure (ancestry and depth), so each group's trees
take one tree's arithmetic vmapped over the group, and `blocks` / `take` / `put` move the
joint-space arrays between the whole (nv, ...) layout and the groups' (k, n, ...) one.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxmj.platform import traces_for_cpu
from jaxmj.scan import cached_plan

# the forest form pays once a dense pass over all nv dofs is more than a few small ones
FOREST_NV_MIN = 33


class Group(NamedTuple):
  """k trees of the same dof structure: `idx` (k, n) their dofs (each tree's in order),
  `ancestor` (n, n) bool and `depth` (n,) one tree's dof_ancestor and dof_depth."""

  idx: np.ndarray
  ancestor: np.ndarray
  depth: np.ndarray


class Forest(NamedTuple):
  """`groups` of trees by structure; `inverse` (nv,) each dof's place in the groups' dofs laid
  end to end (None where that is dof order)."""

  groups: tuple[Group, ...]
  inverse: np.ndarray | None


def blocks(mat: jnp.ndarray, idx: np.ndarray) -> jnp.ndarray:
  """The diagonal blocks (k, n, n) of mat (nv, nv) for the k trees of dofs idx (k, n)."""
  k, n = idx.shape
  if np.array_equal(idx.ravel(), idx[0, 0] + np.arange(k * n)):  # end to end: slices
    return jnp.stack([mat[a:a + n, a:a + n] for a in idx[:, 0]])
  return mat[idx[:, :, None], idx[:, None, :]]


def take(x: jnp.ndarray, idx: np.ndarray) -> jnp.ndarray:
  """x's rows (k, n, ...) of the k trees of dofs idx (k, n), x (nv, ...)."""
  k, n = idx.shape
  if np.array_equal(idx.ravel(), idx[0, 0] + np.arange(k * n)):
    return x[idx[0, 0]:idx[0, 0] + k * n].reshape((k, n) + x.shape[1:])
  return x[idx]


def put(f: Forest, parts: list[jnp.ndarray]) -> jnp.ndarray:
  """(nv, ...) from each group's rows (k, n, ...), in the order of `f.groups`."""
  out = jnp.concatenate([p.reshape((-1,) + p.shape[2:]) for p in parts])
  return out if f.inverse is None else out[f.inverse]


def trees_with_dofs(tree_dofadr: np.ndarray, tree_dofnum: np.ndarray) -> tuple:
  """(adr, num): the first dof and dof count of each tree that has dofs (a tree's dofs are
  contiguous)."""
  adr, num = np.asarray(tree_dofadr), np.asarray(tree_dofnum)
  return adr[num > 0], num[num > 0]


@cached_plan
def _plan(m) -> Forest | None:
  adr, num = trees_with_dofs(m.tree_dofadr, m.tree_dofnum)
  if len(num) < 2 or m.nv < FOREST_NV_MIN:
    return None
  anc, depth = np.asarray(m.dof_ancestor, bool), np.asarray(m.dof_depth)
  keys: dict = {}
  for a, n in zip(adr, num):
    s = slice(a, a + n)
    key = (int(n), anc[s, s].tobytes(), depth[s].tobytes())
    keys.setdefault(key, []).append(int(a))
  groups = tuple(Group(idx=np.asarray(starts)[:, None] + np.arange(n),
                       ancestor=anc[a:a + n, a:a + n], depth=depth[a:a + n])
                 for (n, _, _), starts in keys.items() for a in starts[:1])
  order = np.concatenate([g.idx.ravel() for g in groups])
  inverse = None if np.array_equal(order, np.arange(m.nv)) else np.argsort(order)
  return Forest(groups=groups, inverse=inverse)


def plan(m) -> Forest | None:
  """The forest of m's trees with dofs, or None where the whole-matrix passes stay: one tree,
  nv below FOREST_NV_MIN, or traces for another platform than the CPU (a GPU runs the
  level passes as fused reductions, launch-bound, where fewer flops buy little: not measured
  there)."""
  return _plan(m) if traces_for_cpu() else None
