"""Benchmark jaxmj against MJX (MuJoCo's own JAX implementation) and MuJoCo C in one run.

The engines load the same MJCF file; jaxmj and MJX run on JAX's default backend (CPU or
GPU), MuJoCo C on the CPU (float64, `mujoco.rollout` with one thread per core for
batches; batch-1 ms is one `mj_step`; it compiles nothing, so its compile cells are empty).
Each (model, engine) pair is measured in its own fresh Python process, so compile times
do not depend on which engine ran first, and one engine failing or hanging cannot stop
the rest. What is measured:

  compile s @B    wall time of `jax.jit(rollout).lower(m, d).compile()` (tracing + XLA
                  compile) for the batched rollout `vmap(scan(step, T))` at the first batch
                  size B; the JSON has it for every batch size.
  step compile s  the same for one `step` on a single world.
  (cpu s)         the compile's process CPU time (XLA's threads summed): on a machine
                  other processes load, the figure to compare.
  batch-1 ms      median wall time of one call of the compiled `step` on a single world,
                  `block_until_ready` included, after a warm-up call, on the same Data
                  every call.
  batch-1 loop ms a user's loop: `d = step(m, d)` fed back, the median over chunks of
                  LOOP_CHUNK calls of a chunk's wall time per call, blocking at each
                  chunk's end only (JAX dispatches asynchronously, as a user's loop runs).
                  It differs from batch-1 ms where handing a step its own output back
                  costs more or less than the same input again (jit compares each call's
                  argument structure with the compiled one's). MuJoCo C has none: its
                  `mj_step` already runs on its own output.
  steps/s @B      world-steps per second of the compiled rollout: B worlds times T steps
                  divided by the median wall time of 3 rollout calls (after a warm-up call);
                  `*` marks a median of fewer calls, when the measurement stalled (below).
                  Every world starts from the model's initial state with a small random
                  qvel perturbation (std 0.01), so worlds differ; controls are zero.
  others          (printed as each measurement ends, JSON `others_cores`) the CPU cores
                  other processes kept busy on average meanwhile, from /proc/stat (Linux,
                  --jobs 1): such a measurement is made again (`--remeasure N`, default
                  once) and the less loaded one kept; the markdown names the rows still
                  measured while it was at least 0.25, whose wall times a shared machine
                  has stretched.

Engine `jaxmj-fast` is jaxmj with opt.arithmetic="fast" (README, "Arithmetic modes"); its
ratio rows are `jaxmj-fast/mjx` and `jaxmj-fast/mujoco`.

The `jaxmj/mjx` and `jaxmj/mujoco` rows divide jaxmj's number by the other engine's in
every column: for the time columns (compile, batch-1) a ratio < 1 means jaxmj is faster;
for the throughput columns (steps/s) a ratio > 1 means jaxmj is faster.

Notes:
  * The run's environment (printed, the JSON's `env`, the markdown's last line) names the host
    CPU (model, logical cores, widest vector extension) beside the backend and versions: on
    the CPU the engines' ratio depends on the machine, not only on the code.
  * MJX is mujoco-mjx's pure-JAX implementation (`impl="jax"`, passed explicitly so that a
    GPU does not switch it to Warp). mujoco-mjx 3.17 runs models compiled by mujoco 4.0
    as-is, with one workaround: `put_model` refuses geom type pairs it has no collision
    function for (e.g. ellipsoid-box) even when contacts are disabled, so for
    contact-disabled models the script zeroes geom_contype/geom_conaffinity on the MjModel
    first. With contacts disabled MJX allocates no contacts either way, so this changes
    neither the dynamics nor the work done. If MJX cannot be imported, the output says
    "MJX: unavailable (<reason>)" and jaxmj is still measured.
  * `--no-contact` makes both engines load the same patched copy of each file, with
    `<option><flag contact="disable"/></option>` added. The copy is written next to the
    original (so relative includes and asset paths resolve as before) and deleted after.
  * Hangs on XLA:CPU. jaxlib 0.10.x runs batched LAPACK calls (potrf/trsm under vmap, e.g.
    MJX's dense Cholesky) by queueing batch chunks on XLA's intra-op thread pool and
    blocking until they finish; when as many such calls run at once as the pool has
    threads (the pool has one per core, so 2 on a 2-core machine), every thread waits and
    nothing runs. MJX at batch 1024 hits this on small machines; jaxlib >= 0.11.1 builds
    without that path. XLA_FLAGS gets `--xla_cpu_enable_concurrency_optimized_scheduler=false`
    (appended before jax is imported; it applies to both engines equally), which makes the
    hang rarer but does not rule it out, so a measurement that reports nothing for
    `--stall-timeout` seconds is killed and shown as stalled. Every compile and every rollout
    call (the warm-up call too) reports when it ends, so the limit (600 s by default, the same
    for every engine) applies to each alone: a hang never reports, while a slow call (box_pile
    at batch 1024 took 22 s per 10 steps for jaxmj and 45 s for MJX under load 14-18) is
    measured rather than killed.

Suites (`--suite gpu|cpu`; explicit MODELS, --batches, --steps or --engines still override):
  gpu   MJX's humanoid (mujoco/mjx/test_data/humanoid/humanoid.xml: iterations 1,
        ls_iterations 4), humanoid_floor, quadruped, box_pile, MJX's 04_humanoids scene
        (four humanoids, contacts capped by its max_contact_points and max_geom_pairs: 148
        constraint rows per world; 02_humanoids stood in while jaxmj ignored the caps and
        sized 04's rows at 15,452) and mesh_stack (mesh bodies resting on each other: GJK
        and EPA every step; it replaced mesh_drop, whose meshes rest apart on the plane's own
        collider, on 2026-12-02); jaxmj and MJX at batch 8192, T=100 (sized to finish in
        under 8 minutes on one GPU: 314 s on an H200 with 02_humanoids and mesh_drop; the
        suite at batch 4, T=2 on the 2-core CPU took 441 s with mesh_stack).
  cpu   the same models, mesh_drop and models/urdf/arm6.urdf (mesh links: 34 GJK/EPA pairs,
        rarely a few within reach; MJX refuses its cylinder-mesh pair) at batch 1024, T=20,
        with MuJoCo C (`mujoco.rollout`) beside them.
  Each suite also writes a markdown table (`--markdown`, default bench_<suite>.md beside the
  JSON) with jaxmj/MJX ratios, and records the HLO of the compiled single-world step
  (instructions, `while` loops, fusions) per engine.

Usage:
  python scripts/bench.py --suite gpu [--json PATH] [--markdown PATH]
  python scripts/bench.py [MODELS...] [--batches 64 1024] [--steps 100]
      [--engines jaxmj mjx] [--x64] [--no-contact] [--json PATH] [--stall-timeout S]
  python scripts/bench.py [MODELS...] --compile   (MJCF compile time, scripts/compile_bench.py)
"""

