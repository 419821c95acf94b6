"""Benchmark jaxmj against MJX (MuJoCo's own JAX implementation) in one process.

Both engines load the same MJCF file and run on JAX's default backend (CPU or GPU);
each model/engine pair is measured as follows:

  compile s      wall time of `jax.jit(f).lower(m, d).compile()` (tracing + XLA compile),
                 where f is the batched rollout `vmap(scan(step, T))` at the first batch
                 size (`compile s @B`), and where f is one `step` at batch 1 (`step compile s`).
  batch-1 ms     median wall time of one call of the compiled `step` on a single world,
                 `block_until_ready` included, after a warm-up call.
  steps/s @B     world-steps per second of the compiled rollout: B worlds times T steps
                 divided by the median wall time of a rollout call (after a warm-up call).
                 Every world starts from the model's initial state with a small random
                 qvel perturbation (std 0.01), so worlds differ; controls are zero.

The `jaxmj/mjx` row divides jaxmj's number by MJX's in every column, so for the time
columns (compile, batch-1) a ratio < 1 means jaxmj is faster, and for the throughput
columns (steps/s) a ratio > 1 means jaxmj is faster.

Notes:
  * MJX is mujoco-mjx's pure-JAX implementation (`impl="jax"`, passed explicitly so that a
    GPU does not switch it to Warp). mujoco-mjx 3.17 runs models compiled by mujoco 4.0
    as-is, with one workaround: `put_model` refuses models with geom type pairs it has no
    collision function for (e.g. ellipsoid-box) even when contacts are disabled, so for
    contact-disabled models the script zeroes geom_contype/geom_conaffinity on the MjModel
    first. With contacts disabled MJX allocates no contacts either way, so this changes
    neither the dynamics nor the work done. If MJX cannot be imported or fails on a model,
    the output says why.
  * `--no-contact` makes both engines load the same patched copy of each file, with
    `<option><flag contact="disable"/></option>` added. The copy is written next to the
    original (so relative includes and asset paths resolve as before) and deleted after.
  * XLA_FLAGS gets `--xla_cpu_enable_concurrency_optimized_scheduler=false` (appended
    before jax is imported): without it, batched dense Cholesky (cho_factor under vmap) on
    XLA:CPU has been seen to deadlock at batch 1024. It applies to both engines equally.

Usage:
  python scripts/bench.py [MODELS...] [--batches 64 1024] [--steps 100]
      [--engines jaxmj mjx] [--x64] [--no-contact] [--json PATH]
"""

import os

_XLA_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler=false"
os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_XLA_FLAG}".strip()

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib.metadata  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import xml.etree.ElementTree as ET  # noqa: E402

import jax  # noqa: E402

DEFAULT_MODELS = ["models/pendulum.xml", "models/humanoid.xml"]
QVEL_NOISE = 0.01
LATENCY_MIN_CALLS = 20
LATENCY_MIN_SECONDS = 1.0
ROLLOUT_REPEATS = 3


# ---------------------------------------------------------------------------- engines


def _import_mjx():
  """Imports mujoco.mjx, hiding its 'Failed to import warp' prints."""
  with contextlib.redirect_stdout(io.StringIO()):
    from mujoco import mjx
  return mjx


def load_jaxmj(path):
  import jaxmj

  m = jaxmj.Model.from_xml_path(path)
  return m, jaxmj.make_data(m), jaxmj.step


def load_mjx(path):
  import mujoco

  mjx = _import_mjx()
  mj_model = mujoco.MjModel.from_xml_path(path)
  if mj_model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CONTACT:
    # put_model rejects geom type pairs it cannot collide even when contacts are disabled;
    # MJX then collides nothing (ncon = 0) anyway, so clearing the masks changes nothing.
    mj_model.geom_contype[:] = 0
    mj_model.geom_conaffinity[:] = 0
  mx = mjx.put_model(mj_model, impl="jax")
  return mx, mjx.make_data(mx, impl="jax"), mjx.step


ENGINES = {"jaxmj": load_jaxmj, "mjx": load_mjx}


def engine_version(name):
  """The engine's version string; raises if it cannot be imported or lacks the API."""
  if name == "jaxmj":
    import jaxmj

    for api in ("Model", "make_data", "step"):
      getattr(jaxmj, api)
    return getattr(jaxmj, "__version__", "source tree")
  import mujoco

  _import_mjx()
  return f"mujoco {mujoco.__version__}, mujoco-mjx {importlib.metadata.version('mujoco-mjx')}"


