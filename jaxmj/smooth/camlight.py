"""Camera and light poses in the global frame (mj_camlight); visual only, no physics effect.

Runs after com_pos: the track-com and target-com modes need subtree_com.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj import math
from jaxmj.types import Data, Model

FIXED, TRACK, TRACKCOM, TARGETBODY, TARGETBODYCOM = range(5)  # mjtCamLight


def _unit(v: jnp.ndarray, fallback) -> jnp.ndarray:
  """v / |v|, or `fallback` where |v| < mjMINVAL (mju_normalize3's (1, 0, 0))."""
  norm = math.safe_norm(v, keepdims=True)
  return jnp.where(norm < 1e-15, jnp.asarray(fallback, v.dtype), v / jnp.maximum(norm, 1e-15))


def _modes(mode: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, ...]:
  """Static masks: tracking, tracking the com, targeting (with a target), target com."""
  track = np.isin(mode, (TRACK, TRACKCOM))[:, None]
  aim = np.isin(mode, (TARGETBODY, TARGETBODYCOM)) & (target >= 0)
  return track, (mode == TRACKCOM)[:, None], aim[:, None], (mode == TARGETBODYCOM)[:, None]


def _aim_point(d: Data, target: np.ndarray, com: np.ndarray) -> jnp.ndarray:
  tgt = np.maximum(target, 0)
  return jnp.where(com, d.subtree_com[tgt], d.xpos[tgt])


def _tracked(d: Data, body: np.ndarray, trackcom, pos0, poscom0) -> jnp.ndarray:
  return jnp.where(trackcom, d.subtree_com[body] + poscom0, d.xpos[body] + pos0)


def _cameras(m: Model, d: Data) -> tuple[jnp.ndarray, jnp.ndarray]:
  body, target = m.cam_bodyid, m.cam_targetbodyid
  track, trackcom, aim, aimcom = _modes(m.cam_mode, target)
  xmat = d.xmat[body]
  pos = d.xpos[body] + jnp.einsum("nij,nj->ni", xmat, m.cam_pos)
  mat = xmat @ math.quat_to_mat(m.cam_quat)
  pos = jnp.where(track, _tracked(d, body, trackcom, m.cam_pos0, m.cam_poscom0), pos)
  mat = jnp.where(track[..., None], m.cam_mat0.reshape(-1, 3, 3), mat)
  # Targeting: z points from the target to the camera, x is horizontal (orthogonal to the
  # world z), y completes the frame.
  z = _unit(pos - _aim_point(d, target, aimcom), [1.0, 0.0, 0.0])
  x = _unit(jnp.cross(jnp.array([0.0, 0.0, 1.0], z.dtype), z), [1.0, 0.0, 0.0])
  y = _unit(jnp.cross(z, x), [1.0, 0.0, 0.0])
  aimed = jnp.stack([x, y, z], axis=-1)
  return pos, jnp.where(aim[..., None], aimed, mat)


def _lights(m: Model, d: Data) -> tuple[jnp.ndarray, jnp.ndarray]:
  body, target = m.light_bodyid, m.light_targetbodyid
  track, trackcom, aim, aimcom = _modes(m.light_mode, target)
  xmat = d.xmat[body]
  pos = d.xpos[body] + jnp.einsum("nij,nj->ni", xmat, m.light_pos)
  direction = jnp.einsum("nij,nj->ni", xmat, m.light_dir)
  pos = jnp.where(track, _tracked(d, body, trackcom, m.light_pos0, m.light_poscom0), pos)
  direction = jnp.where(track, m.light_dir0, direction)
  aimed = _unit(_aim_point(d, target, aimcom) - pos, [1.0, 0.0, 0.0])
  return pos, jnp.where(aim, aimed, direction)


def camlight(m: Model, d: Data) -> Data:
  """mj_camlight: cam_xpos (ncam, 3), cam_xmat (ncam, 3, 3), light_xpos and light_xdir
  (nlight, 3), global frame, in each object's mode (fixed, track, trackcom, targetbody,
  targetbodycom)."""
  if m.ncam == 0 and m.nlight == 0:
    return d
  cam_xpos, cam_xmat = _cameras(m, d) if m.ncam else (d.cam_xpos, d.cam_xmat)
  light_xpos, light_xdir = _lights(m, d) if m.nlight else (d.light_xpos, d.light_xdir)
  return d.replace(cam_xpos=cam_xpos, cam_xmat=cam_xmat, light_xpos=light_xpos,
                   light_xdir=light_xdir)
