"""The compiled form of a fitted RBF regressor: f(x) = F(x) @ coef, folded with its mirror image.

Kept apart from :mod:`granular.learning.regressors` so that a simulation that only evaluates a
loaded RBF model imports neither scikit-learn nor scipy's solvers.
"""
from __future__ import annotations

import numpy as np
from granular.compiled import kernel

#: Kernel ids of the compiled features: φ(r) = r² log r, r³, −r.
KERNELS = {"thin_plate_spline": 0, "cubic": 1, "linear": 2}


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
            r2 = max(x2 + c2[j] - 2.0 * dot, 0.0)
            if kernel == 0:
                F[i, j] = 0.5 * r2 * np.log(r2) if r2 > 0.0 else 0.0
            elif kernel == 1:
                F[i, j] = r2 ** 1.5
            else:
                F[i, j] = -np.sqrt(r2)
        F[i, n] = 1.0
        for d in range(dim * degree):
            F[i, n + 1 + d] = X[i, d]
    return F


@kernel("f8[:, ::1], f8[:, ::1], f8[::1], i8, i8, f8[:, ::1]")
def rbf_predict(X, centers, c2, kernel, degree, coef):
    """F(X) C: the model's RBF (its mirror average folded into the centres and C, WrenchSpaceModel._fold)."""
    return rbf_features(X, centers, c2, kernel, degree) @ coef


@kernel("f8, f8, i8")
def depth_factor(d, d_min, per_depth):
    """What the regressors' output is multiplied by at depth d < 0 (``WrenchSpaceModel.depth_factor``):
    |d| where they learned W per unit depth, else 1 within the data and d / d_min below it."""
    return -d if per_depth else max(1.0, d / d_min)


@kernel("f8[:, ::1], f8[::1], f8[::1], f8[::1], i8, i8, f8[:, ::1], f8[::1], i8, i8, f8[:, ::1], f8[:, ::1]")
def support_of_mirror_average(thetas, lo, hi, x_scale, phi_active, per_depth, centers, c2, kernel, degree, coef, A):
    """(b, W, clamped) at configurations θ (k, 2): b = max(0, max_i A w_i(θ)) per configuration, the
    fixed-normal offsets of the mirror-averaged RBF, and W (k, 3m) its extreme wrenches (the
    data-flow law reuses them), both scaled by :func:`depth_factor`; zero where d ≥ 0. The model's
    inputs, built here because numpy's per-call overhead on 4 × 2 arrays was a tenth of the
    data-flow step: θ clamped to [lo, hi] (``clamped``: whether a configuration in contact lay
    deeper or more tilted than the data), then divided by x_scale, without the φ column unless
    ``phi_active`` (``WrenchSpaceModel._x``, compiled)."""
    k, K, dim = thetas.shape[0], A.shape[0], 1 + phi_active
    X = np.empty((k, dim))
    clamped = False
    for i in range(k):
        d, phi = min(max(thetas[i, 0], lo[0]), hi[0]), min(max(thetas[i, 1], lo[1]), hi[1])
        if thetas[i, 0] < 0.0 and (thetas[i, 0] < lo[0] or phi != thetas[i, 1]):  # as WrenchSpaceModel.clamp
            clamped = True
        X[i, 0] = d / x_scale[0]
        if phi_active:
            X[i, 1] = phi / x_scale[1]
    W = rbf_predict(X, centers, c2, kernel, degree, coef)  # (k, 3m)
    m = W.shape[1] // 3
    b = np.zeros((k, K))
    a0, a1, a2 = A[:, 0].copy(), A[:, 1].copy(), A[:, 2].copy()  # contiguous: the facet loop vectorises
    for i in range(k):
        if not thetas[i, 0] < 0.0:  # out of contact (NaN too, as WrenchSpaceModel.points)
            W[i] = 0.0
            continue
        scale = depth_factor(thetas[i, 0], lo[0], per_depth)
        for j in range(W.shape[1]):  # a loop: W[i] *= scale made a temporary array
            W[i, j] *= scale
        row = b[i]
        for j in range(m):
            w0, w1, w2 = W[i, 3 * j], W[i, 3 * j + 1], W[i, 3 * j + 2]
            for f in range(K):
                row[f] = max(row[f], a0[f] * w0 + a1[f] * w1 + a2[f] * w2)
    return b, W, clamped
