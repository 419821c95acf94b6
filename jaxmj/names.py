"""Host-side name lookups over MuJoCo's names buffer (mj_name2id, mj_id2name)."""

from __future__ import annotations

from jaxmj.scan import cached_plan
from jaxmj.types import Model, ObjType

# ObjType -> the Model field holding name addresses for that type (mjModel's names).
_ADR_FIELD = {
  ObjType.BODY: "name_bodyadr", ObjType.XBODY: "name_bodyadr", ObjType.JOINT: "name_jntadr",
  ObjType.GEOM: "name_geomadr", ObjType.SITE: "name_siteadr", ObjType.CAMERA: "name_camadr",
  ObjType.LIGHT: "name_lightadr", ObjType.FLEX: "name_flexadr", ObjType.MESH: "name_meshadr",
  ObjType.SKIN: "name_skinadr", ObjType.HFIELD: "name_hfieldadr",
  ObjType.TEXTURE: "name_texadr", ObjType.MATERIAL: "name_matadr",
  ObjType.PAIR: "name_pairadr", ObjType.EXCLUDE: "name_excludeadr",
  ObjType.EQUALITY: "name_eqadr", ObjType.TENDON: "name_tendonadr",
  ObjType.ACTUATOR: "name_actuatoradr", ObjType.SENSOR: "name_sensoradr",
  ObjType.NUMERIC: "name_numericadr", ObjType.TEXT: "name_textadr",
  ObjType.TUPLE: "name_tupleadr", ObjType.KEY: "name_keyadr",
  ObjType.PLUGIN: "name_pluginadr",
}
_ALIASES = {"jnt": ObjType.JOINT, "keyframe": ObjType.KEY}


def obj_type(objtype: ObjType | int | str) -> ObjType:
  """ObjType from an enum, int, or a name such as "body", "joint", "geom", "site", "key"."""
  if isinstance(objtype, str):
    key = objtype.lower()
    if key in _ALIASES:
      return _ALIASES[key]
    try:
      return ObjType[key.upper()]
    except KeyError:
      raise ValueError(f"unknown object type {objtype!r}") from None
  return ObjType(objtype)


def _adrs(m: Model, objtype: ObjType):
  """Name address of each object of `objtype`; None for each dof (MuJoCo names no dofs).
  Flex and plugin objects are refused by jaxmj's compiler, so a Model has none."""
  if objtype == ObjType.DOF:
    return [None] * m.nv
  return getattr(m, _ADR_FIELD.get(objtype, ""), ())


@cached_plan
def _tables(m) -> dict:
  """name -> id dictionaries per address field, decoded once per model structure."""
  buf = m.names
  out = {}
  for field in dict.fromkeys(f for f in _ADR_FIELD.values() if hasattr(m, f)):
    table = {}
    for i, adr in enumerate(getattr(m, field)):
      name = buf[adr : buf.index(b"\0", adr)].decode()
      if name and name not in table:
        table[name] = i
    out[field] = table
  return out


def object_count(m: Model, objtype: ObjType | int | str) -> int:
  """How many objects of type `objtype` m has (ids run from 0 to this, exclusive)."""
  return len(_adrs(m, obj_type(objtype)))


def name2id(m: Model, objtype: ObjType | int | str, name: str) -> int:
  """Id of the object of type `objtype` named `name`, or -1 if there is none (mj_name2id)."""
  return _tables(m).get(_ADR_FIELD.get(obj_type(objtype)), {}).get(name, -1)


def id2name(m: Model, objtype: ObjType | int | str, i: int) -> str | None:
  """Name of object `i` of type `objtype`, or None if it is unnamed (mj_id2name; an id out
  of range raises IndexError where MuJoCo returns NULL)."""
  adrs = _adrs(m, obj_type(objtype))
  if not 0 <= i < len(adrs):
    raise IndexError(f"{obj_type(objtype).name.lower()} id {i} out of range ({len(adrs)})")
  adr = adrs[i]
  if adr is None:
    return None
  name = m.names[adr : m.names.index(b"\0", adr)].decode()
  return name or None
