"""Per-stage time of one jitted, vmapped step: jaxmj beside MJX, in one process, interleaved.

Where `scripts/bench.py` gives whole-step throughput (each engine in its own process), this
script says where the time goes. Both engines start from the same state: MuJoCo C steps the
model `--settle` steps from its initial state (so a pile has settled into contact), then
each of `--batch` worlds gets its own small qvel perturbation. Each engine computes a full
`forward` on that batch, and every stage below is then timed as its own jitted, vmapped
function of that Data (so every input a stage reads is already filled in):

  kinematics    kinematics + com_pos                (mj_kinematics, mj_comPos)
  mass          crb + factor_m                      (mj_crb, mj_factorM)
  collision     collision driver                    (mj_collision)
  velocity      com_vel + passive + rne             (mj_comVel, mj_passive, mj_rne)
  constraint    efc rows                            (mj_makeConstraint)
  solver        constraint solver                   (mj_fwdConstraint)
  forward       everything up to qacc               (mj_forward)
  step          one whole step                      (mj_step)
  identity      returns its input: JAX's handling of the Model's and Data's arrays on a
                call, plus one XLA copy kernel per Data array (the output may not alias an
                input that is not donated). A stage pays the handling but writes its outputs
                in its own kernels, so `identity` overstates what moving a Data costs it.

Calls of all (stage, engine) pairs are interleaved round by round (`--repeats` rounds of
`--calls` calls each), so load from other processes hits both engines alike; the table gives
the median per call, as process CPU time (summed over XLA's threads; steadier than wall time
when other processes load the machine) and as wall time. With `--hlo` it also prints op
counts of the compiled vmapped step (while loops, gathers, scatters, dots, fusions, custom
calls) and the step's compile time.

`--base REF` adds engine `base`: jaxmj at git revision REF (e.g. HEAD), exported and renamed
so that it imports beside the working tree's jaxmj, for an A/B of a change in one process.

Usage:
  python scripts/profile_step.py models/box_pile.xml [--batch 128] [--settle 500]
      [--repeats 5] [--calls 3] [--engines jaxmj mjx base] [--base REF] [--stages ...]
      [--hlo] [--x64]
"""

import os

_XLA_FLAG = "--xla_cpu_enable_concurrency_optimized_scheduler=false"  # see bench.py
if _XLA_FLAG not in os.environ.get("XLA_FLAGS", ""):
  os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_XLA_FLAG}".strip()

import argparse  # noqa: E402
import atexit  # noqa: E402
import collections  # noqa: E402
import contextlib  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import jax  # noqa: E402
import mujoco  # noqa: E402
import numpy as np  # noqa: E402

STAGES = ["kinematics", "mass", "collision", "velocity", "constraint", "solver", "forward",
          "step", "identity"]
HLO_OPS = ["while", "conditional", "gather", "scatter", "dynamic-slice", "dynamic-update-slice",
           "dot", "fusion", "custom-call", "sort", "reduce"]


def settled_state(path: str, steps: int) -> tuple[mujoco.MjModel, mujoco.MjData]:
  mj = mujoco.MjModel.from_xml_path(path)
  md = mujoco.MjData(mj)
  for _ in range(steps):
    mujoco.mj_step(mj, md)
  mujoco.mj_forward(mj, md)
  return mj, md


def module_at(package: str, name: str):
  """`package.name`, or at a revision before the layout by pipeline stage (issue 17) the same
  module at its old place (`smooth.com` was `com`, `solver.driver` was `solver`,
  `constraint.driver` was `constraint`)."""
  try:
    return importlib.import_module(f"{package}.{name}")
  except ModuleNotFoundError:
    old = {"solver.driver": "solver", "solver.linesearch": "linesearch",
           "constraint.driver": "constraint"}.get(name, name)
    return importlib.import_module(f"{package}.{old.removeprefix('smooth.')}")


