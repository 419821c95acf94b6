"""Every example of the PyMJCF document (seed 004), run unchanged against `jaxmj.mjcf`.

The examples are copied in the document's order; fragments are completed minimally (each
completion says so), printed results are asserted. Every composed model compiles to the same
arrays in jaxmj (`Model.from_mjcf`) and in MuJoCo (from the written XML).
"""

import copy

import numpy as np
import pytest
from lxml import etree
from mujoco_compare import model_differences

import jaxmj
from jaxmj import mjcf

mujoco = pytest.importorskip("mujoco")


def compiles_alike(root) -> jaxmj.Model:
  """The jaxmj Model of `root`, checked against MuJoCo's compile of the written XML."""
  m = jaxmj.Model.from_mjcf(root)
  mj = mujoco.MjModel.from_xml_string(root.to_xml_string(), root.get_assets())
  assert model_differences(m, mj) == []
  return m


def same_xml(a: str, b: str) -> bool:
  """Equal element trees, attribute values compared as numbers where they are numbers;
  the names generated for unnamed elements (an implementation detail, as in dm_control's
  XML: `//unnamed_body_0`) left out."""
  def norm(el):
    attrs = {}
    for k, v in el.attrib.items():
      if k == 'name' and '/unnamed_' in v:
        continue
      try:
        attrs[k] = tuple(float(x) for x in v.split())
      except ValueError:
        attrs[k] = v
    return el.tag, attrs, [norm(c) for c in el if isinstance(c.tag, str)]

  return norm(etree.fromstring(a)) == norm(etree.fromstring(b))


# ------------------------------------------------------------------ the opening example


class Arm:
  def __init__(self, name):
    self.mjcf_model = mjcf.RootElement(model=name)
    self.upper_arm = self.mjcf_model.worldbody.add('body', name='upper_arm')
    self.shoulder = self.upper_arm.add('joint', name='shoulder', type='ball')
    self.upper_arm.add('geom', name='upper_arm', type='capsule',
                       pos=[0, 0, -0.15], size=[0.045, 0.15])
    self.forearm = self.upper_arm.add('body', name='forearm', pos=[0, 0, -0.3])
    self.elbow = self.forearm.add('joint', name='elbow',
                                  type='hinge', axis=[0, 1, 0])
    self.forearm.add('geom', name='forearm', type='capsule',
                     pos=[0, 0, -0.15], size=[0.045, 0.15])


class UpperBody:
  def __init__(self):
    self.mjcf_model = mjcf.RootElement()
    self.mjcf_model.worldbody.add(
        'geom', name='torso', type='box', size=[0.15, 0.045, 0.25])
    left_shoulder_site = self.mjcf_model.worldbody.add(
        'site', size=[1e-6]*3, pos=[-0.15, 0, 0.25])
    right_shoulder_site = self.mjcf_model.worldbody.add(
        'site', size=[1e-6]*3, pos=[0.15, 0, 0.25])
    self.left_arm = Arm(name='left_arm')
    left_shoulder_site.attach(self.left_arm.mjcf_model)
    self.right_arm = Arm(name='right_arm')
    right_shoulder_site.attach(self.right_arm.mjcf_model)


def test_upper_body_example():
  body = UpperBody()
  physics = mjcf.Physics.from_mjcf_model(body.mjcf_model)
  compiles_alike(body.mjcf_model)
  assert physics.model.njnt == 4 and physics.model.nq == 2 * (4 + 1)
  # The arms' elements bind by element, names prefixed automatically.
  assert body.right_arm.elbow.full_identifier == 'right_arm/elbow'
  assert physics.bind(body.right_arm.elbow).qposadr == 9
  assert physics.bind([body.left_arm.shoulder, body.right_arm.elbow]).qpos.shape == (5,)
  physics.bind([body.left_arm.elbow, body.right_arm.elbow]).qpos = [0.5, -0.5]
  np.testing.assert_array_equal(np.asarray(physics.data.qpos)[[4, 9]], [0.5, -0.5])
  physics.bind(body.left_arm.elbow).damping = 0.2  # a Model field
  assert float(physics.model.dof_damping[3]) == 0.2


