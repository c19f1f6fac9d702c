"""Frames and sign conventions, written down once for the whole project.

World frame F_G: planar, x forward (to the right when drawn), z up. Units are SI.

Angles, angular velocities and torques are positive counter-clockwise in the
x–z plane as drawn with x to the right and z up (about the axis pointing out
of the page, towards the viewer). The planar cross product is therefore
r × f = r_x f_z − r_z f_x, and a body turning at ω moves a point at offset r
with velocity ω (−r_z, r_x).

A wrench is w = (f_x, f_z, τ) in N, N, N·m; a twist is v = (v_x, v_z, ω) in
m/s, m/s, rad/s. Their product w·v is power, in W.

Foot (Zhu et al. 2019, §III-A, Fig. 2): a cylinder whose axis runs from
p_center (centre of the flat bottom plate) towards p_r, which lies on the axis
a distance ``r_offset`` (0.25 m) above p_center. Torques of the medium on the
foot are measured about p_r. A foot tipped past lying flat is taken end for end: p_center is then
its far end and the axis reversed (:mod:`granular.contact.detection`).

Contact frames (paper §III-A): F_c sits at p_c, the surface point closest to
p_center, with z along the outward surface normal and x along the surface
tangent (the world x direction rotated with the surface). F_r has F_c's
orientation and its origin at p_r.

Configuration θ = (d, φ): d is the signed height of the foot's *lowest point*
above the surface along F_c's z (negative below: the foot is in contact
exactly when d < 0); φ is the tilt of the foot axis from the surface normal,
counter-clockwise positive, so the axis points along (−sin φ, cos φ) in F_c.
The lowest point is the bottom plate's lower rim, R |sin φ| below p_center
(|φ| ≤ π/2: a foot tipped further is taken end for end), so a tilted foot is in
contact as soon as its edge is buried (issue 49; :func:`center_height`). The
3D θ is measured the same way (:mod:`granular.frames3d`). Datasets written
before this convention (no ``depth_at`` attribute) measured d at p_center and are
converted when read (:mod:`granular.data.dataset`).

Velocity directions (datasets) are twists of the foot in F_c: the velocity of
p_center and the tilt rate φ̇.

Mirror symmetry x → −x maps (d, φ) to (d, −φ), a twist (v_x, v_z, ω) to
(−v_x, v_z, −ω) and a wrench (f_x, f_z, τ) to (−f_x, f_z, −τ).
"""
from __future__ import annotations

import numpy as np

#: Diagonal of the mirror map x → −x, for wrenches and twists alike.
MIRROR = np.array([-1.0, 1.0, -1.0])


def center_height(d, phi, radius):
    """p_center's height above the surface for θ = (d, φ) of a foot of radius ``radius``: d is the
    lowest point's, the bottom plate's rim R |sin φ| below p_center (arrays broadcast)."""
    return np.asarray(d, dtype=float) + np.asarray(radius, dtype=float) * np.abs(np.sin(phi))


def lowest_height(height, phi, radius):
    """θ's d from p_center's height above the surface: the inverse of :func:`center_height`."""
    return np.asarray(height, dtype=float) - np.asarray(radius, dtype=float) * np.abs(np.sin(phi))


def foot_axis(phi):
    """Unit vector(s) of the foot axis (p_center → p_r) in F_c for tilt ``phi``."""
    phi = np.asarray(phi, dtype=float)
    return np.stack([-np.sin(phi), np.cos(phi)], axis=-1)


def center_slip(twist_r, r_offset, phi):
    """Per foot, p_center − p_r (k, 2) for p_r ``r_offset`` (k,) up the axis at tilt ``phi`` (k,),
    and the slip (k,) of p_center along x for twists of p_r (k, 3): v_x − ω (p_center − p_r)_z."""
    arm = -np.asarray(r_offset, dtype=float).reshape(-1)[:, None] * foot_axis(np.asarray(phi, dtype=float).reshape(-1))
    twist_r = np.asarray(twist_r, dtype=float).reshape(-1, 3)
    return arm, twist_r[:, 0] - twist_r[:, 2] * arm[:, 1]


def cross2(r, f):
    """Planar cross product r × f = r_x f_z − r_z f_x (counter-clockwise positive)."""
    r = np.asarray(r, dtype=float)
    f = np.asarray(f, dtype=float)
    return r[..., 0] * f[..., 1] - r[..., 1] * f[..., 0]


def point_velocity(twist, r):
    """Velocity of points at offsets ``r`` (…, 2) of a body moving with ``twist``."""
    twist = np.asarray(twist, dtype=float)
    r = np.asarray(r, dtype=float)
    omega = twist[..., 2:3]
    return twist[..., :2] + omega * np.stack([-r[..., 1], r[..., 0]], axis=-1)


def twist_at(twist, r):
    """The same planar twist (v_x, v_z, ω) seen at a point offset ``r`` (…, 2) from where it is given:
    (v + ω × r, ω)."""
    twist = np.asarray(twist, dtype=float)
    return np.concatenate([point_velocity(twist, r), twist[..., 2:]], axis=-1)


def twist_transfer(r):
    """T (…, 3, 3) with twist_at(v, r) = T v: the linear form of :func:`twist_at`."""
    r = np.asarray(r, dtype=float)
    T = np.zeros(r.shape[:-1] + (3, 3)) + np.eye(3)
    T[..., 0, 2], T[..., 1, 2] = -r[..., 1], r[..., 0]
    return T
