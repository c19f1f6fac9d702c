"""Feasible wrench spaces W as polytopes: half-spaces A w ≤ b (Zhu et al. 2019, eq. 1).

Two representations of W(θ) from the m predicted extreme wrenches:

* exact: the convex hull of the points and the origin, as its minimal
  half-space form (coplanar facets merged); its A changes with θ;
* fixed normals: K facet normals fixed once per model, spread over the
  sphere; the offsets b(θ) are the support function of the points, so the
  polytope is an outer approximation of the hull whose A never changes.

Force and torque have different units, so geometry is done in a scaled space
w / s with s = (force scale, force scale, torque scale) and brought back to
wrench units with unit-norm rows of A.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import linprog, nnls
from scipy.spatial import ConvexHull, HalfspaceIntersection, QhullError

ZERO_A = np.vstack([np.eye(3), -np.eye(3)])
_ORIGIN = np.zeros((1, 3))
#: Relative size of the padding that makes a flat point set a thin, bounded solid.
PAD = 1e-6


def hull_halfspaces(points, scale, include_origin: bool = True):
    """Minimal (A, b) with conv(points [∪ 0]) = {w : A w ≤ b}; rows of A are unit vectors.

    At zero size the result is W = {0}. A flat or degenerate point set (qhull
    finds no full-dimensional hull) is padded by a tiny octahedron (PAD in
    scaled units) so the polytope stays bounded and contains the origin
    (b ≥ 0 whenever the origin is included).
    """
    pts = np.asarray(points, dtype=float) / scale
    if include_origin:
        pts = np.concatenate([pts, _ORIGIN])
    if np.abs(pts).max() <= PAD:
        return ZERO_A.copy(), np.zeros(6)
    try:
        eq = ConvexHull(pts).equations
    except QhullError:
        pad = pts.mean(axis=0) + PAD * ZERO_A
        eq = ConvexHull(np.concatenate([pts, pad]), qhull_options="QJ").equations
    eq = _merge_coplanar(eq)
    A = eq[:, :3] / scale
    norms = np.sqrt(np.einsum("ij,ij->i", A, A))
    A /= norms[:, None]
    b = -eq[:, 3] / norms
    if include_origin:
        np.maximum(b, 0.0, out=b)
    return A, b


def _merge_coplanar(eq, tol: float = 1e-9):
    """Drop facets (triangles of one flat face) that repeat an earlier facet's plane."""
    same = (eq[:, :3] @ eq[:, :3].T > 1 - tol) & (np.abs(eq[:, 3:4] - eq[:, 3:4].T) < tol)
    first = np.argmax(same, axis=1)
    return eq[first == np.arange(len(eq))]


def fixed_normals(K: int, scale) -> np.ndarray:
    """K unit facet normals (in wrench units) spread evenly in the scaled space (Fibonacci sphere)."""
    i = np.arange(K) + 0.5
    z = 1 - 2 * i / K
    r = np.sqrt(1 - z**2)
    turn = np.pi * (3 - np.sqrt(5)) * i
    n = np.column_stack([r * np.cos(turn), r * np.sin(turn), z])
    A = n / np.asarray(scale)
    return A / np.linalg.norm(A, axis=1, keepdims=True)


def fitted_normals(point_sets, scale, K: int, iterations: int = 50) -> np.ndarray:
    """K facet normals fitted to the hulls of many point sets (e.g. a model's training configurations).

    Spherical k-means of the hulls' facet normals (in the scaled space,
    weighted by facet area), started from the Fibonacci sphere; six of the K
    stay on the ±axes so that {A w ≤ b} is always bounded. Deterministic.
    """
    normals, weights = [], []
    for p in point_sets:
        pts = np.vstack([np.asarray(p) / scale, np.zeros(3)])
        try:
            hull = ConvexHull(pts)
        except QhullError:
            continue
        tri = pts[hull.simplices]
        normals.append(hull.equations[:, :3])
        weights.append(np.linalg.norm(np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]), axis=1) / hull.area)
    axes = np.vstack([np.eye(3), -np.eye(3)])
    centres = fixed_normals(K - 6, np.ones(3))
    if normals:
        N, w = np.vstack(normals), np.concatenate(weights)
        for _ in range(iterations):
            label = np.argmax(N @ np.vstack([centres, axes]).T, axis=1)
            for k in range(len(centres)):
                c = (w[label == k, None] * N[label == k]).sum(axis=0)
                if np.linalg.norm(c) > 0:
                    centres[k] = c / np.linalg.norm(c)
    A = np.vstack([centres, axes]) / np.asarray(scale)
    return A / np.linalg.norm(A, axis=1, keepdims=True)


def support_offsets(A, points):
    """b = max(0, max_i A w_i): the support function of conv(points ∪ 0) along each row of A.

    ``points`` is (m, 3) or batched (k, m, 3); the result is (K,) or (k, K).
    """
    return np.maximum((np.asarray(points) @ A.T).max(axis=-2), 0.0)


def concavity(points, min_norm: float = 1.0) -> float:
    """Concavity of one configuration's wrench samples (Zhu et al. 2019, §IV-B, Table II).

    max over points w_i of (distance from w_i to the hull surface) / ‖w_i‖,
    the distance being min_k (b_k − a_k·w_i) over the hull's unit facets;
    points with ‖w_i‖ < min_norm are left out (0 if none is left).
    """
    points = np.asarray(points, dtype=float)
    norms = np.linalg.norm(points, axis=1)
    keep = norms >= min_norm
    if not keep.any():
        return 0.0
    A, b = hull_halfspaces(points, np.ones(3), include_origin=False)
    depth = (b[None, :] - points[keep] @ A.T).min(axis=1)
    return float(max(0.0, (depth / norms[keep]).max()))


def vertices(A, b):
    """Vertices of the bounded polytope {A w ≤ b} (Chebyshev centre as the interior point)."""
    norms = np.linalg.norm(A, axis=1)
    res = linprog(np.r_[np.zeros(3), -1.0], A_ub=np.column_stack([A, norms]), b_ub=b,
                  bounds=[(None, None)] * 3 + [(0, None)])
    if not res.success or res.x[3] <= 0:
        raise ValueError("polytope has no interior")
    return HalfspaceIntersection(np.column_stack([A, -b]), res.x[:3]).intersections


def distance_to_hull(query, points):
    """Euclidean distance from each query point to conv(points) (a small NNLS per point)."""
    rho = 1e4 * max(1.0, np.abs(points).max())
    M = np.vstack([np.asarray(points).T, rho * np.ones(len(points))])
    return np.array([nnls(M, np.r_[q, rho])[1] for q in np.atleast_2d(query)])


def outer_error(points, scale, A) -> float:
    """Largest distance from the outer polytope {A w ≤ support} to the exact hull, relative to the largest wrench.

    Measured in the scaled space (w / s), where force and torque are comparable.
    """
    pts = np.vstack([np.asarray(points) / scale, np.zeros(3)])
    A = A * np.asarray(scale)
    extra = vertices(A, support_offsets(A, pts))
    return float(distance_to_hull(extra, pts).max() / np.linalg.norm(pts, axis=1).max())
