"""Planar rigid multibody dynamics in reduced (generalized) coordinates.

A tree of rigid bodies with a floating base and revolute joints. The
generalized coordinates are q = (x, z, angle) of the base frame's origin and
orientation, then one angle per joint; v = q̇. Because joints are built into
the coordinates there are no joint-constraint impulses and no joint drift
(the paper used maximal coordinates with J_c v = 0; this is the equivalent
reduced form). Angles are counter-clockwise positive (see frames.py).

Each body has a frame: its origin is its joint (the base: the point q[:2]),
its angle the sum of its ancestors' joint angles, the base angle and its own
joint angle plus a fixed offset.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from granular.compiled import kernel

from granular.errors import GranularError

GRAVITY = 9.81


@dataclass(frozen=True)
class Body:
    """A rigid body. ``joint``: where its frame's origin sits in the parent's frame (m);
    ``com``: its centre of mass in its own frame; ``offset``: its frame's angle in the
    parent frame at zero joint angle (rad); the base has parent None."""

    name: str
    mass: float
    inertia: float
    com: tuple = (0.0, 0.0)
    parent: str | None = None
    joint: tuple = (0.0, 0.0)
    offset: float = 0.0

    def __post_init__(self):
        if not (np.isfinite(self.mass) and self.mass > 0):
            raise GranularError(f"body {self.name!r}: mass must be positive, got {self.mass!r}")
        if not (np.isfinite(self.inertia) and self.inertia > 0):
            raise GranularError(f"body {self.name!r}: inertia must be positive, got {self.inertia!r}")


def _perp(u):
    """ω × u for unit ω: (−u_z, u_x)."""
    return np.stack([-u[..., 1], u[..., 0]], axis=-1)


@dataclass(frozen=True)
class MultiBody:
    """An immutable planar tree; bodies listed parents first, the base first."""

    bodies: tuple
    gravity: float = GRAVITY
    names: dict = field(init=False, repr=False)

    def __post_init__(self):
        names = {b.name: i for i, b in enumerate(self.bodies)}
        if len(names) != len(self.bodies):
            raise GranularError("body names must be unique")
        if not self.bodies or self.bodies[0].parent is not None:
            raise GranularError("the first body must be the floating base (parent = none)")
        parent = [-1]
        for i, b in enumerate(self.bodies[1:], start=1):
            if b.parent not in names or names[b.parent] >= i:
                raise GranularError(f"body {b.name!r}: parent {b.parent!r} must be a body listed before it")
            parent.append(names[b.parent])
        nb = len(self.bodies)
        # Rotational dof of body i: dof 2 for the base, 2 + i for the joint of body i.
        chain = np.zeros((nb, nb))  # chain[i, a] = 1 if a is i or an ancestor of i
        for i in range(nb):
            a = i
            while a >= 0:
                chain[i, a] = 1.0
                a = parent[a]
        # The branches hanging from the base: bodies grouped by the base's child they descend from
        # (their joints' dofs, 2 + i); M couples two branches only through the base (contact/reduction.py).
        root = [0] * nb
        for i in range(1, nb):
            root[i] = i if parent[i] == 0 else root[parent[i]]
        order = sorted(range(1, nb), key=lambda i: (root[i], i))
        ends = [j + 1 for j in range(len(order)) if j + 1 == len(order) or root[order[j + 1]] != root[order[j]]]
        set_ = object.__setattr__
        set_(self, "branches", (np.array([2 + i for i in order], dtype=np.int64), np.array([0] + ends, dtype=np.int64)))
        set_(self, "names", names)
        set_(self, "parent", np.array(parent, dtype=np.int64))
        set_(self, "chain", chain)
        set_(self, "mass", np.array([b.mass for b in self.bodies]))
        set_(self, "inertia", np.array([b.inertia for b in self.bodies]))
        set_(self, "com", np.array([b.com for b in self.bodies], dtype=float))
        set_(self, "joint", np.array([b.joint for b in self.bodies], dtype=float))
        set_(self, "offset", np.array([b.offset for b in self.bodies], dtype=float))

    @property
    def ndof(self) -> int:
        return len(self.bodies) + 2

    def index(self, name: str) -> int:
        try:
            return self.names[name]
        except KeyError:
            raise GranularError(f"no body named {name!r}; bodies: {', '.join(self.names)}") from None

    def frames(self, q):
        """World angle (nb,) and origin (nb, 2) of every body frame."""
        return _frames(np.asarray(q, dtype=float), self.parent, self.joint, self.offset)

    def jacobians(self, angle, origin, bodies, local):
        """Twist Jacobians (k, 3, ndof) of points fixed in bodies: rows v_x, v_z, ω."""
        return _jacobians(angle, origin, self.chain, np.asarray(bodies, dtype=np.int64),
                          np.asarray(local, dtype=float))

    def dynamics(self, q, v, frames=None):
        """Mass matrix M (n, n) and generalized forces k (n,) = gravity − Coriolis/centrifugal."""
        angle, origin = self.frames(q) if frames is None else frames
        return _dynamics(angle, origin, np.asarray(v, dtype=float), self.parent, self.com, self.mass,
                         self.inertia, self.gravity)

    def energy(self, q, v):
        """Kinetic plus gravitational potential energy (J)."""
        com, _, com_v, omega = self.com_states(q, v)
        kinetic = 0.5 * (self.mass @ (com_v**2).sum(axis=1) + self.inertia @ omega**2)
        return float(kinetic + self.gravity * self.mass @ com[:, 1])

    def com_states(self, q, v):
        """Per body: COM position (nb, 2), angle (nb,), COM velocity (nb, 2), angular velocity (nb,)."""
        angle, origin = self.frames(q)
        nb = len(self.bodies)
        tw = self.jacobians(angle, origin, np.arange(nb), self.com) @ v
        return place(angle, origin, self.com), angle, tw[:, :2], tw[:, 2]


def place(angle, origin, local):
    """World positions of points ``local`` (k, 2) in frames at ``angle`` (k,), ``origin`` (k, 2)."""
    return origin + rotate(angle, local)


def rotate(angle, local):
    """Vectors ``local`` (k, 2) turned by ``angle`` (k,)."""
    c, s = np.cos(angle), np.sin(angle)
    out = np.empty((len(local), 2))
    out[:, 0] = c * local[:, 0] - s * local[:, 1]
    out[:, 1] = s * local[:, 0] + c * local[:, 1]
    return out


# --- compiled kernels (numba): the simulation's hot loop calls these every step ---------------

@kernel("f8[::1], i8[::1], f8[:, ::1], f8[::1]")
def _frames(q, parent, joint, offset):
    nb = len(parent)
    angle = np.empty(nb)
    origin = np.empty((nb, 2))
    angle[0] = q[2] + offset[0]
    origin[0, 0], origin[0, 1] = q[0], q[1]
    for i in range(1, nb):
        p = parent[i]
        angle[i] = angle[p] + q[2 + i] + offset[i]
        c, s = np.cos(angle[p]), np.sin(angle[p])
        origin[i, 0] = origin[p, 0] + c * joint[i, 0] - s * joint[i, 1]
        origin[i, 1] = origin[p, 1] + s * joint[i, 0] + c * joint[i, 1]
    return angle, origin


@kernel("f8[::1], f8[:, ::1], f8[:, ::1], i8[::1], f8[:, ::1]")
def _jacobians(angle, origin, chain, bodies, local):
    """J (k, 3, n): a point's velocity is v_base + Σ_a q̇_a ω × (p − pivot_a) over its chain."""
    k, nb = len(bodies), len(angle)
    J = np.zeros((k, 3, nb + 2))
    for j in range(k):
        b = bodies[j]
        c, s = np.cos(angle[b]), np.sin(angle[b])
        px = origin[b, 0] + c * local[j, 0] - s * local[j, 1]
        pz = origin[b, 1] + s * local[j, 0] + c * local[j, 1]
        J[j, 0, 0] = 1.0
        J[j, 1, 1] = 1.0
        for a in range(nb):
            if chain[b, a] > 0:
                J[j, 0, 2 + a] = -(pz - origin[a, 1])
                J[j, 1, 2 + a] = px - origin[a, 0]
                J[j, 2, 2 + a] = 1.0
    return J


