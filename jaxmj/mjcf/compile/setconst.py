"""Derived model constants, as MuJoCo's compiler and mj_setConst compute them.

Host-side numpy only. Every function takes ``f``, a dict of primary model arrays keyed by
``mujoco.MjModel`` field names (flat ``nX`` arrays reshaped as MjModel exposes them, e.g.
``body_pos`` is ``(nbody, 3)``), and returns a dict of new fields with MjModel's names, dtypes
and shapes. Nothing here needs MjData: the few kinematic quantities required (body frames,
com-based dof motions, the joint-space inertia at ``qpos0``) are recomputed locally.

Joint types: 0 free, 1 ball, 2 slide, 3 hinge. Geom types: 0 plane, 1 hfield, 2 sphere,
3 capsule, 4 ellipsoid, 5 cylinder, 6 box, 7 mesh.

Optional inputs, used when present: hfield_size, mesh_vert/vertadr/vertnum and geom_dataid
(hfield and mesh bounds); actuator_armature/gear/trntype/trnid (armature that joint
actuators reflect onto their dofs); tendon_armature/adr/num and wrap_type/objid/prm
(tendon armature, which MuJoCo only allows on fixed tendons and site/pulley paths).
"""

from __future__ import annotations

import functools

import numpy as np

from jaxmj.constants import FRAME_EPS, MAXVAL, MINVAL
from jaxmj.mjcf.compile import engine0
from jaxmj.smooth.kinematics import frames_near, same_rotation

FREE, BALL, SLIDE, HINGE = 0, 1, 2, 3
PLANE, HFIELD, SPHERE, CAPSULE, ELLIPSOID, CYLINDER, BOX, MESH = range(8)
WRAP_JOINT, WRAP_PULLEY, WRAP_SITE = 1, 2, 3
SAMEFRAME_NONE, SAMEFRAME_BODY, SAMEFRAME_INERTIA = 0, 1, 2
SAMEFRAME_BODYROT, SAMEFRAME_INERTIAROT = 3, 4

_MJ_EPS = 1e-14

# mjModel.stat as mj_makeModel initialises it; setStat leaves a value alone when the model
# has nothing to measure it from (no bodies, no dofs, an empty bounding box).
_STAT_DEFAULTS = dict(meaninertia=1.0, meanmass=1.0, meansize=0.2, extent=2.0)


def _i32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int32)


def _f64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


# ------------------------------------------------------------------------------------- structure


def structure_fields(f: dict, simple_off: np.ndarray | None = None) -> dict:
    """Tree structure, fast-path flags, collision summaries and geom bounds.

    ``simple_off`` (nbody,) bool marks bodies declared ``simple="false"`` in MJCF, an
    attribute with no mjModel field of its own.

    Returns body_rootid/weldid/treeid/simple/sameframe/subtreemass/bvhadr/bvhnum/contype/
    conaffinity/margin (nbody,), dof_treeid/simplenum/Madr (nv,), ntree, tree_bodyadr/
    bodynum/dofadr/dofnum (ntree,), geom_sameframe/rbound (ngeom,), geom_aabb (ngeom, 6),
    site_sameframe (nsite,).
    """
    out = {}
    out.update(_tree_ids(f))
    out.update(_trees(f, out["body_weldid"], out["dof_treeid"], out["ntree"]))
    out.update(_sameframes(f))
    out["body_simple"] = _body_simple(f, out["body_rootid"], out["body_sameframe"])
    out["body_sameframe"][0] = SAMEFRAME_BODY  # MuJoCo's, even with a URDF world inertial
    if simple_off is not None:
        out["body_simple"][np.asarray(simple_off, bool)] = 0
    out["dof_simplenum"] = _dof_simplenum(f, out["body_simple"])
    out["dof_Madr"] = _dof_madr(f)
    out["body_subtreemass"] = _subtree_sum(f, _f64(f["body_mass"]))
    out.update(_body_collision(f))
    out["geom_aabb"] = _geom_aabb(f)
    out["geom_rbound"] = _geom_rbound(f)
    return out


