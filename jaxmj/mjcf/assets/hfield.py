"""Heightfield assets as MuJoCo 4.0's compiler builds them (host side, numpy; Pillow for PNG).

Elevation comes from inline `elevation` (rows written top to bottom), a PNG image (the red
channel, as MuJoCo's lodepng grey conversion), or MuJoCo's binary format (int32 nrow, ncol,
float32 data, stored as is); `nrow`/`ncol` without data give zeros. MuJoCo stores rows
bottom to top, so inline and PNG rows are flipped, and normalizes every field to [0, 1]:
(h - min) / (max - min), or h - min when the range is below mjEPS. hfield_data is float32.
"""

from __future__ import annotations

import io
import struct

import numpy as np

from jaxmj.constants import EPS


class HFieldError(ValueError):
  """A heightfield MuJoCo's compiler would reject; the caller names the element."""


def from_png(data: bytes) -> np.ndarray:
  """(nrow, ncol) float32 elevation of a PNG, top row first: the grey levels as they are
  (0..255), which `build` normalizes like any other field (as MuJoCo: scaling by 1/255
  first would round differently)."""
  from PIL import Image  # only PNG assets need Pillow

  try:
    img = Image.open(io.BytesIO(data))
    img.load()
  except Exception as e:  # Pillow raises several types for a bad file
    raise HFieldError(f"could not decode PNG file: {e}") from None
  arr = np.asarray(img.convert("RGB") if img.mode not in ("L", "RGB") else img)
  grey = arr[..., 0] if arr.ndim == 3 else arr
  return grey.astype(np.float32)


def from_binary(data: bytes) -> np.ndarray:
  """(nrow, ncol) float32 elevation of MuJoCo's binary hfield format."""
  if len(data) < 8:
    raise HFieldError("hfield file is too small for its header")
  nrow, ncol = struct.unpack_from("<2i", data, 0)
  if nrow < 1 or ncol < 1:
    raise HFieldError("non-positive hfield dimensions in file")
  if len(data) != 4 * (2 + nrow * ncol):
    raise HFieldError("unexpected file size in hfield file")
  return np.frombuffer(data, "<f4", nrow * ncol, 8).reshape(nrow, ncol).astype(np.float32)


def build(size, nrow: int, ncol: int, elevation, file_data: bytes | None, is_png: bool):
  """(size (4,), nrow, ncol, data (nrow*ncol,) float32, bottom row first, in [0, 1])."""
  size = np.asarray(size, float)
  if len(size) != 4 or np.any(size <= 0):
    raise HFieldError("size parameter is not positive in hfield")
  if file_data is not None:
    if nrow or ncol:
      raise HFieldError("nrow and ncol must be 0 when the heightfield is read from a file")
    grid = from_png(file_data)[::-1] if is_png else from_binary(file_data)
  else:
    if nrow < 1 or ncol < 1:
      raise HFieldError("nrow and ncol must be positive without a file")
    if elevation is None or len(elevation) == 0:
      grid = np.zeros((nrow, ncol), np.float32)
    else:
      if len(elevation) != nrow * ncol:
        raise HFieldError("elevation data length must match nrow*ncol")
      grid = np.asarray(elevation, np.float32).reshape(nrow, ncol)[::-1]
  lo, hi = grid.min(), grid.max()
  grid = grid - lo
  if hi - lo > EPS:
    grid = grid / (hi - lo)
  return size, grid.shape[0], grid.shape[1], np.ascontiguousarray(grid, np.float32).ravel()
