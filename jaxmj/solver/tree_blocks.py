"""The Newton step by kinematic tree: the Hessian's diagonal blocks, one per tree, solved apart.

The primal Hessian H = M + J' diag(Dq) J (+ the cones' J_c' Hc J_c) is block diagonal over
the kinematic trees whenever no row with a Hessian weight touches two trees: M never couples
trees, and a row whose Jacobian lies in one tree adds only to that tree's block. A scene of
several robots or objects apart from each other (MJX's 04_humanoids: four trees of 27 dofs)
then needs four 27 x 27 eliminations, not one of 108 x 108 (1/16 of the work). Whether H
decouples is known only from the rows' current weights, so the solver branches on H's
entries outside the trees' blocks (`coupled`), the batch as one (`loops.batch_any`): any
world with two trees in weighted contact runs the dense elimination for all. H itself is
formed whole either way: on the CPU one product of (nv, nefc) by (nefc, nv) runs at ~3x
the speed of per-tree products a quarter its size (04_humanoids, 256 worlds: 18 ms against
12.6 ms for the blocks, plus 6.6 ms to lay J out by tree).

Exact either way: on a block-diagonal H the dense elimination and the blocks' solve the same
systems (in another order of round-off). Trees are grouped by dof count, so the blocks of one
size are one batched solve.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.linalg import SPD_UNROLL_MAX, spd_solve
from jaxmj.smooth.forest import blocks, trees_with_dofs


class TreeBlocks(NamedTuple):
  """Static plan: `groups`, per dof count n, the (k, n) dof indices of the k trees with n dofs;
  `inverse` (nv,) each dof's place in the groups' indices laid end to end."""

  groups: tuple[np.ndarray, ...]
  inverse: np.ndarray
  off_block: np.ndarray  # (nv, nv) bool: the entries outside every tree's diagonal block


def plan(tree_dofadr: np.ndarray, tree_dofnum: np.ndarray, nv: int) -> TreeBlocks | None:
  """The plan for trees with dofs at `tree_dofadr` (contiguous runs of `tree_dofnum`), or None
  where it cannot pay: one tree, or a system small enough that the dense step is already
  one cheap unrolled-size elimination (nv <= linalg.SPD_UNROLL_MAX)."""
  adr, num = trees_with_dofs(tree_dofadr, tree_dofnum)
  if len(num) < 2 or nv <= SPD_UNROLL_MAX:
    return None
  groups = tuple(adr[num == n][:, None] + np.arange(n) for n in np.unique(num))
  order = np.concatenate([g.ravel() for g in groups])
  tree = np.full(nv, -1)  # each dof's tree
  for t, (a, n) in enumerate(zip(adr, num)):
    tree[a:a + n] = t
  return TreeBlocks(groups=groups, inverse=np.argsort(order),
                    off_block=tree[:, None] != tree[None, :])


def coupled(tb: TreeBlocks, h: jax.Array) -> jax.Array:
  """() bool: whether the Hessian h (nv, nv) has a nonzero entry outside its trees' diagonal
  blocks (a row with a Hessian weight spans two trees)."""
  return jnp.any((h != 0) & tb.off_block)


def block_solve(tb: TreeBlocks, h: jax.Array, g: jax.Array) -> jax.Array:
  """h^-1 g (nv,) from h's diagonal blocks alone (h block diagonal: see `coupled`)."""
  out = [jax.vmap(lambda a, b: spd_solve(a, b)[0])(blocks(h, idx), g[idx]).ravel()
         for idx in tb.groups]
  return jnp.concatenate(out)[tb.inverse]