import os

_XLA_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler=false"
if _XLA_FLAG not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_XLA_FLAG}".strip()

import argparse  # noqa: E402
import contextlib  # noqa: E402
import importlib.metadata  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import queue  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import xml.etree.ElementTree as ET  # noqa: E402

import jax  # noqa: E402  (the parent process never initializes a backend)

# the contact models (humanoid_floor, quadruped, box_pile) run with contacts and limits on;
# `--batches 1 1024` gives steps/s on a single world and on 1024
DEFAULT_MODELS = ["models/pendulum.xml", "models/humanoid.xml", "models/humanoid_floor.xml",
                  "models/quadruped.xml", "models/box_pile.xml"]

def _mjx_test_model(name):
  """A model file shipped in mujoco's mjx/test_data (located through the installed package)."""
  import importlib.util

  spec = importlib.util.find_spec("mujoco")
  root = os.path.dirname(spec.origin) if spec and spec.origin else ""
  return os.path.join(root, "mjx", "test_data", name)


def suite(name):
  """(models, batches, steps, engines) of a named suite (see the docstring)."""
  # mesh_stack last: its compile is the longest (70 s at batch 4 on the CPU), so a GPU run
  # that meets its deadline still has every other row
  models = [_mjx_test_model("humanoid/humanoid.xml"), "models/humanoid_floor.xml",
            "models/quadruped.xml", "models/box_pile.xml",
            _mjx_test_model("humanoid/04_humanoids.xml"), "models/mesh_stack.xml"]
  if name == "gpu":
    return models, [8192], 100, ["jaxmj", "mjx"]
  return (models + ["models/mesh_drop.xml", "models/urdf/arm6.urdf"], [1024], 20,
          ["jaxmj", "mjx", "mujoco"])


