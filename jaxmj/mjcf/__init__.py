"""Host-side MJCF: the compiler (lxml + numpy only, never traced) and the PyMJCF object model."""

from jaxmj.mjcf.compile.build import compile_path, compile_string
from jaxmj.mjcf.compose.element import Asset, AttachmentFrame, Element, RootElement
from jaxmj.mjcf.compose.read import from_file, from_path, from_xml_string
from jaxmj.mjcf.errors import MJCFError

__all__ = ["Asset", "AttachmentFrame", "Element", "MJCFError", "RootElement", "compile_path",
           "compile_string", "from_file", "from_path", "from_xml_string"]
