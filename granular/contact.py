"""Contact detection: for each foot, its configuration θ and Jacobians (Zhu et al. 2019, §III-C).

For a foot attached to a body: p_center and the foot axis in world
coordinates; p_c, the closest surface point, and its outward normal n; the
configuration θ = (d, φ) with d the signed height of p_center above the
surface along n and φ the axis tilt from n, clamped to [−π/2, π/2]; the foot
is in contact when d < 0. J_t maps generalized velocities to the foot's twist
at p_r in F_c's axes (the frame W(θ) is learned in), so a wrench w in F_r acts
as the generalized force J_tᵀ w, and J_p gives the twist at p_center (for the
kinetic energy of the dragged grains).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .foot import Foot
from .frames import cross2
from .multibody import place, rotate


@dataclass(frozen=True)
class FootContact:
    """A foot on a body: p_center and the axis direction in the body's frame; M_g the grains' mass matrix."""

    name: str
    body: int
    p_center: tuple = (0.0, 0.0)
    axis: tuple = (0.0, 1.0)
    foot: Foot = Foot()
    grain_mass: tuple = (14.714, 14.714, 0.122)


@dataclass(frozen=True)
class Feet:
    """The feet of a model as arrays (built once)."""

    contacts: tuple

    def __post_init__(self):
        c = self.contacts
        axis = np.array([f.axis for f in c], dtype=float).reshape(-1, 2)
        axis /= np.linalg.norm(axis, axis=1, keepdims=True)
        pc = np.array([f.p_center for f in c], dtype=float).reshape(-1, 2)
        pr = pc + np.array([f.foot.r_offset for f in c])[:, None] * axis
        set_ = object.__setattr__
        set_(self, "bodies", np.array([f.body for f in c], dtype=int))
        set_(self, "axis", axis)
        set_(self, "points", np.vstack([pc, pr]))  # p_center of every foot, then p_r
        set_(self, "grain_mass", np.array([f.grain_mass for f in c], dtype=float).reshape(-1, 3))
        set_(self, "names", tuple(f.name for f in c))


@dataclass
class ContactFrames:
    """Per-foot quantities at one instant (arrays over feet)."""

    theta: np.ndarray       # (N, 2) [d, φ]
    active: np.ndarray      # (N,) d < 0
    p_center: np.ndarray    # (N, 2)
    normal: np.ndarray      # (N, 2)
    Jt: np.ndarray          # (N, 3, ndof): twist at p_r in F_c
    Jp: np.ndarray          # (N, 3, ndof): twist at p_center, world


def detect(mb, feet: Feet, terrain, frames) -> ContactFrames:
    """Contact configurations and Jacobians of all feet, given the bodies' frames (angle, origin)."""
    angle, origin = frames
    N = len(feet.bodies)
    both = np.concatenate([feet.bodies, feet.bodies])
    J = mb.jacobians(angle, origin, both, feet.points)
    Jp, Jr = J[:N], J[N:]
    p_center = place(angle[feet.bodies], origin[feet.bodies], feet.points[:N])
    axis = rotate(angle[feet.bodies], feet.axis)
    _, normal, d = terrain.closest(p_center)
    nx, nz = normal[:, 0:1], normal[:, 1:2]
    theta = np.empty((N, 2))
    theta[:, 0] = d
    theta[:, 1] = np.clip(np.arctan2(cross2(normal, axis), (normal * axis).sum(axis=1)), -np.pi / 2, np.pi / 2)
    # Into F_c's axes: x along the tangent t = (n_z, −n_x), z along n.
    Jt = Jr.copy()
    Jt[:, 0] = nz * Jr[:, 0] - nx * Jr[:, 1]
    Jt[:, 1] = nx * Jr[:, 0] + nz * Jr[:, 1]
    return ContactFrames(theta, d < 0, p_center, normal, Jt, Jp)
