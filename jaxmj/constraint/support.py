"""MuJoCo's constraint utilities (engine_core_constraint, engine_core_util): products with
the constraint Jacobian and the model's solver, cone and Jacobian kinds.

jaxmj keeps efc_J dense at a fixed number of rows (nefc, nv), each row a constraint only
where d.efc_active is set; the products treat inactive rows as absent (MuJoCo's nefc rows
are the active ones, in its own order).
"""

from __future__ import annotations

import jax.numpy as jnp

from jaxmj.types import Cone, Data, Jacobian, Model, Solver

__all__ = ["is_dual", "is_pyramidal", "is_sparse", "mul_jac_t_vec", "mul_jac_vec"]

# mj_isSparse: MuJoCo's automatic choice of a sparse constraint Jacobian from this many dofs
_SPARSE_NV = 60


def mul_jac_vec(m: Model, d: Data, vec: jnp.ndarray) -> jnp.ndarray:
  """mj_mulJacVec: efc_J vec, (nefc,), 0 on inactive rows. vec: (nv,)."""
  del m
  return jnp.where(d.efc_active, d.efc_J @ vec, 0.0)


def mul_jac_t_vec(m: Model, d: Data, vec: jnp.ndarray) -> jnp.ndarray:
  """mj_mulJacTVec: efc_J' vec, (nv,), over the active rows. vec: (nefc,), in d's rows."""
  del m
  return jnp.where(d.efc_active, vec, 0.0) @ d.efc_J


def is_dual(m: Model) -> bool:
  """mj_isDual: whether MuJoCo solves the dual problem (PGS, or any noslip iterations)."""
  return m.opt.solver == Solver.PGS or m.opt.noslip_iterations > 0


def is_pyramidal(m: Model) -> bool:
  """mj_isPyramidal: whether friction cones are pyramidal."""
  return m.opt.cone == Cone.PYRAMIDAL


def is_sparse(m: Model) -> bool:
  """mj_isSparse: whether MuJoCo would store this model's constraint Jacobian sparse
  (opt.jacobian sparse, or auto with nv >= 60). jaxmj's efc_J is dense either way; the
  answer is MuJoCo's, for code that reads an MjData's efc_J."""
  return m.opt.jacobian == Jacobian.SPARSE or (m.opt.jacobian == Jacobian.AUTO
                                             and m.nv >= _SPARSE_NV)
