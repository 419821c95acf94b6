"""Constraint rows (friction loss, joint limits, contacts) equal MuJoCo's efc_* (float64).

MuJoCo builds only violated rows; jaxmj has a static layout with `efc_active`. Rows are
matched by (efc_type, efc_id), in order within a contact. Contacts are MuJoCo's own
d.contact copied into a jaxmj Contact, so these tests hold the constraint stage alone.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import jaxmj  # noqa: E402
from jaxmj.constraint.driver import jac_products, make_constraint  # noqa: E402
from jaxmj.constraint.layout import efc_layout  # noqa: E402
from jaxmj.constraint.rows import (  # noqa: E402
  ball_angle_axis,
  contact_factors,
  take_static,
)
from jaxmj.smooth import com, kinematics, mass  # noqa: E402


def fwd_position(m, d):
  """Position stages without collision: these tests supply MuJoCo's contacts themselves."""
  d = com.com_pos(m, kinematics.kinematics(m, d))
  return mass.factor_m(m, mass.crb(m, d))
from mujoco_compare import FAST as OPTS  # noqa: E402

from jaxmj.types import ConstraintType, Contact, DisableBit, EnableBit  # noqa: E402

TOL = 1e-9
FIELDS = ("efc_pos", "efc_margin", "efc_frictionloss", "efc_diagA", "efc_R", "efc_D",
          "efc_aref", "efc_vel")

LIMITS_XML = """<mujoco>
  <option timestep="0.005"/>
  <default><joint solimplimit="0.8 0.95 0.02 0.4 3"/><geom contype="0" conaffinity="0"/></default>
  <worldbody>
    <body pos="0 0 1">
      <joint name="h" axis="0 1 0" range="-40 40" margin="0.05" frictionloss="0.2"
             solreflimit="-500 -20" solreffriction="0.05 0.8" solimpfriction="0.7 0.9 0.1"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".05"/>
      <body pos=".3 0 0">
        <joint name="s" type="slide" axis="1 0 0" range="-.1 .2"
               solreflimit="0.03 0.7" solimplimit="0.9 0.99 0.05 0.5 1"/>
        <geom type="box" size=".05 .05 .05"/>
        <body pos=".1 0 0">
          <joint name="b" type="ball" range="0 50" margin="0.1" frictionloss="0.1"/>
          <geom type="capsule" fromto="0 0 0 0 0 -.3" size=".04"/>
        </body>
      </body>
      <body pos="0 .3 0">
        <joint name="narrow" axis="1 0 0" range="-10 10" solimplimit="0.9 0.9 0.01"
               solreflimit="0.001 1"/>
        <joint name="free" axis="0 0 1"/>
        <geom type="sphere" size=".05"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""

CONTACT_XML = """<mujoco>
  <option cone="{cone}" impratio="{impratio}" timestep="0.004"/>
  <default><geom friction="0.8 0.02 0.001"/></default>
  <worldbody>
    <geom type="plane" size="5 5 .1" margin="0.01" gap="0.002" condim="1"/>
    <body pos="0 0 .1">
      <freejoint/>
      <geom type="box" size=".1 .15 .08" solimp="0.85 0.97 0.003 0.3 4" margin="0.005"
            condim="3"/>
    </body>
    <body pos="1 0 .1">
      <freejoint/>
      <geom type="sphere" size=".12" solref="-2000 -40" friction="0.5 0.01 0.003"
            condim="4"/>
    </body>
    <body pos="1 0 .3">
      <joint type="slide" axis="0 0 1"/>
      <joint type="hinge" axis="1 0 0"/>
      <geom type="sphere" size=".1" pos="0 0 .02" solref="0.03 0.9" condim="6"/>
    </body>
    <body pos="-1 0 .1">
      <joint type="hinge" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 .3 0 -.1" size=".05" condim="1"/>
    </body>
  </worldbody>
</mujoco>"""


def load(xml):
  mj = mujoco.MjModel.from_xml_string(xml)
  mj.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
  return jaxmj.Model.from_xml_string(xml), mj


def contact_of(m, dm) -> Contact:
  """jaxmj Contact holding MuJoCo's contacts (every slot active)."""
  cs = [dm.contact[i] for i in range(dm.ncon)]
  n = len(cs)

  def get(name, shape):
    return jnp.asarray(np.array([np.asarray(getattr(c, name), float) for c in cs])
                       .reshape((n,) + shape))

  dim = np.array([c.dim for c in cs], np.int32)
  return Contact(
    dist=get("dist", ()), pos=get("pos", (3,)), frame=get("frame", (3, 3)),
    includemargin=get("includemargin", ()), friction=get("friction", (5,)),
    solref=get("solref", (2,)), solreffriction=get("solreffriction", (2,)),
    solimp=get("solimp", (5,)), active=jnp.ones(n, bool), dim=dim,
    geom1=np.array([c.geom[0] for c in cs], np.int32),
    geom2=np.array([c.geom[1] for c in cs], np.int32),
    efc_address=efc_layout(m, dim).contact_efc_address)


