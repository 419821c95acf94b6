"""<compiler> options against mujoco 4.0 on small models."""

import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import load_both, model_differences  # noqa: E402
from test_compile import same_names  # noqa: E402

import jaxmj  # noqa: E402

BODY = """<worldbody>
  <body pos="0 0 1"><joint range="-30 30"/><geom size=".1" group="1"/>
    <geom type="box" size=".01 .2 .3" pos="0 0 .3" group="4"/>
    <body pos=".4 0 0"><joint type="slide" range="-.1 .1"/>
      <inertial pos="0 0 0" mass="1e-4" diaginertia="1e-6 2e-6 2.5e-6"/></body>
    <body pos="0 .4 0"><joint axis="1 0 0"/><geom type="capsule" size=".01 .5"/></body>
  </body>
</worldbody>"""


@pytest.mark.parametrize("compiler", [
  "", 'boundmass="0.01"', 'boundinertia="0.001"', 'balanceinertia="true"',
  'boundmass="0.5" boundinertia="0.1" balanceinertia="true"', 'inertiagrouprange="0 3"',
  'inertiagrouprange="0 1"', 'usethread="false"', 'angle="radian"',
  'fusestatic="false" discardvisual="false" alignfree="false"',
  'saveinertial="true" savecompiled="true" savecanonical="true"',  # saving only
  'conflict="error" passthrough="none"',
])
def test_compiler_option_matches_mujoco(compiler):
  m, mj = load_both(xml=f"<mujoco><compiler {compiler}/>{BODY}</mujoco>")
  assert model_differences(m, mj) == []


def test_inertiagrouprange_leaving_a_moving_body_massless_fails_like_mujoco():
  xml = f'<mujoco><compiler inertiagrouprange="2 5"/>{BODY}</mujoco>'
  with pytest.raises(ValueError, match="mass and inertia"):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match="mass and inertia"):
    jaxmj.Model.from_xml_string(xml)


# ---------------------------------------------------------------- fusestatic

# Static bodies at every level: under the world (fused into it, mass dropped), in a chain
# under a moving body (geoms, sites, cameras and lights re-expressed through <frame>s), one
# with an explicit <inertial>, and a free body inside a static one (legal once fused).
FUSE = """<worldbody><light name="top" pos="0 0 3"/>
 <body name="P" pos="0 0 1" euler="5 10 0"><joint/><geom size=".1"/><camera name="c1"/>
  <body name="X" pos=".2 0 0"><joint/><geom type="capsule" size=".05 .2"/><site name="sX"/></body>
  <frame pos=".1 .1 0" euler="0 0 40">
   <body name="B" pos="0 .3 0" euler="10 20 30"><site name="sB" pos=".1 .1 .1"/>
    <geom type="box" size=".1 .05 .02" pos=".1 0 0" euler="3 4 5"/>
    <camera pos="0 0 .1" euler="1 2 3"/><light pos=".1 .2 .3" dir="0 1 -1"/>
    <body pos=".1 .1 .1" euler="0 90 0"><geom type="ellipsoid" size=".1 .2 .3"/>
     <inertial pos=".1 0 0" mass="3" diaginertia="1 2 2.5"/>
     <body name="C" pos=".1 0 0"><joint axis="1 0 0"/><geom size=".05"/></body></body>
   </body></frame>
  <body pos="0 0 .5"><geom type="cylinder" size=".05 .1"/></body>
 </body>
 <body name="W" pos="1 1 1" euler="0 0 30"><geom size=".2"/>
  <body name="F" pos=".3 0 0"><freejoint/><geom size=".1"/></body></body>
 <body name="M" mocap="true" pos="2 0 0"><body pos="0 0 .2"><geom size=".1"/></body></body>
</worldbody>"""


@pytest.mark.parametrize("compiler,extra,nbody", [
  ("", "", 6),
  ('boundmass="0.5" boundinertia="0.1"', "", 6),
  ('settotalmass="10"', "", 6),
  ("", '<keyframe><key qpos="1 2 3 4 5 6 1 0 0 0"/><key qvel="1 2 3 4 5 6 7 8 9"/></keyframe>', 6),
  # A body some element names, or whose site holds a force/torque sensor, stays.
  ("", '<contact><exclude body1="B" body2="X"/></contact>', 7),
  ("", '<sensor><subtreecom body="B"/><framepos objtype="site" objname="sX"/></sensor>', 7),
  ("", '<sensor><force site="sB"/></sensor>', 7),
  ("", '<equality><weld body1="B" body2="X"/></equality>', 7),
  ("", '<custom><tuple name="t"><element objtype="body" objname="B"/></tuple></custom>', 7),
  ("", '<sensor><framepos objtype="site" objname="sB"/></sensor>', 6),  # sites move along
])
def test_fusestatic_matches_mujoco(compiler, extra, nbody):
  xml = f'<mujoco><compiler fusestatic="true" {compiler}/>{FUSE}{extra}</mujoco>'
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", UserWarning)  # settotalmass is deprecated
    m, mj = load_both(xml=xml)
  assert mj.nbody == nbody
  assert model_differences(m, mj) == []
  same_names(m, mj)


