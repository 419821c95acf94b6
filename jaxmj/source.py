"""The MJCF a Model was compiled from, kept in its static aux data so the Model can be
compiled again by MuJoCo (`jaxmj.to_mujoco`, `jaxmj.render`).

A source compares and hashes by content (a digest of the text, file path and assets), so
two Models compiled from the same MJCF share jit traces, and a Model returned by a jitted
function carries the source it was traced with.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class ModelSource:
  """MJCF text or file, and the assets it was compiled with.

  xml: the MJCF text ("" when the model was read from `file`).
  file: absolute path of the MJCF file ("" for text).
  modelfiledir: directory that relative asset file names in `xml` resolve against
    ("" = the working directory), as MuJoCo's mjSpec.modelfiledir.
  assets: (file name, contents) pairs, sorted by name.
  """

  xml: str = ""
  file: str = ""
  modelfiledir: str = ""
  assets: tuple[tuple[str, bytes], ...] = ()

  @classmethod
  def of(cls, *, xml: str | bytes = "", file=None, modelfiledir: str = "",
         assets: dict | None = None) -> ModelSource:
    """A source from MJCF text or a file path, with an asset dict (name -> bytes or str)."""
    if isinstance(xml, bytes):
      xml = xml.decode()
    pairs = tuple(sorted((str(k), v.encode() if isinstance(v, str) else bytes(v))
                         for k, v in (assets or {}).items()))
    file = os.path.abspath(os.fspath(file)) if file else ""
    return cls(xml=xml, file=file, modelfiledir=modelfiledir, assets=pairs)

  @functools.cached_property
  def digest(self) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in (self.xml.encode(), self.file.encode(), self.modelfiledir.encode()):
      h.update(len(part).to_bytes(8, "little"))
      h.update(part)
    for name, data in self.assets:
      h.update(name.encode() + b"\0" + len(data).to_bytes(8, "little"))
      h.update(data)
    return h.hexdigest()

  def __eq__(self, other) -> bool:
    return isinstance(other, ModelSource) and self.digest == other.digest

  def __hash__(self) -> int:
    return hash(self.digest)

  def __repr__(self) -> str:  # the pytree hash digests repr: short, yet names the content
    where = self.file or f"<{len(self.xml)} characters>"
    return f"ModelSource({where}, {len(self.assets)} assets, {self.digest})"
