"""GPU proxies without a GPU: the kernels and loops of one vmapped step as XLA compiles it for
an NVIDIA H200 (or H100), on a machine that has no GPU.

At batch 8192 on a GPU a step's time is largely kernel launches and `while` trips, so the
kernel count of the GPU-optimized HLO is the proxy that the CPU's HLO (fused by other rules)
cannot give. JAX compiles deviceless for a "compile-only" CUDA topology made from a
GpuTargetConfigProto (`jax.experimental.topologies.get_topology_desc(platform="cuda",
target_config=TEXT_PROTO, topology="1x1x1")`); XLA then runs its whole GPU pipeline (fusion,
Triton GEMM fusions, LLVM -> PTX -> ptxas) but cannot autotune, so where a GPU would pick
between GEMM backends by timing it takes XLA's defaults. The device description below holds
the H200's (and H100 SXM's) figures from XLA's GPU specs (sm_90a, 132 SMs, ...).

The compile runs in a child process of a scratch venv that holds JAX with its CUDA plugin
(the project's venv stays CPU-only); the child appends this venv's site-packages (mujoco,
mujoco-mjx, jaxmj's dependencies) behind its own, and imports jaxmj from this checkout.
Setup, once (same JAX version as this venv; about 3 GB of NVIDIA wheels, no GPU needed):

  V=$(python -c 'import jax; print(jax.__version__)')  # this venv's JAX
  python -m venv /work/scratch/gpuvenv
  /work/scratch/gpuvenv/bin/pip install "jax[cuda12]==$V"

For each engine and model it prints, from the optimized HLO of `jit(vmap(step))` (`--batch 0`:
`jit(step)` of one world, the program whose launches bound a GPU's batch-1 latency):
  kernels    instructions that launch work in the computations the GPU runs as a sequence of
             thunks (the entry, while bodies and conditions, conditional branches): fusions
             (Triton GEMMs included), custom calls (cuBLAS, cuSolver, ...), copies and any
             other unfused op; parameters, constants, tuples, bitcasts and control flow are free
  launches   kernels launched per step: loops with a known trip count (XLA's
             `known_trip_count`) multiplied out, loops without counted once per trip
             (`+ K/trip` per such loop, each condition's kernel included)
  while      `while` loops, and how many have a known trip count; conditionals
  trips      trips of known-count loops per step: each ends in the condition's device-to-host
             copy and a host sync
  HLO        instructions of the whole module (fused computations included)
With `--rollout T`, the program is the batched rollout as scripts/bench.py times it, `jit(vmap(
scan of the step, T))`, and the scan's body is counted apart: its launches per step (the
carry's copies, the autoreset's selects and what else the scan adds to a step included).
With `--list SCOPE`, every kernel of the stages whose name contains SCOPE ('' for all): the
computation it runs in, its root op (what a fusion computes last: a concatenate, a transpose,
a reduce...), its shape and the jaxmj source lines it comes from, to see why a stage takes the
kernels it does.
With `--scopes`, kernels per stage: jaxmj's innermost `mj_*` named scope (and solver phase),
MJX's innermost function called from mujoco/mjx/_src/forward.py (MJX's own named scopes are
forward.py's coarse `fwd_position`...), named as the MuJoCo function where one matches.

Usage:
  python scripts/gpu_hlo.py MODEL... [--batch 8192 | 0] [--engines jaxmj jaxmj-fast mjx]
      [--rollout T] [--base REF] [--gpu h200|h100] [--venv /work/scratch/gpuvenv] [--scopes]
      [--save DIR] [--x64] [--list SCOPE]
(engine `base`: jaxmj at git revision REF, as in profile_step.py)
"""

import argparse
import collections
import importlib
import os
import re
import site
import subprocess
import sys
import tempfile
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_MJX_FORWARD = "mujoco/mjx/_src/forward.py"
# MJX's stage functions under their MuJoCo names, to line its kernels up with jaxmj's scopes.
_MJX_NAMES = {
  "kinematics": "mj_kinematics", "com_pos": "mj_comPos", "camlight": "mj_camlight",
  "tendon": "mj_tendon", "crb": "mj_crb", "factor_m": "mj_factorM", "collision": "mj_collision",
  "make_constraint": "mj_makeConstraint", "transmission": "mj_transmission",
  "com_vel": "mj_comVel", "passive": "mj_passive", "rne": "mj_rne", "solve": "mj_solve",
  "fwd_actuation": "mj_fwdActuation", "fwd_acceleration": "mj_fwdAcceleration",
  "euler": "mj_Euler", "_advance": "mj_Euler", "_integrate_pos": "mj_Euler",
  "implicit": "mj_implicit", "rungekutta4": "mj_RungeKutta",
}
# jaxmj's solver phases (named scopes), as in profile_scopes.py.
_PHASES = ("warmstart", "constraint_update", "hessian_solve", "hessian", "linesearch",
           "implicit_derivative")
