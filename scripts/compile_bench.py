"""MJCF compile time: jaxmj's compiler beside mujoco.MjModel.from_xml_path (`bench.py --compile`).

Each model is compiled `repeat` times in this process after one warm-up compile (imports and
caches warm); the median wall time (time.perf_counter) is reported. Besides the given files,
a generated 100-body chain (100 hinges, 100 capsules, 100 motors, a floor) is measured.
"""

from __future__ import annotations

import statistics
import time

import jax

import jaxmj


def chain_xml(n: int = 100) -> str:
  """A serial chain of n bodies, each with a hinge, a capsule and a motor, over a floor."""
  bodies = "".join(f'<body name="b{i}" pos="0 0 .3"><joint name="j{i}" axis="{i % 2} '
                   f'{(i + 1) % 2} 0" range="-1 1"/><geom type="capsule" size=".05 .1"/>'
                   for i in range(n)) + "</body>" * n
  motors = "".join(f'<motor joint="j{i}"/>' for i in range(n))
  return (f'<mujoco model="chain{n}"><worldbody><geom type="plane" size="5 5 .1"/>{bodies}'
          f"</worldbody><actuator>{motors}</actuator></mujoco>")


def _median_time(fn, repeat: int) -> float:
  fn()
  times = []
  for _ in range(repeat):
    start = time.perf_counter()
    fn()
    times.append(time.perf_counter() - start)
  return statistics.median(times)


def measure(paths: list[str], repeat: int = 5) -> list[dict]:
  """[{model, jaxmj_s, mujoco_s}] for each file and the generated 100-body chain."""
  import mujoco

  jax.config.update("jax_enable_x64", True)
  cases = [(p, lambda p=p: jaxmj.Model.from_xml_path(p),
            lambda p=p: mujoco.MjModel.from_xml_path(p)) for p in paths]
  xml = chain_xml()
  cases.append(("generated 100-body chain", lambda: jaxmj.Model.from_xml_string(xml),
                lambda: mujoco.MjModel.from_xml_string(xml)))
  out = []
  for name, ours, theirs in cases:
    try:
      out.append({"model": name, "jaxmj_s": _median_time(ours, repeat),
                  "mujoco_s": _median_time(theirs, repeat)})
    except Exception as e:  # a file one compiler rejects is reported, not fatal
      out.append({"model": name, "error": f"{type(e).__name__}: {e}"})
  return out


def format_table(rows: list[dict]) -> str:
  lines = [f"{'model':<40} {'jaxmj s':>9} {'mujoco s':>9} {'ratio':>7}"]
  for r in rows:
    if "error" in r:
      lines.append(f"{r['model']:<40} {r['error']}")
      continue
    ratio = r["jaxmj_s"] / r["mujoco_s"] if r["mujoco_s"] > 0 else float("nan")
    lines.append(f"{r['model']:<40} {r['jaxmj_s']:>9.3f} {r['mujoco_s']:>9.4f} {ratio:>7.0f}")
  return "\n".join(lines)