@pytest.mark.slow
def test_physics_steps_as_mujoco():
  arm = Arm('arm')
  arm.mjcf_model.worldbody.body['upper_arm'].pos = [0, 0, 1]
  physics = mjcf.Physics.from_mjcf_model(arm.mjcf_model)
  mj = mujoco.MjModel.from_xml_string(arm.mjcf_model.to_xml_string())
  md = mujoco.MjData(mj)
  md.qpos[:] = [0.9, 0.3, 0.3, 0.0, 0.5]
  physics.bind([arm.shoulder, arm.elbow]).qpos = md.qpos
  physics.step(20)
  mujoco.mj_step(mj, md, 20)
  np.testing.assert_allclose(physics.bind(arm.elbow).qpos, md.joint('elbow').qpos, atol=1e-9)
  assert physics.time() == pytest.approx(md.time)


# ------------------------------------------------------------------ elements


def test_root_element_and_add_example():
  mjcf_model = mjcf.RootElement()
  assert str(mjcf_model) == 'MJCF Element: <mujoco/>'
  my_box = mjcf_model.worldbody.add('geom', name='my_box',
                                    type='box', pos=[0, .1, 0])
  assert str(my_box) == 'MJCF Element: <geom name="my_box" type="box" pos="0.0 0.1 0.0"/>'


SEED_XML = """<mujoco model="test">
  <default>
    <default class="brick">
      <geom rgba="1 0 0 1"/>
    </default>
  </default>
  <worldbody>
    <body name="foo">
      <freejoint/>
      <inertial pos="0 0 0" mass="1"/>
      <body name="bar">
        <joint name="my_hinge" type="hinge"/>
        <geom name="my_geom" pos="0 1 2" class="brick"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture
def filename(tmp_path):
  path = tmp_path / 'test.xml'
  path.write_text(SEED_XML)
  return str(path)


def test_parsing_examples(filename):
  # Parse from path
  mjcf_model = mjcf.from_path(filename)
  a = mjcf_model
  # Parse from file
  with open(filename) as f:
    mjcf_model = mjcf.from_file(f)
  b = mjcf_model
  # Parse from string
  with open(filename) as f:
    xml_string = f.read()
    mjcf_model = mjcf.from_xml_string(xml_string)
  assert type(mjcf_model) is mjcf.RootElement
  assert a.is_same_as(b) and b.is_same_as(mjcf_model)


def test_attribute_access_examples(filename):
  mjcf_model = mjcf.from_path(filename)
  my_geom = mjcf_model.worldbody.body['foo'].body['bar'].geom['my_geom']
  assert isinstance(mjcf_model, mjcf.Element)
  assert my_geom.name == 'my_geom'
  np.testing.assert_array_equal(my_geom.pos, np.array([0., 1., 2.], dtype=float))
  with pytest.raises(SyntaxError):
    compile('print(my_geom.class)', '<doc>', 'exec')
  assert my_geom.dclass == 'brick'
  # Attribute values in the object model are not affected by defaults.
  np.testing.assert_array_equal(mjcf_model.default.default['brick'].geom.rgba, [1, 0, 0, 1])
  assert my_geom.rgba is None
  # find and find_all
  found_geom = mjcf_model.find('geom', 'my_geom')
  assert found_geom == my_geom
  joints = mjcf_model.find_all('joint')
  assert len(joints) == 2
  assert joints[0] == mjcf_model.worldbody.body['foo'].freejoint
  assert joints[1] == mjcf_model.worldbody.body['foo'].body['bar'].joint[0]
  # modified, added, removed
  my_geom.pos = [1, 2, 3]
  np.testing.assert_array_equal(my_geom.pos, np.array([1., 2., 3.], dtype=float))
  my_geom.quat = [0, 1, 0, 0]
  np.testing.assert_array_equal(my_geom.quat, np.array([0., 1., 0., 0.], dtype=float))
  del my_geom.quat
  assert my_geom.quat is None
  # The gotchas: getattr with 'class'; type and range are plain attributes.
  assert getattr(my_geom, 'class') == 'brick'
  my_geom.type = 'capsule'  # OK!
  my_joint = mjcf_model.find('joint', 'my_hinge')
  my_joint.range = [-1, 1]  # OK!
  my_geom.size = [0.1, 0.2]  # completion: a capsule needs a size to compile
  mjcf_model.find('body', 'foo').inertial.diaginertia = [0.1] * 3  # and so does inertial
  compiles_alike(mjcf_model)


def test_schema_violation_examples(filename):
  mjcf_model = mjcf.from_path(filename)
  my_geom = mjcf_model.find('geom', 'my_geom')
  with pytest.raises(AttributeError):
    print(my_geom.poss)  # no child or attribute called poss
  with pytest.raises(ValueError):
    my_geom.pos = 'invalid'  # assigning string to array
  with pytest.raises(ValueError):
    my_geom.pos = [1, 2, 3, 4, 5, 6]  # array length is too long
  with pytest.raises(ValueError):
    del mjcf_model.find('body', 'foo').inertial.mass  # mass is a required attribute


def test_identifier_uniqueness_examples(filename):
  mjcf_model = mjcf.from_path(filename)
  with pytest.raises(ValueError):
    mjcf_model.worldbody.add('geom', name='my_geom')  # Error, duplicated geom name
  foo = mjcf_model.worldbody.find('body', 'foo')
  # The document's `foo.add('my_geom')` and `foo.add('foo')`, completed with their tag.
  with pytest.raises(ValueError):
    foo.add('geom', name='my_geom')  # Error, duplicated geom name
  foo.add('geom', name='foo', size=[0.1])  # OK, a geom can have the same name as a body
  with pytest.raises(ValueError):
    mjcf_model.find('geom', 'foo').name = 'my_geom'  # Error, duplicated geom name


def test_reference_attribute_example(filename):
  mjcf_model = mjcf.from_path(filename)
  my_hinge = mjcf_model.find('joint', 'my_hinge')
  my_actuator = mjcf_model.actuator.add('velocity', joint=my_hinge)
  my_hinge.name = 'renamed'  # the reference survives renaming
  assert my_actuator.joint is my_hinge
  with pytest.raises(ValueError):
    my_actuator.joint = 'child/joint'  # strings cannot contain '/'
  mjcf_model.find('geom', 'my_geom').size = [0.1]  # completion: a sphere needs a size
  mjcf_model.find('body', 'foo').inertial.diaginertia = [0.1] * 3  # and so does inertial
  m = compiles_alike(mjcf_model)
  assert m.nu == 1 and jaxmj.bind(m).actuator(my_actuator).trnid[0] == jaxmj.name2id(
    m, 'joint', 'renamed')


# ------------------------------------------------------------------ attachment


ROBOT_XML = """<mujoco>
  <worldbody>
    <body name="base" pos="0 0 0.2">
      <joint name="hinge" axis="0 0 1"/>
      <geom name="chassis" type="box" size="0.2 0.1 0.05"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_arena_robot_example(tmp_path, monkeypatch):
  monkeypatch.chdir(tmp_path)
  (tmp_path / 'robot.xml').write_text(ROBOT_XML)  # completion: the robot's file
  arena = mjcf.RootElement()
  arena.worldbody.add('geom', name='ground', type='plane', size=[10, 10, 1])
  robot = mjcf.from_xml_file('robot.xml')
  arena.attach(robot)
  assert robot.model == 'unnamed_model'  # an unnamed model is named when attached
  m = compiles_alike(arena)
  assert jaxmj.name2id(m, 'joint', 'unnamed_model/hinge') == 0