QVEL_NOISE = 0.01
LATENCY_MIN_CALLS = 20
LATENCY_MIN_SECONDS = 1.0
LOOP_CHUNK = 10  # calls of the fed-back loop between blocks (batch-1 loop ms)
ROLLOUT_REPEATS = 3
LOADED_CORES = 0.25  # other processes' average use from which a measurement is made again and named
RECORD = "BENCH_RECORD "  # prefix of the result lines a child prints on stdout


# ---------------------------------------------------------------------------- engines


def _import_mjx():
  """Imports mujoco.mjx, hiding its 'Failed to import warp' prints."""
  with contextlib.redirect_stdout(io.StringIO()):
    from mujoco import mjx
  return mjx


def load_jaxmj(path, arithmetic="exact"):
  import jaxmj

  m = jaxmj.Model.from_xml_path(path)
  m = m.replace(opt=m.opt.replace(arithmetic=arithmetic))
  return m, jaxmj.make_data(m), jaxmj.step


def load_jaxmj_fast(path):
  """jaxmj in fast arithmetic (opt.arithmetic="fast": no rounding guards)."""
  return load_jaxmj(path, "fast")


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


def load_mujoco(path):
  """MuJoCo's C engine: (MjModel, None, None); timed by `mujoco_child`, not through JAX."""
  import mujoco

  return mujoco.MjModel.from_xml_path(path), None, None


ENGINES = {"jaxmj": load_jaxmj, "jaxmj-fast": load_jaxmj_fast, "mjx": load_mjx,
           "mujoco": load_mujoco}


def engine_version(name):
  """The engine's version string; raises if it cannot be imported or lacks the API."""
  if name.startswith("jaxmj"):
    import jaxmj

    for api in ("Model", "make_data", "step"):
      getattr(jaxmj, api)
    return getattr(jaxmj, "__version__", "source tree")
  import mujoco

  if name == "mujoco":
    return f"mujoco {mujoco.__version__} (C, float64, mujoco.rollout on {os.cpu_count()} threads)"
  _import_mjx()
  return f"mujoco {mujoco.__version__}, mujoco-mjx {importlib.metadata.version('mujoco-mjx')}"


def _reason(e):
  message = str(e).strip()
  return f"{type(e).__name__}: {message.splitlines()[0]}" if message else type(e).__name__


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
  """(wall seconds, process CPU seconds, executable) for tracing and compiling `fn` at `args`.

  JAX's in-memory caches are cleared first, so no earlier trace or compilation is reused;
  the persistent compilation cache is off (see `child`). CPU time (summed over XLA's threads)
  barely moves with load from other processes, which wall time does not.
  """
  jax.clear_caches()
  t0, c0 = time.perf_counter(), time.process_time()
  compiled = jax.jit(fn).lower(*args).compile()
  return time.perf_counter() - t0, time.process_time() - c0, compiled


def hlo_counts(text):
  """Instructions, `while` loops and fusions in a compiled module's HLO text (fused
  computations included)."""
  import re

  ops = [m.group(1) for line in text.splitlines() if " = " in line
         for m in [re.search(r" ([a-z][a-z0-9\-]*)\(", line.split(" = ", 1)[1])] if m]
  return {"instructions": len(ops), "while": ops.count("while"), "fusion": ops.count("fusion")}


@contextlib.contextmanager
def device_lock():
  """Holds the lock file named by $BENCH_DEVICE_LOCK (if any) while timing: with `--jobs N`
  several measurements compile at once, but only one runs on the device at a time."""
  path = os.environ.get("BENCH_DEVICE_LOCK")
  if not path:
    yield
    return
  import fcntl

  with open(path, "a") as f:
    fcntl.flock(f, fcntl.LOCK_EX)
    try:
      yield
    finally:
      fcntl.flock(f, fcntl.LOCK_UN)


def wall_time(fn, *args):
  t0 = time.perf_counter()
  jax.block_until_ready(fn(*args))
  return time.perf_counter() - t0


def median_call_s(call):
  """Median wall seconds of call(), timed at least LATENCY_MIN_CALLS times and for at least
  LATENCY_MIN_SECONDS in all (a running total: a 3 us mj_step takes ~300,000 calls)."""
  samples, total = [], 0.0
  while len(samples) < LATENCY_MIN_CALLS or total < LATENCY_MIN_SECONDS:
    t0 = time.perf_counter()
    call()
    samples.append(time.perf_counter() - t0)
    total += samples[-1]
  return statistics.median(samples)


