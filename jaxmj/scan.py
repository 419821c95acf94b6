"""Tree-ordered traversal plans, computed on the host from static model structure.

Recursions over the kinematic tree run level by level: every body (or dof) at one depth is
handled by one vectorized operation, so the traced graph grows with tree depth, not with
the number of bodies. Sums over subtrees and over ancestor chains are linear, so they are
single matmuls with static 0/1 masks instead of recursions.
"""

from __future__ import annotations

import functools
import types

import numpy as np

from jaxmj.pytree import static_bundle


def depths(parentid: np.ndarray) -> np.ndarray:
  """Depth of each node of a forest given parent ids (-1 or self for roots): roots are 0."""
  n = len(parentid)
  depth = np.zeros(n, dtype=np.int32)
  for i in range(n):
    p = parentid[i]
    depth[i] = 0 if p < 0 or p == i else depth[p] + 1
  return depth


def levels(depth: np.ndarray, start: int = 0) -> list[np.ndarray]:
  """Ids grouped by depth, shallowest first, from depth `start` on."""
  if len(depth) == 0:
    return []
  return [np.flatnonzero(depth == k) for k in range(start, int(depth.max()) + 1)]


def ancestor_mask(parentid: np.ndarray) -> np.ndarray:
  """(n, n) bool: [i, j] is True when j is i or an ancestor of i (parent -1 or self ends)."""
  n = len(parentid)
  mask = np.zeros((n, n), dtype=bool)
  for i in range(n):
    j = i
    while j >= 0:
      mask[i, j] = True
      p = parentid[j]
      j = -1 if p == j else p
  return mask


def cached_plan(fn):
  """Caches a host-side plan computed from a model's static fields (and hashable extras).

  The cache is keyed by the static bundle (numpy structure, never traced leaves), so a
  plan is computed once per model structure, whatever the batch or the trace. Extra
  arguments (such as option flags, which live in `m.opt`) join the key.
  """

  @functools.lru_cache(maxsize=64)
  def cached(bundle, *args):
    view = types.SimpleNamespace(**dict(zip(bundle.owner._static_names, bundle.values)))
    view._static_bundle = bundle  # lets a plan call other plans on the view
    return fn(view, *args)

  @functools.wraps(fn)
  def wrapper(m, *args):
    return cached(static_bundle(m), *args)

  return wrapper


@cached_plan
def body_plan(m) -> dict:
  """Static index sets and masks over bodies and dofs, shared by every tree stage.

  body_levels: bodies per depth (depth >= 1), shallowest first.
  subtree: (nbody, nbody) float, [i, j] = 1 if j is in the subtree of i.
  body_dof: (nbody, nv) float, [b, i] = 1 if dof i moves body b (dof of b or an ancestor).
  """
  anc = ancestor_mask(m.body_parentid)
  body_dof = anc[:, m.dof_bodyid] if m.nv else np.zeros((m.nbody, 0), bool)
  return {
    "body_levels": levels(m.body_depth, start=1),
    "subtree": anc.T.astype(np.float64),
    "body_dof": body_dof.astype(np.float64),
  }