def _reason(e):
  return f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"


# ---------------------------------------------------------------------------- models


@contextlib.contextmanager
def model_file(path, no_contact):
  """Yields `path`, or with `no_contact` a temporary contact-disabled copy beside it."""
  if not no_contact:
    yield path
    return
  tree = ET.parse(path)
  root = tree.getroot()
  option = root.find("option")
  if option is None:
    option = ET.SubElement(root, "option")
  flag = option.find("flag")
  if flag is None:
    flag = ET.SubElement(option, "flag")
  flag.set("contact", "disable")
  directory = os.path.dirname(os.path.abspath(path))
  with tempfile.NamedTemporaryFile(
    "wb", suffix=".xml", prefix=".bench_nocontact_", dir=directory, delete=False
  ) as f:
    tree.write(f)
  try:
    yield f.name
  finally:
    os.remove(f.name)


def perturbed_batch(d, batch, key):
  """`batch` copies of `d` with independent N(0, QVEL_NOISE^2) added to qvel."""
  noise = QVEL_NOISE * jax.random.normal(key, (batch, d.qvel.shape[-1]), d.qvel.dtype)
  return jax.vmap(lambda n: d.replace(qvel=d.qvel + n))(noise)


# ---------------------------------------------------------------------------- timing


def compile_fn(fn, *args):
  """(seconds, executable) for tracing and compiling `fn` at `args`.

  JAX's in-memory caches are cleared first, so no earlier trace or compilation (of this
  engine or the other) is reused; the persistent compilation cache is off (see `main`).
  """
  jax.clear_caches()
  t0 = time.perf_counter()
  compiled = jax.jit(fn).lower(*args).compile()
  return time.perf_counter() - t0, compiled


def wall_time(fn, *args):
  t0 = time.perf_counter()
  jax.block_until_ready(fn(*args))
  return time.perf_counter() - t0


def latency(compiled, m, d):
  """Median seconds of one call, after a warm-up call."""
  wall_time(compiled, m, d)
  samples = []
  while len(samples) < LATENCY_MIN_CALLS or sum(samples) < LATENCY_MIN_SECONDS:
    samples.append(wall_time(compiled, m, d))
  return statistics.median(samples)


def make_rollout(step, steps):
  """vmap over worlds of a `steps`-long scan of `step`; returns the final states."""

  def rollout(m, d):
    d, _ = jax.lax.scan(lambda d, _: (step(m, d), None), d, None, length=steps)
    return d

  return jax.vmap(rollout, in_axes=(None, 0))


def measure(load, path, batches, steps):
  """All numbers for one engine on one model (see module docstring)."""
  m, d, step = load(path)
  step_compile_s, step_exe = compile_fn(step, m, d)
  result = {
    "step_compile_s": step_compile_s,
    "batch1_ms": 1e3 * latency(step_exe, m, d),
    "rollout": {},
  }
  rollout = make_rollout(step, steps)
  for batch in batches:
    d0 = perturbed_batch(d, batch, jax.random.PRNGKey(batch))
    compile_s, exe = compile_fn(rollout, m, d0)
    wall_time(exe, m, d0)
    seconds = statistics.median(wall_time(exe, m, d0) for _ in range(ROLLOUT_REPEATS))
    result["rollout"][str(batch)] = {"compile_s": compile_s, "steps_per_s": batch * steps / seconds}
  return result


def warm_up_jax():
  """Pays JAX's one-time backend and lowering setup before any engine is timed."""
  f = jax.vmap(lambda x: jax.lax.scan(lambda c, _: (c + 1.0, None), x, None, length=2)[0])
  jax.block_until_ready(jax.jit(f)(jax.numpy.zeros(2)))


# ---------------------------------------------------------------------------- report


def columns(batches):
  return ["model", "engine", f"compile s @{batches[0]}", "step compile s", "batch-1 ms"] + [
    f"steps/s @{b}" for b in batches
  ]


def row_values(result, batches):
  """Numeric cells of one result, in `columns` order after model and engine."""
  rollout = result["rollout"]
  return [
    rollout[str(batches[0])]["compile_s"],
    result["step_compile_s"],
    result["batch1_ms"],
  ] + [rollout[str(b)]["steps_per_s"] for b in batches]


