"""Helpers for holding jaxmj against MuJoCo: model fields, random states, stage outputs.

Adding a test against MuJoCo, in the folder of the stage it checks (tests/smooth/, ...):

    from mujoco_compare import assert_stage_matches, mujoco
    from jaxmj.smooth import com, kinematics

    def test_com_pos_matches_mj_compos():
      assert_stage_matches(
        XML, lambda m, d: com.com_pos(m, kinematics.kinematics(m, d)),
        lambda mj, md: (mujoco.mj_kinematics(mj, md), mujoco.mj_comPos(mj, md)),
        ["subtree_com", "cinert", "cdof"], seeds=range(3), tol=1e-12)

`assert_stage_matches` compiles the MJCF with both engines (or takes a loaded `(m, mj)`
pair), draws states (`random_state`: qpos on the joint manifold, qvel, applied forces; or
your `state(m, mj, seed)`), runs the jaxmj function jitted with the fast compile flags
(`FAST`, `jit_fast`, the `fast_jit` fixture) and the MuJoCo function on each, and compares
the named fields (tol=0: bit for bit; `rtol` apart from `tol`); `check(d, md, seed)` adds
assertions on what the fields do not show. Use float64 references only (conftest.py turns
x64 on) and a tolerance you can defend.
"""

from __future__ import annotations

import numpy as np

import jaxmj
from jaxmj.conformance import SPECIAL
from jaxmj.conformance import float32_tol as _float32_tol

mujoco = __import__("pytest").importorskip("mujoco")

# The cheapest XLA compile (no LLVM optimization) for a test's own jit: most of the suite's
# time is compiling, and results agree with XLA's defaults to round-off (conftest.py adds the
# process-wide flags). Bit-for-bit comparisons must hold under either.
FAST = {"xla_backend_optimization_level": 0}


def jit_fast(fn, **kwargs):
  """jax.jit(fn) with the FAST compile flags."""
  import jax

  return jax.jit(fn, compiler_options=FAST, **kwargs)

PREFIXES = ("body_", "jnt_", "dof_", "geom_", "site_", "tree_", "actuator_", "mesh_", "skin_",
            "hfield_",
            "tex_", "mat_", "sensor_", "tendon_", "wrap_", "eq_", "cam_", "light_", "name_")
SIZES = ("nq", "nv", "nbody", "njnt", "ngeom", "nsite", "nmocap", "nkey", "ntree", "nu",
         "nactuator", "nout",
         "na", "nmesh", "nmeshvert", "nmeshface", "nmeshgraph", "nmeshpoly", "nmeshpolyvert",
         "nmeshpolymap", "npolygonmax", "nskin", "nskinvert", "nskintexvert", "nskinface",
         "nskinbone", "nskinbonevert", "nhfield", "nhfielddata",
         "ntex", "ntexdata", "nmat", "nsensor", "nsensordata", "nuser_sensor", "ntendon",
         "nwrap", "neq", "ncam", "nlight", "nuser_cam", "nplastic", "ngravcomp",
         "nuser_body", "nuser_jnt", "nuser_geom", "nuser_site", "nuser_tendon",
         "nuser_actuator", "nhistory", "nuserdata", "nconmax", "nnumeric", "nnumericdata", "ntext",
         "ntextdata", "ntuple", "ntupledata")
# jaxmj fields with these prefixes that mjModel lacks (documented in types.Model).
JAXMJ_ONLY = {"body_depth", "dof_depth", "dof_ancestor", "dof_hasfrictionloss",
              "mesh_hullnum", "mesh_hullvert", "geom_inertiakind", "geom_meshinertia",
              "geom_density", "geom_mass", "geom_hfieldwindow", "sensor_hfieldwindow",
              "tendon_hasfrictionloss", "tendon_hasarmature", "jnt_limitboth", "tendon_limitboth",
              "body_fluidellipsoid",
              "wrap_sideid", "actuator_slots"}
def load_both(path: str | None = None, xml: str | None = None):
  """(jaxmj Model, mujoco.MjModel) compiled from the same file or string."""
  if path is not None:
    return jaxmj.Model.from_xml_path(path), mujoco.MjModel.from_xml_path(str(path))
  return jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)


