"""The data's flow rule in three dimensions: the wrench for a direction of motion, on the sphere of ℝ⁶.

As in the plane (:mod:`granular.wrench.flow`, where the reasons are given), the data-flow law
applies the data's own wrench for the foot's direction of motion rather than the hull's
maximum-dissipation point: w(u) interpolates the recorded wrenches W_j(θ) over the sampled unit
directions U_j (in the velocity-scaled space) with a cubic radial basis on the chord distance and
a tail, w(u) = Σ_j |u − U_j|³ c_j + Σ_k p_k(u; φ) e_k, solved so that each recorded direction is
hit exactly and anything in the tail's span is reproduced exactly (:func:`coefficients`).

The tail is [1, u] (7 functions) or [1, u, s, s u] (14): affine in u, and affine in u times the
share s of the foot's bottom disc that advances into the medium (:func:`plate_fraction`). As in
the plane, the wrench turns fast where the disc switches between leading and trailing (sinking
against rising), a switch a smooth basis on 72 directions smears: on the shipped 3D paths the
affine tail scores 0.17 and the leading one 0.10 (docs/3d.md; ``docs/direction_map3d.py``). s
depends on the tilt φ, so each configuration solves its own coefficients; each dataset takes the
tail that predicts its own left-out directions better (``flow.choose_tail``).

Where the interpolant would make the medium do work on the foot (w·v > 0 at p_r), w is replaced by
the nearest wrench that does none, in the norm dual to the velocity scale (the planar
``dissipative_into``'s rule), inside :func:`flow_into`, which every caller shares.
"""
from __future__ import annotations

import numpy as np
from granular.compiled import kernel

from granular.wrench.flow import SWITCH_WIDTH, DirectionMap, kernel_inverse, solve_into

#: The interpolant's tails: [1, u] or [1, u, s, s u], and how many functions.
TAILS = {"affine": 7, "leading": 14}


class SphereMap:
    """Interpolation over the unit directions U (m, 6) of a 3D dataset, scaled by
    ``velocity_scale`` (6,), for a foot of ``radius`` (m), with the tail ``tail`` (:data:`TAILS`)."""

    TAILS = TAILS

    def __init__(self, directions, velocity_scale, radius: float, tail: str = "leading"):
        if tail not in TAILS:
            raise ValueError(f"unknown interpolant tail {tail!r}; choose one of {', '.join(TAILS)}")
        U = np.asarray(directions, dtype=float)
        self.directions = np.ascontiguousarray(U / np.linalg.norm(U, axis=1, keepdims=True))
        self.scale = np.asarray(velocity_scale, dtype=float)
        self.tail, self.size = tail, TAILS[tail]
        self.kernel, self.kernel_inverse = kernel_inverse(self.directions)
        self.tail_inverse = inverse_tail(self.kernel_inverse, self.directions)
        self.geometry = np.array([*self.scale, float(radius)])

    def coefficients(self, points, phis) -> np.ndarray:
        """Q (k, m + q, 6) of the interpolants of the extreme wrenches (k, m, 6) at tilts φ (k,) (or
        one tilt for all)."""
        points = np.ascontiguousarray(points, dtype=float)
        phis = np.ascontiguousarray(np.broadcast_to(np.asarray(phis, dtype=float).reshape(-1), (len(points),)))
        return coefficients(self.kernel_inverse, self.tail_inverse, self.directions, self.geometry, self.size, phis,
                            points)

    def wrenches(self, points, phis, twists, arms) -> np.ndarray:
        """The data's wrench (k, 6) about p_r for twists (k, 6) of p_center, from the extreme wrenches
        (k, m, 6) at each foot's tilt φ (k,); ``arms`` (k, 3) is p_r − p_center. Zero at rest."""
        return self.at(self.coefficients(points, phis), phis, twists, arms)

    def at(self, Q, phis, twists, arms) -> np.ndarray:
        """:meth:`wrenches` from the coefficients Q (k, m + q, 6) already solved."""
        f8 = lambda a, shape: np.ascontiguousarray(np.broadcast_to(np.asarray(a, dtype=float), shape))  # noqa: E731
        k = len(Q)
        return flow_rows(np.ascontiguousarray(Q), self.directions, self.geometry, f8(phis, (k,)), f8(twists, (k, 6)),
                         f8(arms, (k, 3)))

    def tail_at(self, theta) -> np.ndarray:
        """T (m, q): the tail at the directions, at configuration θ = (d, φ) (the tilt alone matters)."""
        return tail_matrix(self.directions, float(theta[1]), self.geometry, self.size)

    leave_one_out = DirectionMap.leave_one_out


