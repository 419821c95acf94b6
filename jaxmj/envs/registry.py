"""Task registry: `load(name, **config)` builds a task on its MJCF model, which ships inside
the package (jaxmj/envs/assets/), so tasks work after a plain `pip install`."""

from __future__ import annotations

import importlib
import importlib.resources

from jaxmj.types import Model

# name -> (module:class under jaxmj.envs.tasks, asset file, default config)
_TASKS: dict[str, tuple[str, str, dict]] = {
  "CartpoleBalance": ("classic:CartpoleBalance", "cartpole.xml", {}),
  "CartpoleBalancePixels": ("vision:CartpoleBalancePixels", "cartpole.xml", {}),
  "CartpoleSwingup": ("classic:CartpoleSwingup", "cartpole.xml", {}),
  "PendulumSwingup": ("classic:PendulumSwingup", "pendulum.xml", {}),
  "Hopper": ("locomotion:Hopper", "hopper.xml", {}),
  "Walker": ("locomotion:Walker", "walker.xml", {}),
  "HalfCheetah": ("locomotion:HalfCheetah", "cheetah.xml", {}),
  "Ant": ("locomotion:Ant", "ant.xml", {}),
  "Humanoid": ("locomotion:Humanoid", "humanoid.xml", {}),
  "ArmPush": ("manipulation:ArmPush", "arm_push.xml", {}),
}


def names() -> list[str]:
  """The registered task names, sorted."""
  return sorted(_TASKS)


def asset_path(filename: str) -> str:
  """Path of a model file shipped in jaxmj/envs/assets/."""
  return str(importlib.resources.files("jaxmj.envs") / "assets" / filename)


def load(name: str, **config):
  """The task `name` (see names()) on its bundled model. `config` goes to the task's
  constructor: `n_frames` (physics steps per env step) and the task's own options; a
  `model` keyword replaces the bundled Model (e.g. one compiled at another precision)."""
  if name not in _TASKS:
    raise ValueError(f"unknown task {name!r}; registered: {', '.join(names())}")
  target, asset, defaults = _TASKS[name]
  module, cls = target.split(":")
  task = getattr(importlib.import_module(f"jaxmj.envs.tasks.{module}"), cls)
  config = {**defaults, **config}
  model = config.pop("model", None)
  if model is None:
    model = Model.from_xml_path(asset_path(asset))
  return task(model, **config)
