"""MuJoCo's engine arithmetic on the host, for the constants mj_setConst derives at qpos0.

mj_setConst runs the engine itself (mj_kinematics, mj_comPos, mj_crb, mj_factorM, mj_solveM,
mj_jac...) to fill dof_M0, the inverse weights, actuator_acc0, the camera and light offsets
and dof_length. This module repeats those computations operation by operation in IEEE
doubles, in MuJoCo 4.0's order of operations, so that the constants are bit-equal to
mjModel's: the pinned libmujoco.so.4.0.0 fuses no multiply-adds, and numpy's elementwise
arithmetic rounds each operation as C does. Sums are never left to numpy's reductions or
BLAS (their order differs): `dot` and `dot_sparse` are mju_dot's and mju_dotSparse's
four-accumulator orders, the rest is written out term by term.

Vectors are component-first: a 3-vector is a sequence of 3 components, each a float or an
array holding one component of many vectors, so the same helper serves one body (Python
floats) or many (numpy arrays) with the same rounding.
"""

from __future__ import annotations

import math

import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.mjcf.compile import frames

FREE, BALL, SLIDE, HINGE = 0, 1, 2, 3
SAMEFRAME_NONE, SAMEFRAME_BODY, SAMEFRAME_INERTIA = 0, 1, 2
SAMEFRAME_BODYROT, SAMEFRAME_INERTIAROT = 3, 4


# ------------------------------------------------------------------------------ vector algebra


def _four_sums(a, b):
  """mju_dot's and mju_dotSparse's common part: four interleaved partial sums over the
  leading multiple of four, combined as (s0 + s2) + (s1 + s3); also returns where it stopped."""
  s = [0.0, 0.0, 0.0, 0.0]
  i = 0
  while i <= len(a) - 4:
    for k in range(4):
      s[k] = s[k] + a[i + k] * b[i + k]
    i += 4
  return (s[0] + s[2]) + (s[1] + s[3]), i


def dot(a, b):
  """mju_dot: `_four_sums`, plus the remaining (up to three) products summed on their own.
  a, b: sequences of equal length."""
  res, i = _four_sums(a, b)
  rem = len(a) - i
  if rem == 3:
    res = res + (a[i] * b[i] + a[i + 1] * b[i + 1] + a[i + 2] * b[i + 2])
  elif rem == 2:
    res = res + (a[i] * b[i] + a[i + 1] * b[i + 1])
  elif rem == 1:
    res = res + a[i] * b[i]
  return res


def dot_sparse(a, b):
  """mju_dotSparse: as `dot`, but the remaining products are added one at a time."""
  res, i = _four_sums(a, b)
  for k in range(i, len(a)):
    res = res + a[k] * b[k]
  return res


def mulquat(a, b) -> list:
  """mju_mulQuat (4.0's pairing of the four products)."""
  return [(a[0] * b[0] - a[1] * b[1]) - (a[2] * b[2] + a[3] * b[3]),
          (a[0] * b[1] + a[1] * b[0]) + (a[2] * b[3] - a[3] * b[2]),
          (a[0] * b[2] - a[1] * b[3]) + (a[2] * b[0] + a[3] * b[1]),
          (a[0] * b[3] + a[1] * b[2]) + (a[3] * b[0] - a[2] * b[1])]


def rotvecquat(v, q) -> list:
  """mju_rotVecQuat: v + 2 u x (w v + u x v), u = q[1:]."""
  t0 = (q[0] * v[0] + q[2] * v[2]) - q[3] * v[1]
  t1 = (q[0] * v[1] + q[3] * v[0]) - q[1] * v[2]
  t2 = (q[0] * v[2] + q[1] * v[1]) - q[2] * v[0]
  r0 = q[2] * t2 - q[3] * t1
  r1 = q[3] * t0 - q[1] * t2
  r2 = q[1] * t1 - q[2] * t0
  return [(r0 + r0) + v[0], (r1 + r1) + v[1], (r2 + r2) + v[2]]


def quat2mat(q) -> list:
  """mju_quat2Mat: row-major 3x3 (9 components)."""
  ww, xx, yy, zz = q[0] * q[0], q[1] * q[1], q[2] * q[2], q[3] * q[3]
  xy, wz, xz, wy = q[1] * q[2], q[0] * q[3], q[1] * q[3], q[0] * q[2]
  yz, wx = q[2] * q[3], q[0] * q[1]
  off = [xy - wz, xz + wy, xy + wz, yz - wx, xz - wy, yz + wx]
  off = [x + x for x in off]
  return [(ww - yy) + (xx - zz), off[0], off[1],
          off[2], (ww + yy) - (xx + zz), off[3],
          off[4], off[5], (ww - yy) - (xx - zz)]


