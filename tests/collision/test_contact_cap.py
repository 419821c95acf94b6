"""MJX's custom numeric max_contact_points (and <size nconmax>): per condim, the contact
slots keep the cap's number of candidate contacts of least dist (collision/plan.py,
collision/driver.py).

A ball, a capsule lying down, a second ball and a capsule on a plane: 13 candidate slots of
condim 3, six of them touching at rest. Cap 8 binds the slots but not the contacts (results
as uncapped and as MuJoCo's), cap 4 drops the two shallowest contacts.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import jaxmj  # noqa: E402
from tests.mujoco_compare import FAST  # noqa: E402

SCENE = """<mujoco>
  {custom}
  <option timestep="0.005" {option}/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 .1" {floor}/>
    <body name="ball" pos="0 0 .3"><freejoint/><geom type="sphere" size=".1"/></body>
    <body pos=".5 0 .35"><freejoint/><geom type="capsule" size=".05 .2" euler="0 90 0"/></body>
    <body pos="-.5 .1 .3"><freejoint/><geom type="sphere" size=".12"/></body>
    <body pos="0 .6 .4"><freejoint/><geom type="capsule" size=".06 .15" euler="90 0 0"/></body>
  </worldbody>
  {extra}
</mujoco>"""
NCANDIDATE = 13  # 1 + 2 + 1 + 2 slots against the floor, 7 between the bodies
NSTEP = 80  # everything rests on the floor by then: 6 contacts in MuJoCo


def scene(cap=None, option="", floor="", extra=""):
  custom = (f'<custom><numeric name="max_contact_points" data="{cap}"/></custom>'
            if cap is not None else "")
  return SCENE.format(custom=custom, option=option, floor=floor, extra=extra)


def _rollout(m):
  return _rollout_from(m, jaxmj.make_data(m))


def _rollout_from(m, d):
  run = jax.jit(lambda m, d: jaxmj.rollout(m, d, nstep=NSTEP), compiler_options=FAST)
  return run(m, d)


def _mujoco_trajectory(xml: str, nstep: int = NSTEP):
  """(qpos after each of `nstep` mj_steps (nstep, nq), MjModel, final MjData) from the
  file's initial state (uncapped: MuJoCo reads no cap from the numerics)."""
  mj = mujoco.MjModel.from_xml_string(xml)
  dm = mujoco.MjData(mj)
  ref = []
  for _ in range(nstep):
    mujoco.mj_step(mj, dm)
    ref.append(dm.qpos.copy())
  return np.array(ref), mj, dm


@pytest.fixture(scope="module")
def mujoco_run():
  """MuJoCo's qpos after each step and its final MjData, forward at the final state
  (uncapped: MuJoCo ignores the numeric)."""
  qpos, mj, dm = _mujoco_trajectory(scene())
  mujoco.mj_forward(mj, dm)  # the contacts at the final state
  return qpos, mj, dm


def test_cap_not_binding_contacts_matches_mujoco_and_uncapped(mujoco_run):
  """Cap 8 of 13 candidate slots, 6 contacts: MuJoCo's trajectory (float64), and the
  uncapped jaxmj's to the last bit (the kept slots keep their order): these free bodies are
  undamped, so mj_Euler's damped solve sits in a cond (integrator.euler), and since then a
  few qpos entries near 1e-32 round one ulp apart between the two programs."""
  ref, _, dm = mujoco_run
  assert dm.ncon == 6
  m = jaxmj.Model.from_xml_string(scene(8))
  final, traj = _rollout(m)
  assert final.contact.dist.shape == (8,) and final.contact.geom.shape == (8, 2)
  assert int(final.contact.active.sum()) == 6
  np.testing.assert_allclose(traj["qpos"], ref, atol=1e-10)
  _, free = _rollout(jaxmj.Model.from_xml_string(scene()))
  np.testing.assert_array_max_ulp(traj["qpos"], free["qpos"], maxulp=1)


