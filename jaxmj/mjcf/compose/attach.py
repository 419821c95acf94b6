"""Attaching one PyMJCF model to another (seed 004): attachment frames and global options.

The attached (child) model stays a separate object: its names, default classes and
references are scoped with its prefix only when the composition is written (write.py), so a
child is never renamed in place and can be detached again.
"""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.compose.element import GLOBAL_SECTIONS, AttachmentFrame, Element, RootElement
from jaxmj.mjcf.errors import MJCFError
from jaxmj.mjcf.spec import schema

# The name an unnamed model gets when attached (dm_control's).
UNNAMED = "unnamed_model"
# Compiler attributes consumed when a model is read (asset files are loaded then).
READ_ONLY_COMPILER = ("assetdir", "meshdir", "texturedir")


def attach(target: Element, child: RootElement) -> AttachmentFrame:
  """Attaches model `child` at `target` (a site, body, frame, or worldbody) and returns its
  attachment frame: a body placed at the site (or at the body's origin) in the site's
  parent, to which joints (e.g. a freejoint) and an inertial may be added."""
  if not isinstance(child, RootElement):
    raise MJCFError(f"only a model (RootElement) can be attached, got {child!r}")
  if target.tag not in ("site", "body", "frame", "worldbody") or isinstance(
      target, AttachmentFrame):
    raise target.error(f"a model can be attached to a site, body, frame or worldbody, not to "
                       f"<{target.tag}>")
  if child._frame is not None:
    raise MJCFError(f"model {child.model!r} is already attached to model "
                    f"{child.parent_model.model!r}; attach a copy (copy.deepcopy(model)) to "
                    "use it twice")
  parent = target.root
  if any(m is child for m in _ancestors(parent)):
    raise MJCFError(f"cannot attach model {child.model!r} inside itself")
  top = _ancestors(parent)[-1]
  merged_options(top.models() + child.models())
  site = target if target.tag == "site" else None
  where = target.parent if site is not None else target
  frame = AttachmentFrame(where, child)
  if site is not None:
    if site.fromto is not None:
      raise site.error("cannot attach to a site placed with fromto", "fromto")
    _check_pose_not_defaulted(site)
    for name in ("pos", *schema.ORIENT):
      if site._attrs.get(name) is not None:
        frame._attrs[name] = site._attrs[name]
  name = free_model_name(parent, child.model or UNNAMED)
  if name != child.model:
    child.model = name
  siblings = where._children
  at = len(siblings)
  if site is not None:  # right after the site and the frames already there (dm_control's)
    at = siblings.index(site) + 1
    while at < len(siblings) and isinstance(siblings[at], AttachmentFrame):
      at += 1
  siblings.insert(at, frame)
  child.__dict__["_frame"] = frame
  return frame


def free_model_name(parent: RootElement, name: str) -> str:
  """`name`, or if a model attached to `parent` has it, `name_1`, `name_2`, ... (the first
  free one): dm_control's names for repeated copies of one model."""
  taken = {f.child.model for f in parent.frames()}
  n, free = 0, name
  while free in taken:
    n += 1
    free = f"{name}_{n}"
  return free


def check_model_name(model: RootElement, name) -> None:
  """An attached model's new name must be free among the models attached with it."""
  if not name:
    raise model.error("an attached model needs a name: its names are prefixed with it",
                      "model")
  parent = model.parent_model
  if any(f.child is not model and f.child.model == name for f in parent.frames()):
    raise model.error(f"model {parent.model!r} already has an attached model named "
                      f"{name!r}", "model")


def _check_pose_not_defaulted(site: Element) -> None:
  """The frame copies the pose written on the site; a pose from a default class would be
  lost, so it is refused rather than silently ignored."""
  defaults = site.root.section("default")
  stack = [] if defaults is None else [defaults]
  while stack:
    d = stack.pop()
    for c in d._children:
      if c.tag == "default":
        stack.append(c)
      elif c.tag == "site" and any(k in c._attrs for k in ("pos", "fromto", *schema.ORIENT)):
        raise site.error("cannot attach to a site whose default classes may set its pose; "
                         "attach to a body, or set the pose on a site without such defaults")


def detach(child: RootElement) -> None:
  """Removes `child` and its attachment frame (with the frame's joints) from its parent."""
  frame = child._frame
  if frame is None:
    raise MJCFError(f"model {child.model!r} is not attached")
  frame._parent._children.remove(frame)
  frame.__dict__["_parent"] = None
  child.__dict__["_frame"] = None


def _ancestors(model: RootElement) -> list[RootElement]:
  out = [model]
  while out[-1]._frame is not None:
    out.append(out[-1].parent_model)
  return out


def merged_options(models: list[RootElement]) -> dict:
  """{section: {path: value}} of the global options set explicitly by any of `models`;
  raises if two models set one differently. A path is a tuple of tags then the attribute."""
  merged, owner = {}, {}
  for model in models:
    for tag in GLOBAL_SECTIONS:
      section = model.section(tag)
      if section is None:
        continue
      for path, value in _settings(section, (tag,)):
        if path[-1] in READ_ONLY_COMPILER and tag == "compiler":
          continue
        if path in merged and not _equal(merged[path], value):
          what = "/".join(path[1:])
          raise MJCFError(
            f"conflicting global option <{tag}> {what}: {_show(merged[path])} in model "
            f"{owner[path].model!r} but {_show(value)} in model {model.model!r}",
            element=path[-2], attribute=path[-1])
        merged.setdefault(path, value)
        owner.setdefault(path, model)
  out: dict = {}
  for path, value in merged.items():
    out.setdefault(path[0], {})[path[1:]] = value
  return out


def _settings(el: Element, path: tuple):
  for name, value in el._attrs.items():
    yield path + (name,), value
  for c in el._children:
    yield from _settings(c, path + (c.tag,))


def _equal(a, b) -> bool:
  if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
    return np.shape(a) == np.shape(b) and bool(np.all(np.asarray(a) == np.asarray(b)))
  return a == b


def _show(value) -> str:
  return repr(value.tolist() if isinstance(value, np.ndarray) else value)

