"""The bias of contact smoothing (opt.grad_smoothing): gradient against central differences.

A motor-driven sphere pushes a box on a damped rail (tests/solver/test_smoothing.py's model)
for 40 steps of 10 ms under a constant push. For each temperature T, prints d(box's final
position)/d(push) from jax.grad and from central differences (eps 1e-5) at two pushes:
0 N (the sphere never reaches the box: the exact derivative is 0) and 8 N (it pushes the box
for the last ~18 steps).

  python scripts/grad_smoothing_bias.py [--temperatures 0 0.001 0.005 0.02 0.05]

--friction: the same for static-friction smoothing (opt.grad_smoothing_friction = tau): a
1 kg box resting on a plane (mu 0.5, tests/solver/test_smoothing.py's BOX) pushed along x
at its bottom for 30 steps of 10 ms; d(box x)/d(push) at rest, below and above the friction
limit (4.9 N).

  python scripts/grad_smoothing_bias.py --friction [--temperatures 0 0.5 1 2 4]
"""

from __future__ import annotations

import argparse
import os
import sys

import jax
import jax.numpy as jnp

import jaxmj

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "solver"))
from test_smoothing import BOX, BOX_NSTEP, NSTEP, XML  # noqa: E402  (the tested models)

FAST = {"xla_backend_optimization_level": 0}


def box_x(m, nstep=NSTEP, dof=1):
  d = jaxmj.make_data(m)
  return lambda push: jaxmj.rollout(m, d, jnp.full((nstep, 1), push), nstep=nstep)[0].qpos[dof]


def main():
  ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  ap.add_argument("--temperatures", type=float, nargs="+")
  ap.add_argument("--pushes", type=float, nargs="+")
  ap.add_argument("--friction", action="store_true", help="opt.grad_smoothing_friction")
  args = ap.parse_args()
  jax.config.update("jax_enable_x64", True)
  if args.friction:
    m0, x, option = jaxmj.Model.from_xml_string(BOX), dict(nstep=BOX_NSTEP, dof=0), \
      "grad_smoothing_friction"
    pushes = args.pushes or [0.0, 2.0, 4.0, 4.8, 6.0, 8.0]
    temperatures = args.temperatures or [0, 0.5, 1, 2, 4]
  else:
    m0, x, option = jaxmj.Model.from_xml_string(XML), {}, "grad_smoothing"
    pushes = args.pushes or [0.0, 8.0]
    temperatures = args.temperatures or [0, 0.001, 0.005, 0.02, 0.05]
  value = jax.jit(box_x(m0, **x), compiler_options=FAST)
  eps = 1e-5
  fd = {p: (float(value(p + eps)) - float(value(p - eps))) / (2 * eps) for p in pushes}
  print("T        " + "".join(f"push {p:g} N: grad (fd {fd[p]:.4g})   " for p in pushes))
  for t in temperatures:
    m = m0.replace(opt=m0.opt.replace(**{option: t}))
    grad = jax.jit(jax.grad(box_x(m, **x)), compiler_options=FAST)
    row = []
    for p in pushes:
      g = float(grad(p))
      rel = f" ({(g - fd[p]) / abs(fd[p]):+.1%})" if fd[p] else ""
      row.append(f"{g:.4g}{rel}".ljust(36))
    print(f"{t:<9g}" + "".join(row), flush=True)


if __name__ == "__main__":
  main()
