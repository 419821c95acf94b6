"""Constraint rows, in pipeline order: layout.py (the static row layout), equality.py,
rows.py (friction loss, limits, contacts), adhesion.py and surfacevel.py (contact terms),
impedance.py (solimp, solref, regularizer), and driver.py (make_constraint: the efc
arrays). After the solver: contact_force.py (mj_contactForce) and extforce.py
(mj_rnePostConstraint), which read the constraint forces. The solvers are solver/'s.
"""
