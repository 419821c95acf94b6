"""Writing a composed model with its asset files (dm_control's `mjcf.export_with_assets`
and `mjcf.export_with_assets_as_zip`)."""

from __future__ import annotations

import os
import zipfile

from jaxmj.mjcf.compose.attach import UNNAMED
from jaxmj.mjcf.compose.element import RootElement


def _files(mjcf_model: RootElement, xml_name: str, precision, zero_threshold) -> dict:
  files = mjcf_model.get_assets()
  files[xml_name] = mjcf_model.to_xml_string(precision=precision,
                                             zero_threshold=zero_threshold)
  return files


def export_with_assets(mjcf_model: RootElement, out_dir, out_file_name: str | None = None,
                       *, precision: int | None = None, zero_threshold: float = 0.0) -> None:
  """Writes the model's XML (`out_file_name`, by default `<model>.xml`) and its asset
  files, under the names the XML uses, into `out_dir` (created if missing)."""
  if out_file_name is None:
    out_file_name = (mjcf_model.model or UNNAMED) + ".xml"
  elif not out_file_name.lower().endswith(".xml"):
    raise ValueError(f"out_file_name must end with '.xml': got {out_file_name!r}")
  os.makedirs(out_dir, exist_ok=True)
  for name, contents in _files(mjcf_model, out_file_name, precision, zero_threshold).items():
    with open(os.path.join(out_dir, name), "wb") as f:
      f.write(contents.encode() if isinstance(contents, str) else contents)


def export_with_assets_as_zip(mjcf_model: RootElement, out_dir, model_name: str | None = None,
                              *, precision: int | None = None,
                              zero_threshold: float = 0.0) -> str:
  """Writes `<out_dir>/<model_name>.zip` holding a folder `<model_name>/` with
  `<model_name>.xml` and the asset files; returns the zip's path."""
  model_name = model_name or mjcf_model.model or UNNAMED
  files = _files(mjcf_model, model_name + ".xml", precision, zero_threshold)
  os.makedirs(out_dir, exist_ok=True)
  path = os.path.join(out_dir, model_name + ".zip")
  with zipfile.ZipFile(path, "w") as zf:
    for name, contents in files.items():
      zf.writestr(os.path.join(model_name, name), contents)
  return path
