"""`jaxmj simulate`: runs exactly the steps asked for; every error is one line, exit 2.
`jaxmj cache`: what the persistent cache holds, cleared on request."""

import os
import re
import warnings

import pytest
from conftest import MODELS

import jaxmj
from jaxmj import cli

PENDULUM = os.path.join(MODELS, "pendulum.xml")
pytestmark = pytest.mark.usefixtures("cli_cache_restored")


def run(capsys, *argv):
  """(exit status, stdout, stderr) of `jaxmj ARGV`."""
  try:
    rc = cli.main(list(argv))
  except SystemExit as e:
    rc = e.code
  out, err = capsys.readouterr()
  return rc, out, err


def test_steps_not_a_multiple_of_the_chunk_are_all_run(capsys):
  rc, out, _ = run(capsys, "simulate", PENDULUM, "--steps", "150", "--batch", "2", "--quiet")
  assert rc == 0
  assert "2 worlds x 150 steps = 300 steps of 2 ms (0.300 s simulated)" in out
  assert "exact arithmetic" in out  # the default, said as it ran


def test_fast_arithmetic_is_chosen_and_said(capsys):
  rc, out, _ = run(capsys, "simulate", PENDULUM, "--steps", "10", "--batch", "2", "--quiet",
                   "--arithmetic", "fast")
  assert rc == 0 and "fast arithmetic" in out


def test_a_second_run_loads_the_traced_loop_and_ends_the_same(capsys, tmp_path):
  """The trace cache (jaxmj/trace_cache.py): a second run of the same model and sizes loads
  the step loop instead of tracing it; a changed model is traced anew."""
  xml = open(PENDULUM).read().replace('model="pendulum"', 'model="cached"', 1)
  path = tmp_path / "m.xml"
  path.write_text(xml)
  argv = ("simulate", str(path), "--steps", "6", "--chunk", "3", "--batch", "2", "--quiet")
  outs = [run(capsys, *argv) for _ in range(2)]
  assert [rc for rc, _, _ in outs] == [0, 0]
  assert "traced in" in outs[0][1] and "(trace cache miss)" in outs[0][1]
  assert "loaded in" in outs[1][1] and "(trace cache hit)" in outs[1][1]
  state = [[line for line in out.splitlines() if line.startswith("state")] for _, out, _ in outs]
  assert state[0] == state[1]
  path.write_text(xml.replace('model="cached"', 'model="cached2"', 1))
  assert "(trace cache miss)" in run(capsys, *argv)[1]
  assert "(trace cache off)" in run(capsys, *argv, "--no-cache")[1]


def test_a_cache_folder_written_unbounded_is_adopted_by_the_bounded_cache(capsys, tmp_path):
  """Programs an unbounded cache wrote (no last-use stamp) get one from their file's time:
  JAX's bounded cache reads a stamp for every entry it may evict, and without them every
  write to the folder failed with a warning."""
  cache = tmp_path / "xla"
  cache.mkdir()
  (cache / "old-cache").write_bytes(b"a program of an earlier run")
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    rc, out, _ = run(capsys, "simulate", PENDULUM, "--steps", "4", "--chunk", "2", "--batch",
                     "2", "--quiet", "--cache-dir", str(cache))
  assert rc == 0 and "persistent cache miss" in out
  assert not [w for w in caught if "persistent compilation cache" in str(w.message)]
  stamp = int.from_bytes((cache / "old-atime").read_bytes(), "little")
  assert stamp == (cache / "old-cache").stat().st_mtime_ns
  written = {p.name.removesuffix("-cache") for p in cache.glob("*-cache")} - {"old"}
  assert written and all((cache / f"{k}-atime").exists() for k in written)