def model_differences(m, mj, atol: float = 1e-10) -> list[str]:
  """Names (with the worst error) of every compared field where the two models differ.

  Sizes and integer fields must be equal. A real entry agrees when |ours - ref| <=
  atol * max(1, |ref|): absolute below magnitude 1, relative above (MuJoCo's float32 fields
  also get 2.5e-7 relative, an ulp of rounding; conformance.float32_tol)."""
  bad = []
  for n in SIZES:
    if getattr(m, n) != getattr(mj, n):
      bad.append(f"{n}: {getattr(m, n)} != {getattr(mj, n)}")
  names = [f for f in type(m)._static_names + type(m)._leaf_names
           if f.startswith(PREFIXES) and f not in JAXMJ_ONLY] + ["qpos0", "qpos_spring"]
  for n in names:
    if n in SPECIAL:
      err = SPECIAL[n](m, mj)
      if err:
        bad.append(f"{n}: {err}")
      continue
    ours, ref = np.asarray(getattr(m, n)), np.asarray(getattr(mj, n))
    if ours.shape != ref.shape and ours.size == ref.size:
      ours = ours.reshape(ref.shape)
    if ours.shape != ref.shape:
      bad.append(f"{n}: shape {ours.shape} != {ref.shape}")
    elif ours.size and np.any(np.abs(ours.astype(float) - ref.astype(float))
                              > np.maximum(_float32_tol(ref, atol), atol * np.abs(ref))):
      err = np.max(np.abs(ours.astype(float) - ref.astype(float)))
      bad.append(f"{n}: max error {err:.3g}")
  return bad


def random_state(m, mj, seed: int):
  """A random MjData (qpos on the joint manifold, qvel, applied forces) for `mj`."""
  rng = np.random.default_rng(seed)
  d = mujoco.MjData(mj)
  d.qpos[:] = mj.qpos0
  for j in range(mj.njnt):
    adr = mj.jnt_qposadr[j]
    t = mj.jnt_type[j]
    if t == mujoco.mjtJoint.mjJNT_FREE:
      d.qpos[adr:adr + 3] += rng.normal(size=3)
      q = rng.normal(size=4)
      d.qpos[adr + 3:adr + 7] = q / np.linalg.norm(q)
    elif t == mujoco.mjtJoint.mjJNT_BALL:
      q = rng.normal(size=4)
      d.qpos[adr:adr + 4] = q / np.linalg.norm(q)
    else:
      d.qpos[adr] += rng.uniform(-1.5, 1.5)
  d.qvel[:] = rng.normal(size=mj.nv)
  d.qfrc_applied[:] = rng.normal(size=mj.nv)
  d.xfrc_applied[:] = rng.normal(size=(mj.nbody, 6))
  d.mocap_pos[:] = rng.normal(size=(mj.nmocap, 3))
  q = rng.normal(size=(mj.nmocap, 4))
  d.mocap_quat[:] = q / np.linalg.norm(q, axis=1, keepdims=True)
  return d


def to_jaxmj(m, d):
  """jaxmj Data carrying the state of MjData `d`."""
  return jaxmj.make_data(m).replace(
    time=np.asarray(d.time), qpos=d.qpos.copy(), qvel=d.qvel.copy(),
    qfrc_applied=d.qfrc_applied.copy(), xfrc_applied=d.xfrc_applied.copy(),
    mocap_pos=d.mocap_pos.copy(), mocap_quat=d.mocap_quat.copy())


def full_m(mj, d) -> np.ndarray:
  out = np.zeros((mj.nv, mj.nv))
  mujoco.mj_fullM(mj, d, out)
  return out


def rollout_error(m, mj, nstep: int, key: int | None = None, dm=None):
  """Steps jaxmj (one jitted rollout) and mj_step `nstep` times from the same state (the
  defaults, keyframe `key`, or the qpos, qvel, act, ctrl and mocap poses of MjData `dm`,
  which is stepped in place).
  Returns (max |qpos| error, jaxmj's final Data, the final MjData, MuJoCo's contact count
  after each step)."""
  import jax

  if dm is None:
    dm = mujoco.MjData(mj)
  if key is not None:
    mujoco.mj_resetDataKeyframe(mj, dm, key)
  d = jaxmj.make_data(m).replace(**{k: getattr(dm, k).copy() for k in (
    "qpos", "qvel", "act", "ctrl", "mocap_pos", "mocap_quat")})
  run = jax.jit(lambda m, d: jaxmj.rollout(m, d, nstep=nstep),
                compiler_options=FAST)
  final, traj = run(m, d)
  ref, ncon = [], []
  for _ in range(nstep):
    mujoco.mj_step(mj, dm)
    ref.append(dm.qpos.copy())
    ncon.append(dm.ncon)
  err = np.abs(np.asarray(traj["qpos"]) - np.array(ref)).max()
  return err, final, dm, ncon