def _tree_ids(f: dict) -> dict:
    """body_rootid, body_weldid (nbody,), dof_treeid (nv,), ntree.

    A body starts a new weld when it has joints or is mocap: a mocap body moves on its own
    even though it has no dofs.
    """
    parent = _i32(f["body_parentid"])
    nbody = len(parent)
    rootid = np.zeros(nbody, np.int32)
    weldid = np.zeros(nbody, np.int32)
    jntnum, mocapid = _i32(f["body_jntnum"]), _i32(f["body_mocapid"])
    for i in range(1, nbody):
        p = parent[i]
        rootid[i] = i if p == 0 else rootid[p]
        weldid[i] = i if (jntnum[i] > 0 or mocapid[i] >= 0) else weldid[p]
    # every dof without a parent dof roots a new kinematic tree
    is_root = _i32(f["dof_parentid"]) == -1
    dof_treeid = (np.cumsum(is_root) - 1).astype(np.int32)
    return dict(body_rootid=rootid, body_weldid=weldid, dof_treeid=dof_treeid,
                ntree=int(is_root.sum()))


def _trees(f: dict, weldid: np.ndarray, dof_treeid: np.ndarray, ntree: int) -> dict:
    """body_treeid (nbody,) and the per-tree body/dof ranges (ntree,).

    Bodies welded to the world (or to a dof-less mocap body) belong to no tree (-1).
    """
    dofnum, dofadr = _i32(f["body_dofnum"]), _i32(f["body_dofadr"])
    body_treeid = np.full(len(weldid), -1, np.int32)
    for i, w in enumerate(weldid):
        if dofnum[w]:
            body_treeid[i] = dof_treeid[dofadr[w]]
    tree_bodyadr, tree_bodynum = _ranges(body_treeid[1:], ntree, offset=1)
    tree_dofadr, tree_dofnum = _ranges(dof_treeid, ntree, offset=0)
    return dict(body_treeid=body_treeid, tree_bodyadr=tree_bodyadr, tree_bodynum=tree_bodynum,
                tree_dofadr=tree_dofadr, tree_dofnum=tree_dofnum)


