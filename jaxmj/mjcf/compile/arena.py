"""<size memory>: MuJoCo's arena size, checked as mujoco 4.0.0 reads it, and a warning where
it may be too small.

MuJoCo keeps contacts, constraint rows and solver scratch in a fixed arena of `memory`
bytes. When a step needs more, MuJoCo drops every constraint of that step (warning
CNSTRFULL, nefc = 0) or stops with an mj_stackAlloc error (probed: models/box_pile.xml
with 20K and with 30K-100K). jaxmj has no arena: its rows are laid out for every contact
slot, so it keeps every constraint. A model whose memory is below `estimate` (all contact
slots active, dense rows) therefore gets a UserWarning naming the attribute.
"""

from __future__ import annotations

import re

from jaxmj.collision.plan import contact_slots
from jaxmj.constraint.layout import efc_layout
from jaxmj.mjcf.errors import warn

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50,
          "E": 1 << 60}


def memory_bytes(node) -> int | None:
  """The bytes `<size memory>` asks for, None for the default -1 (MuJoCo sizes the arena);
  MuJoCo's error for anything but an unsigned integer with an optional K..E suffix."""
  text = str(node.attrs.get("memory", "-1")).strip()
  if text == "-1":
    return None
  match = re.fullmatch(r"(\d+)([KMGTPE]?)", text, re.IGNORECASE)
  nbytes = int(match.group(1)) * _UNITS[match.group(2).upper()] if match else None
  if nbytes is None or nbytes >= 1 << 64:
    raise node.error("unsigned integer with an optional suffix {K,M,G,T,P,E} is expected in "
                     "attribute 'memory' (or the size specified is too big)", "memory")
  return nbytes


def estimate(m) -> int:
  """Bytes of arena a step of `m` may need with every contact slot active: contacts, dense
  constraint rows (Jacobian and its products), and solver matrices. An upper-end guess
  (mujoco 4.0.0 measured below it on the repository's models), not MuJoCo's accounting."""
  plan = contact_slots(m)
  nefc = efc_layout(m, plan["dim"]).nefc
  return 8 * (6 * m.nv * m.nv + nefc * (3 * m.nv + 30)) + 700 * plan["ncon"] + (1 << 16)


def check_memory(m, size_nodes: list) -> None:
  """Warns when the last <size memory> given is below `estimate(m)`."""
  nodes = [n for n in size_nodes if "memory" in n.attrs]
  nbytes = [memory_bytes(n) for n in nodes]
  if not nbytes or nbytes[-1] is None:
    return
  need = estimate(m)
  if nbytes[-1] < need:
    node = nodes[-1]
    warn(f"{node.file}:{node.line}: <size memory=\"{node.attrs['memory']}\"> "
         f"({nbytes[-1]} bytes) may be too small for this model (~{need} bytes with "
         "every contact active): where MuJoCo's arena overflows it drops the step's "
         "constraints or stops with an error; jaxmj has no arena and keeps every "
         "constraint")
