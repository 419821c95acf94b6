"""PyMJCF's traversal helpers (`mjcf.traversal_utils` in dm_control): free joints,
attachment frames and committing default classes into elements."""

from __future__ import annotations

from jaxmj.mjcf.compose.element import Element, RootElement

# The actuator shortcuts whose default settings dm_control's commit_defaults shares: MuJoCo
# keeps one actuator default per class, whichever shortcut sets it.
_ACTUATOR_TAGS = ("general", "motor", "position", "velocity", "cylinder", "muscle")


def get_freejoint(element: Element) -> Element | None:
  """The free joint of a body (a <freejoint> or a joint of type free), else None."""
  if element.tag != "body":
    return None
  if element.freejoint is not None:
    return element.freejoint
  return next((j for j in element.find_all("joint", immediate_children_only=True)
               if j.type == "free"), None)


def get_attachment_frame(mjcf_model: RootElement) -> Element | None:
  """The attachment frame of an attached model (None when it is not attached)."""
  return mjcf_model.attachment_frame


def get_frame_freejoint(mjcf_model: RootElement) -> Element | None:
  """The free joint on an attached model's attachment frame, else None."""
  frame = get_attachment_frame(mjcf_model)
  return None if frame is None else get_freejoint(frame)


def get_frame_joints(mjcf_model: RootElement) -> list[Element] | None:
  """The joints on an attached model's attachment frame (None when it is not attached)."""
  frame = get_attachment_frame(mjcf_model)
  return None if frame is None else frame.find_all("joint", immediate_children_only=True)


def commit_defaults(element: Element, attributes=None) -> None:
  """Writes into `element` the attributes its default classes give it and it does not set
  itself (only those named in `attributes`, when given), the innermost class winning."""
  dclass = _default_class(element)
  root = element.root
  tags = _ACTUATOR_TAGS if element.tag in _ACTUATOR_TAGS else (element.tag,)
  while dclass is not None and dclass is not root:
    for default in dclass._children:
      if default.tag not in tags:
        continue
      for name, value in default.get_attributes().items():
        if (attributes is None or name in attributes) and (
            name in element.spec and element._attrs.get(name) is None):
          element.set_attribute(name, value)
    dclass = dclass.parent


def _default_class(element: Element) -> Element | None:
  """The <default> element giving `element` its values: its class, the nearest
  childclass above it, else the model's top-level default (None if it has none)."""
  el, dclass = element, element._attrs.get("class")
  while dclass is None and el.parent is not None and el.parent is not element.root:
    el = el.parent
    dclass = el._attrs.get("childclass")
  if dclass is None:
    return element.root.section("default")
  if isinstance(dclass, Element):
    return dclass
  found = element.root._ids.get("default", {}).get(dclass)
  if found is None:
    raise element.error(f"no default class {dclass!r} in model {element.root.model!r}",
                        "class")
  return found
