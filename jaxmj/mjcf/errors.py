"""The compiler's exception type, and its warnings' attribution to the user's call."""

from __future__ import annotations

import os
import sys
import warnings

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class MJCFError(ValueError):
  """Invalid or unsupported MJCF, located by file, line, element and attribute."""

  def __init__(self, msg: str, file: str | None = None, line: int | None = None,
               element: str | None = None, attribute: str | None = None):
    self.msg, self.file, self.line = msg, file, line
    self.element, self.attribute = element, attribute
    where = ":".join(str(x) for x in (file, line) if x is not None)
    what = f"<{element}>" if element else ""
    if attribute:
      what += f" attribute '{attribute}'"
    prefix = ": ".join(p for p in (where, what.strip()) if p)
    super().__init__(f"{prefix}: {msg}" if prefix else msg)


def warn(message: str) -> None:
  """A UserWarning attributed to the first caller outside jaxmj (the user's
  `Model.from_xml_path`, `jaxmj.mjcf` call or script), however deep in the compiler it is
  raised: the message names the MJCF file and line, the warning's location the user's."""
  frame, level = sys._getframe(1), 2  # level 1 is this function
  while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
    frame, level = frame.f_back, level + 1
  warnings.warn(message, UserWarning, stacklevel=level)
