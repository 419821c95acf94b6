"""The compiler's frames, inertias and mj_setConst constants are MuJoCo's to the last bit.

jaxmj/mjcf/compile/frames.py, inertia.py and mesh.py round every compiled pose, mass and principal
frame operation by operation as MuJoCo 4.0's compiler does (its mjuu_* helpers, mjuu_eig3 as
in the 4.0 binary, mjCGeom's volume and inertia formulas, the mesh frame), so these Model
fields are bit-equal to mjModel's, not merely close; and with them jaxmj's forward kinematics
on its own compiled model equals mj_kinematics bit for bit (tests/test_kinematics.py holds
the kinematics given MuJoCo's model numbers). The constants mj_setConst derives by running
the engine at qpos0 (inverse weights, dof_M0, actuator_acc0, camera and light offsets,
dof_length) follow the engine's own order of operations (jaxmj/mjcf/engine0.py), so they
too are bit-equal, and with them the constraint impedances (efc_R) at a contact state.
"""

import importlib.util
import os
import warnings

import mujoco
import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import assert_stage_matches, load_both
from test_compile import FRAMES, FROMTO, GEOM, INERTIA, ORIENTATION, PRIMITIVES, body, wrap
from test_compiler_options import ALIGN

from jaxmj.smooth.kinematics import kinematics

EXACT = ("body_pos", "body_quat", "body_ipos", "body_iquat", "body_mass", "body_inertia",
         "jnt_pos", "jnt_axis", "geom_pos", "geom_quat", "geom_size", "geom_rbound",
         "geom_aabb", "site_pos", "site_quat", "site_size", "cam_pos", "cam_quat", "light_pos",
         "light_dir", "mesh_pos", "mesh_quat", "mesh_polynormal", "qpos0")
# mj_setConst's engine-derived constants. Tendons that wrap around geoms are left out of the
# tendon fields: their wrap points come from jaxmj's own wrap geometry (jaxmj/smooth/wrap.py).
SETCONST = ("dof_M0", "dof_invweight0", "body_invweight0", "dof_length", "tendon_length0",
            "tendon_invweight0", "actuator_length0", "actuator_acc0", "actuator_biasprm",
            "cam_pos0", "cam_poscom0", "cam_mat0", "light_pos0", "light_poscom0", "light_dir0")
FRAME_FIELDS = ("xpos", "xquat", "xmat", "xipos", "ximat", "xanchor", "xaxis", "geom_xpos",
                "geom_xquat", "geom_xmat", "site_xpos", "site_xquat", "site_xmat")

