"""Contact smoothing of the solver's implicit derivative (`opt.grad_smoothing`, a temperature T
in metres; 0 = off, the exact derivative).

The exact derivative of a constrained step is that of the current constraint set: a contact
that is apart (or touching but not pushing) contributes nothing, so the gradient of anything
downstream w.r.t. what would bring two bodies together is zero until they touch, and the
first-order optimizer never makes them touch. With smoothing the values stay the solver's
(to the last bits: a different XLA program); only the tangents change: every scalar
inequality row (joint and tendon limits, frictionless and pyramidal contact rows, and the
normal row of an elliptic contact) that is SATISFIED at the solution (apart, or touching
without pushing) enters the implicit derivative as if it were QUADRATIC, with its constraint
stiffness D = 1/R scaled by

    w = sigmoid(-(efc_pos - efc_margin) / T),

so a contact at distance `dist` beyond its margin acts, in the backward pass, as a soft
spring-damper (MuJoCo's aref: K, B from solref) of relative strength w. The collision driver
runs its colliders a second time, SMOOTHING_REACH * T beyond each pair's margin + gap, so
that the rows of pairs apart carry real distances; contacts and rows stay MuJoCo's (at the
cost of that second pass). An elliptic contact apart is smoothed as if frictionless: its
friction rows take no weight (while apart there is no telling whether it would stick or
slide, which decides the cone's Hessian), so the smoothed gradient of an approaching
elliptic contact says "push closer" but nothing of the friction the contact would bring.

The bias: tangents are those of a contact set in which near contacts are partly engaged,
so gradients differ from the exact ones wherever a row is SATISFIED (a touching contact not
pushing gets w >= 1/2) or within a few T of touching; rows in contact and pushing keep their
exact derivative. Static friction is not smoothed: a resting box pushed below its friction
limit has the same ~0 sensitivity with or without it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.types import ConstraintType, Model

_SMOOTHED = np.array([ConstraintType.LIMIT_JOINT, ConstraintType.LIMIT_TENDON,
                      ConstraintType.CONTACT_FRICTIONLESS, ConstraintType.CONTACT_PYRAMIDAL])


def temperature(m: Model) -> float:
  """opt.grad_smoothing, checked: a finite number >= 0 (static)."""
  t = m.opt.grad_smoothing
  if not isinstance(t, (int, float)) or not np.isfinite(t) or t < 0:
    raise ValueError(f"opt.grad_smoothing must be a number >= 0 (metres), got {t!r}")
  return float(t)


def row_weights(efc_type, efc_pos, efc_margin, t: float,
                elliptic_normal: np.ndarray | None = None) -> jax.Array:
  """(nefc,) smoothing weight of every row: sigmoid(-(pos - margin) / t) for the scalar
  inequality rows and the rows marked in `elliptic_normal` (static (nefc,) bool: the first
  row of each elliptic contact), 0 for the others. No derivative flows through the weight."""
  smoothed = jnp.isin(jnp.asarray(efc_type), jnp.asarray(_SMOOTHED))
  if elliptic_normal is not None:
    smoothed = smoothed | jnp.asarray(elliptic_normal)
  gap = jax.lax.stop_gradient(efc_pos - efc_margin)
  return jnp.where(smoothed, jax.nn.sigmoid(-gap / t), 0.0)


def soft_tangent(soft: dict, dsoft: dict, q, satisfied, hinv_of):
  """The smoothed rows' share of the implicit derivative.

  `soft`: unmasked efc J (nefc, nv), aref (nefc,), D = 1/R (nefc,) and weight w (nefc,);
  `dsoft` their tangents; `q` the solution; `satisfied` (nefc,) the rows in state SATISFIED
  (the others are in the exact derivative already: QUADRATIC rows, an elliptic contact's
  CONE rows). `hinv_of(extra_h)` -> H^-1 with `extra_h` added to the exact Hessian.
  Returns (H^-1 of the smoothed Hessian, the extra gradient tangent dg (nv,), and a function
  dq -> extra force tangent (nefc,)).
  """
  ws = jax.lax.stop_gradient(jnp.where(satisfied, soft["w"] * soft["D"], 0.0))
  J = soft["J"]
  hinv = hinv_of(J.T @ (ws[:, None] * J))
  # d(J q - aref) at fixed q: the rows' reference acceleration moving with the inputs
  dr = jax.jvp(lambda s: s["J"] @ q - s["aref"], (soft,), (dsoft,))[1]
  dg = J.T @ (ws * dr)
  return hinv, dg, lambda dq: -ws * (dr + J @ dq)
