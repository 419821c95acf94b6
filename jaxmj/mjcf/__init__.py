"""Host-side MJCF: the compiler (lxml + numpy only, never traced) and the PyMJCF object model.

The compiler and the object model load on first use (`jaxmj.mjcf.RootElement`,
`Model.from_xml_path`, ...), so that importing jaxmj, its runtime or `MJCFError` loads
neither them nor lxml. `from jaxmj import mjcf` stands in for `from dm_control import mjcf`
(README, Composition).
"""

import importlib

from jaxmj.mjcf.errors import MJCFError

_COMPOSE = "jaxmj.mjcf.compose."
_LAZY = {
  "compile_path": "jaxmj.mjcf.compile.build", "compile_string": "jaxmj.mjcf.compile.build",
  "AttachmentFrame": _COMPOSE + "element", "Element": _COMPOSE + "element",
  "RootElement": _COMPOSE + "element", "Asset": _COMPOSE + "values",
  "from_file": _COMPOSE + "read", "from_path": _COMPOSE + "read",
  "from_xml_file": _COMPOSE + "read", "from_xml_string": _COMPOSE + "read",
  "export_with_assets": _COMPOSE + "export", "export_with_assets_as_zip": _COMPOSE + "export",
  "PREFIX_SEPARATOR": _COMPOSE + "namescope",
  "traversal_utils": _COMPOSE + "traversal_utils",
  "commit_defaults": _COMPOSE + "traversal_utils",
  "get_attachment_frame": _COMPOSE + "traversal_utils",
  "get_frame_freejoint": _COMPOSE + "traversal_utils",
  "get_frame_joints": _COMPOSE + "traversal_utils",
  "get_freejoint": _COMPOSE + "traversal_utils",
  # dm_control's mjcf.Physics runs a composed model: it is a runtime utility (jaxmj.physics).
  "Physics": "jaxmj.physics",
}

__all__ = ["PREFIX_SEPARATOR", "Asset", "AttachmentFrame", "Element", "MJCFError", "Physics",
           "RootElement", "commit_defaults", "compile_path", "compile_string",
           "export_with_assets", "export_with_assets_as_zip", "from_file", "from_path",
           "from_xml_file", "from_xml_string", "get_attachment_frame", "get_frame_freejoint",
           "get_frame_joints", "get_freejoint", "traversal_utils"]


def __getattr__(name: str):
  """The compiler's public names, imported when first read (PEP 562); a name that is a
  module (traversal_utils) is that module."""
  if name in _LAZY:
    module = importlib.import_module(_LAZY[name])
    value = module if _LAZY[name].endswith("." + name) else getattr(module, name)
    globals()[name] = value
    return value
  raise AttributeError(f"module 'jaxmj.mjcf' has no attribute {name!r}")


def __dir__() -> list:
  return sorted({*globals(), *_LAZY})
