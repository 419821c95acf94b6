"""Constraint solvers (MuJoCo's engine_solver): Newton, CG, PGS, line search, islands, noslip."""