def data_of(m, dm):
  """jaxmj Data at MuJoCo's state, with MuJoCo's cdof and subtree_com (mj_comPos, tested
  in test_forward) so that only the constraint stage is compiled here."""
  d = jaxmj.make_data(m).replace(qpos=jnp.asarray(dm.qpos), qvel=jnp.asarray(dm.qvel),
                                 cdof=jnp.asarray(dm.cdof), subtree_com=jnp.asarray(dm.subtree_com))
  return d.replace(contact=contact_of(m, dm))


# The Model is a static argument: its leaves are constants, so the friction-loss rows can
# be read from the compiled values. Backend optimization off halves compile time.
make = jax.jit(make_constraint, static_argnums=0, compiler_options=OPTS)


def rows_by_key(types, ids):
  out = {}
  for i, key in enumerate(zip(np.asarray(types).tolist(), np.asarray(ids).tolist())):
    out.setdefault(key, []).append(i)
  return out


def assert_rows_match(m, mj, d, dm):
  """Every MuJoCo row has an active jaxmj row with equal values; every other row is off."""
  ours = rows_by_key(d.efc_type, d.efc_id)
  theirs = rows_by_key(dm.efc_type, dm.efc_id)
  J = np.asarray(dm.efc_J).reshape(dm.nefc, mj.nv)
  active = np.asarray(d.efc_active)
  matched = np.zeros(len(active), bool)
  for key, rows in theirs.items():
    assert key in ours, f"MuJoCo row {key} missing"
    # a range narrower than 2 * margin owns two rows (lower, upper): MuJoCo's are the active
    mine = [r for r in ours[key] if active[r]] if len(ours[key]) > len(rows) else ours[key]
    assert len(mine) == len(rows), key
    matched[mine] = True
    assert active[mine].all(), key
    np.testing.assert_allclose(np.asarray(d.efc_J)[mine], J[rows], atol=TOL, rtol=0,
                               err_msg=f"efc_J {key}")
    for f in FIELDS:
      ref = np.asarray(getattr(dm, f))[rows]
      # D and R span 1e-6 .. 1e6: compare relative to the value's own size.
      np.testing.assert_allclose(np.asarray(getattr(d, f))[mine], ref, atol=TOL, rtol=TOL,
                                 err_msg=f"{f} {key}")
  assert not active[~matched].any(), "rows MuJoCo lacks are active"
  np.testing.assert_array_equal(np.asarray(d.efc_D)[~matched], 0.0)
  for f in ("efc_J", "efc_R", "efc_aref", "efc_pos", "efc_diagA"):
    assert np.isfinite(np.asarray(getattr(d, f))).all(), f
  return matched


# ------------------------------------------------------------------ limits and friction loss


@pytest.fixture(scope="module")
def limits():
  m, mj = load(LIMITS_XML)
  return m, mj, functools.partial(make, m)


def limit_state(mj, rng, hinge, slide, ball_angle, narrow):
  dm = mujoco.MjData(mj)
  dm.qpos[0] = np.deg2rad(hinge)
  dm.qpos[1] = slide
  axis = rng.normal(size=3)
  axis /= np.linalg.norm(axis)
  half = np.deg2rad(ball_angle) / 2
  dm.qpos[2:6] = np.r_[np.cos(half), np.sin(half) * axis]
  dm.qpos[6] = np.deg2rad(narrow)
  dm.qpos[7] = rng.normal()
  dm.qvel[:] = rng.normal(size=mj.nv)
  return dm