def jaxmj_engine(path, md, package="jaxmj"):
  """(model, data of one world, forward, {stage: fn(m, d) -> d}) for jaxmj, or for the
  renamed copy of another revision (`package="jaxmj_base"`, see `export_base`)."""
  import jax.numpy as jnp

  imp = lambda name: module_at(package, name)  # noqa: E731
  jaxmj = importlib.import_module(package)
  com, constraint, mass, passive, rne, solver, kin, driver = (imp(n) for n in (
    "smooth.com", "constraint.driver", "smooth.mass", "smooth.passive", "smooth.rne",
    "solver.driver", "smooth.kinematics", "collision.driver"))

  m = jaxmj.Model.from_xml_path(path)
  dt = jnp.float64 if jax.config.jax_enable_x64 else jnp.float32
  d = jaxmj.make_data(m).replace(
    qpos=jnp.asarray(md.qpos, dt), qvel=jnp.asarray(md.qvel, dt),
    qacc_warmstart=jnp.asarray(md.qacc_warmstart, dt), time=jnp.asarray(md.time, dt))
  stages = {
    "kinematics": lambda m, d: com.com_pos(m, kin.kinematics(m, d)),
    "mass": lambda m, d: mass.factor_m(m, mass.crb(m, d)),
    "collision": driver.collision,
    "velocity": lambda m, d: rne.rne(m, passive.passive(m, com.com_vel(m, d))),
    "constraint": constraint.make_constraint,
    "solver": solver.solve,
    "forward": jaxmj.forward,
    "step": jaxmj.step,
  }
  if hasattr(jaxmj, "transition_jacobians"):
    stages["transition"] = jaxmj.transition_jacobians
  return m, d, jaxmj.forward, stages


def mjx_engine(path, md):
  """The same for MJX (impl="jax"), from mujoco-mjx's internal stage functions."""
  with contextlib.redirect_stdout(io.StringIO()):
    from mujoco import mjx
    from mujoco.mjx._src import collision_driver, constraint, passive, smooth, solver

  mj = mujoco.MjModel.from_xml_path(path)
  m = mjx.put_model(mj, impl="jax")
  if md.ncon > len(collision_driver.make_condim(mj)):
    # MuJoCo C's contacts exceed MJX's slots (max_contact_points): the state alone, whose
    # contacts the engine's own forward then finds
    state = mujoco.MjData(mj)
    for k in ("time", "qpos", "qvel", "act", "ctrl", "qacc_warmstart", "mocap_pos", "mocap_quat"):
      setattr(state, k, getattr(md, k))
    md = state
  d = mjx.put_data(mj, md, impl="jax")
  stages = {
    "kinematics": lambda m, d: smooth.com_pos(m, smooth.kinematics(m, d)),
    "mass": lambda m, d: smooth.factor_m(m, smooth.crb(m, d)),
    "collision": collision_driver.collision,
    "velocity": lambda m, d: smooth.rne(m, passive.passive(m, smooth.com_vel(m, d))),
    "constraint": constraint.make_constraint,
    "solver": solver.solve,
    "forward": mjx.forward,
    "step": mjx.step,
  }
  return m, d, mjx.forward, stages


def jaxmj_fast_engine(path, md):
  """jaxmj in fast arithmetic (opt.arithmetic="fast")."""
  m, d, forward, stages = jaxmj_engine(path, md)
  return m.replace(opt=m.opt.replace(arithmetic="fast")), d, forward, stages


ENGINES = {"jaxmj": jaxmj_engine, "jaxmj-fast": jaxmj_fast_engine, "mjx": mjx_engine,
           "base": lambda path, md: jaxmj_engine(path, md, "jaxmj_base")}


