"""<pid> and <dcmotor> actuator shortcuts (MuJoCo 4.0), expanded onto an actuator spec.

Both write dyntype/gaintype/biastype and their parameter vectors as MuJoCo 4.0's compiler
does; the layouts, checked against mujoco 4.0.0:

  pid      gainprm = (ki,)  biasprm = (0, -kp, -kv or dampratio)  dynprm = (imax, slewmax)
  dcmotor  gainprm = (R, K, alpha, T0, kp, ki, kd, Vmax)
           dynprm  = (te, didt_max, R_thermal, C_thermal, T_ambient, sigma0, sigma1, slewmax,
                      imax)
           biasprm = (cogging amplitude, poles, phase, F_coulomb, F_static, v_stribeck)

A pid takes one control per input keyword (`pos`, `vel`, `ff`, in that order; default
`pos vel`), each with its own range (posrange, velrange, ffrange). A dcmotor takes one
control per keyword of `pos`, `vel`, `ff`, `voltage` (canonical order, default `voltage`,
one shared ctrlrange) or none at all (`none`: a passive motor). A shortcut written over a
class spec of its own kind starts from that spec's parameters, as MuJoCo's default classes
do.
"""

from __future__ import annotations

import numpy as np

from jaxmj.mjcf.spec.parse import Node

SLOTS = ("slew", "integral", "temperature", "bristle", "current")
DC_INPUTS = ("pos", "vel", "ff", "voltage")


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


def dc_inputs(node: Node, given) -> list[str]:
  """A DC motor's input keywords: 'none' (no controls: a passive motor, zero voltage) or a
  subset of pos, vel, ff, voltage; 'voltage' when not given. Keywords are unique and in
  canonical order already (checked when read, mjcf/inputs.py)."""
  tokens = str(given or "").split() or ["voltage"]
  if tokens != ["none"] and any(t not in DC_INPUTS for t in tokens):
    raise node.error("dcmotor inputs are 'none' or a subset of [pos, vel, ff, voltage]",
                     "input")
  return tokens


def check_dc(node: Node, gainprm, dynprm, tokens: list[str]) -> None:
  """MuJoCo's conditions on a DC motor gain's controller: controller inputs (pos, vel, ff)
  need a positive motor constant, gains need a controller input, the integral gain the pos
  input, slew limiting a controller input."""
  ctrl = any(t in ("pos", "vel", "ff") for t in tokens)
  own = node.tag == "dcmotor"
  if ctrl and gainprm[1] <= 0:
    raise node.error("dcmotor controller inputs require a positive motor constant",
                     "motorconst" if own else "gainprm")
  if np.any(np.asarray(gainprm[4:7]) != 0) and not ctrl:
    raise node.error("dcmotor controller gains require a controller input [pos, vel, ff]",
                     "controller" if own else "gainprm")
  if gainprm[5] > 0 and "pos" not in tokens:
    raise node.error("dcmotor integral gain requires the pos input",
                     "controller" if own else "input")
  if dynprm[7] > 0 and not ctrl:
    raise node.error("dcmotor slew rate limiting requires a controller input [pos, vel, ff]",
                     "controller" if own else "dynprm")


