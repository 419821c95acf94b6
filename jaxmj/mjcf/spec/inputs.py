"""An actuator's input attribute (<general>, <pid>, <dcmotor>, <orientation>), checked when
read, as MuJoCo 4.0's XML reader does: in every element and default class, before any other
check of the actuator.

The attribute is a list of keywords, each once, from pos, vel, ff, voltage, pressure (in
that canonical order), or one of none, expmap, quat alone. Scanning left to right, as mujoco
4.0.0 does (probed), the first unknown or misplaced standalone keyword is invalid and the
first repeat a duplicate; the order is checked last ("pos pos x" is a duplicate, "vel pos x"
invalid). Which keywords an actuator's gain takes is checked later, by the compiler.
"""

from __future__ import annotations

CANONICAL = ("pos", "vel", "ff", "voltage", "pressure")
STANDALONE = ("none", "expmap", "quat")


def check(text: str) -> None:
  """Raises ValueError (parse.convert names the attribute) for a malformed keyword list."""
  tokens = text.split()
  seen = set()
  for t in tokens:
    if t not in CANONICAL and t not in STANDALONE:
      raise ValueError(f"invalid keyword '{t}' in input '{text}'")
    if t in STANDALONE and len(tokens) > 1:
      raise ValueError(f"invalid keyword '{t}' in input '{text}': none, expmap and quat "
                       "stand alone")
    if t in seen:
      raise ValueError(f"duplicate keyword '{t}' in input '{text}'")
    seen.add(t)
  if tokens != sorted(tokens, key=lambda t: CANONICAL.index(t) if t in CANONICAL else 0):
    raise ValueError(f"inputs must be listed in canonical order [{', '.join(CANONICAL)}]")