# Instructions of a thunk sequence that launch nothing.
_FREE = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "while",
         "conditional", "call", "after-all", "opt-barrier", "add-dependency", "async-start",
         "async-update", "async-done"}

# GpuTargetConfigProto fields (xla/stream_executor/device_description.proto) that the
# jaxlib this was written against parses; values from XLA's GPU target specs h200.txtpb and
# h100_sxm.txtpb (xla/backends/gpu/target_config/specs).
_GPUS = {
  "h200": dict(name="NVIDIA H200 141GB HBM3e", memory_bandwidth=4800000000000,
               device_memory_size=151397597184),
  "h100": dict(name="NVIDIA H100 80GB HBM3", memory_bandwidth=3352320000000,
               device_memory_size=84942979072),
}
# {XLA PrimitiveType number: (clock GHz, units per SM, ops per clock)} of sm_90's scalar and
# matrix units, as in those specs.
_SCALAR_RATES = {4: (1.98, 64, 1), 8: (1.98, 64, 1), 10: (1.98, 128, 2), 11: (1.98, 128, 1),
                 12: (1.98, 64, 1), 16: (1.98, 128, 2)}
_MATRIX_RATES = {k: (1.8295201, 4, ops) for k, ops in (
  (2, 1024), (6, 1024), (10, 512), (11, 256), (16, 512), (19, 1024), (20, 1024), (23, 1024),
  (24, 1024), (25, 1024), (28, 1024), (29, 1024), (33, 1024), (35, 1024), (36, 1024))}
_MATRIX_RATES[12] = (1.98, 4, 32)


def target_config(gpu: str) -> str:
  """GpuTargetConfigProto text of an sm_90a GPU (`gpu`: a key of _GPUS)."""
  g = _GPUS[gpu]

  def rates(table):
    return " ".join(f"rate_infos {{ key: {k} value {{ clock_rate_ghz: {c} units_per_core: {u} "
                    f"ops_per_clock: {o} }} }}" for k, (c, u, o) in table.items())

  return f"""gpu_device_info {{
  threads_per_block_limit: 1024 threads_per_warp: 32 shared_memory_per_block: 49152
  shared_memory_per_core: 233472 threads_per_core_limit: 2048 core_count: 132
  fpus_per_core: 128 block_dim_limit_x: 2147483647 block_dim_limit_y: 65535
  block_dim_limit_z: 65535 memory_bandwidth: {g['memory_bandwidth']} l2_cache_size: 52428800
  clock_rate_ghz: 1.98 device_memory_size: {g['device_memory_size']}
  shared_memory_per_block_optin: 232448
  cuda_compute_capability {{ major: 9 feature_extension: ACCELERATED_FEATURES }}
  registers_per_core_limit: 65536 registers_per_block_limit: 65536
  scalar_unit_description {{ {rates(_SCALAR_RATES)} }}
  matrix_unit_description {{ {rates(_MATRIX_RATES)} }}
  thread_dim_limit_x: 1024 thread_dim_limit_y: 1024 thread_dim_limit_z: 64
  device_vendor: "NVIDIA Corporation" platform_version: "Compute Capability 9.0a"
  device_address_bits: 64 pcie_bandwidth: 34359738368 ecc_enabled: true name: "{g['name']}"
  driver_version: "13.0.0" runtime_version: "12.8.0" compile_time_toolkit_version: "12.8.0"
  dnn_version: "9.10.0" cub_version: "3.1.2" device_interconnect_info {{ active_links: 18 }}
}}
platform_name: "CUDA"
dnn_version_info {{ major: 9 minor: 10 patch: 0 }}
device_description_str: "{g['name']}"
"""