def normalize4(q) -> list:
  """mju_normalize4 of one quaternion (floats): q / |q| as q * (1/|q|), unchanged within
  MINVAL of unit length, the identity below MINVAL."""
  n = math.sqrt((q[0] * q[0] + q[1] * q[1]) + (q[2] * q[2] + q[3] * q[3]))
  if n < MINVAL:
    return [1.0, 0.0, 0.0, 0.0]
  if abs(n - 1.0) > MINVAL:
    inv = 1.0 / n
    return [q[0] * inv, q[1] * inv, q[2] * inv, q[3] * inv]
  return [float(x) for x in q]


def normalize3(v) -> list:
  """mju_normalize3 of one vector (floats): v * (1/|v|), even within MINVAL of unit length
  (unlike normalize4), (1, 0, 0) below MINVAL."""
  n = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
  if n < MINVAL:
    return [1.0, 0.0, 0.0]
  inv = 1.0 / n
  return [v[0] * inv, v[1] * inv, v[2] * inv]


def sub_quat(qa, qb) -> list:
  """mju_subQuat of two quaternions (floats): the rotation vector of neg(qb) * qa."""
  q = mulquat([qb[0], -qb[1], -qb[2], -qb[3]], qa)
  n = math.sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
  axis = normalize3(q[1:])
  speed = 2 * math.atan2(n, q[0])
  if speed > math.pi:  # more than half a turn: the other way round
    speed -= 2 * math.pi
  return [axis[0] * speed, axis[1] * speed, axis[2] * speed]


def matvec3(mat, v) -> list:
  """mju_mulMatVec3: row-major 3x3 (9 components) times v, each row left to right."""
  return [mat[3 * r] * v[0] + mat[3 * r + 1] * v[1] + mat[3 * r + 2] * v[2] for r in range(3)]


def cross(a, b) -> list:
  """mju_cross."""
  return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def dist3(a, b):
  """mju_dist3 of two points (floats)."""
  d0, d1, d2 = a[0] - b[0], a[1] - b[1], a[2] - b[2]
  return math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)


def _rows(x: np.ndarray, width: int) -> list:
  """(n, width) array -> component-first list of `width` arrays of length n."""
  return list(np.asarray(x, np.float64).reshape(-1, width).T)


# ---------------------------------------------------------------------------- mj_kinematics