# MuJoCo's integration state as the step-by-step comparisons restore it
STATE = ("qpos", "qvel", "qacc_warmstart", "time")


def mujoco_states(mj, nstep: int, qvel_nudge: float = 0.0):
  """mj_step `nstep` times from the defaults (qvel nudged by `qvel_nudge`): (MuJoCo's contact
  count after each step (nstep,), its state before each step and after the last: a dict of
  (nstep + 1, ...) arrays, one per STATE field)."""
  d = mujoco.MjData(mj)
  d.qvel[:] += qvel_nudge
  ncon, states = [], {k: [np.copy(getattr(d, k))] for k in STATE}
  for _ in range(nstep):
    mujoco.mj_step(mj, d)
    ncon.append(d.ncon)
    for k, v in states.items():
      v.append(np.copy(getattr(d, k)))
  return np.array(ncon), {k: np.array(v) for k, v in states.items()}


def rel_err(x, ref):
  """max |x - ref| / (1 + |ref|) over the last axis."""
  return (np.abs(x - ref) / (1 + np.abs(ref))).max(axis=-1)


def one_step_errors(m, states) -> dict:
  """jaxmj's step from each of MuJoCo's states but the last (`mujoco_states`' dict), all at
  once, against MuJoCo's state after it: {"qpos", "qvel": (nstep,) `rel_err`}."""
  import jax

  d0 = jaxmj.make_data(m)
  batch = jax.vmap(lambda *s: d0.replace(**dict(zip(STATE, s))))(
    *(states[k][:-1] for k in STATE))
  out = jax.jit(jax.vmap(jaxmj.step, in_axes=(None, 0)),
                compiler_options=FAST)(m, batch)
  return {k: rel_err(np.asarray(getattr(out, k)), states[k][1:]) for k in ("qpos", "qvel")}


def assert_ctrl_jacobian_matches(m, mj, dm, d, atol: float = 1e-6) -> None:
  """d qfrc_actuator / d ctrl by jax.jacfwd through the position, velocity and actuation
  stages at jaxmj's `d`, against central differences of `mj_fwdActuation` at MuJoCo's `dm`
  (which must hold the same state, after `mj_forward`)."""
  import jax

  from jaxmj.actuation.driver import fwd_actuation
  from jaxmj.dynamics.forward import fwd_position, fwd_velocity

  def qfrc(c):
    return fwd_actuation(m, fwd_velocity(m, fwd_position(m, d.replace(ctrl=c)))).qfrc_actuator

  jac = jit_fast(jax.jacfwd(qfrc))(dm.ctrl.copy())
  fd, eps = np.zeros((mj.nv, mj.nu)), 1e-6
  for j in range(mj.nu):
    cols = []
    for s in (1, -1):
      dm.ctrl[j] += s * eps
      mujoco.mj_fwdActuation(mj, dm)
      cols.append(dm.qfrc_actuator.copy())
      dm.ctrl[j] -= s * eps
    fd[:, j] = (cols[0] - cols[1]) / (2 * eps)
  np.testing.assert_allclose(np.asarray(jac), fd, atol=atol)


def assert_actuation_matches(m, mj, ctrl_scale: float = 1.0, seeds=range(3),
                             atol: float = 1e-9) -> None:
  """mj_fwdActuation's outputs (actuator_force, act_dot, qfrc_actuator) against jaxmj's
  position, velocity and actuation stages at `random_state`s with random controls (normal,
  times `ctrl_scale`) and activations (normal, times 0.3), drawn from one generator in turn."""
  from jaxmj.actuation.driver import fwd_actuation
  from jaxmj.dynamics.forward import fwd_position, fwd_velocity

  rng = np.random.default_rng(0)

  def state(m, mj, seed):
    d = random_state(m, mj, seed)
    d.ctrl[:] = rng.normal(size=mj.nu) * ctrl_scale
    d.act[:] = rng.normal(size=mj.na) * 0.3
    return d

  assert_stage_matches(
    (m, mj), lambda m, d: fwd_actuation(m, fwd_velocity(m, fwd_position(m, d))),
    mujoco.mj_forward, ["actuator_force", "act_dot", "qfrc_actuator"], seeds=seeds,
    tol=atol, rtol=0, state=state, inputs=("ctrl", "act"))


