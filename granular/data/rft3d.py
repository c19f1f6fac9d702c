"""3D resistive force theory (3D-RFT) for the cylindrical foot: a synthetic six-axis wrench source.

Frames. F_c3 is right-handed, z up (the surface normal), x the horizontal direction the tilt is
measured in, y = z × x. Drawn as the planar frame of :mod:`granular.frames` (x right, z up), y points
*into* the drawing, so the planar counter-clockwise sense is a rotation about −y. θ = (d, φ): d is the
height of the foot's lowest point (the bottom disc's rim, R sin|φ| below p_center, the disc's
centre) above the surface at z = 0 (negative: below; :func:`center_height`), φ the tilt; the axis p_center → p_r points along (−sin φ, 0, cos φ), so that the x–z slice is the planar
frame. Twists (v_x, v_y, v_z, ω_x, ω_y, ω_z) are of p_center in F_c3 (m/s, rad/s); wrenches
(f_x, f_y, f_z, τ_x, τ_y, τ_z) in N and N·m, the torque about p_r. Planar (f_x, f_z, τ) ↔
(f_x, 0, f_z, 0, −τ, 0) and planar (v_x, v_z, ω) ↔ (v_x, 0, v_z, 0, −ω, 0) (:func:`granular.frames3d.to_3d`,
:func:`granular.frames3d.to_planar`). The mirror y → −y maps a twist and a wrench alike by :data:`granular.frames3d.MIRROR_Y`: velocity
and force are vectors (their y flips), angular velocity and torque axial vectors (a reflection flips
the two components parallel to the mirror plane, x and z).

Which 3D-RFT. Agarwal, Goldman & Kamrin, PNAS 120 (2023) e2214017120, derive the general form allowed
by symmetry, α = f1 n + f2 v̂ + f3 ẑ with f_i cubics in three angle cosines, but fit the cubics to
reference data of their own and scale them by ξ_n (grain density, friction): that law cannot take Li
et al.'s coefficients or this project's drag factor κ. Treers, Cao & Stuart, IEEE RA-L 6(2) (2021),
"Granular resistive force theory implementation for three-dimensional trajectories" (DOI
10.1109/LRA.2021.3057052), build 3D stresses from Li et al.'s planar α, so theirs is the law used here
(:func:`stress_per_depth`). Both are symmetric under rotation about the vertical and under mirrors.
Like the planar :mod:`granular.data.rft` it is quasi-static and rate-independent, and adds no surface
friction beyond what α contains (the PNAS law caps tangential stress by a surface friction; not here).

On planar motions the x–z slice has the planar model's signs and trends but not its size: the planar
foot is the outline extruded by πR/2, while a cylinder's side presents 2R to a horizontal motion and
its wall elements meet the medium obliquely. For translations the drag is 1.1–1.3 × planar and the
lift 1.0–1.05 × (the bottom discs have equal areas); rotations differ more, in size and in the sign of
small components (a rotation about p_center drags the cylinder's sides, which the slab lacks).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from granular import frames
from granular.data import rft
from granular.errors import GranularError
from granular.foot import Foot
from granular.frames3d import foot_axis

#: Treers et al. 2021's fitted scalings (their code release, granular_rft_3D): the out-of-plane part is
#: scaled by f1(s) ∝ tanh(a s − b) + tanh(b), the in-plane part by f23(c) ∝ artanh(a c − b) + artanh(b),
#: each normalised to 1 for a motion wholly of its kind (and 0 for none).
F1_FIT = (3.6226, 1.6091)
F23_FIT = (1.6115, 0.9737)

#: sin 2.6°: how level a plate (|n_h| / |n_z|) blends into the level plate's convention (e2 along the
#: velocity's heading), as exp(−(|n_h| / (HORIZONTAL |n_z|))²): Treers et al. switch there at once.
HORIZONTAL = float(np.sin(np.radians(2.6)))

#: Default discretisation: azimuthal sectors, and Gauss–Legendre nodes on each sector's buried, leading
#: part (:func:`foot_wrench`). Doubling both moves forces and torques by < 0.1 % for translations and
#: < 1 % for twists mixing rotation at the media's velocity scale (tests/test_rft3d.py): what is left is
#: rotation, whose leading edge crosses sectors and whose stress turns fast near the rotation axis.
SECTORS = 48
NODES = 4


def _scale(x, fit, inverse):
    """Treers et al.'s sigmoid (:data:`F1_FIT`, :data:`F23_FIT`) at x ∈ [0, 1]: 0 at 0, 1 at 1."""
    a, b = fit
    f = np.arctanh if inverse else np.tanh
    return (f(a * x - b) + f(b)) / (f(a - b) + f(b))


