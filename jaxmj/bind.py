"""Readable per-object views of Model and Data, so notebook users need no address arithmetic.

    v = jaxmj.bind(m, d)
    v.body("torso").xpos          # d.xpos[torso]
    v.joint("hip").qpos           # the joint's slice of d.qpos (7 for free, 4 for ball, ...)
    v.actuator("elbow").force     # d.actuator_force[elbow]
    jaxmj.bind(m).geom("foot").size   # m.geom_size[foot]

Each view is a plain namespace built when asked for: attribute names are the mjModel /
mjData field names with the object prefix dropped, as in MuJoCo's Python bindings
(`d.body("torso").xpos`, `m.joint("hip").range`). Objects are named, given by id, or given
as `jaxmj.mjcf` elements, as dm_control's `physics.bind(element)`:

    v.joint(arm.elbow).qpos            # the element's name in the composed model
    v([arm.shoulder, arm.elbow]).qpos  # a list: rows stacked (variable-width rows, such as
                                       # a ball joint's qpos, concatenated as dm_control)

The values are the arrays' own slices, so views work on traced Data inside jit (names and
ids are resolved on the host). A batched Model or Data (leading axes on every array leaf, as
jax.vmap's outputs or stacked trees) gives views with the same leading axes. Views are read
only; `replace` writes a view's fields functionally:

    d = jaxmj.bind(m, d).replace("joint", arm.elbow, qpos=[0.3], qvel=[0.0])
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import jax.numpy as jnp
import numpy as np

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
# MJCF namespace (of a jaxmj.mjcf element) -> object type, where the names differ
_NAMESPACE_TYPE = {"attachment_frame": ObjType.BODY, "worldbody": ObjType.BODY}


def _take(value, idx, nb: int):
  """value[..., idx] with `nb` leading batch axes left alone."""
  return value[(slice(None),) * nb + (idx,)]


def _rows(adr, num, ids):
  """Rows [adr[i], adr[i] + num[i]) of objects `ids`: one object's row (num 1) or block, or
  for a list the rows of every object concatenated (dm_control's bindings)."""
  if np.ndim(ids) == 0:
    a, n = int(adr[ids]), int(num[ids])
    return a if n == 1 else slice(a, a + n)
  if all(int(num[i]) == 1 for i in ids):
    return np.asarray(adr)[ids].astype(np.int64)
  return np.concatenate([np.arange(adr[i], adr[i] + max(int(num[i]), 0)) for i in ids]
                        ).astype(np.int64)


def _block(adr, num, ids):
  """As _rows, but a one-row object keeps its axis (qpos of a hinge is shape (1,))."""
  rows = _rows(adr, num, ids)
  return slice(rows, rows + 1) if isinstance(rows, int) else rows


def _actuator_slots(m: Model, side: str, ids, nbs, out: dict) -> None:
  """The actuator's rows of its per-output and per-control fields (`side`: "model" or
  "data"): one row when it has one output (control), else its (num, ...) block; `nbs(name)`
  is a field's number of leading batch axes."""
  for names, adr, num in ((_PER_OUTPUT[side], m.actuator_outadr, m.actuator_outnum),
                          (_PER_CONTROL[side], m.actuator_ctrladr, m.actuator_ctrlnum)):
    rows = _rows(adr, num, ids)
    for name in names:
      field = "actuator_" + name
      out[name] = (field, rows, nbs(field))


def _fields(obj) -> list[tuple[str, object]]:
  return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]


def _element_key(obj):
  """(object type, name in the compiled model) of a `jaxmj.mjcf` element, else None. The
  element is duck-typed through its `__mjobject__` method: the runtime never imports the
  host-side compiler."""
  key = getattr(type(obj), "__mjobject__", None)
  if key is None:
    return None
  namespace, name = key(obj)
  return _NAMESPACE_TYPE.get(namespace) or obj_type(namespace), name


def _resolve_one(m: Model, t: ObjType, obj) -> int:
  key = _element_key(obj)
  if key is not None:
    kind, obj = key
    if kind != t:
      raise TypeError(f"element {obj!r} is a {kind.name.lower()}, not a {t.name.lower()}")
  count = getattr(m, _COUNT[t])
  if isinstance(obj, str):
    i = name2id(m, t, obj)
    if i < 0:
      raise KeyError(f"model {m.model_name!r} has no {t.name.lower()} named {obj!r}")
    return i
  if not isinstance(obj, int | np.integer):
    raise TypeError(f"expected a name, an id or a jaxmj.mjcf element, got {obj!r}")
  i = int(obj)
  if not 0 <= i < count:
    raise IndexError(f"{t.name.lower()} id {i} out of range: model has {count}")
  return i


