"""The window of pebbles' friction angle in which quad-slide reproduces the paper's Fig. 10c
(granular/data/media.py says why κ exists and what this sweep found).

    python3 docs/pebbles_drag.py 35 38 39 40 41 42        # ϕ_pebbles in degrees, ~30 s each
    python3 docs/pebbles_drag.py --dense 35 37             # sand and pebbles on a denser grid

For each angle: pebbles synthesized with κ = tan ϕ / tan ϕ_sand, trained, and quad-slide run on it
beside sand (under the scenario's law, max-dissipation); one line each: how far it slid, its peak
speed and when, where it stopped and how deep its feet are. Scratch files go to a temporary folder.
"""
from __future__ import annotations

import argparse
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from granular.data import dataset as wd
from granular.data import media, synth
from granular.scenarios import scenario as scenarios

#: The denser grid of --dense: tilts every 0.05–0.15 rad near upright, depths every 5 mm near the surface.
DENSE_TILTS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6, 0.9, 1.2, 1.5)
DENSE_DEPTHS = {"sand": (0.0, -0.005, -0.01, -0.02, -0.03, -0.05, -0.07, -0.10, -0.13),
                "pebbles": (0.0, -0.0075, -0.015, -0.03, -0.045, -0.06, -0.08, -0.1)}


def model(name: str, folder: Path, dense: bool, **preset) -> str:
    """The medium synthesized with ``preset``'s changes and trained; the model file's path."""
    if dense:
        preset.update(tilts=DENSE_TILTS, depths=DENSE_DEPTHS[name])
    media.MEDIA[name] = replace(media.MEDIA[name], **preset)
    data, out = folder / f"{name}.h5", folder / f"{name}_model.h5"
    wd.write(synth.synthesize("rft", name, progress=False), data)
    subprocess.run(["granular", "train", str(data), "--out", str(out)], capture_output=True, check=True)
    return str(out)


def slide(medium: str) -> str:
    rec = scenarios.run(scenarios.load("quad-slide").with_(medium=medium))
    speed = np.abs(rec.v[:, 0])
    peak = int(np.argmax(speed))
    return (f"slid {rec.q[-1, 0] - rec.q[0, 0]:.2f} m, peak {speed[peak]:.2f} m/s at {rec.t[peak]:.2f} s, "
            f"torso at x {rec.q[-1, 0]:.3f} z {rec.q[-1, 1]:.3f} m angle {rec.q[-1, 2]:.2f} rad, "
            f"feet {(-rec.theta[-1, :, 0]).max():.3f} m deep, speed at the end {np.abs(rec.v[-1]).max():.1e}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("angles", nargs="+", type=float, help="ϕ_pebbles (degrees)")
    parser.add_argument("--dense", action="store_true", help="both media on the denser grid")
    args = parser.parse_args(argv)
    sand_angle = media.FRICTION_ANGLE["sand"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        print(f"sand: {slide(model('sand', folder, args.dense) if args.dense else 'sand')}", flush=True)
        for angle in args.angles:
            kappa = float(np.tan(np.radians(angle)) / np.tan(sand_angle))
            print(f"pebbles, ϕ {angle:g}° (κ {kappa:.3f}): {slide(model('pebbles', folder, args.dense, drag=kappa))}",
                  flush=True)


if __name__ == "__main__":
    main()
