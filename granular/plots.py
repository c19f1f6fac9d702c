"""Figures: wrench spaces as in the paper's Fig. 3, and the training report.

Functions take plain arrays and write PNG files atomically.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from mpl_toolkits.mplot3d.art3d import Poly3DCollection  # noqa: E402
from scipy.spatial import ConvexHull, QhullError  # noqa: E402


def save(fig, path) -> Path:
    """Save ``fig`` to ``path`` atomically and close it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=120, bbox_inches="tight")
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _outline_2d(ax, pts2, **style):
    """The convex outline of 2-D points (with the origin), closed."""
    pts2 = np.vstack([pts2, [0.0, 0.0]])
    try:
        ring = pts2[ConvexHull(pts2).vertices]
    except QhullError:
        ring = pts2
    ring = np.vstack([ring, ring[:1]])
    return ax.plot(ring[:, 0], ring[:, 1], **style)[0]


def wrench_spaces(points_list, labels, path, title=""):
    """Fig. 3 views: (a) 3-D polytope of the first θ, (b) its F_x–F_z view, (c) all θ compared in F_x–F_z."""
    fig = plt.figure(figsize=(15, 4.8))
    ax3 = fig.add_subplot(1, 3, 1, projection="3d")
    first = np.vstack([points_list[0], np.zeros(3)])
    try:
        hull = ConvexHull(first)
        faces = Poly3DCollection(first[hull.simplices], alpha=0.25, facecolor="tab:orange", edgecolor="k",
                                 linewidths=0.3)
        ax3.add_collection3d(faces)
    except QhullError:
        pass
    ax3.scatter(*first[:-1].T, color="tab:blue", s=10)
    ax3.set_xlabel("F_x (N)")
    ax3.set_ylabel("F_z (N)")
    ax3.set_zlabel("τ (N·m)")
    ax3.set_title(f"(a) W at {labels[0]}")

    ax = fig.add_subplot(1, 3, 2)
    ax.scatter(points_list[0][:, 0], points_list[0][:, 1], s=12, c=points_list[0][:, 2], cmap="coolwarm")
    _outline_2d(ax, points_list[0][:, :2], color="k", lw=1)
    ax.set_xlabel("F_x (N)")
    ax.set_ylabel("F_z (N)")
    ax.set_title("(b) F_x–F_z view (colour: τ)")
    ax.axhline(0, color="0.8", lw=0.5)
    ax.axvline(0, color="0.8", lw=0.5)

    ax = fig.add_subplot(1, 3, 3)
    for pts, label in zip(points_list, labels):
        line = _outline_2d(ax, pts[:, :2], lw=1.5, label=label)
        ax.scatter(pts[:, 0], pts[:, 1], s=6, color=line.get_color())
    ax.set_xlabel("F_x (N)")
    ax.set_ylabel("F_z (N)")
    ax.set_title("(c) tilted vs deeper")
    ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return save(fig, path)


def training_report(cv: dict, fixed: dict, concavity: dict, path, title=""):
    """CV errors per regressor, fixed-normal approximation error against K, concavity per configuration."""
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ax = axes[0]
    if cv:
        names = list(cv)
        keys = ["rel_rmse", "rel_rmse_fx", "rel_rmse_fz", "rel_rmse_tau"]
        width = 0.8 / len(keys)
        for i, key in enumerate(keys):
            ax.bar(np.arange(len(names)) + i * width, [cv[n][key] for n in names], width,
                   label=key.replace("rel_rmse_", "").replace("rel_rmse", "all"))
        ax.set_xticks(np.arange(len(names)) + 0.4 - width / 2, names)
        ax.legend(fontsize=8)
    ax.set_ylabel("relative RMS error (held-out)")
    ax.set_title("cross-validation")

    ax = axes[1]
    Ks = [int(k) for k in fixed]
    for kind, colour in (("fitted", "tab:blue"), ("sphere", "tab:gray")):
        ax.plot(Ks, [fixed[str(k)][kind]["max_rel_distance"] for k in Ks], "o-", color=colour,
                label=f"{kind}: largest")
        ax.plot(Ks, [fixed[str(k)][kind]["mean_rel_distance"] for k in Ks], "s--", color=colour,
                label=f"{kind}: mean")
    ax.set_xlabel("K fixed normals")
    ax.set_ylabel("distance outside hull / largest wrench")
    ax.set_title("fixed-normal outer approximation")
    ax.legend(fontsize=8)

    ax = axes[2]
    ax.bar(np.arange(len(concavity["per_config"])), concavity["per_config"])
    ax.set_xlabel("configuration (below surface)")
    ax.set_ylabel("concavity")
    ax.set_title(f"concavity: mean {concavity['average']:.4f}, worst {concavity['worst']:.4f}")
    if title:
        fig.suptitle(title)
    return save(fig, path)
