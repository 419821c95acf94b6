"""Locomotion tasks: run forward (+x) without falling.

Reward per env step: forward_weight * (torso x velocity, m/s, over the step)
+ healthy_reward (while upright) - ctrl_cost * |action|^2. An episode ends when the torso
leaves its healthy height range (or, for the planar robots, tilts beyond max_pitch);
HalfCheetah never ends early. Observations: qpos without the x position (and y for the
free-floating robots), then qvel clipped to +-10.

| task | model | nu | obs | healthy while | dt (s) |
|---|---|---|---|---|---|
| Hopper | hopper.xml (planar) | 3 | 11 | 0.7 < z < 2, abs(pitch) < 0.2 rad | 0.02 |
| Walker | walker.xml (planar) | 6 | 17 | 0.8 < z < 2, abs(pitch) < 1 rad | 0.02 |
| HalfCheetah | cheetah.xml (planar) | 6 | 17 | always | 0.05 |
| Ant | ant.xml (free) | 8 | 27 | 0.26 < z < 1 | 0.05 |
| Humanoid | humanoid.xml (free) | 16 | 43 | 0.8 < z < 2 | 0.015 |
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmj.envs.base import Env
from jaxmj.types import JointType


class Locomotion(Env):
  """The shared task; subclasses set the class attributes below."""

  metric_names = ("forward_velocity", "ctrl_cost")
  forward_weight = 1.0
  healthy_reward = 1.0
  ctrl_cost = 1e-3
  healthy_z = (-jnp.inf, jnp.inf)
  max_pitch = jnp.inf
  reset_noise = 0.005
  default_n_frames = 1

  def __init__(self, sys, n_frames: int | None = None, **weights):
    super().__init__(sys, n_frames or self.default_n_frames)
    for k, v in weights.items():
      if not hasattr(type(self), k):
        raise TypeError(f"{type(self).__name__} has no option {k!r}")
      setattr(self, k, v)
    self._free = int(sys.jnt_type[0]) == JointType.FREE
    self._skip = 2 if self._free else 1  # x (and y) positions are left out of obs

  def initial_qpos_qvel(self, rng):
    k1, k2 = jax.random.split(rng)
    s = self.reset_noise
    qpos = self.sys.qpos0 + jax.random.uniform(k1, (self.sys.nq,), self.sys.qpos0.dtype, -s, s)
    if self._free:  # keep the root quaternion unit
      quat = qpos[3:7]
      qpos = qpos.at[3:7].set(quat / jnp.linalg.norm(quat))
    return qpos, jax.random.uniform(k2, (self.sys.nv,), qpos.dtype, -s, s)

  def torso_height(self, d):
    if self._free:
      return d.qpos[2]
    return self.sys.body_pos[1, 2] + d.qpos[1]

  def observation(self, d):
    return jnp.concatenate([d.qpos[self._skip:], jnp.clip(d.qvel, -10.0, 10.0)])

  def reward_done(self, d_prev, d, action):
    velocity = (d.qpos[0] - d_prev.qpos[0]) / self.dt
    z = self.torso_height(d)
    healthy = (z > self.healthy_z[0]) & (z < self.healthy_z[1])
    if not self._free:
      healthy &= jnp.abs(d.qpos[2]) < self.max_pitch
    ctrl = self.ctrl_cost * jnp.sum(jnp.square(action))
    reward = self.forward_weight * velocity + self.healthy_reward - ctrl
    done = 1.0 - healthy.astype(reward.dtype)
    return reward, done, {"forward_velocity": velocity, "ctrl_cost": ctrl}


class Hopper(Locomotion):
  """One-legged hopper: hop forward."""

  healthy_z = (0.7, 2.0)
  max_pitch = 0.2
  default_n_frames = 4


class Walker(Locomotion):
  """Planar biped: walk forward."""

  healthy_z = (0.8, 2.0)
  max_pitch = 1.0
  default_n_frames = 4


class HalfCheetah(Locomotion):
  """Planar runner: run forward; never falls, so no healthy reward or early end."""

  healthy_reward = 0.0
  ctrl_cost = 0.1
  reset_noise = 0.1
  default_n_frames = 5


class Ant(Locomotion):
  """Four-legged walker on a free joint: walk towards +x."""

  healthy_z = (0.26, 1.0)
  ctrl_cost = 0.05
  reset_noise = 0.1
  default_n_frames = 5


class Humanoid(Locomotion):
  """Humanoid on a free joint: walk towards +x without falling."""

  forward_weight = 1.25
  healthy_reward = 5.0
  ctrl_cost = 0.1
  healthy_z = (0.8, 2.0)
  reset_noise = 0.01
  default_n_frames = 3
