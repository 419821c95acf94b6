"""Ellipsoid fluid-model coefficients (mjCGeom::SetFluidCoefs): geom_fluid, host side.

A geom with fluidshape="ellipsoid" stands for the ellipsoid with its semi-axes
(mju_geomSemiAxes) and carries 12 numbers: the interaction flag, the five fluidcoef values
(blunt drag, slender drag, angular drag, Kutta lift, Magnus lift), and the potential-flow
virtual mass and virtual inertia of that ellipsoid about its axes (Lamb's added-mass
coefficients, by MuJoCo's 15-point Gauss-Kronrod quadrature). Other geoms get zeros.
"""

from __future__ import annotations

import numpy as np

from jaxmj.smooth.fluid import semi_axes

NFLUID = 12  # mjNFLUID
_EPS = 1e-6  # mjEPS

# 15-point Gauss-Kronrod weights and the nodes of MuJoCo's change of variables
# l = x^3 / (1 - x)^2 mapping [0, 1) to [0, inf), with dl/dx at each node (MuJoCo's tables).
_KRONROD_W = np.array([
  0.01146766, 0.03154605, 0.05239501, 0.07032663, 0.08450236, 0.09517529, 0.10221647,
  0.10474107, 0.10221647, 0.09517529, 0.08450236, 0.07032663, 0.05239501, 0.03154605,
  0.01146766])
_KRONROD_L = np.array([
  7.865151709349917e-08, 1.7347976913907274e-05, 0.0003548008144506193,
  0.002846636252924549, 0.014094260903596077, 0.053063261727396636, 0.17041978741317773,
  0.5, 1.4036301548686991, 3.9353484827022642, 11.644841677041734, 39.53187807410903,
  177.5711362220801, 1429.4772912937397, 54087.416549217705])
_KRONROD_D = np.array([
  5.538677720489877e-05, 0.002080868285293228, 0.016514126520723166, 0.07261900344370877,
  0.23985243401862602, 0.6868318249020725, 1.8551129519182894, 5.0, 14.060031152313941,
  43.28941239611009, 156.58546376397112, 747.9826085305024, 5827.4042950027115,
  116754.0197944512, 25482945.327264845])


def _kappa(dx: float, dy: float, dz: float) -> float:
  """mjCGeom::GetAddedMassKappa: the added-mass integral of the ellipsoid along x."""
  invx, invy, invz = 1.0 / (dx * dx), 1.0 / (dy * dy), 1.0 / (dz * dz)
  scale = (dx * dx * dx * dy * dz) ** 0.4  # makes the integration variable dimensionless
  kappa = 0.0
  for w, lk, dk in zip(_KRONROD_W, _KRONROD_L, _KRONROD_D):
    lam = scale * lk
    denom = (1 + lam * invx) * np.sqrt((1 + lam * invx) * (1 + lam * invy) * (1 + lam * invz))
    kappa += scale * dk / denom * w
  return kappa * invx


def _virtual(dx: float, dy: float, dz: float) -> tuple[list[float], list[float]]:
  """Virtual mass (3,) and virtual inertia (3,) per unit density of the ellipsoid."""
  volume = 4.0 / 3.0 * np.pi * dx * dy * dz
  kx, ky, kz = _kappa(dx, dy, dz), _kappa(dy, dz, dx), _kappa(dz, dx, dy)

  def inertia_factor(a, b, ka, kb):
    # |kb - ka| and the denominator change sign together: MuJoCo takes both absolute
    return (a * a - b * b) ** 2 * abs(kb - ka) / max(
      _EPS, abs(2 * (a * a - b * b) + (a * a + b * b) * (ka - kb)))

  mass = [volume * k / max(_EPS, 2 - k) for k in (kx, ky, kz)]
  inertia = [volume * inertia_factor(dy, dz, ky, kz) / 5,
             volume * inertia_factor(dz, dx, kz, kx) / 5,
             volume * inertia_factor(dx, dy, kx, ky) / 5]
  return mass, inertia


def compile_fluid(bodies, f: dict) -> dict:
  """geom_fluid (ngeom, 12) and body_fluidellipsoid (nbody,) from the geoms' fluidshape
  and fluidcoef; reads geom_type and the compiled geom_size."""
  geom_vals = [vals for b in bodies for _, vals, *_ in b.geoms]
  ngeom = len(geom_vals)
  fluid = np.zeros((ngeom, NFLUID))
  size = np.asarray(f["geom_size"], float).reshape(-1, 3)
  axes = semi_axes(np.asarray(f["geom_type"]), size)
  for g, vals in enumerate(geom_vals):
    if vals.get("fluidshape") != "ellipsoid":
      continue
    mass, inertia = _virtual(*axes[g])
    fluid[g] = [1.0, *vals.get("fluidcoef", (0.5, 0.25, 1.5, 1.0, 1.0)), *mass, *inertia]
  nbody = len(bodies)
  body = np.zeros(nbody, bool)
  if ngeom:
    np.logical_or.at(body, np.asarray(f["geom_bodyid"]), fluid[:, 0] > 0)
  return {"geom_fluid": fluid, "body_fluidellipsoid": body}
