"""`jaxmj simulate MODEL.xml`: compile, jit and run a batched rollout, then report speed.

XLA's compiled programs are kept in a persistent cache (default ~/.cache/jaxmj/xla, or
$JAXMJ_CACHE_DIR; `--cache-dir`), so a second run of the same model and sizes skips most of
the compile; `--no-cache` turns it off. `--devices N` shards the worlds over N devices (a
NamedSharding over the batch axis).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time

import numpy as np


def _simulate(args) -> int:
  import jax
  import jax.numpy as jnp
  from tqdm import tqdm

  import jaxmj

  if args.x64:
    jax.config.update("jax_enable_x64", True)
  hits = _persistent_cache(jax, None if args.no_cache else args.cache_dir)
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
    print(f"error: {e}", file=sys.stderr)
    return 2
  t_model = time.perf_counter() - t0
  print(f"model      {m.model_name!r} from {args.model}")
  print(f"sizes      nq={m.nq} nv={m.nv} nbody={m.nbody} njnt={m.njnt} ngeom={m.ngeom} "
        f"nsite={m.nsite} nkey={m.nkey}")
  print(f"backend    {jax.default_backend()} ({jax.devices()[0].device_kind}), "
        f"{'float64' if args.x64 else 'float32'}")
  print(f"mjcf       compiled in {t_model * 1e3:.1f} ms")

  d = jaxmj.reset(m, args.key) if args.key is not None else jaxmj.make_data(m)
  rng = np.random.default_rng(args.seed)
  qvel = d.qvel + args.noise * jnp.asarray(rng.normal(size=(args.batch, m.nv)), d.qvel.dtype)
  batch = jax.vmap(lambda v: d.replace(qvel=v))(qvel)
  shard = {}
  if args.devices > 1:  # every batched leaf split along its leading (world) axis, in and out
    mesh = jax.sharding.Mesh(np.array(devices), ("worlds",))
    worlds = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("worlds"))
    batch = jax.device_put(batch, worlds)
    shard = dict(in_shardings=worlds, out_shardings=worlds)
  chunk = min(args.chunk, args.steps)

  @functools.partial(jax.jit, **shard)
  def run(batch):
    final, traj = jax.vmap(lambda x: jaxmj.rollout(m, x, nstep=chunk, fields=("qpos",)))(batch)
    return final, traj["qpos"][:, -1]

  hits.clear()
  t0 = time.perf_counter()
  try:
    compiled = run.lower(batch).compile()
  except NotImplementedError as e:
    print(f"error: {e}", file=sys.stderr)
    return 2
  t_compile = time.perf_counter() - t0
  cache = ("off" if args.no_cache else
           f"{'hit' if hits else 'miss'}, {args.cache_dir}")
  print(f"jit        compiled batched rollout in {t_compile:.2f} s (persistent cache {cache})")
  print(f"devices    {len(devices)} x {devices[0].device_kind}"
        + (", worlds sharded over them" if len(devices) > 1 else ""))

  nchunk = max(1, args.steps // chunk)
  t0 = time.perf_counter()
  for _ in tqdm(range(nchunk), desc="simulating", unit="chunk", disable=args.quiet):
    batch, _ = compiled(batch)
    jax.block_until_ready(batch)
  elapsed = time.perf_counter() - t0

  total = nchunk * chunk * args.batch
  diverged = int(np.sum(np.asarray(batch.warning).sum(axis=-1) > 0))
  com = np.asarray(batch.subtree_com[:, 0]).mean(axis=0)
  print(f"ran        {args.batch} worlds x {nchunk * chunk} steps = {total} steps of "
        f"{float(m.opt.timestep) * 1e3:g} ms ({float(batch.time[0]):.3f} s simulated)")
  print(f"speed      {total / elapsed:,.0f} steps/s ({elapsed:.2f} s wall, "
        f"{total / elapsed * float(m.opt.timestep):,.1f}x real time summed over worlds)")
  print(f"state      mean centre of mass {np.array2string(com, precision=3)}, "
        f"{diverged} world(s) flagged diverged")
  return 0


def _persistent_cache(jax, directory: str | None) -> list:
  """Turns XLA's persistent compilation cache on in `directory` (off for None); returns a list
  that gains an entry on every cache hit."""
  hits = []
  if directory is None:
    jax.config.update("jax_enable_compilation_cache", False)
    return hits
  jax.config.update("jax_compilation_cache_dir", directory)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
  jax.monitoring.register_event_listener(
    lambda event, **_: hits.append(event) if event == "/jax/compilation_cache/cache_hits" else None)
  return hits


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(prog="jaxmj", description=__doc__)
  sub = parser.add_subparsers(dest="command", required=True)
  sim = sub.add_parser("simulate", help="simulate a model, batched, and report speed")
  sim.add_argument("model", help="MJCF file")
  sim.add_argument("--steps", type=int, default=1000, help="steps per world")
  sim.add_argument("--batch", type=int, default=64, help="number of worlds")
  sim.add_argument("--chunk", type=int, default=100, help="steps per jitted call")
  sim.add_argument("--key", default=None, help="start from this keyframe (name or index)")
  sim.add_argument("--noise", type=float, default=0.01, help="std of initial qvel noise")
  sim.add_argument("--seed", type=int, default=0)
  sim.add_argument("--x64", action="store_true", help="simulate in float64")
  sim.add_argument("--quiet", action="store_true", help="no progress bar")
  sim.add_argument("--cache-dir", default=os.environ.get(
    "JAXMJ_CACHE_DIR", os.path.join(os.path.expanduser("~"), ".cache", "jaxmj", "xla")),
    help="persistent compilation cache (default $JAXMJ_CACHE_DIR or ~/.cache/jaxmj/xla)")
  sim.add_argument("--no-cache", action="store_true", help="no persistent compilation cache")
  sim.add_argument("--devices", type=int, default=1,
                   help="shard the worlds over this many devices (divides --batch)")
  args = parser.parse_args(argv)
  if args.key is not None and args.key.isdigit():
    args.key = int(args.key)
  return _simulate(args)


if __name__ == "__main__":
  sys.exit(main())