# Cases test_compile does not have: every orientation form in radians and through default
# classes, fullinertia, an explicit inertial frame, fused static bodies, cameras and lights
# in rotated frames, free-joint alignment, and moments that tie (a cube, a sphere pair).
EXTRA = {
  "radian_forms": wrap(
    '<body axisangle="1 -2 .5 2.5" pos=".1 0 0"><joint/>' + GEOM
    + '<body xyaxes="1 .2 .1 -.3 1 .4"><joint/><geom type="capsule" size=".1 .3" '
    'euler="1 -2 3"/></body><body zaxis="-1 .2 .3"><joint/>' + GEOM + "</body></body>",
    '<compiler angle="radian" eulerseq="zyx"/>'),
  "default_class_forms": wrap(
    '<body childclass="c"><joint/><geom/><geom class="d" pos=".2 0 0"/><site/></body>',
    '<default><default class="c"><geom type="box" size=".1 .2 .3" euler="5 10 15"/>'
    '<site axisangle="1 1 0 33"/><default class="d"><geom zaxis="1 2 2"/></default>'
    "</default></default>"),
  "fullinertia": body("", '<inertial pos=".1 .2 .3" mass="2" '
                      'fullinertia="1 1.5 2 .1 -.2 .3"/>' + GEOM),
  "inertial_frame": body("", '<inertial pos=".1 .2 .3" mass="2" diaginertia="1 2 3" '
                         'euler="20 30 40"/>' + GEOM),
  # Static bodies fused: inertia from all geoms summed afresh (a chain and a sibling), or
  # accumulated body by body where an <inertial> is given.
  "fusestatic_geoms": wrap(
    '<body euler="10 20 30"><joint/>' + GEOM + '<body pos=".3 0 0" axisangle="1 1 1 40">'
    '<geom type="capsule" size=".05" fromto="0 0 0 .2 .1 .3"/><geom size=".07" pos=".1 0 0"/>'
    '<body zaxis="1 0 1"><geom type="box" size=".1 .05 .02"/></body></body>'
    '<body pos="0 .3 0" euler="0 0 30"><geom type="box" size=".1 .05 .02"/></body></body>',
    '<compiler fusestatic="true"/>'),
  "fusestatic_inertial": wrap(
    '<body euler="10 20 30"><joint/>' + GEOM + '<body pos=".3 0 0" axisangle="1 1 1 40">'
    '<inertial pos=".1 0 0" mass="2" diaginertia="1 2 3" euler="10 0 0"/>'
    '<geom type="box" size=".1 .05 .02"/></body>'
    '<body pos="0 .3 0" zaxis="1 0 1"><geom type="box" size=".1 .05 .02"/></body></body>',
    '<compiler fusestatic="true"/>'),
  "camlight_in_frames": wrap(
    '<frame pos="1 2 3" euler="10 20 30"><body axisangle="0 1 1 50"><joint/>' + GEOM
    + '<frame pos=".1 0 0" xyaxes="0 1 0 -1 0 1"><camera pos=".1 .2 .3" euler="1 2 3"/>'
    '<light pos="0 .1 0" dir="1 2 -3"/><site zaxis="1 1 0"/></frame></body></frame>'),
  "alignfree": wrap(
    '<body pos="1 0 0" euler="0 30 60"><freejoint align="true"/>'
    '<geom type="box" size=".1 .2 .3" pos=".1 .2 0" euler="10 0 0"/>'
    '<geom type="capsule" size=".05 .2" pos="0 0 .3" zaxis="1 1 0"/><site euler="5 5 5"/>'
    "</body>"),
  "tied_moments": wrap(
    '<body><joint/><geom type="box" size=".1 .1 .1" euler="10 20 30"/></body>'
    '<body pos="1 0 0"><joint/><geom size=".1" pos=".2 0 0"/><geom size=".1" pos="-.2 0 0"/>'
    '</body><body pos="0 1 0"><joint/><geom type="cylinder" size=".1 .1" euler="0 90 0"/>'
    '<geom type="cylinder" size=".1 .1" pos="0 0 .3"/></body>'),
}

