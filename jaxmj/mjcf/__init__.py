"""Host-side MJCF: the compiler (lxml + numpy only, never traced) and the PyMJCF object model.

The compiler and the object model load on first use (`jaxmj.mjcf.RootElement`,
`Model.from_xml_path`, ...), so that importing jaxmj, its runtime or `MJCFError` loads
neither them nor lxml.
"""

import importlib

from jaxmj.mjcf.errors import MJCFError

_LAZY = {
  "compile_path": "jaxmj.mjcf.compile.build", "compile_string": "jaxmj.mjcf.compile.build",
  "Asset": "jaxmj.mjcf.compose.element", "AttachmentFrame": "jaxmj.mjcf.compose.element",
  "Element": "jaxmj.mjcf.compose.element", "RootElement": "jaxmj.mjcf.compose.element",
  "from_file": "jaxmj.mjcf.compose.read", "from_path": "jaxmj.mjcf.compose.read",
  "from_xml_string": "jaxmj.mjcf.compose.read",
}

__all__ = ["Asset", "AttachmentFrame", "Element", "MJCFError", "RootElement", "compile_path",
           "compile_string", "from_file", "from_path", "from_xml_string"]


def __getattr__(name: str):
  """The compiler's public names, imported when first read (PEP 562)."""
  if name in _LAZY:
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
  raise AttributeError(f"module 'jaxmj.mjcf' has no attribute {name!r}")


def __dir__() -> list:
  return sorted({*globals(), *_LAZY})
