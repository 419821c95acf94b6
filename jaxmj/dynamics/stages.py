"""The stages of a forward pass, each the sequence of its pipeline steps as MuJoCo's
engine_forward.c orders them: mj_fwdPosition, mj_fwdVelocity, mj_fwdAcceleration,
mj_fwdConstraint (mj_fwdActuation is actuation/driver.py's fwd_actuation). forward.py
composes them into forward, step, step1 and step2; inverse.py reuses the position and
velocity stages. Every step runs under `jax.named_scope` with its MuJoCo name
(`mj_fwdPosition/mj_kinematics`, ...), which profiles and HLO dumps show.
"""

from __future__ import annotations

import contextlib
import functools
import inspect

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.actuation import driver as actuation
from jaxmj.collision import driver as collision
from jaxmj.constraint import driver as constraint
from jaxmj.dynamics import flags
from jaxmj.smooth import armature, camlight, com, kinematics, mass, passive, rne, tendon
from jaxmj.solver import driver as solver
from jaxmj.solver import island, noslip
from jaxmj.types import Data, Model


def check_supported(m: Model) -> None:
  """Raises NotImplementedError naming each feature of `m` the runtime cannot simulate yet.

  Each entry of `m.unsupported` is (feature, disable bits): the feature is active unless
  one of those bits is set in `opt.disableflags`. Option flags jaxmj cannot honour are
  read from `m.opt` itself (flags.py), so flags switched after compiling count too.
  """
  active = [name for name, bits in m.unsupported if not m.opt.disableflags & bits]
  active += flags.unsupported(m)
  if active:
    raise NotImplementedError(
      f"model {m.model_name!r} uses features jaxmj cannot simulate yet: {'; '.join(active)}"
    )


def products_precision(m: Model):
  """A context for tracing m's physics: in exact arithmetic every matrix product at full
  float32 (or float64) precision. JAX's default lets GPUs round float32 products' inputs to
  TF32 (a 10-bit mantissa: 8192 times float32's roundoff); CPUs compute in full
  either way, so results there do not change. Fast arithmetic keeps the caller's setting
  (`jax.default_matmul_precision`). Derivatives keep each product's precision."""
  return jax.default_matmul_precision("highest") if m.opt.exact else contextlib.nullcontext()


def full_precision(fn):
  """fn(m, d, ...) traced under products_precision(m) (public entry points)."""

  @functools.wraps(fn)
  def wrapped(m: Model, *args, **kwargs):
    with products_precision(m):
      return fn(m, *args, **kwargs)

  return wrapped


def traced_once(fn, static_argnames: tuple[str, ...] = ()):
  """fn(m, ...) jitted (`static_argnames` static), so that its trace is made once per Model
  structure, argument shapes and JAX configuration and reused by every trace that calls it
  (the call is one `jit` equation, which XLA inlines: the same program), and called under
  products_precision(m): what an enclosing transformation traces from it at the call
  (jax.grad's and jax.vmap's rules for the `jit` equation, the custom derivatives' own
  products) keeps exact arithmetic's precision."""
  jitted = jax.jit(fn, static_argnames=static_argnames)

  @functools.wraps(fn)
  def call(m: Model, *args, **kwargs):
    if not isinstance(m, Model):  # e.g. step(d, m): say so before reading m's options
      raise TypeError(f"jaxmj.{fn.__name__}: expected a jaxmj.Model as the first argument, "
                      f"got {type(m).__name__}")
    with products_precision(m):
      return jitted(m, *args, **kwargs)

  return call


def traced_once_by_id(fn, ids: dict, static_argnames: tuple[str, ...] = ()):
  """traced_once(fn) whose index arguments (a body, site or object id) are traced: one trace
  serves every id (a loop over a model's bodies compiles once; a static id would compile
  each), host integers passed as int32 scalars so that an int and a numpy integer share it
  too. fn's results with a traced id equal those with a host id bit for bit.

  ids: {argument name: count(arguments) -> how many ids there are}: a host id out of range
  raises IndexError, as id2name and reset do (traced, it would be clamped)."""
  jitted = traced_once(fn, static_argnames=static_argnames)
  signature = inspect.signature(fn)

  @functools.wraps(fn)
  def call(*args, **kwargs):
    bound = signature.bind(*args, **kwargs)
    for name, count in ids.items():
      v = bound.arguments.get(name)
      if isinstance(v, (int, np.integer)) or (isinstance(v, np.ndarray) and v.ndim == 0):
        n = count(bound.arguments)
        if not 0 <= v < n:
          raise IndexError(f"{fn.__name__}: {name} {int(v)} is out of range (0 to {n - 1})")
        bound.arguments[name] = np.int32(v)
    return jitted(*bound.args, **bound.kwargs)

  return call