def latency(compiled, m, d):
  """Median seconds of one call, after a warm-up call."""
  wall_time(compiled, m, d)
  return median_call_s(lambda: jax.block_until_ready(compiled(m, d)))


def loop_latency(compiled, m, d):
  """Median seconds a call of `d = compiled(m, d)` in a loop: chunks of LOOP_CHUNK calls, each
  timed to its last output's `block_until_ready`, after a warm-up chunk."""
  state = [d]

  def chunk():
    x = state[0]
    for _ in range(LOOP_CHUNK):
      x = compiled(m, x)
    state[0] = jax.block_until_ready(x)

  chunk()
  return median_call_s(chunk) / LOOP_CHUNK


def make_rollout(step, steps):
  """vmap over worlds of a `steps`-long scan of `step`; returns the final states."""

  def rollout(m, d):
    d, _ = jax.lax.scan(lambda d, _: (step(m, d), None), d, None, length=steps)
    return d

  return jax.vmap(rollout, in_axes=(None, 0))


def host_cpu() -> str:
  """The machine's CPU in words (model, logical cores, widest x86 vector extension): the two
  JAX engines' ratio moves with it (MJX's humanoid at 1024 worlds: 1.30x on one 2-core Xeon,
  1.05x on another, docs/speed.md), so every result names it."""
  model, flags = platform.processor() or platform.machine(), set()
  try:
    with open("/proc/cpuinfo") as f:
      for line in f:
        key, _, value = line.partition(":")
        if key.strip() == "model name" and value.strip():
          model = value.strip()
        elif key.strip() == "flags":
          flags = set(value.split())
  except OSError:
    pass
  isa = next((x for x in ("avx512f", "avx2", "avx") if x in flags), None)
  return f"{model}, {os.cpu_count()} logical cores" + (f", {isa}" if isa else "")


def warm_up_jax():
  """Pays JAX's one-time backend and lowering setup before any engine is timed."""
  f = jax.vmap(lambda x: jax.lax.scan(lambda c, _: (c + 1.0, None), x, None, length=2)[0])
  jax.block_until_ready(jax.jit(f)(jax.numpy.zeros(2)))


# ---------------------------------------------------------------------------- child process


def emit(**record):
  print(RECORD + json.dumps(record), flush=True)


def mujoco_child(path, batches, steps):
  """MuJoCo C: batch-1 ms is one `mj_step`; steps/s @B is `mujoco.rollout` of B worlds (same
  qvel perturbation as the JAX engines) on one thread per core. Nothing is compiled, so the
  compile columns stay empty; MuJoCo C always computes in float64."""
  import mujoco
  import mujoco.rollout
  import numpy as np

  m, _, _ = load_mujoco(path)
  d = mujoco.MjData(m)
  mujoco.mj_step(m, d)
  emit(batch1_ms=1e3 * median_call_s(lambda: mujoco.mj_step(m, d)))
  spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
  d = mujoco.MjData(m)
  state0 = np.zeros(mujoco.mj_stateSize(m, spec))
  mujoco.mj_getState(m, d, state0, spec)
  qvel = 1 + m.nq  # FULLPHYSICS starts with time, then qpos, qvel
  threads = [mujoco.MjData(m) for _ in range(os.cpu_count() or 1)]
  for batch in batches:
    state = np.tile(state0, (batch, 1))
    state[:, qvel : qvel + m.nv] += QVEL_NOISE * np.random.default_rng(batch).normal(
      size=(batch, m.nv))
    with mujoco.rollout.Rollout(nthread=len(threads)) as pool:
      pool.rollout(m, threads, state, nstep=steps)
      for _ in range(ROLLOUT_REPEATS):
        t0 = time.perf_counter()
        pool.rollout(m, threads, state, nstep=steps)
        emit(batch=batch, call_s=time.perf_counter() - t0)


