"""The compiler's exception type."""

from __future__ import annotations


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
