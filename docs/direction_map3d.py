"""Where the 3D model's error on the shipped 3D paths comes from (docs/3d.md, "How well the model follows 3D-RFT").

    python3 docs/direction_map3d.py                     # the shipped sand3d model, seconds
    python3 docs/direction_map3d.py --model m232.h5     # another 3D sand model, e.g. on 232 directions

For each shipped sand path (data/validation3d/): the model's NRMSE under data-flow (as `granular
validate` scores it: per component, against the path's RMS force or torque; their mean), then, for
each tail of the interpolant over directions (granular.wrench.flow3d: affine, or with the bottom
disc's leading share), that interpolant fed 3D-RFT's exact extreme wrenches at each sample's θ (so
the θ regression plays no part) and its largest error in τ_y (N·m). The model uses the tail its
data choose (leave one direction out).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from granular.data import paths3d, rft3d
from granular.data.media import medium
from granular.frames3d import foot_axis
from granular.learning import model3d
from granular.learning.catalog import load_model
from granular.wrench.flow3d import TAILS, SphereMap

PATHS = Path(__file__).resolve().parent.parent / "data" / "validation3d"


def nrmse(x, ref) -> float:
    """granular validate's score: the mean over components of RMS error / the path's RMS force or torque."""
    e = np.sqrt(((x - ref) ** 2).mean(axis=0))
    force, torque = np.sqrt((ref[:, :3] ** 2).sum(axis=1).mean()), np.sqrt((ref[:, 3:] ** 2).sum(axis=1).mean())
    return float(np.r_[e[:3] / force, e[3:] / torque].mean())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a 3D sand model file (default: the shipped sand3d)")
    args = parser.parse_args(argv)
    model = model3d.load(args.model) if args.model else load_model("sand3d", "3d")
    ds, sand, chosen = model.dataset, medium("sand"), model.direction_map
    maps = {tail: SphereMap(ds.directions, ds.velocity_scale, ds.foot.radius, tail) for tail in TAILS}
    print(f"{ds.m} directions, the model's tail: {chosen.tail}")
    print(f"{'path':20}{'model':>8}" + "".join(f"{'exact points, ' + t:>24}{'worst τ_y':>11}" for t in maps))
    for name in ("diagonal-sideways", "turning-drag", "vertical-twist"):
        p = paths3d.read(PATHS / f"sand_{name}.h5")
        arms = ds.foot.r_offset * foot_axis(p.theta[:, 1])
        exact = np.array([rft3d.foot_wrench(ds.foot, th, chosen.directions * ds.velocity_scale, sand.zeta, sand.coeffs)
                          for th in p.theta])
        row = f"{name:20}{nrmse(model.flow(p.theta, p.twist), p.wrench):8.3f}"
        for dmap in maps.values():
            interpolated = dmap.wrenches(exact, p.theta[:, 1], p.twist, arms)
            row += f"{nrmse(interpolated, p.wrench):24.3f}{np.abs(interpolated[:, 4] - p.wrench[:, 4]).max():11.1f}"
        print(row)


if __name__ == "__main__":
    main()
