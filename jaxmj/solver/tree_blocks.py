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
systems (in another order of round-off). The trees are grouped as the mass matrix's factor
groups them (`smooth/forest.py`: by dof structure), so each group's blocks are one batched
solve.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.linalg import spd_solve
from jaxmj.scan import cached_plan
from jaxmj.smooth import forest


class TreeBlocks(NamedTuple):
  """Static plan: `forest`, the trees with dofs grouped by structure (`forest.plan`);
  `off_block` (nv, nv) bool, the entries outside every tree's diagonal block."""

  forest: forest.Forest
  off_block: np.ndarray


@cached_plan
def _off_block(m) -> np.ndarray:
  adr, num = forest.trees_with_dofs(m.tree_dofadr, m.tree_dofnum)
  tree = np.full(m.nv, -1)  # each dof's tree
  for t, (a, n) in enumerate(zip(adr, num)):
    tree[a:a + n] = t
  return tree[:, None] != tree[None, :]


def plan(m) -> TreeBlocks | None:
  """The plan for m's trees, or None where `forest.plan` has none: one tree with dofs, a system
  small enough that the dense step is one cheap unrolled elimination (nv below
  forest.FOREST_NV_MIN, 33: at most linalg.SPD_UNROLL_MAX), or traces for another platform
  than the CPU, where the branch on `coupled` would cost a host sync every Newton iteration."""
  f = forest.plan(m)
  return None if f is None else TreeBlocks(forest=f, off_block=_off_block(m))


def coupled(tb: TreeBlocks, h: jax.Array) -> jax.Array:
  """() bool: whether the Hessian h (nv, nv) has a nonzero entry outside its trees' diagonal
  blocks (a row with a Hessian weight spans two trees)."""
  return jnp.any((h != 0) & tb.off_block)


def block_solve(tb: TreeBlocks, h: jax.Array, g: jax.Array) -> jax.Array:
  """h^-1 g (nv,) from h's diagonal blocks alone (h block diagonal: see `coupled`)."""
  parts = [jax.vmap(lambda a, b: spd_solve(a, b)[0])(forest.blocks(h, grp.idx),
                                                     forest.take(g, grp.idx))
           for grp in tb.forest.groups]
  return forest.put(tb.forest, parts)
