"""Collision detection: primitive colliders, convex colliders and the driver. The package is
also callable as MJX's `collision(m, d)` (mj_collision; set up in jaxmj/__init__.py)."""
