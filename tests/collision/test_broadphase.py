"""The bounding-sphere broadphase (collision/broadphase.py) against MuJoCo's contacts.

MuJoCo discards a candidate pair whose bounding spheres (geom_rbound, or a plane's
half-space) are further apart than the pair's reach; jaxmj clears such pairs' slots. The
filter must never drop a pair MuJoCo reports a contact for, and must agree with the
definition computed in numpy.
"""

import jax
import numpy as np
from mujoco_compare import load_both, mujoco

import jaxmj
from jaxmj.collision import broadphase, driver
from jaxmj.smooth.kinematics import kinematics

SCENE = """<mujoco><worldbody>
  <geom type="plane" size="2 2 .1" margin=".01" gap=".02"/>
  <body><freejoint/><geom type="sphere" size=".1" margin=".02"/></body>
  <body><freejoint/><geom type="capsule" size=".05 .2" gap=".03"/></body>
  <body><freejoint/><geom type="box" size=".1 .15 .05"/></body>
  <body><freejoint/><geom type="box" size=".05 .05 .2" margin=".05"/></body>
  <body><freejoint/><geom type="capsule" size=".08 .1"/></body>
  </worldbody></mujoco>"""


def _random_state(mj, rng):
  d = mujoco.MjData(mj)
  qpos = d.qpos.reshape(-1, 7)
  qpos[:, :3] = rng.uniform([-.4, -.4, -.05], [.4, .4, .5], size=(len(qpos), 3))
  q = rng.normal(size=(len(qpos), 4))
  qpos[:, 3:] = q / np.linalg.norm(q, axis=1, keepdims=True)
  return d


def _reference(m, xpos, xmat, g1, g2, reach):
  """mj_filterSphere in numpy."""
  rb = np.asarray(m.geom_rbound)
  out = []
  for a, b, r in zip(g1, g2, reach):
    if rb[a] > 0 and rb[b] > 0:
      out.append(np.sum((xpos[a] - xpos[b]) ** 2) > (rb[a] + rb[b] + r) ** 2)
    elif m.geom_type[a] == 0 and rb[b] > 0:
      out.append(np.dot(xpos[b] - xpos[a], xmat[a][:, 2]) > r + rb[b])
    else:
      out.append(False)
  return np.array(out)


def test_broadphase_keeps_every_mujoco_contact_and_matches_its_definition():
  m, mj = load_both(xml=SCENE)
  plan = driver.collision_plan(m)
  g1 = np.concatenate([g["g1"] for g in plan["groups"]])
  g2 = np.concatenate([g["g2"] for g in plan["groups"]])
  pair = np.concatenate([g["pair"] for g in plan["groups"]])
  params = driver.contact_params(m, g1, g2, pair)
  reach = np.asarray(params["margin"] + params["gap"])

  @jax.jit
  def far(qpos):
    d = kinematics(m, jaxmj.make_data(m).replace(qpos=qpos))
    return broadphase.out_of_reach(m, d, g1, g2, reach), d.geom_xpos, d.geom_xmat

  rng = np.random.default_rng(0)
  dropped = kept = 0
  for _ in range(40):
    dm = _random_state(mj, rng)
    mujoco.mj_forward(mj, dm)
    out, xpos, xmat = (np.asarray(x) for x in far(dm.qpos.copy()))
    ref = _reference(m, np.asarray(xpos), np.asarray(xmat), g1, g2, reach)
    np.testing.assert_array_equal(out, ref)
    touching = {tuple(sorted((int(c.geom1), int(c.geom2)))) for c in dm.contact}
    for a, b, f in zip(g1, g2, out):
      if f:
        assert tuple(sorted((a, b))) not in touching
    dropped += out.sum()
    kept += len(touching)
  assert dropped > 0 and kept > 0  # both sides of the filter were exercised