def kinematics(f: dict, qpos: np.ndarray) -> dict:
  """mj_kinematics at configuration qpos (mocap bodies at their body_pos/quat).

  ``f`` holds MjModel fields (body_*, jnt_*, qpos0); body_sameframe is used for the
  inertial frames. Returns xpos (nbody, 3), xquat (nbody, 4), xmat, ximat (nbody, 3, 3),
  xipos (nbody, 3), xanchor, xaxis (njnt, 3), as numpy arrays.
  """
  parent = np.asarray(f["body_parentid"]).tolist()
  nbody = len(parent)
  jntadr, jntnum = np.asarray(f["body_jntadr"]).tolist(), np.asarray(f["body_jntnum"]).tolist()
  mocap = np.asarray(f["body_mocapid"]).tolist()
  bpos = np.reshape(f["body_pos"], (-1, 3)).tolist()
  bquat = np.reshape(f["body_quat"], (-1, 4)).tolist()
  jtype, qadr = np.asarray(f["jnt_type"]).tolist(), np.asarray(f["jnt_qposadr"]).tolist()
  jpos, jaxis = np.reshape(f["jnt_pos"], (-1, 3)).tolist(), np.reshape(f["jnt_axis"],
                                                                        (-1, 3)).tolist()
  qpos, qpos0 = np.asarray(qpos, float).tolist(), np.asarray(f["qpos0"], float).tolist()
  xpos, xquat = [[0.0] * 3] * nbody, [[1.0, 0.0, 0.0, 0.0]] * nbody
  xmat = [[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]] * nbody
  njnt = len(jtype)
  xanchor, xaxis = [[0.0] * 3] * njnt, [[0.0] * 3] * njnt
  for i in range(1, nbody):
    ja, jn = jntadr[i], jntnum[i]
    if jn == 1 and jtype[ja] == FREE:
      a = qadr[ja]
      pos = qpos[a:a + 3]
      # mj_normalizeQuat normalizes qpos first, then the body quaternion is normalized
      quat = normalize4(normalize4(qpos[a + 3:a + 7]))
      xanchor[ja], xaxis[ja] = pos, jaxis[ja]
    else:
      p = parent[i]
      bq = normalize4(bquat[i]) if mocap[i] >= 0 else bquat[i]
      vec = matvec3(xmat[p], bpos[i])
      pos = [vec[0] + xpos[p][0], vec[1] + xpos[p][1], vec[2] + xpos[p][2]]
      quat = mulquat(xquat[p], bq)
      for j in range(ja, ja + jn):
        axis = rotvecquat(jaxis[j], quat)
        anc = rotvecquat(jpos[j], quat)
        anc = [anc[0] + pos[0], anc[1] + pos[1], anc[2] + pos[2]]
        a = qadr[j]
        if jtype[j] == SLIDE:
          dq = qpos[a] - qpos0[a]
          pos = [pos[0] + axis[0] * dq, pos[1] + axis[1] * dq, pos[2] + axis[2] * dq]
        else:
          if jtype[j] == BALL:
            qloc = normalize4(qpos[a:a + 4])
          else:
            half = (qpos[a] - qpos0[a]) * 0.5
            s = math.sin(half)
            qloc = [math.cos(half), s * jaxis[j][0], s * jaxis[j][1], s * jaxis[j][2]]
          quat = mulquat(quat, qloc)
          # rotation is about the anchor, not the body origin
          off = rotvecquat(jpos[j], quat)
          pos = [anc[0] - off[0], anc[1] - off[1], anc[2] - off[2]]
        xanchor[j], xaxis[j] = anc, axis
      quat = normalize4(quat)
    xpos[i], xquat[i], xmat[i] = pos, quat, quat2mat(quat)
  out = dict(xpos=np.array(xpos, float), xquat=np.array(xquat, float),
             xmat=np.array(xmat, float).reshape(-1, 3, 3),
             xanchor=np.array(xanchor, float).reshape(-1, 3),
             xaxis=np.array(xaxis, float).reshape(-1, 3))
  same = np.asarray(f["body_sameframe"]).copy()
  same[0] = SAMEFRAME_BODY  # the world's inertial frame is the world frame
  out["xipos"], out["ximat"] = local_to_global(
    out, np.arange(nbody), f["body_ipos"], f["body_iquat"], same)
  return out


def local_to_global(kin: dict, bodyid, pos, quat, sameframe=None):
  """mj_local2Global for many objects fixed in bodies: global positions (n, 3) and
  rotation matrices (n, 3, 3), copied from the body frame (sameframe BODY, BODYROT) or the
  inertial frame (INERTIA, INERTIAROT) where the compiler found them to coincide.
  quat None: positions only (the second result is None)."""
  bodyid = np.asarray(bodyid, int)
  n = len(bodyid)
  same = np.zeros(n, int) if sameframe is None else np.asarray(sameframe, int)
  xmat = kin["xmat"][bodyid].reshape(-1, 9)
  xpos = kin["xpos"][bodyid]
  vec = matvec3(list(xmat.T), _rows(pos, 3))
  out_pos = np.stack([vec[k] + xpos[:, k] for k in range(3)], -1).reshape(n, 3)
  pos_body = same == SAMEFRAME_BODY
  out_pos[pos_body] = xpos[pos_body]
  if "xipos" in kin:
    pos_inert = same == SAMEFRAME_INERTIA
    out_pos[pos_inert] = kin["xipos"][bodyid[pos_inert]]
  if quat is None:
    return out_pos, None
  q = mulquat(list(kin["xquat"][bodyid].T), _rows(quat, 4))
  out_mat = np.stack(quat2mat(q), -1).reshape(n, 3, 3)
  rot_body = np.isin(same, (SAMEFRAME_BODY, SAMEFRAME_BODYROT))
  out_mat[rot_body] = kin["xmat"][bodyid[rot_body]]
  if "ximat" in kin:
    rot_inert = np.isin(same, (SAMEFRAME_INERTIA, SAMEFRAME_INERTIAROT))
    out_mat[rot_inert] = kin["ximat"][bodyid[rot_inert]]
  return out_pos, out_mat


# ---------------------------------------------------------------------------- mj_comPos


