"""The pipeline recipe: forward, step, integrators, inverse dynamics, autoreset."""