def test_body_fuse_and_simple_false_match_mujoco():
  """MuJoCo 4.0's <body fuse="false"> keeps a static body out of fusestatic; <body
  simple="false"> takes a body off the simple fast path (body_simple 0)."""
  fuse = FUSE.replace('<body name="B"', '<body name="B" fuse="false"')
  m, mj = load_both(xml=f'<mujoco><compiler fusestatic="true"/>{fuse}</mujoco>')
  assert mj.nbody == 7 and model_differences(m, mj) == []
  m, mj = load_both(xml='<mujoco><worldbody><body simple="false"><joint type="slide"/>'
                        '<geom size=".1"/></body><body pos="1 0 0" simple="auto"><joint '
                        'type="slide"/><geom size=".1"/></body></worldbody></mujoco>')
  assert list(mj.body_simple) == [1, 0, 2] and model_differences(m, mj) == []


@pytest.mark.parametrize("parent,child,fused", [(0.5, 0.5, True), (0.0, 1.0, False)])
def test_fusestatic_keeps_a_massive_body_whose_gravcomp_differs(parent, child, fused):
  xml = f"""<mujoco><compiler fusestatic="true"/><worldbody>
    <body pos="0 0 1" gravcomp="{parent}"><joint/><geom size=".1"/>
      <body pos=".2 0 0" gravcomp="{child}"><geom size=".1"/></body>
      <body pos="0 .2 0" gravcomp="{child}"><site/></body></body></worldbody></mujoco>"""
  m, mj = load_both(xml=xml)
  assert mj.nbody == (2 if fused else 3)
  assert model_differences(m, mj) == []


def test_fusestatic_reorders_mesh_and_material_geoms_like_mujoco():
  xml = """<mujoco><compiler fusestatic="true"/><asset>
    <material name="m1" rgba="0 1 0 1"/><material name="m2" rgba="1 0 0 1"/>
    <mesh name="tet" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>
    <mesh name="tet2" vertex="0 0 0 .5 0 0 0 .5 0 0 0 .5" refpos=".1 0 0"/></asset>
    <worldbody><geom type="plane" size="5 5 .1" material="m1"/>
     <body pos="0 0 1"><freejoint/><geom type="mesh" mesh="tet" material="m2"/>
      <body pos=".2 0 0"><joint/><geom type="mesh" mesh="tet"/></body>
      <body pos=".2 0 0" euler="0 30 0"><site material="m2"/>
       <geom type="mesh" mesh="tet2" material="m1"/><geom type="box" mesh="tet"/></body></body>
     <body pos="1 0 0" euler="0 0 45"><geom type="mesh" mesh="tet2"/></body>
    </worldbody></mujoco>"""
  m, mj = load_both(xml=xml)
  assert mj.nbody == 3
  assert model_differences(m, mj) == []


def test_fusestatic_checks_user_data_of_fused_bodies_like_mujoco():
  xml = """<mujoco><compiler fusestatic="true"/><size nuser_body="2"/><worldbody>
    <body pos="0 0 1"><joint/><geom size=".1"/><body user="1 2 3"><geom size=".1"/></body>
    </body></worldbody></mujoco>"""
  with pytest.raises(ValueError, match="user has more values than nuser_body"):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match="user has more values than nuser_body"):
    jaxmj.Model.from_xml_string(xml)


# ---------------------------------------------------------------- discardvisual

DISCARD = """<asset>
  <texture name="t" type="2d" builtin="checker" width="8" height="8"/>
  <texture name="sky" type="skybox" builtin="gradient" width="8" height="8"/>
  <material name="m" texture="t"/>
  <mesh name="tet" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>
  <mesh name="unused" vertex="0 0 0 .5 0 0 0 .5 0 0 0 .5"/>
  <mesh name="vis" vertex="0 0 0 .5 0 0 0 .5 0 0 0 .6"/>
  <hfield name="h" nrow="2" ncol="2" size="1 1 1 1"/></asset>
<default><geom material="m"/></default>
<worldbody><light texture="t" pos="0 0 3"/>
 <geom name="floor" type="plane" size="5 5 .1"/><geom size=".1" contype="0" conaffinity="0"/>
 <site name="s2" pos="0 0 2"/>
 <body name="a" pos="0 0 1"><freejoint/><geom type="mesh" mesh="tet"/><site name="s" material="m"/>
  <geom type="box" mesh="tet" pos=".1 0 0"/>
  <geom type="mesh" mesh="vis" contype="0" conaffinity="0" group="3"/>
  <geom name="v" size=".1" contype="0" conaffinity="0" pos="0 .1 0"/>
  <geom size=".1" contype="0" conaffinity="1" pos="0 .2 0"/>
 </body>
 <body name="b" pos="0 0 2"><joint/><geom size=".1" contype="0" conaffinity="0"/></body>
</worldbody>
<tendon><spatial material="m"><site site="s"/><site site="s2"/></spatial></tendon>"""


