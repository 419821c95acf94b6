"""URDF read as MuJoCo 4.0 reads it (jaxmj/mjcf/spec/urdf.py): our own test robots and small
documents compile to MuJoCo's model, step like it, and malformed URDF fails naming the file
and line."""

import os
import shutil

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import jit_fast, load_both, model_differences  # noqa: E402

import jaxmj  # noqa: E402
from jaxmj.smooth.com import com_pos  # noqa: E402
from jaxmj.smooth.kinematics import kinematics  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.normpath(os.path.join(HERE, "..", "..", "models", "urdf"))
MESHES = os.path.join(MODELS, "meshes")
UNFUSED = 'fusestatic="false" discardvisual="false"'
NAME_ADR = ("name_bodyadr", "name_jntadr", "name_geomadr", "name_meshadr", "name_eqadr")
INERTIA = ('<inertial><mass value="1"/>'
           '<inertia ixx="0.01" iyy="0.02" izz="0.025" ixy="0" ixz="0" iyz="0"/></inertial>')


def _same_names(m, mj) -> bool:
  return m.names == mj.names and all(
    np.array_equal(getattr(m, k), getattr(mj, k)) for k in NAME_ADR)


def _variant(name: str, tmp_path, compiler: str = "", option: str = "") -> str:
  """Path of a copy of models/urdf/<name> (meshes alongside) with attributes added to its
  <mujoco><compiler> and an <option> body."""
  text = open(os.path.join(MODELS, name)).read()
  text = text.replace("<compiler ", f"<compiler {compiler} ", 1)
  if option:
    start = text.index("<option ")
    end = text.index("/>", start)
    text = text[:end] + f">{option}</option>" + text[end + 2:]
  shutil.copytree(MESHES, tmp_path / "meshes", dirs_exist_ok=True)
  path = tmp_path / name
  path.write_text(text)
  return str(path)


def _robot(body: str, compiler: str = UNFUSED, extra: str = "") -> str:
  return f'<robot name="r"><mujoco><compiler {compiler}/>{extra}</mujoco>{body}</robot>'


def _link(name: str, inner: str = INERTIA) -> str:
  return f'<link name="{name}">{inner}</link>'


def _joint(name: str, jtype: str, parent: str, child: str, inner: str = "") -> str:
  return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
          f'<child link="{child}"/>{inner}</joint>')


# ---------------------------------------------------------------- the test robots


@pytest.mark.parametrize("name", ["arm6.urdf", "mobile_base.urdf"])
@pytest.mark.parametrize("compiler", ["", UNFUSED], ids=["urdf_defaults", "unfused"])
def test_test_robot_compiles_to_mujocos_model(name, compiler, tmp_path):
  path = _variant(name, tmp_path, compiler) if compiler else os.path.join(MODELS, name)
  m, mj = load_both(path)
  assert model_differences(m, mj) == []
  assert _same_names(m, mj)


def test_installed_mujoco_test_urdf_compiles_to_mujocos_model():
  path = os.path.join(os.path.dirname(mujoco.__file__), "testdata", "model.urdf")
  if not os.path.exists(path):
    pytest.skip("no testdata/model.urdf in this mujoco install")
  m, mj = load_both(path)
  assert model_differences(m, mj) == []
  assert _same_names(m, mj)


def test_urdf_defaults_fuse_fixed_links_and_drop_visuals():
  m, mj = load_both(os.path.join(MODELS, "mobile_base.urdf"))
  # base, wheels and caster remain; the fixed sensor links are fused into the base.
  assert (m.nbody, m.njnt, m.ngeom) == (mj.nbody, mj.njnt, mj.ngeom) == (5, 6, 7)
  assert jaxmj.name2id(m, "geom", "lidar") >= 0
  assert not np.any(m.geom_group == 1)


def test_arm_trajectory_matches_mujoco(tmp_path):
  """A few steps of the arm (joint damping, friction loss, limits, mimic equality) from a
  random velocity; contacts are off here (none occur), they are held in the slow test."""
  path = _variant("arm6.urdf", tmp_path, option='<flag contact="disable"/>')
  _rollout_matches(path, nstep=20)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["arm6.urdf", "mobile_base.urdf"])
def test_test_robot_trajectory_with_collision_detection_matches_mujoco(name):
  """The robots as written (collision detection on; their links keep clear of each other and
  the floor along these steps)."""
  _rollout_matches(os.path.join(MODELS, name), nstep=40)


