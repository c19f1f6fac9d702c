"""Sampling grids of the data-acquisition protocol (Zhu et al. 2019, §IV-A).

Configurations θ = (d, φ) form a grid (Table I); velocity directions form a
uniform grid on the unit sphere in (x, z, φ) built from spherical coordinates:
the two poles (±z) plus ``rings`` latitude rings of 8 azimuths each, so
m = 2 + 8·rings (m = 26 and m = 58 as in the paper).
"""
from __future__ import annotations

import numpy as np

from granular.errors import GranularError
from granular.frames import MIRROR

AZIMUTHS = 8


def sphere_directions(m: int = 26) -> np.ndarray:
    """(m, 3) unit directions in (x, z, φ); the poles lie along ±z."""
    rings, rest = divmod(m - 2, AZIMUTHS)
    if m < 2 + AZIMUTHS or rest:
        raise GranularError(f"number of directions must be 2 + 8k (26, 34, …, 58, …), got {m}")
    polar = np.pi * np.arange(1, rings + 1) / (rings + 1)
    azimuth = 2 * np.pi * np.arange(AZIMUTHS) / AZIMUTHS
    p, a = np.meshgrid(polar, azimuth, indexing="ij")
    ring = np.stack([np.sin(p) * np.cos(a), np.cos(p), np.sin(p) * np.sin(a)], axis=-1).reshape(-1, 3)
    dirs = np.vstack([[0.0, 1.0, 0.0], ring, [0.0, -1.0, 0.0]])
    dirs[np.abs(dirs) < 1e-15] = 0.0
    return dirs


def direction_set(m) -> np.ndarray:
    """The directions an acquisition samples: :func:`sphere_directions` of ``m``, or ``m`` itself
    when it is a set of directions (m, 3) (say, an existing dataset's)."""
    return sphere_directions(m) if np.ndim(m) == 0 else np.asarray(m, dtype=float)


#: The 3D direction sets on the unit sphere of ℝ⁶, by size: the axes ±e_i (12); and the edge
#: midpoints (±e_i ± e_j)/√2 (72); and the face centres (±e_i ± e_j ± e_k)/√3 (232). Each is closed
#: under every sign flip, so under both mirrors of :mod:`granular.frames3d`.
SIZES_3D = (12, 72, 232)


def sphere_directions_3d(m: int = 72) -> np.ndarray:
    """(m, 6) unit twist directions (v_x, v_y, v_z, ω_x, ω_y, ω_z) for a 3D acquisition (:data:`SIZES_3D`)."""
    if m not in SIZES_3D:
        raise GranularError(f"number of 3D directions must be one of {', '.join(map(str, SIZES_3D))}, got {m}")
    from itertools import combinations, product

    out = []
    for k in range(1, SIZES_3D.index(m) + 2):
        for axes in combinations(range(6), k):
            for signs in product((1.0, -1.0), repeat=k):
                u = np.zeros(6)
                u[list(axes)] = signs
                out.append(u / np.sqrt(k))
    return np.array(out)


def mirror_permutation(directions: np.ndarray, atol: float = 1e-6, mirror=None) -> np.ndarray:
    """Index ``p`` with directions[p[i]] the mirror image of directions[i]: by ``mirror`` (a diagonal),
    by default x → −x, planar (−x, z, −φ) or 3D (:data:`granular.frames3d.MIRROR_X`) by the set's width.

    Raises if the direction set is not closed under the mirror map, which the
    symmetry of the learned model needs.
    """
    if mirror is None:
        from granular.frames3d import MIRROR_X

        mirror = MIRROR_X if directions.shape[1] == 6 else MIRROR
    mirrored = directions * mirror
    dist = np.linalg.norm(mirrored[:, None, :] - directions[None, :, :], axis=-1)
    perm = np.argmin(dist, axis=1)
    if np.any(dist[np.arange(len(perm)), perm] > atol):
        raise GranularError(f"velocity directions are not closed under the mirror map {mirror.tolist()}; "
                            "the wrench-space model needs every direction's mirror image")
    return perm


def config_grid(depths, tilts) -> np.ndarray:
    """(n, 2) configurations [d, φ], depth-major."""
    d, phi = np.meshgrid(np.asarray(depths, float), np.asarray(tilts, float), indexing="ij")
    return np.stack([d.ravel(), phi.ravel()], axis=-1)


def random_configs(d_min: float, phi_max: float, samples: int, seed: int = 0) -> np.ndarray:
    """``samples`` configurations θ (samples, 2) drawn uniformly in a model's data range: depths from
    its deepest data ``d_min`` to a tenth of it, tilts within ±``phi_max`` (the fixed-normal error's)."""
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.uniform(d_min, 0.1 * d_min, samples), rng.uniform(-phi_max, phi_max, samples)])