@pytest.mark.parametrize("extra,ngeom", [
  ("", 4),
  ('<contact><pair geom1="v" geom2="floor"/></contact>', 5),  # a named visual geom stays
  ('<sensor><distance geom1="v" geom2="floor"/></sensor>', 5),
  ('<custom><tuple name="t"><element objtype="geom" objname="v"/></tuple></custom>', 5),
])
@pytest.mark.parametrize("fuse", ["false", "true"])
def test_discardvisual_matches_mujoco(extra, ngeom, fuse):
  xml = f'<mujoco><compiler discardvisual="true" fusestatic="{fuse}"/>{DISCARD}{extra}</mujoco>'
  m, mj = load_both(xml=xml)
  assert (mj.ngeom, mj.nmesh, mj.nmat, mj.ntex, mj.nhfield) == (ngeom, 1, 0, 0, 1)
  assert model_differences(m, mj) == []
  assert np.asarray(m.light_texid).tolist() == [-1]


_VIS = 'contype="0" conaffinity="0"'
FUSED_VISUAL = {  # MuJoCo fuses before it discards: fused bodies keep their visual geoms' mass
  "parent": f'<body pos="0 0 2"><joint type="ball"/><geom type="box" size=".1 .1 .1"/>'
            f'<geom size=".2" pos=".4 .4 0" {_VIS}/><body pos=".5 0 0"><geom size=".1"/>'
            "</body></body>",
  "child": f'<body pos="0 0 2"><joint type="ball"/><geom type="box" size=".1 .1 .1"/>'
           f'<body pos=".5 0 0" euler="0 30 0"><geom size=".1"/><geom type="capsule" '
           f'size=".1 .3" pos="0 .3 0" {_VIS}/></body></body>',
  "chain_with_inertial": f'<body pos="0 0 2"><joint/><inertial pos="0 0 0" mass="1" '
                         f'diaginertia=".1 .1 .1"/><body pos="0 1 0"><geom size=".1" {_VIS}/>'
                         '<body pos="1 0 0"><geom type="box" size=".1 .2 .3"/><geom '
                         f'type="ellipsoid" size=".1 .2 .3" pos="0 0 1" {_VIS}/></body></body>'
                         "</body>",
}


@pytest.mark.parametrize("body", FUSED_VISUAL.values(), ids=FUSED_VISUAL.keys())
def test_discardvisual_with_fusestatic_weighs_fused_visual_geoms(body):
  m, mj = load_both(xml=f'<mujoco><compiler discardvisual="true" fusestatic="true"/>'
                        f"<worldbody>{body}</worldbody></mujoco>")
  assert mj.nbody == 2 and mj.ngeom < body.count("<geom")
  assert model_differences(m, mj) == []
# ---------------------------------------------------------------- alignfree

ALIGN = """<worldbody>
 <body pos="0 0 1" euler="10 20 30"><freejoint/><site pos="0 0 .1" euler="1 2 3"/>
  <geom type="box" size=".1 .2 .3" pos=".1 .2 .3" euler="5 6 7"/><geom size=".1" pos="-.1 0 0"/>
  <camera pos="0 .1 0"/><light pos="0 0 .2" dir="1 0 0"/></body>
 <body pos="1 0 1"><freejoint/><geom type="box" size=".1 .2 .3" pos=".1 .2 .3"/>
  <body><joint/><geom size=".1"/></body></body>
 <body pos="1 2 1"><freejoint align="{align}"/>
  <geom type="box" size=".1 .2 .3" pos=".1 .2 .3"/></body>
 <body pos="1 2 1"><joint type="free"/>
  <geom type="capsule" fromto="0 0 0 .1 .2 .3" size=".05"/></body>
 <body pos="1 2 1"><freejoint/><geom type="box" size=".1 .2 .3" pos=".1 .2 .3"/>
  <body pos=".1 0 0"><geom size=".1"/></body></body>
</worldbody>
<keyframe><key qpos="1 2 3 1 0 0 0 4 5 6 0 1 0 0 .5"/><key qvel="1 2 3 4 5 6"/></keyframe>"""


@pytest.mark.parametrize("compiler", ['alignfree="false"', 'alignfree="true"',
                                      'alignfree="true" fusestatic="true"'])
