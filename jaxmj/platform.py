"""Which platform's form of a pass a trace takes.

A few passes have two forms that compute the same quantity: one that XLA:CPU runs fast
(scatters, loops with early exits, row products) and one for GPUs and TPUs (gathers that fuse,
unrolled loops whose trip count the device need not read back, fused level arithmetic).
`lax.platform_dependent` would pick one at lowering, when the target is known, but it traces
and lowers every form and the compiler drops the others: an eighth of humanoid_floor's step
trace, a quarter of a rollout gradient's, and XLA's compile of MJX's humanoid 12% longer with
them (docs/speed.md, "Compile time"). So the form is chosen at trace time, by the process's
default backend, which is fixed once JAX has started; a cached trace therefore always holds
the same form.

Every form runs on every platform, so a program lowered for another platform than the
default one (a GPU host jitting for its CPU devices, `jax.export` for another platform)
computes the same quantities, in that form's round-off and at that form's speed on the CPU
or the device. Scripts that lower for a GPU on a machine without one (scripts/gpu_hlo.py)
set `TRACE_FOR` before their first trace; nothing else should change it.
"""

from __future__ import annotations

from collections.abc import Callable

import jax

# the platform traces are made for ("cpu", "gpu", "tpu", ...); None: jax.default_backend()
TRACE_FOR: str | None = None


def _trace_platform() -> str:
  return TRACE_FOR or jax.default_backend()


def traces_for_cpu() -> bool:
  """Whether traces take the CPU's forms (see the module doc)."""
  return _trace_platform() == "cpu"


def traces_for_gpu() -> bool:
  """Whether traces are made for a GPU (forms that only a GPU runs well, e.g. a Pallas kernel;
  TPUs keep the other platforms' forms)."""
  return _trace_platform() == "gpu"


def by_platform(*args, cpu: Callable, default: Callable):
  """`cpu(*args)` where traces take the CPU's forms, else `default(*args)`: the choice of
  `lax.platform_dependent(*args, cpu=cpu, default=default)`, made at trace time."""
  return cpu(*args) if traces_for_cpu() else default(*args)


def materialized(x: jax.Array) -> jax.Array:
  """x written out once off the CPU: a value that XLA's GPU fusion would otherwise recompute
  inside every consumer's kernel, per output element. On an H200 (MJX's humanoid, 8192
  worlds) barriers on the tree passes' inputs and results (smooth/com.py) took mj_rne's
  kernels from 715 to 62 us a step and all of the step's from 2347 to 1708 us (docs/speed.md,
  "On a GPU", 2026-12-04 evening). XLA:CPU removes the barriers before fusing, so the CPU
  keeps x as is. Values unchanged."""
  return x if traces_for_cpu() else jax.lax.optimization_barrier(x)