def child(args):
  """Compiles jit(vmap(step)) for the GPU target and writes its optimized HLO to args.child."""
  sys.path.extend(args.site)
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  import jax

  jax.config.update("jax_platforms", "cpu")
  jax.config.update("jax_enable_x64", args.x64)
  jax.config.update("jax_enable_compilation_cache", False)
  from jax.experimental import topologies

  try:
    topology = topologies.get_topology_desc(platform="cuda", target_config=target_config(args.gpu),
                                            topology="1x1x1")
  except Exception as e:  # noqa: BLE001  (any failure here means: no usable CUDA plugin)
    sys.exit(f"gpu_hlo: no compile-only CUDA topology from {sys.prefix} ({type(e).__name__}: "
             f"{e}); set up the scratch venv as this script's docstring says")
  from profile_step import ENGINES, batched, export_base, settled_state

  if args.engines[0] == "base":
    export_base(args.base)
  # jaxmj picks some passes by the default backend at trace time (jaxmj/platform.py): trace
  # those a GPU would run, though this process's backend is the CPU (older trees: only
  # kinematics' vector layout chose so, the rest by lax.platform_dependent)
  package = "jaxmj_base" if args.engines[0] == "base" else "jaxmj"
  try:
    importlib.import_module(package + ".platform").TRACE_FOR = "gpu"
  except ModuleNotFoundError:
    kinematics = importlib.import_module(package + ".smooth.kinematics")
    if hasattr(kinematics, "STACKED_BACKENDS"):
      kinematics.STACKED_BACKENDS = ()

  mesh = topologies.make_mesh(topo=topology, mesh_shape=(1,), axis_names=("x",))
  sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
  model = args.models[0]
  _, md = settled_state(model, 200)
  m, d, _, stages = ENGINES[args.engines[0]](model, md)
  step = stages["step"]
  if args.rollout:  # as scripts/bench.py times it: vmap over worlds of a scan of the step
    one, length = step, args.rollout
    step = lambda m, d: jax.lax.scan(  # noqa: E731
      lambda d, _: (one(m, d), None), d, None, length=length)[0]
  if args.batch:
    d = jax.eval_shape(lambda d: batched(d, args.batch), d)
    step = jax.vmap(step, in_axes=(None, 0))
  abstract = lambda tree: jax.tree.map(  # noqa: E731
    lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding), tree)
  t0 = time.perf_counter()
  compiled = jax.jit(step).lower(abstract(m), abstract(d)).compile()
  print(f"compile {time.perf_counter() - t0:.1f} s", file=sys.stderr)
  with open(args.child, "w") as f:
    f.write(compiled.as_text())


def parse(text: str) -> tuple[dict, str]:
  """({computation: [(name, opcode, line)]}, entry computation's name) of an HLO module."""
  comps, entry, current = {}, None, None
  for line in text.splitlines():
    if line and not line[0].isspace() and line.rstrip().endswith("{"):
      m = re.match(r"(ENTRY )?%?([\w.\-]+) ", line)
      if m:
        current = comps.setdefault(m.group(2), [])
        entry = m.group(2) if m.group(1) else entry
    elif current is not None and " = " in line:
      m = re.match(r"\s*(?:ROOT )?%?([\w.\-]+) = ", line)
      op = re.search(r" ([a-z][a-z0-9\-]*)\(", line.split(" = ", 1)[1])
      if m and op:
        current.append((m.group(1), op.group(1), line))
  return comps, entry


def callees(op: str, line: str) -> list[str]:
  """Computations that a conditional, call or async start runs as thunk sequences of their
  own (a while loop's body and condition are read apart, with its trip count)."""
  if op == "conditional":
    branches = re.search(r"branch_computations=\{([^}]*)\}", line)
    if branches:
      return re.findall(r"%?([\w.\-]+)", branches.group(1))
    return re.findall(r"\b(?:true|false)_computation=%?([\w.\-]+)", line)
  if op in ("call", "async-start"):
    return re.findall(r"\b(?:to_apply|calls)=%?([\w.\-]+)", line)
  return []


def trip_count(line: str) -> int | None:
  m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', line)
  return int(m.group(1)) if m else None


def scope_of(line: str, frames: dict, name: str) -> str:
  """jaxmj's innermost `mj_*` scope (and solver phase) of an instruction, else MJX's stage."""
  op_name = re.search(r'op_name="([^"]*)"', line)
  stages = re.findall(r"mj_\w+", op_name.group(1)) if op_name else []
  if stages:
    phases = [p for p in re.findall(r"[a-z_]+", op_name.group(1)) if p in _PHASES]
    return "/".join(stages[-1:] + phases[-1:])
  chain = [frame.rsplit(":", 2) for frame in frames.get(name, "").split(" < ") if ":" in frame]
  for (file, _, function), (outer, _, _) in zip(chain, chain[1:]):  # innermost first
    if outer.endswith(_MJX_FORWARD) and "mujoco/mjx/_src/" in file and file != outer:
      return _MJX_NAMES.get(function, f"mjx {os.path.basename(file)[:-3]}.{function}")
  for file, _, function in chain:  # ops of forward.py's own functions
    if file.endswith(_MJX_FORWARD) and "wrapper" not in function:
      return _MJX_NAMES.get(function, f"mjx forward.{function}")
  return "(unscoped)"


