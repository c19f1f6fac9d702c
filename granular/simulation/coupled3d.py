"""The MuJoCo coupling's compiled stages (:mod:`granular.simulation.mujoco3d` says what a step does
and why): each granular foot's frame and θ against the terrain, MuJoCo's effective mass and free
velocity, and the step's impulses, from W(θ) to the generalized impulse, in one call."""
from __future__ import annotations

import numpy as np
from granular.compiled import kernel

from granular.contact.step3d import UNSOLVED, contact_step
from granular.learning.linear import support_3d
from granular.wrench.flow import solve_into

CYLINDER, CAPSULE, SPHERE = 5, 3, 2  # mjtGeom ids of the foot shapes taken


@kernel("f8[:, ::1], f8[:, ::1], i8[::1], f8[::1], f8[::1], i8[::1], f8[::1], f8[::1]")
def foot_frames(xpos, xmat, geoms, half, radius, shape, xs, zs):
    """Per foot (geom ``geoms[k]``): θ (F, 2), the rotation (F, 3, 3) from F_c3 to world axes, p_center
    (F, 3) and the axis (F, 3) pointing up the foot, on the terrain through (xs, zs) (:class:`Ground`).
    p_center is the centre of the lower end face (a capsule's or sphere's lowest point, a sphere's
    axis taken along the surface normal); θ's d is the height of the foot's lowest point above the
    surface along its normal (a cylinder's bottom rim, R sin φ below p_center; a capsule's or
    sphere's, R (1 − cos φ)), φ the axis' tilt from the normal and ψ the azimuth of F_c3's x axis,
    opposite to the axis' lean (:func:`granular.frames3d.tilt_frame`), in a surface frame whose x is
    level across y (the world's axes on level ground)."""
    F = len(geoms)
    thetas, rotations = np.zeros((F, 2)), np.zeros((F, 3, 3))
    centers, axes = np.zeros((F, 3)), np.zeros((F, 3))
    S = np.empty((3, 3))  # the surface frame, columns x, y, n in world axes (scalars otherwise: no allocation a foot)
    for k in range(F):
        g = geoms[k]
        ax, ay, az = xmat[g, 2], xmat[g, 5], xmat[g, 8]
        if shape[k] == SPHERE:
            _, ax, az = _surface(xs, zs, xpos[g, 0])
            ay = 0.0
        elif az < 0.0:  # the lower end face is the foot's bottom: taken end for end
            ax, ay, az = -ax, -ay, -az
        px, py, pz = xpos[g, 0] - half[k] * ax, xpos[g, 1] - half[k] * ay, xpos[g, 2] - half[k] * az
        height, nx, nz = _surface(xs, zs, px)
        S[0, 0], S[1, 0], S[2, 0] = nz, 0.0, -nx  # (0, 1, 0) × n, n in the x–z plane (the identity on the level)
        S[0, 1], S[1, 1], S[2, 1] = 0.0, 1.0, 0.0  # n × x
        S[0, 2], S[1, 2], S[2, 2] = nx, 0.0, nz
        lx = S[0, 0] * ax + S[1, 0] * ay + S[2, 0] * az  # the axis in the surface frame, Sᵀ a
        ly = S[0, 1] * ax + S[1, 1] * ay + S[2, 1] * az
        lz = S[0, 2] * ax + S[1, 2] * ay + S[2, 2] * az
        horizontal = np.hypot(lx, ly)
        phi = np.arctan2(horizontal, lz)
        psi = np.arctan2(-ly, -lx) if horizontal > 1e-12 else 0.0
        c, s = np.cos(psi), np.sin(psi)
        for i in range(3):
            rotations[k, i, 0] = S[i, 0] * c + S[i, 1] * s
            rotations[k, i, 1] = -S[i, 0] * s + S[i, 1] * c
            rotations[k, i, 2] = S[i, 2]
        d = (pz - height) * nz
        d -= radius[k] * (np.sin(phi) if shape[k] == CYLINDER else 1.0 - np.cos(phi))
        thetas[k, 0], thetas[k, 1] = d, phi
        centers[k, 0], centers[k, 1], centers[k, 2] = px, py, pz
        axes[k, 0], axes[k, 1], axes[k, 2] = ax, ay, az
    return thetas, rotations, centers, axes


@kernel()
def _ground(xs, zs, x):
    """(height, unit normal (3,)) of the profile through (xs, zs) at x, extended along y."""
    height, nx, nz = _surface(xs, zs, x)
    return height, np.array([nx, 0.0, nz])


