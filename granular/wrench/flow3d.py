"""The data's flow rule in three dimensions: the wrench for a direction of motion, on the sphere of ℝ⁶.

As in the plane (:mod:`granular.wrench.flow`, where the reasons are given), the data-flow law
applies the data's own wrench for the foot's direction of motion rather than the hull's
maximum-dissipation point: w(u) interpolates the recorded wrenches W_j(θ) over the sampled unit
directions U_j (in the velocity-scaled space) with a cubic radial basis on the chord distance and
an affine tail, w(u) = Σ_j |u − U_j|³ c_j + e_0 + Σ_k u_k e_k, solved so that each recorded
direction is hit exactly. The solve depends on the directions only, so the interpolant is a fixed
weighting of the recorded wrenches: w(u) = Σ_j a_j(u) W_j(θ) (the cardinal weights a(u)).
Where the interpolant would make the medium do work on the foot (w·v > 0 at p_r), w is replaced by
the nearest wrench that does none, in the norm dual to the velocity scale (the planar
``dissipative_into``'s rule).
"""
from __future__ import annotations

import numpy as np

from granular.frames3d import point_velocity


class SphereMap:
    """Cardinal interpolation weights over the unit directions U (m, 6) of a 3D dataset, scaled by
    ``velocity_scale`` (6,)."""

    def __init__(self, directions, velocity_scale):
        U = np.asarray(directions, dtype=float)
        self.directions = U / np.linalg.norm(U, axis=1, keepdims=True)
        self.scale = np.asarray(velocity_scale, dtype=float)
        m, D = self.directions.shape
        system = np.zeros((m + D + 1, m + D + 1))
        system[:m, :m] = self._kernel(self.directions)
        system[:m, m], system[m, :m] = 1.0, 1.0
        system[:m, m + 1:], system[m + 1:, :m] = self.directions, self.directions.T
        # the cardinal weights of a query are [k(u), 1, u] times the first m columns of the inverse
        self.cardinal = np.ascontiguousarray(np.linalg.inv(system)[:, :m])

    def _kernel(self, u):
        r2 = np.maximum(2.0 - 2.0 * u @ self.directions.T, 0.0)
        return r2 * np.sqrt(r2)

    def weights(self, u) -> np.ndarray:
        """a(u) (k, m) for unit directions u (k, 6): w(u) = a(u) @ W."""
        u = np.atleast_2d(u)
        return np.hstack([self._kernel(u), np.ones((len(u), 1)), u]) @ self.cardinal

    def wrenches(self, points, twists, arms) -> np.ndarray:
        """The data's wrench (k, 6) about p_r for twists (k, 6) of p_center, from the extreme wrenches
        (k, m, 6) at each foot's θ; ``arms`` (k, 3) is p_r − p_center. Zero at rest."""
        twists = np.atleast_2d(np.asarray(twists, dtype=float))
        scaled = twists / self.scale
        norm = np.linalg.norm(scaled, axis=1)
        moving = norm > 0
        out = np.zeros((len(twists), 6))
        if not moving.any():
            return out
        a = self.weights(scaled[moving] / norm[moving, None])
        out[moving] = np.einsum("km,kmd->kd", a, np.asarray(points)[moving])
        at_r = np.concatenate([point_velocity(twists, arms), twists[:, 3:]], axis=1)
        return dissipative(at_r, self.scale, out)


def dissipative(v, S, w) -> np.ndarray:
    """w (k, 6) less any power it would put into twists v (k, 6) (w·v > 0): w − (w·v / vᵀS⁻²v) S⁻² v,
    the nearest wrench that does no work, in the norm dual to the velocity scale S."""
    metric = v / (S * S)
    p, q = np.einsum("kd,kd->k", w, v), np.einsum("kd,kd->k", v, metric)
    fix = (p > 0) & (q > 0)
    out = w.copy()
    out[fix] -= (p[fix] / q[fix])[:, None] * metric[fix]
    return out
