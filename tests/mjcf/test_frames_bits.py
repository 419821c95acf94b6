"""The compiler's frames and inertias are MuJoCo's to the last bit.

jaxmj/mjcf/frames.py, inertia.py and mesh.py round every compiled pose, mass and principal
frame operation by operation as MuJoCo 4.0's compiler does (its mjuu_* helpers, mjuu_eig3 as
in the 4.0 binary, mjCGeom's volume and inertia formulas, the mesh frame), so these Model
fields are bit-equal to mjModel's, not merely close; and with them jaxmj's forward kinematics
on its own compiled model equals mj_kinematics bit for bit (tests/test_kinematics.py holds
the kinematics given MuJoCo's model numbers).
"""

import os
import warnings

import jax
import mujoco
import numpy as np
import pytest
from conftest import MODELS
from mujoco_compare import load_both, random_state, to_jaxmj
from test_compile import FRAMES, FROMTO, GEOM, INERTIA, ORIENTATION, PRIMITIVES, body, wrap
from test_compiler_options import ALIGN

from jaxmj.kinematics import kinematics

EXACT = ("body_pos", "body_quat", "body_ipos", "body_iquat", "body_mass", "body_inertia",
         "jnt_pos", "jnt_axis", "geom_pos", "geom_quat", "geom_size", "geom_rbound",
         "geom_aabb", "site_pos", "site_quat", "site_size", "cam_pos", "cam_quat", "light_pos",
         "light_dir", "mesh_pos", "mesh_quat", "mesh_polynormal", "qpos0")
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

EXTRA["alignfree_fusestatic"] = ('<mujoco><compiler alignfree="true" fusestatic="true"/>'
                                 + ALIGN.format(align="auto") + "</mujoco>")
CASES = {**ORIENTATION, **FRAMES, **FROMTO, **PRIMITIVES, **INERTIA, **EXTRA}
_MJ_DIR = os.path.dirname(mujoco.__file__)
FILES = [os.path.join(MODELS, f) for f in ("humanoid.xml", "quadruped.xml", "mesh_drop.xml",
                                           "tendon_arm.xml", "urdf/mobile_base.urdf")] + [
  os.path.join(_MJ_DIR, "mjx", "test_data", f) for f in ("convex.xml", "pendula.xml")]


def bit_differences(m, mj) -> list[str]:
  """The EXACT fields (that mjModel has) where some entry is not bit-equal: name, count."""
  bad = []
  for name in EXACT:
    ref = getattr(mj, name)
    ours = np.asarray(getattr(m, name)).reshape(ref.shape).astype(ref.dtype)
    n = int(np.sum(ours != ref))
    if n:
      bad.append(f"{name}: {n} of {ref.size}")
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


@pytest.mark.slow  # ~5 s of jit; the model fields above and test_kinematics imply it
def test_kinematics_on_compiled_model_bit_for_bit():
  """No MuJoCo numbers substituted: jaxmj's compiled frames carry through mj_kinematics."""
  m, mj = load_both(xml=EXTRA["radian_forms"].replace(
    "</worldbody>", '<body pos="0 1 0" euler="10 20 30"><freejoint/>'
    '<geom type="cylinder" size=".1" fromto="0 0 0 .3 .2 .1"/><site xyaxes="0 1 0 1 0 1"/>'
    "</body></worldbody>"))
  run = jax.jit(kinematics)
  for seed in range(2):
    d = random_state(m, mj, seed)
    dj = run(m, to_jaxmj(m, d))
    mujoco.mj_kinematics(mj, d)
    for k in FRAME_FIELDS:
      ours, ref = np.asarray(getattr(dj, k)), getattr(d, k).reshape(np.shape(getattr(dj, k)))
      assert np.array_equal(ours, ref), (seed, k, np.abs(ours - ref).max())
