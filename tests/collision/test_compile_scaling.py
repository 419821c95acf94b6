"""The collision stage compiles to the same program whatever the number of geom pairs.

The driver groups candidate pairs by geom types and runs one vmapped collider per group
(collision/driver.py), so the number of pairs of a type changes array shapes, never the
traced program. Held here on the lowered StableHLO of kinematics + collision: scenes with 5
and 10 bodies of each geom type on a plane (same-type pairs 10 vs 45, cross-type 25 vs 100)
lower to the same ops, kind by kind. (Below ~5 pairs per group jnp folds a few broadcasts
and selects by shape: 3 bodies per type lower to 41 fewer of ~10,500 ops.) The compiled
HLO of a whole `jaxmj.step` for 2, 8 and 32 spheres or boxes on a plane does not grow either
(measured for the issue-3 audit). Slow tests: each lowering traces every collider (~10 s).
"""

import re
from collections import Counter

import jax
import pytest

import jaxmj
from jaxmj.collision.driver import collision, collision_plan
from jaxmj.smooth.kinematics import kinematics

PRIMITIVE = [("box", ".05 .05 .05"), ("sphere", ".05"), ("capsule", ".03 .05")]
CONVEX = PRIMITIVE + [("cylinder", ".05 .04"), ("ellipsoid", ".05 .04 .03")]


def scene(kinds, n: int) -> str:
  bodies = "".join(f'<body pos="{.15 * i} {.15 * j} .1"><freejoint/>'
                   f'<geom type="{k}" size="{s}"/></body>'
                   for i in range(n) for j, (k, s) in enumerate(kinds))
  return f'<mujoco><worldbody><geom type="plane" size="5 5 .1"/>{bodies}</worldbody></mujoco>'


def lowered_ops(xml: str) -> tuple[Counter, int]:
  """(StableHLO ops of kinematics + collision by kind, candidate geom pairs)."""
  m = jaxmj.Model.from_xml_string(xml)
  text = jax.jit(lambda m, d: collision(m, kinematics(m, d)).contact).lower(
    m, jaxmj.make_data(m)).as_text()
  npairs = sum(len(g["g1"]) for g in collision_plan(m)["groups"])
  return Counter(re.findall(r"stablehlo\.\w+", text)), npairs


def check(kinds):
  few, pairs_few = lowered_ops(scene(kinds, 5))
  many, pairs_many = lowered_ops(scene(kinds, 10))
  assert pairs_many > 3.5 * pairs_few
  assert few == many, {k: (few[k], many[k]) for k in few | many if few[k] != many[k]}


@pytest.mark.slow
def test_primitive_pairs_lower_to_the_same_program():
  check(PRIMITIVE)


@pytest.mark.slow  # traces GJK/EPA and multiccd twice (~40 s each under load)
def test_convex_pairs_lower_to_the_same_program():
  check(CONVEX)
