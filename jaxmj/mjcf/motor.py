"""<pid> and <dcmotor> actuator shortcuts (MuJoCo 4.0), expanded onto an actuator spec.

Both write dyntype/gaintype/biastype and their parameter vectors as MuJoCo 4.0's compiler
does; the layouts, checked against mujoco 4.0.0:

  pid      gainprm = (ki,)  biasprm = (0, -kp, -kv or dampratio)  dynprm = (imax, slewmax)
  dcmotor  gainprm = (R, K, alpha, T0, kp, ki, kd, Vmax)
           dynprm  = (te, didt_max, R_thermal, C_thermal, T_ambient, sigma0, sigma1, slewmax,
                      imax)
           biasprm = (cogging amplitude, poles, phase, F_coulomb, F_static, v_stribeck)

A pid takes one control per input keyword (`pos`, `vel`, `ff`, in that order; default
`pos vel`), each with its own range (posrange, velrange, ffrange). A dcmotor takes a single
keyword, `voltage`, `pos` or `vel`; several inputs or none are reported as unsupported. A
shortcut written over a class spec of its own kind starts from that spec's parameters, as
MuJoCo's default classes do.
"""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.parse import Node

SLOTS = ("slew", "integral", "temperature", "bristle", "current")
CANONICAL = ("pos", "vel", "ff", "voltage", "pressure")  # mjtCtrlInput order: ctrl order


def _vec10(*leading) -> np.ndarray:
  out = np.zeros(10)
  out[: len(leading)] = leading
  return out


def _overlay(node: Node, name: str, start) -> np.ndarray:
  """`start` with the leading entries the element writes replaced."""
  out = np.array(start, float)
  v = node.get(name)
  if v is not None:
    v = np.atleast_1d(np.asarray(v, float))[: len(out)]
    out[: len(v)] = v
  return out


def _one_input(node: Node, given, allowed: tuple[str, ...], what: str) -> str:
  tokens = str(given).split()
  if len(tokens) != 1 or tokens[0] not in allowed:
    raise node.error(f"{what} input '{given}' is not supported by jaxmj yet: it runs one control "
                     f"per DC motor, so give exactly one of {', '.join(allowed)}", "input")
  return tokens[0]


def inputs(node: Node, given, allowed: tuple[str, ...], what: str) -> list[str]:
  """The input keywords, each once and in MuJoCo's canonical order (one control each)."""
  tokens = str(given).split()
  if not tokens or any(t not in allowed for t in tokens):
    raise node.error(f"{what} input '{given}' is not supported: give one or more of "
                     f"{', '.join(allowed)}", "input")
  if tokens != sorted(set(tokens), key=CANONICAL.index):
    raise node.error(f"inputs must be listed in canonical order [{', '.join(CANONICAL)}]",
                     "input")
  return tokens


def pid(node: Node, s: dict) -> None:
  """<pid>: kp, kv or dampratio, ki with imax (integral state), slewmax (slew state)."""
  own = s["gaintype"] == "pid"
  kp = node.get("kp")
  kp = (-s["biasprm"][1] if own else 1.0) if kp is None else kp
  kv, ratio = node.get("kv"), node.get("dampratio")
  for name, v in (("kv", kv), ("dampratio", ratio), ("ki", node.get("ki")),
                  ("imax", node.get("imax")), ("slewmax", node.get("slewmax"))):
    if v is not None and v < 0:
      raise node.error(f"{name} cannot be negative", name)
  if kv is not None and ratio is not None:
    raise node.error("kv and dampratio cannot both be defined", "kv")
  b2 = -kv if kv is not None else ratio if ratio is not None else (
    s["biasprm"][2] if own else 0.0)
  ki = _pick(node, "ki", s["gainprm"][0] if own else 0.0)
  imax = _pick(node, "imax", s["dynprm"][0] if own else 0.0)
  slewmax = _pick(node, "slewmax", s["dynprm"][1] if own else 0.0)
  given = node.get("input") or (s["input"] if own and s["input"] else "pos vel")
  inp = inputs(node, given, ("pos", "vel", "ff"), "pid")
  if (ki > 0 or slewmax > 0) and "pos" not in inp:
    raise node.error("pid controller states (ki, slewmax) require the pos input", "input")
  stateful = ki > 0 or slewmax > 0
  s.update(gaintype="pid", biastype="affine", dyntype="pid" if stateful else "none",
           gainprm=_vec10(ki), biasprm=_vec10(0, -kp, b2),
           dynprm=_vec10(imax if ki > 0 else 0.0, slewmax), input=" ".join(inp))
  rng = [node.get({"pos": "posrange", "vel": "velrange", "ff": "ffrange"}[t]) for t in inp]
  if any(r is not None for r in rng):  # one (lo, hi) row per control
    s["ctrlrange"] = np.array([(0.0, 0.0) if r is None else r for r in rng], float)
  s["inheritrange"] = _pick(node, "inheritrange", s["inheritrange"])
  if s["inheritrange"] > 0 and np.any(np.asarray(s["ctrlrange"]) != 0):
    raise node.error("ctrlrange and inheritrange cannot both be defined", "inheritrange")


