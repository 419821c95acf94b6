"""Attribute values of the object model (element.py): numbers typed and checked when set,
values written as MJCF text, asset files held by their contents."""

from __future__ import annotations

import dataclasses
import hashlib
import os

import numpy as np

from jaxmj.mjcf.spec import schema

# Attributes naming asset files: loaded when set, written under content-hashed names.
FILE_ATTRIBUTES = ("file", "fileright", "fileleft", "fileup", "filedown", "filefront",
                   "fileback")
FILE_DIRS = ("assetdir", "meshdir", "texturedir")


@dataclasses.dataclass(frozen=True)
class Asset:
  """Contents of an asset file; written as `name-<sha1>.ext` so equal files merge."""

  contents: bytes
  extension: str
  prefix: str = dataclasses.field(default="", compare=False)  # the file's stem

  @property
  def vfs_name(self) -> str:
    digest = hashlib.sha1(self.contents).hexdigest()
    return f"{self.prefix}-{digest}{self.extension}"


def format_value(value, precision: int | None = None, zero_threshold: float = 0.0) -> str:
  """MJCF text of an attribute value. Floats are written exactly (shortest round trip)
  unless `precision` asks for that many significant digits (dm_control's '%.{precision}g');
  those below `zero_threshold` in magnitude are written as 0."""
  if isinstance(value, bool | np.bool_):
    return "true" if value else "false"
  if isinstance(value, np.ndarray):
    return " ".join(format_value(v.item(), precision, zero_threshold) for v in value)
  if isinstance(value, float):
    value = 0.0 if abs(value) < zero_threshold else float(value)
    return repr(value) if precision is None else f"{value:.{precision}g}"
  return str(value)


def number(el, name: str, typ, value):
  """Checks and converts a Python number or sequence for a numeric or boolean attribute of
  element `el` (whose error() locates a bad value)."""
  if typ == schema.B:
    if isinstance(value, bool | np.bool_):
      return bool(value)
    raise el.error(f"expected a boolean, got {value!r}", name)
  base, n = (typ, 0) if typ in (schema.F, schema.I) else typ
  try:
    arr = np.asarray(value)
  except (ValueError, TypeError):
    raise el.error(f"expected numbers, got {value!r}", name) from None
  if arr.dtype.kind not in "iuf" or arr.ndim > 1 or (n == 0 and arr.ndim != 0):
    raise el.error(f"expected {'a number' if n == 0 else 'numbers'}, got {value!r}", name)
  flat = arr.reshape(-1).astype(np.float64)
  if not np.all(np.isfinite(flat)):
    raise el.error(f"non-finite number in {value!r}", name)
  if base == schema.I and np.any(flat != np.round(flat)):
    raise el.error(f"expected integers, got {value!r}", name)
  if n > 0 and flat.size != n:
    raise el.error(f"expected {n} value{'s' * (n > 1)}, got {flat.size}", name)
  cap = schema.max_values(el._tag, name) if n < 0 else None
  if cap is not None and flat.size > cap:
    raise el.error(f"expected at most {cap} values, got {flat.size}", name)
  if n == 0:
    return float(flat[0]) if base == schema.F else int(flat[0])
  out = flat if base == schema.F else flat.astype(np.int64)
  out.flags.writeable = False
  return out


def load_file(el, name: str, path: str, base: str, assets: dict) -> Asset:
  """The file `path` (from `assets`, else relative to `base`) that attribute `name` of
  element `el` names."""
  stem, ext = os.path.splitext(os.path.basename(path))
  if path in assets:
    data = assets[path]
    data = data.encode() if isinstance(data, str) else bytes(data)
  else:
    full = path if os.path.isabs(path) else os.path.join(base, path)
    try:
      with open(full, "rb") as f:
        data = f.read()
    except OSError as e:
      raise el.error(f"cannot read asset file {path!r}: {e.strerror}", name) from None
  asset = Asset(data, ext, stem)
  own = "-" + hashlib.sha1(data).hexdigest()
  if stem.endswith(own):  # a name we wrote: keep the original stem
    asset = Asset(data, ext, stem[: -len(own)])
  return asset