def test_cache_command_reports_the_programs_and_clears_only_them(capsys, tmp_path):
  cache = tmp_path / "xla"
  assert run(capsys, "simulate", PENDULUM, "--steps", "4", "--chunk", "2", "--batch", "2",
             "--quiet", "--cache-dir", str(cache))[0] == 0
  (cache / "notes.txt").write_text("not the cache's")
  rc, out, _ = run(capsys, "cache", "--cache-dir", str(cache))
  programs = int(re.search(r"XLA programs: (\d+)", out)[1])
  assert rc == 0 and programs > 0 and "traced step loops: 1," in out
  rc, out, _ = run(capsys, "cache", "--cache-dir", str(cache), "--clear")
  assert rc == 0 and f"XLA programs: {programs}, traced step loops: 1 (" in out
  out = run(capsys, "cache", "--cache-dir", str(cache))[1]
  assert "XLA programs: 0," in out and "traced step loops: 0," in out
  assert (cache / "notes.txt").read_text() == "not the cache's"


def test_version(capsys):
  rc, out, _ = run(capsys, "--version")
  assert (rc, out) == (0, f"jaxmj {jaxmj.__version__}\n")


def one_line_error(capsys, *argv) -> str:
  rc, _, err = run(capsys, *argv)
  assert rc == 2
  assert err.count("\n") == 1 and "Traceback" not in err, err
  return err


def test_unknown_keyframe_lists_the_keyframes(capsys):
  err = one_line_error(capsys, "simulate", PENDULUM, "--key", "nokey")
  assert "no such keyframe" in err and "0 (horizontal), 1 (spinning)" in err


def test_keyframe_index_out_of_range(capsys):
  assert "0 (horizontal), 1 (spinning)" in one_line_error(capsys, "simulate", PENDULUM,
                                                         "--key", "2")


def test_key_on_a_model_without_keyframes(capsys, tmp_path):
  (tmp_path / "m.xml").write_text('<mujoco><worldbody><geom size=".1"/></worldbody></mujoco>')
  assert "has no keyframes; leave out --key" in one_line_error(
    capsys, "simulate", str(tmp_path / "m.xml"), "--key", "home")


@pytest.mark.parametrize("argv, phrase", [
  (("--batch", "0"), "argument --batch: 0 is not at least 1"),
  (("--steps", "-3"), "argument --steps: -3 is not at least 1"),
  (("--chunk", "ten"), "argument --chunk: 'ten' is not a whole number"),
  (("--noise", "-1"), "argument --noise: -1 is not a number >= 0"),
  (("--bogus",), "unrecognized arguments: --bogus"),
  (("--arithmetic", "sloppy"), "argument --arithmetic: invalid choice: 'sloppy'"),
])
def test_bad_arguments(capsys, argv, phrase):
  err = one_line_error(capsys, "simulate", PENDULUM, *argv)
  assert phrase in err and "--help)" in err


def test_missing_model_argument_and_command(capsys):
  assert "required: model" in one_line_error(capsys, "simulate")
  assert "required: command" in one_line_error(capsys)


def test_unreadable_and_invalid_models(capsys, tmp_path):
  assert "cannot read file" in one_line_error(capsys, "simulate", str(tmp_path / "no.xml"))
  (tmp_path / "bad.xml").write_text("<mujoco><worldbody><geom size='x'/></worldbody></mujoco>")
  assert "bad.xml:1" in one_line_error(capsys, "simulate", str(tmp_path / "bad.xml"))


def test_model_the_runtime_cannot_simulate(capsys, tmp_path):
  (tmp_path / "m.xml").write_text('<mujoco><option><flag sleep="enable"/></option><worldbody>'
                                  '<body><freejoint/><geom size=".1"/></body></worldbody>'
                                  '</mujoco>')
  assert "cannot simulate yet" in one_line_error(capsys, "simulate", str(tmp_path / "m.xml"))


def test_a_batch_the_device_cannot_hold_is_refused_by_its_size(capsys, monkeypatch):
  import jax

  free = cli._free_bytes(jax.devices()[0])  # the host's MemAvailable for a CPU device
  assert free is None or free > 0
  monkeypatch.setattr(cli, "_free_bytes", lambda device: 2**20)
  err = one_line_error(capsys, "simulate", PENDULUM, "--batch", "4096", "--steps", "2",
                       "--no-cache")
  assert re.search(r"4096 worlds need [\d.]+ MiB on each of 1 cpu device\(s\) \([\d.]+ KiB a "
                   r"world.*1\.0 MiB are free: lower --batch \(about \d+ fit\)", err), err