def _pick(node: Node, name: str, fallback: float) -> float:
  v = node.get(name)
  return float(fallback if v is None else v)


def dcmotor(node: Node, s: dict) -> None:
  """<dcmotor>: motor constants and resistance (or a nominal operating point), inductance,
  saturation, cogging, a PID voltage controller, thermal resistance and LuGre friction."""
  own = s["gaintype"] == "dcmotor"
  g, dp, bp = (np.asarray(s[k], float) if own else np.zeros(10)
               for k in ("gainprm", "dynprm", "biasprm"))
  kt, ke = _overlay(node, "motorconst", (g[1], 0.0))
  volt, stall, speed = _overlay(node, "nominal", (0.0, 0.0, 0.0))
  tau_max, i_max, didt = _overlay(node, "saturation", (0.0, 0.0, dp[1]))
  ind, te = _overlay(node, "inductance", (0.0, dp[0]))
  cogging = _overlay(node, "cogging", bp[:3])
  kp, ki, kd, slew, imax, vmax = _overlay(node, "controller", (g[4], g[5], g[6], dp[7], dp[8],
                                                               g[7]))
  rt, cap, tau_t, alpha, t0, tamb = _overlay(node, "thermal", (dp[2], dp[3], 0.0, g[2], g[3],
                                                                dp[4]))
  lugre = _overlay(node, "lugre", (dp[5], dp[6], bp[3], bp[4], bp[5]))
  if ke <= 0 and volt > 0 and speed > 0:
    ke = volt / speed
  k = np.sqrt(kt * ke) if kt > 0 and ke > 0 else max(kt, ke, 0.0)
  r = _pick(node, "resistance", g[0])
  if r <= 0 and volt > 0 and stall > 0:
    r = k * volt / stall
  if k <= 0:
    raise node.error("DC motor: motor constant K must be positive", "motorconst")
  if r <= 0:
    raise node.error("DC motor: resistance R must be positive", "resistance")
  if ind > 0:
    te = ind / r
  if tau_t > 0:
    if rt > 0:
      cap = tau_t / rt
    elif cap > 0:
      rt = tau_t / cap
  if rt > 0 and cap <= 0:
    raise node.error("DC motor: thermal capacitance must be positive", "thermal")
  if lugre[0] <= 0:
    lugre[:] = 0.0
  given = node.get("input") or (s["input"] if own and s["input"] else "voltage")
  inp = _one_input(node, given, ("voltage", "pos", "vel"), "dcmotor")
  if inp == "voltage" and np.any(np.array([kp, ki, kd, slew, imax, vmax]) != 0):
    raise node.error("dcmotor controller gains require a controller input (pos or vel)",
                     "controller")
  if ki > 0 and inp != "pos":
    raise node.error("dcmotor integral gain requires the pos input", "controller")
  limit = tau_max if tau_max > 0 else k * i_max  # a torque limit wins over a current limit
  if limit > 0:
    s["forcerange"] = np.array([-limit, limit])
  s.update(gaintype="dcmotor", biastype="dcmotor", dyntype="dcmotor", actearly=True,
           gainprm=_vec10(r, k, alpha, t0, kp, ki, kd, vmax),
           dynprm=_vec10(max(te, 0.0), didt, rt, cap, tamb, lugre[0], lugre[1], slew, imax),
           biasprm=_vec10(*cogging, *lugre[2:]), input=inp)


def slots(dyntype: str, gainprm: np.ndarray, dynprm: np.ndarray) -> np.ndarray:
  """(5,) int32: offset of each state in SLOTS inside the actuator's act block, -1 absent
  (mj_dcmotorSlots; pid keeps only slew and integral)."""
  if dyntype == "pid":
    present = (dynprm[1] > 0, gainprm[0] > 0, False, False, False)
  elif dyntype == "dcmotor":
    present = (dynprm[7] > 0, gainprm[5] > 0, dynprm[2] > 0, dynprm[5] > 0, dynprm[0] > 0)
  else:
    present = (False,) * 5
  out, n = np.full(5, -1, np.int32), 0
  for k, on in enumerate(present):
    if on:
      out[k], n = n, n + 1
  return out