@pytest.mark.parametrize("align", ["true", "false", "auto"])
def test_alignfree_matches_mujoco(compiler, align):
  """Aligned bodies move onto their inertial frame: qpos0 and keyframes without qpos follow."""
  m, mj = load_both(xml=f"<mujoco><compiler {compiler}/>{ALIGN.format(align=align)}</mujoco>")
  assert model_differences(m, mj) == []
  np.testing.assert_allclose(m.key_qpos, mj.key_qpos, atol=1e-12)


# ---------------------------------------------------------------- mesh hulls and builtins

_CLOUD = " ".join(f"{x:.5f}" for x in np.random.default_rng(1).normal(size=(40, 3)).ravel())


@pytest.mark.parametrize("maxhullvert", [4, 7, 12, 100])
@pytest.mark.parametrize("inertia", ["legacy", "convex"])
def test_maxhullvert_hull_matches_mujoco(maxhullvert, inertia):
  """qhull stops after maxhullvert vertices: the same partial hull, in the same order."""
  xml = f"""<mujoco><asset><mesh name="m" vertex="{_CLOUD}" maxhullvert="{maxhullvert}"
    inertia="{inertia}" scale=".1 .2 -.1"/></asset><worldbody><body><freejoint/>
    <geom type="mesh" mesh="m" density="1"/></body></worldbody></mujoco>"""
  m, mj = load_both(xml=xml)
  assert model_differences(m, mj) == []
  assert np.array_equal(m.mesh_face, mj.mesh_face)


def test_maxhullvert_below_4_is_an_error_like_mujoco():
  xml = f"""<mujoco><asset><mesh name="m" vertex="{_CLOUD}" maxhullvert="3"/></asset>
    <worldbody><geom type="mesh" mesh="m"/></worldbody></mujoco>"""
  with pytest.raises(ValueError, match="maxhullvert must be larger than 3"):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match="maxhullvert must be larger than 3"):
    jaxmj.Model.from_xml_string(xml)


@pytest.mark.parametrize("builtin,params", [
  ("sphere", "0"), ("sphere", "2"), ("hemisphere", "0"), ("hemisphere", "3"),
  ("supersphere", "8 0.5 2"), ("supertorus", "6 .5 .5 2"), ("cone", "5 .5"), ("cone", "6 0"),
  ("wedge", "5 3 120 80 .5"),
])
def test_builtin_mesh_matches_mujoco(builtin, params):
  xml = f"""<mujoco><asset><mesh name="m" builtin="{builtin}" params="{params}"
    scale=".1 .2 .3"/></asset><worldbody><body><freejoint/>
    <geom type="mesh" mesh="m" density="100"/></body></worldbody></mujoco>"""
  m, mj = load_both(xml=xml)
  assert model_differences(m, mj) == []


def test_builtin_plate_mesh_has_shell_inertia_like_mujoco():
  xml = """<mujoco><asset><mesh name="m" builtin="plate" params="3 4"/></asset>
    <worldbody><body><freejoint/><geom size=".1"/>
    <geom type="mesh" mesh="m" contype="0" conaffinity="0"/></body></worldbody></mujoco>"""
  m, mj = load_both(xml=xml)
  assert model_differences(m, mj) == []


def test_unknown_builtin_mesh_is_rejected_like_mujoco():
  xml = """<mujoco><asset><mesh name="m" builtin="blob" params="1"/></asset>
    <worldbody><geom type="mesh" mesh="m" contype="0" conaffinity="0"/></worldbody></mujoco>"""
  with pytest.raises(ValueError, match="invalid keyword: 'blob'"):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match="invalid keyword: 'blob'"):
    jaxmj.Model.from_xml_string(xml)



@pytest.mark.parametrize("attrs, message", [
  ('builtin="none" params="1"', "Unsupported mesh type"),
  ('builtin="sphere"', "required attribute missing: 'params'"),
  ('builtin="sphere" params="1" vertex="0 0 0 1 0 0 0 1 0 0 0 1"',
   "at most one of 'builtin', 'vertex' can be specified"),
])
def test_bad_builtin_mesh_attributes_rejected_like_mujoco(attrs, message):
  xml = f"""<mujoco><asset><mesh name="m" {attrs}/></asset>
    <worldbody><geom type="mesh" mesh="m"/></worldbody></mujoco>"""
  with pytest.raises(ValueError, match=message):
    mujoco.MjModel.from_xml_string(xml)
  with pytest.raises(jaxmj.MJCFError, match=message):
    jaxmj.Model.from_xml_string(xml)


@pytest.mark.parametrize("attr", ['conflict="merge"', 'conflict="warning"'])
def test_attach_conflict_modes_compile_as_mujoco(attr):
  # they matter only when a model is attached (tests/mjcf/test_model_attach.py)
  m, mj = load_both(xml=f"<mujoco><compiler {attr}/>{BODY}</mujoco>")
  assert model_differences(m, mj) == []
