"""<tendon> compiled as mujoco 4.0 compiles it: tendon_*/wrap_* fields (including
tendon_length0, tendon_invweight0 and tendon_lengthspring from mj_setConst), names, and
errors naming the element. models/tendon_arm.xml and mujoco's mjx/test_data/tendon files
are held in test_compile (test_models, test_bundled)."""

import pytest

mujoco = pytest.importorskip("mujoco")

from test_compile import check  # noqa: E402

import jaxmj  # noqa: E402

ARM = """<mujoco>{head}
  <worldbody>
    <site name="w0" pos="0 0 .3"/>
    <body name="b1"><joint name="j0" axis="0 1 0"/><joint name="j0s" type="slide"/>
      <geom type="capsule" size=".03" fromto="0 0 0 .4 0 0"/>
      <site name="s0" pos=".1 0 .05"/><site name="s1" pos=".3 0 .04"/>
      <body name="b2" pos=".4 0 0"><joint name="j1" axis="0 1 0" ref="10"/>
        <geom name="ball" size=".05"/><site name="side" pos="0 0 .1"/>
        <geom name="cyl" type="cylinder" size=".03 .05" euler="90 0 0" pos=".2 0 0"/>
        <geom type="capsule" size=".03" fromto="0 0 0 .4 0 0"/>
        <site name="s2" pos=".1 0 .05"/><site name="s3" pos=".35 0 -.05"/>
      </body>
    </body>
  </worldbody>
  <tendon>{tendons}</tendon>
</mujoco>"""


def arm(tendons: str, head: str = "") -> str:
  return ARM.format(tendons=tendons, head=head)


SPATIAL = ('<site site="w0"/><site site="s0"/><site site="s1"/>'
           '<geom geom="ball" sidesite="side"/><site site="s2"/><geom geom="cyl"/>'
           '<site site="s3"/>')
CASES = {
  "fixed": '<fixed name="f"><joint joint="j0" coef="2"/><joint joint="j1" coef="-.5"/>'
           '<joint joint="j0s" coef=".3"/></fixed>',
  "spatial_wraps": f'<spatial name="s" width=".01" rgba="1 0 0 1">{SPATIAL}</spatial>',
  "pulleys": '<spatial><site site="w0"/><site site="s0"/><pulley divisor="2"/>'
             '<site site="s1"/><site site="s2"/><pulley divisor="4"/><site site="s1"/>'
             '<geom geom="ball"/><site site="s3"/></spatial>',
  "limits_and_params": '<fixed range="-1 1" margin=".1" frictionloss=".2" armature=".3" '
                       'solreflimit=".05 .8" solimplimit=".8 .9 .01" solreffriction=".04 1" '
                       'solimpfriction=".7 .8" actuatorfrcrange="-2 3" group="3">'
                       '<joint joint="j1" coef="1"/></fixed>',
  "springlength_one_value": f'<spatial springlength=".7" stiffness="3">{SPATIAL}</spatial>',
  "springlength_deadband": f'<spatial springlength=".5 .9" stiffness="3 1 .2" '
                           f'damping=".1 .02">{SPATIAL}</spatial>',
  "springlength_auto_at_qpos_spring": '<fixed stiffness="1"><joint joint="j1" coef="1"/>'
                                      '</fixed>',
  "limited_false": '<fixed limited="false" range="0 1"><joint joint="j0" coef="1"/></fixed>',
}


@pytest.mark.parametrize("name", CASES)
def test_tendon_fields_match_mujoco(name):
  check(arm(CASES[name]))


def test_tendon_defaults_and_classes():
  head = ('<default><tendon width=".02" stiffness="2" range="0 2"/>'
          '<default class="soft"><tendon stiffness=".5" rgba="0 1 0 1" damping=".3"/>'
          '</default></default>')
  check(arm(f'<spatial>{SPATIAL}</spatial><spatial class="soft" stiffness="7">{SPATIAL}'
            '</spatial><fixed class="soft"><joint joint="j0" coef="1"/></fixed>', head))


def test_autolimits_off_needs_limited():
  head = '<compiler autolimits="false"/>'
  check(arm('<fixed limited="true" range="0 1"><joint joint="j0" coef="1"/></fixed>', head))
  with pytest.raises(jaxmj.MJCFError, match="limited"):
    jaxmj.Model.from_xml_string(arm('<fixed range="0 1"><joint joint="j0" coef="1"/></fixed>',
                                    head))