@kernel(inline=True)
def plate_fraction(U, j, ax, az, geometry, ds, slope):
    """s, the share of the bottom disc (radius R = geometry[6], centred on p_center, normal the foot
    axis a(φ) = (ax, 0, az) = (−sin φ, 0, cos φ)) that advances into the medium for the unit direction
    u = U[j] (6,) (scaled space; the twist of p_center is v = S u, S = geometry[:6]); where ``slope``,
    ds (6,) ← ds/du. A disc element at r (r ⊥ a) moves along a at v·a + (a × ω)·r, so the share that
    advances (v·a + (a × ω)·r < 0) runs from 0 to 1 as v·a goes from |a × ω| R to −|a × ω| R; as in
    the plane (``flow.leading_fractions``), a ramp, whose half-width gains SWITCH_WIDTH × |v|. The
    axis comes in as its components (the tail's loop over the directions takes one sine and cosine
    a foot) and u as a row index, not a view (each view costs its reference counting)."""
    vx, vy, vz = geometry[0] * U[j, 0], geometry[1] * U[j, 1], geometry[2] * U[j, 2]
    wx, wy, wz = geometry[3] * U[j, 3], geometry[4] * U[j, 4], geometry[5] * U[j, 5]
    gx, gy, gz = -az * wy, az * wx - ax * wz, ax * wy  # a × ω
    turn, speed = np.sqrt(gx * gx + gy * gy + gz * gz), np.sqrt(vx * vx + vy * vy + vz * vz)
    R = geometry[6]
    half = turn * R + SWITCH_WIDTH * speed
    if slope:
        for i in range(6):
            ds[i] = 0.0
    if half <= 0.0:
        return 0.5
    along = vx * ax + vz * az
    s = 0.5 - along / (2.0 * half)
    if s <= 0.0:
        return 0.0
    if s >= 1.0:
        return 1.0
    if not slope:
        return s
    # d(half)/du: through |v| and |a × ω| (d|a × ω|/dω_i = (ω_i − a_i a·ω) / |a × ω|)
    if speed > 0.0:
        ds[0] = SWITCH_WIDTH * geometry[0] * vx / speed
        ds[1] = SWITCH_WIDTH * geometry[1] * vy / speed
        ds[2] = SWITCH_WIDTH * geometry[2] * vz / speed
    if turn > 0.0:
        spin = ax * wx + az * wz
        ds[3] = R * geometry[3] * (wx - ax * spin) / turn
        ds[4] = R * geometry[4] * wy / turn
        ds[5] = R * geometry[5] * (wz - az * spin) / turn
    scale = along / (2.0 * half * half)
    for i in range(6):
        ds[i] *= scale
    ds[0] -= geometry[0] * ax / (2.0 * half)
    ds[2] -= geometry[2] * az / (2.0 * half)
    return s