def _ranges(ids: np.ndarray, n: int, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """First index (plus offset) and count of each id in 0..n-1; ids of -1 are skipped."""
    adr = np.zeros(n, np.int32)
    num = np.zeros(n, np.int32)
    for k, t in enumerate(ids):
        if t < 0:
            continue
        if num[t] == 0:
            adr[t] = k + offset
        num[t] += 1
    return adr, num


def _frame_class(pos, quat, ipos=None, iquat=None) -> np.ndarray:
    """mjtSameFrame (n,) of local frames (pos, quat) against their body frame and, when
    given, their body's inertial frame (ipos, iquat)."""
    null_rot = same_rotation(quat, np.array([1.0, 0, 0, 0]))
    null_pos = frames_near(pos, np.zeros(3))
    conds = [null_pos & null_rot, null_rot]
    kinds = [SAMEFRAME_BODY, SAMEFRAME_BODYROT]
    if ipos is not None:
        inert_rot = same_rotation(quat, iquat)
        conds += [frames_near(pos, ipos) & inert_rot, inert_rot]
        kinds += [SAMEFRAME_INERTIA, SAMEFRAME_INERTIAROT]
    return np.select(conds, kinds, SAMEFRAME_NONE).astype(np.uint8)


def _sameframes(f: dict) -> dict:
    """body_sameframe (nbody,), geom_sameframe (ngeom,), site_sameframe (nsite,).

    Kinematics uses these to skip frame compositions; a body's inertial frame is only
    compared with the body frame.
    """
    ipos, iquat = _f64(f["body_ipos"]).reshape(-1, 3), _f64(f["body_iquat"]).reshape(-1, 4)
    out = dict(body_sameframe=_frame_class(ipos, iquat))
    for obj in ("geom", "site"):
        b = _i32(f[f"{obj}_bodyid"])
        out[f"{obj}_sameframe"] = _frame_class(
            _f64(f[f"{obj}_pos"]).reshape(-1, 3), _f64(f[f"{obj}_quat"]).reshape(-1, 4),
            ipos[b], iquat[b])
    return out


def _body_simple(f: dict, rootid: np.ndarray, sameframe: np.ndarray) -> np.ndarray:
    """body_simple (nbody,): 0 general, 1 diagonal-M fast path, 2 additionally no rotation.

    A simple body is a leaf whose inertial frame is its body frame, attached to the world or
    to a dof-less child of the world, with joints at its origin along coordinate axes and at
    most one rotational joint, which must come last.
    """
    parent = _i32(f["body_parentid"])
    dofnum = _i32(f["body_dofnum"])
    jtype = _i32(f["jnt_type"])
    jpos = _f64(f["jnt_pos"]).reshape(-1, 3)
    jaxis = _f64(f["jnt_axis"]).reshape(-1, 3)
    nbody = len(parent)
    simple = np.zeros(nbody, np.uint8)
    simple[0] = sameframe[0] == SAMEFRAME_BODY
    for i in range(1, nbody):
        p = parent[i]
        anchored = rootid[i] == i or (parent[p] == 0 and dofnum[p] == 0)
        ok = sameframe[i] == SAMEFRAME_BODY and anchored and not f.get(
            "_body_simple_off", np.zeros(nbody, bool))[i]  # <body simple="false">
        joints = range(int(f["body_jntadr"][i]), int(f["body_jntadr"][i] + f["body_jntnum"][i]))
        rotfound = False
        for j in joints:
            aligned = np.count_nonzero(np.abs(jaxis[j]) > _MJ_EPS) == 1
            if rotfound or np.any(np.abs(jpos[j]) >= FRAME_EPS) or (
                    jtype[j] in (SLIDE, HINGE) and not aligned):
                ok = False
            rotfound |= jtype[j] in (BALL, HINGE)
        if ok:
            # level 2: sliders only, so M is diagonal with the body mass on it
            simple[i] = 2 if dofnum[i] and all(jtype[j] == SLIDE for j in joints) else 1
    simple[_tendon_armature_bodies(f)] = 0
    # a body with children is never simple (the world excepted)
    has_child = np.zeros(nbody, bool)
    has_child[parent[1:]] = True
    has_child[0] = False
    simple[has_child] = 0
    return simple


def _armature_tendons(f: dict) -> list[tuple[float, np.ndarray, np.ndarray, np.ndarray]]:
    """(armature, wrap types, object ids, prms) of each tendon with nonzero armature."""
    if "tendon_armature" not in f:
        return []
    out = []
    # with the armature actuators reflect onto the tendon (mjcf/armature.py), when known
    for t, arm in enumerate(_f64(f.get("_tendon_armature_all", f["tendon_armature"]))):
        if arm == 0:
            continue
        w = slice(int(f["tendon_adr"][t]), int(f["tendon_adr"][t] + f["tendon_num"][t]))
        out.append((arm, _i32(f["wrap_type"])[w], _i32(f["wrap_objid"])[w],
                    _f64(f["wrap_prm"])[w]))
    return out


def _tendon_armature_bodies(f: dict) -> np.ndarray:
    """Bodies a tendon with armature attaches to: its inertia couples their dofs."""
    bodies = []
    for _, types, ids, _ in _armature_tendons(f):
        for t, i in zip(types, ids, strict=True):
            if t == WRAP_JOINT:
                bodies.append(f["jnt_bodyid"][i])
            elif t == WRAP_SITE:
                bodies.append(f["site_bodyid"][i])
    return np.array(bodies, dtype=np.int64)


def _dof_simplenum(f: dict, simple: np.ndarray) -> np.ndarray:
    """dof_simplenum (nv,): length of the run of simple-body dofs starting at each dof."""
    dof_body = _i32(f["dof_bodyid"])
    out = np.zeros(len(dof_body), np.int32)
    run = 0
    for i in range(len(dof_body) - 1, -1, -1):
        run = run + 1 if simple[dof_body[i]] else 0
        out[i] = run
    return out


def _dof_madr(f: dict) -> np.ndarray:
    """dof_Madr (nv,): start of each dof's row in the sparse M (row = ancestors + self)."""
    dof_parent = _i32(f["dof_parentid"])
    depth = np.zeros(len(dof_parent), np.int32)
    for i, p in enumerate(dof_parent):
        depth[i] = 1 + (depth[p] if p >= 0 else 0)
    return (np.cumsum(depth) - depth).astype(np.int32)


def _subtree_sum(f: dict, x: np.ndarray) -> np.ndarray:
    """Sum of a per-body quantity over each body's subtree (bodies are in topological order)."""
    parent = _i32(f["body_parentid"])
    acc = x.copy()
    for i in range(len(parent) - 1, 0, -1):
        acc[parent[i]] += acc[i]
    return acc


def _body_collision(f: dict) -> dict:
    """body_contype/conaffinity (OR over geoms), body_margin (max of geom margin + gap),
    body_bvhadr/bvhnum.

    A body's BVH is a median-split binary tree over its colliding geoms, so it has 2n-1
    nodes for n such geoms; visual-only geoms (contype = conaffinity = 0) are left out.
    """
    nbody = len(f["body_parentid"])
    gbody = _i32(f["geom_bodyid"])
    ctype, caff = _i32(f["geom_contype"]), _i32(f["geom_conaffinity"])
    contype = np.zeros(nbody, np.int32)
    conaff = np.zeros(nbody, np.int32)
    margin = np.zeros(nbody, np.float64)
    gap = f.get("geom_gap", np.zeros(len(gbody)))
    ncollide = np.zeros(nbody, np.int32)
    for g, b in enumerate(gbody):
        contype[b] |= ctype[g]
        conaff[b] |= caff[g]
        margin[b] = max(margin[b], f["geom_margin"][g] + gap[g])
        ncollide[b] += bool(ctype[g] or caff[g])
    bvhnum = np.where(ncollide > 0, 2 * ncollide - 1, 0).astype(np.int32)
    start = np.concatenate([[0], np.cumsum(bvhnum)[:-1]])
    bvhadr = np.where(bvhnum > 0, start, -1).astype(np.int32)
    return dict(body_contype=contype, body_conaffinity=conaff, body_margin=margin,
                body_bvhadr=bvhadr, body_bvhnum=bvhnum)


def _geom_aamm(f: dict, g: int) -> np.ndarray:
    """Local-frame bounding box of geom g as (min xyz, max xyz).

    Planes get a huge box whose top face is the plane itself. Hfields and meshes need
    hfield_size, or mesh_vert/mesh_vertadr/mesh_vertnum, plus geom_dataid in ``f``.
    """
    t = int(f["geom_type"][g])
    s = _f64(f["geom_size"]).reshape(-1, 3)[g]
    if t == PLANE:
        return np.array([-MAXVAL] * 3 + [MAXVAL, MAXVAL, 0.0])
    if t == HFIELD:
        h = _f64(f["hfield_size"]).reshape(-1, 4)[f["geom_dataid"][g]]
        return np.array([-h[0], -h[1], -h[3], h[0], h[1], h[2]])
    if t == MESH:
        m = f["geom_dataid"][g]
        adr, num = f["mesh_vertadr"][m], f["mesh_vertnum"][m]
        vert = _f64(f["mesh_vert"]).reshape(-1, 3)[adr:adr + num]
        return np.concatenate([vert.min(0), vert.max(0)])
    hi = {SPHERE: [s[0]] * 3, CAPSULE: [s[0], s[0], s[0] + s[1]],
          CYLINDER: [s[0], s[0], s[1]]}.get(t, s)
    hi = np.asarray(hi, np.float64)
    return np.concatenate([-hi, hi])


def _geom_aabb(f: dict) -> np.ndarray:
    """geom_aabb (ngeom, 6): local-frame bounding box as (center, half-size)."""
    out = np.zeros((len(f["geom_type"]), 6))
    for g in range(len(out)):
        aamm = _geom_aamm(f, g)
        out[g] = np.concatenate([(aamm[3:] + aamm[:3]) / 2, (aamm[3:] - aamm[:3]) / 2])
    return out


def _geom_rbound(f: dict) -> np.ndarray:
    """geom_rbound (ngeom,): bounding-sphere radius about the geom frame; 0 for planes.

    A mesh geom's size already holds its box's largest extent per axis (in double
    precision, unlike mesh_vert), so the mesh radius comes from it.
    """
    size = _f64(f["geom_size"]).reshape(-1, 3)
    out = np.zeros(len(size))
    for g, (t, s) in enumerate(zip(_i32(f["geom_type"]), size, strict=True)):
        if t == SPHERE:
            out[g] = s[0]
        elif t == CAPSULE:
            out[g] = s[0] + s[1]
        elif t == CYLINDER:
            out[g] = np.sqrt(s[0] * s[0] + s[1] * s[1])
        elif t == ELLIPSOID:
            out[g] = max(s[0], s[1], s[2])
        elif t in (BOX, MESH):
            out[g] = np.sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2])
        elif t == HFIELD:
            h = _f64(f["hfield_size"]).reshape(-1, 4)[f["geom_dataid"][g]]
            out[g] = np.sqrt(h[0] * h[0] + h[1] * h[1] + max(h[2] * h[2], h[3] * h[3]))
    return out


