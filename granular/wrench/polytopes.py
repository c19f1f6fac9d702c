"""Feasible wrench spaces W as polytopes: half-spaces A w ≤ b (Zhu et al. 2019, eq. 1).

Two representations of W(θ) from the m predicted extreme wrenches:

* exact: the convex hull of the points and the origin, as its minimal
  half-space form (coplanar facets merged); its A changes with θ;
* fixed normals: K facet normals fixed once per model, spread over the
  sphere; the offsets b(θ) are the support function of the points, so the
  polytope is an outer approximation of the hull whose A never changes.

The exact hull, the support function and concavity work in any dimension: planar wrenches (3)
and 3D ones (6, :mod:`granular.learning.model3d`); the fitted normals are planar.

Force and torque have different units, so geometry is done in a scaled space
w / s with s = (force scale, force scale, torque scale) and brought back to
wrench units with unit-norm rows of A.
"""
from __future__ import annotations

import numpy as np

from granular.frames import MIRROR

ZERO_A = np.vstack([np.eye(3), -np.eye(3)])


def _box(dim: int) -> np.ndarray:
    """±e_i (2 dim, dim): the normals of W = {0} and the tiny cross-polytope that pads a flat set."""
    return ZERO_A if dim == 3 else np.vstack([np.eye(dim), -np.eye(dim)])
#: Relative size of the padding that makes a flat point set a thin, bounded solid.
PAD = 1e-6
#: A hull whose volume is below this share of its extent³ is flat but for rounding (a legitimately thin
#: W, the round foot's on a rigid floor, has ~1e-4; sand's 1e-2).
FLAT = 1e-9


def hull_halfspaces(points, scale, include_origin: bool = True):
    """Minimal (A, b) with conv(points [∪ 0]) = {w : A w ≤ b}; rows of A are unit vectors.

    At zero size the result is W = {0}. A flat or degenerate point set (qhull
    finds no full-dimensional hull) is padded by a tiny octahedron (PAD in
    scaled units) so the polytope stays bounded and contains the origin
    (b ≥ 0 whenever the origin is included).
    """
    pts = np.asarray(points, dtype=float) / scale
    dim = pts.shape[1]
    if include_origin:
        pts = np.concatenate([pts, np.zeros((1, dim))])
    if np.abs(pts).max() <= PAD:
        return _box(dim).copy(), np.zeros(2 * dim)
    eq = _merge_coplanar(_equations(pts))
    A = eq[:, :dim] / scale
    norms = np.sqrt(np.einsum("ij,ij->i", A, A))
    A /= norms[:, None]
    b = -eq[:, dim] / norms
    if include_origin:
        np.maximum(b, 0.0, out=b)
    return A, b


def _equations(pts):
    """qhull's facet equations of conv(pts); a flat set, or one flat but for rounding (a round
    foot's W, whose torque follows its force, at a depth of 1e-15 m), padded by a tiny octahedron,
    so that the polytope is bounded, holds the origin and has a thickness the QP solvers resolve."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        hull = ConvexHull(pts)
        if hull.volume > FLAT * np.ptp(pts, axis=0).max() ** pts.shape[1]:
            return hull.equations
    except QhullError:
        pass
    pad = pts.mean(axis=0) + PAD * _box(pts.shape[1])
    return ConvexHull(np.concatenate([pts, pad]), qhull_options="QJ").equations


def _merge_coplanar(eq, tol: float = 1e-9):
    """Drop facets (triangles of one flat face) that repeat an earlier facet's plane."""
    same = (eq[:, :-1] @ eq[:, :-1].T > 1 - tol) & (np.abs(eq[:, -1:] - eq[:, -1:].T) < tol)
    first = np.argmax(same, axis=1)
    return eq[first == np.arange(len(eq))]


_AXES = np.vstack([np.eye(3), -np.eye(3)])