def export_base(ref: str, package: str = "jaxmj_base") -> str:
  """Exports jaxmj at git revision `ref` of this repository as `package` (every `jaxmj` name
  in its sources renamed) into a temporary directory put on sys.path, so that one process
  can time the working tree against `ref`."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  out = tempfile.mkdtemp(prefix="profile_base_")
  atexit.register(shutil.rmtree, out, True)
  archive = subprocess.run(["git", "-C", root, "archive", ref, "jaxmj"], check=True,
                           capture_output=True).stdout
  subprocess.run(["tar", "-x", "-C", out], input=archive, check=True)
  os.rename(os.path.join(out, "jaxmj"), os.path.join(out, package))
  for folder, _, files in os.walk(os.path.join(out, package)):
    for name in (f for f in files if f.endswith(".py")):
      file = os.path.join(folder, name)
      with open(file) as f:
        text = re.sub(r"\bjaxmj\b", package, f.read())
      with open(file, "w") as f:
        f.write(text)
  sys.path.insert(0, out)
  return out


def batched(d, batch: int, seed: int = 0):
  """`batch` copies of `d` with qvel perturbed by N(0, 0.01^2) per world."""
  noise = 0.01 * np.random.default_rng(seed).normal(size=(batch, d.qvel.shape[-1]))
  noise = jax.numpy.asarray(noise, d.qvel.dtype)
  return jax.vmap(lambda n: d.replace(qvel=d.qvel + n))(noise)


def hlo_counts(text: str) -> collections.Counter:
  """Instruction counts by opcode in an HLO module's text (fused computations included)."""
  counts = collections.Counter()
  for line in text.splitlines():
    if " = " in line:
      op = re.search(r" ([a-z][a-z0-9\-]*)\(", line.split(" = ", 1)[1])
      if op:
        counts[op.group(1)] += 1
  return counts


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  p.add_argument("model")
  p.add_argument("--batch", type=int, default=128, help="worlds per call; 0: one world "
                 "without vmap, as `jax.jit(step)` runs it (MPC, notebooks, bench.py's batch-1)")
  p.add_argument("--settle", type=int, default=500, help="mj_step calls before measuring")
  p.add_argument("--repeats", type=int, default=5, help="interleaved rounds")
  p.add_argument("--calls", type=int, default=3, help="timed calls per stage per round")
  p.add_argument("--engines", nargs="+", choices=list(ENGINES), default=["jaxmj", "mjx"])
  p.add_argument("--base", metavar="REF", help="also time jaxmj at git revision REF (engine "
                 "'base', listed last) against the working tree: an A/B in one process")
  p.add_argument("--stages", nargs="+", choices=STAGES, default=STAGES)
  p.add_argument("--hlo", action="store_true", help="op counts and compile time of the step")
  p.add_argument("--x64", action="store_true")
  args = p.parse_args()
  jax.config.update("jax_enable_x64", args.x64)
  if args.base:
    export_base(args.base)
    args.engines = [e for e in args.engines if e != "base"] + ["base"]

  _, md = settled_state(args.model, args.settle)
  print(f"{args.model}: batch {args.batch}, settled {args.settle} steps (ncon {md.ncon}, "
        f"nefc {md.nefc} in MuJoCo C), x64={args.x64}, load {os.getloadavg()[0]:.1f}")
  runs = {}  # (stage, engine) -> (compiled fn, m, d)
  for engine in args.engines:
    m, d1, forward, stages = ENGINES[engine](args.model, md)
    stages["identity"] = lambda m, d: d
    batch = (lambda f: f) if args.batch == 0 else (lambda f: jax.vmap(f, in_axes=(None, 0)))
    d = jax.jit(batch(forward))(m, batched(d1, args.batch) if args.batch else d1)
    if engine != "mjx":
      niter = np.asarray(d.solver_niter)
      print(f"  {engine} solver iterations per world: mean {niter.mean():.1f}, "
            f"max {niter.max()}")
    for name in args.stages:
      fn = jax.jit(batch(stages[name]))
      t0 = time.perf_counter()
      exe = fn.lower(m, d).compile()
      compile_s = time.perf_counter() - t0
      jax.block_until_ready(exe(m, d))
      runs[name, engine] = (exe, m, d, compile_s)
      if args.hlo and name == "step":
        counts = hlo_counts(exe.as_text())
        ops = ", ".join(f"{op} {counts[op]}" for op in HLO_OPS)
        print(f"  {engine} step: compile {compile_s:.1f} s, {sum(counts.values())} HLO "
              f"instructions: {ops}")

  wall, cpu = collections.defaultdict(list), collections.defaultdict(list)
  for _ in range(args.repeats):
    for key, (exe, m, d, _) in runs.items():
      for _ in range(args.calls):
        t0, c0 = time.perf_counter(), time.process_time()
        jax.block_until_ready(exe(m, d))
        wall[key].append(time.perf_counter() - t0)
        cpu[key].append(time.process_time() - c0)

  for title, samples in (("CPU ms (all threads)", cpu), ("wall ms", wall)):
    header = f"{title:<22}" + "".join(f"{e:>10}" for e in args.engines)
    header += "".join(f"{'/' + e:>8}" for e in args.engines[1:])
    print(header)
    for name in args.stages:
      ms = [1e3 * statistics.median(samples[name, e]) for e in args.engines]
      line = f"{name:<22}" + "".join(f"{t:>10.2f}" for t in ms)
      print(line + "".join(f"{ms[0] / t:>7.2f}x" for t in ms[1:]))
  print(f"(median per call of the whole batch; /engine columns: {args.engines[0]} divided by "
        f"that engine, < 1 means {args.engines[0]} is faster; load after "
        f"{os.getloadavg()[0]:.1f})")

if __name__ == "__main__":
  main()
