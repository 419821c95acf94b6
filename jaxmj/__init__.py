"""jaxmj: MuJoCo's physics in JAX.

    m = jaxmj.Model.from_xml_path("models/humanoid.xml")
    d = jaxmj.make_data(m)
    d = jax.jit(jaxmj.step)(m, d)
"""

from jaxmj.forward import forward, fwd_acceleration, fwd_position, fwd_velocity, rollout, step
from jaxmj.io import make_data, reset
from jaxmj.mjcf.errors import MJCFError
from jaxmj.names import id2name, name2id
from jaxmj.types import (
  Cone,
  Data,
  DisableBit,
  EnableBit,
  GeomType,
  Integrator,
  JointType,
  Model,
  ObjType,
  Option,
  Solver,
  Warning,
)

__version__ = "0.1.0"

__all__ = [
  "Cone", "Data", "DisableBit", "EnableBit", "GeomType", "Integrator", "JointType", "MJCFError",
  "Model", "ObjType", "Option", "Solver", "Warning", "forward", "fwd_acceleration",
  "fwd_position", "fwd_velocity", "id2name", "make_data", "name2id", "reset", "rollout", "step",
]
