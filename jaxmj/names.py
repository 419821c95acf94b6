"""Host-side name lookups over MuJoCo's names buffer (mj_name2id, mj_id2name)."""

from __future__ import annotations

from jaxmj.scan import cached_plan
from jaxmj.types import Model, ObjType

# ObjType -> the Model field holding name addresses for that type.
_ADR_FIELD = {
  ObjType.BODY: "name_bodyadr",
  ObjType.XBODY: "name_bodyadr",
  ObjType.JOINT: "name_jntadr",
  ObjType.GEOM: "name_geomadr",
  ObjType.SITE: "name_siteadr",
  ObjType.KEY: "name_keyadr",
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


def _check(objtype: ObjType) -> str:
  if objtype not in _ADR_FIELD:
    raise NotImplementedError(f"names of {objtype.name.lower()} objects are not in jaxmj yet")
  return _ADR_FIELD[objtype]


@cached_plan
def _tables(m) -> dict:
  """name -> id dictionaries per address field, decoded once per model structure."""
  buf = m.names
  out = {}
  for field in set(_ADR_FIELD.values()):
    table = {}
    for i, adr in enumerate(getattr(m, field)):
      name = buf[adr : buf.index(b"\0", adr)].decode()
      if name and name not in table:
        table[name] = i
    out[field] = table
  return out


def name2id(m: Model, objtype: ObjType | int | str, name: str) -> int:
  """Id of the object of type `objtype` named `name`, or -1 if there is none."""
  return _tables(m)[_check(obj_type(objtype))].get(name, -1)


def id2name(m: Model, objtype: ObjType | int | str, i: int) -> str | None:
  """Name of object `i` of type `objtype`, or None if it is unnamed."""
  adrs = getattr(m, _check(obj_type(objtype)))
  if not 0 <= i < len(adrs):
    raise IndexError(f"{obj_type(objtype).name.lower()} id {i} out of range ({len(adrs)})")
  adr = adrs[i]
  name = m.names[adr : m.names.index(b"\0", adr)].decode()
  return name or None
