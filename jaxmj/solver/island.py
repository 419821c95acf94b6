"""Constraint islands: mj_island, with fixed shapes.

An island is a set of kinematic trees coupled by active constraint rows; MuJoCo 4.0 (unless
`<flag island="disable"/>`) solves each island as its own problem (jaxmj/solver/driver.py). Trees
touched by no active row belong to no island (-1), nor do their dofs.

Which trees a row touches follows mj_island's tree iterator: contacts the trees of their two
geoms' bodies, joint limits and dof friction the tree of their joint / dof, connect and weld
the trees of their two bodies (or sites' bodies), every other row the trees where its Jacobian
is nonzero. The first four are static (the row layout is); the last is read from efc_J at
run time. Components of the tree graph come from min-label propagation with pointer jumping
(a while loop over integer labels, at most `ntree` rounds, usually a few), so nothing here
has a data-dependent shape: island arrays are padded to `ntree` islands (the most there can
be). Islands are numbered like mj_floodFill, which starts a new island at each unvisited tree
in tree order: by their smallest tree.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.constraint.layout import efc_layout
from jaxmj.types import ConstraintType, Data, DisableBit, EqType, Model, ObjType


def nisland_max(m: Model) -> int:
  """Static bound on the number of islands: one per tree (at least 1 slot)."""
  return max(1, m.ntree)


def _row_plan(m: Model, d: Data) -> tuple[np.ndarray, np.ndarray]:
  """Static tree incidence of the rows whose trees mj_island knows without a Jacobian scan.

  Returns (nefc, ntree) bool `inc` and (nefc,) bool `scan` (rows to read from efc_J).
  Contact rows touch no tree here when their geoms are traced (max_contact_points).
  """
  layout = efc_layout(m, d.contact.dim)
  nefc, ntree = layout.nefc, m.ntree
  etype, eid = np.asarray(layout.efc_type), np.asarray(layout.efc_id)
  body_tree, dof_tree = np.asarray(m.body_treeid), np.asarray(m.dof_treeid)
  trees = np.full((nefc, 2), -1, np.int64)
  scan = np.ones(nefc, bool)
  con = np.flatnonzero(np.isin(etype, [ConstraintType.CONTACT_FRICTIONLESS,
                                       ConstraintType.CONTACT_PYRAMIDAL,
                                       ConstraintType.CONTACT_ELLIPTIC]))
  slot = np.asarray(layout.con_slot)[con - layout.contact0]
  if d.contact.geom is None:  # else traced: _contact_incidence
    for k, b in enumerate(d.contact.bodies(m.geom_bodyid)):
      trees[con, k] = body_tree[b[slot]]
  fd = np.flatnonzero(etype == ConstraintType.FRICTION_DOF)
  trees[fd, 0] = dof_tree[eid[fd]]
  lj = np.flatnonzero(etype == ConstraintType.LIMIT_JOINT)
  trees[lj, 0] = dof_tree[np.asarray(m.jnt_dofadr)[eid[lj]]]
  eq = np.flatnonzero(etype == ConstraintType.EQUALITY)
  eq = eq[np.isin(np.asarray(m.eq_type)[eid[eq]], [EqType.CONNECT, EqType.WELD])]
  site = np.asarray(m.eq_objtype)[eid[eq]] == ObjType.SITE
  for k, obj in enumerate((m.eq_obj1id, m.eq_obj2id)):
    ids = np.asarray(obj)[eid[eq]]
    if m.nsite:
      ids = np.where(site, np.asarray(m.site_bodyid)[np.where(site, ids, 0)], ids)
    trees[eq, k] = body_tree[ids]
  scan[np.concatenate([con, fd, lj, eq])] = False
  inc = np.zeros((nefc, ntree), bool)
  for k in range(2):
    hit = trees[:, k] >= 0
    inc[np.flatnonzero(hit), trees[hit, k]] = True
  return inc, scan


def _contact_incidence(m: Model, d: Data, slot: np.ndarray) -> jax.Array:
  """(nc, ntree) bool: the trees of the two geoms' bodies of each contact row (rows of
  contact slots `slot`), for traced geoms (max_contact_points)."""
  tree = jnp.asarray(m.body_treeid)
  ids = jnp.arange(m.ntree)
  b1, b2 = d.contact.bodies(m.geom_bodyid)
  return ((tree[b1][slot][:, None] == ids) | (tree[b2][slot][:, None] == ids))


def _components(adj: jax.Array, has_edge: jax.Array) -> jax.Array:
  """Smallest tree index of each tree's connected component (adj: (ntree, ntree) bool).

  The transitive closure by repeated squaring: ceil(log2(ntree)) products of fixed shape, no
  data-dependent loop (a GPU would read a while loop's predicate back every trip).
  """
  n = adj.shape[0]
  reach = adj | jnp.eye(n, dtype=bool)
  for _ in range(int(np.ceil(np.log2(max(n, 2))))):
    r = reach.astype(jnp.float32)
    reach = (r @ r) > 0
  ids = jnp.arange(n, dtype=jnp.int32)
  lab = jnp.min(jnp.where(reach, ids[None, :], n), axis=1)
  return jnp.where(has_edge, lab, -1)


def island(m: Model, d: Data) -> Data:
  """mj_island: nisland, tree_island, dof_island, efc_island and the per-island counts.

  Reads efc_J, efc_active, efc_type and the contact slots' layout. Island arrays are padded to
  `nisland_max(m)` entries (zero counts past nisland). With islands disabled (or no active
  row) nisland = 0 and every id is -1, as in MuJoCo.
  """
  nefc, ntree, nv = d.efc_J.shape[0], m.ntree, m.nv
  ni = nisland_max(m)
  i32 = jnp.int32
  off = m.opt.disabled(DisableBit.ISLAND) or m.opt.disabled(DisableBit.CONSTRAINT)
  if off or nefc == 0 or ntree == 0:
    return d.replace(nisland=jnp.zeros((), i32), tree_island=-jnp.ones(ntree, i32),
                     dof_island=-jnp.ones(nv, i32), efc_island=-jnp.ones(nefc, i32),
                     island_ntree=jnp.zeros(ni, i32), island_nv=jnp.zeros(ni, i32),
                     island_nefc=jnp.zeros(ni, i32), island_ne=jnp.zeros(ni, i32),
                     island_nf=jnp.zeros(ni, i32))
  inc, scan = _row_plan(m, d)
  inc = jnp.asarray(inc)
  if scan.any():
    tree_onehot = np.asarray(m.dof_treeid)[:, None] == np.arange(ntree)[None, :]
    nz = (jax.lax.stop_gradient(d.efc_J) != 0).astype(d.efc_J.dtype)
    inc = jnp.where(jnp.asarray(scan)[:, None], nz @ jnp.asarray(tree_onehot, nz.dtype) > 0, inc)
  if d.contact.geom is not None:
    lay = efc_layout(m, d.contact.dim)
    inc = inc.at[lay.contact0:].set(_contact_incidence(m, d, lay.con_slot))
  inc = inc & d.efc_active[:, None]
  incf = inc.astype(jnp.float32)
  adj = (incf.T @ incf) > 0  # trees sharing a row; the diagonal: trees with any row
  has_edge = jnp.diagonal(adj)
  lab = _components(adj, has_edge)
  ids = jnp.arange(ntree, dtype=i32)
  root = has_edge & (lab == ids)
  number = jnp.cumsum(root.astype(i32)) - 1
  tree_island = jnp.where(has_edge, number[jnp.maximum(lab, 0)], -1).astype(i32)
  dof_island = tree_island[jnp.asarray(m.dof_treeid)] if nv else jnp.zeros(0, i32)
  efc_island = jnp.max(jnp.where(inc, tree_island[None, :], -1), axis=1).astype(i32)
  slots = jnp.arange(ni, dtype=i32)

  def count(ids_, mask=None):
    hit = ids_[:, None] == slots[None, :]
    if mask is not None:
      hit = hit & mask[:, None]
    return jnp.sum(hit, axis=0, dtype=i32)

  etype = d.efc_type
  fric = (etype == ConstraintType.FRICTION_DOF) | (etype == ConstraintType.FRICTION_TENDON)
  return d.replace(
    nisland=jnp.sum(root, dtype=i32), tree_island=tree_island, dof_island=dof_island,
    efc_island=efc_island, island_ntree=count(tree_island), island_nv=count(dof_island),
    island_nefc=count(efc_island), island_ne=count(efc_island, etype == ConstraintType.EQUALITY),
    island_nf=count(efc_island, fric))