def analyse(text: str, rollout: int = 0) -> dict:
  """Kernel, launch, loop and scope counts of a GPU-optimized HLO module (see the docstring);
  with `rollout` T, also those of the entry's T-trip loop (the rollout's scan) per trip."""
  from compile_kernels import frame_lines

  comps, entry = parse(text)
  frames = frame_lines(text, 64)
  out = dict(kernels=0, per_trip=[], whiles=0, known=0, conditionals=0,
             hlo=sum(len(v) for v in comps.values()), scopes=collections.Counter(),
             ops=collections.Counter(), listing=[])
  roots = {c: next((op for _, op, line in v if line.lstrip().startswith("ROOT")), "?")
           for c, v in comps.items()}

  seen = set()

  def walk(comp: str) -> tuple[float, float]:
    """(kernels launched, `while` trips) per run of `comp`, unknown-trip loops apart; counts
    each computation's kernels once into the static totals."""
    static, launches, trips = comp not in seen, 0.0, 0.0
    seen.add(comp)
    for name, op, line in comps[comp]:
      if op not in _FREE:
        launches += 1
        if static:
          out["kernels"] += 1
          out["ops"][op] += 1
          scope = scope_of(line, frames, name)
          out["scopes"][scope] += 1
          fused = re.search(r"\bcalls=%?([\w.\-]+)", line) if op == "fusion" else None
          shape = line.split(" = ", 1)[1].split(" ")[0]
          out["listing"].append((scope, comp, roots.get(fused.group(1)) if fused else op,
                                 shape[:48], frames.get(name, "")))
      if op == "while":
        out["whiles"] += static
        n = trip_count(line)
        out["known"] += static and n is not None
        body = walk(re.search(r"\bbody=%?([\w.\-]+)", line).group(1))
        cond = walk(re.search(r"\bcondition=%?([\w.\-]+)", line).group(1))
        if n is not None:
          launches += n * body[0] + (n + 1) * cond[0]
          trips += n * (1 + body[1]) + (n + 1) * cond[1]
        elif static:
          op_name = re.search(r'op_name="([^"]*)"', line)
          where = op_name.group(1).split("/while")[0].rsplit("/", 1)[-1] if op_name else ""
          out["per_trip"].append((f"{scope_of(line, frames, name)} ({where})",
                                  body[0] + cond[0], body[1] + cond[1]))
      elif op == "conditional":
        out["conditionals"] += static
        launches += max(walk(b)[0] for b in callees(op, line))  # the costliest branch
      else:
        for callee in callees(op, line):
          launches, trips = (a + b for a, b in zip((launches, trips), walk(callee)))
    return launches, trips

  out["fixed"], out["trips"] = walk(entry)
  scans = [line for _, op, line in comps[entry] if op == "while" and trip_count(line) == rollout]
  if rollout and len(scans) == 1:
    body, cond = (re.search(rf"\b{k}=%?([\w.\-]+)", scans[0]).group(1)
                  for k in ("body", "condition"))
    (launches, trips), (cond_launches, cond_trips) = walk(body), walk(cond)
    out["scan"] = launches + cond_launches, trips + cond_trips
    out["scan_ops"] = collections.Counter(op for _, op, _ in comps[body] if op not in _FREE)
  return out