@kernel("f8[:, ::1], f8, f8[::1], i8")
def tail_matrix(U, phi, geometry, size):
    """T (m, size): the tail, [1, u] (7) or [1, u, s, s u] (14), at each direction U_j, tilt φ."""
    m = U.shape[0]
    T = np.empty((m, size))
    ds = np.empty(6)
    ax, az = -np.sin(phi), np.cos(phi)
    for j in range(m):
        s = plate_fraction(U, j, ax, az, geometry, ds, False) if size == 14 else 0.0
        T[j, 0] = 1.0
        for i in range(6):
            T[j, 1 + i] = U[j, i]
        if size == 14:
            T[j, 7] = s
            for i in range(6):
                T[j, 8 + i] = s * U[j, i]
    return T


def inverse_tail(Kinv, U) -> np.ndarray:
    """KT (m + 7, 7): K⁻¹ T₀ above T₀ᵀ K⁻¹ T₀, T₀ = [1, U], the constant parts of
    :func:`coefficients`' solve, made once per map."""
    T0 = np.column_stack([np.ones(len(U)), U])
    KT = Kinv @ T0
    return np.ascontiguousarray(np.vstack([KT, T0.T @ KT]))


@kernel("f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[::1], i8, f8[::1], f8[:, :, ::1]")
def coefficients(Kinv, KT, U, geometry, size, phis, points):
    """Q (k, m + size, 6) per tilt φ (k,) of the values P (k, m, 6) at the directions U: the
    Schur-complement solve of the planar :func:`granular.wrench.flow.tail_solve`,
    e = (Tᵀ K⁻¹ T)⁻¹ Tᵀ K⁻¹ P and c = K⁻¹ (P − T e), with the tail T = [T₀, s T₀] at each tilt
    (T₀ = [1, U], s the directions' leading shares; T = T₀ for the affine tail). Half of K⁻¹ T is
    constant (``KT``: K⁻¹ T₀ and T₀ᵀ K⁻¹ T₀, :func:`inverse_tail`), so each foot's product with K⁻¹
    takes 13 rows (s T₀ and P) where the whole tail took 20."""
    k, m = points.shape[0], U.shape[0]
    lead = 7 if size == 14 else 0  # rows of s T₀ per foot, before P's 6
    w = lead + 6
    rows = np.empty((k * w, m))
    ds = np.empty(6)
    for f in range(k):
        ax, az = -np.sin(phis[f]), np.cos(phis[f])
        for j in range(m):
            if lead:
                s = plate_fraction(U, j, ax, az, geometry, ds, False)
                rows[f * w, j] = s
                for i in range(6):
                    rows[f * w + 1 + i, j] = s * U[j, i]
            for c in range(6):
                rows[f * w + lead + c, j] = points[f, j, c]
    solved = rows @ Kinv    # per foot: (K⁻¹ s T₀)ᵀ, then (K⁻¹ P)ᵀ
    fixed = rows @ KT[:m]   # per foot: (s T₀)ᵀ K⁻¹ T₀, then Pᵀ K⁻¹ T₀
    KTt, G = np.ascontiguousarray(KT[:m].T), KT[m:]
    Q = np.empty((k, m + size, 6))
    S, e, top = np.empty((size, size)), np.empty((size, 6)), np.empty((6, m))
    for f in range(k):
        o = f * w
        moved = np.dot(solved[o:o + lead], rows[o:o + w].T) if lead else np.empty((0, w))  # (K⁻¹ s T₀)ᵀ [s T₀, P]
        for a in range(7):
            for b in range(7):
                S[a, b] = G[a, b]
            for c in range(6):
                e[a, c] = fixed[o + lead + c, a]
        for a in range(lead):
            for b in range(7):
                S[7 + a, b] = fixed[o + a, b]
                S[b, 7 + a] = fixed[o + a, b]
            for b in range(lead):
                S[7 + a, 7 + b] = moved[a, b]
            for c in range(6):
                e[7 + a, c] = moved[a, lead + c]
        solve_into(S, e)
        for c in range(6):  # c = K⁻¹ P − K⁻¹ T₀ e₀ − K⁻¹ s T₀ e₁, along the directions
            for i in range(m):
                top[c, i] = solved[o + lead + c, i]
            for a in range(7):
                x = e[a, c]
                for i in range(m):
                    top[c, i] -= KTt[a, i] * x
            for a in range(lead):
                x = e[7 + a, c]
                for i in range(m):
                    top[c, i] -= solved[o + a, i] * x
        for i in range(m):
            for c in range(6):
                Q[f, i, c] = top[c, i]
        Q[f, m:] = e
    return Q


