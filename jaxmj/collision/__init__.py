"""Collision detection: primitive colliders, convex colliders and the driver."""