# Every joint type, a simple (slider) body, joint/actuator/tendon armature, a position servo
# whose kv comes from dampratio, actuators on joints, tendons, sites (with and without a
# reference site) and a slider-crank, and cameras and lights tracking or targeting bodies.
EXTRA["setconst_mix"] = """<mujoco><worldbody>
  <light pos="0 0 3" dir="1 2 -3" mode="targetbodycom" target="torso"/>
  <camera pos="1 -2 1" xyaxes="1 .2 0 0 .3 1" mode="trackcom"/>
  <body name="torso" pos="0 0 1" euler="10 20 30"><freejoint/>
    <geom type="box" size=".1 .2 .3"/><light pos="0 .1 0" dir="0 1 -1"/>
    <camera pos=".1 .2 .3" euler="5 10 15" mode="targetbody" target="arm"/>
    <body name="arm" pos=".2 0 0" euler="0 30 0"><joint name="ball" type="ball"/>
      <geom type="capsule" size=".05" fromto="0 0 0 .3 .1 0"/><site name="mid" pos=".1 0 .1"/>
      <body pos=".3 .1 0"><joint name="h1" axis="1 1 0" armature=".01"/>
        <joint name="s1" type="slide" axis="0 1 1"/>
        <geom type="cylinder" size=".04 .1" pos=".05 0 0" euler="0 90 0"/>
        <site name="tip" pos=".1 0 0"/></body></body></body>
  <body pos="1 0 .2"><joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/>
    <geom size=".1"/></body>
  <site name="w" pos="0 1 2"/>
</worldbody>
<tendon><fixed name="t" armature=".0243"><joint joint="s1" coef="-1.48"/>
  <joint joint="h1" coef="-1.35"/></fixed><spatial name="sp"><site site="w"/>
  <site site="mid"/><pulley divisor="2"/><site site="w"/><site site="tip"/></spatial></tendon>
<actuator><motor joint="h1" gear="2" armature=".02"/>
  <position joint="s1" kp="50" dampratio="1"/><motor tendon="t" gear="3"/>
  <motor tendon="sp" gear="2"/><motor joint="ball" gear="1 2 3"/>
  <general site="tip" gear="0 0 1 0 .5 0"/>
  <general site="tip" refsite="mid" gear=".3 -.2 .1 -.5 .6 .4"/>
  <general slidersite="mid" cranksite="tip" cranklength="1.2" gear="1.5"/></actuator></mujoco>"""

# Lights keep their enclosing frame and direction as written to the end: a fusion moves the
# frame, alignment moves the compiled light.
_LIGHT = '<light pos="0 .1 .2" dir="1 2 -3"/>'
EXTRA["lights_fused_and_aligned"] = wrap(
  '<body euler="5 6 7"><joint/><geom size=".1"/><frame pos=".1 0 0" euler="30 40 50">'
  f'<body pos=".2 .1 0" euler="12 34 56">{GEOM}{_LIGHT}<body euler="7 8 9" pos="0 0 .1">'
  f'{GEOM}<frame euler="1 2 3">{_LIGHT}</frame></body></body></frame></body>'
  f'<body pos="1 0 0" euler="5 6 7"><freejoint/>{GEOM}<geom size=".1" pos=".2 .3 0"/>'
  f'<frame euler="10 20 30">{_LIGHT}</frame></body>',
  '<compiler fusestatic="true" alignfree="true"/>')
EXTRA["alignfree_fusestatic"] = ('<mujoco><compiler alignfree="true" fusestatic="true"/>'
                                 + ALIGN.format(align="auto") + "</mujoco>")
CASES = {**ORIENTATION, **FRAMES, **FROMTO, **PRIMITIVES, **INERTIA, **EXTRA}
_MJ_DIR = os.path.dirname(mujoco.__file__)
FILES = [os.path.join(MODELS, f) for f in ("humanoid.xml", "quadruped.xml", "mesh_drop.xml",
                                           "tendon_arm.xml", "urdf/mobile_base.urdf")] + [
  os.path.join(_MJ_DIR, "mjx", "test_data", f) for f in ("convex.xml", "pendula.xml")]


def bit_differences(m, mj, fields=EXACT + SETCONST) -> list[str]:
  """The fields (that mjModel has) where some entry is not bit-equal: name, count."""
  bad = []
  wraps = [t for t in range(mj.ntendon) if np.isin(
    mj.wrap_type[mj.tendon_adr[t]:mj.tendon_adr[t] + mj.tendon_num[t]],
    (mujoco.mjtWrap.mjWRAP_SPHERE, mujoco.mjtWrap.mjWRAP_CYLINDER)).any()]
  for name in fields:
    ref = getattr(mj, name)
    ours = np.asarray(getattr(m, name)).reshape(ref.shape).astype(ref.dtype)
    diff = ours != ref
    if name.startswith("tendon_"):
      diff[wraps] = False
    if diff.sum():
      bad.append(f"{name}: {diff.sum()} of {ref.size}")
  for name in ("meaninertia", "meanmass", "meansize", "extent", "center"):  # mjModel.stat
    if not np.array_equal(np.asarray(getattr(m.stat, name)), getattr(mj.stat, name)):
      bad.append(f"stat.{name}")
  return bad


