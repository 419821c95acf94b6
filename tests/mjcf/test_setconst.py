import pytest

mujoco = pytest.importorskip("mujoco")

import pathlib  # noqa: E402
import re  # noqa: E402

import numpy as np  # noqa: E402

from jaxmj.mjcf.compile import setconst  # noqa: E402

# Primary arrays the jaxmj compiler produces itself; everything else is derived here.
PRIMARY = """
nbody njnt nv nq ngeom nsite qpos0
body_parentid body_pos body_quat body_ipos body_iquat body_mass body_inertia body_mocapid
body_jntnum body_jntadr body_dofnum body_dofadr body_geomnum body_geomadr
jnt_type jnt_bodyid jnt_qposadr jnt_dofadr jnt_pos jnt_axis
dof_bodyid dof_jntid dof_parentid dof_armature
geom_type geom_bodyid geom_size geom_pos geom_quat geom_contype geom_conaffinity geom_margin
site_bodyid site_pos site_quat
""".split()

# Inputs setconst uses only when present (hfields, meshes, actuator and tendon armature).
OPTIONAL = """
hfield_size mesh_vert mesh_vertadr mesh_vertnum geom_dataid
actuator_armature actuator_gear actuator_trntype actuator_trnid
tendon_armature tendon_adr tendon_num wrap_type wrap_objid wrap_prm
""".split()

STAT = ["stat_meaninertia", "stat_meanmass", "stat_meansize", "stat_extent", "stat_center"]

TEST_DATA = pathlib.Path(mujoco.__file__).parent / "mjx" / "test_data"


@pytest.fixture(autouse=True)
def _log_elsewhere(tmp_path, monkeypatch):
    # mujoco appends warnings (singular M) to MUJOCO_LOG.TXT in the working directory
    monkeypatch.chdir(tmp_path)


def primary(m, optional=True) -> dict:
    names = PRIMARY + (OPTIONAL if optional else [])
    return {k: (v if isinstance(v, int) else np.array(v)) for k in names
            for v in [getattr(m, k)]}


def expected(m, name):
    if name.startswith("stat_"):
        return np.asarray(getattr(m.stat, name[len("stat_"):]))
    return getattr(m, name)


def derive(f) -> dict:
    return {**setconst.structure_fields(f), **setconst.mass_constants(f),
            **setconst.statistics(f)}


def assert_fields(m, out, skip=(), tol=None):
    """Ints (and their dtype) exactly; floats to 1e-10 relative, or a per-field tol."""
    tol = tol or {}
    for name, got in out.items():
        if name in skip:
            continue
        want = expected(m, name)
        if isinstance(want, int):
            assert got == want, name
            continue
        got = np.asarray(got)
        assert got.shape == want.shape, (name, got.shape, want.shape)
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        if want.dtype.kind in "iub":
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:
            err = np.abs(got - want) / np.maximum(1.0, np.abs(want))
            assert err.size == 0 or err.max() <= tol.get(name, 1e-10), (name, got, want)


def check_xml(xml: str, optional=True):
    m = mujoco.MjModel.from_xml_string(xml)
    assert_fields(m, derive(primary(m, optional)))
    return m