# ------------------------------------------------------------------------------------ kinematics


def kinematics(f: dict, qpos: np.ndarray) -> dict:
    """Global frames at configuration qpos, bit for bit mj_kinematics (engine0.kinematics).

    Returns xpos (nbody, 3), xquat (nbody, 4), xmat (nbody, 3, 3), xipos (nbody, 3),
    ximat (nbody, 3, 3), xanchor, xaxis (njnt, 3).
    """
    if "body_sameframe" not in f:
        f = {**f, **_sameframes(f)}
    return engine0.kinematics(f, qpos)


def attached_xpos(kin: dict, bodyid: np.ndarray, pos: np.ndarray,
                   sameframe: np.ndarray | None = None) -> np.ndarray:
    """Global position (n, 3) of points given in their bodies' frames, as mj_local2Global:
    copied from the body's or inertial frame where `sameframe` says they coincide."""
    return engine0.local_to_global(kin, bodyid, pos, None, sameframe)[0]


def attached_xmat(kin: dict, bodyid: np.ndarray, quat: np.ndarray,
                   sameframe: np.ndarray | None = None) -> np.ndarray:
    """Global rotation matrices (n, 3, 3) of frames given by quaternions (n, 4) in their
    bodies' frames, as mj_local2Global (copies where `sameframe` says so)."""
    n = len(np.asarray(bodyid))
    return engine0.local_to_global(kin, bodyid, np.zeros((n, 3)), quat, sameframe)[1]


