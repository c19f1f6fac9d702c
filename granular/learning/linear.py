"""The compiled form of a fitted RBF regressor: f(x) = F(x) @ coef, folded with its mirror image.

Kept apart from :mod:`granular.learning.regressors` so that a simulation that only evaluates a
loaded RBF model imports neither scikit-learn nor scipy's solvers.
"""
from __future__ import annotations

import numpy as np
from granular.compiled import kernel

#: Kernel ids of the compiled features: φ(r) = r² log r, r³, −r.
KERNELS = {"thin_plate_spline": 0, "cubic": 1, "linear": 2}


@kernel()
def _radial(r2, kernel):
    """φ(r) from r²: r² log r, r³ or −r (kernel 0, 1, 2)."""
    if kernel == 0:
        return 0.5 * r2 * np.log(r2) if r2 > 0.0 else 0.0
    if kernel == 1:
        return r2 ** 1.5
    return -np.sqrt(r2)


@kernel("f8[:, ::1], f8[:, ::1], f8[::1], i8, i8")
def rbf_features(X, centers, c2, kernel, degree):
    """[φ(‖x − x_j‖)…, 1, x…] per row of X; φ = r² log r, r³ or −r (kernel 0, 1, 2)."""
    k, n, dim = X.shape[0], centers.shape[0], X.shape[1]
    F = np.empty((k, n + 1 + dim * degree))
    for i in range(k):
        x2 = 0.0
        for d in range(dim):
            x2 += X[i, d] * X[i, d]
        for j in range(n):
            dot = 0.0
            for d in range(dim):
                dot += X[i, d] * centers[j, d]
            F[i, j] = _radial(max(x2 + c2[j] - 2.0 * dot, 0.0), kernel)
        F[i, n] = 1.0
        for d in range(dim * degree):
            F[i, n + 1 + d] = X[i, d]
    return F


@kernel("f8, f8, i8")
def depth_factor(d, d_min, per_depth):
    """What a group's regressor output is multiplied by at depth d < 0: |d| where it learned W per
    unit depth, else 1 within its data and d / d_min below them (d_min: the group's deepest data),
    so that past the data W(d, φ) = (d / d_min) W(d_min, φ).

    Granular resistance grows about linearly with depth (hydrostatic-like: RFT's stress is
    ζ α |z|, Li et al. 2013 eq. 1), so past the data the deepest W is scaled rather than held,
    which would let a foot loaded beyond the data's largest resistance sink without limit."""
    return -d if per_depth else max(1.0, d / d_min)


@kernel("f8[:, ::1], f8[:, ::1], f8[::1], i8, i8, f8[:, ::1], f8[::1], i8[::1], i8, i8, f8[:, ::1]")
def mirror_average(thetas, bounds, x_scale, phi_active, per_depth, centers, c2, spans, kernel, degree, coef):
    """(W (k, 3m), clamped): the model's mirror-averaged extreme wrenches at configurations θ (k, 2), zero
    where d ≥ 0 (or NaN), and whether a configuration in contact lay deeper or more tilted than all the data.

    The RBF is the groups' regressors joined (``WrenchSpaceModel._link``): group g's centres are rows
    spans[g]:spans[g + 1], and after the n centres come each group's polynomial tail [1, x] in turn.
    Each group sees θ clamped to its own data, row g of ``bounds`` = (deepest d, shallowest d or 0,
    largest |φ|), and its output is scaled by :func:`depth_factor` at its own deepest d: a group of
    directions whose data stop at 6 cm is held per unit depth there, not extrapolated by its spline
    (issue 16). Built here because numpy's per-call overhead on 4 × 2 arrays was a tenth of the
    data-flow step."""
    k, n, G = thetas.shape[0], centers.shape[0], bounds.shape[0]
    tail = 1 + (1 + phi_active) * degree
    deepest, widest = bounds[0, 0], bounds[0, 2]
    for g in range(1, G):
        deepest, widest = min(deepest, bounds[g, 0]), max(widest, bounds[g, 2])
    F = np.zeros((k, n + G * tail))
    clamped = False
    for i in range(k):
        d0, phi0 = thetas[i, 0], thetas[i, 1]
        if not d0 < 0.0:  # out of contact, NaN too: W = 0
            continue
        clamped = clamped or d0 < deepest or abs(phi0) > widest
        for g in range(G):
            x = min(max(d0, bounds[g, 0]), bounds[g, 1]) / x_scale[0]
            y = min(max(phi0, -bounds[g, 2]), bounds[g, 2]) / x_scale[1] if phi_active else 0.0
            scale = depth_factor(d0, bounds[g, 0], per_depth)
            x2 = x * x + y * y
            for j in range(spans[g], spans[g + 1]):  # the loop of rbf_features, a group's centres alone
                dot = x * centers[j, 0] + (y * centers[j, 1] if phi_active else 0.0)
                F[i, j] = scale * _radial(max(x2 + c2[j] - 2.0 * dot, 0.0), kernel)
            col = n + g * tail
            F[i, col] = scale
            if degree:
                F[i, col + 1] = scale * x
                if phi_active:
                    F[i, col + 2] = scale * y
    return F @ coef, clamped


