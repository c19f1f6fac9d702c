"""Frames and sign conventions in three dimensions, written down once (the planar ones: :mod:`granular.frames`).

World frame F_G: right-handed, z up. Wrenches w = (f_x, f_y, f_z, τ_x, τ_y, τ_z) in N and N·m;
twists v = (v_x, v_y, v_z, ω_x, ω_y, ω_z) in m/s and rad/s; w·v is power in W.

Foot: a body of revolution about its axis (the planar project's cylinder; a sphere; a capsule's
end). θ = (d, φ): φ the tilt of the axis from the surface normal, as in the plane; d the height of
the foot's *lowest point* above the surface (negative below): a cylinder's bottom rim, R sin|φ|
below p_center (:func:`granular.frames.center_height`), as for the planar θ: a tilted foot is in
contact as soon as its edge is buried, and d = 0 means no contact at every tilt (so a dataset's zero surface row is right for every φ). Because the foot is symmetric about its axis and
the medium about the vertical, the azimuth of the tilt carries no information: wrench spaces are
learned in the foot's *tilt frame* F_c3, z along the surface normal, x the horizontal direction
the tilt is measured in (the axis p_center → p_r points along (−sin φ, 0, cos φ) in F_c3), y = z × x.
A wrench or twist in the surface frame is rotated by −ψ about z into F_c3 (ψ the azimuth of the
tilt's x axis) and rotated back by ψ (:func:`azimuth_rotation`). For an upright foot (φ = 0) ψ
is arbitrary: any choice gives the same wrench space.

The planar frame is the x–z slice of F_c3. Right-handedness puts y *into* the planar drawing (x
to the right, z up), so the planar counter-clockwise angle, rate and torque are rotations about
−y: planar (f_x, f_z, τ) ↔ (f_x, 0, f_z, 0, −τ, 0), and twists alike (:data:`SLICE`).

Mirror symmetries of a foot of revolution in a level medium:

- y → −y (θ unchanged): :data:`MIRROR_Y` on twists and wrenches alike. A reflection maps a polar
  vector (force, velocity) by R and an axial one (torque, angular velocity) by det(R)·R = −R.
- x → −x with φ → −φ: :data:`MIRROR_X`, whose x–z slice is the planar :data:`granular.frames.MIRROR`.
"""
from __future__ import annotations

import numpy as np

#: y → −y on twists and wrenches: polar components (x, y, z) by diag(1, −1, 1), axial by −diag(1, −1, 1).
MIRROR_Y = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
#: x → −x (with φ → −φ) on twists and wrenches.
MIRROR_X = np.array([-1.0, 1.0, 1.0, 1.0, -1.0, -1.0])
#: SLICE (6, 3): a planar twist or wrench u (x, z, angular) is SLICE @ u in 3D; SLICE.T maps back.
SLICE = np.zeros((6, 3))
SLICE[0, 0], SLICE[2, 1], SLICE[4, 2] = 1.0, 1.0, -1.0


def to_3d(planar) -> np.ndarray:
    """Planar twists or wrenches (…, 3) as 3D ones (…, 6) in the x–z slice."""
    return np.asarray(planar, dtype=float) @ SLICE.T


def to_planar(spatial) -> np.ndarray:
    """The x–z slice (…, 3) of 3D twists or wrenches (…, 6); the out-of-plane components are dropped."""
    return np.asarray(spatial, dtype=float) @ SLICE


def azimuth_rotation(psi) -> np.ndarray:
    """(…, 6, 6) block-diagonal rotation by ``psi`` about z, for twists and wrenches: a vector in
    F_c3 rotated by ψ is the same vector in a frame whose x axis is at azimuth ψ."""
    psi = np.asarray(psi, dtype=float)
    c, s = np.cos(psi), np.sin(psi)
    R = np.zeros(psi.shape + (6, 6))
    for k in (0, 3):
        R[..., k, k], R[..., k, k + 1], R[..., k + 1, k], R[..., k + 1, k + 1] = c, -s, s, c
        R[..., k + 2, k + 2] = 1.0
    return R


def tilt_frame(axis) -> tuple[float, float]:
    """(φ, ψ) of a foot whose axis (p_center → p_r) is the unit vector ``axis`` in a frame with z
    along the surface normal: the tilt φ ∈ [0, π] from the normal and the azimuth ψ of F_c3's x axis,
    the horizontal direction opposite to the axis' lean (ψ = 0 for an upright foot)."""
    a = np.asarray(axis, dtype=float)
    horizontal = np.hypot(a[0], a[1])
    phi = float(np.arctan2(horizontal, a[2]))
    psi = float(np.arctan2(-a[1], -a[0])) if horizontal > 1e-12 else 0.0
    return phi, psi


def foot_axis(phi) -> np.ndarray:
    """Unit vector(s) (…, 3) of the foot's axis (p_center → p_r) in its tilt frame F_c3 for tilt(s) φ:
    (−sin φ, 0, cos φ), the planar :func:`granular.frames.foot_axis` in the x–z slice."""
    phi = np.asarray(phi, dtype=float)
    return np.stack([-np.sin(phi), np.zeros_like(phi), np.cos(phi)], axis=-1)


def pitch(R) -> float:
    """The planar pitch of a body whose rotation (world from body) is R (3, 3): the angle of its x
    axis above the horizontal, counter-clockwise about −y as in the plane, whatever its yaw."""
    R = np.asarray(R, dtype=float).reshape(3, 3)
    return float(np.arctan2(R[2, 0], np.hypot(R[2, 1], R[2, 2])))


def cross(r, f) -> np.ndarray:
    """r × f for (…, 3) arrays."""
    return np.cross(np.asarray(r, dtype=float), np.asarray(f, dtype=float))


def point_velocity(twist, r) -> np.ndarray:
    """Velocity (…, 3) of points at offsets ``r`` (…, 3) from the twist's reference point: v + ω × r."""
    twist = np.asarray(twist, dtype=float)
    return twist[..., :3] + cross(twist[..., 3:], r)


def wrench_about(forces, points, origin) -> np.ndarray:
    """The total wrench (6,) about ``origin`` of forces (…, 3) applied at ``points`` (…, 3)."""
    f = np.asarray(forces, dtype=float).reshape(-1, 3)
    r = np.asarray(points, dtype=float).reshape(-1, 3) - np.asarray(origin, dtype=float)
    return np.concatenate([f.sum(axis=0), cross(r, f).sum(axis=0)])
