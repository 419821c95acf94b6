"""Transition Jacobians (mjd_transitionFD's layout), exact by forward-mode autodiff.

MuJoCo C offers only finite differences (mjd_transitionFD); here the same matrices come
from forward mode through one `step`, so they are exact for the step as simulated (with the
solver's implicit derivative: see solver.py) and batch with `vmap` over states.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.collision.driver import all_out_of_reach
from jaxmj.collision.plan import collision_plan
from jaxmj.dynamics.forward import step
from jaxmj.enums import (
  DisableBit,
  EnableBit,
  Integrator,
  SensorType,
  Solver,
  TrnType,
)
from jaxmj.io import constraint_fields
from jaxmj.smooth.kinematics import kinematics
from jaxmj.smooth.qpos import differentiate_pos, integrate_pos
from jaxmj.types import Data, Model


def _transition(m: Model, d: Data, ref=None, aux: bool = False):
  """(dq, dv, da, du) -> (next-state tangent difference, sensordata) of one step from `d`.

  dq: (nv,) qpos as a velocity in qpos's tangent space, dv: (nv,) qvel, da: (na,) act,
  du: (nu,) ctrl. The next qpos is compared with `ref`, the nominal next qpos (None: the
  output's own value, held constant, which is the nominal one for derivatives at zero), by
  mj_differentiatePos, as mjd_transitionFD does. aux: also the step's qacc (nv,), as
  jax.linearize's has_aux takes it.
  """

  def f(dq, dv, da, du):
    qpos = integrate_pos(m, d.qpos, dq, 1.0)
    d1 = d.replace(qpos=qpos, qvel=d.qvel + dv, act=d.act + da, ctrl=d.ctrl + du)
    new = step(m, d1)
    q_ref = jax.lax.stop_gradient(new.qpos) if ref is None else ref
    dq_next = differentiate_pos(m, 1.0, q_ref, new.qpos)
    out = jnp.concatenate([dq_next, new.qvel, new.act]), new.sensordata
    return (out, new.qacc) if aux else out

  return f


def _at_solution(m: Model, d: Data, qacc):
  """(m, d) for a second linearization at the same state whose step's solver starts at its
  solution `qacc` and runs no iteration: Newton and CG return their warm start then, so its
  implicit derivative is taken at the same qacc and forces as the first's, without the
  iterations (box_stack: a solve is most of a step's primal). Unchanged where that does
  not hold: PGS (dual), unrolled derivatives (the iterations are the derivative), RK4 (its
  later stages solve again), noslip (qacc is the solver's plus noslip's), no warm start."""
  o = m.opt
  if (o.solver == Solver.PGS or o.grad != "implicit" or o.integrator == Integrator.RK4
      or o.noslip_iterations or o.disabled(DisableBit.WARMSTART)):
    return m, d
  return m.replace(opt=o.replace(iterations=0)), d.replace(qacc_warmstart=qacc)


# Columns a batched call takes at a time: with every column at once, (states x columns)
# tangent arrays outgrow the CPU's caches (scripts/bench_transition.py, README "Transition
# Jacobians": the humanoid's and box_stack's CPU time per state rose from B 16-32 to 256).
_AUTO_CHUNK = 8
_AUTO_BLOCK = 32


def transition_jacobians(m: Model, d: Data, eps: float | None = None,
                         chunk: int | str | None = "auto", block: int = _AUTO_BLOCK):
  """mjd_transitionFD's matrices for one step from `d`, in its layout.

  Returns (A, B, C, D) with  d x_next = A dx + B du,  d sensordata = C dx + D du:
    A: (2 nv + na, 2 nv + na), B: (2 nv + na, nu), C: (nsensordata, 2 nv + na),
    D: (nsensordata, nu).
  x is the integration state in its tangent space: qpos perturbed by mj_integratePos (so a
  free joint contributes 6 columns, not 7), then qvel, then act. sensordata is the one the
  step computes (at the state before integration), as in mjd_transitionFD.

  eps None (default): exact, by forward mode, in two linearizations of the step: one in
  qpos (its nv columns), one in (qvel, act, ctrl) with qpos held, so that the tangents of
  the latter skip everything that depends on positions alone (kinematics, inertia and its
  factorization, collision, constraint Jacobians): they cost a fraction of a position
  tangent. Each linearization's tangent map is vmapped over its basis columns, at most
  `chunk` at a time in equal groups (static; None: all at once; a group is applied by
  lax.map, so memory is bounded by a group's tangents). eps > 0: centred finite differences
  of the same function with that step (mjd_transitionFD with flg_centered), for comparison
  or where a derivative is not wanted through a non-smooth event.

  `d` is one world, or a batch: a Data whose every field has the leading axes of qpos's
  batch (as `jax.vmap(make_data)` or a vmapped rollout gives); then A, B, C, D have those
  leading axes too, and the states go `block` at a time (static; vmapped within a block,
  lax.map over blocks, the last padded by repeating the last state), their tangent maps
  `chunk` columns at a time ("auto": at most 8 for a batch, all at once for one world), so
  that the tangent arrays stay in the CPU's caches: CPU time per state, one pinned core,
  256 states (docs/gradients.md, "Transition Jacobians"), went from 1.36 ms vmapped all at once to
  0.6-0.7 on the humanoid, and from 2.7 to 1.3-1.7 on box_stack. A block in which no geom
  pair of any state is within reach (broad phase: no contact rows) takes its Jacobians
  through the model with contacts disabled (the same solution and derivative without
  their collision, rows and tangents; _contact_free lists the models that always keep
  them). `jax.vmap` of the
  one-world call works too (then pass a chunk; it keeps every contact row), and everything
  jits.
  """
  if d.qpos.ndim > 1:
    return _batched(m, d, eps, _AUTO_CHUNK if chunk == "auto" else chunk, block)
  if chunk == "auto":
    chunk = None
  if eps is None:  # the contact rows' tangents as products, without forming dJ (types.py)
    m = m.replace(opt=m.opt.replace(jac_products=True))
  f = _transition(m, d, aux=True) if eps is None else _transition(m, d, step(m, d).qpos)
  dt = d.qvel.dtype
  sizes = (m.nv, m.nv, m.na, m.nu)
  zq, zv, za, zu = (jnp.zeros(k, dt) for k in sizes)
  if eps is None:
    (y_q, s_q), qacc = tangents(lambda dq: f(dq, zv, za, zu), (zq,), chunk, aux=True)
    f_r = _transition(*_at_solution(m, d, qacc))
    y_r, s_r = tangents(lambda dv, da, du: f_r(zq, dv, da, du), (zv, za, zu), chunk)
    jy, js = jnp.concatenate([y_q, y_r]).T, jnp.concatenate([s_q, s_r]).T
  else:
    jy, js = central(lambda dx: f(*split(dx, sizes)), sum(sizes), dt, eps)
    jy, js = jy.T, js.T
  nx = 2 * m.nv + m.na
  return jy[:, :nx], jy[:, nx:], js[:, :nx], js[:, nx:]


def _batched(m: Model, d: Data, eps, chunk, block: int):
  """transition_jacobians of a batch of states (every Data field with the same leading
  batch axes as qpos), `block` states at a time: each output with those leading axes."""
  batch = d.qpos.shape[:-1]
  for path, x in jax.tree_util.tree_flatten_with_path(d)[0]:
    if x.shape[:len(batch)] != batch:
      raise ValueError(f"transition_jacobians: a batch of Data needs every field batched; "
                       f"d{jax.tree_util.keystr(path)} has shape {x.shape}, qpos {d.qpos.shape}")
  if len(batch) > 1:  # the size, not -1: a field may have no entries (na = 0)
    size = int(np.prod(batch))
    flat = jax.tree.map(lambda x: x.reshape((size,) + x.shape[len(batch):]), d)
    out = _batched(m, flat, eps, chunk, block)
    return jax.tree.map(lambda y: y.reshape(batch + y.shape[1:]), out)
  n = batch[0]
  free = _contact_free(m) if eps is None else None

  def full(db):
    return jax.vmap(lambda di: transition_jacobians(m, di, eps, chunk))(db)

  def states(db):
    """A block of states' Jacobians: without the contact rows where no state of the block
    has any (a real branch: the predicate is the block's, outside the vmap)."""
    if free is None:
      return full(db)
    quiet = jnp.all(jax.vmap(lambda di: _contacts_inactive(m, di))(db))
    return jax.lax.cond(quiet, jax.vmap(lambda di: transition_jacobians(
      free, di.replace(**constraint_fields(free, di.qvel.dtype)), eps, chunk)), full, db)

  if n <= block:
    return states(d)
  groups = -(-n // block)
  pad = groups * block - n

  def blocked(x):
    x = jnp.concatenate([x, jnp.repeat(x[-1:], pad, axis=0)]) if pad else x
    return x.reshape((groups, block) + x.shape[1:])

  out = jax.lax.map(states, jax.tree.map(blocked, d))
  return jax.tree.map(lambda y: y.reshape((groups * block,) + y.shape[2:])[:n], out)


# Sensors that read contacts, constraint forces or collision distances: a model with one keeps
# its contact rows in every block (their values or tangents could differ without them).
_CONTACT_SENSORS = frozenset({
  SensorType.TOUCH, SensorType.FORCE, SensorType.TORQUE, SensorType.JOINTLIMITFRC,
  SensorType.TENDONLIMITFRC, SensorType.GEOMDIST, SensorType.GEOMNORMAL,
  SensorType.GEOMFROMTO, SensorType.CONTACT, SensorType.TACTILE, SensorType.PLUGIN,
  SensorType.USER})


def _contact_free(m: Model) -> Model | None:
  """`m` with its contacts disabled, for a block of states with no contact rows (every geom
  pair out of reach), or None where that could change the Jacobians.

  Rows absent at a state carry no force and no tangent, so without their slots the step has
  the same solution (to the solver's tolerance) and the same implicit derivative; the
  variant skips their collision, rows and tangents. Kept (None):
  no contact slots, capped contacts, sensors in _CONTACT_SENSORS, PGS, unrolled
  derivatives, noslip, grad smoothing (SATISFIED rows carry tangents), RK4 (later stages
  solve at other states), adhesion (geoms, pairs or actuators: forces outside the rows),
  sleep and fwdinv."""
  o = m.opt
  plan = collision_plan(m)
  if (plan["ncon"] == 0 or plan["capped"] is not None
      or any(int(t) in _CONTACT_SENSORS for t in np.asarray(m.sensor_type))
      or o.solver == Solver.PGS or o.grad != "implicit" or o.noslip_iterations
      or o.grad_smoothing or o.grad_smoothing_friction or o.integrator == Integrator.RK4
      or m.flg_adhesion or np.any(np.asarray(m.actuator_trntype) == TrnType.BODY)
      or o.enabled(EnableBit.SLEEP) or o.enabled(EnableBit.FWDINV)):
    return None
  return m.replace(opt=o.replace(disableflags=o.disableflags | DisableBit.CONTACT))


def _contacts_inactive(m: Model, d: Data) -> jax.Array:
  """() bool: every candidate geom pair of `m` at `d` is out of reach, so that the step from
  `d` has no contact row. Kinematics and the broad phase only: no narrow phase, so that
  blocks in contact pay little for the test (box_stack, box-box pairs: a whole collision
  pass cost them 6%)."""
  return all_out_of_reach(m, kinematics(m, d))


def split(x, sizes):
  """x (..., sum(sizes)) cut into consecutive pieces of those sizes on its last axis."""
  return tuple(jnp.split(x, np.cumsum(sizes)[:-1], axis=-1))


def tangents(g, zeros, chunk: int | None, aux: bool = False):
  """g's tangent map at `zeros` applied to each basis direction of its concatenated
  arguments: (outputs' tangents, one row per direction), g linearized once. aux: g returns
  (outputs, aux) and so does this, with aux's value."""
  out = jax.linearize(g, *zeros, has_aux=aux)
  tangent = out[1]
  sizes = [z.shape[0] for z in zeros]
  n = sum(sizes)
  apply = jax.vmap(lambda e: tangent(*split(e, sizes)))
  if chunk is None or chunk >= n:
    res = apply(jnp.eye(n, dtype=zeros[0].dtype))
  else:
    groups = -(-n // chunk)
    chunk = -(-n // groups)  # equal groups: the least padding for that many
    basis = jnp.eye(groups * chunk, n, dtype=zeros[0].dtype).reshape(groups, chunk, n)
    res = jax.tree.map(lambda t: t.reshape((groups * chunk,) + t.shape[2:])[:n],
                       jax.lax.map(apply, basis))
  return (res, out[2]) if aux else res


def central(f, n: int, dt, eps):
  """Centred differences of f at 0 (n,), every column in one vmapped batch: each output
  (a pytree of arrays) with one row per direction."""
  ex = jnp.eye(n, dtype=dt) * eps
  out = jax.vmap(f)(jnp.concatenate([ex, -ex]))
  return jax.tree.map(lambda y: (y[:n] - y[n:]) / (2 * eps), out)
