"""Host-side MJCF compiler: lxml + numpy only, never traced."""

from jaxmj.mjcf.build import compile_path, compile_string
from jaxmj.mjcf.errors import MJCFError

__all__ = ["MJCFError", "compile_path", "compile_string"]
