"""Fast arithmetic (opt.arithmetic="fast") held to MuJoCo at stated tolerances (float64).

Exact arithmetic (the default, and every other conformance test) rounds as MuJoCo's C does,
bit for bit. Fast arithmetic drops the guards that keep XLA from fusing multiply-adds, so its
results are MuJoCo's up to round-off and whatever the dynamics make of it. The tolerances
below are stated relative to 1 + |MuJoCo's value| and hold with a wide margin (observed
errors are given beside each).
"""

import os
import warnings

import jax
import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import full_m, load_both, mujoco, random_state, rel_err, to_jaxmj

import jaxmj
from jaxmj.smooth import kinematics

# per stage, at random states (observed <= 1e-13 on humanoid_floor; qacc 3e-12)
KINEMATICS_TOL = 1e-12
MASS_TOL = 1e-12
CONSTRAINT_TOL = 1e-9
# per trajectory: NSTEP steps of models whose trajectories do not amplify round-off
NSTEP = 300
TRAJECTORY_TOL = 1e-9

STAGES = {
  "kinematics": (KINEMATICS_TOL, ("xpos", "xquat", "xmat", "xipos", "ximat", "geom_xpos",
                                  "geom_xmat", "site_xpos", "subtree_com", "cinert", "cdof")),
  "mass": (MASS_TOL, ("qM",)),
  "constraint": (CONSTRAINT_TOL, ("qfrc_bias", "qfrc_constraint", "qacc")),
}


def fast(m):
  return m.replace(opt=m.opt.replace(arithmetic="fast"))


_forward = jax.jit(lambda m, d: jaxmj.forward(fast(m), d))


@pytest.mark.parametrize("name", ["humanoid_floor", "tendon_arm",
                                  pytest.param("quadruped", marks=pytest.mark.slow),
                                  pytest.param("box_pile", marks=pytest.mark.slow)])
def test_forward_stages_match_mujoco_within_stated_tolerances(name):
  m, mj = load_both(os.path.join(MODELS, f"{name}.xml"))
  for seed in range(2):
    md = random_state(m, mj, seed)
    d = _forward(m, to_jaxmj(m, md))
    mujoco.mj_forward(mj, md)
    for stage, (tol, fields) in STAGES.items():
      for k in fields:
        ours = np.asarray(getattr(d, k))
        ref = full_m(mj, md) if k == "qM" else np.asarray(getattr(md, k)).reshape(ours.shape)
        err = rel_err(ours.reshape(-1), ref.reshape(-1)) if ours.size else 0.0
        assert err <= tol, f"{stage}: {k} off by {err:.3g} (seed {seed})"


_rollout = jax.jit(lambda m, d: jaxmj.rollout(fast(m), d, nstep=NSTEP))


@pytest.mark.parametrize("name", ["pendulum", "cartpole", "arm", "humanoid"])
def test_trajectories_match_mujoco_within_stated_tolerance(name):
  m, mj = load_both(os.path.join(MODELS, f"{name}.xml"))
  dm = random_state(m, mj, 1)
  dm.xfrc_applied[:] *= 0.1
  _, traj = _rollout(m, to_jaxmj(m, dm))
  ref = {"qpos": [], "qvel": []}
  for _ in range(NSTEP):
    mujoco.mj_step(mj, dm)
    for k, v in ref.items():
      v.append(getattr(dm, k).copy())
  for k, v in ref.items():
    err = rel_err(np.asarray(traj[k]), np.array(v)).max()
    assert err <= TRAJECTORY_TOL, f"{k} off by {err:.3g}"


def _guards(m) -> int:
  """Bit-level guards in the kinematics' jaxpr (`math.nofma` reinterprets the bits)."""
  jaxpr = jax.make_jaxpr(kinematics.kinematics)(m, jaxmj.make_data(m))
  return str(jaxpr).count("bitcast_convert_type")


def test_fast_arithmetic_drops_the_rounding_guards():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "humanoid.xml"))
  assert m.opt.arithmetic == "exact"  # the default
  assert _guards(m) > 0 and _guards(fast(m)) == 0


def test_unknown_arithmetic_is_refused_by_name():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "pendulum.xml"))
  with pytest.raises(ValueError, match="opt.arithmetic must be one of"):
    jaxmj.step(m.replace(opt=m.opt.replace(arithmetic="sloppy")), jaxmj.make_data(m))


@pytest.mark.slow
def test_mjx_humanoid_trajectory_in_fast_arithmetic():
  """MJX's humanoid (iterations 1, ls_iterations 4: each step's one Newton iteration, its
  truncated line search and its Newton solve, all in fast arithmetic) held to mj_step's
  trajectory from qpos0 (falls onto the floor) at TRAJECTORY_TOL."""
  path = os.path.join(os.path.dirname(mujoco.__file__), "mjx/test_data/humanoid/humanoid.xml")
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    m, mj = load_both(path)
  md = mujoco.MjData(mj)
  ref = []
  for _ in range(NSTEP):
    mujoco.mj_step(mj, md)
    ref.append(md.qpos.copy())
  run = jax.jit(lambda m, d: jaxmj.rollout(fast(m), d, nstep=NSTEP),
                compiler_options={"xla_backend_optimization_level": 0})
  _, traj = run(m, jaxmj.make_data(m))
  assert md.ncon > 0
  err = rel_err(np.asarray(traj["qpos"]), np.array(ref)).max()
  assert err <= TRAJECTORY_TOL, f"qpos off by {err:.3g}"


def _dot_precisions(fn, *args) -> list[str]:
  text = jax.jit(fn).lower(*args).as_text()
  return [line.split("precision = ")[1].split("]")[0] + "]" if "precision = " in line
          else "none" for line in text.splitlines() if "dot_general" in line]


def test_exact_arithmetic_asks_full_precision_of_every_product_fast_keeps_the_default():
  """Exact arithmetic traces every matrix product at HIGHEST precision, derivatives
  included: on GPUs JAX's default rounds float32 products' inputs to TF32 (CPUs compute in
  full either way, which is why this checks the program, not the values)."""
  m = jaxmj.Model.from_xml_string("""
    <mujoco><worldbody><geom type="plane" size="1 1 .1"/>
      <body pos="0 0 .09"><freejoint/><geom type="box" size=".1 .1 .1"/></body>
    </worldbody></mujoco>""")  # contacts: every stage and the solver's products
  d = jaxmj.make_data(m)

  def loss(m, qvel):
    return jaxmj.step(m, d.replace(qvel=qvel)).qpos.sum()

  for mode, fn in (("step", lambda m: jaxmj.step(m, d)),
                   ("grad", lambda m: jax.grad(loss, argnums=1)(m, d.qvel)),
                   ("inverse", lambda m: jaxmj.inverse(m, jaxmj.forward(m, d)))):
    exact = _dot_precisions(fn, m)
    assert exact and set(exact) == {"[HIGHEST, HIGHEST]"}, (mode, sorted(set(exact)))
  assert "[DEFAULT, DEFAULT]" in _dot_precisions(lambda m: jaxmj.step(m, d), fast(m))
