"""The contact sensor of MuJoCo 4.0 (the mjSENS_CONTACT case of mj_computeSensorAcc).

Contacts (every one MuJoCo lists: out to margin + gap, the gap layer's without rows or force)
are matched against the sensor's two sides (geom, body, subtree or site criteria),
reduced to `num` slots (none: MuJoCo's contact order; mindist; maxforce; netforce: one synthetic
contact) and the requested data fields are extracted in the direction side 1 -> side 2.
Reversing a matched contact rotates its frame 180 degrees about tangent2: normal and
tangent flip, and so do the tangent2 components of force, torque and relative velocity.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmj.collision.driver import contact_gaps
from jaxmj.collision.plan import contact_rank
from jaxmj.constants import MINVAL
from jaxmj.constraint import contact_force
from jaxmj.scan import body_plan
from jaxmj.sensor.inside import inside_geom
from jaxmj.types import ObjType

# mjtConDataType order: found force torque dist pos normal tangent linvel angvel.
WIDTHS = (1, 3, 3, 1, 3, 3, 3, 3, 3)
FORCE_BITS = 0b110
VELOCITY_BITS = 0b110000000
NONE, MINDIST, MAXFORCE, NETFORCE = 0, 1, 2, 3


def _side(m, objtype: int, oid: int, geoms, bodies):
  """(ncon,) bool: contact slots of geoms `geoms` and bodies `bodies` (static numpy arrays,
  or traced under a contact cap) match one side of a contact sensor."""
  if objtype == ObjType.GEOM:
    return geoms == oid
  if objtype == ObjType.BODY:
    return bodies == oid
  if objtype == ObjType.XBODY:  # the subtree rooted at oid
    anc = np.asarray(body_plan(m)["subtree"])[oid] > 0
    return anc[bodies] if isinstance(bodies, np.ndarray) else jnp.asarray(anc)[bodies]
  return np.ones(len(geoms), bool)


def _matches(m, d, g):
  """(match (n, ncon) bool, flipped (n, ncon) bool) of each sensor's contacts; flipped is
  static unless a contact cap makes the slots' geoms traced."""
  c = d.contact
  n, ncon = len(g.obj), len(c.dim)
  geoms, bodies = c.geoms(), c.bodies(m.geom_bodyid)
  xp = np if c.geom is None else jnp
  site = g.objtype == ObjType.SITE
  direct, flipped = [], []
  for o, r in zip(g.obj, g.ref):
    s1 = [np.ones(ncon, bool)] * 2 if site else [_side(m, g.objtype, o, geoms[k], bodies[k])
                                                 for k in (0, 1)]
    s2 = [_side(m, g.reftype, r, geoms[k], bodies[k]) for k in (0, 1)]
    direct.append(s1[0] & s2[1])
    flipped.append(s1[1] & s2[0] & ~direct[-1])
  direct = xp.stack(direct) if n else xp.zeros((0, ncon), bool)
  flipped = xp.stack(flipped) if n else xp.zeros((0, ncon), bool)
  # every contact MuJoCo lists: those out to margin + gap too, which have no rows
  listed = c.dist < c.includemargin + contact_gaps(m, c)
  match = jnp.asarray(direct | flipped) & listed[None]
  if site:
    local = jnp.einsum("nji,cnj->cni", d.site_xmat[g.obj],
                       c.pos[:, None] - d.site_xpos[g.obj][None])
    inside = jax.vmap(jax.vmap(inside_geom, (None, None, 0)), (0, 0, 1))(
      jnp.asarray(m.site_type[g.obj]), m.site_size[g.obj], local)
    match &= inside
  return match, flipped


def _relative_velocity(m, d):
  """(ncon, 6) angular then linear velocity of geom2's body relative to geom1's at the
  contact point, in the contact frame."""
  c = d.contact

  def at_point(body, pos):
    vel = d.cvel[body]
    root = (m.body_rootid[body] if isinstance(body, np.ndarray)
            else jnp.asarray(m.body_rootid)[body])
    com = d.subtree_com[root]
    return vel[:, :3], vel[:, 3:] + jnp.cross(vel[:, :3], pos - com)

  body1, body2 = c.bodies(m.geom_bodyid)
  ang1, lin1 = at_point(body1, c.pos)
  ang2, lin2 = at_point(body2, c.pos)
  rot = lambda v: jnp.einsum("cij,cj->ci", c.frame, v)  # noqa: E731
  return jnp.concatenate([rot(ang2 - ang1), rot(lin2 - lin1)], axis=-1)