def child(engine, path, batches, steps, x64):
  """Measures one engine on one model, emitting one record per finished measurement."""
  try:
    version = engine_version(engine)
  except Exception as e:  # noqa: BLE001 - any import failure makes the engine unavailable
    emit(unavailable=_reason(e))
    return
  if engine == "mujoco":
    emit(env={engine: version})
    try:
      mujoco_child(path, batches, steps)
    except Exception as e:  # noqa: BLE001 - report the failure, keep benchmarking
      emit(error=_reason(e))
    return
  jax.config.update("jax_enable_x64", x64)
  jax.config.update("jax_enable_compilation_cache", False)
  emit(
    env={
      "backend": jax.default_backend(),
      "host": host_cpu(),
      "devices": [str(dev) for dev in jax.devices()],
      "jax": jax.__version__,
      "x64": x64,
      "XLA_FLAGS": os.environ["XLA_FLAGS"],
      engine: version,
    }
  )
  try:
    warm_up_jax()
    m, d, step = ENGINES[engine](path)
    seconds, cpu, step_exe = compile_fn(step, m, d)
    emit(step_compile_s=seconds, step_compile_cpu_s=cpu)
    emit(hlo=hlo_counts(step_exe.as_text()))
    with device_lock():
      emit(batch1_ms=1e3 * latency(step_exe, m, d))
      emit(batch1_loop_ms=1e3 * loop_latency(step_exe, m, d))
    rollout = make_rollout(step, steps)
    for batch in batches:
      d0 = perturbed_batch(d, batch, jax.random.PRNGKey(batch))
      seconds, cpu, exe = compile_fn(rollout, m, d0)
      emit(batch=batch, compile_s=seconds, compile_cpu_s=cpu)
      with device_lock():
        # reported on its own, so that the stall watchdog times single calls, not two
        emit(batch=batch, warmup_s=wall_time(exe, m, d0))
        for _ in range(ROLLOUT_REPEATS):
          emit(batch=batch, call_s=wall_time(exe, m, d0))
  except Exception as e:  # noqa: BLE001 - report the failure, keep benchmarking
    emit(error=_reason(e))


# ---------------------------------------------------------------------------- parent process


def child_records(args, engine, path):
  """Runs `child` in a fresh process and yields its records as they arrive.

  Ends with an `error` record if the child reports nothing for `args.stall_timeout`
  seconds (it is then killed) or exits abnormally.
  """
  cmd = [sys.executable, os.path.abspath(__file__), path, "--child", engine]
  cmd += ["--steps", str(args.steps), "--batches", *map(str, args.batches)]
  if args.x64:
    cmd.append("--x64")
  proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
  lines = queue.Queue()

  def pump():
    for line in proc.stdout:
      lines.put(line)
    lines.put(None)

  threading.Thread(target=pump, daemon=True).start()
  while True:
    try:
      line = lines.get(timeout=args.stall_timeout)
    except queue.Empty:
      proc.kill()
      proc.wait()
      yield {"error": f"stalled: nothing reported for {args.stall_timeout:.0f} s, killed"}
      return
    if line is None:
      break
    if line.startswith(RECORD):
      yield json.loads(line[len(RECORD) :])
  # read before the wait reaps it: an exited child keeps its CPU time until then
  yield {"child_cpu_s": process_cpu_s(proc.pid)}
  if proc.wait():
    yield {"error": f"child process exited with code {proc.returncode}"}


def busy_cpu_s():
  """CPU seconds the whole machine has been busy since boot (Linux's /proc/stat; None
  elsewhere)."""
  try:
    with open("/proc/stat") as f:
      user, nice, system, _, _, irq, softirq, steal = map(int, f.readline().split()[1:9])
  except (OSError, ValueError):
    return None
  return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid):
  """User + system CPU seconds of process `pid`, its threads included (None where /proc is
  missing)."""
  try:
    with open(f"/proc/{pid}/stat") as f:
      fields = f.read().rsplit(")", 1)[1].split()
  except OSError:
    return None
  return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(args, engine, path):
  """One engine on one model: a dict of whatever measurements finished (see docstring).

  If the child stalls partway through the timed rollout calls, steps/s comes from the
  calls that finished (`partial` in `format_table`). `others_cores`: the CPU cores other
  processes kept busy, on average, while this one measured (the machine's busy time less
  the child's, over the wall time; only with --jobs 1, where no sibling measurement runs):
  a run on a shared machine says which rows were measured under load.
  """
  result = {"rollout": {}}
  wall0, busy0 = time.perf_counter(), busy_cpu_s()
  for record in child_records(args, engine, path):
    if "child_cpu_s" in record:
      child_cpu, busy1 = record["child_cpu_s"], busy_cpu_s()
      if args.jobs == 1 and None not in (child_cpu, busy0, busy1):
        wall = time.perf_counter() - wall0
        result["others_cores"] = max(0.0, busy1 - busy0 - child_cpu) / wall
      continue
    if "batch" not in record:
      result.update(record)
      continue
    batch = record["batch"]
    entry = result["rollout"].setdefault(str(batch), {"call_s": []})
    if "compile_s" in record:
      entry["compile_s"] = record["compile_s"]
      entry["compile_cpu_s"] = record.get("compile_cpu_s")
    elif "warmup_s" in record:
      entry["warmup_s"] = record["warmup_s"]
    else:
      entry["call_s"].append(record["call_s"])
      entry["steps_per_s"] = batch * args.steps / statistics.median(entry["call_s"])
  return result


