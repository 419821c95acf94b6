"""Host-side MJCF: the compiler (lxml + numpy only, never traced) and the PyMJCF object model."""

from jaxmj.mjcf.build import compile_path, compile_string
from jaxmj.mjcf.element import Asset, AttachmentFrame, Element, RootElement
from jaxmj.mjcf.errors import MJCFError
from jaxmj.mjcf.read import from_file, from_path, from_xml_string

__all__ = ["Asset", "AttachmentFrame", "Element", "MJCFError", "RootElement", "compile_path",
           "compile_string", "from_file", "from_path", "from_xml_string"]