def fwd_position(m: Model, d: Data) -> Data:
  """mj_fwdPosition: kinematics, com, camera and light poses, tendons, the joint-space inertia
  and its factorization, collision, transmission.

  MuJoCo makes the constraint rows here too (mj_makeConstraint, then mj_island). jaxmj makes
  them in fwd_velocity, in one pass with their reference accelerations (MuJoCo's
  mj_referenceConstraint, in mj_fwdVelocity), which read qvel; nothing between the two stages
  reads the rows, so the result is MuJoCo's. Islands are found in fwd_constraint, from the
  same rows.
  """
  return run_stages(m, d, ("mj_kinematics", kinematics.kinematics), ("mj_comPos", com.com_pos),
              ("mj_camlight", camlight.camlight), ("mj_tendon", tendon.tendon),
              ("mj_crb", mass.crb), ("mj_factorM", mass.factor_m),
              ("mj_collision", functools.partial(collision.collision, from_kinematics=True)),
              ("mj_transmission", actuation.transmission))


def fwd_velocity(m: Model, d: Data) -> Data:
  """mj_fwdVelocity: com velocities, tendon and actuator velocities, passive forces, the RNE
  bias forces (with the tendon armature's), then the constraint rows (mj_makeConstraint and
  mj_referenceConstraint: see fwd_position)."""
  d = run_stages(m, d, ("mj_comVel", com.com_vel), ("mj_tendonVel", tendon.velocity),
           ("mj_actuatorVel", actuation.velocity), ("mj_passive", passive.passive),
           ("mj_rne", rne.rne), ("mj_tendonBias", armature.tendon_bias))
  if not d.efc_J.shape[0]:
    return d
  return run_stages(m, d, ("mj_makeConstraint", constraint.make_constraint))


@full_precision
def fwd_acceleration(m: Model, d: Data) -> Data:
  """mj_fwdAcceleration: qfrc_smooth and qacc_smooth (applied, passive, bias, actuator)."""
  qfrc_smooth = (
    d.qfrc_passive - d.qfrc_bias + d.qfrc_applied + d.qfrc_actuator
    + rne.xfrc_accumulate(m, d)
  )
  return d.replace(qfrc_smooth=qfrc_smooth, qacc_smooth=mass.solve_m_tree(m, d, qfrc_smooth))


def fwd_constraint(m: Model, d: Data) -> Data:
  """mj_fwdConstraint: constraint islands (mj_island), the solver (Newton, CG or PGS per
  island), then noslip (mj_solNoSlip, when opt.noslip_iterations > 0); without rows,
  qacc = qacc_smooth."""
  if d.efc_J.shape[0] == 0:
    return d.replace(qacc=d.qacc_smooth, qfrc_constraint=jnp.zeros_like(d.qacc_smooth))
  return run_stages(m, d, ("mj_island", island.island),
              ("mj_solve", functools.partial(solver.solve, find_islands=False)),
              ("mj_solNoSlip", noslip.noslip))


# MuJoCo's pipeline functions one at a time, under MJX's names (mjx.kinematics, ...): each
# (Model, Data) -> Data, reading what MuJoCo's reads (kinematics before com_pos, ...).
PIPELINE_FUNCTIONS = {
  "kinematics": ("mj_kinematics", kinematics.kinematics),
  "com_pos": ("mj_comPos", com.com_pos),
  "camlight": ("mj_camlight", camlight.camlight),
  "tendon": ("mj_tendon", tendon.tendon),
  "collision": ("mj_collision", collision.collision),
  "crb": ("mj_crb", mass.crb),
  "factor_m": ("mj_factorM", mass.factor_m),
  "transmission": ("mj_transmission", actuation.transmission),
  "com_vel": ("mj_comVel", com.com_vel),
  "passive": ("mj_passive", passive.passive),
  "rne": ("mj_rne", rne.rne),
  "make_constraint": ("mj_makeConstraint", constraint.make_constraint),
  "solve": ("mj_fwdConstraint", fwd_constraint),
}


def pipeline_function(name: str):
  """PIPELINE_FUNCTIONS[name] under its MuJoCo name's scope and products_precision."""
  scope, fn = PIPELINE_FUNCTIONS[name]

  @functools.wraps(fn)
  def stage(m: Model, d: Data) -> Data:
    return run_stages(m, d, (scope, fn))

  return stage


def run_stages(m: Model, d: Data, *stages) -> Data:
  """d through each (name, stage) in turn, each under `jax.named_scope(name)`, so that its ops
  carry the MuJoCo function's name in profiles and HLO dumps, with products_precision(m)."""
  with products_precision(m):
    for name, stage in stages:
      with jax.named_scope(name):
        d = stage(m, d)
  return d

