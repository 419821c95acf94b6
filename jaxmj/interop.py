"""jaxmj <-> MuJoCo's own structures: `to_mujoco` (Model, Data -> MjModel, MjData),
`from_mujoco` (MjModel or MjSpec -> Model) and `data_from_mujoco` (MjData -> Data, MJX's
put_data). Host side; needs MuJoCo's Python package
(`pip install 'jaxmj[mujoco]'`), imported only when these functions run.

A Model keeps the MJCF it was compiled from (`Model.source`). `to_mujoco` has MuJoCo compile
that MJCF, then writes every numeric field the two models share (options included) with
jaxmj's values, so edits of the Model (randomized masses, colours, options) carry over.
`from_mujoco` has jaxmj compile the MjModel's MJCF, then takes each shared field the MjModel
holds with other values than MuJoCo's own compile of that MJCF: what was edited in it.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import functools
import os
import tempfile
import weakref

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.io import make_data
from jaxmj.smooth.kinematics import applied_sameframe
from jaxmj.source import ModelSource
from jaxmj.state import STATE_FIELD, State, components, set_state, state_size
from jaxmj.types import Data, Model, Option

# MjModels made by to_mujoco -> the source MuJoCo compiled them from, for from_mujoco
# (MuJoCo itself can write back only the model compiled last: mj_saveLastXML).
_SOURCES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def require_mujoco():
  """The `mujoco` module, or an ImportError saying how to install it."""
  try:
    import mujoco
  except ImportError as e:
    raise ImportError("this jaxmj function needs MuJoCo's Python package: "
                      "pip install 'jaxmj[mujoco]'") from e
  except AttributeError as e:  # PyOpenGL without the library MUJOCO_GL names
    raise ImportError(f"mujoco failed to import with MUJOCO_GL="
                      f"{os.environ.get('MUJOCO_GL')!r} ({e}): is that OpenGL backend "
                      "installed?") from e
  return mujoco


@functools.cache
def _shared_fields(mujoco) -> tuple[str, ...]:
  """Model fields that mjModel holds as arrays under the same name and layout (the model
  tests hold each against MuJoCo's compile: same size, same values)."""
  probe = mujoco.MjModel.from_xml_string("<mujoco/>")
  return tuple(f.name for f in dataclasses.fields(Model)
               if isinstance(getattr(probe, f.name, None), np.ndarray))


@functools.cache
def _shared_options(mujoco) -> tuple[str, ...]:
  probe = mujoco.MjModel.from_xml_string("<mujoco/>").opt
  return tuple(f.name for f in dataclasses.fields(Option) if hasattr(probe, f.name))


def compile_mujoco(source: ModelSource | None):
  """MuJoCo's MjModel compiled from `source`, as MuJoCo compiles it."""
  mujoco = require_mujoco()
  if source is None:
    raise ValueError("this Model keeps no MJCF source (Model.source is None): build it with "
                     "Model.from_xml_path, from_xml_string, from_mjcf or from_mujoco")
  assets = dict(source.assets)
  if source.file:
    return mujoco.MjModel.from_xml_path(source.file, assets)
  if not source.modelfiledir:  # MjSpec.from_string leaves <model> files out of its assets
    return mujoco.MjModel.from_xml_string(source.xml, assets)
  spec = mujoco.MjSpec.from_string(source.xml, assets=assets)
  spec.modelfiledir = source.modelfiledir
  return spec.compile()


def _batch(value: np.ndarray, ref, name: str, what: str) -> int | None:
  """Worlds in a (possibly batched) field with the size of `ref` per world, None if one."""
  size, refsize = np.size(value), np.size(ref)
  if size == refsize:
    return None
  if refsize and size % refsize == 0:
    return size // refsize
  raise ValueError(f"to_mujoco: {what}.{name} has {size} entries, MuJoCo's compile of the "
                   f"model's source has {refsize} per world: the Model does not match its source")


def _model_fields(mujoco, m: Model, mjm) -> tuple[dict, dict, int | None]:
  """The Model's shared fields and options as host arrays, and its number of worlds."""
  fields = {n: np.asarray(getattr(m, n)) for n in _shared_fields(mujoco)}
  options = {n: getattr(m.opt, n) for n in _shared_options(mujoco)}
  worlds = {_batch(v, getattr(mjm, n), n, "Model") for n, v in fields.items()}
  worlds |= {_batch(np.asarray(v), getattr(mjm.opt, n), n, "Model.opt")
             for n, v in options.items() if not isinstance(v, int)}
  worlds.discard(None)
  if len(worlds) > 1:
    raise ValueError(f"to_mujoco: the Model's batched fields disagree on the number of "
                     f"worlds: {sorted(worlds)}")
  return fields, options, worlds.pop() if worlds else None


def _write_model(mjm, fields: dict, options: dict, stat, world: int | None) -> None:
  """Writes jaxmj's values (of world `world` where a field is batched) into `mjm`."""
  for name, value in fields.items():
    ref = getattr(mjm, name)
    if ref.size:
      value = value.reshape((-1,) + ref.shape)
      ref[...] = value[world if value.shape[0] > 1 else 0]
  _apply_sameframe(mjm)
  for name, value in dataclasses.asdict(stat).items():
    ref = getattr(mjm.stat, name)
    if isinstance(ref, np.ndarray):
      ref[...] = value
    else:
      setattr(mjm.stat, name, value)
  for name, value in options.items():
    ref = getattr(mjm.opt, name)
    if isinstance(ref, np.ndarray):
      value = np.asarray(value).reshape((-1,) + ref.shape)
      ref[...] = value[world if value.shape[0] > 1 else 0]
    elif isinstance(value, (int, np.integer, enum.Enum)):  # the compiler's are numpy ints
      setattr(mjm.opt, name, int(value))
    else:
      value = np.ravel(np.asarray(value))
      setattr(mjm.opt, name, float(value[world if value.size > 1 else 0]))


def _apply_sameframe(mjm) -> None:
  """mjm's sameframe classes as jaxmj applies them to the numbers just written
  (kinematics.applied_sameframe): a geom, site or com the Model moved off its body's frame is
  composed there too, as a recompiled model's would be, not copied."""
  body = applied_sameframe(mjm.body_sameframe, mjm.body_ipos, mjm.body_iquat)
  body[0] = mjm.body_sameframe[0]  # the world's inertial frame is the world frame
  mjm.body_sameframe[:] = body
  for obj in ("geom", "site"):
    b = getattr(mjm, f"{obj}_bodyid")
    getattr(mjm, f"{obj}_sameframe")[:] = applied_sameframe(
      getattr(mjm, f"{obj}_sameframe"), getattr(mjm, f"{obj}_pos"),
      getattr(mjm, f"{obj}_quat"), mjm.body_ipos[b], mjm.body_iquat[b])


def model_to_mujoco(m: Model) -> list:
  """MjModels of `m`: one, or one per world when fields of `m` are batched (vmapped)."""
  mujoco = require_mujoco()
  first = compile_mujoco(m.source)
  fields, options, worlds = _model_fields(mujoco, m, first)
  models = [first] + [copy.deepcopy(first) for _ in range((worlds or 1) - 1)]
  for i, mjm in enumerate(models):
    _write_model(mjm, fields, options, m.stat, None if worlds is None else i)
    _SOURCES[mjm] = m.source
  return models


def _states(d: Data) -> tuple[np.ndarray, tuple]:
  """(worlds, size) integration states of `d` in mj_getState's layout, and its batch shape
  (gathered on the host: jnp ops here would compile once per field)."""
  batch = np.shape(d.time)
  n = int(np.prod(batch))
  parts = [np.asarray(getattr(d, STATE_FIELD[c]), np.float64).reshape(n, -1)
           for c in components(int(State.INTEGRATION)) if STATE_FIELD[c] is not None]
  return np.concatenate(parts, axis=1), batch


def to_mujoco(m: Model, d: Data | None = None, *, forward: bool = True):
  """MuJoCo's (MjModel, MjData) holding `m`'s values and `d`'s state.

  d: a Data, or a batch of them (leading axes on every field); None: MuJoCo's initial
    state (mj_resetData).
  forward: run mj_forward, so the MjData's positions, forces and contacts are computed.
  Returns (MjModel, MjData) for one world. For a batched `d` the MjData come as a list
  (batch axes flattened, row-major); for a batched `m` (domain randomization) the MjModels
  come as a list too, one per world.
  """
  mujoco = require_mujoco()
  models = model_to_mujoco(m)
  if d is None:
    datas = [mujoco.MjData(mjm) for mjm in models]
    states, batch = None, () if len(models) == 1 else (len(models),)
  else:
    states, batch = _states(d)
    if len(models) > 1 and len(models) != len(states):
      raise ValueError(f"to_mujoco: the Model has {len(models)} worlds, the Data "
                       f"{len(states)}")
    datas = [mujoco.MjData(models[i % len(models)]) for i in range(len(states))]
  for i, mjd in enumerate(datas):
    mjm = models[i % len(models)]
    if states is not None:
      mujoco.mj_setState(mjm, mjd, states[i], int(State.INTEGRATION))
    if forward:
      mujoco.mj_forward(mjm, mjd)
  if not batch:
    return models[0], datas[0]
  return (models if len(models) > 1 else models[0]), datas


def data_from_mujoco(m: Model, mjd) -> Data:
  """A Data holding the state of MuJoCo's MjData `mjd` (mjSTATE_INTEGRATION: time, qpos,
  qvel, act, warmstart, history, controls, applied forces, mocap poses, equality switches),
  as mjx.put_data gives MJX's; e.g. to start from mj_resetDataKeyframe or a state MuJoCo
  simulated. A list of MjData gives a batch (leading axis). Every other field is make_data's:
  `forward` (or `step`) computes them. The inverse of to_mujoco's state transfer."""
  mujoco = require_mujoco()
  datas = list(mjd) if isinstance(mjd, (list, tuple)) else [mjd]
  sig = int(State.INTEGRATION)
  size = state_size(m, sig)
  states = np.empty((len(datas), size))
  for x, state in zip(datas, states):
    n = mujoco.mj_stateSize(x.model, sig)
    if n != size:
      raise ValueError(f"data_from_mujoco: the MjData's integration state has {n} numbers, "
                       f"model {m.model_name!r} needs {size}: an MjData of another model?")
    mujoco.mj_getState(x.model, x, state, sig)
  d0 = make_data(m)
  out = _put_states(m, d0, jnp.asarray(states, d0.qpos.dtype), sig)
  return out if isinstance(mjd, (list, tuple)) else jax.tree.map(lambda x: x[0], out)


# set_state over a batch of state vectors in one compiled call, traced once per Model structure
_put_states = jax.jit(jax.vmap(set_state, in_axes=(None, None, 0, None)), static_argnums=3)


def _spec_source(spec, assets: dict | None) -> ModelSource:
  xml = spec.to_xml()
  return ModelSource.of(xml=xml, modelfiledir=spec.modelfiledir or "",
                        assets={**dict(spec.assets or {}), **(assets or {})})


def _last_xml_source(mujoco, mjm, assets: dict | None) -> ModelSource:
  """The MJCF of the MjModel MuJoCo compiled last (mj_saveLastXML), or a clear error."""
  with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "model.xml")
    try:
      mujoco.mj_saveLastXML(path, mjm)
    except Exception as e:
      raise ValueError(
        "from_mujoco: MuJoCo cannot write this MjModel's MJCF (mj_saveLastXML knows only "
        "the model compiled last); pass the MjSpec it was compiled from, or call "
        f"from_mujoco right after compiling it ({e})") from None
    with open(path) as f:
      return ModelSource.of(xml=f.read(), assets=assets)


