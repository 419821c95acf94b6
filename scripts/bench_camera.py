"""The ray-cast camera's speed: jaxmj.camera_image (64x64 RGB + depth, vmapped over a batch
of worlds, float32) beside mujoco.Renderer (OpenGL, one scene at a time, RGB and depth
passes).

Poses come from MuJoCo's mj_forward (the benchmark times rendering alone); every world of
the batch is a copy of that state. Reports per scene: jaxmj's compile time, renders/s at
batch B (median of --reps calls after a warm-up) and mujoco.Renderer's renders/s (free
camera, shadows on as its defaults).

  python scripts/bench_camera.py [--batch 1024] [--chunk 64] [--scenes humanoid arm grid]
                                 [--culling]
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import jaxmj

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENES = {"humanoid": "models/humanoid_floor.xml", "arm": "models/urdf/arm6.urdf",
          "meshes": "models/mesh_drop.xml", "terrain": "models/terrain.xml", "grid": None}
GRID_TYPES = ("box", "sphere", "capsule", "cylinder", "ellipsoid")


def grid_xml(n: int = 10, camera: str = "") -> str:
  """A floor under an n x n grid of primitives (the five types in turn): many geoms, each
  seen by a few pixels of the free camera. `camera`: MJCF of model cameras to add
  (tests/camera/test_tile_culling.py uses this scene too)."""
  geoms = []
  for i in range(n * n):
    x, y = (i % n - (n - 1) / 2) * 0.3, (i // n - (n - 1) / 2) * 0.3
    size = ".1 .08 .06" if GRID_TYPES[i % 5] in ("box", "ellipsoid") else ".08 .06"
    geoms.append(f'<geom type="{GRID_TYPES[i % 5]}" size="{size}" pos="{x:.2f} {y:.2f} .1" '
                 f'euler="0 {7 * i % 40} {11 * i % 90}" rgba="{i % 3 / 2} .5 {i % 5 / 4} 1"/>')
  return ('<mujoco><worldbody><light pos="0 0 3"/><geom type="plane" size="3 3 .1"/>'
          + camera + "".join(geoms) + "</worldbody></mujoco>")


def posed(m, mjd):
  """jaxmj Data carrying MuJoCo's geom, camera and light poses."""
  return jaxmj.make_data(m).replace(
    geom_xpos=jnp.asarray(mjd.geom_xpos), geom_xmat=jnp.asarray(mjd.geom_xmat).reshape(-1, 3, 3),
    cam_xpos=jnp.asarray(mjd.cam_xpos), cam_xmat=jnp.asarray(mjd.cam_xmat).reshape(-1, 3, 3),
    light_xpos=jnp.asarray(mjd.light_xpos), light_xdir=jnp.asarray(mjd.light_xdir))


def bench_mujoco(mjm, mjd, size: int, n: int) -> float:
  import mujoco

  with mujoco.Renderer(mjm, size, size) as r:
    def once():
      r.disable_depth_rendering()
      r.update_scene(mjd)
      r.render()
      r.enable_depth_rendering()
      r.update_scene(mjd)
      r.render()
    once()
    t = time.perf_counter()
    for _ in range(n):
      once()
    return n / (time.perf_counter() - t)


def bench_jaxmj(m, d, size: int, batch: int, chunk: int, reps: int,
                **options) -> tuple[float, float]:
  batched = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch, *x.shape)), d)
  image = lambda d: jaxmj.camera_image(m, d, -1, size, size, ("rgb", "depth"),  # noqa: E731
                                       **options)
  fn = jax.jit(lambda ds: jax.lax.map(image, ds, batch_size=min(chunk, batch)))
  t = time.perf_counter()
  jax.block_until_ready(fn(batched))
  compile_s = time.perf_counter() - t
  times = []
  for _ in range(reps):
    t = time.perf_counter()
    jax.block_until_ready(fn(batched))
    times.append(time.perf_counter() - t)
  return compile_s, batch / float(np.median(times))


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--batch", type=int, default=1024)
  p.add_argument("--chunk", type=int, default=64, help="worlds rendered at once (memory)")
  p.add_argument("--size", type=int, default=64)
  p.add_argument("--reps", type=int, default=3)
  p.add_argument("--scenes", nargs="+", default=["humanoid", "arm"], choices=list(SCENES))
  p.add_argument("--candidates", type=int, default=4, help="camera_image's tile_candidates")
  p.add_argument("--softness", type=float, default=None, help="camera_image's softness")
  p.add_argument("--culling", action="store_true",
                 help="also time camera_image without per-tile culling (tile=None)")
  args = p.parse_args()
  from jaxmj.rendering import load_mujoco

  mujoco = load_mujoco()
  print(f"{jax.devices()[0].platform}, {args.size}x{args.size} RGB+depth, batch {args.batch}")
  print(f"{'scene':10} {'geoms':>5} {'compile s':>9} {'jaxmj renders/s':>16} "
        f"{'MuJoCo renders/s':>17} {'ratio':>6}")
  for name in args.scenes:
    if SCENES[name] is None:
      mjm, m = mujoco.MjModel.from_xml_string(grid_xml()), jaxmj.Model.from_xml_string(
        grid_xml())
    else:
      path = os.path.join(ROOT, SCENES[name])
      mjm, m = mujoco.MjModel.from_xml_path(path), jaxmj.Model.from_xml_path(path)
    mjd = mujoco.MjData(mjm)
    mujoco.mj_forward(mjm, mjd)
    compile_s, ours = bench_jaxmj(m, posed(m, mjd), args.size, args.batch, args.chunk,
                                  args.reps, tile_candidates=args.candidates,
                                  softness=args.softness)
    theirs = bench_mujoco(mjm, mjd, args.size, 50)
    print(f"{name:10} {m.ngeom:5d} {compile_s:9.1f} {ours:16.1f} {theirs:17.1f} "
          f"{ours / theirs:6.2f}")
    if args.culling:
      compile_s, unculled = bench_jaxmj(m, posed(m, mjd), args.size, args.batch, args.chunk,
                                        args.reps, tile=None, softness=args.softness)
      print(f"{'  no cull':10} {m.ngeom:5d} {compile_s:9.1f} {unculled:16.1f} {'':17} "
            f"{unculled / theirs:6.2f}  (culling: x{ours / unculled:.2f})")


if __name__ == "__main__":
  main()