def subtree_com(f: dict, kin: dict) -> np.ndarray:
  """subtree_com (nbody, 3) as mj_comPos: each body's mass-weighted position, its
  children's sums added to it from the last child up, times 1/mass."""
  parent = np.asarray(f["body_parentid"]).tolist()
  mass = np.asarray(f["body_mass"], float).tolist()
  xipos = kin["xipos"].tolist()
  com = [[x[0] * w, x[1] * w, x[2] * w] for x, w in zip(xipos, mass, strict=True)]
  msub = list(mass)
  for i in range(len(parent) - 1, -1, -1):
    c = com[i]
    if i:
      p = com[parent[i]]
      p[0], p[1], p[2] = p[0] + c[0], p[1] + c[1], p[2] + c[2]
      msub[parent[i]] = msub[parent[i]] + msub[i]
    if msub[i] < MINVAL:
      com[i] = list(xipos[i])
    else:
      s = 1.0 / max(MINVAL, msub[i])
      com[i] = [c[0] * s, c[1] * s, c[2] * s]
  return np.array(com, float)


def cinert(f: dict, kin: dict, com: np.ndarray) -> np.ndarray:
  """cinert (nbody, 10) as mju_inertCom about each tree's subtree com; the world's is 0."""
  mass = np.asarray(f["body_mass"], float)
  inert = _rows(f["body_inertia"], 3)
  mat = list(kin["ximat"].reshape(-1, 9).T)
  root = np.asarray(f["body_rootid"], int)
  dif = [kin["xipos"][:, k] - com[root, k] for k in range(3)]
  # tmp = diag(inertia) * mat'
  tmp = [mat[0] * inert[0], mat[3] * inert[0], mat[6] * inert[0],
         mat[1] * inert[1], mat[4] * inert[1], mat[7] * inert[1],
         mat[2] * inert[2], mat[5] * inert[2], mat[8] * inert[2]]
  res = [mat[0] * tmp[0] + mat[1] * tmp[3] + mat[2] * tmp[6],
         mat[3] * tmp[1] + mat[4] * tmp[4] + mat[5] * tmp[7],
         mat[6] * tmp[2] + mat[7] * tmp[5] + mat[8] * tmp[8],
         mat[0] * tmp[1] + mat[1] * tmp[4] + mat[2] * tmp[7],
         mat[0] * tmp[2] + mat[1] * tmp[5] + mat[2] * tmp[8],
         mat[3] * tmp[2] + mat[4] * tmp[5] + mat[5] * tmp[8]]
  res[0] = res[0] + mass * (dif[1] * dif[1] + dif[2] * dif[2])
  res[1] = res[1] + mass * (dif[0] * dif[0] + dif[2] * dif[2])
  res[2] = res[2] + mass * (dif[0] * dif[0] + dif[1] * dif[1])
  res[3] = res[3] - mass * dif[0] * dif[1]
  res[4] = res[4] - mass * dif[0] * dif[2]
  res[5] = res[5] - mass * dif[1] * dif[2]
  res += [mass * dif[0], mass * dif[1], mass * dif[2], mass]
  out = np.stack(res, -1)
  out[0] = 0.0
  return out


def cdof(f: dict, kin: dict, com: np.ndarray) -> np.ndarray:
  """cdof (nv, 6) as mj_comPos: [axis, axis x (com - anchor)] about the tree's subtree com;
  ball and free rotations turn about the body's own axes, free translations are global."""
  jtype = np.asarray(f["jnt_type"]).tolist()
  jdof, jbody = np.asarray(f["jnt_dofadr"]).tolist(), np.asarray(f["jnt_bodyid"]).tolist()
  root = np.asarray(f["body_rootid"]).tolist()
  out = np.zeros((len(f["dof_bodyid"]), 6))
  for j, t in enumerate(jtype):
    b, d = jbody[j], jdof[j]
    c, anc = com[root[b]], kin["xanchor"][j]
    offset = [c[0] - anc[0], c[1] - anc[1], c[2] - anc[2]]
    if t == SLIDE:
      out[d, 3:] = kin["xaxis"][j]
    elif t == HINGE:
      axis = kin["xaxis"][j].tolist()
      out[d] = axis + cross(axis, offset)
    else:
      if t == FREE:
        out[d:d + 3, 3:] = np.eye(3)
        d += 3
      for k in range(3):
        axis = kin["xmat"][b][:, k].tolist()
        out[d + k] = axis + cross(axis, offset)
  return out


# --------------------------------------------------------------------------- mass matrix


