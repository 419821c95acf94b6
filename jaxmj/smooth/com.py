"""Com-based quantities: subtree com, cinert, cdof (mj_comPos) and cvel, cdof_dot (mj_comVel)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.constants import MINVAL
from jaxmj.platform import materialized
from jaxmj.scan import body_plan, cached_plan
from jaxmj.types import Data, JointType, Model

# Trees of up to this many bodies sum their subtrees in straight-line code, one addition
# per body; larger ones a level at a time (`_subtree_levels`, a gather per child slot), whose
# trace grows with the tree's depth and branching, not its size.
SUBTREE_UNROLL_MAX = 64


@cached_plan
def _subtree_levels(m) -> dict:
  """Static plan of MuJoCo's backward pass `for i = nbody-1..1: x[parent[i]] += x[i]` level
  by level, deepest first: a body's subtree is complete once its children's are, and it
  takes them in decreasing index order, as MuJoCo adds them. Per depth k its bodies
  (`level`) and, per child slot j, each body's j-th child's row in level k + 1 (`kids`, -1:
  none); `place` (nbody,) each body's row in the levels laid end to end."""
  parent = np.asarray(m.body_parentid)
  depth = np.zeros(m.nbody, int)
  children = [[] for _ in range(m.nbody)]
  for i in range(1, m.nbody):
    depth[i] = depth[parent[i]] + 1
  for i in range(m.nbody - 1, 0, -1):
    children[parent[i]].append(i)
  level = [np.flatnonzero(depth == k) for k in range(depth.max() + 1)]
  at = np.zeros(m.nbody, int)
  for nodes in level:
    at[nodes] = np.arange(len(nodes))
  kids = []
  for nodes in level:
    table = np.full((len(nodes), max(len(children[b]) for b in nodes)), -1)
    for r, b in enumerate(nodes):
      table[r, :len(children[b])] = at[children[b]]
    kids.append(table)
  start = np.cumsum([0] + [len(nodes) for nodes in level])
  return {"level": level, "kids": kids, "place": start[depth] + at}


def subtree_sum(m: Model, x: jnp.ndarray, world: bool = True) -> jnp.ndarray:
  """(nbody, ...) sums of x (nbody, ...) over each body's subtree, in MuJoCo's order
  (mj_setConst's body_subtreemass, mj_comPos' subtree moments, mj_crb's composite
  inertias). world False: the world keeps its own x, as mj_crb leaves it. Fast arithmetic
  on a large tree: one product with the subtree matrix, as the derivative always is (a
  tangent needs no order)."""
  product = lambda v: subtree_product(m, v, world)  # noqa: E731
  if not m.opt.exact and m.nbody > SUBTREE_UNROLL_MAX:
    return product(x)

  @jax.custom_jvp
  def ordered(x):
    x = materialized(x)
    parent = np.asarray(m.body_parentid)
    if m.nbody <= SUBTREE_UNROLL_MAX:
      rows = list(jnp.unstack(x))
      for i in range(m.nbody - 1, 0, -1):
        if world or parent[i]:
          rows[parent[i]] = rows[parent[i]] + rows[i]
      return materialized(math.stack(rows)) if rows else x
    plan, below, blocks = _subtree_levels(m), None, []
    for k in range(len(plan["level"]) - 1, -1, -1):
      block = x[plan["level"][k]]
      for kid in plan["kids"][k].T if world or k else ():
        has = (kid >= 0).reshape((-1,) + (1,) * (x.ndim - 1))
        block = jnp.where(has, block + below[np.maximum(kid, 0)], block)
      blocks.append(block)
      below = block
    return materialized(jnp.concatenate(blocks[::-1])[plan["place"]])

  ordered.defjvp(lambda primals, tangents: (ordered(*primals), product(tangents[0])))
  return ordered(x)


def subtree_product(m: Model, x: jnp.ndarray, world: bool = True) -> jnp.ndarray:
  """(nbody, ...) sums of x (nbody, ...) over each body's subtree by one product with the
  subtree matrix, in no particular order (fast arithmetic, derivatives). world False: the
  world keeps its own x."""
  subtree = body_plan(m)["subtree"]
  if not world:
    subtree = subtree.copy()
    subtree[0] = np.eye(m.nbody)[0]
  return jnp.tensordot(jnp.asarray(subtree, x.dtype), x, 1)