@kernel(inline=True)
def _surface(xs, zs, x):
    """(height, n_x, n_z) of the profile through (xs, zs) at x, extended along y (n_y = 0)."""
    i = 0
    while i < len(xs) - 2 and xs[i + 1] <= x:
        i += 1
    dx, dz = xs[i + 1] - xs[i], zs[i + 1] - zs[i]
    length = np.hypot(dx, dz)
    return zs[i] + (x - xs[i]) * dz / dx, -dz / length, dx / length


@kernel("f8[:, ::1], f8[::1], f8[::1], f8[:, ::1], f8[::1], f8[::1], f8, f8[::1], f8[::1], f8[::1], f8[::1], "
        "f8[::1], f8[::1]")
def free_motion(M, qacc, qvel, moment, ctrl, force, h, damping, gain, bias, low, high, limited):
    """(M̃, v_free): the effective mass M̃ = M − h D of MuJoCo's step, D = ∂f/∂v the derivative of the
    smooth forces it integrates implicitly (:func:`actuation`: −damping on the diagonal, and
    momentᵀ diag(gain ctrl + bias) moment over the actuators whose force is not clamped, as MuJoCo
    skips them), and the velocity the bodies reach without the medium, v_free = v + h M̃⁻¹ M qacc
    (MuJoCo's smooth acceleration, qacc = M⁻¹ f)."""
    nv, nu = len(qvel), len(ctrl)
    Mt = M.copy()
    for p in range(nv):
        Mt[p, p] += h * damping[p]
    for a in range(nu):
        if limited[a] != 0.0 and (force[a] <= low[a] or force[a] >= high[a]):
            continue
        k = h * (gain[a] * ctrl[a] + bias[a])
        if k == 0.0:
            continue
        for p in range(nv):
            if moment[a, p] != 0.0:
                for q in range(nv):
                    Mt[p, q] -= k * moment[a, p] * moment[a, q]
    rhs = M @ qacc
    A = Mt.copy()
    solve_into(A, rhs.reshape((nv, 1)))
    return Mt, qvel + h * rhs


