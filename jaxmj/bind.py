"""Readable per-object views of Model and Data, so notebook users need no address arithmetic.

    v = jaxmj.bind(m, d)
    v.body("torso").xpos          # d.xpos[torso]
    v.joint("hip").qpos           # the joint's slice of d.qpos (7 for free, 4 for ball, ...)
    v.actuator("elbow").force     # d.actuator_force[elbow]
    jaxmj.bind(m).geom("foot").size   # m.geom_size[foot]

Each view is a plain namespace built when asked for: attribute names are the mjModel /
mjData field names with the object prefix dropped, as in MuJoCo's Python bindings
(`d.body("torso").xpos`, `m.joint("hip").range`). Objects are named or given by id; the
values are the arrays' own slices, so views work on traced Data inside jit (names and ids
are resolved on the host).
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from jaxmj.names import name2id, obj_type
from jaxmj.types import JOINT_NV, Data, JointType, Model, ObjType

_JOINT_NQ = {JointType.FREE: 7, JointType.BALL: 4, JointType.SLIDE: 1, JointType.HINGE: 1}

# object type -> (Model prefixes, Data prefixes, Data fields indexed by the object's id)
_LAYOUT = {
  ObjType.BODY: (("body_",), (), ("xpos", "xquat", "xmat", "xipos", "ximat", "subtree_com",
                                  "cinert", "crb", "cvel", "xfrc_applied", "cacc",
                                  "cfrc_int", "cfrc_ext", "subtree_linvel",
                                  "subtree_angmom")),
  ObjType.JOINT: (("jnt_",), (), ("xanchor", "xaxis")),
  ObjType.GEOM: (("geom_",), ("geom_",), ()),
  ObjType.SITE: (("site_",), ("site_",), ()),
  ObjType.CAMERA: (("cam_",), ("cam_",), ()),
  ObjType.LIGHT: (("light_",), ("light_",), ()),
  ObjType.MESH: (("mesh_",), (), ()),
  ObjType.HFIELD: (("hfield_",), (), ()),
  ObjType.TEXTURE: (("tex_",), (), ()),
  ObjType.MATERIAL: (("mat_",), (), ()),
  ObjType.PAIR: (("pair_",), (), ()),
  ObjType.EQUALITY: (("eq_",), ("eq_",), ()),
  ObjType.TENDON: (("tendon_",), ("ten_",), ()),
  ObjType.ACTUATOR: (("actuator_",), ("actuator_",), ("ctrl",)),
  ObjType.SENSOR: (("sensor_",), (), ()),
  ObjType.KEY: (("key_",), (), ()),
}

_COUNT = {
  ObjType.BODY: "nbody", ObjType.JOINT: "njnt", ObjType.GEOM: "ngeom", ObjType.SITE: "nsite",
  ObjType.CAMERA: "ncam", ObjType.LIGHT: "nlight", ObjType.MESH: "nmesh",
  ObjType.HFIELD: "nhfield", ObjType.TEXTURE: "ntex", ObjType.MATERIAL: "nmat",
  ObjType.PAIR: "npair", ObjType.EQUALITY: "neq", ObjType.TENDON: "ntendon",
  ObjType.ACTUATOR: "nactuator", ObjType.SENSOR: "nsensor", ObjType.KEY: "nkey",
}


# MuJoCo 4.0's actuator fields with rows per output (actuator_outadr, actuator_outnum: nout
# rows) or per control (actuator_ctrladr, actuator_ctrlnum: nu rows), not per actuator
_PER_OUTPUT = {"model": ("gear", "acc0", "length0", "lengthrange"),
               "data": ("length", "velocity", "force", "moment")}
_PER_CONTROL = {"model": ("ctrllimited", "ctrlrange"), "data": ()}


def _actuator_slots(m: Model, obj, side: str, i: int, out: dict) -> None:
  """The actuator's rows of its per-output and per-control fields (`side`: "model" or
  "data"): one row when it has one output (control), else its (num, ...) block."""
  for names, adr, num in ((_PER_OUTPUT[side], m.actuator_outadr, m.actuator_outnum),
                          (_PER_CONTROL[side], m.actuator_ctrladr, m.actuator_ctrlnum)):
    a, n = int(adr[i]), int(num[i])
    for name in names:
      value = getattr(obj, "actuator_" + name)
      out[name] = value[a] if n == 1 else value[a:a + n]


def _fields(obj) -> list[tuple[str, object]]:
  return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]


def _resolve(m: Model, t: ObjType, obj: str | int) -> int:
  count = getattr(m, _COUNT[t], None)
  if count is None:
    raise NotImplementedError(f"{t.name.lower()} objects are not in jaxmj yet")
  if isinstance(obj, str):
    i = name2id(m, t, obj)
    if i < 0:
      raise KeyError(f"model {m.model_name!r} has no {t.name.lower()} named {obj!r}")
    return i
  i = int(obj)
  if not 0 <= i < count:
    raise IndexError(f"{t.name.lower()} id {i} out of range: model has {count}")
  return i


def _per_object(fields, prefixes, count: int, i: int, out: dict) -> None:
  """Row i of every array field with one of `prefixes` and `count` rows, prefix dropped."""
  for name, value in fields:
    prefix = next((p for p in prefixes if name.startswith(p)), None)
    if prefix is None or not hasattr(value, "shape") or not value.shape:
      continue
    if value.shape[0] == count:
      out.setdefault(name[len(prefix):], value[i])


def _model_view(m: Model, t: ObjType, i: int) -> dict:
  out = {"id": i}
  count = getattr(m, _COUNT[t])
  _per_object(_fields(m), _LAYOUT[t][0], count, i, out)
  if t == ObjType.ACTUATOR:
    _actuator_slots(m, m, "model", i, out)
  if t == ObjType.JOINT:
    q, v = _joint_slices(m, i)
    out.update(qpos0=m.qpos0[q], qpos_spring=m.qpos_spring[q])
    for name, value in _fields(m):
      if name.startswith("dof_") and hasattr(value, "shape") and value.shape[:1] == (m.nv,):
        out.setdefault(name[4:], value[v])
  return out


def _joint_slices(m: Model, i: int) -> tuple[slice, slice]:
  t = JointType(m.jnt_type[i])
  q, v = int(m.jnt_qposadr[i]), int(m.jnt_dofadr[i])
  return slice(q, q + _JOINT_NQ[t]), slice(v, v + JOINT_NV[t])


def _data_view(m: Model, d: Data, t: ObjType, i: int) -> dict:
  _, prefixes, direct = _LAYOUT[t]
  count = getattr(m, _COUNT[t])
  out = {"id": i}
  fields = _fields(d)
  for name in direct:
    value = getattr(d, name, None)
    if value is not None and value.shape[:1] == (count,):
      out[name] = value[i]
  _per_object(fields, prefixes, count, i, out)
  if t == ObjType.JOINT:
    q, v = _joint_slices(m, i)
    out["qpos"] = d.qpos[q]
    for name, value in fields:
      if name in ("qvel", "qacc", "qacc_warmstart", "qacc_smooth") or name.startswith("qfrc_"):
        out[name] = value[v]
  elif t == ObjType.ACTUATOR:
    adr, num = int(m.actuator_ctrladr[i]), int(m.actuator_ctrlnum[i])
    out["ctrl"] = d.ctrl[adr] if num == 1 else d.ctrl[adr:adr + num]
    _actuator_slots(m, d, "data", i, out)
    if m.na:
      adr, num = int(m.actuator_actadr[i]), int(m.actuator_actnum[i])
      out["act"] = d.act[adr:adr + num] if adr >= 0 else d.act[:0]
      out["act_dot"] = d.act_dot[adr:adr + num] if adr >= 0 else d.act_dot[:0]
  elif t == ObjType.SENSOR:
    adr, dim = int(m.sensor_adr[i]), int(m.sensor_dim[i])
    out["data"] = d.sensordata[adr:adr + dim]
  elif t == ObjType.BODY and m.body_mocapid[i] >= 0:
    k = int(m.body_mocapid[i])
    out.update(mocap_pos=d.mocap_pos[k], mocap_quat=d.mocap_quat[k])
  return out


@dataclasses.dataclass(frozen=True)
class Binder:
  """Views of one Model (and optionally one Data); see the module docstring."""

  m: Model
  d: Data | None = None

  def view(self, objtype: ObjType | int | str, obj: str | int) -> SimpleNamespace:
    """The named (or numbered) object of type `objtype`: Data fields if this Binder has a
    Data, else Model fields."""
    t = obj_type(objtype)
    if t == ObjType.XBODY:
      t = ObjType.BODY
    if t not in _LAYOUT:
      raise ValueError(f"no view for {t.name.lower()} objects")
    i = _resolve(self.m, t, obj)
    if self.d is None:
      return SimpleNamespace(**_model_view(self.m, t, i))
    return SimpleNamespace(**_data_view(self.m, self.d, t, i))

  def body(self, obj: str | int) -> SimpleNamespace:
    return self.view(ObjType.BODY, obj)

  def joint(self, obj: str | int) -> SimpleNamespace:
    return self.view(ObjType.JOINT, obj)

  def geom(self, obj: str | int) -> SimpleNamespace:
    return self.view(ObjType.GEOM, obj)

  def site(self, obj: str | int) -> SimpleNamespace:
    return self.view(ObjType.SITE, obj)

  def camera(self, obj: str | int) -> SimpleNamespace:
    return self.view(ObjType.CAMERA, obj)

  def light(self, obj: str | int) -> SimpleNamespace:
    return self.view(ObjType.LIGHT, obj)

  def tendon(self, obj: str | int) -> SimpleNamespace:
    return self.view(ObjType.TENDON, obj)

  def actuator(self, obj: str | int) -> SimpleNamespace:
    return self.view(ObjType.ACTUATOR, obj)

  def sensor(self, obj: str | int) -> SimpleNamespace:
    return self.view(ObjType.SENSOR, obj)

  def equality(self, obj: str | int) -> SimpleNamespace:
    return self.view(ObjType.EQUALITY, obj)

  def key(self, obj: str | int) -> SimpleNamespace:
    return self.view(ObjType.KEY, obj)


def bind(m: Model, d: Data | None = None) -> Binder:
  """Per-object views of `m` (and of `d` when given): `bind(m, d).body("torso").xpos`."""
  return Binder(m, d)