def test_tendon_names():
  m, mj = check(arm('<fixed name="a"><joint joint="j0" coef="1"/></fixed>'
                    f'<spatial>{SPATIAL}</spatial><spatial name="c">{SPATIAL}</spatial>'))
  assert [jaxmj.name2id(m, "tendon", n) for n in ("a", "c", "x")] == [0, 2, -1]
  assert jaxmj.id2name(m, "tendon", 1) is None


ERRORS = {
  "unknown site": ('<spatial><site site="nope"/><site site="s0"/></spatial>', "site"),
  "wrap geom type": ('<spatial><site site="s0"/><geom geom="cyl"/><site site="s2"/>'
                     '</spatial>'.replace("cyl", "b2geom"), "geom"),
  "geom at the end": ('<spatial><site site="s0"/><geom geom="ball"/></spatial>', "geom"),
  "single object": ('<spatial><site site="s0"/></spatial>', "spatial"),
  "pulley then pulley": ('<spatial><site site="s0"/><site site="s1"/><pulley divisor="2"/>'
                         '<pulley divisor="2"/><site site="s1"/><site site="s2"/></spatial>',
                         "pulley"),
  "lonely site": ('<spatial><site site="s0"/><site site="s1"/><pulley divisor="2"/>'
                  '<site site="s1"/></spatial>', "site"),
  "pulley divisor": ('<spatial><site site="s0"/><site site="s1"/><pulley/><site site="s1"/>'
                     '<site site="s2"/></spatial>', "pulley"),
  "repeated joint": ('<fixed><joint joint="j0" coef="1"/><joint joint="j0" coef="2"/>'
                     '</fixed>', "joint"),
  "missing coef": ('<fixed><joint joint="j0"/></fixed>', "joint"),
  "bad range": ('<fixed limited="true"><joint joint="j0" coef="1"/></fixed>', "fixed"),
  "material": ('<fixed material="m"><joint joint="j0" coef="1"/></fixed>', "fixed"),
  "section attribute": ('</tendon><tendon width="1"><fixed><joint joint="j0" coef="1"/>'
                        '</fixed>', "tendon"),
  "armature on a geom wrap": ('<spatial armature=".1"><site site="s0"/><geom geom="ball"/>'
                              '<site site="s2"/></spatial>', "spatial"),
}


@pytest.mark.parametrize("name", ERRORS)
def test_tendon_errors_name_the_element(name, tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)  # mujoco writes MUJOCO_LOG.TXT on errors
  tendons, element = ERRORS[name]
  xml = arm(tendons).replace('<geom type="capsule" size=".03" fromto="0 0 0 .4 0 0"/>\n'
                             '        <site name="s2"', '<geom name="b2geom" type="capsule" '
                             'size=".03" fromto="0 0 0 .4 0 0"/>\n        <site name="s2"')
  with pytest.raises(jaxmj.MJCFError) as info:
    jaxmj.Model.from_xml_string(xml)
  assert info.value.element == element, str(info.value)
  with pytest.raises(ValueError):
    mujoco.MjModel.from_xml_string(xml)



def test_actuators_on_wrapping_tendons_match_mujoco():
  """actuator_length0, actuator_acc0 and dampratio's kv need the tendon Jacobian at qpos0,
  geom wraps and side sites included."""
  xml = arm(f'<spatial name="w">{SPATIAL}</spatial>').replace(
    "</mujoco>", '<actuator><motor tendon="w" gear="2"/><position tendon="w" kp="10" '
    'dampratio="1"/></actuator></mujoco>')
  check(xml)


def test_tendon_material_matches_mujoco():
  """A spatial tendon's material is kept for renderers (tendon_matid), -1 without one."""
  xml = """<mujoco><asset><material name="q"/><material name="m" rgba="1 0 0 1"/></asset>
  <default><tendon material="q"/></default>
  <worldbody><site name="a"/><body><joint name="j"/><geom size=".1"/>
    <site name="b" pos="1 0 0"/></body></worldbody>
  <tendon><spatial material="m" rgba="0 1 0 1"><site site="a"/><site site="b"/></spatial>
    <fixed><joint joint="j" coef="1"/></fixed>
    <spatial><site site="a"/><site site="b"/></spatial></tendon></mujoco>"""
  m, mj = check(xml)
  assert mj.tendon_matid.tolist() == [1, 0, 0]
  with pytest.raises(jaxmj.MJCFError, match="unknown material 'zz'"):
    jaxmj.Model.from_xml_string(xml.replace('material="m"', 'material="zz"'))
