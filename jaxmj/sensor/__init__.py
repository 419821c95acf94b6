"""Sensors, in pipeline order: objects.py (frames and velocities the kinds share), the
position stage (position.py; rangefinder.py, inside.py, distance.py: the larger kinds), the
velocity stage (velocity.py; limit.py: joint and tendon limit sensors), the acceleration
stage (acceleration.py; contact.py: the contact sensor), and driver.py, which groups the
sensors of a model by type and runs each stage's table. Delays and intervals are in
actuation/history.py.
"""