@kernel()
def coupled(M, qacc, qvel, moment, ctrl, force, h, damping, gain, bias, low, high, limited, jac, rotations, thetas,
            r_offset, grain, bounds, phi_active, per_depth, centers, c2, kern, degree, coef, mirror, A, Kinv, KT, U,
            geometry, tail, law, steady, warm):
    """The step's impulses for the N feet in the medium, in one call: :func:`free_motion`'s M̃ and
    v_free; each foot's Jacobian J (6, nv) at p_center in F_c3 from MuJoCo's world-axes ``jac``
    (N, 6, nv) and the feet's ``rotations`` (N, 3, 3) F_c3 → world; W(θ) of every foot
    (:func:`~granular.learning.linear.support_3d` with the 3D model's arguments ``bounds`` … ``coef``
    and the fixed normals A); the contact law (:func:`~granular.contact.step3d.contact_step`, its
    ``Kinv``, ``KT``, ``U``, ``geometry``, ``tail``, ``law`` and ``warm``; ``steady``: the same feet were in the
    medium the step before, and data-flow's Newton starts from ``qvel``). Returns (v⁺, impulses (N, 6),
    sticking, status, the generalized impulse Σ J_rᵀ c (nv,))."""
    Mt, v_free = free_motion(M, qacc, qvel, moment, ctrl, force, h, damping, gain, bias, low, high, limited)
    N, nv = thetas.shape[0], len(qvel)
    J = np.zeros((N, 6, nv))
    arms, grains = np.zeros((N, 3)), np.zeros((N, 6))
    for n in range(N):
        for a in range(3):
            for p in range(nv):
                lin, ang = 0.0, 0.0
                for i in range(3):  # the law works in each foot's tilt frame: Rᵀ jac
                    lin += rotations[n, i, a] * jac[n, i, p]
                    ang += rotations[n, i, a] * jac[n, 3 + i, p]
                J[n, a, p], J[n, 3 + a, p] = lin, ang
        arms[n, 0], arms[n, 2] = -r_offset * np.sin(thetas[n, 1]), r_offset * np.cos(thetas[n, 1])  # frames3d.foot_axis
        grains[n] = grain
    b, W = support_3d(thetas, bounds, phi_active, per_depth, centers, c2, kern, degree, coef, mirror, A)
    return contact_step(Mt, v_free, qvel if steady else np.zeros(0), J, arms, grains, A, h * b,
                        W.reshape((N, W.shape[1] // 6, 6)), thetas[:, 1].copy(), Kinv, KT, U, geometry, tail, h, law,
                        warm)


@kernel("f8[:, ::1], f8[:, ::1], f8[:, :, ::1], i8[::1], f8[::1], f8[::1], i8[::1], f8[::1], f8[::1], i8[::1], i8, "
        "i8[::1], f8[:, ::1], f8[::1], f8[::1], f8[:, ::1], f8[::1], f8[::1], f8, f8[::1], f8[::1], f8[::1], f8[::1], "
        "f8[::1], f8[::1], f8, f8[::1], f8[::1], i8, i8, f8[:, ::1], f8[::1], i8, i8, f8[:, ::1], i8[::1], "
        "f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[::1], i8, i8, f8[::1], f8[:, ::1], f8[::1], f8[:, ::1], "
        "b1[::1], f8[::1]")
def feet_step(xpos, xmat, geom_jac, geoms, half, radius, shape, xs, zs, feet, count, active, M, qacc, qvel, moment,
              ctrl, force, h, damping, gain, bias, low, high, limited, r_offset, grain, bounds, phi_active, per_depth,
              centers, c2, kern, degree, coef, mirror, A, Kinv, KT, U, geometry, tail, law, applied, thetas, v,
              impulses, sticking, impulse):
    """A step of every granular foot in one call: :func:`foot_frames` (θ of all F feet), which feet
    are in the medium (d < 0), each one's Jacobian at p_center from MuJoCo's at its geom's centre
    ``geom_jac`` (F, 6, nv) (a point p of the body moves at v_g + ω × (p − g)), and :func:`coupled`
    for them. Returns (N, the number of feet in the medium; steady; status), and writes the rest
    into the caller's arrays: the AOT module boxes each array it returns by unpickling its dtype,
    about a microsecond, more than most stages of the step.

    In and out: ``feet`` (F,), the feet in the medium, the first ``count`` the step before's, the
    first N this step's; ``active`` (6F + 1,), their QP's active set, its size first, which starts
    this step's QP if the feet are the same (``steady``: data-flow's Newton then starts from
    ``qvel``), else a cold one. Out: θ (F, 2) into ``thetas``, v⁺ into ``v`` (nv,), the impulses
    (N, 6) into ``impulses[:N]`` and sticking (N,) into ``sticking[:N]`` (F rows each), the
    generalized impulse Σ J_rᵀ c (nv,) into ``impulse`` (:func:`coupled`'s; with no foot in the
    medium: v, no impulses and a zero generalized impulse). Where solved, the impulses' force
    Σ J_rᵀ c / h is added to ``applied`` (nv,) (MuJoCo's ``qfrc_applied``). M̃, v_free and J stay
    inside (``mujoco3d.stages`` makes them again where the reference law must take over)."""
    all_thetas, rotations, feet_centers, axes = foot_frames(xpos, xmat, geoms, half, radius, shape, xs, zs)
    thetas[:] = all_thetas
    contact = np.flatnonzero(all_thetas[:, 0] < 0.0)
    N, nv = len(contact), len(qvel)
    steady = N > 0 and N == count
    for i in range(N if steady else 0):
        steady = steady and contact[i] == feet[i]
    feet[:N] = contact
    if not steady:
        active[0] = 0
    impulse[:] = 0.0
    if N == 0:
        v[:] = qvel
        return 0, False, 0
    jac = np.empty((N, 6, nv))
    for n in range(N):
        k = contact[n]
        g = geoms[k]
        rx, ry, rz = (feet_centers[k, 0] - xpos[g, 0], feet_centers[k, 1] - xpos[g, 1],
                      feet_centers[k, 2] - xpos[g, 2])
        for p in range(nv):  # jacp(p_center) = jacp(g) + jacr × r
            wx, wy, wz = geom_jac[k, 3, p], geom_jac[k, 4, p], geom_jac[k, 5, p]
            jac[n, 0, p] = geom_jac[k, 0, p] + wy * rz - wz * ry
            jac[n, 1, p] = geom_jac[k, 1, p] + wz * rx - wx * rz
            jac[n, 2, p] = geom_jac[k, 2, p] + wx * ry - wy * rx
            jac[n, 3, p], jac[n, 4, p], jac[n, 5, p] = wx, wy, wz
    out, c, stuck, status, total = coupled(
        M, qacc, qvel, moment, ctrl, force, h, damping, gain, bias, low, high, limited, jac,
        np.ascontiguousarray(rotations[contact]), np.ascontiguousarray(all_thetas[contact]), r_offset, grain, bounds,
        phi_active, per_depth, centers, c2, kern, degree, coef, mirror, A, Kinv, KT, U, geometry, tail, law,
        int(steady), active[:6 * N + 1])
    v[:] = out
    impulses[:N] = c
    sticking[:N] = stuck
    impulse[:] = total
    if status != UNSOLVED:
        for p in range(nv):
            applied[p] += impulse[p] / h
    return N, steady, status