def compile_source(source: ModelSource) -> Model:
  """jaxmj's Model compiled from `source` (host side, jaxmj's MJCF compiler)."""
  from jaxmj.mjcf.compile import build
  from jaxmj.mjcf.spec import parse

  assets = dict(source.assets) or None
  if source.file:
    return build.compile_path(source.file, assets)
  if not source.modelfiledir:
    return build.compile_string(source.xml, assets)
  # Relative file names resolve against modelfiledir, as MuJoCo's spec resolves them.
  anchor = os.path.join(source.modelfiledir, "<spec>")
  root = parse.parse_string(source.xml, file=anchor, assets=assets)
  return build.compile_node(root, anchor, assets, source).replace(path="")


def _as_field(value, like):
  """`value` with the shape and dtype of the Model field `like` (leaf or static)."""
  if isinstance(like, enum.Enum):
    return type(like)(int(value))
  if isinstance(like, int):
    return int(value)
  shape = np.shape(like)
  if isinstance(like, np.ndarray):
    return np.asarray(value, like.dtype).reshape(shape)
  return jnp.asarray(np.asarray(value).reshape(shape), like.dtype)


def _edits(mujoco, m: Model, mjm, ref) -> Model:
  """`m` with the shared fields where `mjm` differs from MuJoCo's compile `ref` taken from
  `mjm` (both compiled from the MJCF `m` was compiled from)."""
  def differs(name, a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
      raise ValueError(f"from_mujoco: the MjModel's {name} has shape {a.shape}, its MJCF "
                       f"compiles to {b.shape}")
    return not np.array_equal(a, b, equal_nan=a.dtype.kind == "f")

  changes = {}
  for name in _shared_fields(mujoco):
    if differs(name, getattr(mjm, name), getattr(ref, name)):
      changes[name] = _as_field(getattr(mjm, name), getattr(m, name))
  options = {}
  for name in _shared_options(mujoco):
    if differs(name, getattr(mjm.opt, name), getattr(ref.opt, name)):
      options[name] = _as_field(getattr(mjm.opt, name), getattr(m.opt, name))
  if options:
    changes["opt"] = m.opt.replace(**options)
  stat = {name: getattr(mjm.stat, name) for name in dataclasses.asdict(m.stat)
          if differs(name, getattr(mjm.stat, name), getattr(ref.stat, name))}
  if stat:
    changes["stat"] = dataclasses.replace(
      m.stat, **{k: tuple(map(float, v)) if np.ndim(v) else float(v) for k, v in stat.items()})
  if "geom_size" in changes:
    changes["geom_mass"] = _as_field(_geom_mass(m, changes["geom_size"]), m.geom_mass)
  if not changes:
    return m
  m = m.replace(**changes)
  if _ADHESION_INPUTS & changes.keys():  # the gap-layer rows are laid out from these
    m = m.replace(flg_adhesiongap=int(bool(m.flg_adhesion) and any(
      bool(np.any(np.asarray(getattr(m, k)) > 0)) for k in ("geom_gap", "pair_gap"))))
  if _WINDOW_INPUTS & changes.keys():  # the heightfield windows are sized from these
    from jaxmj.mjcf.assets import hfieldgrid

    m = m.replace(**hfieldgrid.window_fields(
      {name: np.asarray(getattr(m, name)) for name in _WINDOW_FIELDS}))
  return m


_WINDOW_INPUTS = {"geom_rbound", "geom_margin", "geom_gap", "hfield_size", "sensor_cutoff"}
_ADHESION_INPUTS = {"flg_adhesion", "geom_gap", "pair_gap"}
_WINDOW_FIELDS = ("geom_margin", "geom_gap", "geom_type", "geom_rbound", "geom_dataid",
                  "hfield_size", "hfield_nrow", "hfield_ncol", "body_geomadr", "body_geomnum",
                  "sensor_type", "sensor_objtype", "sensor_objid", "sensor_reftype",
                  "sensor_refid", "sensor_cutoff")


def _geom_mass(m: Model, size) -> np.ndarray:
  """jaxmj's geom_mass (ngeom,) with the primitives weighed by density re-weighed at `size`
  (ngeom, 3): the recompiled MJCF rounds sizes that the MjModel keeps exact (a capsule's
  fromto), and MuJoCo has no geom mass to take."""
  from jaxmj.mjcf.compile import inertia

  old, new = np.asarray(m.geom_size), np.asarray(size)
  density, mass = np.asarray(m.geom_density), np.array(m.geom_mass)
  for g in np.flatnonzero((old != new).any(axis=1)):
    t = int(m.geom_type[g])
    if mass[g] == density[g] * inertia.geom_volume(t, old[g]):  # not given, not a mesh's
      mass[g] = density[g] * inertia.geom_volume(t, new[g])
  return mass


def from_mujoco(model, assets: dict[str, bytes] | None = None) -> Model:
  """jaxmj's Model of a `mujoco.MjModel` or `mujoco.MjSpec`.

  An MjSpec is written as MJCF (`to_xml`) and compiled; an MjModel is compiled from its
  MJCF (the source of a model made by `to_mujoco`, else MuJoCo's mj_saveLastXML, which
  knows only the model compiled last), then every shared field the MjModel holds with
  values other than MuJoCo's own compile of that MJCF is taken from it. `assets` maps file
  names to contents for files the MJCF names. Same fields as `Model.from_xml_path` of the
  model's file.
  """
  mujoco = require_mujoco()
  if isinstance(model, mujoco.MjSpec):
    # The spec's XML rounds some compiled values (angles to 6 digits): the spec's own
    # compile supplies those, as it supplies an MjModel's edits.
    spec_model = model.compile()
    source = _spec_source(model, assets)
    return _edits(mujoco, compile_source(source), spec_model, compile_mujoco(source))
  if not isinstance(model, mujoco.MjModel):
    raise TypeError(f"from_mujoco: expected a mujoco.MjModel or mujoco.MjSpec, got "
                    f"{type(model).__name__}")
  source = _SOURCES.get(model)
  if source is not None:
    return _edits(mujoco, compile_source(source), model, compile_mujoco(source))
  from jaxmj.mjcf.errors import MJCFError

  source = _last_xml_source(mujoco, model, assets)
  try:
    m = compile_source(source)
  except MJCFError as e:
    raise ValueError(f"from_mujoco: {e}; file names in an MjModel's MJCF resolve against the "
                     "working directory: pass the files in `assets`, or pass the MjSpec") from e
  return _edits(mujoco, m, model, compile_mujoco(source))
