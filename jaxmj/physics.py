"""`mjcf.Physics`: the part of dm_control's Physics that PyMJCF code uses to run a composed
model -- compile it, step it, read and write it by element -- over jaxmj's Model and Data.
`from jaxmj import mjcf; mjcf.Physics.from_mjcf_model(root)` reaches it.

jaxmj's Model and Data are immutable JAX pytrees: `step()` and `forward()` replace `data`,
and assigning through `bind(element)` replaces `data` (or `model`) with the rows set
(jaxmj.bind's `replace`). For batches, gradients and jit, use jaxmj's functions on
`physics.model` and `physics.data` directly.
"""

from __future__ import annotations

import jax

from jaxmj.bind import bind
from jaxmj.dynamics.forward import forward, step
from jaxmj.io import make_data, reset
from jaxmj.types import Model

# One jit of each, made at import: a jitted function caches its traces per Model structure.
_STEP, _FORWARD = jax.jit(step), jax.jit(forward)


class Physics:
  """A compiled jaxmj Model (`model`) and its current Data (`data`)."""

  def __init__(self, model: Model, data=None):
    self.model = model
    self.data = make_data(model) if data is None else data

  @classmethod
  def from_mjcf_model(cls, mjcf_model) -> Physics:
    """Compiles `mjcf_model` with the models attached to it (jaxmj.Model.from_mjcf)."""
    return cls(Model.from_mjcf(mjcf_model))

  def bind(self, elements) -> Bound:
    """Data and Model fields of an element (or a list of elements of one type), as
    dm_control's `physics.bind(element)`: `physics.bind(joint).qpos`, `.damping`;
    `physics.bind(actuators).ctrl = u` sets them."""
    return Bound(self, elements)

  def forward(self) -> None:
    self.data = _FORWARD(self.model, self.data)

  def step(self, nstep: int = 1) -> None:
    for _ in range(nstep):
      self.data = _STEP(self.model, self.data)

  def reset(self, keyframe_id: int | None = None) -> None:
    self.data = reset(self.model, keyframe_id)

  def timestep(self) -> float:
    return float(self.model.opt.timestep)

  def time(self) -> float:
    return float(self.data.time)


class Bound:
  """The fields of some elements in a Physics: Data fields first, then Model fields, read
  from the Physics' current model and data; assigning one replaces them there."""

  def __init__(self, physics: Physics, elements):
    self.__dict__.update(physics=physics, elements=elements)

  def _binders(self):
    p = self.physics
    return bind(p.model, p.data), bind(p.model)

  def __getattr__(self, name: str):
    for binder in self._binders():
      view = binder(self.elements)
      if hasattr(view, name):
        return getattr(view, name)
    raise AttributeError(f"no field {name!r} for {self.elements!r}")

  def __setattr__(self, name: str, value) -> None:
    data, model = self._binders()
    kind = data.element_type(self.elements)
    if hasattr(data.view(kind, self.elements), name):
      self.physics.data = data.replace(kind, self.elements, **{name: value})
    else:
      self.physics.model = model.replace(kind, self.elements, **{name: value})