def _netforce(m, d, g, match, flipped, frc):
  """(n, width) slot 0 of netforce sensors: the matched contacts' total wrench in the
  global frame about their force-weighted centroid, reported as one synthetic contact."""
  c = d.contact
  bits = g.intprm[0]
  sign = jnp.where(jnp.asarray(flipped), -1.0, 1.0) * match  # 0 for unmatched contacts
  force_c = jnp.einsum("cji,cj->ci", c.frame, frc[:, :3])  # global frame
  torque_c = jnp.einsum("cji,cj->ci", c.frame, frc[:, 3:])
  weight = jnp.abs(sign) * jnp.linalg.norm(frc[:, :3], axis=-1)[None]
  total = jnp.sum(weight, axis=1, keepdims=True)
  point = (weight @ c.pos) / jnp.maximum(total, MINVAL)
  force = sign @ force_c
  arm = c.pos[None] - point[:, None]
  torque = sign @ torque_c + jnp.sum(sign[..., None] * jnp.cross(arm, force_c[None]), axis=1)
  n, dt = len(g.obj), d.qpos.dtype
  unit = lambda k: jnp.broadcast_to(jnp.eye(3, dtype=dt)[k], (n, 3))  # noqa: E731
  fields = {0: jnp.sum(match, axis=1, keepdims=True).astype(dt), 1: force, 2: torque,
            3: jnp.zeros((n, 1), dt), 4: point, 5: unit(0), 6: unit(1)}
  return jnp.concatenate([fields[k] for k in fields if bits >> k & 1], axis=-1)


def contact(m, d, g):
  """(n, num * width) contact sensor data; unfilled slots are zero."""
  bits, reduce, num = g.intprm
  c = d.contact
  n, ncon, dt = len(g.obj), len(c.dim), d.qpos.dtype
  width = sum(w for k, w in enumerate(WIDTHS) if bits >> k & 1)
  if ncon == 0:
    return jnp.zeros((n, num * width), dt)
  match, flipped = _matches(m, d, g)
  need_force = bits & FORCE_BITS or reduce in (MAXFORCE, NETFORCE)
  frc = contact_force.contact_forces(m, d) if need_force else None
  if reduce == NETFORCE:
    out = _netforce(m, d, g, match, flipped, frc)
    return jnp.concatenate([out, jnp.zeros((n, (num - 1) * width), dt)], axis=-1)
  if reduce == MINDIST:
    key = jnp.broadcast_to(c.dist, (n, ncon))
  elif reduce == MAXFORCE:
    key = -jnp.broadcast_to(jnp.linalg.norm(frc[:, :3], axis=-1), (n, ncon))
  else:  # MuJoCo's contact order (under a cap: of the candidates the slots hold now)
    rank = contact_rank(m) if c.rank is None else c.rank
    key = jnp.broadcast_to(jnp.asarray(rank, dt), (n, ncon))
  order = jnp.argsort(jnp.where(match, key, jnp.inf), axis=1, stable=True)[:, :num]
  found = jnp.sum(match, axis=1)
  sign = jnp.take_along_axis(jnp.where(jnp.asarray(flipped), -1.0, 1.0), order, 1)
  flip3 = lambda v: v * jnp.stack([jnp.ones_like(sign), jnp.ones_like(sign), sign], -1)  # noqa: E731
  vel = _relative_velocity(m, d) if bits & VELOCITY_BITS else None
  fields = []
  for k in range(len(WIDTHS)):
    if not bits >> k & 1:
      continue
    if k == 0:
      fields.append(jnp.broadcast_to(found[:, None, None], (n, num, 1)).astype(dt))
    elif k in (1, 2):
      fields.append(flip3(frc[:, 3 * (k - 1):3 * k][order]))
    elif k == 3:
      fields.append(c.dist[order][..., None])
    elif k == 4:
      fields.append(c.pos[order])
    elif k in (5, 6):
      fields.append(c.frame[:, k - 5][order] * sign[..., None])
    else:  # linvel, angvel
      fields.append(flip3(vel[:, 3 * (8 - k):3 * (9 - k)][order]))
  out = jnp.concatenate(fields, axis=-1)
  filled = jnp.arange(num)[None] < found[:, None]
  return jnp.where(filled[..., None], out, 0.0).reshape(n, num * width)