@kernel("f8[::1], f8[:, ::1], f8[::1], i8[::1], f8[:, ::1], f8[::1], f8[::1], f8")
def _dynamics(angle, origin, v, parent, com, mass, inertia, gravity):
    """M and k body by body, over the dofs that move each body (x, z and its chain's rotations):
    O(bodies × depth²), where forming every body's full Jacobian was O(bodies × dofs²)."""
    nb, n = len(angle), len(v)
    omega = np.empty(nb)       # angular velocity of each body
    pivot_v = np.empty((nb, 2))  # velocity of each frame origin (joint pivot)
    omega[0], pivot_v[0, 0], pivot_v[0, 1] = v[2], v[0], v[1]
    for i in range(1, nb):
        p = parent[i]
        omega[i] = omega[p] + v[2 + i]
        pivot_v[i, 0] = pivot_v[p, 0] - omega[p] * (origin[i, 1] - origin[p, 1])
        pivot_v[i, 1] = pivot_v[p, 1] + omega[p] * (origin[i, 0] - origin[p, 0])
    M = np.zeros((n, n))
    k = np.zeros(n)
    cols = np.empty(nb + 2, dtype=np.int64)
    jx, jz, jw = np.empty(nb + 2), np.empty(nb + 2), np.empty(nb + 2)
    for b in range(nb):
        c, s = np.cos(angle[b]), np.sin(angle[b])
        px = origin[b, 0] + c * com[b, 0] - s * com[b, 1]
        pz = origin[b, 1] + s * com[b, 0] + c * com[b, 1]
        cols[0], jx[0], jz[0], jw[0] = 0, 1.0, 0.0, 0.0
        cols[1], jx[1], jz[1], jw[1] = 1, 0.0, 1.0, 0.0
        d, a = 2, b
        while a >= 0:  # the COM's velocity per rotation of its chain: ω × (p − pivot)
            cols[d], jx[d], jz[d], jw[d] = 2 + a, -(pz - origin[a, 1]), px - origin[a, 0], 1.0
            d += 1
            a = parent[a]
        vx, vz = 0.0, 0.0
        for i in range(d):
            vx += jx[i] * v[cols[i]]
            vz += jz[i] * v[cols[i]]
            for j in range(d):
                M[cols[i], cols[j]] += mass[b] * (jx[i] * jx[j] + jz[i] * jz[j]) + inertia[b] * jw[i] * jw[j]
        # acceleration of the COM at q̈ = 0: Σ_a q̇_a ω × (v_com − v_pivot_a) over its chain
        ax, az = 0.0, 0.0
        for i in range(2, d):
            a = cols[i] - 2
            ax -= v[cols[i]] * (vz - pivot_v[a, 1])
            az += v[cols[i]] * (vx - pivot_v[a, 0])
        for i in range(d):
            k[cols[i]] -= mass[b] * (jx[i] * ax + jz[i] * (az + gravity))
    return M, k
