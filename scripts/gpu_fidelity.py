"""Float32 trajectories on the default device (a GPU when there is one) held to MuJoCo C.

Throughput says nothing about whether the numbers are still MuJoCo's: on a GPU, float32
matrix products may round their inputs to TF32 unless asked not to (README, "Arithmetic
modes"), and XLA fuses and reorders differently than on a CPU. For each model this steps one
world from the same start (the model's initial state with a seeded qvel perturbation of
--qvel-noise) through --steps steps in MuJoCo C (float64, the reference), and in each engine
(float32): jaxmj exact and fast, MJX (`impl="jax"`), on the default device, and those of
--cpu-engines (jaxmj exact) on the CPU too.
It prints the largest |qpos - MuJoCo's qpos| over the model's coordinates after each of
--report steps, so that device and CPU rows of the same engine can be compared: a device row
far above its CPU row is the device's arithmetic, not the engine's.

  python scripts/gpu_fidelity.py [MODEL ...] [--steps 100] [--report 1 10 100] [--engines ...]
  (default models: MJX's humanoid and box_pile; scripts/gpu_suite.sh runs it)
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (where MJX's test models are)

import jaxmj  # noqa: E402


def start(mm, noise: float, seed: int):
  import mujoco

  md = mujoco.MjData(mm)
  md.qvel[:] = np.random.default_rng(seed).normal(0, noise, mm.nv)
  return md


def reference(mm, md, steps: int) -> np.ndarray:
  """MuJoCo C's qpos after each step, (steps, nq), float64."""
  import mujoco

  out = np.empty((steps, mm.nq))
  for t in range(steps):
    mujoco.mj_step(mm, md)
    out[t] = md.qpos
  return out


def jaxmj_run(path, qvel, steps, arithmetic, device, precision=None) -> np.ndarray:
  """precision: None for JAX's default matrix-product precision (TF32 on recent NVIDIA cards),
  or a `jax.default_matmul_precision` name ("highest": full float32 products)."""
  m = jaxmj.Model.from_xml_path(path)
  m = m.replace(opt=m.opt.replace(arithmetic=arithmetic))
  d = jaxmj.make_data(m).replace(qvel=jnp.asarray(qvel, jnp.float32))
  with jax.default_matmul_precision(precision):
    return qpos_per_step(jaxmj.step, *jax.device_put((m, d), device), steps)


def mjx_run(mm, qvel, steps, device) -> np.ndarray:
  from mujoco import mjx

  m = mjx.put_model(mm, impl="jax", device=device)
  d = mjx.make_data(m, impl="jax", device=device)
  d = d.replace(qvel=jax.device_put(jnp.asarray(qvel, jnp.float32), device))
  return qpos_per_step(mjx.step, m, d, steps)


def qpos_per_step(step, m, d, steps: int) -> np.ndarray:
  """qpos after each of `steps` calls of jit(step) from d, (steps, nq), as float64."""
  step = jax.jit(step)
  out = []
  for _ in range(steps):
    d = step(m, d)
    out.append(d.qpos)
  return np.asarray(jnp.stack(out), np.float64)


def main() -> None:
  p = argparse.ArgumentParser(description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
  p.add_argument("models", nargs="*")
  p.add_argument("--steps", type=int, default=100)
  p.add_argument("--report", type=int, nargs="+", default=[1, 10, 100])
  p.add_argument("--qvel-noise", type=float, default=0.01)
  p.add_argument("--engines", nargs="+", default=["jaxmj", "jaxmj-fast", "mjx"],
                 choices=["jaxmj", "jaxmj-fast", "jaxmj-fast-hi", "mjx"],
                 help="jaxmj-fast-hi: fast arithmetic under default_matmul_precision('highest')")
  p.add_argument("--cpu-engines", nargs="*", default=["jaxmj"],
                 help="engines also run on the CPU when the default device is not (compile time)")
  args = p.parse_args()
  import mujoco

  jax.config.update("jax_enable_x64", False)
  models = args.models or [bench._mjx_test_model("humanoid/humanoid.xml"),
                           "models/box_pile.xml"]
  devices = [("default", jax.devices()[0])]
  if jax.devices()[0].platform != "cpu":
    devices.append(("cpu", jax.devices("cpu")[0]))
  report = [t for t in args.report if t <= args.steps]
  print(f"jax {jax.__version__}, devices: {', '.join(f'{n}={d.device_kind}' for n, d in devices)}; "
        f"max |qpos - MuJoCo C (float64)| after steps {report}, float32")
  for path in models:
    mm = mujoco.MjModel.from_xml_path(path)
    md = start(mm, args.qvel_noise, 0)
    qvel = md.qvel.copy()
    ref = reference(mm, md, args.steps)
    name = os.path.splitext(os.path.basename(path))[0]
    for engine in args.engines:
      for dev_name, dev in devices:
        if dev_name == "cpu" and engine not in args.cpu_engines:
          continue
        t0 = time.time()
        try:
          if engine == "mjx":
            got = mjx_run(mm, qvel, args.steps, dev)
          else:
            mode = "fast" if "fast" in engine else "exact"
            got = jaxmj_run(path, qvel, args.steps, mode, dev,
                            "highest" if engine.endswith("-hi") else None)
        except Exception as e:  # noqa: BLE001  (report and go on: one engine may refuse a model)
          print(f"  {name:16s} {engine:13s} {dev_name:7s} failed: "
                f"{type(e).__name__}: {str(e)[:120]}")
          continue
        err = np.abs(got - ref).max(axis=1)
        cells = "  ".join(f"{err[t - 1]:.2e}" for t in report)
        print(f"  {name:16s} {engine:13s} {dev_name:7s} {cells}   ({time.time() - t0:.0f} s)",
              flush=True)


if __name__ == "__main__":
  main()