KITCHEN_SINK = """
<mujoco>
  <compiler angle="radian"/>
  <worldbody>
    <geom type="plane" size="5 5 .1"/>
    <geom type="box" size=".2 .3 .1" pos="2 0 0" euler=".1 .2 .3" margin=".05"/>
    <site name="ws" pos="0 0 3"/>
    <body name="base" pos="0 0 1" quat="0.9 0.1 0.3 0.2">
      <joint name="h1" type="hinge" axis="0 1 1" pos=".1 0 0" armature=".3" ref=".4"/>
      <geom type="capsule" size=".05" fromto="0 0 0 .3 0 0"/>
      <site name="s1" pos=".1 .1 0" quat="0 1 0 0"/>
      <body name="arm" pos=".3 0 0" euler=".5 -.2 .1">
        <joint type="slide" axis="1 0 0" ref="-.2"/>
        <joint type="ball" pos="0 .05 0"/>
        <geom type="ellipsoid" size=".1 .05 .07" pos=".05 0 0" euler="0 .3 0"/>
        <geom type="cylinder" size=".04 .1" pos="0 .1 0" contype="0" conaffinity="0"
              margin=".2"/>
        <body name="welded" pos="0 0 .2">
          <geom type="sphere" size=".03" pos=".01 .02 .03" contype="2" conaffinity="4"/>
          <body name="massless" pos=".1 0 0">
            <site name="tip" pos=".05 0 0" euler=".1 .2 .3"/>
            <body name="leaf" pos=".1 0 0">
              <joint type="hinge" axis="0 0 1" armature="2"/>
              <joint type="hinge" axis="1 0 0"/>
              <inertial pos=".02 0 0" quat="0.8 0.6 0 0" mass=".3" diaginertia=".01 .02 .03"/>
              <geom type="box" size=".02 .03 .04" pos=".02 0 0" quat="0.8 0.6 0 0"/>
              <geom type="box" size=".02 .03 .04" pos=".1 0 0" quat="0.8 0.6 0 0"/>
              <site pos=".02 0 0" quat="0.8 0.6 0 0"/>
            </body>
          </body>
        </body>
      </body>
    </body>
    <body name="floater" pos="1 1 1" euler=".3 .2 .1">
      <freejoint/>
      <geom type="box" size=".1 .2 .3" pos=".05 0 0"/>
      <geom type="sphere" size=".1" pos="-.1 0 0"/>
      <body pos="0 0 .4">
        <joint type="ball" armature=".1"/>
        <geom type="capsule" size=".05 .1"/>
      </body>
    </body>
    <body name="mocap" mocap="true" pos="-1 0 .5" quat="0 0 0 1">
      <geom type="sphere" size=".1" pos=".1 0 0"/>
      <body name="onmocap" pos="0 0 .2">
        <joint type="hinge" axis="0 1 0"/>
        <geom type="box" size=".1 .1 .1"/>
      </body>
    </body>
    <body name="static" pos="0 -2 0">
      <geom type="cylinder" size=".1 .2" pos="0 0 .1"/>
      <body name="simple1" pos="0 0 .5">
        <joint type="slide" axis="1 0 0"/>
        <joint type="hinge" axis="0 0 1"/>
        <geom type="sphere" size=".1"/>
      </body>
      <body name="simple2" pos=".5 0 .5">
        <joint type="slide" axis="0 0 1" armature=".5"/>
        <joint type="slide" axis="0 1 0"/>
        <geom type="box" size=".1 .1 .1"/>
      </body>
    </body>
    <body name="slidefree" pos="0 3 1">
      <joint type="slide" axis="0 0 -1"/>
      <joint type="hinge" axis="1 0 0"/>
      <joint type="slide" axis="1 0 0"/>
      <geom type="sphere" size=".1"/>
    </body>
    <body name="inertialonly" pos="2 2 0">
      <joint type="hinge" axis="0 1 0" pos="0 0 .1"/>
      <inertial pos="0 0 .2" mass="2" diaginertia=".1 .1 .1"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_kitchen_sink():
    m = check_xml(KITCHEN_SINK)
    # the model really exercises the branches it is meant to
    assert set(m.body_simple) == {0, 1, 2}
    assert {0, 1, 2, 3, 4} <= set(m.geom_sameframe) | set(m.site_sameframe)
    assert m.ntree == 7 and m.nmocap == 1


def test_kitchen_sink_without_optional_inputs():
    check_xml(KITCHEN_SINK, optional=False)


def test_singular_mass_matrix_is_clamped_like_mujoco():
    # four sliders on three axes: M is singular and MuJoCo clamps the last pivot
    check_xml("""
    <mujoco><worldbody><body>
      <joint type="slide" axis="1 0 0"/><joint type="slide" axis="0 1 0"/>
      <joint type="slide" axis="0 0 1"/><joint type="slide" axis="1 1 0"/>
      <geom type="box" size=".05 .05 .05" mass="1"/>
    </body></worldbody></mujoco>""")


def test_actuator_armature():
    check_xml("""
    <mujoco><worldbody>
      <body><joint name="a" axis="0 1 0"/><geom type="box" size=".1 .2 .3" pos=".1 0 0"/></body>
      <body pos="0 1 0"><joint name="b" type="ball"/><geom size=".1" pos=".1 0 0"/></body>
      <body pos="0 2 0"><joint name="c" type="slide"/><geom size=".1"/></body>
    </worldbody>
    <actuator>
      <motor joint="a" armature="2" gear="3"/><motor joint="a" armature="1" gear="2"/>
      <motor joint="b" armature="1" gear="2 0 0 0 0 0"/>
      <position joint="c" kp="10" armature=".5"/><motor joint="c"/>
    </actuator></mujoco>""")


def test_tendon_armature():
    m = check_xml("""
    <mujoco><worldbody>
      <site name="w" pos="1 0 1"/>
      <body name="a"><joint name="ja" type="slide" axis="0 0 1"/>
        <geom type="box" size=".1 .1 .1"/><site name="sa"/></body>
      <body name="b" pos="0 1 0"><joint name="jb" axis="1 0 0"/>
        <geom type="box" size=".1 .1 .1" pos="0 0 .2"/><site name="sb" pos="0 .1 .2"/></body>
      <body name="c" pos="0 2 0"><joint name="jc" type="slide" axis="0 1 0"/>
        <geom size=".1"/><site name="sc"/></body>
    </worldbody>
    <tendon>
      <fixed armature="3"><joint joint="ja" coef="2"/><joint joint="jb" coef="-1"/></fixed>
      <spatial armature="5"><site site="w"/><site site="sa"/><pulley divisor="2"/>
        <site site="w"/><site site="sb"/><pulley divisor="3"/><site site="w"/><site site="sc"/>
      </spatial>
    </tendon></mujoco>""")
    assert not m.body_simple[1:].any()


@pytest.mark.parametrize("xml", [
    "<mujoco/>",
    '<mujoco><worldbody><geom type="plane" size="0 0 1"/></worldbody></mujoco>',
    '<mujoco><worldbody><body pos="1 0 0"><geom size="1"/></body></worldbody></mujoco>',
])
def test_models_without_dofs(xml):
    check_xml(xml)


def _overridden_stats(path: pathlib.Path) -> list[str]:
    """Stat fields a model's <statistic> sets by hand (meansize also feeds extent)."""
    match = re.search(r"<statistic([^>]*)>", path.read_text())
    return STAT if match else []


@pytest.mark.parametrize("path", sorted(TEST_DATA.rglob("*.xml")),
                         ids=lambda p: str(p.relative_to(TEST_DATA)))
def test_mjx_test_data(path):
    try:
        m = mujoco.MjModel.from_xml_path(str(path))
    except ValueError as e:
        pytest.skip(f"mujoco itself rejects this file: {str(e).splitlines()[0]}")
    # mesh boxes come from mesh_vert, which MjModel stores in float32
    tol = {"geom_aabb": 1e-7} if m.nmesh else {}
    assert_fields(m, derive(primary(m)), skip=_overridden_stats(path), tol=tol)


def test_simple_false_attribute():
    m = mujoco.MjModel.from_xml_string("""
    <mujoco><worldbody>
      <body simple="false"><joint type="slide"/><geom size=".1"/></body>
      <body><joint type="slide"/><geom size=".1"/></body>
    </worldbody></mujoco>""")
    f = primary(m)
    out = setconst.structure_fields(f, simple_off=np.array([False, True, False]))
    assert_fields(m, out)
    merged = {**f, **out}
    assert_fields(m, {**setconst.mass_constants(merged), **setconst.statistics(merged)})
