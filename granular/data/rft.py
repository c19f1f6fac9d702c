"""Resistive force theory (RFT) for a planar foot: a synthetic wrench source.

Li, Zhang & Goldman, "A terradynamics of legged locomotion on granular media",
Science 339 (2013), eqs. (1)–(2) and Table S1: a surface element at depth |z|
moving through the medium feels the stress σ = ζ α(β, γ) |z|, and the force on
a body is the sum over its leading surface elements.

Angles of the canonical plate (``alpha``): β ∈ [−π/2, π/2] is the angle of the
plate's line from +x, counter-clockwise; γ ∈ [−π/2, π/2] the angle of its
velocity below the horizontal, the velocity having v_x ≥ 0 (γ = π/2: straight
down). α_z is the upward stress; α_x is the stress opposing the motion along x
(it acts along −x). A velocity with v_x < 0 is handled by mirroring.

The foot is the planar outline of :class:`granular.foot.Foot` (a rectangle
2R × L) extruded out of the plane by πR/2, so that the bottom plate has the
area πR² of the real disc. Only leading elements (outward normal against the
motion, n·v > 0) resist; elements moving exactly parallel to their surface
count half (so a wall sliding along its own plane, which has a medium on one
side only, gets half the stress of Li et al.'s plate, which had it on both).
Rate-independent: the wrench depends on the twist's direction only.
"""
from __future__ import annotations

import numpy as np

from granular.foot import Foot
from granular.frames import center_height, cross2, foot_axis, point_velocity

#: Generic coefficients (Li et al. 2013, Table S1), keyed (m, n); A, B give α_z,
#: C, D give α_x. Normalised so that α_z(0, π/2) = 1 N/cm³ when ζ = 1.
GENERIC = {
    "A": {(0, 0): 0.206, (1, 0): 0.169},
    "B": {(1, 1): 0.212, (0, 1): 0.358, (-1, 1): 0.055},
    "C": {(1, 1): -0.124, (0, 1): 0.253, (-1, 1): 0.007},
    "D": {(1, 0): 0.088},
}



def with_drag(coeffs: dict, kappa: float) -> dict:
    """A coefficient set whose horizontal stress α_x is κ times that of ``coeffs``; α_z unchanged.

    Li et al. 2013 fit one shape for all their media (ζ scales it); a medium whose
    grains resist shearing more than the generic medium's, at the same
    penetration resistance, has a larger α_x relative to α_z. Multiplying the
    α_x series (C and D, Li et al. eq. 2) by κ is the simplest such shape: every
    element's drag along x grows by κ, its lift does not. How κ is chosen for a
    medium is said where it is set (:mod:`granular.data.media`).
    """
    if not kappa > 0:
        raise ValueError(f"drag factor must be > 0, got {kappa!r}")
    return {"A": dict(coeffs["A"]), "B": dict(coeffs["B"]),
            "C": {k: kappa * v for k, v in coeffs["C"].items()},
            "D": {k: kappa * v for k, v in coeffs["D"].items()}}


#: α is tabulated in N/cm³ (stress in N/cm² per cm of depth); this makes it N/m³.
N_PER_CM3 = 1e6


def alpha(beta, gamma, coeffs=GENERIC):
    """Generic RFT stresses per unit depth (α_z, α_x) in N/cm³ for ζ = 1.

    Li et al. 2013, eq. (2): α_z = Σ A_mn cos p + B_mn sin p,
    α_x = Σ C_mn cos p + D_mn sin p, with p = 2mβ + nγ.
    """
    beta = np.asarray(beta, dtype=float)
    gamma = np.asarray(gamma, dtype=float)

    def series(cos_terms, sin_terms):
        total = np.zeros(np.broadcast(beta, gamma).shape)
        for (m, n), c in cos_terms.items():
            total = total + c * np.cos(2 * m * beta + n * gamma)
        for (m, n), c in sin_terms.items():
            total = total + c * np.sin(2 * m * beta + n * gamma)
        return total

    return series(coeffs["A"], coeffs["B"]), series(coeffs["C"], coeffs["D"])