def test_inline_cases_bit_equal():
  """Every orientation form, frame, fromto, primitive and inertia case of test_compile."""
  bad = {}
  for key, xml in CASES.items():
    with warnings.catch_warnings():
      warnings.simplefilter("ignore", UserWarning)
      diff = bit_differences(*load_both(xml=xml))
    if diff:
      bad[key] = diff
  assert not bad, bad


@pytest.mark.parametrize("seq", ["xyz", "ZYX", "xYz", "XzX"])
def test_euler_sequences_bit_equal(seq):
  xml = wrap('<body euler="20 -35 50"><joint/>' + GEOM + "</body>"
             '<body euler="90 90 90"><joint/>' + GEOM + "</body>",
             f'<compiler eulerseq="{seq}"/>')
  assert bit_differences(*load_both(xml=xml)) == []


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_models_bit_equal(path, tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)  # mujoco may write MUJOCO_LOG.TXT
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)
    m, mj = load_both(path)
  assert bit_differences(m, mj) == []


def test_png_heightfield_bit_equal(tmp_path):
  """Grey levels are normalized as they are, not scaled by 1/255 first (a different
  rounding in float32)."""
  from PIL import Image

  grey = np.random.default_rng(0).integers(3, 250, (7, 9), dtype=np.uint8)
  Image.fromarray(grey).save(tmp_path / "h.png")
  m, mj = load_both(xml=f'<mujoco><asset><hfield name="h" file="{tmp_path / "h.png"}" '
                    'size="1 1 .1 .1"/></asset><worldbody><geom type="hfield" hfield="h"/>'
                    "</worldbody></mujoco>")
  assert np.array_equal(np.asarray(m.hfield_data), mj.hfield_data)


@pytest.mark.slow  # ~10 s of jit
def test_contact_impedances_bit_equal(tmp_path, monkeypatch):
  """With bit-equal inverse weights, efc_R at MuJoCo's contact state is MuJoCo's exactly."""
  monkeypatch.chdir(tmp_path)
  # the constraint tests' helpers: MuJoCo's contacts into jaxmj, rows matched by (type, id)
  path = os.path.join(os.path.dirname(__file__), os.pardir, "constraint", "test_constraint.py")
  spec = importlib.util.spec_from_file_location("constraint_helpers", path)
  tc = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(tc)
  m, mj = load_both(os.path.join(MODELS, "humanoid_floor.xml"))
  dm = mujoco.MjData(mj)
  for _ in range(150):
    mujoco.mj_step(mj, dm)
  mujoco.mj_forward(mj, dm)
  d = tc.make(m, tc.fwd_position(m, tc.data_of(m, dm)))
  assert dm.ncon > 4
  ours, theirs = tc.rows_by_key(d.efc_type, d.efc_id), tc.rows_by_key(dm.efc_type, dm.efc_id)
  for key, rows in theirs.items():
    np.testing.assert_array_equal(np.asarray(d.efc_R)[ours[key]], dm.efc_R[rows], str(key))


@pytest.mark.slow  # ~5 s of jit; the model fields above and test_kinematics imply it
def test_kinematics_on_compiled_model_bit_for_bit():
  """No MuJoCo numbers substituted: jaxmj's compiled frames carry through mj_kinematics."""
  m, mj = load_both(xml=EXTRA["radian_forms"].replace(
    "</worldbody>", '<body pos="0 1 0" euler="10 20 30"><freejoint/>'
    '<geom type="cylinder" size=".1" fromto="0 0 0 .3 .2 .1"/><site xyaxes="0 1 0 1 0 1"/>'
    "</body></worldbody>"))
  assert_stage_matches((m, mj), kinematics, mujoco.mj_kinematics, FRAME_FIELDS,
                       seeds=range(2), tol=0)
