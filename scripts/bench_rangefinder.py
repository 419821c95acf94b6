"""A camera rangefinder's cost in a step: humanoid_floor with a depth camera on its head
(`<rangefinder camera=... data="depth">`, W x H rays), jaxmj's vmapped step (float32) with and
without the sensor beside MuJoCo C's mj_step with and without it, in one process.

  python scripts/bench_rangefinder.py [--batch 64] [--size 32 24] [--steps 20]
"""

from __future__ import annotations

import argparse
import os
import time

import jax
import jax.numpy as jnp
import mujoco

import jaxmj

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def with_depth_camera(xml: str, width: int, height: int) -> str:
  """humanoid_floor's MJCF with a camera on the head and a depth rangefinder on it."""
  cam = (f'<camera name="eye" pos="0 0 .1" xyaxes="0 -1 0 .3 0 1" resolution="{width} '
         f'{height}" fovy="70"/>')
  xml = xml.replace('<body name="head" pos="0 0 0.2">', '<body name="head" pos="0 0 0.2">'
                    + cam, 1)
  return xml.replace("</worldbody>", '</worldbody><sensor><rangefinder camera="eye" '
                     'data="depth"/></sensor>', 1)


def main():
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--batch", type=int, default=64)
  p.add_argument("--size", type=int, nargs=2, default=(32, 24), metavar=("W", "H"))
  p.add_argument("--steps", type=int, default=20)
  args = p.parse_args()
  os.chdir(os.path.join(ROOT, "models"))  # the model's relative asset paths
  plain = open("humanoid_floor.xml").read()
  for name, xml in (("plain", plain), ("depth camera", with_depth_camera(plain, *args.size))):
    m = jaxmj.Model.from_xml_string(xml)
    d = jax.vmap(lambda _, m=m: jaxmj.make_data(m))(jnp.arange(args.batch))
    step = jax.jit(jax.vmap(lambda d, m=m: jaxmj.step(m, d)))
    d = jax.block_until_ready(step(d))
    t = time.perf_counter()
    for _ in range(args.steps):
      d = step(d)
    jax.block_until_ready(d)
    ours = (time.perf_counter() - t) / args.steps
    mm = mujoco.MjModel.from_xml_string(xml)
    md = mujoco.MjData(mm)
    t = time.perf_counter()
    for _ in range(10 * args.steps):
      mujoco.mj_step(mm, md)
    theirs = (time.perf_counter() - t) / (10 * args.steps)
    print(f"{name}: jaxmj {ours * 1e3:.2f} ms a step of {args.batch} worlds "
          f"({ours / args.batch * 1e6:.1f} us a world), MuJoCo C {theirs * 1e6:.1f} us a step; "
          f"per world jaxmj/MuJoCo {ours / args.batch / theirs:.2f}")


if __name__ == "__main__":
  main()