def _dof_armature(f: dict) -> np.ndarray:
    """Joint armature plus what actuators reflect onto it (armature * gear^2), (nv,)."""
    arm = _f64(f["dof_armature"]).copy()
    if "actuator_armature" not in f:
        return arm
    jdof, jtype = _i32(f["jnt_dofadr"]), _i32(f["jnt_type"])
    width = {FREE: 6, BALL: 3, SLIDE: 1, HINGE: 1}
    gear = _f64(f["actuator_gear"]).reshape(-1, 6)
    for k, a in enumerate(_f64(f["actuator_armature"])):
        # trntype 0 = joint, 1 = joint in parent
        if a == 0 or f["actuator_trntype"][k] not in (0, 1):
            continue
        j = int(np.reshape(f["actuator_trnid"], (-1, 2))[k, 0])
        out = int(f["actuator_outadr"][k]) if "actuator_outadr" in f else k
        arm[jdof[j]:jdof[j] + width[int(jtype[j])]] += a * gear[out, 0] ** 2
    return arm


def solve(qld: np.ndarray, anc: list, rhs: np.ndarray) -> np.ndarray:
    """M^-1 rhs for rhs of shape (nv, k), from `Qpos0.qld` (mj_solveM's rounding)."""
    return engine0.solve(qld, 1 / np.diag(qld), anc, rhs)