def outline(foot: Foot, phi: float, per_edge: int = 40):
    """Elements of the foot's outline in F_c, relative to p_center.

    Returns midpoints (E, 2), unit outward normals (E, 2), unit tangents (E, 2)
    and lengths (E,), walking the rectangle counter-clockwise.
    """
    side = np.array([np.cos(phi), np.sin(phi)])
    axis = foot_axis(phi)
    r, length = foot.radius, foot.length
    corners = np.array([-r * side, r * side, r * side + length * axis, -r * side + length * axis])
    ends = np.roll(corners, -1, axis=0)
    t = (np.arange(per_edge) + 0.5) / per_edge
    mids = np.concatenate([a + np.outer(t, b - a) for a, b in zip(corners, ends)])
    edge = ends - corners
    lengths = np.repeat(np.linalg.norm(edge, axis=1) / per_edge, per_edge)
    tangents = np.repeat(edge / np.linalg.norm(edge, axis=1, keepdims=True), per_edge, axis=0)
    normals = np.stack([tangents[:, 1], -tangents[:, 0]], axis=1)
    return mids, normals, tangents, lengths


def foot_wrench(foot: Foot, theta, twists, zeta: float, coeffs=GENERIC, per_edge: int = 40):
    """Quasi-static RFT resistance wrenches (f_x, f_z, τ) in F_r, N and N·m.

    ``theta`` = (d, φ), d the lowest point's (:mod:`granular.frames`); ``twists`` (k, 3) are twists
    of the foot in F_c (velocity of p_center, tilt rate). Returns (k, 3).
    """
    phi = float(theta[1])
    d = float(center_height(theta[0], phi, foot.radius))
    mids, normals, tangents, lengths = outline(foot, phi, per_edge)
    return _wrench(mids, normals, tangents, lengths * (np.pi * foot.radius / 2), d, foot.p_r(phi), twists,
                   zeta, coeffs)


def rim(radius: float, elements: int = 240):
    """Elements of a wheel's rim in F_c, relative to its lowest point (p_center): midpoints,
    outward normals, counter-clockwise tangents and lengths, as :func:`outline`."""
    a = 2 * np.pi * (np.arange(elements) + 0.5) / elements
    normals = np.column_stack([np.cos(a), np.sin(a)])
    mids = radius * (normals + np.array([0.0, 1.0]))
    tangents = np.column_stack([-normals[:, 1], normals[:, 0]])
    return mids, normals, tangents, np.full(elements, 2 * np.pi * radius / elements)


def wheel_wrench(radius: float, width: float, theta, twists, zeta: float, coeffs=GENERIC):
    """RFT resistance wrenches (k, 3) on a rigid wheel of ``radius`` and ``width`` (m) at sinkage
    −θ[0], in F_r at its axle, to twists (k, 3) of its lowest rim point in F_c (the frames of
    :func:`granular.data.wheel.contact_wrench`): the same stresses summed over the rim's leading,
    buried elements, each of area (length × width)."""
    mids, normals, tangents, lengths = rim(radius)
    return _wrench(mids, normals, tangents, lengths * width, float(theta[0]), np.array([0.0, radius]), twists,
                   zeta, coeffs)


def _wrench(mids, normals, tangents, area, d, p_r, twists, zeta, coeffs):
    """Li et al.'s eq. (1) summed over a body's outline elements (midpoints relative to p_center,
    which lies d above the surface), as wrenches about p_r, one per twist of p_center."""
    twists = np.atleast_2d(np.asarray(twists, dtype=float))
    depth = np.maximum(0.0, -(d + mids[:, 1]))

    vel = point_velocity(twists[:, None, :], mids[None, :, :])  # (k, E, 2)
    speed = np.linalg.norm(vel, axis=-1)
    lead = np.einsum("ked,ed->ke", vel, normals)
    parallel = np.abs(lead) <= 1e-9 * np.maximum(speed, 1e-300)
    weight = np.where(parallel, 0.5, (lead > 0).astype(float)) * (speed > 0)

    beta = np.arctan2(tangents[:, 1], tangents[:, 0])
    beta = (beta + np.pi / 2) % np.pi - np.pi / 2  # a line's angle, in [−π/2, π/2)
    flip = np.where(vel[..., 0] < 0, -1.0, 1.0)
    gamma = np.arctan2(-vel[..., 1], np.abs(vel[..., 0]))
    a_z, a_x = alpha(flip * beta, gamma, coeffs)

    scale = zeta * N_PER_CM3 * depth * area * weight  # (k, E)
    forces = np.stack([-flip * a_x, a_z], axis=-1) * scale[..., None]
    torques = cross2((mids - p_r)[None, :, :], forces).sum(axis=1)
    return np.column_stack([forces.sum(axis=1), torques])