def mul_inert_vec(i, v) -> list:
  """mju_mulInertVec: cinert (10 components) times a motion vector (6 components)."""
  return [i[0] * v[0] + i[3] * v[1] + i[4] * v[2] - i[8] * v[4] + i[7] * v[5],
          i[3] * v[0] + i[1] * v[1] + i[5] * v[2] + i[8] * v[3] - i[6] * v[5],
          i[4] * v[0] + i[5] * v[1] + i[2] * v[2] - i[7] * v[3] + i[6] * v[4],
          i[8] * v[1] - i[7] * v[2] + i[9] * v[3],
          i[6] * v[2] - i[8] * v[0] + i[9] * v[4],
          i[7] * v[0] - i[6] * v[1] + i[9] * v[5]]


def composite_inertia(f: dict, cin: np.ndarray) -> np.ndarray:
  """crb (nbody, 10): cinert summed from the leaves into every parent but the world."""
  parent = np.asarray(f["body_parentid"]).tolist()
  crb = cin.copy()
  for i in range(len(parent) - 1, 0, -1):
    if parent[i] > 0:
      crb[parent[i]] += crb[i]
  return crb


def ancestors(f: dict) -> list[list[int]]:
  """Each dof's proper ancestors along dof_parentid, root first: the off-diagonal pattern
  of M's rows, empty for the dofs of simple bodies (their rows are diagonal)."""
  parent = np.asarray(f["dof_parentid"]).tolist()
  simple = np.asarray(f["dof_simplenum"]).tolist()
  chain, out = [], []
  for p in parent:
    chain.append(chain[p] + [p] if p >= 0 else [])
  for c, s in zip(chain, simple, strict=True):
    out.append([] if s else c)
  return out


