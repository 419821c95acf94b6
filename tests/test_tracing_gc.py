"""The public functions trace with CPython's collector held back, and give the thresholds back."""

import gc
import threading

import jax
import pytest
from conftest import MODELS

import jaxmj
from jaxmj.dynamics import forward
from jaxmj.tracing_gc import THRESHOLDS, relaxed_gc

DEFAULT = (700, 10, 10)


@pytest.fixture
def default_thresholds():
  """CPython's own thresholds for the test (the suite runs with relaxed ones)."""
  saved = gc.get_threshold()
  gc.set_threshold(*DEFAULT)
  yield
  gc.set_threshold(*saved)


def test_thresholds_raised_inside_and_restored_after_an_exception(default_thresholds):
  with pytest.raises(RuntimeError):
    with relaxed_gc():
      assert gc.get_threshold() == THRESHOLDS
      with relaxed_gc():
        assert gc.get_threshold() == THRESHOLDS
      assert gc.get_threshold() == THRESHOLDS
      raise RuntimeError
  assert gc.get_threshold() == DEFAULT


def test_higher_thresholds_of_the_caller_are_kept(default_thresholds):
  gc.set_threshold(500_000, 5, 1000)
  with relaxed_gc():
    assert gc.get_threshold() == (500_000, 50, 1000)
  assert gc.get_threshold() == (500_000, 5, 1000)


def test_overlapping_threads_restore_the_thresholds_once_both_leave(default_thresholds):
  # thread a enters first and leaves while b still holds: the raise stays until b leaves
  a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
  seen = {}

  def a():
    with relaxed_gc():
      a_in.set()
      b_in.wait(60)
    seen["a left"] = gc.get_threshold()
    a_out.set()

  def b():
    a_in.wait(60)
    with relaxed_gc():
      b_in.set()
      a_out.wait(60)
      seen["b inside"] = gc.get_threshold()

  threads = [threading.Thread(target=a), threading.Thread(target=b)]
  for t in threads:
    t.start()
  for t in threads:
    t.join(120)
  assert seen == {"a left": THRESHOLDS, "b inside": THRESHOLDS}
  assert gc.get_threshold() == DEFAULT


def _collections_while(fn) -> int:
  counts = []
  callback = lambda phase, info: counts.append(phase) if phase == "stop" else None
  gc.callbacks.append(callback)
  try:
    fn()
  finally:
    gc.callbacks.remove(callback)
  return len(counts)


def test_tracing_a_step_collects_rarely(default_thresholds):
  m = jaxmj.Model.from_xml_path(f"{MODELS}/cartpole.xml")
  d = jaxmj.make_data(m)

  def trace(step):  # a first trace: a cached one allocates little
    jax.clear_caches()
    return _collections_while(lambda: jax.make_jaxpr(step)(m, d))

  unrelaxed, relaxed = trace(forward.step), trace(jaxmj.step)
  assert gc.get_threshold() == DEFAULT
  assert relaxed * 10 <= unrelaxed, (relaxed, unrelaxed)
