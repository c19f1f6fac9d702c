"""Figures of a 3D (MuJoCo) run: ``granular sim FILE.toml --plot DIR`` writes ``DIR/motion.png``:
each body's height and the feet's depth against time, and the energy record."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from granular.apps.plots import plt, save


def motion(world, rec, directory) -> list:
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    m, t = world.mj_model, rec["t"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.6), constrained_layout=True)
    for b in range(1, m.nbody):
        axes[0].plot(t, rec["pos"][:, b, 2], lw=1, label=m.body(b).name or f"body {b}")
    axes[0].set_ylabel("height of the body's frame (m)")
    for j, name in enumerate(world.feet.names):
        axes[1].plot(t, np.minimum(rec["theta"][:, j, 0], 0.0), lw=1, label=name)
    d_min = world.feet.model.d_min
    axes[1].axhline(d_min, color="0.5", ls=":", lw=1, label=f"deepest data ({d_min:g} m)")
    axes[1].set_ylabel("foot depth d (m, < 0 in the medium)")
    axes[2].plot(t, rec["energy"], color="k", lw=1)
    axes[2].set_ylabel("kinetic + potential energy (J)")
    for ax in axes:
        ax.set_xlabel("time (s)")
        ax.grid(alpha=0.3)
    for ax in axes[:2]:
        ax.legend(fontsize=7, ncol=2)
    fig.suptitle(f"{world.path.stem}: {world.feet.model.dataset.medium} (3D), {world.feet.law}", fontsize=10)
    return [str(save(fig, directory / "motion.png"))]
