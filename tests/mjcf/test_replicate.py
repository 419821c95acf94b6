"""<replicate> against MuJoCo 4.0's reader: the copies' poses (euler(i * euler) and the
accumulated offset), their names (sep and a zero-padded index; nested replicates carry the
inner suffix first) and camera / light targets, childclass, and a short trajectory of the
replicated bodies."""

import pytest

mujoco = pytest.importorskip("mujoco")

from mujoco_compare import load_both, model_differences, rollout_error  # noqa: E402

import jaxmj  # noqa: E402

SCENE = """<mujoco><compiler angle="{angle}" eulerseq="{seq}"/>
<default><default class="small"><geom rgba="1 0 0 1" size=".03"/></default></default>
<worldbody><geom type="plane" size="3 3 .1"/>
  <replicate count="{count}" offset=".3 .1 0" euler="{euler}" sep="-">
    <camera name="follow" mode="targetbody" target="b" pos="0 -1 1"/>
    <body name="b" pos=".5 0 .2"><freejoint name="j"/><geom name="g" size=".05"/>
      <light name="spot" mode="targetbody" target="b" pos="0 0 1"/>
      <replicate count="3" offset="0 0 .1" euler="0 0 {quarter}" childclass="small">
        <site name="s"/><geom name="h"/></replicate>
    </body>
  </replicate>
  <body name="arm" pos="0 0 1"><joint name="hinge" axis="0 1 0"/>
    <geom type="capsule" size=".02" fromto="0 0 0 .2 0 0"/>
    <replicate count="4" euler="0 0 {quarter}">
      <frame pos=".1 0 0"><geom name="f" type="box" size=".01 .02 .03"/></frame></replicate>
  </body>
</worldbody>
<actuator><motor joint="hinge"/></actuator>
<sensor><framepos objtype="site" objname="s1-{last}"/></sensor>
</mujoco>"""


def _scene(angle="degree", seq="xyz", euler="10 20 30", count=12):
  quarter = "90" if angle == "degree" else "1.5707963267948966"
  return SCENE.format(angle=angle, seq=seq, euler=euler, count=count, quarter=quarter,
                      last="0".zfill(len(str(count))))


@pytest.mark.parametrize("angle, seq, euler, count", [
  ("degree", "xyz", "10 20 30", 12), ("radian", "XYZ", ".1 .2 .3", 3), ("degree", "zyx",
                                                                        "0 0 45", 1)])
def test_replicated_model_compiles_as_mujoco(angle, seq, euler, count):
  m, mj = load_both(xml=_scene(angle, seq, euler, count))
  assert model_differences(m, mj, atol=1e-12) == []
  _same_names(m, mj, (("body", mj.nbody), ("geom", mj.ngeom), ("site", mj.nsite),
                      ("joint", mj.njnt), ("camera", mj.ncam), ("light", mj.nlight)))


def _same_names(m, mj, kinds):
  """Every element's name of each (kind, count) equal in both models, in order."""
  for objtype, n in kinds:
    kind = getattr(mujoco.mjtObj, f"mjOBJ_{objtype.upper()}")
    assert [jaxmj.id2name(m, objtype, i) for i in range(n)] == [
      mujoco.mj_id2name(mj, kind, i) for i in range(n)], objtype


def test_replicated_bodies_step_as_in_mujoco():
  m, mj = load_both(xml=_scene(count=4))
  err, *_ = rollout_error(m, mj, 30)
  assert err < 1e-10


def test_replicate_needs_a_count_and_holds_what_a_frame_holds():
  with pytest.raises(jaxmj.MJCFError, match="'count'"):
    jaxmj.Model.from_xml_string("<mujoco><worldbody><replicate><geom size='.1'/></replicate>"
                                "</worldbody></mujoco>")
  with pytest.raises(jaxmj.MJCFError, match="<joint> is not allowed inside <replicate>"):
    jaxmj.Model.from_xml_string("<mujoco><worldbody><body><replicate count='2'><joint/>"
                                "</replicate><geom size='.1'/></body></worldbody></mujoco>")


# sections naming replicated elements: a tendon through a copy and a site outside, one
# coupling an outer and an inner copy's joints (nested replicates), pairs and an exclude
# with one side outside, equality constraints (copied only where every name is in a copy,
# else gone with the original), actuators on copied joints and tendons, sensors with one
# and two sides, and ones naming nothing (MuJoCo copies those at every attachment)
REFERENCING = """<mujoco>
<worldbody>
  <site name="out" pos="0 0 1"/>
  <body name="base" pos="0 0 1"><geom name="gbase" size=".1"/></body>
  <replicate count="2" offset=".3 0 0" sep="_">
    <site name="a" pos="0 0 .2"/>
    <body name="arm" pos="0 0 .5"><joint name="sh"/>
      <geom name="g" type="capsule" size=".02" fromto="0 0 0 0 0 .2"/>
      <site name="tip" pos="0 0 .2"/>
      <replicate count="3" euler="0 0 30">
        <body name="f" pos=".05 0 0"><joint name="fj" axis="0 1 0"/>
          <geom name="fg" size=".01"/><site name="fs"/></body>
      </replicate>
    </body>
  </replicate>
</worldbody>
<tendon>
  <fixed name="coupled"><joint joint="sh" coef="1"/><joint joint="fj" coef="-1"/></fixed>
  <spatial name="sp" limited="true" range="0 2"><site site="out"/><site site="fs"/></spatial>
  <spatial name="t"><site site="a"/><site site="tip"/></spatial>
</tendon>
<contact>
  <pair geom1="g" geom2="gbase"/><exclude body1="arm" body2="base"/><pair geom1="fg" geom2="g"/>
</contact>
<equality>
  <weld body1="arm" body2="base"/><joint joint1="fj" joint2="sh"/>
  <connect body1="f" anchor="0 0 0"/>
</equality>
<actuator>
  <motor joint="sh"/><motor name="ft" tendon="coupled"/><position joint="fj" kp="2"/>
</actuator>
<sensor>
  <framepos objtype="site" objname="tip" reftype="body" refname="base"/><contact body1="arm"/>
  <contact body2="f"/><actuatorfrc actuator="ft"/><clock name="clk"/>
  <distance geom1="fg" geom2="gbase"/><tendonpos tendon="t"/>
</sensor>
</mujoco>"""


def test_elements_naming_replicated_ones_are_copied_as_in_mujoco():
  m, mj = load_both(xml=REFERENCING)
  assert (mj.ntendon, mj.nu, mj.neq, mj.npair, mj.nexclude) == (14, 14, 6, 8, 2)
  assert model_differences(m, mj, atol=1e-12) == []
  _same_names(m, mj, (("tendon", mj.ntendon), ("actuator", mj.nu), ("sensor", mj.nsensor),
                      ("equality", mj.neq)))
  err, *_ = rollout_error(m, mj, 20)
  assert err < 1e-10


def test_a_replicate_that_would_double_a_sensor_past_any_size_is_refused():
  with pytest.raises(jaxmj.MJCFError, match="doubling"):
    jaxmj.Model.from_xml_string("<mujoco><worldbody><replicate count='20'><geom size='.1'/>"
                                "</replicate></worldbody><sensor><clock/></sensor></mujoco>")
