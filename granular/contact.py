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
from .multibody import place


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
    ca, sa = np.cos(angle[feet.bodies]), np.sin(angle[feet.bodies])
    axis = np.stack([ca * feet.axis[:, 0] - sa * feet.axis[:, 1], sa * feet.axis[:, 0] + ca * feet.axis[:, 1]], 1)
    _, normal, d = terrain.closest(p_center)
    phi = np.clip(np.arctan2(cross2(normal, axis), np.einsum("nd,nd->n", normal, axis)), -np.pi / 2, np.pi / 2)
    theta = np.column_stack([d, phi])
    # Into F_c's axes: rows of Rᵀ are the tangent t = (n_z, −n_x) and n.
    Rt = np.stack([np.stack([normal[:, 1], -normal[:, 0]], 1), normal], 1)
    Jt = Jr.copy()
    Jt[:, :2] = Rt @ Jr[:, :2]
    return ContactFrames(theta, d < 0, p_center, normal, Jt, Jp)