def pid(node: Node, s: dict) -> None:
  """<pid>: kp, kv or dampratio, ki with imax (integral state), slewmax (slew state)."""
  own = s["gaintype"] == "pid"
  kp = node.get("kp")
  kp = (-s["biasprm"][1] if own else 1.0) if kp is None else kp
  kv, ratio = node.get("kv"), node.get("dampratio")
  for name, v in (("kv", kv), ("dampratio", ratio), ("slewmax", node.get("slewmax"))):
    if v is not None and v < 0:
      raise node.error(f"{name} cannot be negative", name)
  if kv is not None and ratio is not None:
    raise node.error("kv and dampratio cannot both be defined", "kv")
  b2 = -kv if kv is not None else ratio if ratio is not None else (
    s["biasprm"][2] if own else 0.0)
  ki = _pick(node, "ki", s["gainprm"][0] if own else 0.0)
  imax = _pick(node, "imax", s["dynprm"][0] if own else 0.0)
  slewmax = _pick(node, "slewmax", s["dynprm"][1] if own else 0.0)
  inp = str(node.get("input") or (s["input"] if own and s["input"] else "pos vel")).split()
  stateful = ki != 0 or slewmax > 0  # a negative ki makes no integral state, but counts
  s.update(gaintype="pid", biastype="affine", dyntype="pid" if stateful else "none",
           gainprm=_vec10(ki), biasprm=_vec10(0, -kp, b2),
           dynprm=_vec10(imax if ki != 0 else 0.0, slewmax), input=" ".join(inp))
  if node.get("posrange") is not None:  # the primary control's range: ctrlrange
    s["ctrlrange"] = np.asarray(node.get("posrange"), float)
  for name in ("velrange", "ffrange"):
    if node.get(name) is not None:
      s[name] = np.asarray(node.get(name), float)
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
  given = node.get("input") or (s["input"] if own and s["input"] else "voltage")
  inp = dc_inputs(node, given)
  k, r = _constants(node, g, inp)
  tau_max, i_max, didt = _overlay(node, "saturation", (0.0, 0.0, dp[1]))
  ind, te = _overlay(node, "inductance", (0.0, dp[0]))
  if ind < 0:
    raise node.error("DC motor: inductance must be non-negative", "inductance")
  if te < 0:
    raise node.error("DC motor: electrical time constant must be non-negative", "inductance")
  if ind > 0:
    te = ind / r
  cogging = _overlay(node, "cogging", bp[:3])
  kp, ki, kd, slew, imax, vmax = _overlay(node, "controller", (g[4], g[5], g[6], dp[7], dp[8],
                                                               g[7]))
  rt, cap, alpha, t0, tamb = _thermal(node, g, dp)
  lugre = _overlay(node, "lugre", (dp[5], dp[6], bp[3], bp[4], bp[5]))
  if lugre[0] <= 0:
    lugre[:] = 0.0
  if tau_max > 0 or i_max > 0:  # a torque limit wins over a current limit
    limit = tau_max if tau_max != 0 else k * i_max
    s.update(forcerange=np.array([-limit, limit]), forcelimited="true")
  s.update(gaintype="dcmotor", biastype="dcmotor", dyntype="dcmotor", actearly=True,
           gainprm=_vec10(r, k, alpha, t0, kp, ki, kd, max(vmax, 0.0)),
           dynprm=_vec10(te, max(didt, 0.0), rt, cap, tamb, lugre[0], lugre[1], slew, imax),
           biasprm=_vec10(*cogging, *lugre[2:]), input=" ".join(inp))


def _constants(node: Node, g: np.ndarray, inp: list[str]) -> tuple[float, float]:
  """(K, R): K = sqrt(Kt Ke) (or whichever is given, Ke from the nominal voltage and speed),
  R given or from the nominal voltage and stall torque. A passive motor (input none) may
  have K = 0."""
  kt, ke = _overlay(node, "motorconst", (g[1], 0.0))
  if kt < 0 or ke < 0:
    raise node.error("DC motor: motor constants must be non-negative", "motorconst")
  volt, stall, speed = _overlay(node, "nominal", (0.0, 0.0, 0.0))
  if ke <= 0 and volt > 0 and speed > 0:
    ke = volt / speed
  k = np.sqrt(kt * ke) if kt > 0 and ke > 0 else max(kt, ke, 0.0)
  r = _pick(node, "resistance", g[0])
  if r == 0 and volt > 0 and stall > 0 and k > 0:
    r = k * volt / stall
  if k <= 0 and inp != ["none"]:
    raise node.error("DC motor: motor constant K must be positive", "motorconst")
  if r <= 0:
    raise node.error("DC motor: resistance R must be positive", "resistance")
  return float(k), float(r)


def _thermal(node: Node, g: np.ndarray, dp: np.ndarray) -> tuple:
  """(RT, C, alpha, T0, T_ambient) of the thermal model, on when any of RT, C and the time
  constant is positive (which gives C = tau / RT, or RT = tau / C when RT is 0); otherwise
  RT = C = 0 and the other three stay as they were."""
  rt, cap, tau, alpha, t0, tamb = _overlay(node, "thermal", (dp[2], dp[3], 0.0, g[2], g[3],
                                                             dp[4]))
  if not (rt > 0 or cap > 0 or tau > 0):
    return 0.0, 0.0, g[2], g[3], dp[4]
  if tau > 0 and rt > 0:
    cap = tau / rt
  elif tau > 0 and rt == 0 and cap > 0:
    rt = tau / cap
  if rt <= 0:
    raise node.error("DC motor: thermal resistance must be positive", "thermal")
  if cap <= 0:
    raise node.error("DC motor: thermal capacitance must be positive", "thermal")
  return rt, cap, alpha, t0, tamb


def slots(dyntype: str, gaintype: str, gainprm: np.ndarray, dynprm: np.ndarray) -> np.ndarray:
  """(5,) int32: offset of each state in SLOTS inside the actuator's act block, -1 absent
  (mj_dcmotorSlots; pid keeps only slew and integral). A DC motor gain over other dynamics
  reads its temperature and integral from the slots its parameters give."""
  if dyntype == "pid":
    present = (dynprm[1] > 0, gainprm[0] > 0, False, False, False)
  elif "dcmotor" in (dyntype, gaintype):
    present = (dynprm[7] > 0, gainprm[5] > 0, dynprm[2] > 0, dynprm[5] > 0, dynprm[0] > 0)
  else:
    present = (False,) * 5
  out, n = np.full(5, -1, np.int32), 0
  for k, on in enumerate(present):
    if on:
      out[k], n = n, n + 1
  return out
