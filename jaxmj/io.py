"""Creating and resetting Data: make_data, reset to defaults or to a keyframe."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.actuation import history
from jaxmj.collision.plan import contact_slots
from jaxmj.constraint.layout import efc_layout
from jaxmj.names import name2id
from jaxmj.smooth import plastic
from jaxmj.types import NWARNING, Contact, Data, Model


def make_data(m: Model) -> Data:
  """mj_makeData: Data at the model's defaults (qpos0, zero velocity, mocap at body poses).

  Float fields take the model's float dtype (float64 with jax_enable_x64, else float32).
  Raises MemoryError, with the sizes and the remedy, where the device cannot hold them.
  """
  try:
    return _make_data(m)
  except jax.errors.JaxRuntimeError as e:
    if "RESOURCE_EXHAUSTED" not in str(e):
      raise
    plan = contact_slots(m)
    nefc = efc_layout(m, plan["dim"]).nefc
    gb = nefc * m.nv * np.dtype(m.qpos0.dtype).itemsize / 1e9
    raise MemoryError(
      f"make_data: the device cannot hold this model's Data: {plan['ncon']} contact slots "
      f"(one per geom pair that may touch) make {nefc} constraint rows over {m.nv} dofs "
      f"(efc_J alone {gb:.1f} GB). Cap the contacts as MJX does: <size nconmax=...> in the "
      "MJCF, or the max_contact_points / max_geom_pairs numerics (README, Use)") from e


def _make_data(m: Model) -> Data:
  dt = m.qpos0.dtype
  z = lambda *shape: jnp.zeros(shape, dt)
  nb, nv = m.nbody, m.nv
  mocap = m.body_mocapid >= 0
  order = m.body_mocapid[mocap].argsort()
  mocap_bodies = mocap.nonzero()[0][order]
  return Data(
    # copies: a Data array sharing the Model's buffer could not be donated
    # (`jax.jit(step, donate_argnums=1)`: XLA refuses a donated buffer that is also an input)
    time=jnp.zeros((), dt), qpos=jnp.array(m.qpos0, copy=True), qvel=z(nv), act=z(m.na),
    plastic=plastic.init(m).astype(dt),
    qacc_warmstart=z(nv), ctrl=z(m.nu), qfrc_applied=z(nv), xfrc_applied=z(nb, 6),
    mocap_pos=m.body_pos[mocap_bodies], mocap_quat=m.body_quat[mocap_bodies],
    userdata=z(m.nuserdata), qacc=z(nv), act_dot=z(m.na),
    eq_active=jnp.array(m.eq_active0, bool, copy=True), qfrc_gravcomp=z(nv), qfrc_fluid=z(nv),
    xpos=z(nb, 3), xquat=z(nb, 4), xmat=z(nb, 3, 3), xipos=z(nb, 3), ximat=z(nb, 3, 3),
    xanchor=z(m.njnt, 3), xaxis=z(m.njnt, 3),
    geom_xpos=z(m.ngeom, 3), geom_xquat=z(m.ngeom, 4), geom_xmat=z(m.ngeom, 3, 3),
    site_xpos=z(m.nsite, 3), site_xquat=z(m.nsite, 4), site_xmat=z(m.nsite, 3, 3),
    cam_xpos=z(m.ncam, 3), cam_xmat=z(m.ncam, 3, 3), light_xpos=z(m.nlight, 3),
    light_xdir=z(m.nlight, 3),
    subtree_com=z(nb, 3), cinert=z(nb, 10), crb=z(nb, 10), cdof=z(nv, 6), cvel=z(nb, 6),
    cdof_dot=z(nv, 6), actuator_length=z(m.nout), actuator_moment=z(m.nout, nv),
    actuator_velocity=z(m.nout), actuator_force=z(m.nout),
    ten_wrapadr=jnp.zeros(m.ntendon, jnp.int32), ten_wrapnum=jnp.zeros(m.ntendon, jnp.int32),
    ten_J=z(m.ntendon, nv), ten_length=z(m.ntendon), ten_velocity=z(m.ntendon),
    wrap_obj=jnp.zeros((m.nwrap, 2), jnp.int32), wrap_xpos=z(m.nwrap, 6),
    qM=z(nv, nv), qLD=z(nv, nv), qLDiagInv=z(nv),
    qfrc_bias=z(nv), qfrc_spring=z(nv), qfrc_damper=z(nv), qfrc_passive=z(nv),
    qfrc_actuator=z(nv), qfrc_smooth=z(nv), qacc_smooth=z(nv), qfrc_constraint=z(nv),
    qfrc_inverse=z(nv), energy=z(2), warning=jnp.zeros(NWARNING, jnp.int32),
    sensordata=z(m.nsensordata), history=history.init(m, dt), cacc=z(nb, 6),
    cfrc_int=z(nb, 6), cfrc_ext=z(nb, 6),
    **constraint_fields(m, dt),
  )


def constraint_fields(m: Model, dt) -> dict:
  """Contact slots and efc rows at the model's fixed sizes (collision plan, efc layout), as
  make_data gives them: the Data fields whose shapes depend on `m`'s contacts and flags."""
  plan = contact_slots(m)
  layout = efc_layout(m, plan["dim"])
  ncon, nefc = plan["ncon"], layout.nefc
  ni = max(1, m.ntree)  # island slots (jaxmj/solver/island.py)
  z = lambda *shape: jnp.zeros(shape, dt)
  contact = Contact(
    dist=z(ncon), pos=z(ncon, 3), frame=z(ncon, 3, 3), includemargin=z(ncon),
    friction=z(ncon, 5), solref=z(ncon, 2), solreffriction=z(ncon, 2), solimp=z(ncon, 5),
    active=jnp.zeros(ncon, bool), dim=plan["dim"], geom1=plan["geom1"],
    geom2=plan["geom2"], efc_address=np.asarray(layout.contact_efc_address, np.int32),
    geom=None if plan["geom1"] is not None else jnp.zeros((ncon, 2), jnp.int32),
    rank=None if plan["geom1"] is not None else jnp.zeros(ncon, jnp.int32))
  return dict(
    contact=contact, efc_type=jnp.asarray(layout.efc_type, jnp.int32),
    efc_id=jnp.asarray(layout.efc_id, jnp.int32), efc_active=jnp.zeros(nefc, bool),
    efc_J=z(nefc, m.nv), efc_pos=z(nefc), efc_margin=z(nefc), efc_frictionloss=z(nefc),
    efc_diagA=z(nefc), efc_D=z(nefc), efc_R=z(nefc), efc_vel=z(nefc), efc_aref=z(nefc),
    efc_force=z(nefc), efc_state=jnp.zeros(nefc, jnp.int32),
    solver_niter=jnp.zeros(ni, jnp.int32), solver_improvement=z(ni), solver_gradient=z(ni),
    solver_fwdinv=z(2),
    nisland=jnp.zeros((), jnp.int32), tree_island=-jnp.ones(m.ntree, jnp.int32),
    dof_island=-jnp.ones(m.nv, jnp.int32), efc_island=-jnp.ones(nefc, jnp.int32),
    **{k: jnp.zeros(ni, jnp.int32) for k in ("island_ntree", "island_nv", "island_nefc",
                                            "island_ne", "island_nf")})


def reset(m: Model, key: int | str | None = None) -> Data:
  """Data at the model defaults, or at keyframe `key` (index or name) as mj_resetDataKeyframe.

  The keyframe index is resolved on the host; the values come from the Model's leaves, so
  this works inside jit and under vmap over models.
  """
  d = make_data(m)
  if key is None:
    return d
  if isinstance(key, str):
    name, key = key, name2id(m, "key", key)
    if key < 0:
      raise KeyError(f"model {m.model_name!r} has no keyframe named {name!r}")
  if not 0 <= key < m.nkey:
    raise IndexError(f"keyframe {key} out of range: model has {m.nkey}")
  return d.replace(
    time=m.key_time[key], qpos=m.key_qpos[key], qvel=m.key_qvel[key], act=m.key_act[key],
    ctrl=m.key_ctrl[key], mocap_pos=m.key_mpos[key].reshape(m.nmocap, 3),
    mocap_quat=m.key_mquat[key].reshape(m.nmocap, 4), plastic=m.key_plastic[key],
  )