def ratio_rows(results, batches):
  """jaxmj/mjx cell ratios for every model where both engines ran."""
  by_key = {(r["model"], r["engine"]): r for r in results if "error" not in r}
  ratios = []
  for model in dict.fromkeys(r["model"] for r in results):
    ours, theirs = by_key.get((model, "jaxmj")), by_key.get((model, "mjx"))
    if ours and theirs:
      pairs = zip(row_values(ours, batches), row_values(theirs, batches), strict=True)
      ratios.append({"model": model, "ratios": [a / b for a, b in pairs]})
  return ratios


def format_table(results, ratios, batches):
  """Aligned text table: each model's engine rows, then its ratio row; failures below."""
  ratio_by_model = {x["model"]: x["ratios"] for x in ratios}
  rows, failures = [columns(batches)], []
  for model in dict.fromkeys(r["model"] for r in results):
    for r in (r for r in results if r["model"] == model):
      if "error" in r:
        failures.append(f"{r['engine']} on {model}: failed ({r['error']})")
      else:
        cells = [f"{v:.3g}" if v < 1e3 else f"{v:,.0f}" for v in row_values(r, batches)]
        rows.append([model, r["engine"], *cells])
    if model in ratio_by_model:
      rows.append([model, "jaxmj/mjx", *(f"{v:.2f}x" for v in ratio_by_model[model])])
  widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
  lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
  return "\n".join(lines + failures)


def environment(engines):
  env = {
    "backend": jax.default_backend(),
    "devices": [str(dev) for dev in jax.devices()],
    "jax": jax.__version__,
    "x64": bool(jax.config.jax_enable_x64),
    "XLA_FLAGS": os.environ["XLA_FLAGS"],
  }
  for name in engines:
    try:
      env[name] = engine_version(name)
    except Exception as e:  # noqa: BLE001 - any import failure makes the engine unavailable
      env[name] = f"unavailable ({_reason(e)})"
  return env


# ---------------------------------------------------------------------------- main


def parse_args():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  p.add_argument("models", nargs="*", default=DEFAULT_MODELS)
  p.add_argument("--batches", nargs="+", type=int, default=[64, 1024])
  p.add_argument("--steps", type=int, default=100, help="rollout length T")
  p.add_argument("--engines", nargs="+", choices=list(ENGINES), default=list(ENGINES))
  p.add_argument("--x64", action="store_true", help="enable float64 (jax_enable_x64)")
  p.add_argument(
    "--no-contact",
    action="store_true",
    help="load contact-disabled copies of the models (both engines)",
  )
  p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
  return p.parse_args()


def main():
  args = parse_args()
  jax.config.update("jax_enable_x64", args.x64)
  jax.config.update("jax_enable_compilation_cache", False)
  start = time.perf_counter()
  env = environment(args.engines)
  for key, value in env.items():
    print(f"{key}: {value}")
  print(
    f"(the XLA:CPU scheduler flag works around a batched-Cholesky deadlock; it applies "
    f"to both engines)\nrollout T={args.steps}, batches={args.batches}, "
    f"no_contact={args.no_contact}\n",
    flush=True,
  )
  warm_up_jax()

  available = [e for e in args.engines if not env[e].startswith("unavailable")]
  results = []
  for path in args.models:
    model = os.path.splitext(os.path.basename(path))[0]
    with model_file(path, args.no_contact) as file:
      for engine in available:
        print(f"measuring {engine} on {path} ...", flush=True)
        try:
          result = measure(ENGINES[engine], file, args.batches, args.steps)
        except Exception as e:  # noqa: BLE001 - report the failure, keep benchmarking
          result = {"error": _reason(e)}
        results.append({"model": model, "path": path, "engine": engine, **result})

  ratios = ratio_rows(results, args.batches)
  print()
  print(format_table(results, ratios, args.batches))
  for name in args.engines:
    if name not in available:
      print(f"{'MJX' if name == 'mjx' else name}: {env[name]}")
  print(
    f"\nratio row = jaxmj / mjx: compile and batch-1 < 1 means jaxmj faster; "
    f"steps/s > 1 means jaxmj faster.\ntotal time {time.perf_counter() - start:.0f} s"
  )
  if args.json:
    report = {
      "env": env,
      "config": vars(args),
      "columns": columns(args.batches),
      "results": results,
      "ratios": ratios,
    }
    with open(args.json, "w") as f:
      json.dump(report, f, indent=2)


if __name__ == "__main__":
  main()