def _resolve(m: Model, t: ObjType, obj):
  """Id of `obj` (a name, id or element), or an int array of ids for a list of them."""
  if getattr(m, _COUNT[t], None) is None:
    raise NotImplementedError(f"{t.name.lower()} objects are not in jaxmj yet")
  if isinstance(obj, list | tuple):
    return np.asarray([_resolve_one(m, t, o) for o in obj], dtype=np.int64)
  return _resolve_one(m, t, obj)


def _per_object(fields, prefixes, count: int, ids, nbs, out: dict) -> None:
  """Slots of rows `ids` of every array field with one of `prefixes` and `count` rows,
  keyed by the field name without its prefix; `nbs(name)` is the field's number of leading
  batch axes."""
  for name, value in fields:
    prefix = next((p for p in prefixes if name.startswith(p)), None)
    if prefix is None or not hasattr(value, "shape"):
      continue
    nb = nbs(name)
    if value.shape[nb:nb + 1] == (count,):
      out.setdefault(name[len(prefix):], (name, ids, nb))


def _model_batch(m: Model):
  """Leading batch axes of field `name` of `m`: those of its array leaves (qpos0's rank
  beyond one), none for the static structure."""
  nb = np.ndim(m.qpos0) - 1
  leaves = set(type(m)._leaf_names)
  return lambda name: nb if name in leaves else 0


def _model_slots(m: Model, t: ObjType, ids) -> dict:
  """{view name: (Model field, rows, batch axes)} of objects `ids` of type `t`."""
  out = {}
  count = getattr(m, _COUNT[t])
  nbs = _model_batch(m)
  _per_object(_fields(m), _LAYOUT[t][0], count, ids, nbs, out)
  if t == ObjType.ACTUATOR:
    _actuator_slots(m, "model", ids, nbs, out)
  if t == ObjType.JOINT:
    q, v = _joint_rows(m, ids)
    for name in ("qpos0", "qpos_spring"):
      out[name] = (name, q, nbs(name))
    for name, value in _fields(m):
      nb = nbs(name)
      if name.startswith("dof_") and hasattr(value, "shape") and (
          value.shape[nb:nb + 1] == (m.nv,)):
        out.setdefault(name[4:], (name, v, nb))
  return out


def _joint_rows(m: Model, ids):
  """(qpos rows, dof rows) of joints `ids`: each joint's block (1, 4 or 7 qpos)."""
  qnum = np.asarray([_JOINT_NQ[JointType(t)] for t in m.jnt_type])
  vnum = np.asarray([JOINT_NV[JointType(t)] for t in m.jnt_type])
  return _block(m.jnt_qposadr, qnum, ids), _block(m.jnt_dofadr, vnum, ids)


def _data_slots(m: Model, d: Data, t: ObjType, ids) -> dict:
  """{view name: (Data field, rows, batch axes)} of objects `ids` of type `t`."""
  _, prefixes, direct = _LAYOUT[t]
  count = getattr(m, _COUNT[t])
  nb = np.ndim(d.qpos) - 1
  out = {}
  fields = _fields(d)
  for name in direct:
    value = getattr(d, name, None)
    if value is not None and value.shape[nb:nb + 1] == (count,):
      out[name] = (name, ids, nb)
  _per_object(fields, prefixes, count, ids, lambda _: nb, out)
  if t == ObjType.JOINT:
    q, v = _joint_rows(m, ids)
    out["qpos"] = ("qpos", q, nb)
    for name, _ in fields:
      if name in ("qvel", "qacc", "qacc_warmstart", "qacc_smooth") or name.startswith("qfrc_"):
        out[name] = (name, v, nb)
  elif t == ObjType.ACTUATOR:
    out["ctrl"] = ("ctrl", _rows(m.actuator_ctrladr, m.actuator_ctrlnum, ids), nb)
    _actuator_slots(m, "data", ids, lambda _: nb, out)
    if m.na:
      num = np.where(np.asarray(m.actuator_actadr) >= 0, m.actuator_actnum, 0)
      act = _block(np.maximum(m.actuator_actadr, 0), num, ids)
      out["act"], out["act_dot"] = ("act", act, nb), ("act_dot", act, nb)
  elif t == ObjType.SENSOR:
    out["data"] = ("sensordata", _block(m.sensor_adr, m.sensor_dim, ids), nb)
  elif t == ObjType.BODY and np.all(np.asarray(m.body_mocapid)[ids] >= 0):
    k = np.asarray(m.body_mocapid)[ids]
    out.update(mocap_pos=("mocap_pos", k, nb), mocap_quat=("mocap_quat", k, nb))
  return out


