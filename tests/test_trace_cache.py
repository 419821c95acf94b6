"""jaxmj/trace_cache.py: keys that change with what shapes a trace, and entries that a later
call loads (a damaged one traced again) with the traced program's results."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import MODELS

import jaxmj
from jaxmj import trace_cache


def _model(damping="0.02"):
  xml = open(f"{MODELS}/pendulum.xml").read()
  return jaxmj.Model.from_xml_string(xml.replace('damping="0.02"', f'damping="{damping}"'))


def test_key_follows_the_model_and_the_argument_shapes():
  spec = (jax.ShapeDtypeStruct((2, 3), jnp.float32),)
  assert trace_cache.key(_model(), spec) == trace_cache.key(_model(), spec)  # recompiled
  assert trace_cache.key(_model(), spec) != trace_cache.key(_model("0.03"), spec)
  assert trace_cache.key(_model(), spec) != trace_cache.key(
    _model(), (jax.ShapeDtypeStruct((4, 3), jnp.float32),))
  assert trace_cache.key(_model(), spec) != trace_cache.key(_model(), spec, ("other",))


def test_entry_is_loaded_and_a_damaged_one_traced_again(tmp_path):
  m = _model()
  d = jaxmj.make_data(m)
  fn = jax.jit(lambda qpos, qvel: jaxmj.step(m, d.replace(qpos=qpos, qvel=qvel)).qvel)
  args = (d.qpos + 0.3, d.qvel)
  specs = tuple(jax.ShapeDtypeStruct(x.shape, x.dtype) for x in args)
  k = trace_cache.key(m, specs)
  runs = [trace_cache.exported(fn, specs, str(tmp_path), k) for _ in range(2)]
  assert [loaded for _, loaded in runs] == [False, True]
  (entry,) = tmp_path.iterdir()
  entry.write_bytes(b"not an exported program")
  runs.append(trace_cache.exported(fn, specs, str(tmp_path), k))
  assert not runs[-1][1] and trace_cache.exported(fn, specs, str(tmp_path), k)[1]
  for exp, _ in runs:
    np.testing.assert_array_equal(exp.call(*args), fn(*args))


def test_a_cache_that_cannot_be_written_warns_and_runs(tmp_path):
  blocker = tmp_path / "file"
  blocker.write_text("")
  fn = jax.jit(lambda x: 2.0 * x)
  specs = (jax.ShapeDtypeStruct((3,), jnp.float32),)
  with pytest.warns(UserWarning, match="cannot write"):
    exp, loaded = trace_cache.exported(fn, specs, str(blocker / "sub"), "k")
  assert not loaded
  np.testing.assert_array_equal(exp.call(jnp.ones(3, jnp.float32)), 2.0 * np.ones(3))


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
  def full_disk(src, dst):
    raise OSError(28, "No space left on device")
  monkeypatch.setattr(trace_cache.os, "replace", full_disk)
  specs = (jax.ShapeDtypeStruct((3,), jnp.float32),)
  with pytest.warns(UserWarning, match="No space left"):
    trace_cache.exported(jax.jit(lambda x: 2.0 * x), specs, str(tmp_path), "k")
  assert list(tmp_path.iterdir()) == []


def test_least_recently_used_entries_are_removed_past_the_budget(tmp_path):
  fn = jax.jit(lambda x: 2.0 * x)
  specs = (jax.ShapeDtypeStruct((3,), jnp.float32),)
  write = lambda k: trace_cache.exported(fn, specs, str(tmp_path), k, max_bytes=budget)  # noqa: E731
  budget = 1 << 30
  for i, k in enumerate(["a", "b"]):
    write(k)
    os.utime(tmp_path / f"{k}.exported", (1000.0 + i, 1000.0 + i))  # b used after a
  size = (tmp_path / "a.exported").stat().st_size
  assert write("a")[1]  # a hit: a is now the most recently used
  (tmp_path / "old.tmp").write_bytes(b"x")
  os.utime(tmp_path / "old.tmp", (1000.0, 1000.0))  # a writer killed long ago
  budget = 2 * size + size // 2  # room for two entries
  write("c")
  assert sorted(p.name for p in tmp_path.iterdir()) == ["a.exported", "c.exported"]


@pytest.mark.usefixtures("cli_cache_restored")
def test_enabled_compilation_cache_serves_a_recompile_and_adopts_older_entries(tmp_path):
  """jaxmj.enable_compilation_cache: a program compiled again after the in-memory caches are
  dropped comes from the folder (as in a new process), every entry carries the last-use stamp
  JAX's bounded cache evicts by, an older unbounded cache's entries included; a second call
  moves the cache to its folder."""
  cache = tmp_path / "xla"
  cache.mkdir()
  (cache / "old-cache").write_bytes(b"a program of an earlier run")
  hits = []
  jax.monitoring.register_event_listener(
    lambda event, **_: hits.append(event) if event.endswith("cache_hits") else None)
  assert jaxmj.enable_compilation_cache(str(cache), max_bytes=1 << 26) == str(cache)
  assert jax.config.jax_compilation_cache_max_size == 1 << 26
  fn = jax.jit(lambda x: jnp.sin(x) * 3.0 + 0.125)  # compiled by no other test
  x = jnp.arange(5.0)
  y = fn(x)
  jax.clear_caches()
  np.testing.assert_array_equal(jax.jit(lambda x: jnp.sin(x) * 3.0 + 0.125)(x), y)
  assert hits
  keys = {p.name.removesuffix("-cache") for p in cache.glob("*-cache")}
  assert len(keys) > 1 and all((cache / f"{k}-atime").exists() for k in keys)
  assert int.from_bytes((cache / "old-atime").read_bytes(), "little") == (
    cache / "old-cache").stat().st_mtime_ns
  other = tmp_path / "other"  # called again, later programs go to the new folder
  jaxmj.enable_compilation_cache(str(other))
  jax.jit(lambda x: jnp.cos(x) * 0.375)(x)
  assert list(other.glob("*-cache"))
