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
exact derivative. Static friction is not smoothed by it: a resting box pushed below its
friction limit has the same ~0 sensitivity with or without it.

Static friction (`opt.grad_smoothing_friction`, a temperature tau on a contact's load; 0 =
off, pyramidal cones only): a stuck contact holds its body with the stiff tangential rows of
its edge pairs, so a push below the friction limit moves it by the soft contact's creep only
(a box of 1 kg: ~3e-4 m/N over 0.3 s, against ~0.04 sliding). The values again stay the
solver's; the implicit derivative becomes a blend, per island,

    dq = (1 - P) dq_exact + P dq_slip,

of the exact one and that of a slip mode in which every pushing pyramidal contact pushes
along its current resultant only: its edge rows e_r (forces f_r, total F) all become
sum_r (f_r / F) e_r = J_n + sum_k beta_k mu_k J_tk, beta_k = (f_k+ - f_k-) / F, and its force
tangents keep the ratio of friction to normal (A J, A' f: `Slip`). It is a contact sliding at
its present friction ratio: frictionless at rest, MuJoCo's own sliding Hessian where a
single edge pushes. A contact's load s = 1 - sum_k |f_k+ - f_k-| / F (1 unloaded, 0 sliding)
gives its slip share p = 1 - tanh(s / tau), and P is the mean of the island's contacts' p
weighted by F (the force tangents are blended the same way). One more H^-1 per step.

The bias: a stuck contact contributes a share P of a sliding derivative (a box at rest,
tau = 2: P = 0.54, 1 - tanh(1 / tau)), and P applies to everything in the island: an
unloaded contact there (a box resting on the pushed one) slides frictionless in the slip
mode rather than being carried along. Per step the slip share of a velocity perturbation
decays as P^k, so over a rollout the smoothed slope at rest is well below the sliding one
unless P is near 1. Sliding, the slip mode drops the normal share of the edge pairs that
still both push (MuJoCo's pyramid keeps them and slides stiffer): the sliding box's slope is
that of ideal Coulomb sliding, 7-11% above MuJoCo's for tau = 0.5-4 (README, "Contact
smoothing"). Elliptic cones are refused (their stuck zone would need the cone's own slip
Hessian).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.constraint.layout import EfcLayout
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


def soft_tangent(soft: dict, dsoft: dict, q, satisfied):
  """The smoothed rows' share of the implicit derivative.

  `soft`: unmasked efc J (nefc, nv), aref (nefc,), D = 1/R (nefc,) and weight w (nefc,);
  `dsoft` their tangents; `q` the solution; `satisfied` (nefc,) the rows in state SATISFIED
  (the others are in the exact derivative already: QUADRATIC rows, an elliptic contact's
  CONE rows). Returns (the Hessian's extra term (nv, nv), the extra gradient tangent dg
  (nv,), and a function dq -> extra force tangent (nefc,)).
  """
  ws = jax.lax.stop_gradient(jnp.where(satisfied, soft["w"] * soft["D"], 0.0))
  J = soft["J"]
  extra_h = J.T @ (ws[:, None] * J)
  # d(J q - aref) at fixed q: the rows' reference acceleration moving with the inputs
  dr = jax.jvp(lambda s: s["J"] @ q - s["aref"], (soft,), (dsoft,))[1]
  dg = J.T @ (ws * dr)
  return extra_h, dg, lambda dq: -ws * (dr + J @ dq)


# ------------------------------------------------------------------ static friction


class SlipPairs(NamedTuple):
  """Static layout of the pyramid edge pairs (static-friction smoothing)."""

  rows: np.ndarray  # (npair, 2) int32: the efc rows J_n + mu J_t, J_n - mu J_t of each pair
  contact: np.ndarray  # (npair,) int32: the pair's contact slot
  ncontact: int  # contact slots
  tau: float  # opt.grad_smoothing_friction


def friction_temperature(m: Model) -> float:
  """opt.grad_smoothing_friction, checked: a finite number >= 0 (static)."""
  t = m.opt.grad_smoothing_friction
  if not isinstance(t, (int, float)) or not np.isfinite(t) or t < 0:
    raise ValueError(f"opt.grad_smoothing_friction must be a number >= 0, got {t!r}")
  return float(t)


def slip_pairs(lay: EfcLayout, tau: float) -> SlipPairs | None:
  """The pyramid edge pairs of the layout (None without any): a contact's rows come in pairs,
  + edge first (constraint/layout.py)."""
  plus = np.flatnonzero(np.asarray(lay.con_sign) > 0)
  if not len(plus):
    return None
  rows = lay.contact0 + np.stack([plus, plus + 1], axis=1)
  return SlipPairs(rows=rows.astype(np.int32), contact=np.asarray(lay.con_slot)[plus],
                   ncontact=len(lay.contact_efc_address), tau=tau)


class Slip(NamedTuple):
  """The slip mode at a solution: each pushing contact pushes along its resultant only."""

  w: jax.Array  # (npair, 2): f+ / F, f- / F with F the contact's total (0 if F = 0)
  share: jax.Array  # (ni,) the slip share of each island

  def rows(self, pairs: SlipPairs, x: jax.Array) -> jax.Array:
    """A x for x (nefc,) or (nefc, nv): every edge row of a pushing contact becomes the
    force-weighted mean of its edge rows, sum_r (f_r / F) x_r (for A J: the direction
    J_n + sum_k beta_k mu_k J_tk of its resultant, beta_k = (f_k+ - f_k-) / F). A contact
    that does not push keeps its rows (w = 0: a zero mean, replaced by the rows)."""
    i, j = pairs.rows[:, 0], pairs.rows[:, 1]
    shape = (-1,) + (1,) * (x.ndim - 1)
    c = jnp.asarray(pairs.contact)
    part = self.w[:, 0].reshape(shape) * x[i] + self.w[:, 1].reshape(shape) * x[j]
    mean = jax.ops.segment_sum(part, c, num_segments=pairs.ncontact)[c]
    push = (self.w[:, 0] + self.w[:, 1] > 0).reshape(shape)
    return (x.at[i].set(jnp.where(push, mean, x[i]), unique_indices=True)
            .at[j].set(jnp.where(push, mean, x[j]), unique_indices=True))

  def pool(self, pairs: SlipPairs, y: jax.Array) -> jax.Array:
    """A' y (nefc,): a pushing contact's total sum_r y_r shared between its edge rows as
    f_r / F (its force keeps the ratio of friction to normal)."""
    i, j = pairs.rows[:, 0], pairs.rows[:, 1]
    c = jnp.asarray(pairs.contact)
    total = jax.ops.segment_sum(y[i] + y[j], c, num_segments=pairs.ncontact)[c]
    push = self.w[:, 0] + self.w[:, 1] > 0
    return (y.at[i].set(jnp.where(push, self.w[:, 0] * total, y[i]), unique_indices=True)
            .at[j].set(jnp.where(push, self.w[:, 1] * total, y[j]), unique_indices=True))


def slip(pairs: SlipPairs, force, island_efc) -> Slip:
  """The slip mode of the pyramidal contacts at forces `force` (nefc,); `island_efc`
  (nefc, ni) the rows' islands (one-hot).

  A contact's load s = 1 - sum_k |f_k+ - f_k-| / F, F = sum_k (f_k+ + f_k-) its normal force
  (1 unloaded, 0 on the pyramid's faces: sliding), its slip share p = 1 - tanh(s / tau) (1 at
  slip), an island's share the mean of its pushing contacts' p weighted by F. No derivative
  flows through any of it.
  """
  f = jax.lax.stop_gradient(force)
  i, j = pairs.rows[:, 0], pairs.rows[:, 1]
  fp, fm = f[i], f[j]
  c = jnp.asarray(pairs.contact)
  seg = lambda x: jax.ops.segment_sum(x, c, num_segments=pairs.ncontact)[c]  # noqa: E731
  total, fric = seg(fp + fm), seg(jnp.abs(fp - fm))  # (npair,): the pair's contact's
  push = total > 0
  safe = jnp.where(push, total, 1.0)
  w = jnp.where(push[:, None], jnp.stack([fp, fm], axis=1) / safe[:, None], 0.0)
  p = jnp.where(push, 1.0 - jnp.tanh((1.0 - fric / safe) / pairs.tau), 0.0)
  isl = island_efc[i]  # (npair, ni)
  num, den = ((fp + fm) * p) @ isl, (fp + fm) @ isl
  share = jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)
  return Slip(w=w, share=share)