def test_cap_binding_keeps_the_deepest(mujoco_run):
  """Cap 4 at MuJoCo's resting state: exactly 4 contacts, MuJoCo's 4 of least dist (the
  same geoms, dist, points), in ascending slot order; contact arrays and efc rows sized by
  the cap (pyramidal condim 3: 4 rows a contact)."""
  _, mj, dm = mujoco_run
  m = jaxmj.Model.from_xml_string(scene(4))
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(dm.qpos), qvel=jnp.asarray(dm.qvel))
  d = jax.jit(jaxmj.forward, compiler_options=FAST)(m, d)
  con = d.contact
  assert con.dist.shape == (4,) and d.efc_J.shape == (16, m.nv)
  assert np.asarray(con.active).all()
  order = np.argsort([c.dist for c in dm.contact[:dm.ncon]], kind="stable")[:4]
  deepest = [dm.contact[i] for i in order]
  want = {(int(c.geom1), int(c.geom2), round(float(c.dist), 9)) for c in deepest}
  got = {(int(a), int(b), round(float(x), 9))
         for (a, b), x in zip(np.asarray(con.geom), np.asarray(con.dist))}
  assert got == want
  for c in deepest:  # the points too
    assert np.min(np.abs(np.asarray(con.pos) - c.pos).max(axis=1)) < 1e-9
  # MJX's rule picks the same set; jaxmj keeps them in the order of their candidate slots
  plan = jaxmj.collision.plan.collision_plan(m)
  slot = [int(np.flatnonzero((plan["geom1"] == a) & (plan["geom2"] == b))[0])
          for a, b in np.asarray(con.geom)]
  assert slot == sorted(slot)


def test_cap_batches_and_differentiates(mujoco_run):
  """vmap over states whose deepest contacts differ, and a finite gradient through the
  selection (the kept contacts' dist, points and frames carry it)."""
  _, _, dm = mujoco_run
  m = jaxmj.Model.from_xml_string(scene(4))
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(dm.qpos))
  lift = jnp.zeros(m.nq).at[2].set(0.2)  # ball off the floor: another contact is kept
  batch = jax.tree.map(lambda x: jnp.stack([x, x]), d)
  batch = batch.replace(qpos=batch.qpos.at[1].add(lift))
  out = jax.jit(jax.vmap(jaxmj.step, (None, 0)), compiler_options=FAST)(m, batch)
  geoms = np.asarray(out.contact.geom)
  assert 1 in geoms[0] and 1 not in geoms[1]
  height = lambda v: jaxmj.step(m, d.replace(qvel=v)).qpos[2]  # noqa: E731
  # one program for the gradient and the finite differences' values
  value_and_grad = jax.jit(jax.value_and_grad(height), compiler_options=FAST)
  grad = value_and_grad(d.qvel)[1]
  e = jnp.zeros(m.nv).at[2].set(1e-6)
  fd = (value_and_grad(d.qvel + e)[0] - value_and_grad(d.qvel - e)[0]) / 2e-6
  assert np.isfinite(np.asarray(grad)).all()
  assert float(grad[2]) == pytest.approx(float(fd), rel=1e-5)


def test_cap_not_binding_anywhere_keeps_static_slots():
  """A cap at or above every condim's candidate slots changes nothing: static geoms."""
  m = jaxmj.Model.from_xml_string(scene(NCANDIDATE))
  con = jaxmj.make_data(m).contact
  assert con.geom is None and len(con.geom1) == NCANDIDATE


ADHESION = '<actuator><adhesion body="ball" ctrlrange="0 1" gain="20"/></actuator>'


# tests/solver/test_smoothing.py's pusher and box, and a world sphere 1 m away that both
# could touch: 3 candidate pairs, cap 2 (the geoms of a slot are traced)
PUSHER = """<mujoco><option timestep="0.01"/>{custom}<worldbody>
  <geom type="sphere" size=".05" pos="0 1 .05"/>
  <body pos="-0.3 0 0.05"><joint name="push" type="slide" axis="1 0 0" damping="2"/>
    <geom type="sphere" size="0.05" mass="1"/></body>
  <body pos="0 0 0.05"><joint type="slide" axis="1 0 0" damping="5"/>
    <geom type="box" size="0.05 0.05 0.05" mass="1"/></body>
  </worldbody><actuator><motor joint="push" ctrlrange="-10 10"/></actuator></mujoco>"""


def test_contact_smoothing_under_a_cap_keeps_the_nearest_pairs_apart():
  """Smoothed (opt.grad_smoothing), the slots a cap leaves over keep the nearest pairs apart
  (every contact is deeper than any of them). No push: the pusher-box pair stays apart and
  is kept, so the derivative of the box's final position w.r.t. the push is the uncapped
  model's (positive; the exact one is 0, test_smoothing.py). A push of 8 N: the same final
  position and derivative as uncapped (the same contacts and forces)."""
  def box_x(cap):
    custom = (f'<custom><numeric name="max_contact_points" data="{cap}"/></custom>'
              if cap else "")
    m = jaxmj.Model.from_xml_string(PUSHER.format(custom=custom))
    m = m.replace(opt=m.opt.replace(grad_smoothing=0.05))

    def final_x(push):
      d = jaxmj.make_data(m)
      _, traj = jaxmj.rollout(m, d, jnp.full((40, 1), push), nstep=40, fields=("qpos",))
      return traj["qpos"][-1, 1]
    return m, jax.jit(jax.value_and_grad(final_x), compiler_options=FAST)

  m, capped = box_x(2)
  assert jaxmj.make_data(m).contact.geom.shape == (2, 2)
  _, free = box_x(None)
  assert float(free(0.0)[1]) > 1e-3 and float(free(8.0)[0]) > 1e-3  # the slope; pushed
  for push in (0.0, 8.0):
    np.testing.assert_allclose(capped(push), free(push), rtol=1e-9, err_msg=str(push))