@pytest.mark.parametrize("case", [
  (45, 0.25, 60, 12),  # all violated: hinge and slide upper, ball, narrow upper
  (-43, -0.15, 48, -11),  # lower sides; the ball within its 0.1 rad margin
  (-38, 0.0, 20, 0),  # hinge within margin of its lower limit, the rest free
  (0, 0.1, 130, -3),  # ball beyond pi/2, slide and hinges free
])
def test_limits_and_frictionloss_match_mujoco(limits, case):
  m, mj, run = limits
  dm = limit_state(mj, np.random.default_rng(int(sum(map(abs, case)))), *case)
  mujoco.mj_forward(mj, dm)
  d = run(data_of(m, dm))
  matched = assert_rows_match(m, mj, d, dm)
  lay = efc_layout(m, ())
  assert (lay.nf, lay.nl, lay.nc) == (4, 4, 0)  # hinge dof and 3 ball dofs; 4 limited joints
  assert matched[:lay.nf].all()  # friction rows always active
  assert dm.nefc == matched.sum()


def test_ball_limit_angle_axis_edge_cases():
  # Identity: zero angle, axis (1, 0, 0) as mju_normalize3 leaves it; w < 0 flips the axis.
  f = jax.jit(ball_angle_axis, compiler_options=OPTS)
  angle, axis = f(jnp.array([[1.0, 0, 0, 0], [-0.5, 0.5, 0.5, 0.5]]))
  np.testing.assert_allclose(angle, [0.0, 2 * np.pi / 3], atol=1e-15)
  np.testing.assert_allclose(axis[0], [1, 0, 0])
  np.testing.assert_allclose(axis[1], -np.ones(3) / np.sqrt(3), atol=1e-15)
  aa = ball_angle_axis
  g = jax.jit(jax.grad(lambda q: aa(q)[0] + aa(q)[1].sum()), compiler_options=OPTS)(
    jnp.array([1.0, 0, 0, 0]))
  assert np.isfinite(np.asarray(g)).all()


# --------------------------------------------------------------------------------- contacts


def contact_state(mj, rng):
  dm = mujoco.MjData(mj)
  dm.qpos[:] = mj.qpos0
  for adr, x, z in ((0, 0, 0.06), (7, 1, 0.1)):  # box and free sphere pressed into the plane
    q = rng.normal(size=4) * [4, 1, 1, 1]
    xy = [x, 0] + rng.normal(scale=0.03, size=2)
    dm.qpos[adr:adr + 7] = np.r_[xy, z, q / np.linalg.norm(q)]
  dm.qpos[14] = -0.12  # the slider sphere rests on the free sphere
  dm.qpos[15] = rng.normal(scale=0.3)
  dm.qpos[16] = 0.3 + rng.normal(scale=0.1)  # the capsule's tip dips into the plane
  dm.qvel[:] = rng.normal(size=mj.nv)
  return dm


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_contacts_match_mujoco(cone):
  """condim 1, 3, 4 and 6; world-body and body-body; negative solref, custom solimp,
  margin and gap, impratio != 1."""
  m, mj = load(CONTACT_XML.format(cone=cone, impratio=3.5))
  for seed in range(2):
    dm = contact_state(mj, np.random.default_rng(seed))
    mujoco.mj_forward(mj, dm)
    pairs = {tuple(sorted(mj.geom_bodyid[dm.contact[i].geom])): dm.contact[i].dim
             for i in range(dm.ncon)}
    assert pairs == {(0, 1): 3, (0, 2): 4, (2, 3): 6, (0, 4): 1}, pairs
    d = make(m, data_of(m, dm))
    matched = assert_rows_match(m, mj, d, dm)
    assert matched.all() and dm.nefc == len(matched)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_jacobian_products_match_the_formed_rows(cone):
  """jac_products' efc_J x and efc_J' y (contact rows from their factors: condim 1-6,
  world-body and body-body) equal the products with the formed rows, and so do their
  derivatives in what the rows are built from (cdof, subtree_com, contact points and
  frames), which is what mul_jac / mul_jac_t take for dJ x and dJ' y."""
  m, mj = load(CONTACT_XML.format(cone=cone, impratio=3.5))
  dm = contact_state(mj, np.random.default_rng(0))
  mujoco.mj_forward(mj, dm)
  d0 = data_of(m, dm)
  rng = np.random.default_rng(1)
  x = jnp.asarray(rng.normal(size=m.nv))
  y = jnp.asarray(rng.normal(size=efc_layout(m, d0.contact.dim).nefc))

  def products(cdof, subtree_com, pos, frame):
    d = make_constraint(m, d0.replace(cdof=cdof, subtree_com=subtree_com,
                                      contact=d0.contact.replace(pos=pos, frame=frame)))
    lay = efc_layout(m, d.contact.dim)
    mul, mul_t, f = jac_products(m, lay, d.efc_J[:lay.nefc - lay.nc],
                                 contact_factors(m, d, lay), d.cdof)
    return d.efc_J @ x, mul(f, x), y @ d.efc_J, mul_t(f, y)

  args = (d0.cdof, d0.subtree_com, d0.contact.pos, d0.contact.frame)
  dargs = tuple(jnp.asarray(rng.normal(size=a.shape)) for a in args)
  out, dout = jax.jit(lambda a, t: jax.jvp(products, a, t), compiler_options=OPTS)(args, dargs)
  for (jx, mx, jty, mty) in (out, dout):
    np.testing.assert_allclose(mx, jx, rtol=0, atol=1e-12 * np.abs(jx).max())
    np.testing.assert_allclose(mty, jty, rtol=0, atol=1e-12 * np.abs(jty).max())