def _rollout_matches(path: str, nstep: int) -> None:
  m, mj = load_both(path)
  # MuJoCo's solver stops at its tolerance, which leaves ~1e-6 over 40 steps of the wheels'
  # friction loss; jaxmj's runs its fixed iterations, so converge MuJoCo's fully.
  mj.opt.tolerance = 0.0
  dm = mujoco.MjData(mj)
  dm.qvel[:] = np.random.default_rng(0).normal(size=mj.nv) * 0.5
  d = jaxmj.make_data(m).replace(qpos=dm.qpos.copy(), qvel=dm.qvel.copy())
  run = jit_fast(lambda m, d: jaxmj.rollout(m, d, nstep=nstep))
  _, traj = run(m, d)
  ref = []
  for _ in range(nstep):
    mujoco.mj_step(mj, dm)
    ref.append(dm.qpos.copy())
  np.testing.assert_allclose(np.asarray(traj["qpos"]), np.array(ref), atol=1e-8)


# ---------------------------------------------------------------- features, one at a time

_ABC = _link("a", "") + _link("b") + _link("c")
_FINGER = os.path.join(MESHES, "finger.stl")
_LINK = os.path.join(MESHES, "link.stl")
_CASES = {
  "revolute_limits_effort_dynamics": _ABC + _joint(
    "j", "revolute", "a", "b", '<origin xyz="0 0 .5" rpy="0 1.57 0.3"/><axis xyz="0 1 1"/>'
    '<limit lower="-1" upper="1" effort="-10" velocity="2"/>'
    '<dynamics damping="0.3" friction="0.1"/>'),
  "one_sided_and_inverted_limits": _ABC + _joint(
    "j", "revolute", "a", "b", '<limit lower="-1"/>') + _joint(
    "k", "prismatic", "b", "c", '<limit lower="1" upper="-1"/><axis xyz="0 0 1"/>'),
  "continuous_is_never_limited": _ABC + _joint(
    "j", "continuous", "a", "b", '<limit lower="-1" upper="1" effort="3"/>'),
  "planar_default_axis": _ABC + _joint("p", "planar", "a", "b", '<dynamics damping="2"/>'),
  "planar_tilted_axis": _ABC + _joint(
    "p", "planar", "a", "b", '<axis xyz="0 1 1"/><limit lower="-1" upper="1"/>'),
  "spherical_and_floating": _link("world", "") + _ABC + _joint(
    "f", "floating", "world", "b", '<origin xyz="1 0 0"/>') + _joint(
    "s", "spherical", "b", "c", '<dynamics damping="0.1" friction="0.2"/>'),
  "world_link_geoms_and_static_roots": _link(
    "world", '<collision><geometry><box size="1 1 .1"/></geometry></collision>') + _link(
    "base", '<collision><geometry><sphere radius=".1"/></geometry></collision>') + _link(
    "b") + _link("loose", "") + _joint(
    "w", "fixed", "world", "base", '<origin xyz="0 0 1"/>') + _joint("j", "revolute",
                                                                       "base", "b"),
  "inertia_rotated_zero_isotropic_degenerate": _link("a", "") + _link(
    "b", '<inertial><origin xyz="1 2 3" rpy="0.1 0.2 0.3"/><mass value="2"/><inertia '
    'ixx="0.1" iyy="0.2" izz="0.25" ixy="0.01" ixz="0.02" iyz="-0.01"/></inertial>') + _link(
    "c", '<inertial><origin rpy="0.3 0 0"/><mass value="2"/><inertia ixx="0" iyy="0" '
    'izz="0" ixy="0" ixz="0" iyz="0"/></inertial>') + _link(
    "d", '<inertial><origin rpy="0.1 0.2 0"/><mass value="1"/><inertia ixx="1" iyy="1" '
    'izz="1" ixy="0" ixz="0" iyz="0"/></inertial>') + _link(
    "e", '<inertial><origin rpy="0.1 0.2 0"/><mass value="1"/><inertia ixx="1" iyy="1" '
    'izz="1.5" ixy="0" ixz="0" iyz="0"/></inertial>') + _joint(
    "j", "revolute", "a", "b") + _joint("k", "fixed", "b", "c") + _joint(
    "l", "revolute", "c", "d") + _joint("n", "prismatic", "d", "e"),
  "inertia_from_collision_geoms": _link("a", "") + _link(
    "b", '<visual><geometry><box size=".5 .5 .5"/></geometry></visual><collision>'
    '<origin xyz="0 0 .1" rpy=".2 0 0"/><geometry><capsule radius=".05" length=".2"/>'
    '</geometry></collision><collision><geometry><cylinder radius=".1" length=".1"/>'
    '</geometry></collision>') + _joint("j", "revolute", "a", "b"),
  "materials_names_and_colors": (
    '<material name="red"><color rgba="1 0 0 1"/></material>'
    '<material name="red"><color rgba="0 1 0 1"/></material>'
    '<material name="tex"><texture filename="x.png"/></material>' + _link(
      "a", '<visual name="v"><geometry><sphere radius=".1"/></geometry>'
      '<material name="red"/></visual>'
      '<collision name="v"><geometry><sphere radius=".1"/></geometry></collision>'
      '<visual name="w"><geometry><sphere radius=".1"/></geometry>'
      '<material name="blue"><color rgba="0 0 1 .5"/></material></visual>'
      '<visual><geometry><sphere radius=".1"/></geometry><material name="tex"/></visual>'
      '<collision><geometry><box size=".1 .2 .3"/></geometry></collision>') + _link(
      "b", INERTIA + '<visual name="x"><geometry><sphere radius=".1"/></geometry>'
      '<material name="blue"/></visual><collision name="w"><geometry><sphere radius=".1"/>'
      '</geometry></collision>') + _joint("j", "revolute", "a", "b")),
  "mesh_assets_named_by_file_and_scale": _link(
    "a", f'<visual><geometry><mesh filename="{_LINK}" scale=".1 .1 .2"/></geometry></visual>'
    f'<collision><geometry><mesh filename="{_LINK}"/></geometry></collision>'
    f'<collision><geometry><mesh filename="{_LINK}" scale=".1 .1 .2"/></geometry></collision>'
    f'<visual><geometry><mesh filename="{_FINGER}" scale="2 2 2"/></geometry></visual>'),
  "mimic_joints": _ABC + _link("d") + _joint("j", "revolute", "a", "b") + _joint(
    "k", "prismatic", "b", "c", '<mimic joint="j" multiplier="-2" offset="0.1"/>') + _joint(
    "l", "continuous", "c", "d", '<mimic joint="k"/>'),
  "body_order_follows_links_then_joints": _link("c") + _link("e") + _link("b") + _link(
    "a", "") + _link("d") + _joint("j1", "revolute", "a", "d") + _joint(
    "j2", "prismatic", "b", "c") + _joint("j3", "continuous", "a", "b") + _joint(
    "j4", "revolute", "d", "e", '<origin xyz="0 1 0"/>'),
  "balanceinertia_and_bounds": _link("a", "") + _link(
    "b", '<inertial><mass value="0.1"/><inertia ixx="0.01" iyy="0.01" izz="0.05" ixy="0" '
    'ixz="0" iyz="0"/></inertial>') + _link("c", '<inertial><mass value="1"/><inertia '
    'ixx="1e-6" iyy="2e-6" izz="2e-6" ixy="0" ixz="0" iyz="0"/></inertial>') + _joint(
    "j", "revolute", "a", "b") + _joint("k", "revolute", "b", "c"),
  "extension_option_size_and_radians": _ABC + _joint(
    "j", "revolute", "a", "b", '<origin rpy="0 0 90"/><limit lower="-90" upper="90"/>'),
}
_EXTRA = {
  "balanceinertia_and_bounds": (
    'balanceinertia="true" boundmass="0.5" boundinertia="1e-4" ' + UNFUSED, ""),
  "extension_option_size_and_radians": (
  'angle="degree" eulerseq="zyx" ' + UNFUSED,
  '<option timestep="0.005" gravity="0 0 -1"><flag energy="enable"/></option>'
  '<size memory="1M"/><worldbody><geom size="1"/></worldbody>')}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_urdf_feature_compiles_to_mujocos_model(case):
  compiler, extra = _EXTRA.get(case, (UNFUSED, ""))
  m, mj = load_both(xml=_robot(_CASES[case], compiler, extra))
  assert model_differences(m, mj) == []
  assert _same_names(m, mj)
  assert m.opt.timestep == mj.opt.timestep


