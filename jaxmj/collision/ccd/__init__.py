"""Convex collision search (MuJoCo 4.0's nativeccd): support functions, GJK, EPA polytopes."""
