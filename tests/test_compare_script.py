"""scripts/compare.py, the conformance report users run on their own models."""

import io
import os
import sys

import pytest

mujoco = pytest.importorskip("mujoco")

import numpy as np  # noqa: E402
from conftest import MODELS, ROOT  # noqa: E402

import jaxmj  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "scripts"))
import compare  # noqa: E402

PENDULUM = os.path.join(MODELS, "pendulum.xml")


def test_equal_models_report_no_differences():
  m, mj = jaxmj.Model.from_xml_path(PENDULUM), mujoco.MjModel.from_xml_path(PENDULUM)
  compared, differ = compare.compare_fields(m, mj)
  assert compared > 100 and differ == []


def test_a_differing_field_is_reported_with_its_error():
  m, mj = jaxmj.Model.from_xml_path(PENDULUM), mujoco.MjModel.from_xml_path(PENDULUM)
  m = m.replace(body_mass=m.body_mass * 1.5, opt=m.opt.replace(timestep=m.opt.timestep * 2))
  _, differ = compare.compare_fields(m, mj)
  names = dict(differ)
  assert set(names) == {"body_mass", "opt.timestep"}
  assert names["body_mass"] == f"max error {0.5 * np.max(mj.body_mass):.3g}"


def test_report_table_and_exit_status(tmp_path, capsys):
  bad = tmp_path / "flex.xml"  # compiles in MuJoCo, not (yet) in jaxmj
  bad.write_text("""<mujoco><worldbody>
    <flexcomp name="f" type="grid" count="3 3 1" spacing=".1 .1 .1" dim="2"/>
  </worldbody></mujoco>""")
  broken = tmp_path / "broken.xml"
  broken.write_text("<mujoco><worldbody><body><geom type='sphere'/>")
  assert compare.main([PENDULUM, "--steps", "20", "--quiet"]) == 0
  out = capsys.readouterr().out
  assert "pendulum.xml" in out and "0 of" in out and "yes" in out
  assert compare.main([str(tmp_path), "--steps", "0", "--quiet"]) == 1
  out = capsys.readouterr().out
  assert "mujoco fails" in out and "jaxmj fails" in out and "flex" in out


def test_trajectory_error_is_measured_against_mj_step():
  m, mj = jaxmj.Model.from_xml_path(PENDULUM), mujoco.MjModel.from_xml_path(PENDULUM)
  assert compare.trajectory_error(m, mj, 30, key=False) < 1e-12
  mj.opt.gravity[2] = -5.0
  assert compare.trajectory_error(m, mj, 30, key=False) > 1e-6


def test_single_steps_from_mujocos_state_are_measured_against_mj_step():
  m, mj = jaxmj.Model.from_xml_path(PENDULUM), mujoco.MjModel.from_xml_path(PENDULUM)
  assert compare.step_error(m, mj, 10, key=False) < 1e-12
  assert compare.mujoco_spread(mj, 10, key=False) < 1e-10  # a pendulum is not chaotic
  mj.opt.gravity[2] = -5.0
  assert compare.step_error(m, mj, 10, key=False) > 1e-6


def test_parted_trajectories_count_as_chaotic_only_when_mujoco_parts_too():
  rep = compare.Report("m.xml", traj_err=5e-3, mujoco_spread=4e-3, step_err=1e-14)
  assert rep.verdict(1e-6) == "chaotic" and rep.ok(1e-6)
  assert compare.Report("m.xml", traj_err=5e-3, mujoco_spread=1e-9,
                        step_err=1e-14).verdict(1e-6) == "NO"
  assert compare.Report("m.xml", traj_err=5e-3, mujoco_spread=4e-3,
                        step_err=1e-4).verdict(1e-6) == "NO"
  assert compare.Report("m.xml", traj_err=1e-9).verdict(1e-6) == "yes"


CAPPED = """<mujoco><custom><numeric name="max_contact_points" data="1"/></custom>
  <worldbody><geom type="plane" size="2 2 .1"/>
    <body pos="0 0 .1"><freejoint/><geom type="sphere" size=".1"/></body>
    <body pos=".5 0 .12"><freejoint/><geom type="sphere" size=".1"/></body>
  </worldbody></mujoco>"""


def test_parted_trajectories_count_as_capped_when_the_uncapped_model_follows_mujoco(tmp_path):
  """MJX's max_contact_points = 1 with two balls landing: jaxmj keeps the deeper contact
  only and the other ball sinks (MuJoCo reads no cap from the numeric); without its caps the
  same model follows mj_step, so the verdict is "capped", and the report says why."""
  path = tmp_path / "capped.xml"
  path.write_text(CAPPED)
  rep = compare.compare_file(str(path), steps=40, atol=1e-10, key=False)
  assert rep.traj_err > 1e-3 and rep.uncapped_err < 1e-12
  assert rep.verdict(1e-6) == "capped" and rep.ok(1e-6)
  out = io.StringIO()
  compare.print_table([rep], 1e-6, out=out)
  assert "a contact cap binds" in out.getvalue()
  assert compare.uncapped(jaxmj.Model.from_xml_path(PENDULUM)) is None
  assert compare.Report("m.xml", traj_err=5e-3, uncapped_err=1e-3).verdict(1e-6) == "NO"
