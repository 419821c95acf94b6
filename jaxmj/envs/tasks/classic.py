"""Cart-pole and pendulum tasks (assets/cartpole.xml, assets/pendulum.xml).

Tasks (observation; reward per step, in [0, 1]; episode end):

- CartpoleBalance: x, cos, sin, x', theta' (5); upright * centered * small_control *
  small_velocity; never (the time limit only).
- CartpoleSwingup: the same, from hanging down; never.
- PendulumSwingup: cos, sin, theta' (3); upright^2 * small_velocity; never.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmj.envs.base import Env
from jaxmj.envs.rewards import bump


class _Cartpole(Env):
  """dm_control's cart-pole: a 1 m pole on a cart (1 kg, motor up to 10 N) on a rail
  limited to +-1.8 m; 0.01 s steps.

  theta is the pole's angle from upright. Reward per step, dm_control's terms multiplied:
  upright = (1 + cos theta)/2, centered = (1 + bump(x, 2 m))/2, small_control =
  (4 + 1 - a^2)/5 and small_velocity = (1 + bump(theta', 5 rad/s))/2, so 1 only when the
  pole stands still upright over the rail's centre without effort; 1000 steps return
  <= 1000. The pole swings almost undamped (as in dm_control), so doing nothing already
  returns about 600: learning shows above that. Episodes never end early (only the
  episode limit, 1000 steps by default).
  """

  metric_names = ("upright", "centered")
  swing_up = False

  def initial_qpos_qvel(self, rng):
    k1, k2, k3 = jax.random.split(rng, 3)
    dtype = self.sys.qpos0.dtype
    if self.swing_up:
      x = 0.01 * jax.random.normal(k1, (), dtype)
      theta = jnp.pi + 0.01 * jax.random.normal(k2, (), dtype)
    else:
      # dm_control's balance start: near upright, near the centre
      x = jax.random.uniform(k1, (), dtype, -0.1, 0.1)
      theta = jax.random.uniform(k2, (), dtype, -0.034, 0.034)
    return jnp.stack([x, theta]), 0.01 * jax.random.normal(k3, (2,), dtype)

  def observation(self, d):
    return jnp.stack([d.qpos[0], jnp.cos(d.qpos[1]), jnp.sin(d.qpos[1]), d.qvel[0],
                      d.qvel[1]])

  def reward_done(self, d_prev, d, action):
    upright = (1.0 + jnp.cos(d.qpos[1])) / 2
    centered = (1.0 + bump(d.qpos[0], 2.0)) / 2
    small_control = (5.0 - jnp.square(jnp.clip(action[0], -1, 1))) / 5
    small_velocity = (1.0 + bump(d.qvel[1], 5.0)) / 2
    reward = upright * centered * small_control * small_velocity
    return reward, jnp.zeros_like(reward), {"upright": upright, "centered": centered}


class CartpoleBalance(_Cartpole):
  """Keep the pole up; it starts within 0.034 rad of upright, the cart within 0.1 m."""


class CartpoleSwingup(_Cartpole):
  """Swing the pole up from hanging down, then balance it."""

  swing_up = True


class PendulumSwingup(Env):
  """A 1 kg bob on a 0.5 m rod, a 1 N m motor (a fifth of gravity's torque: it swings up in
  several pumps); 0.02 s steps. theta = 0 hangs down. Reward per step:
  ((1 - cos theta)/2)^2 * (3 + bump(theta', 8 rad/s))/4, 1 at rest upright. Starts at a
  uniform random angle and speed within +-1 rad/s; never ends early."""

  metric_names = ("upright",)

  def initial_qpos_qvel(self, rng):
    k1, k2 = jax.random.split(rng)
    dtype = self.sys.qpos0.dtype
    return (jax.random.uniform(k1, (1,), dtype, -jnp.pi, jnp.pi),
            jax.random.uniform(k2, (1,), dtype, -1.0, 1.0))

  def observation(self, d):
    return jnp.stack([jnp.cos(d.qpos[0]), jnp.sin(d.qpos[0]), d.qvel[0]])

  def reward_done(self, d_prev, d, action):
    upright = jnp.square((1.0 - jnp.cos(d.qpos[0])) / 2)
    reward = upright * (3.0 + bump(d.qvel[0], 8.0)) / 4
    return reward, jnp.zeros_like(reward), {"upright": upright}
