"""MuJoCo's pipeline functions one at a time (jaxmj.kinematics, com_pos, ..., MJX's names):
chained in MuJoCo's order they fill the fields fwd_position and fwd_velocity fill, with the
same values (to the last bits a separate compile may round differently: 1e-12), and
kinematics alone gives mj_kinematics' frames."""

import os

import jax
import numpy as np
from conftest import MODELS
from mujoco_compare import load_both, mujoco, random_state, to_jaxmj

import jaxmj

POSITION = ("kinematics", "com_pos", "camlight", "tendon", "crb", "factor_m", "transmission")
VELOCITY = ("com_vel", "passive", "rne", "make_constraint")


def _leaves(d) -> dict:
  return {jax.tree_util.keystr(path): np.asarray(x)
          for path, x in jax.tree_util.tree_leaves_with_path(d)}


def _assert_same(ours, want, skip: set):
  """Every Data leaf of ours equals want's within 1e-12, those named in skip aside."""
  a, b = _leaves(ours), _leaves(want)
  for k in a.keys() - skip:
    np.testing.assert_allclose(a[k], b[k], rtol=1e-12, atol=1e-12, err_msg=k)


def test_chained_pipeline_functions_fill_what_the_stages_fill():
  """tendon_arm: tendons, actuators (transmission), passive forces, limit rows."""
  m, mj = load_both(os.path.join(MODELS, "tendon_arm.xml"))
  d0 = to_jaxmj(m, random_state(m, mj, 2))
  d = d0
  for name in POSITION:
    d = getattr(jaxmj, name)(m, d)
  want = jaxmj.fwd_position(m, d0)
  # mj_collision is fwd_position's alone
  contact = {k for k in _leaves(d) if k.startswith((".contact", ".ncon"))}
  _assert_same(d, want, contact)
  want = jaxmj.fwd_velocity(m, want)
  # mj_fwdVelocity's own lines (no function of their own): tendon and actuator velocities,
  # which mj_passive reads
  d = d.replace(ten_velocity=want.ten_velocity, actuator_velocity=want.actuator_velocity)
  for name in VELOCITY:
    d = getattr(jaxmj, name)(m, d)
  _assert_same(d, want, contact)
  filled = {k for k, x in _leaves(d).items() if not np.array_equal(x, _leaves(d0)[k])}
  assert {".cvel", ".qfrc_passive", ".qfrc_bias", ".ten_length", ".efc_J"} <= filled


def test_kinematics_alone_matches_mj_kinematics():
  m, mj = load_both(os.path.join(MODELS, "humanoid.xml"))
  md = random_state(m, mj, 0)
  d = jaxmj.kinematics(m, to_jaxmj(m, md))
  mujoco.mj_kinematics(mj, md)
  for field in ("xpos", "xquat", "xipos", "geom_xpos", "site_xpos"):
    np.testing.assert_allclose(getattr(d, field), getattr(md, field), atol=1e-12,
                               err_msg=field)