def stress_per_depth(normal, velocity, zeta: float, coeffs=rft.GENERIC):
    """3D-RFT stress per unit depth (…, 3), N/m³, on elements with outward unit ``normal`` moving at
    ``velocity`` (both (…, 3), broadcast, z up); the stress is this times the depth (m).

    Treers, Cao & Stuart, RA-L 2021 (equation numbers not checked: their text was not at hand; the
    decomposition follows the authors' code release): e2 is the horizontal direction of the normal and
    e1 = e2 × ẑ the horizontal direction lying in the element. The unit velocity splits into v1 = v̂·e1
    (sliding along the element, out of the plane (e2, ẑ)) and v̂23 in that plane. In the plane, the
    element is Li et al.'s plate: α_x, α_z of Li, Zhang & Goldman, Science 2013, eq. (2), at the
    plate's angle β and the angle γ of v̂23 below the horizontal, mirrored for motions against e2
    exactly as :func:`granular.data.rft.foot_wrench` does. Out of the plane it drags by
    α_y = α_x(β = 0, γ = 0), the plate sliding in its own plane. Then
    α = f23(|v̂23|) (−α_x e2 + α_z ẑ) − f1(|v1|) α_y sign(v1) e1, and, as Li et al.'s eq. (1) and
    :mod:`granular.data.rft`, the stress per depth is ζ α × :data:`~granular.data.rft.N_PER_CM3`.
    ``coeffs`` is a coefficient set as :func:`granular.data.rft.alpha` takes (so a medium's drag
    factor κ scales α_x and α_y alike).

    Conventions: only leading elements (n·v > 0) resist; an element moving exactly in its own plane
    (|n·v̂| ≤ 1e-9) counts half, as in the planar :mod:`granular.data.rft` (a medium on one side only).
    A wall with a horizontal normal needs no special case: e2 = n, it is a vertical plate (β = π/2,
    the same plate as −π/2: Li's α is π-periodic in β), and nothing jumps as n crosses the horizontal
    (the PNAS 2023 fit folds n into the upper half-space and does jump there). A horizontal plate has no e2 of its
    own; it takes the horizontal direction of its velocity (Treers' own edge case, which they apply
    below about 2.6° of tilt; x if the velocity is vertical). That keeps an upright foot symmetric
    about the vertical. Switched at once, a plate tilted by any amount, sliding sideways along e1,
    would lose Li's sliding lift α_z(0, 0), and the foot's wrench would jump at φ = 0 for motions
    with v_y ≠ 0 (f_z 116 N upright, 9 N at φ = 1e-6, sand at 6 cm); here the two conventions are
    blended by the plate's levelness (:data:`HORIZONTAL`), so the wrench is continuous in φ.
    """
    n, v = np.broadcast_arrays(np.asarray(normal, dtype=float), np.asarray(velocity, dtype=float))
    # contiguous components: element-wise arithmetic on them is several times faster than on (…, 3)
    (nx, ny, nz), (vx, vy, vz) = np.ascontiguousarray(np.moveaxis(n, -1, 0)), np.ascontiguousarray(
        np.moveaxis(v, -1, 0))
    speed = np.sqrt(vx * vx + vy * vy + vz * vz)
    ux, uy, uz = (c / np.where(speed > 0, speed, 1.0) for c in (vx, vy, vz))
    lead = nx * ux + ny * uy + nz * uz
    weight = np.where(np.abs(lead) <= 1e-9, 0.5, (lead > 0).astype(float)) * (speed > 0)

    nh, uh = np.sqrt(nx * nx + ny * ny), np.sqrt(ux * ux + uy * uy)
    plate, still = nh <= 1e-12, uh <= 1e-12
    nh_, uh_ = np.where(plate, 1.0, nh), np.where(still, 1.0, uh)
    hx, hy = np.where(still, 1.0, ux / uh_), np.where(still, 0.0, uy / uh_)  # the velocity's heading
    normal = _in_plane(nx, ny, nz, ux, uy, uz, np.where(plate, hx, nx / nh_), np.where(plate, hy, ny / nh_), coeffs)
    # A nearly level plate blends into the level plate's convention over a few degrees (HORIZONTAL),
    # so that the foot's wrench is continuous in its tilt (Treers et al. switch at 2.6°).
    w = np.exp(-np.square(np.minimum(nh / np.maximum(HORIZONTAL * np.abs(nz), 1e-300), 40.0)))
    heading = _in_plane(nx, ny, nz, ux, uy, uz, hx, hy, coeffs)
    return (zeta * rft.N_PER_CM3 * weight)[..., None] * (w[..., None] * heading + (1 - w)[..., None] * normal)


