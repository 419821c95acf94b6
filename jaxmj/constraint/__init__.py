"""Constraint rows, in pipeline order: layout.py (the static row layout), equality.py,
rows.py (friction loss, limits, contacts), adhesion.py and surfacevel.py (contact terms),
impedance.py (solimp, solref, regularizer), and driver.py (make_constraint: the efc
arrays). The solver is jaxmj/solver.py.
"""

from jaxmj.constraint.driver import make_constraint
from jaxmj.constraint.layout import efc_layout
from jaxmj.constraint.rows import ball_angle_axis, point_jacobians

__all__ = ["ball_angle_axis", "efc_layout", "make_constraint", "point_jacobians"]
