"""One ray per pixel of a model camera or of MuJoCo's free camera, as mujoco.Renderer frames it.

A perspective camera's ray leaves the camera along xmat @ (x, y, -1), (x, y) on the image
plane at unit distance; an orthographic camera's leaves the point xmat @ (x, y, 0) of the
camera's plane along xmat @ (0, 0, -1), (x, y) in length units. Either way the distance
along a ray (in units of its direction) is the depth along the optical axis, the quantity
MuJoCo's depth rendering gives.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from jaxmj.types import Data, Model


def orthographic(m: Model, cam: int) -> bool:
  """Whether model camera `cam` (-1: the free camera, vis.global_.orthographic) projects
  orthographically."""
  if cam >= 0:
    return bool(m.cam_projection[cam] != 0)
  return bool(int(m.vis.global_["orthographic"]))


def image_plane(m: Model, cam: int, height: int, width: int) -> tuple[float, ...]:
  """(left, right, bottom, top) of the image, as mjv_cameraFrustum and mjr_setView compute
  the frustum. Perspective: on the plane at unit distance in front of the camera, from the
  camera's intrinsics when it has a sensor size, else from its vertical field of view (cam =
  -1: the free camera's, vis.global_.fovy) and the image's aspect ratio. Orthographic: on
  the camera's plane in length units, fovy high (MuJoCo reads fovy as a length there) and
  as wide as the aspect ratio makes it."""
  fovy = float(m.cam_fovy[cam]) if cam >= 0 else float(m.vis.global_["fovy"])
  if orthographic(m, cam):
    top = fovy / 2
  elif cam >= 0 and m.cam_sensorsize[cam, 1] > 0:
    fx, fy, px, py = (float(v) for v in m.cam_intrinsic[cam])
    sx, sy = (float(v) for v in m.cam_sensorsize[cam])
    return (px - sx / 2) / fx, (px + sx / 2) / fx, -(sy / 2 + py) / fy, (sy / 2 - py) / fy
  else:
    top = float(np.tan(np.deg2rad(fovy) / 2))
  half = top * width / height
  return -half, half, -top, top


def pixel_rays(m: Model, cam: int, height: int, width: int, rows: int | None = None,
               cols: int | None = None) -> tuple[np.ndarray, np.ndarray]:
  """Ray origins and directions (height, width, 3) each, camera frame (x right, y up,
  looking along -z), through the pixel centres, row 0 at the top of the image; rows, cols:
  that many pixels of the same spacing (more than height, width: the image padded below
  and right). Perspective: origins 0, directions (x, y, -1); orthographic: origins
  (x, y, 0), directions (0, 0, -1)."""
  left, right, bottom, top = image_plane(m, cam, height, width)
  x = left + (np.arange(cols or width) + 0.5) / width * (right - left)
  y = top - (np.arange(rows or height) + 0.5) / height * (top - bottom)
  xy = np.stack(np.meshgrid(x, y), axis=-1)
  zero, one = np.zeros((*xy.shape[:2], 1)), np.ones((*xy.shape[:2], 1))
  if orthographic(m, cam):
    return np.concatenate([xy, zero], -1), np.concatenate([0 * xy, -one], -1)
  return np.concatenate([0 * xy, zero], -1), np.concatenate([xy, -one], -1)


def free_camera_pose(m: Model) -> tuple[np.ndarray, np.ndarray]:
  """Position (3,) and orientation (3, 3) of MuJoCo's default free camera
  (mjv_defaultFreeCamera): looking at stat.center from 1.5 extents away, at the azimuth and
  elevation of vis.global_."""
  az, el = np.deg2rad(float(m.vis.global_["azimuth"])), np.deg2rad(float(m.vis.global_[
    "elevation"]))
  forward = np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])
  up = np.array([-np.sin(el) * np.cos(az), -np.sin(el) * np.sin(az), np.cos(el)])
  pos = np.asarray(m.stat.center, np.float64) - 1.5 * float(m.stat.extent) * forward
  return pos, np.stack([np.cross(forward, up), up, -forward], axis=-1)


def camera_pose(m: Model, d: Data, cam: int) -> tuple[jnp.ndarray, jnp.ndarray]:
  """Camera position (3,) and orientation (3, 3) (columns: right, up, backward), global."""
  if cam < -1 or cam >= m.ncam:
    raise ValueError(f"camera_image: camera {cam} does not exist (the model has {m.ncam}; "
                     "-1 is the free camera)")
  if cam == -1:
    pos, mat = free_camera_pose(m)
    return jnp.asarray(pos, d.qpos.dtype), jnp.asarray(mat, d.qpos.dtype)
  return d.cam_xpos[cam], d.cam_xmat[cam]


def clip_range(m: Model) -> tuple[float, float]:
  """(znear, zfar) of MuJoCo's renderer in metres: vis.map's, scaled by the model extent."""
  extent = float(m.stat.extent)
  return float(m.vis.map["znear"]) * extent, float(m.vis.map["zfar"]) * extent
