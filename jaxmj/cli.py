"""`jaxmj simulate MODEL.xml`: compile, jit and run a batched simulation, then report speed.
`jaxmj train ENV --algo ppo|sac|apg`: train a policy on a jaxmj.envs task (jaxmj[rl]).
`jaxmj render MODEL.xml -o out.mp4`: simulate one world and write a video of it.
`jaxmj cache [--clear]`: what the persistent cache below holds, or remove it.

Every command keeps XLA's compiled programs in a persistent cache (default
~/.cache/jaxmj/xla, or $JAXMJ_CACHE_DIR; `--cache-dir`) of at most 2 GiB, the least recently
used programs evicted first; `simulate` keeps its traced step loop beside them
(jaxmj/trace_cache.py), so a second run of the same model and sizes skips tracing and XLA's
compile. `--no-cache` turns both off. `--devices N` shards the worlds over N devices (a
NamedSharding over the batch axis).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def _simulate(args) -> int:
  import jax
  import jax.numpy as jnp
  from tqdm import tqdm

  import jaxmj
  from jaxmj import trace_cache

  if args.x64:
    jax.config.update("jax_enable_x64", True)
  cache = _cache_directory(args)
  hits = _persistent_cache(jax, cache)
  jnp.zeros(()).block_until_ready()  # start the backend outside the timings
  devices = jax.devices()[: args.devices]
  if len(devices) < args.devices or args.batch % args.devices:
    print(f"error: --devices {args.devices} needs that many devices ({len(jax.devices())} "
          f"found) and a --batch divisible by it", file=sys.stderr)
    return 2
  t0 = time.perf_counter()
  try:
    m = jaxmj.Model.from_xml_path(args.model)
  except jaxmj.MJCFError as e:
    print(f"jaxmj simulate: error: {e}", file=sys.stderr)
    return 2
  t_model = time.perf_counter() - t0
  if args.arithmetic:
    m = m.replace(opt=m.opt.replace(arithmetic=args.arithmetic))
  print(f"model      {m.model_name!r} from {args.model}")
  print(f"sizes      nq={m.nq} nv={m.nv} nbody={m.nbody} njnt={m.njnt} ngeom={m.ngeom} "
        f"nsite={m.nsite} nkey={m.nkey}")
  print(f"backend    {jax.default_backend()} ({jax.devices()[0].device_kind}), "
        f"{'float64' if args.x64 else 'float32'}, {m.opt.arithmetic} arithmetic")
  print(f"mjcf       compiled in {t_model * 1e3:.1f} ms")

  key = _keyframe(m, [jaxmj.id2name(m, "key", i) for i in range(m.nkey)], args.key)
  if isinstance(key, str):
    print(f"jaxmj simulate: error: {key}", file=sys.stderr)
    return 2
  d = jaxmj.reset(m, key)
  worlds_of = jax.vmap(lambda v: d.replace(qvel=v))  # a batch differing in initial qvel
  shapes = jax.eval_shape(worlds_of, jax.ShapeDtypeStruct((args.batch, m.nv), d.qvel.dtype))
  shard = {}
  if args.devices > 1:  # every batched leaf split along its leading (world) axis, in and out
    mesh = jax.sharding.Mesh(np.array(devices), ("worlds",))
    worlds = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("worlds"))
    shard = dict(in_shardings=(worlds, None), out_shardings=worlds)
  chunk = min(args.chunk, args.steps)
  lengths = [chunk] * (args.steps // chunk) + [args.steps % chunk] * bool(args.steps % chunk)

  shapes, treedef = jax.tree.flatten(shapes)

  def run(leaves, nstep):  # nstep is traced: the shorter last chunk reuses the compiled loop
    # flat leaves in and out: an Exported (the trace cache) keeps no pytree types of jaxmj's
    step = jax.vmap(jaxmj.step, in_axes=(None, 0))
    batch = jax.tree.unflatten(treedef, leaves)
    return jax.tree.leaves(jax.lax.fori_loop(0, nstep, lambda _, d: step(m, d), batch))

  # the worlds' shapes, not the worlds: a batch too large for the device is refused below
  # before any of it is allocated
  specs = ([jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=worlds if shard else None)
            for x in shapes], jax.ShapeDtypeStruct((), jnp.int32))
  traces = None if cache is None else os.path.join(cache, trace_cache.TRACES)
  t0 = time.perf_counter()
  try:
    if traces is None:  # no export: ~1 s less than a trace cache's first run
      fun, loaded = run, False
    else:
      exp, loaded = trace_cache.exported(jax.jit(run, **shard), specs, traces,
                                         trace_cache.key(m, specs, ("simulate",)))
      fun = exp.call
    lowered = jax.jit(fun, **shard).lower(*specs)
    t_lower = time.perf_counter() - t0
    # hits counted from here: tracing runs small eager programs (a Data's empty fields
    # filled in) that hit the cache even where the step loop's program misses it
    hits.clear()
    compiled = lowered.compile()
  except NotImplementedError as e:
    print(f"jaxmj simulate: error: {e}", file=sys.stderr)
    return 2
  t_compile = time.perf_counter() - t0 - t_lower
  state = lambda hit: "off" if cache is None else "hit" if hit else "miss"  # noqa: E731
  print(f"jit        batched step loop {'loaded' if loaded else 'traced'} in {t_lower:.2f} s "
        f"(trace cache {state(loaded)}), compiled in {t_compile:.2f} s (persistent cache "
        f"{state(_HIT in hits)}{'' if cache is None else ', ' + cache})")
  print(f"devices    {len(devices)} x {devices[0].device_kind}"
        + (", worlds sharded over them" if len(devices) > 1 else ""))
  refusal = _too_large(compiled, devices, args.batch)
  if refusal:
    print(f"jaxmj simulate: error: {refusal}", file=sys.stderr)
    return 2

  rng = np.random.default_rng(args.seed)
  qvel = d.qvel + args.noise * jnp.asarray(rng.normal(size=(args.batch, m.nv)), d.qvel.dtype)
  batch = worlds_of(qvel)
  if shard:
    batch = jax.device_put(batch, worlds)
  leaves = jax.tree.leaves(batch)

  t0 = time.perf_counter()
  for n in tqdm(lengths, desc="simulating", unit="chunk", disable=args.quiet):
    leaves = jax.block_until_ready(compiled(leaves, np.int32(n)))
  batch = jax.tree.unflatten(treedef, leaves)
  elapsed = time.perf_counter() - t0

  total = args.steps * args.batch
  diverged = int(np.sum(np.asarray(batch.warning).sum(axis=-1) > 0))
  com = np.asarray(batch.subtree_com[:, 0])  # (batch, 3): each world's centre of mass
  print(f"ran        {args.batch} worlds x {args.steps} steps = {total} steps of "
        f"{float(m.opt.timestep) * 1e3:g} ms ({float(batch.time[0]):.3f} s simulated)")
  print(f"speed      {total / elapsed:,.0f} steps/s ({elapsed:.2f} s wall, "
        f"{total / elapsed * float(m.opt.timestep):,.1f}x real time summed over worlds)")
  print(f"state      centre of mass height {com[:, 2].mean():.3f} m (min {com[:, 2].min():.3f}, "
        f"max {com[:, 2].max():.3f}), mean position "
        f"{np.array2string(com.mean(axis=0), precision=3)}; "
        f"{diverged} world(s) flagged diverged")
  return 0


def _free_bytes(device) -> int | None:
  """Memory `device` can still allocate, or None where neither the device nor the host says
  (a CPU device's memory is the host's: MemAvailable)."""
  stats = device.memory_stats() if hasattr(device, "memory_stats") else None
  if stats and "bytes_limit" in stats:
    return stats["bytes_limit"] - stats.get("bytes_in_use", 0)
  if device.platform != "cpu":
    return None
  try:
    with open("/proc/meminfo") as f:
      info = dict(line.split(":", 1) for line in f)
    return int(info["MemAvailable"].split()[0]) * 1024
  except (OSError, KeyError, ValueError):
    return None


def _too_large(compiled, devices, nworld: int) -> str | None:
  """Why the compiled step loop cannot run on `devices`, or None. XLA's memory analysis of
  the loop (per device: its worlds in, their results out, the step's temporaries) against
  what each device has free: a model whose every world takes hundreds of MB (MuJoCo's
  replicate/bowl.xml: 272,664 contact slots) is refused by name instead of killed by the
  operating system, or stopped by XLA, midway."""
  try:
    stats = compiled.memory_analysis()
  except (NotImplementedError, RuntimeError):  # a backend without the analysis: not checked
    return None
  free = [_free_bytes(x) for x in devices]
  if stats is None or None in free:
    return None
  need = (stats.argument_size_in_bytes + stats.output_size_in_bytes
          + stats.temp_size_in_bytes - stats.alias_size_in_bytes)  # per device
  # CPU devices share the host's memory: all of theirs against it once
  share = len(devices) if devices[0].platform == "cpu" else 1
  if need * share <= min(free):
    return None
  per_world = need * len(devices) / nworld
  fit = int(min(free) * len(devices) / share // per_world)
  where = ("the host" if share > 1 else
           f"each of {len(devices)} {devices[0].platform} device(s)")
  return (f"{nworld} worlds need {_bytes(need * share)} on {where} ({_bytes(per_world)} a "
          f"world: its state, its results and the step's temporaries, by XLA's memory "
          f"analysis) and {_bytes(min(free))} are free: lower --batch (about {fit} fit) or cap "
          f"the model's contacts (<size nconmax>, max_contact_points)")


def _bytes(n: float) -> str:
  unit = next(u for u in range(4, -1, -1) if n >= 1024**u or u == 0)
  return f"{n / 1024**unit:.1f} {('', 'Ki', 'Mi', 'Gi', 'Ti')[unit]}B"


def _render_trajectory(args):
  """(Model, state fields (T, ...), physics steps per frame) of the run to film: the task
  MODEL driven by the policy at --policy, or the MJCF file MODEL under zero or random
  controls."""
  import jax
  import jax.numpy as jnp

  import jaxmj

  if args.policy is not None:
    from jaxmj import envs  # the policy's task and checkpoint format belong to jaxmj.envs

    env, policy = envs.load(args.model), envs.load_policy(args.policy)

    def act(state, _):
      state = env.step(state, policy(state.obs))
      return state, {f: getattr(state.pipeline_state, f) for f in ("time", "qpos", "qvel")}

    nframe = max(1, round(args.duration / float(env.dt)))
    _, traj = jax.jit(lambda key: jax.lax.scan(act, env.reset(key), None, nframe))(
      jax.random.PRNGKey(args.seed))
    return env.sys, traj, env.n_frames
  m = jaxmj.Model.from_xml_path(args.model)
  d = jaxmj.reset(m, args.key) if args.key is not None else jaxmj.make_data(m)
  rng = np.random.default_rng(args.seed)
  nstep = max(1, round(args.duration / float(m.opt.timestep)))
  if args.controls == "random":  # uniform over ctrlrange, [-1, 1] for unlimited controls
    lo, hi = np.asarray(m.actuator_ctrlrange).T
    limited = np.asarray(m.actuator_ctrllimited, bool)
    lo, hi = np.where(limited, lo, -1.0), np.where(limited, hi, 1.0)
    ctrl = rng.uniform(lo, hi, size=(nstep, m.nu))
  else:
    ctrl = np.broadcast_to(np.asarray(d.ctrl), (nstep, m.nu))
  fields = ("time", "qpos", "qvel", "act") + (("mocap_pos", "mocap_quat") if m.nmocap else ())
  _, traj = jax.jit(lambda d, u: jaxmj.rollout(m, d, u, fields=fields))(
    d, jnp.asarray(ctrl, d.qpos.dtype))
  return m, traj, 1


def _render(args) -> int:
  """`jaxmj render`: simulate, draw every frame with mujoco.Renderer, write a video."""
  import jax

  import jaxmj
  from jaxmj import rendering

  cache = _cache_directory(args)
  events = _persistent_cache(jax, cache)

  rendering.load_mujoco()  # before jaxmj.envs' libraries import mujoco without a GL backend
  try:
    m, traj, substeps = _render_trajectory(args)
  except (jaxmj.MJCFError, OSError) as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  dt = float(m.opt.timestep) * substeps
  stride = max(1, round(1 / (args.fps * dt)))  # film at about --fps, shown in real time
  traj = {k: np.asarray(v)[stride - 1::stride] for k, v in traj.items()}
  frames = rendering.render(m, traj, camera=args.camera, height=args.height, width=args.width)
  rendering.write_video(args.output, frames, fps=1 / (stride * dt))
  print(f"wrote      {args.output}: {len(frames)} frames of {args.width}x{args.height}, "
        f"{len(frames) * stride * dt:.2f} s simulated; {_cache_report(events, cache)}")
  return 0


def _add_render_parser(sub) -> None:
  ren = sub.add_parser("render", help="simulate a model and write a video of it (jaxmj[render])")
  ren.add_argument("model", help="MJCF file; with --policy, a task name of jaxmj.envs")
  ren.add_argument("-o", "--output", default="out.mp4", help="video file (mp4, gif, ...)")
  ren.add_argument("--policy", default=None,
                   help="checkpoint of `jaxmj train` driving the task MODEL")
  ren.add_argument("--controls", choices=("zero", "random"), default="zero",
                   help="controls without a policy: held at zero, or uniform random per step")
  ren.add_argument("--duration", type=float, default=3.0, help="simulated seconds")
  ren.add_argument("--key", default=None, help="start from this keyframe (name or index)")
  ren.add_argument("--camera", default="-1", help="camera name or id (-1: free camera)")
  ren.add_argument("--height", type=int, default=240)
  ren.add_argument("--width", type=int, default=320)
  ren.add_argument("--fps", type=float, default=30.0, help="frames per simulated second")
  ren.add_argument("--seed", type=int, default=0)
  _add_cache_arguments(ren)


def _keyframe(m, names: list, key: str | None) -> int | None | str:
  """The keyframe index `--key` names (`names`: the model's keyframe names), or (a str) the
  error saying which keys exist."""
  if key is None:
    return None
  if key in names:
    return names.index(key)
  if key.isdigit() and int(key) < m.nkey:
    return int(key)
  if not m.nkey:
    return f"--key {key}: model {m.model_name!r} has no keyframes; leave out --key"
  listed = ", ".join(f"{i} ({n})" if n else str(i) for i, n in enumerate(names))
  return f"--key {key}: no such keyframe; pass a name or index of one of: {listed}"


class _Parser(argparse.ArgumentParser):
  """argparse with its errors on one line (no usage block), still exit status 2."""

  def error(self, message):
    self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _count(text: str) -> int:
  try:
    value = int(text)
  except ValueError:
    raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
  if value < 1:
    raise argparse.ArgumentTypeError(f"{value} is not at least 1")
  return value


def _nonnegative(text: str) -> float:
  try:
    value = float(text)
  except ValueError:
    raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
  if not value >= 0:
    raise argparse.ArgumentTypeError(f"{text} is not a number >= 0")
  return value


_HIT, _MISS = "/jax/compilation_cache/cache_hits", "/jax/compilation_cache/cache_misses"


def _persistent_cache(jax, directory: str | None) -> list:
  """XLA's persistent compilation cache on in `directory`, bounded
  (trace_cache.enable_compilation_cache; off for None); returns a list that gains the event's
  name on every cache hit and miss."""
  from jaxmj import trace_cache

  events = []
  if directory is None:
    jax.config.update("jax_enable_compilation_cache", False)
    return events
  trace_cache.enable_compilation_cache(directory)
  jax.monitoring.register_event_listener(
    lambda event, **_: events.append(event) if event in (_HIT, _MISS) else None)
  return events


def _cache_report(events: list, directory: str | None) -> str:
  """What the persistent cache did for a command's compiles, in words."""
  if directory is None:
    return "persistent cache off"
  return (f"{events.count(_HIT)} of {len(events)} compiled programs loaded from the "
          f"persistent cache ({directory})")


def _cache_directory(args) -> str | None:
  """The persistent cache's folder a command was given (None: --no-cache)."""
  from jaxmj import trace_cache

  return None if args.no_cache else args.cache_dir or trace_cache.default_directory()


def _cache(args) -> int:
  """`jaxmj cache [--clear]`: the folder's compiled and traced programs, and their budgets."""
  from jaxmj import trace_cache

  folder = args.cache_dir or trace_cache.default_directory()
  if args.clear:
    gone = trace_cache.clear_cache(folder)
    print(f"removed    XLA programs: {gone['compiled'][0]}, traced step loops: "
          f"{gone['traced'][0]} ({(gone['compiled'][1] + gone['traced'][1]) / 2**20:.1f} MiB) "
          f"from {folder}")
    return 0
  held = trace_cache.cache_usage(folder)
  print(f"folder     {folder}")
  for kind, what, budget in (("compiled", "XLA programs", trace_cache.XLA_MAX_BYTES),
                             ("traced", "traced step loops", trace_cache.MAX_BYTES)):
    count, size = held[kind]
    print(f"{kind:<10} {what}: {count}, {size / 2**20:.1f} MiB (kept within {budget / 2**20:.0f} "
          "MiB)")
  return 0


def _add_cache_arguments(parser) -> None:
  parser.add_argument("--cache-dir", default=None,
    help="persistent compilation cache (default $JAXMJ_CACHE_DIR or ~/.cache/jaxmj/xla)")
  parser.add_argument("--no-cache", action="store_true", help="no persistent compilation cache")


def main(argv=None) -> int:
  from jaxmj import __version__

  parser = _Parser(prog="jaxmj", description=__doc__)
  parser.add_argument("--version", action="version", version=f"jaxmj {__version__}")
  sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
  sim = sub.add_parser("simulate", help="simulate a model, batched, and report speed")
  sim.add_argument("model", help="MJCF or URDF file")
  sim.add_argument("--steps", type=_count, default=1000, help="steps per world")
  sim.add_argument("--batch", type=_count, default=64, help="number of worlds")
  sim.add_argument("--chunk", type=_count, default=100, help="steps per jitted call")
  sim.add_argument("--key", default=None, help="start from this keyframe (name or index)")
  sim.add_argument("--noise", type=_nonnegative, default=0.01,
                   help="std of initial qvel noise")
  sim.add_argument("--seed", type=int, default=0)
  sim.add_argument("--x64", action="store_true", help="simulate in float64")
  sim.add_argument("--arithmetic", choices=["exact", "fast"],
                   help="exact: MuJoCo's rounding bit for bit; fast: the compiler may fuse "
                   "and reorder (default: the model's opt.arithmetic, exact)")
  sim.add_argument("--quiet", action="store_true", help="no progress bar")
  _add_cache_arguments(sim)
  sim.add_argument("--devices", type=_count, default=1,
                   help="shard the worlds over this many devices (divides --batch)")
  _add_train(sub)
  _add_render_parser(sub)
  cache = sub.add_parser("cache", help="show what the persistent cache holds, or clear it")
  cache.add_argument("--cache-dir", default=None,
                     help="the cache folder (default $JAXMJ_CACHE_DIR or ~/.cache/jaxmj/xla)")
  cache.add_argument("--clear", action="store_true",
                     help="remove the compiled and traced programs (nothing else there)")
  args = parser.parse_args(argv)
  if args.command == "render":
    if args.key is not None and args.key.isdigit():
      args.key = int(args.key)
    args.camera = int(args.camera) if args.camera.lstrip("-").isdigit() else args.camera
  from jaxmj.tracing_gc import relaxed_gc

  # every command is mostly tracing and compiling: the trainer's and the rollouts' programs
  # too, which the public functions' own relaxation covers only in part
  with relaxed_gc():
    return {"train": _train, "render": _render, "cache": _cache}.get(
      args.command, _simulate)(args)


def _add_train(sub) -> None:
  tr = sub.add_parser("train", help="train a policy on a jaxmj.envs task (needs jaxmj[rl])")
  tr.add_argument("env", help="task name (python -c 'import jaxmj.envs; "
                  "print(jaxmj.envs.names())')")
  tr.add_argument("--algo", choices=("ppo", "sac", "apg"), default="ppo")
  tr.add_argument("--num-timesteps", type=int, default=1_000_000, help="env steps to train")
  tr.add_argument("--num-evals", type=int, default=10, help="evaluations during the run")
  tr.add_argument("--num-envs", type=int, default=None, help="parallel worlds")
  tr.add_argument("--preset", choices=("cpu", "playground"), default="cpu",
                  help="settings: cpu (a few CPU cores; default) or playground (MuJoCo "
                  "Playground's dm_control-suite PPO, for accelerators)")
  tr.add_argument("--episode-length", type=int, default=None)
  tr.add_argument("--out", default=None, help="run directory (default runs/ENV-ALGO)")
  tr.add_argument("--resume", action="store_true", help="continue the run in --out")
  tr.add_argument("--seed", type=int, default=0)
  tr.add_argument("--x64", action="store_true", help="train in float64")
  tr.add_argument("--quiet", action="store_true", help="no progress bar")
  _add_cache_arguments(tr)


def _train(args) -> int:
  import jax

  if args.x64:
    jax.config.update("jax_enable_x64", True)
  cache = _cache_directory(args)
  events = _persistent_cache(jax, cache)
  try:
    from jaxmj.envs.train import train
  except ImportError as e:
    print(f"error: {e}; training needs `pip install jaxmj[rl]`", file=sys.stderr)
    return 2
  out = args.out or f"runs/{args.env}-{args.algo}"
  settings = {} if args.num_envs is None else {"num_envs": args.num_envs}
  try:
    result = train(args.env, args.algo, args.num_timesteps, out, resume=args.resume,
                   seed=args.seed, num_evals=args.num_evals, preset=args.preset,
                   episode_length=args.episode_length, progress=not args.quiet, **settings)
  except (ValueError, FileNotFoundError) as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  for step, ret in result.curve:
    print(f"eval  {step:>12,d} steps  return {ret:9.2f}")
  print(f"saved {out}/ (checkpoint/, run.json, curve.png) after {result.seconds:.1f} s; "
        f"{_cache_report(events, cache)}")
  return 0


if __name__ == "__main__":
  sys.exit(main())