@pytest.mark.parametrize("case", ["materials_names_and_colors", "inertia_from_collision_geoms",
                                  "mesh_assets_named_by_file_and_scale"])
def test_urdf_feature_with_fusing_and_discarded_visuals_compiles_to_mujocos_model(case):
  m, mj = load_both(xml=_robot(_CASES[case], compiler=""))
  assert model_differences(m, mj) == []
  assert _same_names(m, mj)


def test_urdf_string_with_mesh_assets_compiles_to_mujocos_model():
  with open(os.path.join(MESHES, "finger.stl"), "rb") as f:
    assets = {"finger.stl": f.read()}
  xml = _robot(_ABC + _link("d", '<collision><geometry><mesh filename="package://r/finger.stl"/>'
                                 '</geometry></collision>') + _joint("j", "revolute", "a", "d"),
               compiler='strippath="true"')
  m = jaxmj.Model.from_xml_string(xml, assets=assets)
  mj = mujoco.MjModel.from_xml_string(xml, assets)
  assert model_differences(m, mj) == []
  assert _same_names(m, mj)


def test_mimic_between_multi_dof_joints_is_skipped_with_a_warning():
  body = _ABC + _joint("j", "planar", "a", "b") + _joint(
    "k", "prismatic", "b", "c", '<mimic joint="j"/>')
  with pytest.warns(UserWarning, match="<mimic> on joint 'k' ignored"):
    m = jaxmj.Model.from_xml_string(_robot(body))
  assert m.neq == mujoco.MjModel.from_xml_string(_robot(body)).neq == 0