@pytest.mark.parametrize("idx", [[1, 1, 1, 2, 2, 0, 0, 0], list(range(10)), [3, 4, 5, 5, 9],
                                 [0, 2, 4, 6, 8, 1, 3, 5, 7, 9, 0], [5, 3, 1, 0], [2, 2, 2],
                                 np.repeat(np.arange(12), 4), np.repeat(np.arange(12) * 4, 4),
                                 np.arange(48)])
def test_take_static_equals_indexing(idx):
  """take_static (slices and broadcasts for static indices, a gather for the rest) equals
  numpy indexing."""
  x = np.arange(48 * 3, dtype=np.float32).reshape(48, 3)
  idx = np.asarray(idx)
  np.testing.assert_array_equal(take_static(jnp.asarray(x), idx), x[idx])


def test_edited_contact_parameters_match_mj_makeconstraint():
  """solreffriction, mixed solref, flat and saturated solimp, inactive slots, no refsafe."""
  m, mj = load(CONTACT_XML.format(cone="elliptic", impratio=0.7))
  dm = contact_state(mj, np.random.default_rng(5))
  for f in (mujoco.mj_kinematics, mujoco.mj_comPos, mujoco.mj_collision):
    f(mj, dm)
  edits = [
    dict(solreffriction=[0.05, 0.5]),
    dict(solreffriction=[-100, -3], solref=[0.01, -1]),  # mixed solref -> default
    dict(solimp=[0.9, 0.9, 0.001, 0.5, 2]),  # flat
    dict(solimp=[0.3, 0.99, 1e-4, 0.5, 2], includemargin=0.02),
    dict(solreffriction=[0.002, 1.2], friction=[0.3, 0.7, 0.05, 0.002, 0.004]),
  ]
  for i in range(dm.ncon):
    for k, v in edits[i % len(edits)].items():
      setattr(dm.contact[i], k, v)
  run_mj = lambda: (mujoco.mj_makeConstraint(mj, dm), mujoco.mj_referenceConstraint(mj, dm))
  run_mj()
  assert_rows_match(m, mj, make(m, data_of(m, dm)), dm)

  # refsafe off: small timeconsts are used as given.
  mj.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_REFSAFE
  m2 = m.replace(opt=m.opt.replace(disableflags=m.opt.disableflags | DisableBit.REFSAFE))
  run_mj()
  assert_rows_match(m2, mj, make(m2, data_of(m2, dm)), dm)

  # An inactive slot carrying zeros: its rows are off and finite.
  d = data_of(m, dm)
  c = d.contact
  zero = lambda a: a.at[0].set(0.0)
  c = c.replace(active=c.active.at[0].set(False), friction=zero(c.friction),
                frame=zero(c.frame), solref=zero(c.solref), solimp=zero(c.solimp))
  d = make(m, d.replace(contact=c))
  rows = np.flatnonzero(np.asarray(d.efc_id) == 0)[-c.dim[0]:]
  assert (np.asarray(d.efc_type)[rows] == ConstraintType.CONTACT_ELLIPTIC).all()
  assert not np.asarray(d.efc_active)[rows].any()
  assert (np.asarray(d.efc_D)[rows] == 0).all()
  for f in ("efc_J", "efc_R", "efc_aref", "efc_diagA"):
    assert np.isfinite(np.asarray(getattr(d, f))).all(), f

  # Gradients through contact rows, the zeroed inactive slot included, are finite.
  def loss(dist, friction, solimp, qvel):
    cc = c.replace(dist=dist, friction=friction, solimp=solimp)
    out = make_constraint(m, d.replace(contact=cc, qvel=qvel))
    return jnp.sum(out.efc_D * out.efc_aref ** 2) + jnp.sum(out.efc_R * out.efc_vel)

  grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)), compiler_options=OPTS)(
    c.dist, c.friction, c.solimp, d.qvel)
  for g in grads:
    assert np.isfinite(np.asarray(g)).all()
  assert np.asarray(grads[0])[0] == 0 and np.abs(np.asarray(grads[0])[1:]).max() > 0