def mass_matrix(f: dict, crb: np.ndarray, cd: np.ndarray, anc: list,
                armature: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
  """(M, dof_M0): the joint-space inertia (nv, nv) as mj_crb fills its lower triangle
  (entries off the dof-ancestor pattern are 0), and diag(M) as mj_setM0 computes it.

  M(i, j) = cdof_j . (crb_i cdof_i) (mju_dot of 6) over the pattern `anc`, armature
  added on the diagonal (dof_M0 = armature + M(i, i) without it).
  """
  nv = len(cd)
  m = np.zeros((nv, nv))
  if not nv:
    return m, np.zeros(0)
  body = np.asarray(f["dof_bodyid"], int)
  buf = mul_inert_vec(list(crb[body].T), list(cd.T))
  pairs_i = np.array([i for i in range(nv) for _ in anc[i] + [i]], int)
  pairs_j = np.array([j for i in range(nv) for j in anc[i] + [i]], int)
  vals = dot(list(cd[pairs_j].T), [b[pairs_i] for b in buf])
  m[pairs_i, pairs_j] = vals
  m0 = armature + np.diag(m)
  m[np.diag_indices(nv)] = m0
  return m, m0


def factor(m: np.ndarray, anc: list) -> tuple[np.ndarray, np.ndarray]:
  """mj_factorI: M = L' D L by rows from the leaves up, pivots clamped at MINVAL. Returns
  (qLD dense (nv, nv): D on the diagonal, L below it, stale above; 1/D (nv,))."""
  q = m.copy()
  for k in range(len(q) - 1, -1, -1):
    q[k, k] = max(q[k, k], MINVAL)
    inv = 1 / q[k, k]
    a = anc[k]
    if a:
      # row i of the ancestors' block gets row k times -L(k, i)/D(k); every read of row k
      # is of its values before scaling
      row = q[k, a]
      q[np.ix_(a, a)] += (-row * inv)[:, None] * row[None, :]
      q[k, a] = row * inv
  return q, 1 / np.diag(q)


def solve(qld: np.ndarray, dinv: np.ndarray, anc: list, rhs: np.ndarray) -> np.ndarray:
  """mj_solveM: M^-1 rhs for rhs (nv, k), k vectors at once, as mj_solveLD rounds each.

  Tree by tree (dofs sharing a root dof), each on the columns not zero there: M^-1 is block
  diagonal by tree, so the rest stays zero. MuJoCo's 100_humanoids.xml: 100 trees, the
  bodies' 10k Jacobian rows each on one (10 s of the host compile when solved whole)."""
  x = np.array(rhs, np.float64, copy=True)
  root = np.array([a[0] if a else i for i, a in enumerate(anc)], int)
  for r in np.unique(root):
    rows = np.flatnonzero(root == r)
    cols = np.flatnonzero(np.any(x[rows] != 0, axis=0))
    local = {int(d): k for k, d in enumerate(rows)}
    block = np.ix_(rows, cols)
    x[block] = _solve_ld(qld[np.ix_(rows, rows)], dinv[rows],
                         [[local[a] for a in anc[d]] for d in rows], x[block])
  return x


def _solve_ld(qld: np.ndarray, dinv: np.ndarray, anc: list, x: np.ndarray) -> np.ndarray:
  """mj_solveLD on one tree's dofs (numbered from 0): x (n, k) overwritten and returned."""
  for i in range(len(x) - 1, -1, -1):
    a = anc[i]
    if a:
      x[a] -= qld[i, a][:, None] * x[i][None, :]
  x *= dinv[:, None]
  for i in range(len(x)):
    a = anc[i]
    if a:
      x[i] = x[i] - dot_sparse(qld[i, a].tolist(), x[a])
  return x


# ------------------------------------------------------- mj_tendon, mj_transmission


def segment_moment(x0, x1, jacdif: np.ndarray) -> np.ndarray:
  """Moment (nv,) of a straight tendon segment from x0 to x1 (3-vectors) as mj_tendon:
  jacdif' dir with dir = normalize3(x1 - x0) and jacdif (3, nv) the difference of the
  ends' translation Jacobians, summed as mju_mulMatTVec (one row at a time)."""
  u = normalize3([x1[0] - x0[0], x1[1] - x0[1], x1[2] - x0[2]])
  return (jacdif[0] * u[0] + jacdif[1] * u[1]) + jacdif[2] * u[2]


def project(jac: np.ndarray, xmat: np.ndarray, gear) -> np.ndarray:
  """jac' (xmat gear): a (3, nv) Jacobian projected on a gear 3-vector turned into the global
  frame by xmat (3, 3), as mju_rotVecMat then mju_mulMatTVec (row by row)."""
  w = matvec3(np.asarray(xmat, float).ravel().tolist(), [float(g) for g in gear])
  return (jac[0] * w[0] + jac[1] * w[1]) + jac[2] * w[2]


def site_moment(jac: np.ndarray, xmat: np.ndarray, gear) -> np.ndarray:
  """Moment (nv,) of a site transmission without reference site, as mj_transmission: the
  translation (jac[:3]) and rotation (jac[3:]) Jacobians projected on the gear's halves."""
  return project(jac[:3], xmat, gear[:3]) + project(jac[3:], xmat, gear[3:])


def slider_crank(cpos, spos, axis, rod: float, cjac: np.ndarray, sjac: np.ndarray):
  """(length, moment (nv,)) of a slider-crank before the gear, as mj_transmission: cpos,
  spos the crank and slider sites, axis the slider's z axis, cjac (3, nv) the crank's
  translation Jacobian, sjac (6, nv) the slider's translation and rotation Jacobians."""
  vec = [cpos[k] - spos[k] for k in range(3)]
  av = vec[0] * axis[0] + vec[1] * axis[1] + vec[2] * axis[2]
  det = av * av + rod * rod - (vec[0] * vec[0] + vec[1] * vec[1] + vec[2] * vec[2])
  if det <= 0:
    length, dlda, dldv = av, vec, list(axis)
  else:
    sdet = math.sqrt(det)
    length = av - sdet
    s = 1 - av / sdet
    dldv = [axis[k] * s + vec[k] * (1 / sdet) for k in range(3)]
    dlda = [vec[k] * s for k in range(3)]
  # the slider axis moves with the slider's rotation: jacr x axis, column by column
  r = sjac[3:]
  jaca = [r[1] * axis[2] - r[2] * axis[1], r[2] * axis[0] - r[0] * axis[2],
          r[0] * axis[1] - r[1] * axis[0]]
  jac = cjac[:3] - sjac[:3]
  moment = np.zeros(jac.shape[1])
  for k in range(3):
    moment = moment + (dlda[k] * jaca[k] + dldv[k] * jac[k])
  return length, moment


def site_frame(f: dict, s, site: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Global position (3,), rotation matrix (3, 3) and quaternion (4,) of a site at qpos0;
  position and matrix as mj_kinematics rounds them (copied from the body's frames where the
  compiler found them to coincide)."""
  one = slice(site, site + 1)
  b = np.asarray(f["site_bodyid"])[one]
  same = np.asarray(f["site_sameframe"])[one] if "site_sameframe" in f else None
  pos, mat = local_to_global(s.kin, b, np.reshape(f["site_pos"], (-1, 3))[one],
                                     np.reshape(f["site_quat"], (-1, 4))[one], same)
  quat = frames.quat_mul(s.kin["xquat"][b[0]], np.asarray(f["site_quat"][site], float))
  return pos[0], mat[0], quat
