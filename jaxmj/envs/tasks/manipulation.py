"""ArmPush: a two-link arm pushes a puck to a target on a table (contacts: arm vs puck).

Observation (14): cos and sin of both arm joints, their velocities, fingertip x y, puck
x y, puck velocity, target x y. Reward per step in [0, 1]:
(3 * bump(|puck - target|, 0.2 m) + bump(|fingertip - puck|, 0.1 m)) / 4, so reaching the
puck earns a quarter and the puck on the target all of it. Never ends early; 500 steps of
0.02 s by default. The target (a mocap body) and the puck start at random each episode.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import jaxmj
from jaxmj.envs.base import Env
from jaxmj.envs.rewards import bump


class ArmPush(Env):
  """Push the puck onto the target."""

  metric_names = ("puck_to_target", "tip_to_puck")
  episode_length = 500

  def __init__(self, sys, n_frames: int = 2):
    super().__init__(sys, n_frames)
    self._tip = jaxmj.name2id(sys, "site", "fingertip")
    self._puck = jaxmj.name2id(sys, "body", "puck")

  def initial_data(self, rng):
    k1, k2, k3, k4 = jax.random.split(rng, 4)
    dtype = self.sys.qpos0.dtype
    arm = jax.random.uniform(k1, (2,), dtype, -0.3, 0.3)
    puck = jax.random.uniform(k2, (2,), dtype, -0.05, 0.05)
    target = jnp.stack([jax.random.uniform(k3, (), dtype, 0.25, 0.5),
                        jax.random.uniform(k4, (), dtype, -0.3, 0.1)])
    d = jaxmj.make_data(self.sys)
    mocap = d.mocap_pos.at[0, :2].set(target)
    return d.replace(qpos=jnp.concatenate([arm, puck]), mocap_pos=mocap)

  def _distances(self, d):
    tip = d.site_xpos[self._tip, :2]
    puck = d.xpos[self._puck, :2]
    return jnp.linalg.norm(puck - d.mocap_pos[0, :2]), jnp.linalg.norm(tip - puck)

  def observation(self, d):
    q = d.qpos[:2]
    return jnp.concatenate([jnp.cos(q), jnp.sin(q), d.qvel[:2], d.site_xpos[self._tip, :2],
                            d.xpos[self._puck, :2], d.qvel[2:4], d.mocap_pos[0, :2]])

  def reward_done(self, d_prev, d, action):
    to_target, to_puck = self._distances(d)
    reward = (3.0 * bump(to_target, 0.2) + bump(to_puck, 0.1)) / 4
    return reward, jnp.zeros_like(reward), {"puck_to_target": to_target,
                                            "tip_to_puck": to_puck}
