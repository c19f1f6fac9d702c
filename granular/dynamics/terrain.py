"""Terrain profiles: the undisturbed surface of the medium, z = h(x).

A profile is piecewise linear through the points (x_i, z_i), extended
flat-wise beyond its ends with the slope of its end segments. ``flat`` and
``slope`` are the one-segment cases. Outward normals point out of the medium
(upwards).
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np
from granular.compiled import kernel

from granular.errors import GranularError


@dataclass(frozen=True)
class Terrain:
    """Piecewise-linear surface through ``xs`` (increasing) and ``zs`` (m)."""

    xs: tuple
    zs: tuple

    def __post_init__(self):
        xs, zs = np.asarray(self.xs, float), np.asarray(self.zs, float)
        if xs.ndim != 1 or xs.shape != zs.shape or len(xs) < 2:
            raise GranularError("terrain needs at least two points (x, z) of equal count")
        if not np.all(np.isfinite(xs)) or not np.all(np.isfinite(zs)):
            raise GranularError("terrain points must be finite numbers")
        if np.any(np.diff(xs) <= 0):
            raise GranularError("terrain x coordinates must be strictly increasing")
        object.__setattr__(self, "_x", xs)
        object.__setattr__(self, "_points", (tuple(xs.tolist()), tuple(zs.tolist())))
        object.__setattr__(self, "_z", zs)
        d = np.stack([np.diff(xs), np.diff(zs)], axis=1)
        t = d / np.linalg.norm(d, axis=1, keepdims=True)
        object.__setattr__(self, "_t", t)
        object.__setattr__(self, "_n", np.stack([-t[:, 1], t[:, 0]], axis=1))
        object.__setattr__(self, "_a", np.column_stack([xs[:-1], zs[:-1]]))
        lengths = np.hypot(np.diff(xs), np.diff(zs))
        object.__setattr__(self, "_lo", np.where(np.arange(len(lengths)) == 0, -np.inf, 0.0))
        object.__setattr__(self, "_hi", np.where(np.arange(len(lengths)) == len(lengths) - 1, np.inf, lengths))

    def height(self, x):
        """Surface height h(x), extrapolating the end segments (a float for a float x)."""
        if isinstance(x, float):  # a torso's height, every control period: no numpy for one number
            xs, zs = self._points
            i = min(max(bisect_right(xs, x) - 1, 0), len(xs) - 2)
            return zs[i] + (x - xs[i]) * (zs[i + 1] - zs[i]) / (xs[i + 1] - xs[i])
        x = np.asarray(x, float)
        i = self._segment(x)
        return self._z[i] + (x - self._x[i]) * (self._z[i + 1] - self._z[i]) / (self._x[i + 1] - self._x[i])

    def normal(self, x):
        """Outward unit normal of the segment under x."""
        return self._n[self._segment(np.asarray(x, float))]

    def _segment(self, x):
        return np.clip(np.searchsorted(self._x, x, side="right") - 1, 0, len(self._x) - 2)

    @property
    def arrays(self):
        """(start points, unit tangents, normals, lower and upper arc-length limits) of the segments."""
        return self._a, self._t, self._n, self._lo, self._hi

    def closest(self, p):
        """For points ``p`` (N, 2): closest surface points (N, 2), outward normals (N, 2), signed heights (N,).

        The end segments extend to infinity. In the wedge above a convex kink
        the closest point is the kink, and the normal is that of the first
        segment reaching it.
        """
        return closest(np.asarray(p, dtype=float).reshape(-1, 2), *self.arrays)


@kernel("f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[::1], f8[::1]")
def closest(p, a, t, n, lo, hi):
    """Closest points, normals and signed heights of points ``p`` over segments (see Terrain.closest)."""
    N, S = len(p), len(a)
    foot = np.empty((N, 2))
    normal = np.empty((N, 2))
    height = np.empty(N)
    for i in range(N):
        best = np.inf
        for j in range(S):
            s = (p[i, 0] - a[j, 0]) * t[j, 0] + (p[i, 1] - a[j, 1]) * t[j, 1]
            s = min(max(s, lo[j]), hi[j])
            fx, fz = a[j, 0] + s * t[j, 0], a[j, 1] + s * t[j, 1]
            dist = (p[i, 0] - fx) ** 2 + (p[i, 1] - fz) ** 2
            if dist < best:
                best = dist
                foot[i, 0], foot[i, 1] = fx, fz
                normal[i, 0], normal[i, 1] = n[j, 0], n[j, 1]
        height[i] = (p[i, 0] - foot[i, 0]) * normal[i, 0] + (p[i, 1] - foot[i, 1]) * normal[i, 1]
    return foot, normal, height


def flat(height: float = 0.0) -> Terrain:
    return Terrain((-1e3, 1e3), (height, height))


def slope(angle: float, height: float = 0.0) -> Terrain:
    """A plane through (0, height) rising at ``angle`` (rad) towards +x."""
    return Terrain((-1e3, 1e3), (height - 1e3 * np.tan(angle), height + 1e3 * np.tan(angle)))
