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
  for objtype, n in (("body", mj.nbody), ("geom", mj.ngeom), ("site", mj.nsite),
                     ("joint", mj.njnt), ("camera", mj.ncam), ("light", mj.nlight)):
    kind = getattr(mujoco.mjtObj, f"mjOBJ_{'JOINT' if objtype == 'joint' else objtype.upper()}")
    assert [jaxmj.id2name(m, objtype, i) for i in range(n)] == [
      mujoco.mj_id2name(mj, kind, i) for i in range(n)]


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
