"""Actuation: transmissions, actuator dynamics, gains and biases (mj_transmission,
mj_fwdActuation), pid/dcmotor and orientation actuators, delay histories."""