def _in_plane(nx, ny, nz, ux, uy, uz, ex, ey, coeffs):
    """Treers' decomposition with e2 = (ex, ey, 0) (see :func:`stress_per_depth`): α (…, 3) for ζ = 1,
    in N/cm³, before the leading-element weight."""
    v1 = ux * ey - uy * ex  # along e1 = (e_y, −e_x, 0)
    along = ux * ex + uy * ey  # v̂23 in the plane (e2, ẑ): (along, u_z)
    # the plate's line has tangent ±(−n_z, n·e2); taking the sign with t_x ≥ 0 puts β in [−π/2, π/2]
    beta = np.arctan2(np.where(nz > 0, -1.0, 1.0) * (nx * ex + ny * ey), np.abs(nz))
    flip = np.where(along < 0, -1.0, 1.0)
    a_z, a_x = rft.alpha(flip * beta, np.arctan2(-uz, np.abs(along)), coeffs)
    a_y = rft.alpha(0.0, 0.0, coeffs)[1]
    f23 = _scale(np.minimum(np.sqrt(along * along + uz * uz), 1.0), F23_FIT, inverse=True)
    f1 = _scale(np.abs(v1), F1_FIT, inverse=False)
    h = -f23 * flip * a_x  # along e2
    s = -f1 * a_y * np.sign(v1)  # along e1
    return np.stack([h * ex + s * ey, h * ey - s * ex, f23 * a_z], axis=-1)


def center_height(foot: Foot, theta) -> float:
    """p_center's height above the surface for a 3D θ = (d, φ), d being the lowest point's: the
    bottom disc's rim lies R sin|φ| below its centre (|φ| ≤ π/2; a foot tipped further is taken end
    for end, :mod:`granular.frames3d`)."""
    return float(frames.center_height(theta[0], theta[1], foot.radius))


@lru_cache
def _gauss(nodes: int):
    return np.polynomial.legendre.leggauss(nodes)


