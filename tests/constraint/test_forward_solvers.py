"""The whole pipeline (jaxmj.forward: collision, constraint rows, solver) against mj_forward,
for each solver (CG, Newton, PGS) and cone, at one state with contacts of condim 1, 3, 4 and
6, direct (negative) and standard solref, a contact inside its margin, hinge, slide and ball
limits and dof friction loss. Rows are matched as in `match_rows`; efc_J, efc_pos,
efc_margin, efc_D, efc_R, efc_aref, efc_force and efc_state, qfrc_constraint and qacc must
equal MuJoCo's after convergence (tolerance 1e-12 in both engines, 1e-6 relative to each
array's largest entry; measured far below). PGS on elliptic cones stalls short of the
optimum in MuJoCo 4.0 too (tests/test_solver.py), so each engine's PGS is held to the other's
at the same sweep count. tests/test_solver.py and test_constraint.py hold the solver and the
rows alone, on MuJoCo's own inputs; this holds them composed with jaxmj's own collisions.

Slow tests (each solver/cone pair is one forward compile, ~15-30 s under load): the default
suite holds the solvers on MuJoCo's rows (test_solver.py) and the rows on MuJoCo's contacts
(test_constraint.py).
"""

import functools

import jax
import numpy as np
import pytest
from mujoco_compare import mujoco

import jaxmj

XML = """<mujoco>
  <option cone="{cone}" solver="{solver}" impratio="2" iterations="{iterations}"
          tolerance="1e-12" timestep="0.004"/>
  <default><geom friction="0.8 0.02 0.001"/></default>
  <worldbody>
    <geom type="plane" size="5 5 .1" condim="1" margin="0.01"/>
    <body pos="0 0 .097"><freejoint/>
      <geom type="box" size=".1 .15 .1" condim="3" solimp="0.85 0.97 0.003 0.3 4"/></body>
    <body pos=".6 0 .095"><freejoint/>
      <geom type="sphere" size=".1" condim="4" solref="-2000 -40"/></body>
    <body pos="0 .6 .105"><freejoint/>
      <geom type="sphere" size=".1" condim="1"/></body>
    <body pos=".6 0 .28"><freejoint/>
      <geom type="sphere" size=".09" condim="6" friction="0.5 0.01 0.003"/></body>
    <body pos="-.6 0 .2">
      <joint name="h" axis="0 1 0" range="-20 20" frictionloss="0.3"/>
      <geom type="capsule" fromto="0 0 0 .3 0 -.15" size=".05" condim="4"/>
      <body pos=".3 0 -.2">
        <joint name="s" type="slide" axis="1 0 0" range="-.05 .05" frictionloss="0.1"/>
        <joint name="b" type="ball" range="0 30"/>
        <geom type="capsule" fromto="0 0 0 .2 0 0" size=".03" contype="0" conaffinity="0"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""

ROW_FIELDS = ("efc_pos", "efc_margin", "efc_D", "efc_R", "efc_aref", "efc_force")
RTOL = 1e-6


def state(mj):
  d = mujoco.MjData(mj)
  adr = lambda name: mj.jnt_qposadr[mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, name)]
  d.qpos[adr("h")] = np.deg2rad(24)  # hinge past its upper limit
  d.qpos[adr("s")] = -0.06  # slide past its lower limit
  half = np.deg2rad(36) / 2  # ball past its 30 degrees
  d.qpos[adr("b"):adr("b") + 4] = [np.cos(half), 0, np.sin(half), 0]
  d.qvel[:] = 0.3 * np.random.default_rng(0).normal(size=mj.nv)
  return d


def close(ours, ref, what):
  ours, ref = np.asarray(ours), np.asarray(ref)
  bound = RTOL * max(1.0, np.abs(ref).max(initial=0.0))
  err = np.abs(ours - ref).max(initial=0.0)
  assert err <= bound, f"{what}: max error {err:.3g} > {bound:.3g}"


def match_rows(d, dm):
  """Indices of jaxmj's active rows and of MuJoCo's rows, in matching order. Rows of joints
  match by (efc_type, efc_id); a contact's rows by its geoms and position (jaxmj's efc_id is
  the contact slot, MuJoCo's the index in its contact list)."""
  c = d.contact
  slot_of = {}
  for i in range(dm.ncon):
    con = dm.contact[i]
    cand = [k for k in np.flatnonzero(np.asarray(c.active))
            if (c.geom1[k], c.geom2[k]) == (con.geom1, con.geom2)]
    assert cand, f"MuJoCo contact {i} (geoms {con.geom1}, {con.geom2}) missing"
    slot_of[i] = min(cand, key=lambda k: np.abs(np.asarray(c.pos)[k] - con.pos).max())
  key = lambda t, i, contact: ((int(t), int(slot_of[i]) if contact else int(i)))
  is_contact = lambda t: t >= int(mujoco.mjtConstraint.mjCNSTR_CONTACT_FRICTIONLESS)
  theirs = {}
  for r in range(dm.nefc):
    theirs.setdefault(key(dm.efc_type[r], dm.efc_id[r], is_contact(dm.efc_type[r])), []).append(r)
  ours = {}
  for r in np.flatnonzero(np.asarray(d.efc_active)):
    ours.setdefault((int(d.efc_type[r]), int(d.efc_id[r])), []).append(r)
  assert sorted(ours) == sorted(theirs)
  assert all(len(ours[k]) == len(theirs[k]) for k in ours)
  return (np.concatenate([ours[k] for k in sorted(ours)]),
          np.concatenate([theirs[k] for k in sorted(theirs)]))


