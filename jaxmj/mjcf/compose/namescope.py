"""A model's name scope (PyMJCF's `element.namescope`): its name, the scope it is attached
in, and the prefix its names get when written from an enclosing model.

jaxmj keeps names in the models themselves (RootElement._ids) and scopes them only when a
composition is written (write.py); a NameScope is the read-only view of that, with
dm_control's interface: `name`, `parent`, `root`, `mjcf_model`, `full_prefix`,
`has_identifier`, `get`.
"""

from __future__ import annotations

PREFIX_SEPARATOR = "/"


class NameScope:
  """The name scope of one model (one per RootElement, so scopes compare by identity)."""

  def __init__(self, model):
    self._model = model

  @property
  def mjcf_model(self):
    return self._model

  @property
  def name(self) -> str | None:
    return self._model.model

  @property
  def parent(self) -> NameScope | None:
    """The scope of the model this one is attached to, or None."""
    parent = self._model.parent_model
    return None if parent is None else parent.namescope

  @property
  def root(self) -> NameScope:
    return self if self.parent is None else self.parent.root

  def full_prefix(self, prefix_root: NameScope | None = None, as_list: bool = False):
    """Prefix of this scope's names as written from `prefix_root` ('' from itself or when
    None): the model names from below `prefix_root` down to this one, each ending in '/'."""
    parts, scope = [], self
    while prefix_root is not None and scope is not prefix_root and scope.parent is not None:
      parts.append(scope.name)
      scope = scope.parent
    parts.reverse()
    if as_list:
      return parts
    return "".join(p + PREFIX_SEPARATOR for p in parts)

  def has_identifier(self, namespace: str, identifier: str) -> bool:
    return self._find(namespace, identifier) is not None

  def get(self, namespace: str, identifier: str):
    """The element (or, for 'namescope' and 'attached_model', the model's scope or the
    model) named `identifier` in `namespace` of this model; KeyError if there is none."""
    found = self._find(namespace, identifier)
    if found is None:
      raise KeyError(identifier)
    return found

  def _find(self, namespace: str, identifier: str):
    if namespace in ("namescope", "attached_model", "attachment_frame"):
      frame = next((f for f in self._model.frames() if f.child.model == identifier), None)
      if frame is None or namespace == "attachment_frame":
        return frame
      return frame.child.namescope if namespace == "namescope" else frame.child
    return self._model._ids.get(namespace, {}).get(identifier)

  def __repr__(self) -> str:
    return f"NameScope({self.name!r})"