PARENT_XML = """<mujoco model="parent">
  <worldbody>
    <body>
      <geom name="foo" type="box" pos="-0.2 0 0.3" size="0.5 0.3 0.1"/>
      <site name="attachment_site" pos="1. 2. 3." quat="1. 0. 0. 1."/>
    </body>
  </worldbody>
</mujoco>"""

CHILD_XML = """<mujoco model="child">
  <worldbody>
    <geom name="bar" type="box" pos="0.5 0.25 1." size="0.1 0.2 0.3"/>
  </worldbody>
</mujoco>"""

# The document's generated XML; its child geom is named "child/my_box" there, a slip for
# the child's "bar".
GENERATED_XML = """<mujoco model="parent">
  <worldbody>
    <body>
      <geom name="foo" type="box" pos="-0.2 0 0.3" size="0.5 0.3 0.1"/>
      <site name="attachment_site" pos="1. 2. 3." quat="1. 0. 0. 1."/>
      <body name="child/" pos="1. 2. 3." quat="1. 0. 0. 1.">
        <geom name="child/bar" type="box" pos="0.5 0.25 1." size="0.1 0.2 0.3"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""


def test_attachment_frame_examples():
  parent_model = mjcf.from_xml_string(PARENT_XML)
  child_model = mjcf.from_xml_string(CHILD_XML)
  # completion: the document attaches at the site
  parent_model.find('site', 'attachment_site').attach(child_model)
  assert same_xml(parent_model.to_xml_string(), GENERATED_XML)
  compiles_alike(parent_model)
  # Elements of child models do not appear when traversing through the parent model.
  assert parent_model.find('geom', 'bar') is None
  assert [g.name for g in parent_model.worldbody.body[0].geom] == ['foo']
  frame_1 = parent_model.find('attachment_frame', 'child')
  # Convenience function: get the attachment frame directly from a child model
  frame_2 = mjcf.traversal_utils.get_attachment_frame(child_model)
  assert frame_1 == frame_2


def test_attachment_frame_freejoint_example():
  parent_model = mjcf.RootElement(model='parent')
  child = mjcf.from_xml_string(CHILD_XML)  # completion: the document attaches 'child'
  attachment_frame = parent_model.attach(child)
  attachment_frame.add('freejoint')
  m = compiles_alike(parent_model)
  assert m.nq == 7 and mjcf.get_frame_freejoint(child) is attachment_frame.freejoint
  with pytest.raises(AttributeError):
    attachment_frame.add('geom', size=[0.1])  # only joints and an inertial


DEFAULTS_PARENT = """<mujoco model="parent">
  <default>
    <geom rgba="1. 0. 0. 1."/>
    <default class="green">
      <geom rgba="0. 1. 0. 1."/>
    </default>
  </default>