@functools.lru_cache
def _forward():
  return jax.jit(jaxmj.forward)


def final_states(dm, solver):
  """MuJoCo's efc_state at its solution. When CG or Newton solve by island (MuJoCo 4.0's
  default), d.efc_state is not updated after the solve (measured: it differs from the
  island-free solve's, while iefc_state mapped back through map_iefc2efc equals it); PGS
  solves the whole problem at once and writes efc_state."""
  if solver == "PGS" or not dm.nisland:
    return dm.efc_state
  out = np.zeros_like(dm.efc_state)
  out[dm.map_iefc2efc] = dm.iefc_state
  return out


SATISFIED = int(mujoco.mjtConstraintState.mjCNSTRSTATE_SATISFIED)
CONE = int(mujoco.mjtConstraintState.mjCNSTRSTATE_CONE)


def on_cone_edge(dm, rtol=1e-12):
  """(nefc,) bool: rows of elliptic contacts whose MuJoCo force lies on the friction cone's
  surface to round-off (0 < mu N and |mu N - T| <= rtol mu N in dualState's terms). PGS
  projects sliding cones onto that surface, where dualState's `mu N >= T` (SATISFIED, else
  CONE) is decided by the last bit: jaxmj's forces, from its own collisions, differ from
  MuJoCo's in the 11th digit, and the bit flips with XLA's optimization level (a condim-4
  cone here: SATISFIED at XLA's defaults, CONE at the suite's
  --xla_backend_optimization_level=0, its forces 1.9e-10 of 1.2e5 apart). Either state is
  accepted there; the forces themselves are held above."""
  edge = np.zeros(dm.nefc, bool)
  elliptic = dm.efc_type == mujoco.mjtConstraint.mjCNSTR_CONTACT_ELLIPTIC
  for k in range(dm.ncon):
    rows = np.flatnonzero(elliptic & (dm.efc_id == k))
    if rows.size:
      con = dm.contact[k]
      n = dm.efc_force[rows[0]] / con.mu
      t = np.linalg.norm(dm.efc_force[rows[1:]] / con.friction[:con.dim - 1])
      edge[rows] = n > 0 and abs(con.mu * n - t) <= rtol * con.mu * n
  return edge


def check(solver, cone, iterations=100):
  xml = XML.format(cone=cone, solver=solver, iterations=iterations)
  m, mj = jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)
  mj.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
  dm = state(mj)
  mujoco.mj_forward(mj, dm)
  d = _forward()(m, jaxmj.make_data(m).replace(qpos=dm.qpos.copy(), qvel=dm.qvel.copy()))
  dims = sorted(set(int(c.dim) for c in dm.contact))
  assert dims == [1, 3, 4, 6] and (dm.contact.dist > 0).any(), dims  # one in the margin
  assert (dm.contact.solref[:, 0] < 0).any()
  kinds = set(dm.efc_type.tolist())
  assert {mujoco.mjtConstraint.mjCNSTR_FRICTION_DOF, mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT,
          } <= kinds
  assert (dm.efc_type == mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT).sum() == 3

  rows_ours, rows_ref = match_rows(d, dm)
  J = np.asarray(dm.efc_J).reshape(dm.nefc, mj.nv)
  close(np.asarray(d.efc_J)[rows_ours], J[rows_ref], "efc_J")
  for f in ROW_FIELDS:
    close(np.asarray(getattr(d, f))[rows_ours], getattr(dm, f)[rows_ref], f)
  ours, ref = np.asarray(d.efc_state)[rows_ours], final_states(dm, solver)[rows_ref]
  edge = on_cone_edge(dm)[rows_ref]
  np.testing.assert_array_equal(ours[~edge], ref[~edge])
  assert set(ours[edge].tolist()) <= {SATISFIED, CONE}, ours[edge]
  close(d.qfrc_constraint, dm.qfrc_constraint, "qfrc_constraint")
  close(d.qacc, dm.qacc, "qacc")
  assert not np.asarray(d.warning).any()


@pytest.mark.parametrize("solver,cone", [
  pytest.param("Newton", "elliptic", marks=pytest.mark.slow),
  pytest.param("PGS", "pyramidal", marks=pytest.mark.slow),
  pytest.param("Newton", "pyramidal", marks=pytest.mark.slow),
  pytest.param("CG", "pyramidal", marks=pytest.mark.slow),
  pytest.param("CG", "elliptic", marks=pytest.mark.slow),
  pytest.param("PGS", "elliptic", marks=pytest.mark.slow)])
def test_forward_matches_mj_forward(solver, cone):
  check(solver, cone)
