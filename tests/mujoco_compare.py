"""Helpers for holding jaxmj against MuJoCo: model fields, random states, stage outputs."""

from __future__ import annotations

import numpy as np

import jaxmj

mujoco = __import__("pytest").importorskip("mujoco")

PREFIXES = ("body_", "jnt_", "dof_", "geom_", "site_", "tree_")
SIZES = ("nq", "nv", "nbody", "njnt", "ngeom", "nsite", "nmocap", "nkey", "ntree")
# jaxmj fields with these prefixes that mjModel lacks (documented in types.Model).
JAXMJ_ONLY = {"body_depth", "dof_depth", "dof_ancestor", "dof_hasfrictionloss"}


def load_both(path: str | None = None, xml: str | None = None):
  """(jaxmj Model, mujoco.MjModel) compiled from the same file or string."""
  if path is not None:
    return jaxmj.Model.from_xml_path(path), mujoco.MjModel.from_xml_path(str(path))
  return jaxmj.Model.from_xml_string(xml), mujoco.MjModel.from_xml_string(xml)


def model_differences(m, mj, atol: float = 1e-10) -> list[str]:
  """Names (with the worst error) of every compared field where the two models differ."""
  bad = []
  for n in SIZES:
    if getattr(m, n) != getattr(mj, n):
      bad.append(f"{n}: {getattr(m, n)} != {getattr(mj, n)}")
  names = [f for f in type(m)._static_names + type(m)._leaf_names
           if f.startswith(PREFIXES) and f not in JAXMJ_ONLY] + ["qpos0", "qpos_spring"]
  for n in names:
    ours, ref = np.asarray(getattr(m, n)), np.asarray(getattr(mj, n))
    if ours.shape != ref.shape and ours.size == ref.size:
      ours = ours.reshape(ref.shape)
    if ours.shape != ref.shape:
      bad.append(f"{n}: shape {ours.shape} != {ref.shape}")
    elif ours.size and not np.allclose(ours.astype(float), ref.astype(float), atol=atol,
                                       rtol=0):
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
