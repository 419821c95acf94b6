"""jaxmj.render and `jaxmj render`: frames of jaxmj states through mujoco.Renderer are the
frames MuJoCo draws of its own simulation, and the Model's values show in them."""

import os
import sys
import types
from typing import NamedTuple

import jax
import mujoco
import numpy as np
import pytest
from conftest import MODELS

import jaxmj
from jaxmj import cli, rendering

H, W = 96, 128
pytestmark = pytest.mark.usefixtures("cli_cache_restored")



def test_frames_of_our_trajectory_equal_mujocos_frames(gl):
  path = os.path.join(MODELS, "free_body.xml")  # a body thrown spinning, and a mocap body
  m = jaxmj.Model.from_xml_path(path)
  nstep = 12
  fields = ("time", "qpos", "qvel", "mocap_pos", "mocap_quat")
  _, traj = jax.jit(lambda d: jaxmj.rollout(m, d, nstep=nstep, fields=fields))(
    jaxmj.reset(m, "throw"))
  ours = jaxmj.render(m, traj, height=H, width=W)
  assert ours.shape == (nstep, H, W, 3) and ours.dtype == np.uint8
  mjm = mujoco.MjModel.from_xml_path(path)
  mjd = mujoco.MjData(mjm)
  mujoco.mj_resetDataKeyframe(mjm, mjd, 0)
  with mujoco.Renderer(mjm, H, W) as renderer:
    for t in range(nstep):
      mujoco.mj_step(mjm, mjd)
      np.testing.assert_allclose(mjd.qpos, traj["qpos"][t], rtol=0, atol=1e-12)
      mujoco.mj_forward(mjm, mjd)  # mj_step leaves the poses of the state before it
      renderer.update_scene(mjd)
      np.testing.assert_array_equal(ours[t], renderer.render(), err_msg=f"frame {t}")
  assert ours[0].std() > 0 and np.any(ours[0] != ours[-1])  # a scene that moves


def test_randomized_geom_rgba_shows_in_frames(gl):
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  d = jaxmj.make_data(m)
  floor = jaxmj.name2id(m, jaxmj.ObjType.GEOM, "floor")
  colours = {}
  for name, rgba in (("red", (1, 0, 0, 1)), ("blue", (0, 0, 1, 1))):
    rgba_all = np.array(m.geom_rgba)
    rgba_all[floor] = rgba
    colours[name] = jaxmj.render(m.replace(geom_rgba=rgba_all), d, height=H, width=W)
  red, blue = (colours[k].astype(float) for k in ("red", "blue"))
  assert red.shape == (H, W, 3)
  assert red[..., 0].mean() > blue[..., 0].mean() + 20
  assert blue[..., 2].mean() > red[..., 2].mean() + 20


def test_render_cli_writes_a_video(gl, tmp_path, capsys):
  out = tmp_path / "cartpole.mp4"
  rc = cli.main(["render", os.path.join(MODELS, "cartpole.xml"), "--controls", "random",
                 "--duration", "0.2", "--fps", "20", "--height", "64", "--width", "96",
                 "-o", str(out)])
  assert rc == 0 and out.stat().st_size > 0
  assert "4 frames of 96x64" in capsys.readouterr().out


def test_unknown_trajectory_shape_is_refused_by_name():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  with pytest.raises(ValueError, match=r"qpos has shape \(2, 3, 2\)"):
    rendering.render(m, {"qpos": np.zeros((2, 3, m.nq))})


class _State(NamedTuple):
  pipeline_state: jaxmj.Data
  obs: jax.Array


class _CartpoleEnv:
  """The parts of a jaxmj.envs environment that `jaxmj render --policy` uses."""

  n_frames = 5

  def __init__(self):
    self.sys = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
    self.dt = self.sys.opt.timestep * self.n_frames

  def reset(self, key):
    d = jaxmj.make_data(self.sys)
    return _State(pipeline_state=d, obs=jax.numpy.concatenate([d.qpos, d.qvel]))

  def step(self, state, action):
    d = state.pipeline_state.replace(ctrl=action)
    d = jax.lax.fori_loop(0, self.n_frames, lambda _, d: jaxmj.step(self.sys, d), d)
    return _State(pipeline_state=d, obs=jax.numpy.concatenate([d.qpos, d.qvel]))


def test_render_cli_films_a_policy_from_jaxmj_envs(gl, tmp_path, monkeypatch, capsys):
  loaded = []
  fake = types.ModuleType("jaxmj.envs")
  fake.load = lambda name: loaded.append(name) or _CartpoleEnv()
  fake.load_policy = lambda path: loaded.append(path) or (lambda obs: -obs[:1])
  monkeypatch.setitem(sys.modules, "jaxmj.envs", fake)
  monkeypatch.setattr(jaxmj, "envs", fake, raising=False)
  out = tmp_path / "policy.gif"
  rc = cli.main(["render", "CartpoleBalance", "--policy", str(tmp_path / "ckpt"),
                 "--duration", "0.1", "--fps", "100", "--height", "48", "--width", "64",
                 "-o", str(out)])
  assert rc == 0 and out.stat().st_size > 0
  assert loaded == ["CartpoleBalance", str(tmp_path / "ckpt")]
  assert "10 frames of 64x48" in capsys.readouterr().out


def test_batched_model_is_refused_by_name():
  m = jaxmj.Model.from_xml_path(os.path.join(MODELS, "cartpole.xml"))
  batch = m.replace(body_mass=np.stack([m.body_mass, 2 * m.body_mass]))
  with pytest.raises(ValueError, match="holds 2 worlds"):
    rendering.render(batch, jaxmj.make_data(m))