def path_sum(parent: np.ndarray, own: jnp.ndarray, root: jnp.ndarray) -> jnp.ndarray:
  """(n, ...) the forward pass `x[0] = root; for i = 1..n-1: x[i] = x[parent[i]] + own[i]` in
  that order of additions (mj_comVel's and mj_rne's), for a static tree with parent[i] < i.
  own (n, ...) (own[0] unread), root (...). Up to SUBTREE_UNROLL_MAX nodes in straight-line
  code, larger trees one level at a time."""
  parent = np.asarray(parent)
  n = len(parent)
  root = jnp.broadcast_to(root, own.shape[1:]).astype(own.dtype)
  own = materialized(own)
  if n <= SUBTREE_UNROLL_MAX:
    rows, own_rows = [root], jnp.unstack(own)
    for i in range(1, n):
      rows.append(rows[parent[i]] + own_rows[i])
    return materialized(math.stack(rows))
  depth = np.zeros(n, int)
  for i in range(1, n):
    depth[i] = depth[parent[i]] + 1
  # level by level, each level's rows read from the one above by a gather of that level's
  # parents alone (a forest of several robots: one level of every tree at once), then one
  # gather back to node order; a round per depth over all n rows moved n x depth rows
  level = [np.flatnonzero(depth == k) for k in range(depth.max() + 1)]
  at = np.zeros(n, int)  # each node's row in its level
  for nodes in level:
    at[nodes] = np.arange(len(nodes))
  blocks = [root[None]]
  for nodes in level[1:]:
    blocks.append(blocks[-1][at[parent[nodes]]] + own[nodes])
  start = np.cumsum([0] + [len(nodes) for nodes in level])
  return materialized(jnp.concatenate(blocks)[start[depth] + at])


def subtree_mass(m: Model) -> jnp.ndarray:
  """(nbody,) mass of each subtree, from body_mass (so edits to body_mass take effect)."""
  return subtree_sum(m, m.body_mass)


@cached_plan
def _dof_plan(m) -> dict:
  """Static per-dof index sets for cdof and the velocity recursion.

  before: (nv, nv) float, [i, j] = 1 if dof j's velocity is seen by dof i in mj_comVel,
  that is j lies strictly up the dof tree, excluding the other dofs of i's ball joint and
  the other rotational dofs of i's free joint. zero_dot: translational free dofs, whose
  axes are fixed in the world, so MuJoCo sets their cdof_dot to zero.
  """
  jnt = m.dof_jntid
  jtype = m.jnt_type[jnt]
  local = np.arange(m.nv) - m.jnt_dofadr[jnt]  # index of the dof within its joint
  before = np.zeros((m.nv, m.nv))
  for i in range(m.nv):
    j = m.dof_parentid[i]
    while j >= 0:
      same = jnt[j] == jnt[i]
      if not same or (jtype[i] == JointType.FREE and local[i] >= 3 and local[j] < 3):
        before[i, j] = 1.0
      j = m.dof_parentid[j]
  groups = {}
  for t in JointType:
    sel = np.flatnonzero(jtype == t)
    if len(sel):
      groups[t] = {"dof": sel, "jnt": jnt[sel], "body": m.dof_bodyid[sel], "local": local[sel]}
  zero_dot = np.flatnonzero((jtype == JointType.FREE) & (local < 3))
  return {"before": before, "groups": groups, "zero_dot": zero_dot}


def com_pos(m: Model, d: Data) -> Data:
  """mj_comPos: subtree_com (global), cinert and cdof (com frame).

  Reads xipos, ximat, xmat, xanchor, xaxis. Writes subtree_com, cinert, cdof.
  """
  z = math.opaque_zero(d.time * d.time) if m.opt.exact else None
  stmass = subtree_mass(m)
  moment = subtree_sum(m, math.nofma(m.body_mass[:, None] * d.xipos, z))
  has_mass = stmass >= MINVAL
  # times the reciprocal, as mju_scl3(.., 1/mass) rounds
  scale = 1.0 / jnp.where(has_mass, stmass, 1.0)
  subtree_com = jnp.where(has_mass[:, None], moment * scale[:, None], d.xipos)
  root_com = subtree_com[m.body_rootid]
  cinert = math.inert_com(m.body_inertia, d.ximat, d.xipos - root_com, m.body_mass, z)
  cinert = cinert.at[0].set(0.0)  # MuJoCo leaves the world's zero (a URDF world has mass)

  dofs, cdofs = [], []  # each joint type's dofs and rows, placed at once
  for jtype, g in _dof_plan(m)["groups"].items():
    offset = root_com[g["body"]] - d.xanchor[g["jnt"]]
    if jtype == JointType.SLIDE:
      rows = jnp.concatenate([jnp.zeros_like(offset), d.xaxis[g["jnt"]]], axis=-1)
    else:
      if jtype == JointType.HINGE:
        axis = d.xaxis[g["jnt"]]
      else:
        # Rotational dofs of ball and free joints turn about the body's own axes.
        axis = d.xmat[g["body"], :, g["local"] % 3]
      moment = jnp.cross(axis, offset) if z is None else math.cross_nofma(axis, offset, z)
      rows = jnp.concatenate([axis, moment], axis=-1)
      if jtype == JointType.FREE:
        trans = np.eye(6)[3 + g["local"] % 3]
        rows = jnp.where((g["local"] < 3)[:, None], trans, rows)
    dofs.append(g["dof"])
    cdofs.append(rows.astype(d.xipos.dtype))
  # the joint types' rows placed at once (a GPU fuses math.place's gather, where a scatter
  # per joint type into zeros was a kernel and a copy each)
  cdof = jnp.zeros((m.nv, 6), d.xipos.dtype)
  if dofs:
    cdof = math.place(jnp.concatenate(cdofs), np.concatenate(dofs), m.nv)
  return d.replace(subtree_com=subtree_com, cinert=cinert, cdof=cdof)


