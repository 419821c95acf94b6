"""mj_makeImpedance and the solver parameters of each row: the solimp impedance sigmoid,
clamped solimp and solref (getsolparam), and the friction rows' regularizer from the
normal row's (impratio)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.constants import MINVAL
from jaxmj.constraint.layout import EfcLayout
from jaxmj.types import Data, DisableBit, Model

MINIMP = 0.0001  # mjMINIMP: lower clamp of solimp dmin, dmax, midpoint
MAXIMP = 0.9999  # mjMAXIMP
DEFAULT_SOLREF = (0.02, 1.0)  # replaces a solref that mixes the standard and direct forms


def _power(a, b):
  """a ** b with MuJoCo's exact shortcuts for b = 1 and b = 2 (a in (0, 1))."""
  return jnp.where(b == 1, a, jnp.where(b == 2, a * a, jnp.power(a, b)))


def impedance(solimp: jnp.ndarray, pos: jnp.ndarray, margin: jnp.ndarray) -> jnp.ndarray:
  """getimpedance: the solimp sigmoid at |pos - margin| / width (solimp already clamped).

  solimp: (..., 5) [dmin, dmax, width, midpoint, power]. Gradient-safe at the saturated
  ends, where the unselected power branches are evaluated at a harmless x.
  """
  dmin, dmax, width, mid, p = (solimp[..., i] for i in range(5))
  flat = (dmin == dmax) | (width <= MINVAL)
  x = jnp.abs((pos - margin) / jnp.where(flat, 1.0, width))
  sat = (x >= 1) | (x <= 0)
  xs = jnp.where(sat, 0.5, x)
  low = _power(xs, p) / _power(mid, p - 1)
  high = 1 - _power(1 - xs, p) / _power(1 - mid, p - 1)
  y = jnp.where(p == 1, xs, jnp.where(xs <= mid, low, high))
  imp = dmin + y * (dmax - dmin)
  imp = jnp.where(sat, jnp.where(x >= 1, dmax, dmin), imp)
  return jnp.where(flat, 0.5 * (dmin + dmax), imp)


def clamp_solimp(solimp):
  dmin, dmax, width, mid, p = (solimp[..., i] for i in range(5))
  clip = lambda v: jnp.minimum(MAXIMP, jnp.maximum(MINIMP, v))
  return jnp.stack([clip(dmin), clip(dmax), jnp.maximum(0.0, width), clip(mid),
                    jnp.maximum(1.0, p)], axis=-1)


def fix_solref(m: Model, ref, mixed_default):
  """getsolparam: a solref mixing the two forms is replaced; refsafe clamps timeconst."""
  mixed = (ref[..., 0] > 0) ^ (ref[..., 1] > 0)
  ref = jnp.where(mixed[..., None], jnp.asarray(mixed_default, ref.dtype), ref)
  if not m.opt.disabled(DisableBit.REFSAFE):
    r0 = ref[..., 0]
    ref = ref.at[..., 0].set(jnp.where(r0 > 0, jnp.maximum(r0, 2 * m.opt.timestep), r0))
  return ref


def contact_regularizer(m: Model, d: Data, lay: EfcLayout, R: jnp.ndarray) -> jnp.ndarray:
  """mj_makeImpedance's friction step: R of friction rows from the normal row's R.

  R1 = R0 / impratio; mu = friction0 sqrt(R1 / R0). Pyramid: every row 2 mu^2 R0.
  Elliptic: row 1 is R1, row j >= 2 is R1 friction0^2 / friction_{j-1}^2.
  """
  if lay.nc == 0:
    return R
  c0 = lay.contact0
  rc = R[c0:]
  r0 = rc[lay.con_first]
  r1 = r0 / jnp.maximum(MINVAL, m.opt.impratio)
  friction = jnp.where(d.contact.active[:, None], d.contact.friction, 1.0)[lay.con_slot]
  f0 = friction[:, 0]
  mu = f0 * jnp.sqrt(r1 / r0)
  fj = friction[np.arange(lay.nc), np.maximum(lay.con_j - 1, 0)]
  ell = jnp.where(lay.con_j == 0, r0, jnp.where(lay.con_j == 1, r1, r1 * f0 * f0 / (fj * fj)))
  rc = jnp.where(lay.con_pyramid, 2 * mu * mu * r0, jnp.where(lay.con_elliptic, ell, rc))
  return R.at[c0:].set(rc)
