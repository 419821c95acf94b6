"""Static size of the heightfield collision window (host side, numpy only).

jaxmj.collision.hfield gives every heightfield-geom pair one contact slot per prism of a
window of grid cells that follows the geom; the window's size must be static, so it is
fixed here from the compiled geom_rbound and hfield_size.
"""

from __future__ import annotations

import numpy as np


def window_fields(f: dict) -> dict:
  """geom_hfieldwindow (ngeom, 2) int32: (columns, rows) of heightfield cells a geom's
  bounding box, grown by the pair margin, can span on any heightfield of the model.

  The box spans at most 2 rbound along each axis, grown by the margin on both sides, so at
  most ceil(2 (rbound + margin) / cell) + 1 cells (MuJoCo floors one end and ceils the
  other), capped by the grid. The margin bound is the geom's margin + gap plus the largest
  of the heightfield geoms' (explicit <pair> margins are not included). Zeros without
  heightfields.
  """
  extra = np.asarray(f["geom_margin"], float) + np.asarray(f["geom_gap"], float)
  hf = np.asarray(f["geom_type"]) == 1  # mjGEOM_HFIELD
  rbound = np.asarray(f["geom_rbound"], float) + extra + (extra[hf].max() if hf.any() else 0)
  out = np.zeros((len(rbound), 2), np.int32)
  hsize = np.asarray(f.get("hfield_size", np.zeros((0, 4))), float).reshape(-1, 4)
  for s, nr, nc in zip(hsize, f.get("hfield_nrow", ()), f.get("hfield_ncol", ())):
    if nr < 2 or nc < 2:
      continue
    for axis, (half, n) in enumerate(((s[0], nc), (s[1], nr))):
      cell = 2 * half / (n - 1)
      span = np.ceil(2 * rbound / cell - 1e-9).astype(np.int64) + 1
      out[:, axis] = np.maximum(out[:, axis], np.minimum(span, n - 1))
  return {"geom_hfieldwindow": out}