# -------------------------------------------------------------------------------- mass constants


class Qpos0:
    """Everything mj_setConst evaluates at qpos0, computed once per model."""

    def __init__(self, f: dict):
        # derived fields the caller already has (e.g. mesh rbounds) win over recomputed ones
        self.f = {**structure_fields(f), **f}
        self.kin = kinematics(self.f, _f64(f["qpos0"]))
        self.com = engine0.subtree_com(self.f, self.kin)
        self.ref = self.com[_i32(self.f["body_rootid"])]
        self.cdof = engine0.cdof(self.f, self.kin, self.com)
        crb = engine0.composite_inertia(self.f, engine0.cinert(self.f, self.kin, self.com))
        self.ancestors = engine0.ancestors(self.f)
        # rigid bodies plus dof and actuator armature (lower triangle): dof_M0 is its diagonal
        self.crb, self.dof_m0 = engine0.mass_matrix(self.f, crb, self.cdof, self.ancestors,
                                                    _dof_armature(self.f))
        self.mass = self._tendon_inertia(self.crb.copy())

    @functools.cached_property
    def qld(self) -> np.ndarray:
        """LDL' factor of the mass matrix, made on first use (statistics need none)."""
        return engine0.factor(self.mass, self.ancestors)[0]

    def dof_chain(self, body: int) -> list[int]:
        """Dofs that move the body: those of its nearest moving ancestor and their parents."""
        f = self.f
        while body > 0 and f["body_dofnum"][body] == 0:
            body = f["body_parentid"][body]
        if body == 0:
            return []
        chain, d = [], int(f["body_dofadr"][body] + f["body_dofnum"][body] - 1)
        while d >= 0:
            chain.append(d)
            d = int(f["dof_parentid"][d])
        return chain

    def point_jacobian(self, body: int, point: np.ndarray) -> np.ndarray:
        """Jacobian (6, nv) of a global point moving with the body: translation, rotation."""
        jac = np.zeros((6, len(self.cdof)))
        chain = self.dof_chain(body)
        if chain:
            w, v = self.cdof[chain, :3], self.cdof[chain, 3:]
            jac[:3, chain] = (v + np.cross(w, point - self.ref[body])).T
            jac[3:, chain] = w.T
        return jac

    def _tendon_inertia(self, mass: np.ndarray) -> np.ndarray:
        """mass plus armature * J'J of each tendon with armature, in tendon order, over M's
        pattern (mj_tendonArmature: (armature J_i) J_j for row i, column j)."""
        rows = [i for i in range(len(mass)) for _ in self.ancestors[i] + [i]]
        cols = [j for i in range(len(mass)) for j in self.ancestors[i] + [i]]
        for arm, types, ids, prms in _armature_tendons(self.f):
            jac = self._tendon_jacobian(types, ids, prms)
            mass[rows, cols] += arm * jac[rows] * jac[cols]
        return mass

    def _tendon_jacobian(self, types, ids, prms) -> np.ndarray:
        """Length gradient (nv,) of a fixed tendon or of a site path split by pulleys, as
        mj_tendon: each straight site-to-site segment between different bodies adds its
        moment (engine0.segment_moment) times 1/divisor of its pulley branch."""
        f = self.f
        jac = np.zeros(len(self.cdof))
        if types[0] == WRAP_JOINT:
            for j, coef in zip(ids, prms, strict=True):
                jac[f["jnt_dofadr"][j]] += coef
            return jac
        sbody = _i32(f["site_bodyid"])
        spos = attached_xpos(self.kin, sbody, _f64(f["site_pos"]).reshape(-1, 3),
                              f.get("site_sameframe"))
        divisor = 1.0
        for k in range(len(types) - 1):
            if types[k] == WRAP_PULLEY:
                divisor = prms[k]
                continue
            a, b = ids[k], ids[k + 1]
            if types[k + 1] == WRAP_PULLEY or sbody[a] == sbody[b]:
                continue
            rel = (self.point_jacobian(sbody[b], spos[b])[:3]
                   - self.point_jacobian(sbody[a], spos[a])[:3])
            jac = jac + engine0.segment_moment(spos[a], spos[b], rel) * (1 / divisor)
        return jac