@kernel("f8[:, ::1], f8[:, ::1], f8[::1], i8, i8, f8[:, ::1], f8[::1], i8[::1], i8, i8, f8[:, ::1], f8[:, ::1]")
def support_of_mirror_average(thetas, bounds, x_scale, phi_active, per_depth, centers, c2, spans, kernel, degree,
                              coef, A):
    """(b, W, clamped) at configurations θ (k, 2): b = max(0, max_i A w_i(θ)) per configuration, the
    fixed-normal offsets of the model's extreme wrenches W (k, 3m) (:func:`mirror_average`, whose
    other arguments these are; the data-flow law reuses W)."""
    W, clamped = mirror_average(thetas, bounds, x_scale, phi_active, per_depth, centers, c2, spans, kernel,
                                degree, coef)
    k, K, m = thetas.shape[0], A.shape[0], W.shape[1] // 3
    b = np.zeros((k, K))
    a0, a1, a2 = A[:, 0].copy(), A[:, 1].copy(), A[:, 2].copy()  # contiguous: the facet loop vectorises
    for i in range(k):
        row = b[i]
        for j in range(m):
            w0, w1, w2 = W[i, 3 * j], W[i, 3 * j + 1], W[i, 3 * j + 2]
            for f in range(K):
                row[f] = max(row[f], a0[f] * w0 + a1[f] * w1 + a2[f] * w2)
    return b, W, clamped


@kernel("f8[:, ::1], f8[::1], i8, i8, f8[:, ::1], f8[::1], i8, i8, f8[:, ::1], i8[::1], f8[:, ::1]")
def support_3d(thetas, bounds, phi_active, per_depth, centers, c2, kernel, degree, coef, mirror, A):
    """(b (k, K), W (k, 6m)): a 3D model's extreme wrenches at configurations θ (k, 2), zero where
    d ≥ 0 (or NaN), and their fixed-normal offsets b = max(0, max_i A w_i) for normals A (K, 6), in
    one call (``WrenchSpaceModel3D.points`` and ``offsets``, which the MuJoCo step needs for every foot
    at every step). ``bounds`` = (deepest d, shallowest d, largest |φ|, d scale, φ scale): θ is
    clamped to the data and scaled as the regressor saw it, and W scaled by :func:`depth_factor`.
    ``coef`` holds the regressor's columns of the points ``mirror`` (m,) names: point j is block
    mirror[j] of them, or, where mirror[j] < 0, block −1 − mirror[j] mirrored y → −y
    (``frames3d.MIRROR_Y``; ``WrenchSpaceModel3D._linear`` keeps one of each mirrored pair)."""
    k, K, m = thetas.shape[0], A.shape[0], len(mirror)
    X = np.zeros((k, 1 + phi_active))
    scale = np.zeros(k)
    for i in range(k):
        d0 = thetas[i, 0]
        if d0 < 0.0:  # else (NaN too) out of contact: W = 0
            scale[i] = depth_factor(d0, bounds[0], per_depth)
            X[i, 0] = min(max(d0, bounds[0]), bounds[1]) / bounds[3]
            if phi_active:
                X[i, 1] = min(max(thetas[i, 1], -bounds[2]), bounds[2]) / bounds[4]
    F = rbf_features(X, centers, c2, kernel, degree)
    for i in range(k):
        for j in range(F.shape[1]):
            F[i, j] *= scale[i]
    kept = F @ coef  # two matrix products, BLAS's: the loops they replace were slower than numpy
    W = np.empty((k, 6 * m))
    for i in range(k):
        for j in range(m):
            q = mirror[j]
            if q >= 0:
                for c in range(6):
                    W[i, 6 * j + c] = kept[i, 6 * q + c]
            else:  # y → −y: f_y, τ_x and τ_z change sign
                q = -1 - q
                for c in range(6):
                    W[i, 6 * j + c] = -kept[i, 6 * q + c] if c % 2 else kept[i, 6 * q + c]
    # normals in opposite pairs (A[2g + 1] = −A[2g], as fixed_normals makes them): the pair's
    # products are one's negated, so half of them are taken, with both their maximum and minimum
    pairs = K // 2 if K % 2 == 0 else 0
    for g in range(pairs):
        for c in range(6):
            if A[2 * g + 1, c] != -A[2 * g, c]:
                pairs = 0
    normals = np.ascontiguousarray(A[::2].T if pairs else A.T)  # a transposed view takes BLAS's slower path
    support = W.reshape((k * m, 6)) @ normals
    b = np.zeros((k, K))
    if pairs:
        top, low = np.zeros(pairs), np.zeros(pairs)  # max of A w and of −A w over the points
        for i in range(k):
            top[:] = 0.0
            low[:] = 0.0
            for j in range(m):
                for g in range(pairs):
                    top[g] = max(top[g], support[i * m + j, g])
                    low[g] = max(low[g], -support[i * m + j, g])
            for g in range(pairs):
                b[i, 2 * g], b[i, 2 * g + 1] = top[g], low[g]
        return b, W
    for i in range(k):
        for j in range(m):
            for f in range(K):
                b[i, f] = max(b[i, f], support[i * m + j, f])
    return b, W