@dataclasses.dataclass(frozen=True)
class Binder:
  """Views of one Model (and optionally one Data); see the module docstring."""

  m: Model
  d: Data | None = None

  def _target(self, objtype, obj):
    """(object type, ids, {name: (field, rows, batch axes)}) of the object(s) `obj`."""
    t = obj_type(objtype)
    if t == ObjType.XBODY:
      t = ObjType.BODY
    if t not in _LAYOUT:
      raise ValueError(f"no view for {t.name.lower()} objects")
    ids = _resolve(self.m, t, obj)
    if self.d is None:
      return t, ids, _model_slots(self.m, t, ids)
    return t, ids, _data_slots(self.m, self.d, t, ids)

  def view(self, objtype: ObjType | int | str, obj) -> SimpleNamespace:
    """The object (name, id or jaxmj.mjcf element; or a list of them) of type `objtype`:
    Data fields if this Binder has a Data, else Model fields."""
    _, ids, slots = self._target(objtype, obj)
    source = self.m if self.d is None else self.d
    values = {name: _take(getattr(source, field), rows, nb)
              for name, (field, rows, nb) in slots.items()}
    return SimpleNamespace(**{**values, "id": ids})

  def replace(self, objtype: ObjType | int | str, obj, **values) -> Model | Data:
    """The Data (the Model when this Binder has none) with the view's fields `values` of the
    object(s) set: `d = bind(m, d).replace("joint", elbow, qpos=[0.3])`. Functional, so it
    works under jit; a Model's static structure (numpy fields) cannot be set."""
    t, _, slots = self._target(objtype, obj)
    source = self.m if self.d is None else self.d
    changes = {}
    for name, value in values.items():
      if name not in slots:
        raise AttributeError(f"{t.name.lower()} views have no field {name!r}")
      field, rows, nb = slots[name]
      if self.d is None and field not in type(self.m)._leaf_names:
        raise ValueError(f"{field} is static Model structure; it cannot be set (recompile)")
      array = changes.get(field, getattr(source, field))
      changes[field] = jnp.asarray(array).at[(slice(None),) * nb + (rows,)].set(value)
    return source.replace(**changes)

  def __call__(self, element) -> SimpleNamespace:
    """The view of a jaxmj.mjcf element (or a list of elements of one type), its object
    type taken from the element: dm_control's `physics.bind(element)`."""
    return self.view(self.element_type(element), element)

  @staticmethod
  def element_type(element) -> ObjType:
    """The object type of a jaxmj.mjcf element (or of a list of elements of one type)."""
    items = element if isinstance(element, list | tuple) else [element]
    keys = [_element_key(e) for e in items]
    kinds = {key[0] for key in keys if key is not None}
    if len(kinds) != 1 or None in keys:
      raise TypeError("bind(...)(x) takes jaxmj.mjcf elements of one object type; use "
                      "bind(...).body(name) etc. for names and ids")
    return kinds.pop()

  def body(self, obj) -> SimpleNamespace:
    return self.view(ObjType.BODY, obj)

  def joint(self, obj) -> SimpleNamespace:
    return self.view(ObjType.JOINT, obj)

  def geom(self, obj) -> SimpleNamespace:
    return self.view(ObjType.GEOM, obj)

  def site(self, obj) -> SimpleNamespace:
    return self.view(ObjType.SITE, obj)

  def camera(self, obj) -> SimpleNamespace:
    return self.view(ObjType.CAMERA, obj)

  def light(self, obj) -> SimpleNamespace:
    return self.view(ObjType.LIGHT, obj)

  def tendon(self, obj) -> SimpleNamespace:
    return self.view(ObjType.TENDON, obj)

  def actuator(self, obj) -> SimpleNamespace:
    return self.view(ObjType.ACTUATOR, obj)

  def sensor(self, obj) -> SimpleNamespace:
    return self.view(ObjType.SENSOR, obj)

  def equality(self, obj) -> SimpleNamespace:
    return self.view(ObjType.EQUALITY, obj)

  def key(self, obj) -> SimpleNamespace:
    return self.view(ObjType.KEY, obj)


def bind(m: Model, d: Data | None = None) -> Binder:
  """Per-object views of `m` (and of `d` when given): `bind(m, d).body("torso").xpos`."""
  return Binder(m, d)