def remeasure_loaded(args, engine, path, model, result):
  """`result`, or up to `args.remeasure` new measurements of it while other processes kept
  LOADED_CORES or more busy: the least loaded one that did not fail, with the others' loads
  in `loaded_attempts`."""
  attempts = [result]
  while (len(attempts) <= args.remeasure
         and attempts[-1].get("others_cores", 0.0) >= LOADED_CORES):
    print(f"  {engine} on {model}: other processes kept {attempts[-1]['others_cores']:.2f} "
          "cores busy; measuring again", flush=True)
    attempts.append(measure(args, engine, path))
  kept = min((r for r in attempts if "error" not in r), default=result,
             key=lambda r: r.get("others_cores", 0.0))
  others = [r.get("others_cores") for r in attempts if r is not kept]
  return {**kept, "loaded_attempts": others} if others else kept


# ---------------------------------------------------------------------------- report


def columns(batches):
  return ["model", "engine", f"compile s @{batches[0]}", "(cpu s)", "step compile s",
          "(cpu s)", "batch-1 ms", "loop ms"] + [f"steps/s @{b}" for b in batches]


def row_values(result, batches):
  """Numeric cells of one result in `columns` order after model and engine (None: missing)."""
  rollout = result["rollout"]
  return [
    rollout.get(str(batches[0]), {}).get("compile_s"),
    rollout.get(str(batches[0]), {}).get("compile_cpu_s"),
    result.get("step_compile_s"),
    result.get("step_compile_cpu_s"),
    result.get("batch1_ms"),
    result.get("batch1_loop_ms"),
  ] + [rollout.get(str(b), {}).get("steps_per_s") for b in batches]


def ratio_rows(results, batches):
  """jaxmj/mjx and jaxmj/mujoco cell ratios (None where either is missing), per model."""
  by_key = {(r["model"], r["engine"]): r for r in results}
  ratios = []
  for model in dict.fromkeys(r["model"] for r in results):
    for mine, other in ((m, o) for m in ("jaxmj", "jaxmj-fast") for o in ("mjx", "mujoco")):
      ours, theirs = by_key.get((model, mine)), by_key.get((model, other))
      if ours and theirs:
        pairs = zip(row_values(ours, batches), row_values(theirs, batches), strict=True)
        cells = [a / b if a is not None and b else None for a, b in pairs]
        ratios.append({"model": model, "engine": mine, "versus": other, "ratios": cells})
  return ratios


def _cell(value, fmt):
  return "-" if value is None else fmt(value)


def partial(result, batch):
  """Whether steps/s at `batch` comes from fewer timed calls than ROLLOUT_REPEATS."""
  return 0 < len(result["rollout"].get(str(batch), {}).get("call_s", [])) < ROLLOUT_REPEATS


