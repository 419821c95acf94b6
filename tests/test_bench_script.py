"""scripts/bench.py's bookkeeping: the latency loop's call count, the CPU time other processes
took during a measurement, and the markdown's note of the rows measured under load."""

import os
import sys

from conftest import ROOT

sys.path.insert(0, os.path.join(ROOT, "scripts"))
_flags = os.environ.get("XLA_FLAGS")
import bench  # noqa: E402  (it appends an XLA flag for its own children: not for this process's)

if _flags is None:
  os.environ.pop("XLA_FLAGS", None)
else:
  os.environ["XLA_FLAGS"] = _flags


def test_latency_loop_stops_at_its_minimum_calls(monkeypatch):
  monkeypatch.setattr(bench, "LATENCY_MIN_SECONDS", 0.0)
  calls = []
  bench.median_call_s(lambda: calls.append(1))
  assert len(calls) == bench.LATENCY_MIN_CALLS


def test_latency_loop_runs_until_its_minimum_time(monkeypatch):
  # a fake clock advancing 1 s a reading: each call takes 1 s, so 5 s need 5 calls
  ticks = iter(range(10_000))
  monkeypatch.setattr(bench.time, "perf_counter", lambda: float(next(ticks)))
  monkeypatch.setattr(bench, "LATENCY_MIN_CALLS", 1)
  monkeypatch.setattr(bench, "LATENCY_MIN_SECONDS", 5.0)
  calls = []
  assert bench.median_call_s(lambda: calls.append(1)) == 1.0
  assert len(calls) == 5


def test_loop_latency_feeds_each_output_back(monkeypatch):
  monkeypatch.setattr(bench, "LATENCY_MIN_SECONDS", 0.0)
  seen = []

  def step(m, d):
    seen.append(d)
    return d + 1

  assert bench.loop_latency(step, "model", 0) >= 0.0
  calls = bench.LOOP_CHUNK * (1 + bench.LATENCY_MIN_CALLS)  # a warm-up chunk, then the timed
  assert seen == list(range(calls))


def test_cpu_seconds_of_this_process_and_the_machine():
  if not os.path.exists("/proc/stat"):
    assert bench.busy_cpu_s() is None
    return
  mine0, busy0 = bench.process_cpu_s(os.getpid()), bench.busy_cpu_s()
  x = 0
  while bench.process_cpu_s(os.getpid()) - mine0 < 0.2:
    x += 1
  # the machine was busy at least as long as this process (both counted in clock ticks)
  assert bench.busy_cpu_s() - busy0 >= 0.15
  assert bench.process_cpu_s(2**22 + 12345) is None  # above Linux's largest pid: no such process


def test_markdown_names_the_rows_measured_under_load():
  results = [
    {"model": "a", "engine": "jaxmj", "rollout": {}, "others_cores": 0.6},
    {"model": "a", "engine": "mjx", "rollout": {}, "others_cores": 0.1},
    {"model": "b", "engine": "jaxmj", "rollout": {}},
  ]
  text = bench.format_markdown(results, [16], {"backend": "cpu"})
  note = text.split("busy on average: ")[1]
  assert "jaxmj on a (0.60)" in note
  assert "mjx on a" not in note and " on b" not in note
  assert "busy on average" not in bench.format_markdown(results[1:], [16], {})


def _args(remeasure):
  return type("Args", (), {"remeasure": remeasure})()


def test_a_loaded_measurement_is_made_again_and_the_least_loaded_kept(monkeypatch):
  again = iter([{"steps": 2, "others_cores": 0.4}, {"steps": 3, "others_cores": 0.05}])
  monkeypatch.setattr(bench, "measure", lambda args, engine, path: next(again))
  first = {"steps": 1, "others_cores": 0.9}
  kept = bench.remeasure_loaded(_args(3), "jaxmj", "m.xml", "m", first)
  assert kept == {"steps": 3, "others_cores": 0.05, "loaded_attempts": [0.9, 0.4]}
  assert bench.remeasure_loaded(_args(0), "jaxmj", "m.xml", "m", first) == first
  quiet = {"steps": 1, "others_cores": 0.1}
  assert bench.remeasure_loaded(_args(1), "jaxmj", "m.xml", "m", quiet) == quiet


def test_a_failed_remeasurement_keeps_the_loaded_one(monkeypatch):
  monkeypatch.setattr(bench, "measure", lambda args, engine, path: {"error": "stalled"})
  first = {"steps": 1, "others_cores": 0.9}
  kept = bench.remeasure_loaded(_args(1), "jaxmj", "m.xml", "m", first)
  assert kept == {**first, "loaded_attempts": [None]}