def test_adhesion_actuator_counts_the_contacts_the_capped_slots_hold():
  """An adhesion actuator on the ball (20 N, pulling it onto the floor) under cap 8 of 13
  slots: the slots' bodies are traced, the actuator's moment averages the ball's contacts
  among them, and the trajectory is MuJoCo's."""
  xml = lambda cap: scene(cap, extra=ADHESION)  # noqa: E731
  mj = mujoco.MjModel.from_xml_string(xml(None))
  dm = mujoco.MjData(mj)
  dm.ctrl[:] = 1.0
  ref, pulled = [], 0
  for _ in range(NSTEP):
    mujoco.mj_step(mj, dm)
    ref.append(dm.qpos.copy())
    pulled += bool(np.any(dm.actuator_moment))
  assert pulled >= NSTEP // 2  # from the ball's landing on
  m = jaxmj.Model.from_xml_string(xml(8))
  final, traj = _rollout_from(m, jaxmj.make_data(m).replace(ctrl=jnp.ones(m.nu)))
  assert final.contact.geom is not None
  np.testing.assert_allclose(traj["qpos"], np.array(ref), atol=1e-10)
  moment = np.zeros((mj.nu, mj.nv))  # MuJoCo's is sparse
  mujoco.mju_sparse2dense(moment, dm.actuator_moment, dm.moment_rownnz, dm.moment_rowadr,
                          dm.moment_colind)
  assert np.any(moment)
  np.testing.assert_allclose(final.actuator_moment, moment, atol=1e-10)


@pytest.mark.parametrize("floor", ['adhesion="30"', 'adhesion="30" margin=".01" gap=".03"'],
                         ids=["adhesion", "adhesion with a gap"])
def test_contact_adhesion_under_a_cap_matches_mujoco(floor):
  """Contact adhesion on the floor under cap 8 of 13 slots: each slot's adhesion (and gap)
  from the geoms it holds now; MuJoCo's trajectory to 1e-10 and its contact forces at the
  end (mj_contactForce: the net force, the pull subtracted). With a gap, the adhering
  contacts in the gap layer get their one frictionless row (margin 1 cm, gap 3 cm)."""
  ref, mj, dm = _mujoco_trajectory(scene(floor=floor))
  m = jaxmj.Model.from_xml_string(scene(8, floor=floor))
  final, traj = _rollout(m)
  assert final.contact.geom is not None
  np.testing.assert_allclose(traj["qpos"], ref, atol=1e-10)
  mujoco.mj_forward(mj, dm)
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(dm.qpos), qvel=jnp.asarray(dm.qvel))
  d = jax.jit(jaxmj.forward, compiler_options=FAST)(m, d)
  forces = np.asarray(jaxmj.constraint.contact_force.contact_forces(m, d))
  for i in range(dm.ncon):
    want = np.zeros(6)
    mujoco.mj_contactForce(mj, dm, i, want)
    c = dm.contact[i]
    slot = [k for k, (a, b) in enumerate(np.asarray(d.contact.geom))
            if (a, b) == (c.geom1, c.geom2)
            and np.abs(np.asarray(d.contact.pos[k]) - c.pos).max() < 1e-9]
    assert len(slot) == 1
    np.testing.assert_allclose(forces[slot[0]], want, atol=1e-8)


@pytest.mark.parametrize("option, nstep", [
  ('solver="PGS"', NSTEP),
  pytest.param('solver="PGS" cone="elliptic"', NSTEP, marks=pytest.mark.slow),
  ('noslip_iterations="3"', 48),
  pytest.param('noslip_iterations="3" cone="elliptic"', NSTEP, marks=pytest.mark.slow)])
def test_cap_sweeps_pgs_and_noslip_in_mujocos_contact_order(option, nstep):
  """PGS and noslip sweep the contacts in mj_collision's order, which under a cap is traced
  (Contact.rank): cap 8 of 13 slots, MuJoCo's trajectory to 1e-10 (Gauss-Seidel in another
  order is off by far more: PGS stops short of the optimum). Pyramidal noslip up to step
  48 (contacts from step 38): from step 49 on a 6e-17 difference between the engines grows
  ~100x a step, uncapped too (5.6e-7 by step 80), which no ordering explains."""
  ref, _, dm = _mujoco_trajectory(scene(option=option), nstep)
  assert dm.ncon >= 2
  m = jaxmj.Model.from_xml_string(scene(8, option=option))
  final, traj = _rollout(m)
  assert final.contact.rank.shape == (8,)
  np.testing.assert_allclose(traj["qpos"][:nstep], ref, atol=1e-10)


