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
from numba import njit


class DirectionMap:
    """Interpolation weights over the sampled directions U (m, 3) of a dataset."""

    def __init__(self, directions):
        U = np.asarray(directions, dtype=float)
        U = np.ascontiguousarray(U / np.linalg.norm(U, axis=1, keepdims=True))
        m = len(U)
        tail = np.hstack([np.ones((m, 1)), U])
        r2 = np.maximum(2.0 - 2.0 * U @ U.T, 0.0)
        system = np.block([[r2 * np.sqrt(r2), tail], [tail.T, np.zeros((4, 4))]])
        self.directions = U
        # Rows [k(u, U), 1, u] times this give λ(u): solved once, applied per query.
        self.inverse = np.ascontiguousarray(np.linalg.inv(system)[:, :m])

    def weights(self, x):
        """λ (k, m) for directions x (k, 3), normalised here; a zero row where x is zero (no motion)."""
        x = np.atleast_2d(np.asarray(x, dtype=float))
        return np.array([weights(self.directions, self.inverse, row)[0] for row in x])

    def wrenches(self, points, x):
        """Interpolated wrenches (k, 3) from the extreme wrenches (k, m, 3) for directions x (k, 3)."""
        return np.einsum("km,kmi->ki", self.weights(x), points)


@njit(cache=True)
def weights(U, inverse, x):
    """λ (m,) and dλ/dx (m, 3) at x (3,), any length: the cubic kernel φ(r) = r³ of the chord
    distance r = |u − U_j| between unit vectors, u = x / |x|, with the affine tail [1, u].
    Plain loops: these are a few hundred flops, far below what a BLAS call costs to start."""
    m = U.shape[0]
    lam = np.zeros(m)
    dlam = np.zeros((m, 3))
    n = np.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    if n == 0.0:
        return lam, dlam
    u = x / n
    du = np.zeros((m, 3))  # dλ/du
    for j in range(m + 4):
        if j < m:
            r = np.sqrt(max(2.0 - 2.0 * (u[0] * U[j, 0] + u[1] * U[j, 1] + u[2] * U[j, 2]), 0.0))
            value, slope = r * r * r, -3.0 * r  # d(r³)/du = −3 r U_j
        elif j == m:
            value, slope = 1.0, 0.0
        else:
            value, slope = u[j - m - 1], 0.0
        for i in range(m):
            c = inverse[j, i]
            lam[i] += value * c
            for a in range(3):
                if j < m:
                    du[i, a] += slope * U[j, a] * c
                elif j - m - 1 == a:
                    du[i, a] += c
    for i in range(m):  # du/dx = (I − u uᵀ) / n
        along = du[i, 0] * u[0] + du[i, 1] * u[1] + du[i, 2] * u[2]
        for a in range(3):
            dlam[i, a] = (du[i, a] - along * u[a]) / n
    return lam, dlam


def dissipating(points, twist_r):
    """Per row, the point of conv(points ∪ 0) with the least power w·v_r (the maximum-dissipation
    wrench, paper eq. 2 for a heavy foot): (k, m, 3), (k, 3) → (k, 3)."""
    power = np.einsum("kmi,ki->km", points, twist_r)
    best = np.argmin(power, axis=1)
    rows = np.arange(len(points))
    return np.where((power[rows, best] < 0)[:, None], points[rows, best], 0.0)


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


def scaled_directions(twists, velocity_scale):
    """Twists (k, 3) of p_center in the data's velocity-scaled space, normalised (zero stays zero)."""
    u = np.asarray(twists, dtype=float) / np.asarray(velocity_scale, dtype=float)
    norm = np.linalg.norm(u, axis=-1, keepdims=True)
    return np.divide(u, norm, out=np.zeros_like(u), where=norm > 0)
