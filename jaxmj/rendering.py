"""Images of jaxmj states through MuJoCo's renderer (`mujoco.Renderer`), and videos of them.

Host side; needs `pip install 'jaxmj[render]'` and an OpenGL backend. Without a display,
MuJoCo is pointed at EGL (MUJOCO_GL=egl), or OSMesa where only that is installed, when it is
imported here first; set MUJOCO_GL yourself before anything imports mujoco otherwise.
"""

from __future__ import annotations

import ctypes.util
import os
import shutil
import sys
from collections.abc import Mapping

import numpy as np

from jaxmj.interop import model_to_mujoco, require_mujoco
from jaxmj.types import Model

# Data fields a frame is drawn from, in mj_setState's order; mj_forward computes the rest.
_STATE = ("time", "qpos", "qvel", "act", "plastic", "ctrl", "qfrc_applied", "xfrc_applied",
          "eq_active", "mocap_pos", "mocap_quat", "userdata")


def headless_gl() -> str | None:
  """The MUJOCO_GL backend for a machine without a display: EGL, else OSMesa, else None
  (naming a backend whose library is missing makes `import mujoco` itself fail)."""
  if not sys.platform.startswith("linux"):
    return None
  return next((gl for gl, lib in (("egl", "EGL"), ("osmesa", "OSMesa"))
               if ctypes.util.find_library(lib)), None)


def load_mujoco():
  """The `mujoco` module, imported with a headless OpenGL backend where there is no display
  and MUJOCO_GL is unset (MuJoCo picks its backend once, when first imported)."""
  if ("mujoco" not in sys.modules and "MUJOCO_GL" not in os.environ
      and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY")):
    gl = headless_gl()
    if gl is not None:
      os.environ["MUJOCO_GL"] = gl
  return require_mujoco()


def _frames(traj, nq: int) -> tuple[dict, int | None]:
  """The state fields of `traj` as host arrays with a leading time axis, and the number of
  frames (None: a single state without a time axis)."""
  fields = traj if isinstance(traj, Mapping) else {f: getattr(traj, f) for f in _STATE}
  if "qpos" not in fields:
    raise ValueError("render: the trajectory has no 'qpos' (rollout it with fields=('qpos',"
                     " ...) or pass a Data)")
  qpos = np.asarray(fields["qpos"])
  if qpos.ndim not in (1, 2) or qpos.shape[-1] != nq:
    raise ValueError(f"render: qpos has shape {qpos.shape}; expected ({nq},) for one state "
                     f"or (T, {nq}) for a trajectory (select one world of a batch first)")
  single = qpos.ndim == 1
  out = {f: np.asarray(v)[None] if single else np.asarray(v) for f, v in fields.items()
         if f in _STATE}
  return out, None if single else qpos.shape[0]


def render(m: Model, traj, *, camera: int | str = -1, height: int = 240, width: int = 320,
           scene_option=None) -> np.ndarray:
  """RGB images of a state or a trajectory of `m`, drawn by `mujoco.Renderer`.

  traj: a Data (one state, or stacked along a leading time axis), or a mapping of Data
    field names to arrays such as `jaxmj.rollout`'s output ((T, nq) 'qpos', optionally
    'mocap_pos', 'ctrl', ...). Each frame's poses are computed by mj_forward from the
    state fields present; the Model's values (randomized colours, sizes) are drawn.
  camera: camera name or id; -1 is MuJoCo's free camera.
  scene_option: a `mujoco.MjvOption` (what to draw: contact points, frames, groups).
  Returns uint8 (T, height, width, 3), or (height, width, 3) for a single state.
  """
  mujoco = load_mujoco()
  fields, nframe = _frames(traj, m.nq)
  models = model_to_mujoco(m)
  if len(models) > 1:
    raise ValueError(f"render: the Model holds {len(models)} worlds (batched fields); render "
                     "one world's Model, e.g. m.replace(body_mass=m.body_mass[i])")
  mjm = models[0]
  # MuJoCo's offscreen buffer must hold the image: grow it rather than refuse.
  mjm.vis.global_.offwidth = max(int(mjm.vis.global_.offwidth), width)
  mjm.vis.global_.offheight = max(int(mjm.vis.global_.offheight), height)
  mjd = mujoco.MjData(mjm)
  try:
    renderer = mujoco.Renderer(mjm, height, width)
  except Exception as e:
    raise RuntimeError(f"render: MuJoCo could not open an OpenGL context ({e}); on a machine "
                       "without a display set MUJOCO_GL=egl (GPU) or MUJOCO_GL=osmesa "
                       "(software) before importing mujoco") from e
  images = []
  with renderer:
    for t in range(1 if nframe is None else nframe):
      for name, value in fields.items():
        if name == "time":
          mjd.time = float(value[t])
        else:
          getattr(mjd, name)[...] = value[t]
      mujoco.mj_forward(mjm, mjd)
      renderer.update_scene(mjd, camera=camera, scene_option=scene_option)
      images.append(renderer.render())
  return images[0] if nframe is None else np.stack(images)


def write_video(path: str, frames: np.ndarray, fps: float) -> None:
  """Writes uint8 (T, H, W, 3) frames as a video (mp4, gif, ...) with mediapy."""
  try:
    import mediapy
  except ImportError as e:
    raise ImportError("writing videos needs mediapy: pip install 'jaxmj[render]'") from e
  if shutil.which("ffmpeg") is None:  # mediapy runs an ffmpeg binary; a wheel ships one
    try:
      import imageio_ffmpeg
    except ImportError as e:
      raise ImportError("writing videos needs an ffmpeg binary: install ffmpeg or "
                        "pip install 'jaxmj[render]'") from e
    mediapy.set_ffmpeg(imageio_ffmpeg.get_ffmpeg_exe())
  codec = {".gif": "gif"}.get(os.path.splitext(str(path))[1].lower(), "h264")
  mediapy.write_video(path, frames, fps=fps, codec=codec)
