"""jaxmj.envs: reinforcement-learning environments on jaxmj, in Brax's functional shape.

    env = jaxmj.envs.load("CartpoleBalance")
    state = jax.jit(env.reset)(jax.random.PRNGKey(0))
    state = jax.jit(env.step)(state, jnp.zeros(env.action_size))
    train_env = jaxmj.envs.wrap(env, episode_length=1000)   # batched, auto-reset

Brax's trainers and wrappers take these environments unchanged; brax itself is optional
(`pip install jaxmj[rl]` for training, checkpoints and the gymnasium adapter).
"""

from jaxmj.envs.base import Env, State
from jaxmj.envs.pixels import CameraObservation
from jaxmj.envs.randomize import changed_fields, model_in_axes, randomization
from jaxmj.envs.registry import asset_path, load, names
from jaxmj.envs.wrappers import (
  AutoResetWrapper,
  DomainRandomizationVmapWrapper,
  EpisodeWrapper,
  VmapWrapper,
  Wrapper,
  wrap,
)


def to_gymnasium(env, num_envs: int | None, **kwargs):
  """A gymnasium.vector.VectorEnv over `num_envs` worlds of `env`, or with num_envs=None a
  single-world gymnasium.Env (needs gymnasium; see jaxmj.envs.gym)."""
  from jaxmj.envs.gym import JaxmjEnv, JaxmjVectorEnv

  if num_envs is None:
    return JaxmjEnv(env, **kwargs)
  return JaxmjVectorEnv(env, num_envs, **kwargs)


def load_policy(path: str, deterministic: bool = True):
  """The policy saved by `jaxmj train` at `path` (needs jaxmj[rl]): see jaxmj.envs.train."""
  from jaxmj.envs.train import load_policy as _load_policy

  return _load_policy(path, deterministic=deterministic)


__all__ = [
  "AutoResetWrapper", "CameraObservation", "DomainRandomizationVmapWrapper", "Env",
  "EpisodeWrapper", "State",
  "VmapWrapper", "Wrapper", "asset_path", "changed_fields", "load", "load_policy",
  "model_in_axes", "names", "randomization", "to_gymnasium", "wrap",
]