# ---------------------------------------------------------------- malformed URDF

_BAD = {
  "missing_parent_link": (
    _ABC + "\n" + _joint("j", "revolute", "nope", "b"), 2, r"parent link 'nope'.*not a <link>"),
  "cycle": (_link("root", "") + _ABC + _joint("r", "revolute", "root", "c") + "\n"
            + _joint("j", "revolute", "a", "b") + "\n" + _joint("k", "revolute", "b", "a"),
            3, r"cycle: a -> b -> a"),
  "unknown_joint_type": (_ABC + "\n\n" + _joint("j", "hinge", "a", "b"), 3,
                         r"invalid URDF joint type 'hinge'"),
  "multiple_parents": (_ABC + _joint("j", "revolute", "a", "c") + "\n"
                       + _joint("k", "revolute", "b", "c"), 2, r"'c' has multiple parents"),
  "repeated_link": (_ABC + "\n" + _link("a", ""), 2, r"repeated URDF link name 'a'"),
  "empty_geometry": (_ABC + "\n" + _link("d", "<collision><geometry/></collision>"), 2,
                     r"no box, cylinder, sphere, capsule or mesh"),
  "box_size": (_ABC + "\n" + _link(
    "d", '<collision><geometry><box size="1 2"/></geometry></collision>'), 2,
               r"attribute 'size': expected 3 values"),
  "missing_inertia": (_ABC + "\n" + _link("d", '<inertial><mass value="1"/></inertial>'), 2,
                      r"missing required element <inertia>"),
}


@pytest.mark.parametrize("case", sorted(_BAD))
def test_malformed_urdf_fails_naming_file_and_line(case, tmp_path):
  body, line, match = _BAD[case]
  path = tmp_path / "bad.urdf"
  path.write_text(_robot(body))
  with pytest.raises(jaxmj.MJCFError, match=match) as err:
    jaxmj.Model.from_xml_path(path)
  assert err.value.file == str(path)
  assert err.value.line == line
  with pytest.raises(ValueError, match="URDF|[Ee]lement|attribute"):
    mujoco.MjModel.from_xml_path(str(path))  # MuJoCo rejects it too

_WORLD_INERTIA = ('<inertial><origin xyz="0.1 0.2 0.3" rpy="0.1 0.2 0.3"/><mass value="2"/>'
                  '<inertia ixx="1" iyy="2" izz="2.5" ixy="0.1" ixz="0" iyz="0"/></inertial>')


@pytest.mark.filterwarnings("ignore:.*settotalmass")
@pytest.mark.parametrize("compiler", ["", UNFUSED, 'settotalmass="10"'],
                         ids=["urdf_defaults", "unfused", "settotalmass"])
def test_inertial_on_the_world_link_goes_to_the_world_body_like_mujoco(compiler):
  """MuJoCo's URDF reader gives the world body that mass and inertia (an MJCF <worldbody>
  cannot have one): it shows in body_mass[0] (settotalmass leaves it alone), the subtree
  masses and subtree_com; the world's inertial frame stays the world frame."""
  body = (_link("world", _WORLD_INERTIA) + _link("b") + _link("c") + _joint(
    "j", "revolute", "world", "b", '<origin xyz="0 0 1"/>') + _joint("k", "fixed", "world", "c"))
  m, mj = load_both(xml=_robot(body, compiler))
  assert model_differences(m, mj) == []
  assert m.body_mass[0] == 2
  if compiler:
    return
  dm = mujoco.MjData(mj)
  mujoco.mj_forward(mj, dm)
  run = jit_fast(lambda m, d: com_pos(m, kinematics(m, d)))
  d = run(m, jaxmj.make_data(m))
  for name in ("xipos", "ximat", "subtree_com", "cinert"):
    np.testing.assert_allclose(np.asarray(getattr(d, name)).reshape(getattr(dm, name).shape),
                               getattr(dm, name), atol=1e-10, err_msg=name)