def _half_sphere(n: int) -> np.ndarray:
    """n unit vectors spread over the half-sphere x > 0 (a Fibonacci lattice with its pole on x)."""
    i = np.arange(2 * n) + 0.5
    x = 1 - 2 * i / (2 * n)
    r = np.sqrt(1 - x**2)
    turn = np.pi * (3 - np.sqrt(5)) * i
    pts = np.column_stack([x, r * np.cos(turn), r * np.sin(turn)])
    return pts[x > 0]


def _mirror_closed(half, scale):
    """The six ±axes, the ``half`` normals and their mirror images (−x, z, −τ), in wrench units.

    A mirror-closed set keeps W(d, −φ) the exact mirror of W(d, φ).
    """
    n = np.vstack([_AXES, half, half * MIRROR])
    A = n / np.asarray(scale)
    return A / np.linalg.norm(A, axis=1, keepdims=True)


def _check_K(K: int):
    if K < 8 or K % 2:
        raise ValueError(f"the number of fixed normals must be even and at least 8, got {K}")


def fixed_normals(K: int, scale) -> np.ndarray:
    """K unit facet normals (in wrench units) spread evenly in the scaled space, mirror-closed."""
    _check_K(K)
    return _mirror_closed(_half_sphere((K - 6) // 2), scale)


def fitted_normals(point_sets, scale, K: int, iterations: int = 50) -> np.ndarray:
    """K facet normals fitted to the hulls of many point sets (e.g. a model's training configurations).

    Spherical k-means (weighted by facet area, in the scaled space) of the
    hulls' facet normals folded onto the half x ≥ 0 by the mirror map, then
    mirrored back; the six ±axes are always kept, so {A w ≤ b} is bounded.
    Deterministic.
    """
    from scipy.spatial import ConvexHull, QhullError

    _check_K(K)
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
    centres = _half_sphere((K - 6) // 2)
    if normals:
        N, w = np.vstack(normals), np.concatenate(weights)
        N = np.where(N[:, :1] < 0, N * MIRROR, N)
        for _ in range(iterations):
            label = np.argmax(N @ centres.T, axis=1)
            for k in range(len(centres)):
                c = (w[label == k, None] * N[label == k]).sum(axis=0)
                if np.linalg.norm(c) > 0:
                    centres[k] = c / np.linalg.norm(c)
    return _mirror_closed(centres, scale)


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
    A, b = hull_halfspaces(points, np.ones(points.shape[1]), include_origin=False)
    depth = (b[None, :] - points[keep] @ A.T).min(axis=1)
    return float(max(0.0, (depth / norms[keep]).max()))


def vertices(A, b):
    """Vertices of the bounded polytope {A w ≤ b} (Chebyshev centre as the interior point)."""
    from scipy.spatial import HalfspaceIntersection

    from scipy.optimize import linprog

    norms = np.linalg.norm(A, axis=1)
    dim = A.shape[1]
    res = linprog(np.r_[np.zeros(dim), -1.0], A_ub=np.column_stack([A, norms]), b_ub=b,
                  bounds=[(None, None)] * dim + [(0, None)])
    if not res.success or res.x[dim] <= 0:
        raise ValueError("polytope has no interior")
    return HalfspaceIntersection(np.column_stack([A, -b]), res.x[:dim]).intersections


def distance_to_hull(query, points):
    """Euclidean distance from each query point to conv(points) (a small NNLS per point)."""
    from scipy.optimize import nnls

    rho = 1e4 * max(1.0, np.abs(points).max())
    M = np.vstack([np.asarray(points).T, rho * np.ones(len(points))])
    return np.array([nnls(M, np.r_[q, rho])[1] for q in np.atleast_2d(query)])


def outer_error(points, scale, A) -> float:
    """Largest distance from the outer polytope {A w ≤ support} to the exact hull, relative to the largest wrench.

    Measured in the scaled space (w / s), where force and torque are comparable.
    """
    pts = np.vstack([np.asarray(points) / scale, np.zeros(len(scale))])
    A = A * np.asarray(scale)
    extra = vertices(A, support_offsets(A, pts))
    return float(distance_to_hull(extra, pts).max() / np.linalg.norm(pts, axis=1).max())
