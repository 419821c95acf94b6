"""Tasks observed through a camera (jaxmj.camera_image), not through the state.

| task | obs | reward, ends |
|---|---|---|
| CartpoleBalancePixels | 32x32 RGB of the `side` camera, flattened (3072) | as CartpoleBalance |
"""

from __future__ import annotations

from jaxmj.envs.pixels import pixel_observation
from jaxmj.envs.tasks.classic import CartpoleBalance


class CartpoleBalancePixels(CartpoleBalance):
  """CartpoleBalance seen by the cart-pole's side camera: obs is one RGB image (values in
  [0, 1], row-major, channels last), so velocities must be inferred (stack frames or use a
  recurrent policy)."""

  height = width = 32

  def observation(self, d):
    return pixel_observation(self.sys, d, "side", self.height, self.width, ("rgb",))
