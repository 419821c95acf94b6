"""Free bodies aligned to their inertial frame (<compiler alignfree>, <freejoint align>), as
MuJoCo 4.0's mjCBody::Compile does it.

A body whose only joint is a free joint and that has no child bodies is aligned when its
freejoint says align="true", or says "auto" (the default; a <joint type="free"> always does)
and the compiler's alignfree is true. Its body frame moves onto its inertial frame (so qpos0
and the default keyframe pose follow), its inertial frame becomes the identity, and its geoms,
sites, cameras and lights are re-expressed in the new frame.
"""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.compile import camlight, frames
from jaxmj.mjcf.passes.fuse import reexpressed


def _aligned(body, has_child: bool, compiler: dict) -> bool:
  if len(body.joints) != 1 or body.joints[0][1]["type"] != "free" or has_child:
    return False
  node = body.joints[0][0]
  align = node.attrs.get("align", "auto") if node.tag == "freejoint" else "auto"
  return align == "true" or (align == "auto" and bool(compiler["alignfree"]))


def wanted(root, compiler: dict) -> bool:
  """Whether any body may be aligned (the compiler option or a freejoint's align="true")."""
  def visit(node) -> bool:
    return ((node.tag == "freejoint" and node.attrs.get("align") == "true")
            or any(visit(c) for c in node.children))
  return bool(compiler["alignfree"]) or visit(root)


def align_free(bodies, compiler: dict) -> None:
  """Aligns, in place, every alignable body of build's body list; each body but the world
  carries its `inertia` (mass, ipos, inertia, iquat) in its body frame."""
  has_child = {b.parent for b in bodies[1:]}
  for bid, body in enumerate(bodies[1:], 1):
    if not _aligned(body, bid in has_child, compiler):
      continue
    mass, ipos, inert, iquat = body.inertia
    body.pos, body.quat = frames.compose(body.pos, body.quat, ipos, iquat)
    inv_pos, inv_quat = frames.inverse(ipos, iquat)
    body.geoms = [reexpressed(g, inv_pos, inv_quat) for g in body.geoms]
    body.sites = [reexpressed(s, inv_pos, inv_quat) for s in body.sites]
    body.camlights = [camlight.aligned(c, inv_pos, inv_quat) for c in body.camlights]
    body.inertia = (mass, np.zeros(3), inert, np.array([1.0, 0.0, 0.0, 0.0]))
