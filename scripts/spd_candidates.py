"""The Newton step's SPD solve on a GPU, three ways, one world's system vmapped over a batch:
which should jaxmj run there? Times each candidate's `jit(vmap(solve))` and counts its kernels.

On an H200 target the solve of MJX's humanoid (nv 27) is 46 of the scan body's 266 kernel
launches a step (`scripts/gpu_hlo.py --rollout 4 --scopes`: mj_solve/hessian_solve), the
largest single group. XLA fuses no two column steps of an elimination (each reads the previous
step's row and column at many positions, which XLA's GPU fusion will not recompute), so any
elimination written in jnp ops costs one or two kernels a column: Gauss-Jordan on sub-blocks of
2-9 columns (a rank-k update per sub-block) compiled to 55-62 kernels, not fewer (2026-12-01).
The candidates:
  unrolled   linalg.spd_solve as jaxmj ran it on GPUs for n <= 32 until 2026-12-04 (TPUs
             still do): the blocked elimination with every column step unrolled (46 kernels
             at nv 27)
  cholesky   linalg._cholesky_solve: cuSOLVER's potrf and cuBLAS's trsm (jaxmj's path above
             n = 32); at nv 27 the whole step ran 0.84x the unrolled one's speed on an H200
             (2026-11-28, SPD_UNROLL_MAX)
  pallas     one Triton kernel (jax.experimental.pallas) per world: Gauss-Jordan on the
             system padded to 32 x 32 in registers, mju_cholFactor's pivot floor (mindiag)
             and rank test, as the elimination (1 custom call and the padding's fusions; it
             compiles for an H200 without one, scripts/gpu_hlo.py's topology); on an H200
             (2026-12-04, batch 8192, n 27) 0.227 ms against the unrolled 0.328 ms, so it is
             jaxmj's GPU form since (linalg._gauss_jordan_solve)
Each is checked against a float64 solve of the same systems (SPD with a spread of eigenvalues
like the Newton Hessian's). Off a GPU (a rehearsal) the Pallas kernel runs interpreted.

  python scripts/spd_candidates.py [--batch 8192] [--n 27 48] [--calls 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from jaxmj import linalg  # noqa: E402
from jaxmj.constants import MINVAL  # noqa: E402


def pallas_solve(a: jax.Array, b: jax.Array, mindiag: float = MINVAL, interpret: bool = False):
  """(x, full_rank) of a x = b for one SPD a (n, n), n <= linalg.PALLAS_PAD; b (n,) or (n, k):
  the kernel jaxmj runs on a GPU (linalg._gauss_jordan_call), Triton or interpreted."""
  vec = b.ndim == 1
  x, ok = linalg._gauss_jordan_call(a, b[:, None] if vec else b, mindiag, interpret)
  return (x[:, 0] if vec else x), ok


def systems(batch: int, n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
  """(batch, n, n) SPD matrices with eigenvalues from 1e-2 to 1e3 and (batch, n) right sides."""
  rng = np.random.default_rng(seed)
  q, _ = np.linalg.qr(rng.standard_normal((batch, n, n)))
  eig = 10.0 ** rng.uniform(-2, 3, (batch, n))
  return (q * eig[:, None, :]) @ q.transpose(0, 2, 1), rng.standard_normal((batch, n))


def kernels(compiled) -> int | None:
  """Kernel count of a compiled GPU program (scripts/gpu_hlo.py's count), None off a GPU."""
  if jax.default_backend() != "gpu":
    return None
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  import gpu_hlo

  return gpu_hlo.analyse(compiled.as_text())["kernels"]


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  p.add_argument("--batch", type=int, default=8192)
  p.add_argument("--n", type=int, nargs="+", default=[27])
  p.add_argument("--calls", type=int, default=20)
  args = p.parse_args()
  interpret = jax.default_backend() != "gpu"
  candidates = {
    "unrolled": lambda a, b: linalg.spd_solve(a, b, unroll=True)[0],
    "cholesky": lambda a, b: linalg._cholesky_solve(a, b[:, None], MINVAL)[0][:, 0],
    "pallas": lambda a, b: pallas_solve(a, b, interpret=interpret)[0],
  }
  print(f"{jax.devices()[0].device_kind}, batch {args.batch}, float32"
        + (" (Pallas interpreted: not a GPU)" if interpret else ""))
  print(f"{'n':>3} {'candidate':10} {'ms/call':>9} {'kernels':>7} {'compile s':>9} "
        f"{'max |x - x64| / max |x64|':>26}")
  for n in args.n:
    a64, b64 = systems(args.batch, n)
    x64 = np.linalg.solve(a64, b64[..., None])[..., 0]
    a, b = jnp.asarray(a64, jnp.float32), jnp.asarray(b64, jnp.float32)
    for name, solve in candidates.items():
      if name == "pallas" and n > linalg.PALLAS_PAD:
        continue
      t = time.perf_counter()
      try:
        compiled = jax.jit(jax.vmap(solve)).lower(a, b).compile()
      except Exception as e:  # noqa: BLE001  (one GPU run: report, go on to the next)
        print(f"{n:3d} {name:10} failed: {type(e).__name__}: {str(e)[:300]}", flush=True)
        continue
      compile_s = time.perf_counter() - t
      x = compiled(a, b).block_until_ready()
      times = []
      for _ in range(args.calls):
        t = time.perf_counter()
        compiled(a, b).block_until_ready()
        times.append(time.perf_counter() - t)
      err = np.max(np.abs(np.asarray(x, np.float64) - x64)) / np.max(np.abs(x64))
      count = kernels(compiled)
      print(f"{n:3d} {name:10} {np.median(times) * 1e3:9.3f} {count if count else '-':>7} "
            f"{compile_s:9.1f} {err:26.2e}", flush=True)


if __name__ == "__main__":
  main()
