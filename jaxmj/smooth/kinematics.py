"""Forward kinematics: body, joint, geom and site frames in the global frame (mj_kinematics).

Bit for bit MuJoCo 4.0's arithmetic in float64 on CPU (read from libmujoco's machine code):
each body is composed from its parent's normalized frame (xpos + xmat·pos, xquat * quat),
its joints apply in the global frame, then its quaternion is normalized and turned into
xmat; geoms, sites and inertial frames are composed from the body frame or copied from it
as their `sameframe` class says, while the Model's local frames still agree with that class
(a frame moved by `m.replace` or set_const is composed, as a recompiled model's). Every
product is kept out of fused multiply-adds (`math.nofma`), because contact decisions
downstream (ties between equal depths) turn on the last bit of these frames. Fast
arithmetic (`opt.arithmetic`) drops those guards.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.constants import FRAME_EPS
from jaxmj.platform import traces_for_cpu
from jaxmj.scan import cached_plan, levels
from jaxmj.smooth import kinematics_tangent
from jaxmj.types import Data, JointType, Model

# mjtSameFrame
_SAME_BODY, _SAME_INERTIA, _SAME_BODYROT, _SAME_INERTIAROT = 1, 2, 3, 4

# Trees with at most this many levels (below the free bodies) are composed level by level
# in straight-line code, each level sized to its own bodies and joints; deeper trees run one
# scan over levels padded to the widest, so that the graph, and the compile time, stop
# growing with depth (a 60-link chain).
_UNROLLED_LEVELS = 8
_LEVEL_ARRAYS = ("start", "parent", "body", "jnt", "jtype")  # per level (stacked for a scan)


def _free_bodies(m) -> np.ndarray:
  """(nbody,) bool: the bodies whose one joint is free (their frames come from qpos)."""
  free = np.zeros(m.nbody, bool)
  has = m.body_jntnum == 1
  free[has] = m.jnt_type[m.body_jntadr[has]] == JointType.FREE
  return free


def _roots(m, fb: np.ndarray) -> dict:
  """What both passes' plans hold of the free bodies `fb` (ids: `free`, qpos addresses:
  `free_adr`) and of the mocap bodies (`mocap`, their `mocapid`)."""
  return {"free": fb, "free_adr": m.jnt_qposadr[m.body_jntadr[fb]],
          "mocap": np.flatnonzero(m.body_mocapid >= 0),
          "mocapid": m.body_mocapid[m.body_mocapid >= 0]}


@cached_plan
def _level_plan(m, unrolled_levels: int) -> dict:
  """Static plan of the pass over tree levels (depth 1, 2, ...; free bodies, always at depth
  1, are placed before it).

  Frames live in the rows of one array: row 0 the world, then free bodies, then one block
  per level, so that a level reads its parents by row and writes its block as one slice.
  A level's bodies are ordered by joint count, most first, so that the k-th joints of its
  bodies (slot k) apply to a prefix of its rows. Per level: `start` (its block), per row
  `parent` (row), `body` (nbody: padding), per row and slot `jnt` (njnt: padding) and
  `jtype` (0: none); per slot `count` (rows it covers) and `kinds` (joint types there).
  Up to `unrolled_levels` levels the pass is unrolled (`unroll`) and every level sized
  exactly; else the levels are stacked for a scan, padded to the widest level and to every
  slot."""
  free = _free_bodies(m)
  lv = [b[~free[b]] for b in levels(m.body_depth, start=1)]
  lv = [b[np.argsort(-m.body_jntnum[b], kind="stable")] for b in lv if len(b)]
  unroll = len(lv) <= unrolled_levels
  width = max([len(b) for b in lv], default=0)
  nslot = int(m.body_jntnum[~free].max(initial=0))
  fb = np.flatnonzero(free)
  row = np.zeros(m.nbody, int)
  row[fb] = 1 + np.arange(len(fb))
  # every joint's row in [the levels' (anchor, axis) rows in order, free joints]
  src = np.zeros(m.njnt, int)
  start, nout, plans = 1 + len(fb), 0, []
  for b in lv:
    n = len(b) if unroll else width
    body = np.append(b, np.full(n - len(b), m.nbody))
    jnt = np.full((n, nslot), m.njnt)
    jtype = np.zeros((n, nslot), np.int32)
    count = []
    for k in range(nslot):
      rows = np.flatnonzero(m.body_jntnum[b] > k)
      jnt[rows, k] = m.body_jntadr[b[rows]] + k
      jtype[rows, k] = m.jnt_type[jnt[rows, k]]
      src[jnt[rows, k]] = nout + rows
      count.append(len(rows) if unroll else n)
      nout += count[-1]
    row[b] = start + np.arange(len(b))
    plans.append({"start": start, "body": body, "jnt": jnt, "jtype": jtype, "count": count})
    start += n
  for p in plans:
    p["parent"] = row[np.append(m.body_parentid, 0)[p["body"]]]
    p["kinds"] = [frozenset(p["jtype"][:c, k].tolist()) for k, c in enumerate(p["count"])]
  if not unroll:
    plans = [{k: np.stack([p[k] for p in plans]) for k in _LEVEL_ARRAYS} | {
      "count": plans[0]["count"],
      "kinds": [frozenset().union(*(p["kinds"][k] for p in plans)) for k in range(nslot)]}]
  src[m.body_jntadr[fb]] = nout + np.arange(len(fb))
  return {"unroll": unroll, "levels": plans, "nrow": start, "row": row, "joint_src": src,
          **_roots(m, fb)}


def _local(m: Model, qpos, mocap_pos, mocap_quat, plan: dict, z):
  """What does not depend on the parent's frame, with a padding row appended: per body its
  offset (pos, quat) in the parent (mocap bodies: from mocap_pos/quat); per joint its pos,
  axis, rotation in the body frame (hinge: axis-angle, ball: qpos normalized) and
  displacement qpos - qpos0 (slide, hinge)."""
  dt = qpos.dtype
  pos, quat = m.body_pos, m.body_quat
  if len(plan["mocap"]):
    pos = pos.at[plan["mocap"]].set(mocap_pos[plan["mocapid"]])
    quat = quat.at[plan["mocap"]].set(math.normalize_quat(mocap_quat[plan["mocapid"]], z))
  pad = lambda x, row: jnp.concatenate([x, jnp.asarray([row], x.dtype)])  # noqa: E731
  adr = np.append(m.jnt_qposadr, 0)
  qpos = jnp.concatenate([qpos, jnp.zeros(4, dt)])
  dq = qpos[adr] - jnp.concatenate([m.qpos0.astype(dt), jnp.zeros(4, dt)])[adr]
  jaxis = pad(m.jnt_axis, [0, 0, 0])
  half = (dq * 0.5)[:, None]
  hinge = jnp.concatenate([jnp.cos(half), jnp.sin(half) * jaxis], axis=-1)
  ball = math.normalize_quat(qpos[adr[:, None] + np.arange(4)], z)
  is_ball = (np.append(m.jnt_type, 0) == JointType.BALL)[:, None]
  return {"bpos": pad(pos, [0, 0, 0]), "bquat": pad(quat, [1, 0, 0, 0]),
          "jpos": pad(m.jnt_pos, [0, 0, 0]), "jaxis": jaxis,
          "qloc": jnp.where(is_ball, ball, hinge), "dq": dq}


def _joints(count, kinds, jtype, jpos, jaxis, qloc, dq, pos, quat, z):
  """Applies each body's joints in slot order, in the global frame, to one level's rows
  (pos (w, 3), quat (w, 4)): slot k covers rows [0, count[k]) and holds joint types kinds[k]
  (0: none), and only those are computed. jtype (w, nslot), jpos, jaxis (w, nslot, 3),
  qloc (w, nslot, 4), dq (w, nslot). Returns pos, quat, and xanchor, xaxis (sum(count), 3)
  and the body's quaternion right after each joint (sum(count), 4: a ball joint's frame)."""
  rotating = {JointType.HINGE, JointType.BALL}
  anchors, axes, quats = [], [], []
  for k, (n, kind) in enumerate(zip(count, kinds)):
    if not n:
      continue
    p, q, t = pos[:n], quat[:n], jtype[:n, k, None]
    axis, anchor = jnp.unstack(
      math.rot_vec_quat(jnp.stack([jaxis[:n, k], jpos[:n, k]], 1), q[:, None], z), axis=1)
    anchor = anchor + p
    if kind & rotating:
      turned_q = math.quat_mul(q, qloc[:n, k], z)
      # rotation is about the anchor, not the body origin
      turned = anchor - math.rot_vec_quat(jpos[:n, k], turned_q, z)
      if kind <= rotating:
        p, q = turned, turned_q
      else:
        rotates = (t == JointType.HINGE) | (t == JointType.BALL)
        p, q = jnp.where(rotates, turned, p), jnp.where(rotates, turned_q, q)
    if JointType.SLIDE in kind:
      slid = p + math.nofma(axis * dq[:n, k, None], z)
      p = slid if kind == {JointType.SLIDE} else jnp.where(t == JointType.SLIDE, slid, p)
    quats.append(q)
    if n < len(pos):
      p, q = jnp.concatenate([p, pos[n:]]), jnp.concatenate([q, quat[n:]])
    pos, quat = p, q
    anchors, axes = anchors + [anchor], axes + [axis]
  cat = lambda x, k=3: jnp.concatenate(x) if x else jnp.zeros((0, k), pos.dtype)  # noqa: E731
  return pos, quat, cat(anchors), cat(axes), cat(quats, 4)


def _frame_rows(pos, quat, z):
  """Frame rows [pos (3), quat (4), mat (9)], the quaternion normalized (mj_kinematics)."""
  quat = math.normalize_quat(quat, z)
  mat = [x[:, None] for x in math.quat_to_mat_entries(quat, z)]
  return math.concatenate([pos, quat] + mat, 1)


def _bodies_stacked(m: Model, qpos, mocap_pos, mocap_quat, z):
  """xpos, xquat, xmat, xanchor, xaxis, level by level from the root (mj_kinematics1): each
  body composed from its parent's frame, then its joints applied in the global frame. Also
  per joint the body's quaternion right after it (free joints: the body's), for tangents."""
  dt = qpos.dtype
  plan = _level_plan(m, _UNROLLED_LEVELS)
  loc = _local(m, qpos, mocap_pos, mocap_quat, plan, z)
  a = plan["free_adr"]
  free_pos = qpos[a[:, None] + np.arange(3)]
  world = jnp.concatenate([jnp.zeros(3), jnp.array([1.0, 0, 0, 0]), jnp.eye(3).ravel()])
  # free quaternions: normalized when read, and again as every body's quaternion
  frame = jnp.concatenate([
    world.astype(dt)[None],
    _frame_rows(free_pos, math.normalize_quat(qpos[a[:, None] + np.arange(3, 7)], z), z),
    jnp.zeros((plan["nrow"] - 1 - len(a), 16), dt)])

  def level(count, kinds, frame, xs):
    start, parent, body, jnt, jtype = xs
    up = frame[parent]
    p = math.mat_vec3(up[:, 7:].reshape(-1, 3, 3), loc["bpos"][body], z) + up[:, :3]
    q = math.quat_mul(up[:, 3:7], loc["bquat"][body], z)
    p, q, anchor, axis, jquat = _joints(count, kinds, jtype, *(loc[k][jnt] for k in (
      "jpos", "jaxis", "qloc", "dq")), p, q, z)
    return jax.lax.dynamic_update_slice_in_dim(frame, _frame_rows(p, q, z), start, 0), (
      anchor, axis, jquat)

  out = []
  for lp in plan["levels"]:
    step = functools.partial(level, lp["count"], lp["kinds"])
    xs = tuple(lp[k] for k in _LEVEL_ARRAYS)
    frame, o = step(frame, xs) if plan["unroll"] else jax.lax.scan(step, frame, xs)
    out.append(o)
  src = plan["joint_src"]
  free_axis = m.jnt_axis[m.body_jntadr[plan["free"]]]
  xanchor = math.concatenate([o[0].reshape(-1, 3) for o in out] + [free_pos])[src]
  xaxis = math.concatenate([o[1].reshape(-1, 3) for o in out] + [free_axis])[src]
  jquat = math.concatenate([o[2].reshape(-1, 4) for o in out] + [frame[1:1 + len(a), 3:7]])[src]
  frame = frame[plan["row"]]
  return frame[:, :3], frame[:, 3:7], frame[:, 7:].reshape(-1, 3, 3), xanchor, xaxis, jquat


def _bodies(m: Model, qpos, mocap_pos, mocap_quat, z):
  """xpos, xquat, xmat, xanchor, xaxis and per joint the body's quaternion right after it
  (mj_kinematics1), in the pass that suits the compiler traces are made for
  (`platform.traces_for_cpu`): rows of stacked vectors on the CPU (_bodies_stacked),
  components elsewhere (_bodies_components). Both are the same arithmetic, bit for bit
  (tests/smooth/test_kinematics.py), so a trace made for one backend computes the same values
  on another, only more slowly.

  Why two: XLA:CPU runs a quaternion product as one outer-product kernel and its sums in
  another, and every component's arithmetic apart as kernels of their own (the components
  pass on the CPU, MJX's humanoid: 231 kernels against 148 for one world, 1.1x the time at
  batch 256). XLA's GPU fusion leaves every stacked product's concatenate as a kernel of its
  own where the next product reads all of it, and fuses a level of component arithmetic
  into one kernel (H200 target, batch 8192, mj_kinematics of MJX's humanoid: 62 kernels
  stacked, 16 as components). Free bodies alone need no pass over levels: the stacked
  frames then serve every platform."""
  if not _level_plan(m, _UNROLLED_LEVELS)["levels"] or traces_for_cpu():
    return _bodies_stacked(m, qpos, mocap_pos, mocap_quat, z)
  return _bodies_components(m, qpos, mocap_pos, mocap_quat, z)


_COMPONENT_ARRAYS = ("parent", "body", "jnt", "jtype")  # per level (stacked for a scan)


@cached_plan
def _component_plan(m, unrolled_levels: int) -> dict:
  """Static plan of _bodies_components' pass over tree levels: level k holds the bodies at
  depth k + 1 (free bodies, always at depth 1, in the first), and reads its parents' frames
  from level k - 1 alone (the first from the world), so that no level writes into a shared
  array.

  Per level: per row `parent` (its row in the previous level), `body` (nbody: padding, and
  free bodies, whose frames come from qpos), per row and slot `jnt` (njnt: padding) and
  `jtype` (0: none), per slot `kinds` (the joint types there). Up to `unrolled_levels`
  levels the pass is unrolled (`unroll`), each level sized exactly and given the slots its
  bodies use; else the levels are padded to the widest and stacked for a scan. `row`
  (nbody,) and `joint_src` (njnt,) place each body and joint in the levels' outputs laid end
  to end after the world (joint outputs level by level, slot by slot, then free joints)."""
  free = _free_bodies(m)
  lv = [b for b in levels(m.body_depth, start=1) if len(b)]
  unroll = len(lv) <= unrolled_levels
  width = max([len(b) for b in lv], default=0)
  nslot = int(m.body_jntnum[~free].max(initial=0))
  in_level = np.zeros(m.nbody, int)
  row, src = np.zeros(m.nbody, int), np.zeros(m.njnt, int)
  start, jstart, plans = 1, 0, []
  for b in lv:
    n = len(b) if unroll else width
    in_level[b] = np.arange(len(b))
    row[b] = start + np.arange(len(b))
    # slots fill from the first: an unrolled level's are those of its most jointed body
    ns = int(m.body_jntnum[b[~free[b]]].max(initial=0)) if unroll else nslot
    jnt = np.full((n, ns), m.njnt)
    jtype = np.zeros((n, ns), np.int32)
    for k in range(ns):
      rows = np.flatnonzero((m.body_jntnum[b] > k) & ~free[b])
      jnt[rows, k] = m.body_jntadr[b[rows]] + k
      jtype[rows, k] = m.jnt_type[jnt[rows, k]]
      src[jnt[rows, k]] = jstart + k * n + rows
    plans.append({"parent": np.append(in_level[m.body_parentid[b]], np.zeros(n - len(b), int)),
                  "body": np.append(np.where(free[b], m.nbody, b), np.full(n - len(b), m.nbody)),
                  "jnt": jnt, "jtype": jtype,
                  "kinds": [frozenset(jtype[:, k].tolist()) for k in range(ns)]})
    start, jstart = start + n, jstart + ns * n
  if not unroll:
    plans = [{k: np.stack([p[k] for p in plans]) for k in _COMPONENT_ARRAYS} | {
      "kinds": [frozenset().union(*(p["kinds"][k] for p in plans)) for k in range(nslot)]}]
  fb = np.flatnonzero(free)
  src[m.body_jntadr[fb]] = jstart + np.arange(len(fb))
  return {"unroll": unroll, "levels": plans, "row": row, "joint_src": src,
          "free_row": in_level[fb] if lv else np.zeros(0, int), **_roots(m, fb)}


def _cols(x) -> list:
  """The components of x (..., k): k arrays of its leading shape."""
  return [x[..., i] for i in range(x.shape[-1])]


def _joints_c(kinds, jtype, jpos, jaxis, qloc, dq, pos, quat, z):
  """_joints on components, over all of a level's rows (w,): slot k holds joint types
  kinds[k] (0: none), and only those are computed. jtype (w, nslot); jpos, jaxis, qloc: per
  slot its component list; dq: per slot (w,). Returns pos, quat and per slot (xanchor,
  xaxis, the body's quaternion right after the joint) as component lists."""
  rotating = {JointType.HINGE, JointType.BALL}
  where = lambda mask, a, b: [jnp.where(mask, x, y) for x, y in zip(a, b)]  # noqa: E731
  out = []
  for k, kind in enumerate(kinds):
    t = jtype[:, k]
    axis = math.rot_vec_quat_c(jaxis[k], quat, z)
    anchor = [a + b for a, b in zip(math.rot_vec_quat_c(jpos[k], quat, z), pos)]
    p, q = pos, quat
    if kind & rotating:
      turned_q = math.quat_mul_c(quat, qloc[k], z)
      # rotation is about the anchor, not the body origin
      turned = [a - b for a, b in zip(anchor, math.rot_vec_quat_c(jpos[k], turned_q, z))]
      if kind <= rotating:
        p, q = turned, turned_q
      else:
        rotates = (t == JointType.HINGE) | (t == JointType.BALL)
        p, q = where(rotates, turned, p), where(rotates, turned_q, q)
    if JointType.SLIDE in kind:
      slid = [a + b for a, b in zip(p, math.nofma_all([x * dq[k] for x in axis], z))]
      p = slid if kind == {JointType.SLIDE} else where(t == JointType.SLIDE, slid, p)
    out.append((anchor, axis, q))
    pos, quat = p, q
  return pos, quat, out


def _level_c(kinds, loc, z, prev, xs):
  """One level's frames (pos, quat, mat: component lists of (w,) arrays), each body composed
  from its parent's normalized frame in `prev`, then its joints; and its joints' outputs.
  The level ends in an optimization barrier: fused across levels, XLA would recompute each
  level in every kernel that reads it (MJX's humanoid: 8,573 fused instructions against the
  stacked pass's 6,958, and a step compiling 26% longer)."""
  parent, body, jnt, jtype = xs
  up = [[c[parent] for c in v] for v in prev]
  pos = [a + b for a, b in zip(math.mat_vec3_c(up[2], _cols(loc["bpos"][body]), z), up[0])]
  quat = math.quat_mul_c(up[1], _cols(loc["bquat"][body]), z)
  per_slot = lambda name: [_cols(x) for x in jnp.unstack(loc[name][jnt], axis=1)]  # noqa: E731
  pos, quat, out = _joints_c(kinds, jtype, per_slot("jpos"), per_slot("jaxis"),
                             per_slot("qloc"), jnp.unstack(loc["dq"][jnt], axis=1), pos, quat, z)
  quat = math.normalize_quat_c(quat, z)
  return jax.lax.optimization_barrier(((pos, quat, math.quat_to_mat_c(quat, z)), out))


def _bodies_components(m: Model, qpos, mocap_pos, mocap_quat, z):
  """_bodies with each vector a list of its components (math's `_c` forms), level by level
  (_component_plan)."""
  dt = qpos.dtype
  plan = _component_plan(m, _UNROLLED_LEVELS)
  loc = _local(m, qpos, mocap_pos, mocap_quat, plan, z)
  a = plan["free_adr"]
  free_pos = _cols(qpos[a[:, None] + np.arange(3)])
  # free quaternions: normalized when read, and again as every body's quaternion
  free_quat = math.normalize_quat_c(
    math.normalize_quat_c(_cols(qpos[a[:, None] + np.arange(3, 7)]), z), z)
  free = (free_pos, free_quat, math.quat_to_mat_c(free_quat, z))
  world = tuple(_cols(jnp.asarray([x], dt)) for x in ([0.0] * 3, [1.0, 0, 0, 0], np.eye(3).ravel()))

  def first(lp):
    """The first level, from the world; its free bodies' frames from qpos."""
    xs = tuple(lp[k] if plan["unroll"] else lp[k][0] for k in _COMPONENT_ARRAYS)
    frames, out = _level_c(lp["kinds"], loc, z, world, xs)
    if len(a):
      at = np.zeros(len(xs[0]), int)
      at[plan["free_row"]] = np.arange(len(a))
      mask = math.static_mask(len(at), plan["free_row"])
      frames = tuple([jnp.where(mask, f[at], c) for f, c in zip(fv, cv)]
                     for fv, cv in zip(free, frames))
    return frames, out

  # blocks of rows: (frames, per output (xanchor, xaxis, quat) its parts, slot by slot)
  by_output = lambda out: [[s[i] for s in out] for i in range(3)]  # noqa: E731
  blocks = [(world, [[], [], []])]
  if plan["unroll"]:
    prev = None
    for i, lp in enumerate(plan["levels"]):
      xs = tuple(lp[k] for k in _COMPONENT_ARRAYS)
      prev, out = first(lp) if i == 0 else _level_c(lp["kinds"], loc, z, prev, xs)
      blocks.append((prev, by_output(out)))
  elif plan["levels"]:
    lp = plan["levels"][0]
    prev, out = first(lp)
    blocks.append((prev, by_output(out)))

    def step(prev, xs):
      frames, out = _level_c(lp["kinds"], loc, z, prev, xs)
      return frames, (frames, out)

    _, (frames, out) = jax.lax.scan(step, prev, tuple(lp[k][1:] for k in _COMPONENT_ARRAYS))
    # scanned (levels, W) frames and, slot by slot, (levels, slots, W) joints: level-major
    blocks.append((jax.tree.map(lambda x: x.reshape(-1), frames), [[jax.tree.map(
      lambda *x: jnp.stack(x, axis=1).reshape(-1), *parts)] if parts else []
      for parts in by_output(out)]))
  free_axis = _cols(m.jnt_axis[m.body_jntadr[plan["free"]]].astype(dt))
  take = lambda parts, idx: math.stack(  # noqa: E731
    [jnp.concatenate(c)[idx] for c in zip(*parts)], -1)
  xpos, xquat, xmat = (take([b[0][i] for b in blocks], plan["row"]) for i in range(3))
  xanchor, xaxis, jquat = (take([x for b in blocks for x in b[1][i]] + [f], plan["joint_src"])
                           for i, f in enumerate((free_pos, free_axis, free_quat)))
  return xpos, xquat, xmat.reshape(-1, 3, 3), xanchor, xaxis, jquat


@jax.custom_jvp
def _exact(value, smooth):
  """`value`, differentiated as `smooth` (the same quantity computed another way)."""
  return value


@_exact.defjvp
def _exact_jvp(primals, tangents):
  return primals[0], tangents[1]


def frames_near(a, b) -> jnp.ndarray:
  """(n,) every component of a and b (n, k) within FRAME_EPS: MuJoCo's compiler's test of
  coinciding frames (also mjcf/compile/setconst.py's); numpy arrays in, numpy out."""
  return (abs(a - b) < FRAME_EPS).all(axis=-1)


def same_rotation(q, ref) -> jnp.ndarray:
  """(n,) whether quaternions q and ref (n, 4) are the same rotation (q or -q) within
  FRAME_EPS."""
  return frames_near(q, ref) | frames_near(q, -ref)


def _still_same(pos, quat, ipos, iquat, kind: int, position: bool) -> jnp.ndarray:
  """(n,) whether local frames (pos, quat) compiled as `kind` still coincide with their body's
  frame or inertial frame (ipos, iquat per object) in rotation (and position too, with
  `position`), as recompiling the Model with these values would find: a class is static, the
  Model's frames are leaves, and a frame moved by `m.replace` or set_const is composed."""
  if kind in (_SAME_BODY, _SAME_BODYROT):
    rot = same_rotation(quat, np.array([1.0, 0, 0, 0], quat.dtype))
    return rot & frames_near(pos, 0.0) if position else rot
  rot = same_rotation(quat, iquat)
  return rot & frames_near(pos, ipos) if position else rot


def applied_sameframe(sameframe: np.ndarray, pos, quat, ipos=None, iquat=None) -> np.ndarray:
  """(n,) the sameframe classes kinematics applies to local frames (pos, quat) compiled as
  `sameframe`, given their body's inertial frame (ipos, iquat per object; None for bodies'
  own inertial frames): a class whose copy no longer holds (`_still_same`) falls to the
  rotation-only class or to none, as a recompiled model's would. For to_mujoco, whose
  MjModel then copies where jaxmj copies."""
  out = np.zeros(len(sameframe), np.uint8)
  for kind, rot_only in ((_SAME_BODY, _SAME_BODYROT), (_SAME_BODYROT, _SAME_BODYROT),
                         (_SAME_INERTIA, _SAME_INERTIAROT),
                         (_SAME_INERTIAROT, _SAME_INERTIAROT)):
    mask = np.asarray(sameframe) == kind
    if not mask.any():
      continue
    pos_ok, rot_ok = (_still_same(np.asarray(pos), np.asarray(quat), ipos, iquat, kind, p)
                      for p in (True, False))
    full = pos_ok if kind in (_SAME_BODY, _SAME_INERTIA) else rot_ok
    out[mask] = np.where(full, kind, np.where(rot_ok, rot_only, 0))[mask]
  return out


def _copies(composed, frames, inert, bodyid, pos, quat, sameframe):
  """mj_local2GlobalQuat's copies: (xpos, xquat, xmat) of objects fixed in their bodies at
  local (pos, quat), `composed` from the body frame, replaced by the body's frame `frames`
  or inertial frame `inert` = (xipos, xiquat, ximat, body_ipos, body_iquat) where
  `sameframe` (static) says they coincide and the Model's frames still do (`_still_same`).
  Copies carry the composed frame's derivatives, so gradients with respect to the local
  pos and quat stay."""
  same_pos = {_SAME_BODY: frames, _SAME_INERTIA: inert}
  same_rot = {_SAME_BODY: frames, _SAME_BODYROT: frames, _SAME_INERTIA: inert,
              _SAME_INERTIAROT: inert}
  ipos, iquat = (None, None) if inert is None else (inert[3][bodyid], inert[4][bodyid])
  out = list(composed)
  still = {}  # (kind, position): the copy's condition, shared by xquat and xmat
  for k, table in ((0, same_pos), (1, same_rot), (2, same_rot)):
    value, smooth = out[k], out[k]
    for kind, src in table.items():
      mask = sameframe == kind
      if not mask.any():
        continue
      key = (kind, k == 0)
      if key not in still:
        still[key] = mask & _still_same(pos, quat, ipos, iquat, *key)
      col = still[key].reshape((-1,) + (1,) * (out[k].ndim - 1))
      value = jnp.where(col, src[k][bodyid], value)
      if k == 1:
        # the local rotation may have matched -ref: the copy keeps the body's sign
        ref = np.array([1.0, 0, 0, 0]) if src is frames else iquat
        flip = col & (jnp.sum(quat * ref, -1, keepdims=True) < 0)
        smooth = jnp.where(flip, -smooth, smooth)
    out[k] = _exact(value, smooth) if value is not out[k] else value
  return tuple(out)


_OUTPUTS = ("xpos", "xquat", "xmat", "xipos", "ximat", "xanchor", "xaxis", "geom_xpos",
            "geom_xquat", "geom_xmat", "site_xpos", "site_xquat", "site_xmat")


def kinematics(m: Model, d: Data) -> Data:
  """mj_kinematics: global frames of bodies, inertial frames, joints, geoms and sites.

  Reads qpos, mocap_pos, mocap_quat. Writes xpos, xquat, xmat, xipos, ximat, xanchor, xaxis,
  geom_xpos/xquat/xmat, site_xpos/xquat/xmat. Bodies are composed one tree level at a time,
  each level one vectorized pass (unrolled for shallow trees, a scan for deep ones), after
  the parts that do not depend on the parent (joint rotations) for all joints at once;
  inertial, geom and site frames in one pass after. Derivatives in qpos are the rigid-body
  Jacobian's (kinematics_tangent.py), not those of the composition.
  """
  out = kinematics_tangent.frames(_frames, m, d.qpos, d.mocap_pos, d.mocap_quat, d.time)
  return d.replace(**dict(zip(_OUTPUTS, out)))


def _frames(m: Model, qpos, mocap_pos, mocap_quat, time):
  """kinematics' arithmetic: (its outputs in _OUTPUTS' order, per joint the body's
  quaternion right after the joint (njnt, 4))."""
  # a zero the compiler cannot fold (time² is never negative), for the nofma guards; fast
  # arithmetic leaves the products to the compiler
  z = math.opaque_zero(time * time) if m.opt.exact else None
  xpos, xquat, xmat, xanchor, xaxis, jquat = _bodies(m, qpos, mocap_pos, mocap_quat, z)
  frames = (xpos, xquat, xmat)
  # xpos + xmat·pos, xquat * quat and its matrix for inertial frames, geoms and sites at once
  bodyid = np.concatenate([np.arange(m.nbody), m.geom_bodyid, m.site_bodyid]).astype(int)
  pos = jnp.concatenate([m.body_ipos, m.geom_pos, m.site_pos])
  quat = jnp.concatenate([m.body_iquat, m.geom_quat, m.site_quat])
  cq = math.quat_mul(xquat[bodyid], quat, z)
  composed = (math.mat_vec3(xmat[bodyid], pos, z) + xpos[bodyid], cq, math.quat_to_mat(cq, z))
  cut = np.cumsum([m.nbody, m.ngeom])
  parts = [jnp.split(x, cut) for x in composed]
  body, geom, site = ([f[i] for f in parts] for i in range(3))
  xipos, xiquat, ximat = _copies(body, frames, None, bodyid[:cut[0]], m.body_ipos,
                                 m.body_iquat, m.body_sameframe)
  # the world's inertial frame is the world frame, even with a (URDF) world inertial
  xipos, xiquat = xipos.at[0].set(0.0), xiquat.at[0].set(xquat[0])
  ximat = ximat.at[0].set(jnp.eye(3, dtype=ximat.dtype))
  inert = (xipos, xiquat, ximat, m.body_ipos, m.body_iquat)
  geom = _copies(geom, frames, inert, m.geom_bodyid, m.geom_pos, m.geom_quat,
                 m.geom_sameframe)
  site = _copies(site, frames, inert, m.site_bodyid, m.site_pos, m.site_quat,
                 m.site_sameframe)
  return (xpos, xquat, xmat, xipos, ximat, xanchor, xaxis) + geom + site, jquat
