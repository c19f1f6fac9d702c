"""The data's flow rule: which wrench the medium exerts for a direction of motion.

The data record, at each configuration, the wrench w_j for each of m sampled twist directions
u_j (unit vectors in the velocity-scaled space, Zhu et al. 2019 §IV-A). Maximum dissipation
(the paper's eq. 2) replaces that map by the support point of their convex hull, which is the
recorded wrench only if the medium obeys associated flow; granular media do not (their dilatancy
angle is below their friction angle, and RFT is not associated either). Between the sampled
directions the hull's support point jumps from vertex to vertex, and denser data give it more
wrong vertices to jump to.

This module interpolates the map itself over the direction sphere: w(u) = Σ_j λ_j(u) w_j with
weights of a cubic radial basis on the chord distance plus an affine tail, so that any wrench
affine in u (RFT's, for a translating foot within one set of leading faces) is reproduced exactly
and the recorded directions are hit exactly.
"""
from __future__ import annotations

import numpy as np
from granular.compiled import kernel


class DirectionMap:
    """Interpolation over the sampled directions U (m, 3) of a dataset.

    The interpolant of values P (m, p) at the directions is w(u) = Σ_j φ(|u − U_j|) Q_j + Q_m +
    Σ_a u_a Q_{m+1+a} with coefficients Q = inverse @ P (m + 4, p), φ(r) = r³.
    """

    def __init__(self, directions):
        U = np.asarray(directions, dtype=float)
        U = np.ascontiguousarray(U / np.linalg.norm(U, axis=1, keepdims=True))
        m = len(U)
        tail = np.hstack([np.ones((m, 1)), U])
        r2 = np.maximum(2.0 - 2.0 * U @ U.T, 0.0)
        system = np.block([[r2 * np.sqrt(r2), tail], [tail.T, np.zeros((4, 4))]])
        self.directions = U
        self.inverse = np.ascontiguousarray(np.linalg.inv(system)[:, :m])

    def coefficients(self, points):
        """Q (k, m + 4, 3) of the interpolants of the extreme wrenches (k, m, 3), one per configuration."""
        return coefficients(self.inverse, np.asarray(points, dtype=float))

    def weights(self, x):
        """λ (k, m) for directions x (k, 3), normalised here; a zero row where x is zero (no motion)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        return np.array([interpolate(self.directions, self.inverse, row)[0] for row in x])

    def wrenches(self, points, x):
        """Interpolated wrenches (k, 3) from the extreme wrenches (k, m, 3) for directions x (k, 3)."""
        Q = self.coefficients(points)
        x = np.atleast_2d(np.asarray(x, dtype=float))
        return np.array([interpolate(self.directions, q, row)[0] for q, row in zip(Q, x)])


@kernel("f8[:, ::1], f8[:, :, ::1]")
def coefficients(inverse, points):
    """Q = inverse @ P (k, m + 4, 3) per configuration of the extreme wrenches P (k, m, 3)."""
    k, m = points.shape[0], points.shape[1]
    Q = np.zeros((k, inverse.shape[0], 3))
    for f in range(k):
        for i in range(inverse.shape[0]):
            for j in range(m):
                for a in range(3):
                    Q[f, i, a] += inverse[i, j] * points[f, j, a]
    return Q


@kernel("f8[:, ::1], f8[:, ::1], f8[::1]")
def interpolate(U, Q, x):
    """w (p,) and dw/dx (p, 3) at x (3,), any length, of the interpolant with coefficients Q
    (m + 4, p): the cubic kernel φ(r) = r³ of the chord distance r = |u − U_j| between unit vectors,
    u = x / |x|, with the affine tail [1, u]. Zero at x = 0 (no motion, no flow wrench)."""
    p = Q.shape[1]
    w, dw = np.zeros(p), np.zeros((p, 3))
    interpolate_into(U, Q, x, w, dw)
    return w, dw


@kernel()
def interpolate_into(U, Q, x, w, dw):
    """:func:`interpolate` written into w (p,) and dw (p, 3), which are zero on entry: the step's
    Newton loop calls it per foot and per iterate, where allocating cost a tenth of its time."""
    m, p = U.shape[0], Q.shape[1]
    n = np.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    if n == 0.0:
        return
    u0, u1, u2 = x[0] / n, x[1] / n, x[2] / n
    for i in range(p):  # dw holds dw/du until the projection below
        w[i] = Q[m, i] + u0 * Q[m + 1, i] + u1 * Q[m + 2, i] + u2 * Q[m + 3, i]
        for a in range(3):
            dw[i, a] = Q[m + 1 + a, i]
    for j in range(m):
        r = np.sqrt(max(2.0 - 2.0 * (u0 * U[j, 0] + u1 * U[j, 1] + u2 * U[j, 2]), 0.0))
        value, slope = r * r * r, -3.0 * r  # d(r³)/du = −3 r U_j
        for i in range(p):
            q = Q[j, i]
            w[i] += value * q
            for a in range(3):
                dw[i, a] += slope * U[j, a] * q
    for i in range(p):  # du/dx = (I − u uᵀ) / n
        along = dw[i, 0] * u0 + dw[i, 1] * u1 + dw[i, 2] * u2
        dw[i, 0] = (dw[i, 0] - along * u0) / n
        dw[i, 1] = (dw[i, 1] - along * u1) / n
        dw[i, 2] = (dw[i, 2] - along * u2) / n


def dissipating(points, twist_r):
    """Per row, the point of conv(points ∪ 0) with the least power w·v_r (the maximum-dissipation
    wrench, paper eq. 2 for a heavy foot): (k, m, 3), (k, 3) → (k, 3)."""
    power = np.einsum("kmi,ki->km", points, twist_r)
    best = np.argmin(power, axis=1)
    rows = np.arange(len(points))
    return np.where((power[rows, best] < 0)[:, None], points[rows, best], 0.0)


def dissipating_polytope(A, b, twist_r):
    """Per row, the point of {w : A w ≤ b_k} with the least power w·v_r: the maximum-dissipation
    wrench of the fixed-normal polytope (an outer approximation of the hull), by linear programming.
    A (K, 3), b (k, K), twist_r (k, 3) → (k, 3)."""
    from scipy.optimize import linprog

    out = np.zeros((len(b), 3))
    for i, (offsets, v) in enumerate(zip(b, twist_r)):
        if np.any(v) and np.any(offsets > 0):
            result = linprog(v, A_ub=A, b_ub=offsets, bounds=[(None, None)] * 3, method="highs")
            if result.status == 0 and result.fun < 0:
                out[i] = result.x
    return out


def non_associativity(points, twists_r, valid, scale):
    """How far each recorded wrench is from the maximum-dissipation point of its own hull for its
    own twist: |w_ij − w*_ij| / max_j |w_ij| in the scaled wrench space (0 for associated data).

    points (n, m, 3): recorded wrenches at n configurations; twists_r (n, m, 3) their twists at p_r;
    valid (n, m); scale (3,). Returns the distances of the valid samples of configurations with
    ≥ 4 of them.
    """
    out = []
    for w, v, ok in zip(points, twists_r, valid):
        if ok.sum() < 4:
            continue
        w, v = w[ok] / scale, v[ok]
        size = np.abs(w).max()
        if size == 0:
            continue
        best = dissipating(np.broadcast_to(w, (len(v),) + w.shape), v * scale)
        out.append(np.linalg.norm(w - best, axis=1) / size)
    return np.concatenate(out) if out else np.zeros(0)