@cached_plan
def _vel_groups(m) -> dict:
  """mj_comVel's forward pass as a tree of dof groups, the dofs whose velocities it adds to
  the running cvel at once (mju_mulDofVec: one hinge or slide dof, a ball's three, a free
  joint's three translations and then its three rotations), in its order.

  Node 0 is the world (cvel 0), node g + 1 group g. parent: the node whose running cvel the
  group adds to (the body's previous group, else the last one up the tree); first, size: the
  group's dofs (node 0: dof 0, size 1, unread). body_node: (nbody,) the node whose running
  cvel is the body's cvel. dof_before: (nv,) the node whose running cvel the dof's cdof_dot
  crosses (the one before its group).
  """
  jtype = m.jnt_type[m.dof_jntid]
  parent, first, size = [0], [0], [1]
  body_node = np.zeros(m.nbody, int)
  dof_before = np.zeros(m.nv, int)
  for b in range(1, m.nbody):
    node = body_node[m.body_parentid[b]]
    j, end = m.body_dofadr[b], m.body_dofadr[b] + m.body_dofnum[b]
    while j < end:
      k = 1 if jtype[j] in (JointType.HINGE, JointType.SLIDE) else 3
      dof_before[j:j + k] = node
      parent.append(node)
      first.append(j)
      size.append(k)
      node = len(parent) - 1
      j += k
    body_node[b] = node
  return {"parent": np.array(parent), "first": np.array(first), "size": np.array(size),
          "body_node": body_node, "dof_before": dof_before}


def com_vel(m: Model, d: Data) -> Data:
  """mj_comVel: body velocities cvel and dof axis derivatives cdof_dot (com frame).

  Reads cdof, qvel. Writes cvel, cdof_dot. Exact arithmetic: mj_comVel's forward pass, its
  sums in its order and its products rounded on their own (MuJoCo's bits; and a world's
  results do not depend on the worlds a vmap runs beside it, which a product's blocking may
  change). Fast: one product over each body's dofs, as the derivative always is (a tangent
  needs no order).
  """
  if not m.nv:
    return d.replace(cvel=jnp.zeros_like(d.cvel), cdof_dot=jnp.zeros_like(d.cdof_dot))

  def products(dof_vel):  # (cvel, seen) of dof velocities (nv, 6)
    return (jnp.asarray(body_plan(m)["body_dof"], dof_vel.dtype) @ dof_vel,
            jnp.asarray(_dof_plan(m)["before"], dof_vel.dtype) @ dof_vel)

  if not m.opt.exact:
    cvel, seen = products(d.cdof * d.qvel[:, None])
    return d.replace(cvel=cvel, cdof_dot=_zero_free_translations(
      m, math.motion_cross(seen, d.cdof)))

  @jax.custom_jvp
  def exact(cdof, qvel, z):
    return _com_vel_ordered(m, cdof, qvel, z)[:2]

  @exact.defjvp
  def exact_jvp(primals, tangents):
    (cdof, qvel, z), (dcdof, dqvel, _) = primals, tangents
    cvel, cdof_dot, seen = _com_vel_ordered(m, cdof, qvel, z)
    dcvel, dseen = products(dcdof * qvel[:, None] + cdof * dqvel[:, None])
    dcdof_dot = math.motion_cross(dseen, cdof) + math.motion_cross(seen, dcdof)
    return (cvel, cdof_dot), (dcvel, _zero_free_translations(m, dcdof_dot))

  cvel, cdof_dot = exact(d.cdof, d.qvel, math.opaque_zero(d.time * d.time))
  return d.replace(cvel=cvel, cdof_dot=cdof_dot)


def _com_vel_ordered(m: Model, cdof, qvel, z):
  """(cvel, cdof_dot, seen): mj_comVel's forward pass (`_vel_groups`); seen (nv, 6) the
  running cvel each dof's cdof_dot crosses."""
  g = _vel_groups(m)
  p = math.nofma(cdof * qvel[:, None], z)  # mju_mulDofVec's products (nv, 6)
  last = m.nv - 1
  three = (p[g["first"]] + p[np.minimum(g["first"] + 1, last)]) + p[
    np.minimum(g["first"] + 2, last)]
  own = jnp.where((g["size"] == 3)[:, None], three, p[g["first"]])
  running = path_sum(g["parent"], own, jnp.zeros(6, p.dtype))  # (1 + ngroup, 6)
  seen = running[g["dof_before"]]
  cdof_dot = _zero_free_translations(m, math.motion_cross_nofma(seen, cdof, z))
  return running[g["body_node"]], cdof_dot, seen


def _zero_free_translations(m: Model, cdof_dot: jnp.ndarray) -> jnp.ndarray:
  """cdof_dot with a free joint's translational rows zero: their axes are fixed in the world,
  and MuJoCo sets them so."""
  zero_dot = _dof_plan(m)["zero_dot"]
  if not len(zero_dot):
    return cdof_dot
  # a select, where a scatter was a GPU kernel of its own
  return jnp.where(math.static_mask(m.nv, zero_dot)[:, None], 0.0, cdof_dot)