def assert_ctrl_rollout_matches(m, mj, qpos, qvel, steps: int, atol: float = 1e-8) -> None:
  """`steps` steps from (qpos, qvel) under controls sin(0.05 t + i) per control i: jaxmj's
  jitted rollout against mj_step in qpos, qvel, act and sensordata."""
  import jax
  import jax.numpy as jnp

  ctrl = np.sin(np.arange(steps)[:, None] * 0.05 + np.arange(mj.nu))
  d = mujoco.MjData(mj)
  d.qpos[:], d.qvel[:] = qpos, qvel
  d0 = jaxmj.make_data(m).replace(qpos=d.qpos.copy(), qvel=d.qvel.copy())
  fields = ("qpos", "qvel", "act", "sensordata")
  ref = []
  for u in ctrl:
    d.ctrl[:] = u
    mujoco.mj_step(mj, d)
    ref.append(np.concatenate([getattr(d, k) for k in fields]))
  run = jax.jit(lambda m, d, u: jaxmj.rollout(m, d, u, fields=fields)[1],
                compiler_options=FAST)
  traj = run(m, d0, jnp.asarray(ctrl))
  ours = np.concatenate([traj[k] for k in fields], axis=1)
  np.testing.assert_allclose(ours, np.array(ref), atol=atol, rtol=0)


def assert_compiles_alike_or_refused(xml: str, forward: bool = False) -> None:
  """Where mujoco rejects `xml` (at compile, or at mj_forward when `forward`: some checks run
  there), jaxmj raises its MJCFError; otherwise every compiled field is MuJoCo's."""
  import pytest

  from jaxmj.mjcf.errors import MJCFError

  try:
    mj = mujoco.MjModel.from_xml_string(xml)
    if forward:
      mujoco.mj_forward(mj, mujoco.MjData(mj))
  except ValueError:
    with pytest.raises(MJCFError):
      jaxmj.Model.from_xml_string(xml)
    return
  m, mj = load_both(xml=xml)
  assert model_differences(m, mj) == []



def assert_stage_matches(xml, jaxmj_fn, mujoco_fn, fields, seeds=range(3), tol=1e-9, *,
                         rtol=None, state=random_state, inputs=(), check=None):
  """Holds a jaxmj stage to its MuJoCo counterpart on random states.

  xml: MJCF text, the path of a .xml file, or a loaded (Model, MjModel) pair. jaxmj_fn(m, d)
  -> Data, jitted here with the FAST flags unless it is jitted already (a compile shared by
  several tests); mujoco_fn(mj, md) fills the MjData in place (e.g. mujoco.mj_forward).
  For each seed, state(m, mj, seed) -> MjData (default `random_state`) feeds both: jaxmj's
  Data takes `to_jaxmj`'s fields and those named in `inputs` (e.g. "ctrl", "act"). Every
  field in `fields` (Data and MjData names; MuJoCo's reshaped to jaxmj's shape) must agree
  within `tol` absolute and `rtol` relative (default: `tol`; tol=0: bit for bit; a dict
  gives a tol per field). check(d, md, seed), if given, asserts whatever else the states
  show (derived quantities, coverage). Returns (m, mj).
  """
  if isinstance(xml, tuple):
    m, mj = xml
  elif xml.endswith(".xml") and "<" not in xml:
    m, mj = load_both(path=xml)
  else:
    m, mj = load_both(xml=xml)
  run = jaxmj_fn if hasattr(jaxmj_fn, "lower") else jit_fast(jaxmj_fn)
  for seed in seeds:
    md = state(m, mj, seed)
    d0 = to_jaxmj(m, md)
    d = run(m, d0.replace(**{k: np.array(getattr(md, k), getattr(d0, k).dtype) for k in inputs}))
    mujoco_fn(mj, md)
    for k in fields:
      ours = np.asarray(getattr(d, k))
      ref = np.asarray(getattr(md, k)).reshape(ours.shape)
      t = tol.get(k, 0.0) if isinstance(tol, dict) else tol
      if t == 0 and not rtol:
        np.testing.assert_array_equal(ours, ref, err_msg=f"{k}, seed {seed}")
      else:
        np.testing.assert_allclose(ours, ref, rtol=t if rtol is None else rtol, atol=t,
                                   err_msg=f"{k}, seed {seed}")
    if check is not None:
      check(d, md, seed)
  return m, mj
