"""Lowering and compile time, and HLO size, of the primitive colliders, one at a time.

Each collider is jitted alone on one geom pair and vmapped over a batch of pairs (as the
collision driver runs it), at float64. For each it reports the lowering time
(`jax.jit(f).lower`), XLA's compile time (`.compile()`, wall, median of `--repeats` fresh
compilations with jax's caches cleared in between) and its process CPU time (the minimum: the
steadiest figure on a loaded machine), the number of StableHLO ops of the lowered module, the
number of HLO instructions after XLA's optimizations (fusion duplicates cheap ops into every
kernel that reads them, so this counts the work LLVM compiles) and the number of kernels
(instructions outside fused computations, each compiled by LLVM on its own). Run A/B
comparisons back to back and give the load (`uptime`) with them.

`--module PATH` measures the colliders of another copy of primitive.py (e.g. an older
revision saved to /tmp) instead of jaxmj's. `--model PATH` measures a whole vmapped
`jaxmj.step` of a model instead, with that collider table in the driver.

Usage:
  python scripts/compile_time.py [--pairs box-box capsule-box ...] [--batch 64]
      [--repeats 3] [--module PATH] [--model models/box_pile.xml]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import statistics
import time

import jax
import jax.numpy as jnp

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_enable_compilation_cache", False)

from jaxmj.types import GeomType  # noqa: E402


def load(path: str | None):
  if path is None:
    from jaxmj.collision import primitive

    return primitive
  spec = importlib.util.spec_from_file_location("primitive_under_test", path)
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  return mod


def _name(key) -> str:
  return "-".join(GeomType(t).name.lower() for t in key)


def _args(mod, batch: int | None):
  shape = () if batch is None else (batch,)
  frame = lambda: mod.GeomFrame(
    pos=jnp.zeros(shape + (3,)), mat=jnp.broadcast_to(jnp.eye(3), shape + (3, 3)),
    size=jnp.ones(shape + (3,)))
  return frame(), frame(), jnp.zeros(shape)


def _count_stablehlo(text: str) -> int:
  return sum(1 for line in text.splitlines() if re.search(r"=\s*\"?stablehlo\.", line)
             or re.search(r"^\s*stablehlo\.", line))


def _count_hlo(text: str) -> int:
  return sum(1 for line in text.splitlines() if re.match(r"\s*(ROOT\s+)?%?[\w.\-]+\s*=", line))


_TRIVIAL = {"parameter", "constant", "bitcast", "tuple", "get-tuple-element"}


def kernel_lines(text: str):
  """The lines of a compiled module's text (`compiled.as_text()`) whose instructions are
  kernels: outside fused computations and reducers, and not mere plumbing. Each becomes a
  kernel (or a loop, copy, ...) that XLA:CPU emits and optimizes with LLVM on its own, at a
  fixed cost each besides the cost of its instructions."""
  reducers = set(re.findall(r"to_apply=%?([\w.\-]+)", text))
  fused = False
  for line in text.splitlines():
    if line and not line.startswith(" ") and line.rstrip().endswith("{"):
      name = re.match(r"(ENTRY\s+)?%?([\w.\-]+)", line).group(2)
      fused = name in reducers or name.startswith(("fused", "wrapped"))
      continue
    m = re.match(r"\s*(ROOT\s+)?%?[\w.\-]+\s*=\s*[^ ]+\s+([\w\-]+)\(", line)
    if m and not fused and m.group(2) not in _TRIVIAL:
      yield line


def _count_kernels(text: str) -> int:
  return sum(1 for _ in kernel_lines(text))


def measure(fn, args, repeats: int) -> dict:
  lows, comps, cpus = [], [], []
  for _ in range(repeats):
    jax.clear_caches()  # else jax hands back the executable compiled in the last round
    f = jax.jit(fn)
    t0 = time.perf_counter()
    lowered = f.lower(*args)
    t1 = time.perf_counter()
    c1 = time.process_time()
    compiled = lowered.compile()
    cpus.append(time.process_time() - c1)
    t2 = time.perf_counter()
    lows.append(t1 - t0)
    comps.append(t2 - t1)
  return {"lower_s": statistics.median(lows), "compile_s": statistics.median(comps),
          "compile_cpu_s": min(cpus),
          "stablehlo_ops": _count_stablehlo(lowered.as_text()),
          "hlo_ops": _count_hlo(compiled.as_text()), "kernels": _count_kernels(compiled.as_text())}


def step_measure(path: str, mod, batch: int, repeats: int) -> dict:
  """The same measures for a whole vmapped `jaxmj.step` of the model at `path`, with the
  colliders of `mod` in the collision driver's table."""
  import jaxmj
  from jaxmj.collision import primitive

  primitive.COLLIDERS = mod.COLLIDERS  # the driver reads the table when it traces
  m = jaxmj.Model.from_xml_path(path)
  d = jax.vmap(lambda _: jaxmj.make_data(m))(jnp.arange(batch))
  return measure(jax.vmap(jaxmj.step, in_axes=(None, 0)), (m, d), repeats)


def main():
  p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  p.add_argument("--pairs", nargs="*", help="e.g. box-box capsule-box (default: all)")
  p.add_argument("--batch", type=int, default=64)
  p.add_argument("--repeats", type=int, default=3)
  p.add_argument("--module", help="path of a primitive.py to measure instead of jaxmj's")
  p.add_argument("--model", help="measure a whole vmapped step of this MJCF model instead")
  a = p.parse_args()
  mod = load(a.module)
  if a.model:
    r = step_measure(a.model, mod, a.batch, a.repeats)
    print(f"{a.model} step vmap{a.batch}: lower {r['lower_s']:.2f} s, compile "
          f"{r['compile_s']:.2f} s (CPU {r['compile_cpu_s']:.2f} s), {r['stablehlo_ops']} "
          f"StableHLO ops, {r['hlo_ops']} HLO instructions, {r['kernels']} kernels")
    return
  keys = [k for k in mod.COLLIDERS if a.pairs is None or _name(k) in a.pairs]
  print(f"{'pair':<18} {'mode':<8} {'lower s':>8} {'compile s':>9} {'cpu s':>6} "
        f"{'stablehlo':>9} {'hlo':>6} {'kernels':>7}")
  for key in keys:
    fn = mod.COLLIDERS[key][0]
    for mode, f, args in (("single", fn, _args(mod, None)),
                          (f"vmap{a.batch}", jax.vmap(fn), _args(mod, a.batch))):
      r = measure(f, args, a.repeats)
      print(f"{_name(key):<18} {mode:<8} {r['lower_s']:>8.3f} {r['compile_s']:>9.3f} "
            f"{r['compile_cpu_s']:>6.2f} "
            f"{r['stablehlo_ops']:>9d} {r['hlo_ops']:>6d} {r['kernels']:>7d}", flush=True)


if __name__ == "__main__":
  main()