@kernel("f8[:, :, ::1], f8[:, ::1], f8[::1], f8[::1], f8[:, ::1], f8[:, ::1]")
def flow_rows(Q, U, geometry, phis, twists, arms):
    """:func:`flow_into`'s wrench (k, 6) for each row: coefficients Q (k, m + q, 6), tilt, twist, arm."""
    k = Q.shape[0]
    out = np.empty((k, 6))
    dw, work, radial = np.empty((6, 6)), np.empty((12, 6)), np.empty(U.shape[0])
    for r in range(k):
        flow_into(Q[r], U, geometry, phis[r], arms[r], twists[r], out[r], dw, work, radial)
    return out


@kernel()
def flow_into(Q, U, geometry, phi, arm, twist, w, dw, work, radial):
    """w (6,) ← the data's wrench about p_r for the twist (6,) of p_center, and dw (6, 6) ← its
    Jacobian by the twist: the interpolant with coefficients Q (m + q, 6) at u = x / |x|,
    x = twist / S (S = geometry[:6]), at tilt φ, w(u) = Σ_j |u − U_j|³ Q_j + Q_m + Σ_i u_i Q_{m+1+i}
    [+ s(u) (Q_{m+7} + Σ_i u_i Q_{m+8+i}), s the disc's leading share], then made dissipative
    about p_r = p_center + ``arm``.
    Zero at rest. ``work`` (12, 6) and ``radial`` (m,) are scratch (Newton's loop calls this for
    every sliding foot at every iteration: no allocation)."""
    m = U.shape[0]
    Gu, u, vr, metric, dp, dq, ds = work[:6], work[6], work[7], work[8], work[9], work[10], work[11]
    w[:] = 0.0
    dw[:] = 0.0
    rho = 0.0
    for i in range(6):
        rho += (twist[i] / geometry[i]) ** 2
    rho = np.sqrt(rho)
    if rho == 0.0:
        return
    for i in range(6):
        u[i] = twist[i] / geometry[i] / rho
    # ∂w/∂u first (the chain through u = s / |s| follows), in two passes whose sums run in
    # registers: the wrench and each |u − U_j|, then Gu = Σ_j d|u − U_j|³/d(u·U_j) Q_j U_jᵀ row by row
    acc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for j in range(m):
        r2 = max(2.0 - 2.0 * (u[0] * U[j, 0] + u[1] * U[j, 1] + u[2] * U[j, 2] + u[3] * U[j, 3] + u[4] * U[j, 4]
                              + u[5] * U[j, 5]), 0.0)
        r = np.sqrt(r2)
        radial[j] = -3.0 * r
        acc = _axpy6(acc, r2 * r, Q, j)
    w[0], w[1], w[2], w[3], w[4], w[5] = acc
    for a in range(6):
        acc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for j in range(m):
            acc = _axpy6(acc, radial[j] * Q[j, a], U, j)
        Gu[a, 0], Gu[a, 1], Gu[a, 2], Gu[a, 3], Gu[a, 4], Gu[a, 5] = acc
    for a in range(6):
        w[a] += Q[m, a]
        for i in range(6):
            w[a] += u[i] * Q[m + 1 + i, a]
            Gu[a, i] += Q[m + 1 + i, a]
    if Q.shape[0] - m == 14:
        s = plate_fraction(work, 6, -np.sin(phi), np.cos(phi), geometry, ds, True)
        for a in range(6):
            lead = Q[m + 7, a]
            for i in range(6):
                lead += u[i] * Q[m + 8 + i, a]
            w[a] += s * lead
            for b in range(6):
                Gu[a, b] += ds[b] * lead + s * Q[m + 8 + b, a]
    for a in range(6):  # ∂u/∂twist = (I − u uᵀ) / (ρ S)
        along = 0.0
        for b in range(6):
            along += Gu[a, b] * u[b]
        for c in range(6):
            dw[a, c] = (Gu[a, c] - along * u[c]) / (rho * geometry[c])
    _dissipative_into(geometry, arm, twist, w, dw, vr, metric, dp, dq)