def test_diagexact_matches_mujoco():
  m, mj = load(CONTACT_XML.format(cone="pyramidal", impratio=2.0))
  mj.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_DIAGEXACT
  m = m.replace(opt=m.opt.replace(enableflags=m.opt.enableflags | EnableBit.DIAGEXACT))
  dm = contact_state(mj, np.random.default_rng(2))
  mujoco.mj_forward(mj, dm)
  run = jax.jit(lambda d: make_constraint(m, fwd_position(m, d)),
                compiler_options=OPTS)
  assert_rows_match(m, mj, run(data_of(m, dm)), dm)


# ----------------------------------------------------------------------- layout and flags


def test_layout_rows_and_disable_flags():
  m, _ = load(LIMITS_XML)
  dims = [1, 3, 4, 6]
  lay = efc_layout(m, dims)
  assert (lay.ne, lay.nf, lay.nl, lay.nc) == (0, 4, 4, 1 + 4 + 6 + 10)
  assert lay.contact_efc_address.tolist() == [8, 9, 13, 19]
  T = ConstraintType
  assert lay.efc_type.tolist() == ([T.FRICTION_DOF] * 4 + [T.LIMIT_JOINT] * 4
                                   + [T.CONTACT_FRICTIONLESS] + [T.CONTACT_PYRAMIDAL] * 20)
  assert lay.efc_id.tolist()[:8] == [0, 2, 3, 4, 0, 1, 2, 3]
  assert efc_layout(m, dims) is lay  # cached
  ell = efc_layout(m.replace(opt=m.opt.replace(cone=jaxmj.Cone.ELLIPTIC)), dims)
  assert ell.nc == 1 + 3 + 4 + 6
  assert ell.efc_type[8:].tolist() == [T.CONTACT_FRICTIONLESS] + [T.CONTACT_ELLIPTIC] * 13

  def flags(bits):
    return efc_layout(m.replace(opt=m.opt.replace(disableflags=int(bits))), dims)

  assert (flags(DisableBit.FRICTIONLOSS).nf, flags(DisableBit.FRICTIONLOSS).nl) == (0, 4)
  assert flags(DisableBit.LIMIT).nl == 0 and flags(DisableBit.LIMIT).nf == 4
  off = flags(DisableBit.CONTACT)
  assert off.nc == 0 and off.contact_efc_address.tolist() == [-1] * 4
  assert flags(DisableBit.CONSTRAINT).nefc == 0
  with pytest.raises(ValueError, match="condim"):
    efc_layout(m, [2])


def test_disabled_rows_match_mujoco(limits):
  m, mj, _ = limits
  bits = DisableBit.FRICTIONLOSS
  mj2 = mujoco.MjModel.from_xml_string(LIMITS_XML)
  mj2.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
  mj2.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_FRICTIONLOSS
  m2 = m.replace(opt=m.opt.replace(disableflags=m.opt.disableflags | bits))
  dm = limit_state(mj2, np.random.default_rng(0), 45, 0.25, 60, 12)
  mujoco.mj_forward(mj2, dm)
  d = make(m2, data_of(m2, dm))
  assert_rows_match(m2, mj2, d, dm)
  assert d.efc_J.shape == (4, mj.nv)


def test_rows_are_static_with_a_traced_model():
  """Which rows exist comes from static fields (dof_hasfrictionloss), so a Model passed
  into jit as a traced argument works, and a disable flag removes its rows."""
  m, _ = load(LIMITS_XML)
  d = jax.eval_shape(make_constraint, m, jaxmj.make_data(m))
  nfric = int(m.dof_hasfrictionloss.sum())
  m2 = m.replace(opt=m.opt.replace(disableflags=int(DisableBit.FRICTIONLOSS)))
  d2 = jax.eval_shape(make_constraint, m2, jaxmj.make_data(m2))
  assert nfric > 0 and d2.efc_J.shape == (d.efc_J.shape[0] - nfric, m.nv)


# ------------------------------------------------------------------------------ gradients