def format_table(results, ratios, batches):
  """Aligned text table: each model's engine rows, then its ratio row; failures below."""
  number = lambda v: f"{v:.3g}" if v < 1e3 else f"{v:,.0f}"
  rows, failures = [columns(batches)], []
  for model in dict.fromkeys(r["model"] for r in results):
    for r in (r for r in results if r["model"] == model):
      cells = [_cell(v, number) for v in row_values(r, batches)]
      cells[6:] = [c + "*" * partial(r, b) for c, b in zip(cells[6:], batches, strict=True)]
      rows.append([model, r["engine"], *cells])
      if "error" in r:
        failures.append(f"{r['engine']} on {model}: {r['error']}")
    for x in (x for x in ratios if x["model"] == model):
      cells = (_cell(v, lambda v: f"{v:.2f}x") for v in x["ratios"])
      rows.append([model, f"{x['engine']}/{x['versus']}", *cells])
  if any(partial(r, b) for r in results for b in batches):
    failures.append(f"* from fewer than {ROLLOUT_REPEATS} timed calls (the measurement stalled)")
  widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
  lines = ["  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
  return "\n".join(lines + failures)


def format_markdown(results, batches, env):
  """A markdown table per model: jaxmj beside MJX (and MuJoCo C), with jaxmj/MJX ratios."""
  by_key = {(r["model"], r["engine"]): r for r in results}
  b = batches[0]
  head = (f"| model | jaxmj steps/s @{b} | MJX steps/s | jaxmj/MJX | MuJoCo C steps/s | "
          f"rollout compile s jaxmj / MJX | step compile s jaxmj / MJX | batch-1 ms jaxmj / "
          f"MJX / C | batch-1 loop ms jaxmj / MJX | step HLO instructions jaxmj / MJX | "
          f"`while` jaxmj / MJX |")
  lines = [head, "|" + "---|" * head.count(" | ") + "---|"]
  fmt = lambda v, f="{:,.0f}": "-" if v is None else f.format(v)  # noqa: E731
  for model in dict.fromkeys(r["model"] for r in results):
    j, x, c = (by_key.get((model, e), {}) for e in ("jaxmj", "mjx", "mujoco"))
    sps = [r.get("rollout", {}).get(str(b), {}).get("steps_per_s") for r in (j, x, c)]
    comp = [r.get("rollout", {}).get(str(b), {}).get("compile_s") for r in (j, x)]
    ratio = sps[0] / sps[1] if sps[0] and sps[1] else None
    hlo = [r.get("hlo", {}) for r in (j, x)]
    lines.append(" | ".join([
      f"| {model}", fmt(sps[0]), fmt(sps[1]), fmt(ratio, "**{:.2f}x**"), fmt(sps[2]),
      f"{fmt(comp[0], '{:.1f}')} / {fmt(comp[1], '{:.1f}')}",
      f"{fmt(j.get('step_compile_s'), '{:.1f}')} / {fmt(x.get('step_compile_s'), '{:.1f}')}",
      " / ".join(fmt(r.get("batch1_ms"), "{:.3g}") for r in (j, x, c)),
      " / ".join(fmt(r.get("batch1_loop_ms"), "{:.3g}") for r in (j, x)),
      " / ".join(fmt(h.get("instructions")) for h in hlo),
      " / ".join(fmt(h.get("while")) for h in hlo)]) + " |")
  envs = "; ".join(f"{k}: {v}" for k, v in env.items())
  loaded = [f"{r['engine']} on {r['model']} ({r['others_cores']:.2f})" for r in results
            if r.get("others_cores", 0) >= LOADED_CORES]
  if loaded:
    envs += ("\n\nMeasured while other processes kept at least "
             f"{LOADED_CORES} cores busy on average: " + ", ".join(loaded) + ".")
  return "\n".join(lines) + f"\n\n{envs}\n"


# ---------------------------------------------------------------------------- main


def parse_args():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  p.add_argument("models", nargs="*")
  p.add_argument("--suite", choices=["gpu", "cpu"], help="a named set of models and sizes")
  p.add_argument("--batches", nargs="+", type=int)
  p.add_argument("--steps", type=int, help="rollout length T (default 100)")
  p.add_argument("--engines", nargs="+", choices=list(ENGINES))
  p.add_argument("--markdown", metavar="PATH", help="also write a markdown table")
  p.add_argument("--jobs", type=int, help="models measured at once: their compiles overlap, "
                 "their timed calls take turns on the device (default 1; suite gpu: 2)")
  p.add_argument("--x64", action="store_true", help="enable float64 (jax_enable_x64)")
  p.add_argument(
    "--no-contact",
    action="store_true",
    help="load contact-disabled copies of the models (both engines)",
  )
  p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
  p.add_argument("--remeasure", type=int, default=1, metavar="N",
                 help="measure a (model, engine) again, up to N times, while other processes "
                 f"kept at least {LOADED_CORES} cores busy during it (--jobs 1; default 1)")
  p.add_argument(
    "--stall-timeout",
    type=float,
    default=600.0,
    help="kill a measurement that reports nothing for this many seconds (default 600)",
  )
  p.add_argument(
    "--compile",
    action="store_true",
    help="measure MJCF compile time only (jaxmj vs mujoco, plus a generated 100-body chain)",
  )
  p.add_argument("--child", choices=list(ENGINES), help=argparse.SUPPRESS)
  args = p.parse_args()
  models, batches, steps, engines = (suite(args.suite) if args.suite else
                                     (DEFAULT_MODELS, [64, 1024], 100, list(ENGINES)))
  args.models = args.models or models
  args.batches = args.batches or batches
  args.steps = args.steps or steps
  args.engines = args.engines or engines
  args.jobs = args.jobs or (2 if args.suite == "gpu" else 1)
  if args.suite and not args.child:
    args.json = args.json or f"bench_{args.suite}.json"
    args.markdown = args.markdown or os.path.splitext(args.json)[0] + ".md"
  return args


def main():
  args = parse_args()
  if args.compile:
    import compile_bench

    print(compile_bench.format_table(compile_bench.measure(args.models)))
    return
  if args.child:
    child(args.child, args.models[0], args.batches, args.steps, args.x64)
    return
  start = time.perf_counter()
  print(
    f"jax {jax.__version__}, XLA_FLAGS={os.environ['XLA_FLAGS']} (works around a batched-LAPACK "
    f"hang on XLA:CPU, for both engines)\nrollout T={args.steps}, batches={args.batches}, "
    f"no_contact={args.no_contact}, x64={args.x64}\n",
    flush=True,
  )
  env, unavailable = {}, {}
  if args.jobs > 1:
    lock = tempfile.NamedTemporaryFile(prefix="bench_lock_")  # or one shared with another run
    os.environ.setdefault("BENCH_DEVICE_LOCK", lock.name)
    # each process may take at most its share of the accelerator's memory
    os.environ.setdefault("XLA_PYTHON_CLIENT_MEM_FRACTION", f"{0.9 / args.jobs:.2f}")

  def measure_model(path):
    model = os.path.splitext(os.path.basename(path))[0]
    if os.path.join("mjx", "test_data") in path:
      model = "mjx/" + model
    rows = []
    with model_file(path, args.no_contact) as file:
      for engine in (e for e in args.engines if e not in unavailable):
        print(f"measuring {engine} on {path} ...", flush=True)
        result = measure(args, engine, file)
        if "unavailable" in result:
          unavailable[engine] = result["unavailable"]
          continue
        result = remeasure_loaded(args, engine, file, model, result)
        env.update(result.pop("env", {}))
        rows.append({"model": model, "path": path, "engine": engine, **result})
        # each row as it ends: a run stopped partway (a lease running out) still reports it
        cells = zip(columns(args.batches)[2:], row_values(rows[-1], args.batches), strict=True)
        summary = ", ".join(f"{name} {value:.4g}" for name, value in cells if value is not None)
        if "others_cores" in result:
          summary += f"; other processes kept {result['others_cores']:.2f} cores busy"
        print(f"  {engine} on {model} done after {time.perf_counter() - start:.0f} s: {summary}",
              flush=True)
    return rows

  import concurrent.futures

  with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
    results = [r for rows in pool.map(measure_model, args.models) for r in rows]

  ratios = ratio_rows(results, args.batches)
  print()
  for key, value in env.items():
    print(f"{key}: {value}")
  for engine, reason in unavailable.items():
    print(f"{'MJX' if engine == 'mjx' else engine}: unavailable ({reason})")
  print()
  print(format_table(results, ratios, args.batches))
  if ratios:
    print(
      "\nratio rows = jaxmj / other engine: batch-1 ms < 1 means jaxmj faster; "
      "steps/s > 1 means jaxmj faster."
    )
  print(f"\ntotal time {time.perf_counter() - start:.0f} s")
  if args.markdown:
    with open(args.markdown, "w") as f:
      f.write(format_markdown(results, args.batches, env))
    print("\n" + format_markdown(results, args.batches, env))
  if args.json:
    report = {
      "env": env,
      "unavailable": unavailable,
      "config": {k: v for k, v in vars(args).items() if k != "child"},
      "total_s": time.perf_counter() - start,
      "columns": columns(args.batches),
      "results": results,
      "ratios": ratios,
    }
    with open(args.json, "w") as f:
      json.dump(report, f, indent=2)


if __name__ == "__main__":
  main()