</mujoco>"""

DEFAULTS_CHILD = """<mujoco model="child">
  <default>
    <joint range="0. 1."/>
    <default class="stiff">
      <joint stiffness="0.1"/>
    </default>
  </default>
</mujoco>"""

DEFAULTS_GENERATED = """<mujoco model="parent">
  <default>
    <default class="/">
      <geom rgba="1. 0. 0. 1."/>
      <default class="green">
        <geom rgba="0. 1. 0. 1."/>
      </default>
    </default>
    <default class="child/">
      <joint range="0. 1."/>
      <default class="child/stiff">
        <joint stiffness="0.1"/>
      </default>
    </default>
  </default>
</mujoco>"""


def test_global_defaults_example():
  mjcf_model = mjcf.RootElement()
  mjcf_model.default.geom.rgba = [1., 0., 0., 1.]
  mjcf_model.worldbody.add('geom', size=[0.1])
  np.testing.assert_array_equal(mjcf_model.default.geom.rgba, [1, 0, 0, 1])
  # jaxmj moves them to class "/" only once models are attached (test_scoped_defaults_...).
  m = compiles_alike(mjcf_model)
  np.testing.assert_array_equal(m.geom_rgba[0], [1, 0, 0, 1])


def test_scoped_defaults_example():
  parent = mjcf.from_xml_string(DEFAULTS_PARENT)
  child = mjcf.from_xml_string(DEFAULTS_CHILD)
  parent.attach(child)  # completion: the document attaches child to parent
  default = etree.tostring(etree.fromstring(DEFAULTS_GENERATED).find('default')).decode()
  assert same_xml(parent.default.to_xml_string(), default)
  np.testing.assert_array_equal(parent.default.geom.rgba, [1, 0, 0, 1])  # as global
  compiles_alike(parent)


def test_global_option_examples():
  model_1 = mjcf.RootElement()
  model_1.compiler.angle = 'radian'
  model_2 = mjcf.RootElement()
  model_2.compiler.angle = 'degree'
  with pytest.raises(ValueError):
    model_1.attach(model_2)  # Error!

  model_1 = mjcf.RootElement()
  model_2 = mjcf.RootElement()
  model_2.compiler.angle = 'degree'
  model_1.attach(model_2)  # No error, but all angles in model_1 are now wrong!
  assert 'angle="degree"' in model_1.to_xml_string()
  compiles_alike(model_1)


def test_attach_twice_needs_a_deepcopy():
  arm = Arm('arm')
  scene = mjcf.RootElement()
  scene.attach(arm.mjcf_model)
  with pytest.raises(ValueError):
    scene.attach(arm.mjcf_model)
  twin = copy.deepcopy(arm.mjcf_model)
  scene.attach(twin)
  assert twin.model == 'arm_1'
  compiles_alike(scene)
  second = Arm('arm')  # "Preferably ... just call the constructor as many times as required"
  scene.attach(second.mjcf_model)
  assert second.mjcf_model.model == 'arm_2'
  compiles_alike(scene)
