"""Smooth dynamics, everything before contacts and constraints: kinematics, com quantities,
tendons, the mass matrix, bias and passive forces (MuJoCo's engine_core_smooth, engine_passive)."""