def main():
  p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
  p.add_argument("models", nargs="+")
  p.add_argument("--batch", type=int, default=8192, help="0: one world, jit(step) (latency)")
  p.add_argument("--engines", nargs="+", default=["jaxmj", "jaxmj-fast", "mjx"],
                 choices=["jaxmj", "jaxmj-fast", "mjx", "base"])
  p.add_argument("--base", metavar="REF", help="engine `base`: jaxmj at git revision REF")
  p.add_argument("--rollout", type=int, default=0, metavar="T",
                 help="compile the rollout instead: vmap of a T-step scan of the step")
  p.add_argument("--gpu", choices=sorted(_GPUS), default="h200")
  p.add_argument("--venv", default=os.environ.get("JAXMJ_GPU_VENV", "/work/scratch/gpuvenv"),
                 help="scratch venv with jax[cuda12] (env JAXMJ_GPU_VENV)")
  p.add_argument("--scopes", action="store_true", help="kernels per stage")
  p.add_argument("--list", metavar="SCOPE", help="every kernel of the stages matching SCOPE")
  p.add_argument("--save", metavar="DIR", help="keep each optimized HLO there")
  p.add_argument("--x64", action="store_true", help="float64 (default float32)")
  p.add_argument("--child", metavar="HLO_PATH", help=argparse.SUPPRESS)
  p.add_argument("--site", nargs="*", default=[], help=argparse.SUPPRESS)
  args = p.parse_args()
  if args.child:
    return child(args)

  python = os.path.join(args.venv, "bin", "python")
  if not os.path.exists(python):
    sys.exit(f"gpu_hlo: no scratch venv at {args.venv} (--venv or JAXMJ_GPU_VENV); set it up "
             "as this script's docstring says")
  sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
  env = dict(os.environ, PYTHONPATH=_ROOT, TF_CPP_MIN_LOG_LEVEL="2")
  rows = []
  with tempfile.TemporaryDirectory() as tmp:
    for model in args.models:
      for engine in args.engines:
        hlo = os.path.join(args.save or tmp, f"{os.path.basename(model)[:-4]}_{engine}.hlo")
        if args.save:
          os.makedirs(args.save, exist_ok=True)
        cmd = [python, os.path.abspath(__file__), model, "--engines", engine, "--batch",
               str(args.batch), "--rollout", str(args.rollout), "--gpu", args.gpu, "--child",
               hlo, "--site", *site.getsitepackages()] + (["--x64"] if args.x64 else []) + (
               ["--base", args.base] if args.base else [])
        run = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if run.returncode:
          if "no compile-only CUDA topology" in run.stderr:
            sys.exit(run.stderr.strip().splitlines()[-1])
          last = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ""
          print(f"gpu_hlo: {engine} on {model} failed: {last}", file=sys.stderr)
          continue
        with open(hlo) as f:
          counts = analyse(f.read(), args.rollout)
        counts.update(model=os.path.basename(model), engine=engine,
                      compile=run.stderr.strip().splitlines()[-1])
        rows.append(counts)

  print(f"{args.gpu} target, {f'batch {args.batch}' if args.batch else 'one world (no vmap)'}, "
        f"{f'rollout of {args.rollout} steps, ' if args.rollout else ''}"
        f"{'float64' if args.x64 else 'float32'}; "
        f"load {os.getloadavg()[0]:.1f}")
  print(f"{'model':<18} {'engine':<11} {'kernels':>7} {'launches per step':<28} "
        f"{'while (known)':>13} {'trips':>5} {'cond':>4} {'HLO':>6}  compile")
  for r in rows:
    trips = "".join(f" + {n:.0f}/trip" for _, n, _ in r["per_trip"])
    launches = f"{r['fixed']:.0f}{trips}"
    print(f"{r['model']:<18} {r['engine']:<11} {r['kernels']:7d} {launches:<28} "
          f"{r['whiles']:>9d} ({r['known']}) {r['trips']:5.0f} {r['conditionals']:4d} "
          f"{r['hlo']:6d}  {r['compile']}")
    for where, n, inner in r["per_trip"]:
      print(f"{'':<31}unknown-trip loop in {where}: {n:.0f} kernels and {inner:.0f} "
            "inner known-count trips per trip")
    kinds = ", ".join(f"{k} {v}" for k, v in r["ops"].most_common())
    print(f"{'':<31}kernels by op: {kinds}")
    if "scan" in r:
      kinds = ", ".join(f"{k} {v}" for k, v in r["scan_ops"].most_common())
      print(f"{'':<31}the scan's body: {r['scan'][0]:.0f} launches and {r['scan'][1]:.0f} "
            f"inner trips per step; its own kernels by op: {kinds}")
  if args.scopes:
    for r in rows:
      print(f"{r['model']} {r['engine']}: kernels by stage")
      for where, n in sorted(r["scopes"].items(), key=lambda kv: -kv[1]):
        print(f"  {n:5d}  {where}")
  if args.list is not None:
    for r in rows:
      print(f"{r['model']} {r['engine']}: kernels of stages matching {args.list!r} (stage, "
            "computation, root op, shape, source)")
      for scope, comp, root, shape, where in r["listing"]:
        if args.list in scope:
          source = " < ".join(f.split(":")[0].rsplit("/", 1)[-1] + ":" + f.split(":")[1]
                              for f in where.split(" < ")[:2] if f.count(":") >= 2)
          print(f"  {scope:<26} {comp[:24]:<24} {root:<20} {shape:<48} {source}")


if __name__ == "__main__":
  main()
