"""Transition Jacobians (mjd_transitionFD's layout), exact by forward-mode autodiff.

MuJoCo C offers only finite differences (mjd_transitionFD); here the same matrices come
from forward mode through one `step`, so they are exact for the step as simulated (with the
solver's implicit derivative: see solver.py) and batch with `vmap` over states.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmj.dynamics.forward import step
from jaxmj.smooth.qpos import differentiate_pos, integrate_pos
from jaxmj.types import Data, Model


def _transition(m: Model, d: Data, ref=None):
  """(dx, du) -> (next-state tangent difference, sensordata) of one step from `d`.

  dx: (2 nv + na,) tangent of the integration state (qpos as a velocity in qpos's tangent
  space, qvel, act); du: (nu,). The next qpos is compared with `ref`, the nominal next qpos
  (None: the output's own value, held constant, which is the nominal one for derivatives at
  dx = du = 0), by mj_differentiatePos, as mjd_transitionFD does.
  """
  nv, na = m.nv, m.na

  def f(dx, du):
    qpos = integrate_pos(m, d.qpos, dx[:nv], 1.0)
    d1 = d.replace(qpos=qpos, qvel=d.qvel + dx[nv:2 * nv], act=d.act + dx[2 * nv:2 * nv + na],
                   ctrl=d.ctrl + du)
    new = step(m, d1)
    q_ref = jax.lax.stop_gradient(new.qpos) if ref is None else ref
    dq = differentiate_pos(m, 1.0, q_ref, new.qpos)
    return jnp.concatenate([dq, new.qvel, new.act]), new.sensordata

  return f


def transition_jacobians(m: Model, d: Data, eps: float | None = None, chunk: int = 1):
  """mjd_transitionFD's matrices for one step from `d`, in its layout.

  Returns (A, B, C, D) with  d x_next = A dx + B du,  d sensordata = C dx + D du:
    A: (2 nv + na, 2 nv + na), B: (2 nv + na, nu), C: (nsensordata, 2 nv + na),
    D: (nsensordata, nu).
  x is the integration state in its tangent space: qpos perturbed by mj_integratePos (so a
  free joint contributes 6 columns, not 7), then qvel, then act. sensordata is the one the
  step computes (at the state before integration), as in mjd_transitionFD.

  eps None (default): exact, by forward mode: the step is linearized once (jax.linearize:
  one primal pass) and the tangent map applied to the basis `chunk` columns at a time
  (lax.map over groups, vmap within; static). chunk=1 is the fastest measured on the CPU
  (scripts/bench_transition.py): pushing all 2 nv + na + nu tangents at once, as jax.jacfwd
  does, multiplies every intermediate by their number and was 4-6x slower. eps > 0:
  centred finite differences of the same function with that step (mjd_transitionFD with
  flg_centered), for comparison or where a derivative is not wanted through a non-smooth
  event. One world; `jax.vmap` over a batch of Data (with `in_axes=(None, 0)`) batches it,
  and everything jits.
  """
  nx = 2 * m.nv + m.na
  dt = d.qvel.dtype
  x0, u0 = jnp.zeros(nx, dt), jnp.zeros(m.nu, dt)
  if eps is None:
    return _forward_mode(_transition(m, d), x0, u0, m.nsensordata, chunk)
  return _central(_transition(m, d, step(m, d).qpos), x0, u0, eps)


def _forward_mode(f, x0, u0, nsensor: int, chunk: int):
  """Jacobians of f at (x0, u0): f linearized once, its tangent map over the basis in
  groups of `chunk` directions."""
  nx, n = x0.shape[0], x0.shape[0] + u0.shape[0]
  _, tangent = jax.linearize(f, x0, u0)
  groups = -(-n // chunk)
  basis = jnp.eye(groups * chunk, n, dtype=x0.dtype).reshape(groups, chunk, n)
  ys, ss = jax.lax.map(jax.vmap(lambda e: tangent(e[:nx], e[nx:])), basis)
  # explicit sizes: a reshape with -1 is ambiguous when there are no sensors
  jy = ys.reshape(groups * chunk, nx)[:n].T
  js = ss.reshape(groups * chunk, nsensor)[:n].T
  return jy[:, :nx], jy[:, nx:], js[:, :nx], js[:, nx:]


def _central(f, x0, u0, eps):
  """Centred differences of f at (x0, u0), every column in one vmapped batch."""
  nx, nu = x0.shape[0], u0.shape[0]
  ex = jnp.eye(nx + nu, dtype=x0.dtype) * eps
  dxs = jnp.concatenate([ex, -ex])

  def g(e):
    return f(x0 + e[:nx], u0 + e[nx:])

  y, s = jax.vmap(g)(dxs)
  n = nx + nu
  jy = ((y[:n] - y[n:]) / (2 * eps)).T
  js = ((s[:n] - s[n:]) / (2 * eps)).T
  return jy[:, :nx], jy[:, nx:], js[:, :nx], js[:, nx:]