def mass_constants(f: dict) -> dict:
    """body_invweight0 (nbody, 2), dof_invweight0, dof_M0, dof_length (nv,).

    invweight0 is the mean diagonal of the inverse inertia seen through a Jacobian at qpos0
    (translation and rotation averaged separately), used to scale constraint impedances.
    Derived fields already in ``f`` (e.g. geom_rbound of mesh geoms) take precedence over
    the ones this module would compute.
    """
    s = Qpos0(f)
    return dict(body_invweight0=_body_invweight0(s), dof_invweight0=_dof_invweight0(s),
                dof_M0=s.dof_m0, dof_length=_dof_length(s, _body_sizes(s)))


def inverse_weights(s: Qpos0, jacs: list[np.ndarray]) -> list[np.ndarray]:
    """diag(J M^-1 J') for each (k, nv) Jacobian J, all solved in one batch: mj_solveM,
    then each diagonal entry an mju_dot over all nv (mju_mulMatMatT)."""
    if not jacs:
        return []
    if not len(s.cdof):
        return [np.zeros(len(jac)) for jac in jacs]  # mocap bodies of a model with no dofs
    stacked = np.concatenate(jacs)
    x = solve(s.qld, s.ancestors, stacked.T)
    diag = engine0.dot(stacked.T, x)
    out, row = [], 0
    for jac in jacs:
        out.append(diag[row:row + len(jac)])
        row += len(jac)
    return out


def _mean3(a: np.ndarray) -> float:
    return (a[0] + a[1] + a[2]) / 3


def _body_invweight0(s: Qpos0) -> np.ndarray:
    f = s.f
    out = np.zeros((len(f["body_parentid"]), 2))
    general = []
    for b in range(1, len(out)):
        if f["body_weldid"][b] == 0:
            continue  # welded to the world: immovable
        if f["body_simple"][b] == 2:
            # translation-only diagonal body: the weight is just its inverse mass
            out[b] = 1 / max(MINVAL, f["body_mass"][b]), 0
        else:
            general.append(b)
    jacs = [s.point_jacobian(b, s.kin["xipos"][b]) for b in general]
    for b, a in zip(general, inverse_weights(s, jacs), strict=True):
        out[b] = _mean3(a[:3]), _mean3(a[3:])
    return out


def _dof_invweight0(s: Qpos0) -> np.ndarray:
    f = s.f
    nv = len(s.cdof)
    out = np.zeros(nv)
    general = []
    for t, d, b in zip(f["jnt_type"], f["jnt_dofadr"], f["jnt_bodyid"], strict=True):
        if f["body_simple"][b] == 2:
            out[d] = 1 / max(MINVAL, f["body_mass"][b])
        else:
            general.append((int(d), {FREE: 6, BALL: 3}.get(int(t), 1)))
    if not general:
        return out
    # J = rows of the identity: J M^-1 J' is read off the solution (the dot adds zeros)
    cols = [d + k for d, width in general for k in range(width)]
    x = solve(s.qld, s.ancestors, np.eye(nv)[:, cols])
    diag, row = x[cols, np.arange(len(cols))], 0
    for d, width in general:
        a = diag[row:row + width]
        row += width
        # rotations (and free translations) share one averaged value per group of three
        for g in range(0, width, 3):
            out[d + g:d + min(g + 3, width)] = _mean3(a[g:g + 3]) if width > 1 else a[0]
    return out


def _geom_xpos(s: Qpos0) -> np.ndarray:
    f = s.f
    return attached_xpos(s.kin, _i32(f["geom_bodyid"]), _f64(f["geom_pos"]).reshape(-1, 3),
                          f.get("geom_sameframe"))