def _buried(z0, z1):
    """Fractions [lo, hi] of segments, running linearly from height z0 to z1, that lie below z = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = z0 / (z0 - z1)
    lo = np.where(z1 < z0, cross, 0.0)
    hi = np.where(z1 > z0, cross, np.where((z1 < z0) | (z0 < 0), 1.0, 0.0))
    lo, hi = np.clip(lo, 0.0, 1.0), np.clip(hi, 0.0, 1.0)
    return lo, np.maximum(hi, lo)


def _segments(foot: Foot, d: float, phi: float, t):
    """The foot's surface as straight segments along which depth and n·v (rigid motion, flat normal)
    are linear: bottom disc, top disc and side wall, each cut into azimuthal sectors centred at ``t``
    (k, S), a radius of a disc or a line along the wall. Returns (k, M, …) arrays, relative to
    p_center in F_c3, for the surfaces that reach below z = 0: starts, unit directions, lengths,
    outward normals, whether the width grows with the distance along (a disc's radius) and the
    buried fractions [lo, hi] of each segment."""
    axis, side = foot_axis(phi), np.array([np.cos(phi), 0.0, np.sin(phi)])  # side × ŷ = axis: right-handed
    radial = np.cos(t)[..., None] * side + np.sin(t)[..., None] * np.array([0.0, 1.0, 0.0])
    r, length, zero = foot.radius, foot.length, 0 * radial
    out = []
    for start, direction, span, normal, disc in ((zero, radial, r, zero - axis, True),
                                                 (zero + length * axis, radial, r, zero + axis, True),
                                                 (r * radial, zero + axis, length, radial, False)):
        z0 = d + start[..., 2]
        lo, hi = _buried(z0, z0 + span * direction[..., 2])
        if np.any(hi > lo):
            out.append((start, direction, np.full(t.shape, span), normal, np.full(t.shape, disc), lo, hi))
    return [np.concatenate(a, axis=1) for a in zip(*out)] if out else None


def _velocity(twists, points):
    """Velocities (k, …, 3) of ``points`` (k, …, 3) for twists (k, 6) of the origin."""
    shape = (len(twists),) + (1,) * (points.ndim - 2) + (3,)
    return twists[:, :3].reshape(shape) + np.cross(twists[:, 3:].reshape(shape), points)


def _sector_start(foot: Foot, d: float, phi: float, twists):
    """Per twist, an azimuth (k,) where the side wall stops leading at the middle of its buried
    length: sectors start there, so that the jump in stress falls between them, not inside one."""
    axis = foot_axis(phi)
    lo, hi = _buried(np.array(d), np.array(d + foot.length * axis[2]))
    v = _velocity(twists, np.broadcast_to(foot.length * (lo + hi) / 2 * axis, (len(twists), 3)))
    return np.arctan2(v[:, 1], v[:, 0] * np.cos(phi) + v[:, 2] * np.sin(phi)) + np.pi / 2


def foot_wrench(foot: Foot, theta, twists, zeta: float, coeffs=rft.GENERIC, sectors: int = SECTORS,
                nodes: int = NODES):
    """Quasi-static 3D-RFT resistance wrenches (k, 6) on the cylindrical foot at θ = (d, φ) for twists
    (k, 6) of p_center, both in F_c3 (module docstring): :func:`stress_per_depth` × depth × area
    integrated over the buried surface (depth = −z, the surface at z = 0), torques about p_r. In 3D,
    d is the height of the foot's lowest point, the bottom disc's rim R sin|φ| below p_center
    (:func:`center_height`), so that a tilted foot is in contact as soon as its edge is buried.

    Each segment of :func:`_segments` is integrated, per twist, over the part that is both buried and
    leading, found exactly (both are intervals), with ``nodes`` Gauss–Legendre nodes; the sectors are
    turned per twist so that a translation's leading edge on the wall falls between two of them.
    """
    twists = np.atleast_2d(np.asarray(twists, dtype=float))
    if twists.ndim != 2 or twists.shape[1] != 6:
        raise GranularError(f"3D twists must be (k, 6) arrays, got shape {twists.shape}")
    d, phi = center_height(foot, theta), float(theta[1])
    t = _sector_start(foot, d, phi, twists)[:, None] + 2 * np.pi * (np.arange(sectors) + 0.5) / sectors
    segments = _segments(foot, d, phi, t)
    if segments is None:
        return np.zeros((len(twists), 6))
    start, direction, span, normal, disc, lo, hi = segments
    v0, v1 = _velocity(twists, start), _velocity(twists, start + span[..., None] * direction)
    g0, g1 = np.einsum("kmi,kmi->km", v0, normal), np.einsum("kmi,kmi->km", v1, normal)
    lead_lo, lead_hi = _buried(-g0, -g1)  # where n·v > 0
    # a segment moving in its own plane keeps all of it (stress_per_depth weighs it half)
    parallel = np.maximum(np.abs(g0), np.abs(g1)) <= 1e-9 * np.sqrt(np.maximum(
        np.einsum("kmi,kmi->km", v0, v0), np.einsum("kmi,kmi->km", v1, v1)))
    lo = np.maximum(lo, np.where(parallel, 0.0, lead_lo))
    hi = np.maximum(np.minimum(hi, np.where(parallel, 1.0, lead_hi)), lo)

    k, m = np.nonzero(hi > lo)  # only (twist, segment) pairs with a buried, leading part
    start, direction, span, normal, disc, lo, hi = (a[k, m] for a in (start, direction, span, normal, disc, lo, hi))
    x, w = _gauss(nodes)
    sigma = span[:, None] * (lo[:, None] + (hi - lo)[:, None] * (x + 1) / 2)  # (pairs, nodes)
    width = np.where(disc[:, None], sigma, foot.radius)
    area = (2 * np.pi / sectors) * (span * (hi - lo))[:, None] * (w / 2) * width
    pos = start[:, None, :] + sigma[..., None] * direction[:, None, :]  # (pairs, nodes, 3)
    depth = np.maximum(0.0, -(d + pos[..., 2]))
    stress = stress_per_depth(normal[:, None, :], _velocity(twists[k], pos), zeta, coeffs)
    force = stress * (depth * area)[..., None]
    (ax, ay, az), (fx, fy, fz) = np.moveaxis(pos - foot.r_offset * foot_axis(phi), -1, 0), np.moveaxis(force, -1, 0)
    parts = (fx, fy, fz, ay * fz - az * fy, az * fx - ax * fz, ax * fy - ay * fx)  # torque about p_r
    return np.stack([np.bincount(k, c.sum(axis=1), minlength=len(twists)) for c in parts], axis=1)


def planar_comparison(medium: str = "sand"):
    """3D-RFT's x–z slice against the planar RFT (:mod:`granular.data.rft`) for planar motions of the
    shipped foot: rows (planar θ, twist name, planar (f_x, f_z, τ), 3D slice (f_x, f_z, −τ_y)), the
    3D foot at the same θ (d the lowest point's in both). They are different
    theories (the planar foot is extruded by πR/2; the cylinder's side presents 2R)."""
    from granular.data.media import medium as preset
    from granular.frames3d import to_3d, to_planar

    m, foot = preset(medium), Foot()
    s = np.asarray(m.velocity_scale, dtype=float)
    twists = {"down": (0, -1, 0), "horizontal": (1, 0, 0), "diagonal": (1 / np.sqrt(2), -1 / np.sqrt(2), 0),
              "rotation": (0, 0, 1)}
    rows = []
    for theta in ((-0.03, 0.0), (-0.06, 0.0), (-0.06, 0.3)):
        for name, u in twists.items():
            tw = np.asarray(u, dtype=float) * s
            flat = rft.foot_wrench(foot, theta, tw[None], m.zeta, m.coeffs)[0]
            spatial = to_planar(foot_wrench(foot, theta, to_3d(tw)[None], m.zeta, m.coeffs))[0]
            rows.append((theta, name, flat, spatial))
    return rows


if __name__ == "__main__":
    print("| θ (m, rad) | twist | planar RFT (f_x, f_z, τ) | 3D-RFT slice (f_x, f_z, −τ_y) |")
    print("|---|---|---|---|")
    for theta, name, flat, spatial in planar_comparison():
        print(f"| {theta[0]:g}, {theta[1]:g} | {name} | {', '.join(f'{x:.1f}' for x in flat)} | "
              f"{', '.join(f'{x:.1f}' for x in spatial)} |")
