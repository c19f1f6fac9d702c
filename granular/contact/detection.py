"""Contact detection: for each foot, its configuration θ and Jacobians (Zhu et al. 2019, §III-C).

For a foot attached to a body: p_center and the foot axis in world
coordinates; p_c, the closest surface point, and its outward normal n; the
configuration θ = (d, φ) with φ the axis tilt from n, clamped to [−π/2, π/2], and d the signed
height along n of the foot's lowest point, the bottom plate's rim R |sin φ| below p_center
(:mod:`granular.frames`); the foot is in contact when d < 0, so a tilted foot from the moment its
edge is buried. The deeper end of the cylinder meets the medium: a foot tipped past lying
flat (its far end, p_center + length × axis, below its plate) is taken end for end (p_center at the
far end, the axis reversed, p_r r_offset up the reversed axis), so that a tipped foot comes to rest
on the surface instead of turning through it (the paper's Fig. 9b object "tips over and eventually
stops"). The switch is not smoothed: W(d, ±π/2) seen from either end is the same only as far as the
data are symmetric end for end. A round foot (``roll_radius`` r > 0, the passive
walker's arc feet) touches at O − r n, O being its arc's centre: there d is O's
height less r, the foot's axis follows n (φ = 0) and the Jacobians are those
of the body point at O − r n. J_t maps generalized velocities to the foot's twist
at p_r in F_c's axes (the frame W(θ) is learned in), so a wrench w in F_r acts
as the generalized force J_tᵀ w, and J_p gives the twist at p_center (for the
kinetic energy of the dragged grains).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from granular.compiled import kernel

from granular.foot import Foot
from granular.dynamics.multibody import _jacobians
from granular.dynamics.terrain import closest


@dataclass(frozen=True)
class FootContact:
    """A foot on a body: p_center and the axis direction in the body's frame; M_g the grains' mass matrix."""

    name: str
    body: int
    p_center: tuple = (0.0, 0.0)
    axis: tuple = (0.0, 1.0)
    foot: Foot = Foot()
    grain_mass: tuple = (14.714, 14.714, 0.122)
    roll_radius: float = 0.0   # > 0: a round foot of this radius (m) centred at p_center


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
        far = pc + np.array([f.foot.length for f in c])[:, None] * axis
        set_(self, "points", np.vstack([pc, pr, far]))  # p_center of every foot, then p_r, then the far end
        set_(self, "r_offset", np.array([f.foot.r_offset for f in c], dtype=float))
        # a round foot touches at one point of its arc: its lowest point is that point
        set_(self, "radius", np.array([0.0 if f.roll_radius > 0 else f.foot.radius for f in c], dtype=float))
        set_(self, "roll_radius", np.array([f.roll_radius for f in c], dtype=float))
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
    theta, p_center, normal, Jt, Jp = _detect(angle, origin, mb.chain, feet.bodies, feet.points, feet.axis,
                                              feet.roll_radius, feet.r_offset, feet.radius, *terrain.arrays)
    return ContactFrames(theta, theta[:, 0] < 0, p_center, normal, Jt, Jp)


@kernel("f8[::1], f8[:, ::1], f8[:, ::1], i8[::1], f8[:, ::1], f8[:, ::1], f8[::1], f8[::1], f8[::1]",  # frames, feet
        "f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[::1], f8[::1]")  # terrain segments
def _detect(angle, origin, chain, bodies, given, axis_local, roll, r_offset, radius, ta, tt, tn, tlo, thi):
    N = len(bodies)
    ends = np.empty((2 * N, 2))  # p_center of every foot, then its far end
    axis = np.empty((N, 2))
    for i in range(N):
        c, s = np.cos(angle[bodies[i]]), np.sin(angle[bodies[i]])
        o = origin[bodies[i]]
        for k, row in ((i, i), (N + i, 2 * N + i)):
            ends[k, 0] = o[0] + c * given[row, 0] - s * given[row, 1]
            ends[k, 1] = o[1] + s * given[row, 0] + c * given[row, 1]
        axis[i, 0] = c * axis_local[i, 0] - s * axis_local[i, 1]
        axis[i, 1] = s * axis_local[i, 0] + c * axis_local[i, 1]
    _, normals, heights = closest(ends, ta, tt, tn, tlo, thi)
    p_center, normal, height = ends[:N], normals[:N], heights[:N]  # views: the far ends' rows stay as found
    points = given[:2 * N].copy()  # p_center and p_r in their bodies' frames, per foot
    for i in range(N):
        if roll[i] > 0:  # the round foot touches at O − r n and stands along n
            height[i] -= roll[i]
            axis[i, 0], axis[i, 1] = normal[i, 0], normal[i, 1]
            c, s = np.cos(angle[bodies[i]]), np.sin(angle[bodies[i]])
            o = origin[bodies[i]]
            for k, up in ((i, -roll[i]), (N + i, r_offset[i] - roll[i])):
                px, pz = p_center[i, 0] + up * normal[i, 0] - o[0], p_center[i, 1] + up * normal[i, 1] - o[1]
                points[k, 0], points[k, 1] = c * px + s * pz, -s * px + c * pz
            p_center[i, 0] -= roll[i] * normal[i, 0]
            p_center[i, 1] -= roll[i] * normal[i, 1]
        elif heights[N + i] < height[i]:  # tipped past lying flat: the far end leads (module docstring)
            p_center[i, 0], p_center[i, 1] = ends[N + i, 0], ends[N + i, 1]
            normal[i, 0], normal[i, 1], height[i] = normals[N + i, 0], normals[N + i, 1], heights[N + i]
            axis[i, 0], axis[i, 1] = -axis[i, 0], -axis[i, 1]
            for j in range(2):
                points[i, j] = given[2 * N + i, j]
                points[N + i, j] = given[2 * N + i, j] - r_offset[i] * axis_local[i, j]
    J = _jacobians(angle, origin, chain, np.concatenate((bodies, bodies)), points)
    Jp, Jr = J[:N], J[N:]
    theta = np.empty((N, 2))
    Jt = Jr.copy()
    for i in range(N):
        nx, nz = normal[i, 0], normal[i, 1]
        phi = np.arctan2(nx * axis[i, 1] - nz * axis[i, 0], nx * axis[i, 0] + nz * axis[i, 1])
        theta[i, 1] = min(max(phi, -np.pi / 2), np.pi / 2)
        theta[i, 0] = height[i] - radius[i] * abs(np.sin(theta[i, 1]))  # frames.lowest_height
        # into F_c's axes: x along the tangent t = (n_z, −n_x), z along n (in a loop: as array
        # expressions each row was a temporary array, 8 of this function's 18 allocations for 4 feet)
        for j in range(Jt.shape[2]):
            Jt[i, 0, j] = nz * Jr[i, 0, j] - nx * Jr[i, 1, j]
            Jt[i, 1, j] = nx * Jr[i, 0, j] + nz * Jr[i, 1, j]
    return theta, p_center, normal, Jt, Jp


#: Steps within which a foot ahead must have come through the surface to count as landing.
LANDING_STEPS = 3


def leading(frames: ContactFrames, v, holder: int, margin: float, dt: float) -> int:
    """The passive walker's swing rule (Zheng & Wang §3.3: a swing leg feels no contact force, so
    that it does not scratch the floor as it passes the stance leg): one foot bears the load. The
    foot ``holder`` that bore it keeps it, unless a foot more than ``margin`` (m) ahead of it (+x)
    came through the surface within the last ``LANDING_STEPS`` steps (of dt, s; an impact on a stiff
    floor may take more than one): that foot has struck and takes over. The swing foot dipping
    through the floor beside the stance foot never does: it entered beside it, not ahead. While the
    holder is off the floor, only a foot landing anywhere takes over; with no holder yet, the
    foremost foot in contact. Returns the foot (−1: none yet); the caller keeps it in the state, and
    only it bears load, while it is in contact."""
    on = np.flatnonzero(frames.active)
    if holder < 0:
        return int(on[np.argmax(frames.p_center[on, 0])]) if len(on) else -1
    grounded = frames.active[holder]
    for i in on:
        if i != holder and (not grounded or frames.p_center[i, 0] - frames.p_center[holder, 0] > margin):
            sink = (frames.Jp[i, :2] @ v) @ frames.normal[i]
            if frames.theta[i, 0] - LANDING_STEPS * dt * sink >= 0:
                return int(i)
    return holder