def _body_sizes(s: Qpos0) -> np.ndarray:
    """Approximate length of each body (nbody,), as setStat estimates it.

    The largest of its com-to-joint distances (own joints and its children's) and its geoms'
    reach from the com, floored at 1e-5; the world's is 0.
    """
    f = s.f
    xipos, xanchor = s.kin["xipos"], s.kin["xanchor"]
    size = np.zeros(len(f["body_parentid"]))
    for j, b in enumerate(_i32(f["jnt_bodyid"])):
        for body in (b, f["body_parentid"][b]):
            size[body] = max(size[body], engine0.dist3(xipos[body], xanchor[j]))
    size[0] = 0
    gxpos, rbound = _geom_xpos(s), _f64(f["geom_rbound"])
    for g, b in enumerate(_i32(f["geom_bodyid"])):
        if b > 0 and rbound[g] > 0:
            size[b] = max(size[b], rbound[g] + engine0.dist3(xipos[b], gxpos[g]))
    size[1:] = np.maximum(size[1:], 1e-5)
    return size


def _dof_length(s: Qpos0, size: np.ndarray) -> np.ndarray:
    """dof_length (nv,): 1 for translations, the body size for rotations (m per rad)."""
    f = s.f
    out = np.ones(len(s.cdof))
    for t, d, b in zip(f["jnt_type"], f["jnt_dofadr"], f["jnt_bodyid"], strict=True):
        if t in (BALL, HINGE):
            out[d:d + (3 if t == BALL else 1)] = size[b]
        elif t == FREE:
            out[d + 3:d + 6] = size[b]
    return out


# ------------------------------------------------------------------------------------ statistics


def statistics(f: dict) -> dict:
    """mjModel.stat at qpos0 as keys stat_meaninertia, stat_meanmass, stat_meansize,
    stat_extent (scalars) and stat_center (3,).

    Values the user overrides in MJCF <statistic> are not known here.
    """
    s = Qpos0(f)
    size = _body_sizes(s)
    nbody, nv = len(size), len(s.cdof)
    stat = dict(_STAT_DEFAULTS)
    # setStat's sums, in body and dof order
    if nbody > 1:
        stat["meansize"] = stat["meanmass"] = 0.0
        for x, w in zip(size[1:].tolist(), _f64(f["body_mass"])[1:].tolist(), strict=True):
            stat["meansize"] += x / (nbody - 1)
            stat["meanmass"] += w
        stat["meanmass"] /= nbody - 1
    if nv:
        stat["meaninertia"] = 0.0
        for x in np.diag(s.mass).tolist():
            stat["meaninertia"] += x
        stat["meaninertia"] /= nv
    lo, hi = _bounding_box(s)
    if hi[0] > lo[0]:
        stat["extent"] = max(1e-5, float(np.max(hi - lo)))
    stat["extent"] = max(stat["extent"], 2 * stat["meansize"])
    out = {f"stat_{k}": np.float64(v) for k, v in stat.items()}
    out["stat_center"] = (lo + hi) / 2
    return out


def _bounding_box(s: Qpos0) -> tuple[np.ndarray, np.ndarray]:
    """Box around body frames and coms, joint anchors, sites and geom bounding spheres.

    Planes, which have no finite bound, count with a tenth of their extent (0.01 if
    infinite) so that a floor does not dominate the model's size.
    """
    f = s.f
    rbound = _f64(f["geom_rbound"]).copy()
    size = _f64(f["geom_size"]).reshape(-1, 3)
    for g, t in enumerate(_i32(f["geom_type"])):
        if rbound[g] <= 0 and t == PLANE:
            rbound[g] = 0.1 * max(size[g, 0], size[g, 1]) if size[g, :2].any() else 0.01
    site_xpos = attached_xpos(s.kin, _i32(f["site_bodyid"]), _f64(f["site_pos"]).reshape(-1, 3),
                               f.get("site_sameframe"))
    points = [s.kin["xpos"][1:], s.kin["xipos"][1:], s.kin["xanchor"], site_xpos]
    gxpos = _geom_xpos(s)
    lo = np.min(np.concatenate(points + [gxpos - rbound[:, None], np.full((1, 3), 1e10)]), 0)
    hi = np.max(np.concatenate(points + [gxpos + rbound[:, None], np.full((1, 3), -1e10)]), 0)
    return lo, hi
