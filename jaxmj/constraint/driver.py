"""mj_makeConstraint, mj_diagApprox, mj_makeImpedance and mj_referenceConstraint: the efc
arrays of every row of the static layout (layout.py), from the row blocks of equality.py
and rows.py, the impedance and regularizer of impedance.py, and the contact terms of
adhesion.py and surfacevel.py.

MuJoCo builds only the rows that are violated now, so its `nefc` changes from step to step.
Here the rows are fixed by a static layout (`efc_layout`) and `efc_active` says which hold a
constraint at this state; an inactive row has D = 0 (no force) and finite J, pos, R, aref.

efc_diagA is MuJoCo's diagApprox from body/dof invweight0 (or, with the DIAGEXACT enable
flag, the exact diagonal of J M^-1 J'), reported after mj_makeImpedance's adjustment
R = (1 - imp) / imp * diagA, as MuJoCo reports it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.constraint import adhesion, equality, surfacevel
from jaxmj.constraint.impedance import (
  DEFAULT_SOLREF,
  MINVAL,
  clamp_solimp,
  contact_regularizer,
  fix_solref,
  impedance,
)
from jaxmj.constraint.layout import EfcLayout, efc_layout
from jaxmj.constraint.rows import (
  ContactFactors,
  contact_factors,
  contact_mul_jac,
  contact_mul_jac_t,
  contact_rows,
  friction_rows,
  limit_rows,
  rows,
)
from jaxmj.smooth import mass, tendon
from jaxmj.tangent_gate import gated_tangent
from jaxmj.types import Data, EnableBit, Model


def _exact_diag(m: Model, d: Data, J: jnp.ndarray) -> jnp.ndarray:
  """diag(J M^-1 J') per row (DIAGEXACT)."""
  if J.shape[0] == 0:
    return jnp.zeros(0, J.dtype)
  minv_jt = jax.vmap(lambda row: mass.solve_m(m, d, row))(J)
  return jnp.sum(J * minv_jt, axis=-1)


def jac_products(m: Model, lay: EfcLayout, J_other: jnp.ndarray, f: ContactFactors,
                 cdof: jnp.ndarray) -> tuple[Callable, Callable, tuple]:
  """(mul, mul_t, factors) with efc_J x = mul(factors, x) (nv,) -> (nefc,) and efc_J' y =
  mul_t(factors, y) (nefc,) -> (nv,), from what the rows are built from: factors = (J_other,
  u, w, soff1, soff2, cdof), the rows before the contacts ((nefc - nc, nv), formed) and the
  contact rows' ContactFactors (the offsets per contact slot). Their derivatives in the
  factors are those of the products with efc_J, without its tangent: O(nc + nbody nv) per
  tangent for the contact rows (a point velocity or wrench each, rows.contact_mul_jac)
  where efc_J's is (nc, nv) entries.
  """
  n = J_other.shape[0]

  # the bodies are factors too where they are traced (max_contact_points)
  bodies = () if isinstance(f.sb1, np.ndarray) else (f.sb1, f.sb2)

  def unpack(factors):
    # every traced factor from the argument, none from this closure (the products are
    # custom_jvp functions' static arguments): the rows' offsets and bodies, c_i and mu
    # are not read by the products
    J_other, u, w, soff1, soff2, cdof, *b = factors
    fc = f._replace(u=u, w=w, soff1=soff1, soff2=soff2, off1=None, off2=None, c1=None,
                    c2=None, mu=None, b1=None, b2=None)
    return J_other, fc._replace(sb1=b[0], sb2=b[1]) if b else fc, cdof

  def mul(factors, x):
    J_other, fc, cdof = unpack(factors)
    return jnp.concatenate([J_other @ x, contact_mul_jac(m, lay, fc, cdof, x)])

  def mul_t(factors, y):
    J_other, fc, cdof = unpack(factors)
    return y[:n] @ J_other + contact_mul_jac_t(m, lay, fc, cdof, y[n:])

  return mul, mul_t, (J_other, f.u, f.w, f.soff1, f.soff2, cdof, *bodies)


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def mul_jac(mul: Callable, J: jnp.ndarray, factors, x: jnp.ndarray) -> jnp.ndarray:
  """J @ x for J (n, nv) = the matrix of x -> mul(factors, x) (`jac_products`): its tangent
  takes dJ x as mul's derivative in the factors; J's own tangent is not read, so no
  derivative of the product forms dJ."""
  return J @ x


@mul_jac.defjvp
def _mul_jac_jvp(mul, primals, tangents):
  (J, factors, x), (_, dfactors, dx) = primals, tangents
  return J @ x, J @ dx + jax.jvp(lambda a: mul(a, x), (factors,), (dfactors,))[1]


@partial(jax.custom_jvp, nondiff_argnums=(0,))
def mul_jac_t(mul_t: Callable, J: jnp.ndarray, factors, y: jnp.ndarray) -> jnp.ndarray:
  """J' y, J as in `mul_jac` (mul_t(factors, y) = J' y), dJ' y from mul_t's derivative."""
  return J.T @ y


@mul_jac_t.defjvp
def _mul_jac_t_jvp(mul_t, primals, tangents):
  (J, factors, y), (_, dfactors, dy) = primals, tangents
  return J.T @ y, J.T @ dy + jax.jvp(lambda a: mul_t(a, y), (factors,), (dfactors,))[1]


@jax.custom_jvp
def _barrier(efc: dict) -> dict:
  """optimization_barrier of the rows (see make_constraint), whose tangent passes efc_J's
  outside the barrier: a barrier keeps every operand alive, and efc_J's tangent, (nefc, nv)
  per tangent, is read by no derivative of the pipeline's (mul_jac, mul_jac_t)."""
  return jax.lax.optimization_barrier(efc)


@_barrier.defjvp
def _barrier_jvp(primals, tangents):
  (efc,), (defc,) = primals, tangents
  rest = jax.lax.optimization_barrier({k: v for k, v in defc.items() if k != "efc_J"})
  return jax.lax.optimization_barrier(efc), dict(rest, efc_J=defc["efc_J"])


def make_constraint(m: Model, d: Data) -> Data:
  """mj_makeConstraint + mj_referenceConstraint on the static layout of `efc_layout`.

  Reads qpos, qvel, cdof, subtree_com (and qLD for DIAGEXACT) and d.contact; writes
  efc_type, efc_id, efc_active, efc_J, efc_pos, efc_margin, efc_frictionloss, efc_diagA,
  efc_R, efc_D, efc_vel, efc_aref (efc_force and efc_state are kept, or zeroed when the
  row count changed). d.contact.efc_address is not read: rows come from the layout.
  Differentiated on the CPU, a step in which no row is active gives the efc fields zero
  tangents (`tangent_gate`): fixed shapes keep rows that MuJoCo does not have, whose
  values (an inactive limit's distance, say) have tangents in a step where some row is
  active.
  """
  lay = efc_layout(m, d.contact.dim)
  force, state = d.efc_force, d.efc_state
  if force.shape != (lay.nefc,):
    force, state = jnp.zeros(lay.nefc, d.qpos.dtype), jnp.zeros(lay.nefc, jnp.int32)
  if m.opt.grad_smoothing or m.opt.grad_smoothing_friction or lay.nefc == 0:
    # smoothing reads the tangents of rows not in use; without rows there is nothing to skip
    out = _make_rows(m, d, lay)
  else:
    # A step with no row in use has none of MuJoCo's rows: their tangents are not computed
    # (exact: an inactive row takes no force and no weight in the solver or its implicit
    # derivative, jaxmj/solver/driver.py, and an inactive contact pulls nothing). A falling
    # humanoid's gradient took 0.88x the time (docs/gradients.md, "Contact-free steps"); the
    # colliders under the same gate gained nothing.
    out = gated_tangent(lambda out: jnp.any(out["efc_active"]), partial(_make_rows, lay=lay),
                        m, d)
  pull = out.pop("adhesion_pull", None)
  if pull is not None:
    out["qfrc_passive"] = d.qfrc_passive - pull
  return d.replace(**out, efc_force=force, efc_state=state)


def _make_rows(m: Model, d: Data, lay: EfcLayout) -> dict:
  """make_constraint's rows: the efc fields it writes but efc_force and efc_state, and
  with contact adhesion `adhesion_pull` (nv,), the adhesion forces' pull (J' share) that
  qfrc_passive loses."""
  dt = d.qpos.dtype
  ften, lten = lay.friction_ten, lay.limit_ten  # tendon rows follow the dof / joint rows
  factors = contact_factors(m, d, lay) if lay.nc else None
  blocks = [friction_rows(m, d, lay),
            rows(len(ften), m.nv, dt, **tendon.friction_rows(m, d, ften)),
            limit_rows(m, d, lay),
            rows(len(lten), m.nv, dt, **tendon.limit_rows(m, d, lten, lay.limit_ten_side)),
            contact_rows(m, d, lay, factors)]
  if lay.ne:  # equality rows come first, as in MuJoCo
    eq = equality.equality_rows(m, d)
    blocks.insert(0, rows(lay.ne, m.nv, dt, **eq))
  r = {k: (np.concatenate if isinstance(v, np.ndarray) else jnp.concatenate)(
         [b[k] for b in blocks]) for k, v in blocks[0].items()}
  J = r["J"].reshape(lay.nefc, m.nv)
  # opt.jac_products: the contact rows' derivatives as products (jac_products), for forward
  # mode; reverse mode keeps the formed rows (the products' transposes cost it more)
  products = factors is not None and m.opt.jac_products
  if not products:
    # Materialized before anything reads it (the barrier at the end says why): vel's
    # product and every tangent then read this one array, so reverse mode through a rollout
    # keeps it alone per step, not the (nc, nv) contact products it is assembled from.
    J = jax.lax.optimization_barrier(J)
  if m.opt.enabled(EnableBit.DIAGEXACT):
    r["diag"] = _exact_diag(m, d, J)

  solimp = clamp_solimp(r["solimp"])
  solref = fix_solref(m, r["solref"], DEFAULT_SOLREF)
  solreffriction = fix_solref(m, r["solreffriction"], (0.0, 0.0))
  imp = impedance(solimp, r["imp_pos"], r["imp_margin"])
  R = jnp.maximum(MINVAL, (1 - imp) * r["diag"] / imp)
  R = contact_regularizer(m, d, lay, R)

  use_sf = r["elliptic_friction"] & ((solreffriction[:, 0] != 0) | (solreffriction[:, 1] != 0))
  ref = jnp.where(use_sf[:, None], solreffriction, solref)
  dmax = solimp[:, 1]
  k_std = 1 / jnp.maximum(MINVAL, dmax * dmax * ref[:, 0] * ref[:, 0] * ref[:, 1] * ref[:, 1])
  k_dir = -ref[:, 0] / jnp.maximum(MINVAL, dmax * dmax)
  K = jnp.where(r["kzero"] | r["elliptic_friction"], 0.0, jnp.where(ref[:, 0] > 0, k_std, k_dir))
  B = jnp.where(ref[:, 1] > 0, 2 / jnp.maximum(MINVAL, dmax * ref[:, 0]),
                -ref[:, 1] / jnp.maximum(MINVAL, dmax))

  if not products:
    vel = J @ d.qvel
  else:
    J_other = jnp.concatenate([b["J"] for b in blocks[:-1]]).reshape(-1, m.nv)
    mul, _, args = jac_products(m, lay, J_other, factors, d.cdof)
    vel = mul_jac(mul, J, args, d.qvel)
  vel = vel + surfacevel.efc_vel_offset(m, d, lay)
  aref = -B * vel - K * imp * (r["pos"] - r["margin"]) - r["bias"]  # bias: Jdot v
  share = adhesion.efc_share(m, d, lay)
  passive = {}
  if share is not None:  # contact adhesion: shifted normal force, pull in qfrc_passive
    aref = aref + share * R
    passive = dict(adhesion_pull=share @ J)
  active = r["active"]
  efc = dict(
    efc_type=jnp.asarray(lay.efc_type), efc_id=jnp.asarray(lay.efc_id), efc_active=active,
    efc_pos=r["pos"], efc_margin=r["margin"], efc_frictionloss=r["frictionloss"],
    efc_diagA=R * imp / (1 - imp), efc_R=R, efc_D=jnp.where(active, 1 / R, 0.0),
    efc_vel=vel, efc_aref=aref)
  # Materialize the rows once, before the solver reads them: without this barrier XLA fuses
  # the row assembly (contact Jacobians, gathers) into the solver's consumers and recomputes
  # it there. A vmapped step of box_pile / humanoid_floor is ~30% faster on CPU with it
  # (scripts/profile_step.py); values and derivatives are unchanged.
  if products:  # efc_J's tangent outside the barrier: no derivative reads it (_barrier)
    return dict(_barrier(dict(efc, efc_J=J)), **passive)
  return dict(efc_J=J, **jax.lax.optimization_barrier(efc), **passive)
