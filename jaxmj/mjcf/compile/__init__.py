"""Validated MJCF tree -> Model arrays: bodies, actuators, tendons, sensors, constants."""