@kernel(inline=True)
def _axpy6(acc, f, A, j):
    """acc + f A[j, :6], for a running sum of six held as a tuple: its terms stay in registers, where
    an array's would go through memory at every term (and A's row is read without a view)."""
    return (acc[0] + f * A[j, 0], acc[1] + f * A[j, 1], acc[2] + f * A[j, 2], acc[3] + f * A[j, 3],
            acc[4] + f * A[j, 4], acc[5] + f * A[j, 5])


@kernel(inline=True)
def _dissipative_into(S, arm, twist, w, dw, vr, metric, dp, dq):
    """The medium does no work on the foot: where w·v_r > 0 (v_r the twist at p_r), w ← the nearest
    wrench that does none, w − (w·v_r / v_rᵀS⁻²v_r) S⁻² v_r, and dw by the product rule; vr, metric,
    dp and dq (6,) are scratch."""
    x, y, z = arm[0], arm[1], arm[2]
    _at_arm(twist, x, y, z, vr)  # work is done at p_r, about which the wrench is taken
    p, q = 0.0, 0.0
    for a in range(6):
        metric[a] = vr[a] / (S[a] * S[a])
        p += w[a] * vr[a]
        q += vr[a] * metric[a]
    if not (p > 0.0 and q > 0.0):
        return
    ratio = p / q
    _row_at_arm(w, x, y, z, dp)  # dp = vrᵀ dw + wᵀ T
    _row_at_arm(metric, x, y, z, dq)  # dq / 2 = metricᵀ T
    for c in range(6):
        acc = 0.0
        for a in range(6):
            acc += vr[a] * dw[a, c]
        dp[c] += acc
    for c in range(6):
        dratio = (dp[c] - 2.0 * ratio * dq[c]) / q
        for a in range(6):
            dw[a, c] -= metric[a] * dratio
    for a in range(6):  # − ratio ∂metric/∂twist = − ratio S⁻² T
        dw[a, a] -= ratio / (S[a] * S[a])
    dw[0, 4] -= ratio * z / (S[0] * S[0])
    dw[0, 5] += ratio * y / (S[0] * S[0])
    dw[1, 3] += ratio * z / (S[1] * S[1])
    dw[1, 5] -= ratio * x / (S[1] * S[1])
    dw[2, 3] -= ratio * y / (S[2] * S[2])
    dw[2, 4] += ratio * x / (S[2] * S[2])
    for a in range(6):
        w[a] -= ratio * metric[a]


@kernel(inline=True)
def _at_arm(t, x, y, z, out):
    """out ← T t, the twist t (6,) of p_center moved to p_r = p_center + (x, y, z): v + ω × arm, ω."""
    out[0] = t[0] + z * t[4] - y * t[5]
    out[1] = t[1] - z * t[3] + x * t[5]
    out[2] = t[2] + y * t[3] - x * t[4]
    out[3], out[4], out[5] = t[3], t[4], t[5]


@kernel(inline=True)
def _row_at_arm(r, x, y, z, out):
    """out ← rᵀ T for the row r (6,) (T as in :func:`_at_arm`)."""
    out[0], out[1], out[2] = r[0], r[1], r[2]
    out[3] = r[3] - z * r[1] + y * r[2]
    out[4] = r[4] + z * r[0] - x * r[2]
    out[5] = r[5] - y * r[0] + x * r[1]