def test_nconmax_caps_the_contacts_and_counts_contactfull(mujoco_run):
  """<size nconmax> is the cap where there is no max_contact_points (MuJoCo 4.0 reads it as
  an arena hint and keeps every contact): 8 slots, MuJoCo's trajectory, no warning; 4 at
  MuJoCo's resting state (6 contacts) keeps the deepest 4 and counts CONTACTFULL."""
  ref, _, dm = mujoco_run
  size = lambda n: scene(extra=f'<size nconmax="{n}"/>')  # noqa: E731
  m, mj = jaxmj.Model.from_xml_string(size(8)), mujoco.MjModel.from_xml_string(size(8))
  assert m.nconmax == mj.nconmax == 8
  final, traj = _rollout(m)
  assert final.contact.dist.shape == (8,)
  np.testing.assert_allclose(traj["qpos"], ref, atol=1e-10)
  assert int(final.warning[jaxmj.Warning.CONTACTFULL]) == 0
  m = jaxmj.Model.from_xml_string(size(4))
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(dm.qpos), qvel=jnp.asarray(dm.qvel))
  d = jax.jit(jaxmj.forward, compiler_options=FAST)(m, d)
  assert np.asarray(d.contact.active).sum() == 4
  assert int(d.warning[jaxmj.Warning.CONTACTFULL]) == 1


PAIRS = """<mujoco>
  <custom><numeric name="max_geom_pairs" data="{cap}"/></custom>
  <worldbody>
    <body pos="0 0 1"><freejoint/><geom type="capsule" size=".05 .2" euler="0 90 0"/></body>
    <body pos="2 0 1"><freejoint/><geom type="capsule" size=".05 .2" euler="0 90 0"/></body>
    <body pos="0 0 1.13"><freejoint/><geom type="sphere" size=".1"/></body>
    <body pos="2 0 1.14"><freejoint/><geom type="sphere" size=".1"/></body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize("cap", [1, 2])
def test_geom_pair_cap_collides_the_nearest_pairs(cap):
  """max_geom_pairs 1 on the four sphere-capsule pairs: only the pair of least
  |pos2 - pos1| - (rbound1 + rbound2) collides (MJX's rule: ball 3 on capsule 1, -0.22,
  before ball 4 on capsule 2, -0.21), so MuJoCo's other contact is missing; at 2 both
  touching pairs are kept (the far pairs rank last) and the contacts are MuJoCo's."""
  xml = PAIRS.format(cap=cap)
  m = jaxmj.Model.from_xml_string(xml)
  d = jax.jit(jaxmj.forward, compiler_options=FAST)(m, jaxmj.make_data(m))
  mj = mujoco.MjModel.from_xml_string(xml)
  dm = mujoco.MjData(mj)
  mujoco.mj_forward(mj, dm)
  ref = {(frozenset((int(c.geom1), int(c.geom2))), round(float(c.dist), 9))
         for c in dm.contact[:dm.ncon]}
  assert len(ref) == 2
  if cap == 1:
    ref = {r for r in ref if r[0] == frozenset((0, 2))}
  act = np.asarray(d.contact.active)
  got = {(frozenset(map(int, g)), round(float(x), 9))
         for g, x in zip(np.asarray(d.contact.geom)[act], np.asarray(d.contact.dist)[act])}
  assert got == ref
  # slots: the capsule pair (2 slots), the sphere pair and `cap` sphere-capsule pairs
  assert d.contact.dist.shape == (3 + cap,)


def test_data_the_device_cannot_hold_says_how_many_slots_and_how_to_cap(monkeypatch):
  # MuJoCo's 100_humanoids.xml: 3,081,450 slots, efc_J alone 33 GB; here the device's refusal
  # is simulated, the sizes are the model's own
  import jaxmj.io

  def refuse(m):
    raise jax.errors.JaxRuntimeError("RESOURCE_EXHAUSTED: Out of memory allocating 8 bytes.")

  monkeypatch.setattr(jaxmj.io, "_make_data", refuse)
  with pytest.raises(MemoryError, match=f"{NCANDIDATE} contact slots .* <size nconmax"):
    jaxmj.make_data(jaxmj.Model.from_xml_string(scene()))
