"""A differentiated rollout linearizes its step once (jaxmj/dynamics/carry_tangents.py): the
carries given nonzero tangents up front are the ones JAX's own fixed point arrives at (plus
computed fields the step does not read), so the derivative is the plain scan's (bit for bit,
measured on humanoid_floor and a ball: `jax.grad` and `jax.jacfwd` of a 20-step rollout)."""

import jax
import jax.numpy as jnp
import pytest

import jaxmj
from jaxmj.dynamics import forward
from jaxmj.dynamics.carry_tangents import reaches

# a ball resting on a plane (contact rows), a hinge driven by a filter actuator (act) and
# sensors, so the carry holds every kind of state the step reads
XML = """<mujoco><option timestep="0.005"/><worldbody>
  <geom type="plane" size="3 3 .1"/>
  <body pos="0 0 .1"><freejoint/><geom type="sphere" size=".1"/><site name="c"/></body>
  <body pos="1 0 1"><joint name="h" type="hinge" axis="0 1 0" damping=".1"/>
    <geom type="capsule" fromto="0 0 0 .3 0 0" size=".04"/></body></worldbody>
  <actuator><general joint="h" dyntype="filter" dynprm=".05"/></actuator>
  <sensor><framepos objtype="site" objname="c"/><jointpos joint="h" noise=".1"/></sensor>
</mujoco>"""


@pytest.fixture(scope="module")
def model():
  with jax.enable_x64(True):
    m = jaxmj.Model.from_xml_string(XML)
    yield m, jaxmj.make_data(m).replace(ctrl=jnp.ones(1))


def _loss(m, d, wrt):
  def f(x):
    mm, dd = (m.replace(**{wrt: x}), d) if hasattr(m, wrt) else (m, d.replace(**{wrt: x}))
    final, traj = jaxmj.rollout(mm, dd, nstep=3, fields=("sensordata",))
    return jnp.sum(final.qpos ** 2) + jnp.sum(final.act) + jnp.sum(traj["sensordata"] ** 2)
  return f, getattr(m, wrt) if hasattr(m, wrt) else getattr(d, wrt)


def _linearizations(monkeypatch, fn, x, settle: bool) -> list[list[bool]]:
  """The nonzero-tangent flags of each linearization of the rollout's scan body while tracing
  jax.grad(fn)(x), with carry_tangents' settling or, settle False, without (JAX's internal
  linearize_jaxpr; skipped where this JAX lacks it)."""
  ad = pytest.importorskip("jax._src.interpreters.ad")
  if not hasattr(ad, "linearize_jaxpr"):
    pytest.skip("this JAX linearizes scans differently")
  seen, original = [], ad.linearize_jaxpr

  def spy(jaxpr, nzs, *args, **kwargs):
    out = original(jaxpr, nzs, *args, **kwargs)
    seen.append(list(nzs))
    return out

  with monkeypatch.context() as patch:
    patch.setattr(ad, "linearize_jaxpr", spy)
    if not settle:
      patch.setattr(forward, "settle_carry_tangents", lambda step, m, d, xs, **_: d)
    forward._rollout.clear_cache()  # the step's own trace is kept
    jax.make_jaxpr(jax.grad(fn))(x)
  forward._rollout.clear_cache()
  width = max(len(s) for s in seen)  # the scan's: Model leaves, carry, ctrl
  return [s for s in seen if len(s) == width]


@pytest.mark.parametrize("wrt", ["qvel", "sensor_noise"])
def test_one_linearization_of_the_step_with_jaxs_tangents(model, monkeypatch, wrt):
  """Differentiated in the initial velocity, JAX alone linearizes the step three times;
  settled, once, with every carry JAX's last pass gave a tangent (and, the analysis being
  coarser than JAX's rules inside custom derivatives, at most computed fields the step
  does not read, such as contact.frame). In sensor parameters alone nothing is added."""
  m, d = model
  with jax.enable_x64(True):
    fn, x = _loss(m, d, wrt)
    settled = _linearizations(monkeypatch, fn, x, settle=True)
    plain = _linearizations(monkeypatch, fn, x, settle=False)
  assert [len(settled), len(plain)] == [1, 3 if wrt == "qvel" else 1]
  ours, jaxs = settled[0], plain[-1]
  added = [i for i, (a, b) in enumerate(zip(ours, jaxs)) if a and not b]
  assert all(a or not b for a, b in zip(ours, jaxs))
  paths = [jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(d)[0]]
  first = len(ours) - len(paths) - 1  # Model leaves, then the carry, then ctrl
  assert {paths[i - first] for i in added} <= ({".contact.frame"} if wrt == "qvel" else set())


def test_reaches_follows_tangents_not_values():
  @jax.custom_jvp
  def half_rule(x, y):  # the rule ignores y's tangent; the analysis does not look inside
    return x * y

  half_rule.defjvp(lambda p, t: (half_rule(*p), t[0] * p[1]))

  def bits(x):  # a float through its bits, as the exact-arithmetic guards pass it
    i = jax.lax.bitcast_convert_type(x, jnp.int32)
    return jax.lax.bitcast_convert_type(i | 0, jnp.float32)

  def f(x, y, n):
    c = jax.lax.cond(n > 0, lambda: x * 2, lambda: y)
    w = jax.lax.while_loop(lambda s: s[2] < n, lambda s: (s[1], s[0] + 1.0, s[2] + 1),
                           (y, y, 0))[0]  # carries from y alone: x never enters
    s, _ = jax.lax.scan(lambda s, u: ((s[1], s[0] * u), None), (y, x), jnp.ones(3, jnp.float32))
    return (jax.lax.stop_gradient(x), jnp.where(x > 0, 1.0, 0.0), bits(x), c, w, s[0],
            half_rule(y, x), half_rule(x, y))

  jaxpr = jax.make_jaxpr(f)(jnp.float32(1), jnp.float32(2), 3)
  assert reaches(jaxpr, [True, False, False]) == [
    False, False, True, True, False, True, True, True]
