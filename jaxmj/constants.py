"""MuJoCo's numerical constants (mjMINVAL, mjMAXVAL, ...), defined once for the runtime."""

MINVAL = 1e-15  # mjMINVAL: the smallest value divided by, taken a norm of, ...
MAXVAL = 1e10  # mjMAXVAL: a control, position or velocity beyond this is bad
EPS = 1e-14  # mjEPS
FRAME_EPS = 1e-6  # MuJoCo's kFrameEps: local frames closer than this are the same frame