def test_gradients_finite_with_inactive_rows(limits):
  """Reverse-mode through make_constraint: finite with rows on and off, and equal to
  central differences of a smooth function of the active rows."""
  m, mj, _ = limits
  dm = limit_state(mj, np.random.default_rng(3), 45, 0.0, 48, 0)  # some rows off
  d0 = data_of(m, dm)

  def loss(qpos, qvel, solimp):
    mm = m.replace(jnt_solimp=solimp)
    d = make_constraint(mm, fwd_position(mm, d0.replace(qpos=qpos, qvel=qvel)))
    return jnp.sum(d.efc_D * d.efc_aref ** 2) + jnp.sum(d.efc_R * d.efc_vel)

  args = (d0.qpos, d0.qvel, m.jnt_solimp)
  grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2)), compiler_options=OPTS)(*args)
  for g in grads:
    assert np.isfinite(np.asarray(g)).all()
  f = jax.jit(loss, compiler_options=OPTS)
  for k in (1, 2):  # qvel and solimp: no row switches on or off under a small step
    x = np.asarray(args[k], float)
    direction = np.random.default_rng(k).normal(size=x.shape)
    if k == 2:  # smooth entries only: dmin, dmax, width, midpoint of joints h and b
      direction[[1, 3, 4]] = 0.0
      direction[:, 4] = 0.0
    eps = 1e-6
    plus = [a if i != k else jnp.asarray(x + eps * direction) for i, a in enumerate(args)]
    minus = [a if i != k else jnp.asarray(x - eps * direction) for i, a in enumerate(args)]
    fd = (f(*plus) - f(*minus)) / (2 * eps)
    np.testing.assert_allclose(np.sum(np.asarray(grads[k]) * direction), fd, rtol=1e-5)


def test_vmap_over_states(limits):
  m, mj, run = limits
  states = [limit_state(mj, np.random.default_rng(s), 45 - 10 * s, 0.25 * s, 60, 0)
            for s in range(3)]
  for dm in states:
    mujoco.mj_forward(mj, dm)
  ds = [data_of(m, dm) for dm in states]
  batch = jax.tree.map(lambda *x: jnp.stack(x), *ds)
  out = jax.jit(jax.vmap(functools.partial(make_constraint, m)),
                compiler_options=OPTS)(batch)
  for i, dm in enumerate(states):
    assert_rows_match(m, mj, jax.tree.map(functools.partial(lambda i, x: x[i], i), out), dm)


NARROW_XML = """<mujoco><option><flag contact="disable"/></option>
  <worldbody><body>
    <joint name="h" axis="0 1 0" range="-10 10" margin=".3" solreflimit=".03 .9"/>
    <joint name="s" type="slide" axis="1 0 0" range="-.1 .1" margin=".15"/>
    <joint name="w" axis="1 0 0" range="-10 10" margin=".1"/>
    <geom size=".1" pos=".2 0 0"/>
  </body></worldbody>
  <tendon><fixed name="t" range="-.2 .2" margin=".25"><joint joint="h" coef="1"/>
    <joint joint="s" coef="-.5"/></fixed></tendon>
  <sensor><jointlimitpos joint="h"/><jointlimitvel joint="s"/><jointlimitfrc joint="h"/>
    <tendonlimitpos tendon="t"/><tendonlimitvel tendon="t"/><tendonlimitfrc tendon="t"/>
  </sensor>
</mujoco>"""


def test_narrow_ranges_get_lower_and_upper_rows_as_mujoco():
  """A joint or tendon range narrower than 2 * margin: MuJoCo makes a row for each end
  within the margin, lower first; jaxmj owns both rows and activates those. Limit sensors
  read the first of them."""
  m, mj = load(NARROW_XML)
  assert list(m.jnt_limitboth) == [True, True, False] and list(m.tendon_limitboth) == [True]
  run = jax.jit(jaxmj.forward, compiler_options=OPTS)
  for qpos in ((0, 0, 0), (.12, .06, .15), (-.3, -.2, -.1), (.2, .3, 0)):
    dm = mujoco.MjData(mj)
    dm.qpos[:] = qpos
    dm.qvel[:] = (.3, -.2, .5)
    mujoco.mj_forward(mj, dm)
    d = run(m, jaxmj.make_data(m).replace(qpos=dm.qpos.copy(), qvel=dm.qvel.copy()))
    matched = assert_rows_match(m, mj, d, dm)
    assert dm.nefc == matched.sum()
    np.testing.assert_allclose(np.asarray(d.efc_force)[matched], dm.efc_force, atol=1e-7)
    np.testing.assert_allclose(d.qacc, dm.qacc, atol=1e-7)
    np.testing.assert_allclose(d.sensordata, dm.sensordata, atol=1e-7)
