"""Option flags jaxmj cannot honour yet, named when a model is simulated rather than ignored.

What each flag does in MuJoCo 4.0.0 was probed on small models (tests/test_flags.py):
- sleep: trees whose velocity stays under sleep_tolerance are frozen (qvel set to exactly 0)
  and skipped until woken, a state machine over islands.
- speculative: adds contacts before impact for geoms fast enough to tunnel in one step
  (swept broadphase, conservative advancement, raycast occlusion): a collision pipeline.
- ipc: the IPC contact mode of the `discrete` integrator, which jaxmj does not have; MuJoCo
  itself refuses it with any other integrator (the compiler does too, mjcf/build.py).
- nativeccd disabled: convex and heightfield pairs go through the legacy libccd (MPR)
  pipeline, whose contacts differ from the native GJK/EPA ones jaxmj computes; pairs with
  a dedicated primitive collider are unaffected. Collision sensors on convex pairs are
  refused where they are measured (sensor/distance.py).

The flags are static Option fields, so a flag switched after compiling
(`m.replace(opt=m.opt.replace(enableflags=...))`) is caught like one set in MJCF.
"""

from __future__ import annotations

from jaxmj.collision.plan import CONVEX, HFIELD, collision_plan
from jaxmj.types import DisableBit, EnableBit, Model

_SLEEP = "flag sleep (trees sleeping under sleep_tolerance)"
_IPC = "flag ipc (IPC contact mode of the discrete integrator)"
_SPECULATIVE = "flag speculative (speculative contacts against tunneling)"
_LIBCCD = "flag nativeccd disabled (legacy libccd convex and heightfield collisions)"


def unsupported(m: Model) -> list[str]:
  """Names of the flags set in `m.opt` that change MuJoCo's simulation of `m` and that
  jaxmj cannot simulate; empty when every set flag is honoured or has no effect on `m`."""
  out = []
  if m.opt.enableflags & EnableBit.SLEEP:
    out.append(_SLEEP)
  if m.opt.enableflags & EnableBit.IPC:
    out.append(_IPC)
  speculative = m.opt.enableflags & EnableBit.SPECULATIVE
  libccd = m.opt.disableflags & DisableBit.NATIVECCD
  if speculative or libccd:
    plan = collision_plan(m)
    if speculative and plan["ncon"]:  # without contact pairs there is nothing to speculate
      out.append(_SPECULATIVE)
    if libccd and {g["types"] for g in plan["groups"]} & {CONVEX, HFIELD}:
      out.append(_LIBCCD)
  return out
