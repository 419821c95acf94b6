"""Static size of the heightfield collision window (host side, numpy only).

jaxmj.collision.hfield gives every heightfield-geom pair one contact slot per prism of a
window of grid cells that follows the geom; the window's size must be static, so it is
fixed here from the compiled geom_rbound and hfield_size (and, for the collision sensors,
which look as far as their cutoff, from sensor_cutoff).
"""

from __future__ import annotations

import numpy as np

from jaxmj.collision.hfield import cells_spanned


def window_fields(f: dict) -> dict:
  """geom_hfieldwindow (ngeom, 2) int32: (columns, rows) of heightfield cells a geom's
  bounding box, grown by the pair margin, can span on any heightfield of the model.

  The box spans at most 2 rbound along each axis, grown by the margin on both sides
  (_span). The margin bound is the geom's margin + gap plus the largest
  of the heightfield geoms' (explicit <pair> margins are not included). Zeros without
  heightfields. Also returns sensor_hfieldwindow (_sensor_windows).
  """
  extra = np.asarray(f["geom_margin"], float) + np.asarray(f["geom_gap"], float)
  hf = np.asarray(f["geom_type"]) == 1  # mjGEOM_HFIELD
  rbound = np.asarray(f["geom_rbound"], float) + extra + (extra[hf].max() if hf.any() else 0)
  out = np.zeros((len(rbound), 2), np.int32)
  for hid in range(len(f.get("hfield_nrow", ()))):
    out = np.maximum(out, _span(f, hid, rbound))
  return {"geom_hfieldwindow": out, "sensor_hfieldwindow": _sensor_windows(f)}


def _span(f: dict, hid: int, reach) -> np.ndarray:
  """(..., 2) (columns, rows) of heightfield hid's cells a box of half-size `reach` can span
  (collision/hfield.py's cells_spanned: the runtime's window)."""
  size = np.asarray(f["hfield_size"], float).reshape(-1, 4)[hid]
  return cells_spanned(size, int(f["hfield_nrow"][hid]), int(f["hfield_ncol"][hid]), reach)


_COLLISION_SENSORS = (39, 40, 41)  # mjSENS_GEOMDIST, GEOMNORMAL, GEOMFROMTO
_OBJ_GEOM = 5  # mjOBJ_GEOM (else a body: its geoms)


def _sensor_windows(f: dict) -> np.ndarray:
  """sensor_hfieldwindow (nsensor, 2) int32: (columns, rows) of the cells a collision
  sensor's geom can span on the heightfield it is measured against, looking as far as the
  sensor's cutoff (MuJoCo's distmax: the pair's margin there, the geoms' own margins do not
  count). Zeros for other sensors and pairs without a heightfield."""
  stype = np.asarray(f.get("sensor_type", np.zeros(0, np.int32)))
  out = np.zeros((len(stype), 2), np.int32)
  gtype = np.asarray(f["geom_type"])

  def geoms(objtype, oid):
    if objtype == _OBJ_GEOM:
      return [int(oid)]
    adr = int(f["body_geomadr"][oid])
    return list(range(adr, adr + int(f["body_geomnum"][oid]))) if adr >= 0 else []

  for i in np.flatnonzero(np.isin(stype, _COLLISION_SENSORS)):
    for x in geoms(f["sensor_objtype"][i], f["sensor_objid"][i]):
      for y in geoms(f["sensor_reftype"][i], f["sensor_refid"][i]):
        if (gtype[x] == 1) == (gtype[y] == 1):  # mjGEOM_HFIELD on exactly one side
          continue
        hf, other = (x, y) if gtype[x] == 1 else (y, x)
        reach = f["geom_rbound"][other] + f["sensor_cutoff"][i]
        out[i] = np.maximum(out[i], _span(f, int(f["geom_dataid"][hf]), reach))
  return out
