"""The plunge over depth, one continuous run per bed (issue 16): the medium's resistance, the box's walls.

The acquisition reads a configuration's wrench at one instant of a 0.2 s run that starts after a
1 m/s descent from the surface (:mod:`granular.data.dem`), so its cells sample a fluctuating force
once each, after a transient. Here the foot is instead pushed straight down from the surface to
20 cm at 0.2 m/s (the runs' speed) along a prescribed path (``dem.PATH_SCRIPT``), upright and
flat (φ = 1.5 rad), and |F| = |(f_x, f_z)| is read over the whole descent: a profile over depth
per run. Beds differ in their box (today's 0.55 × 0.22 m against 1.5× wider and longer), their
seed, and how they were settled (at E 3e8 Pa, or at 1e7 and run at 3e8: ``young``, as
``dem_study``'s ``run_young``)::

    python3 -m granular.data.dem_plunge run --workdir /tmp/dem_plunge --beds N21,W21,N13e8 --out data/dem_plunge.csv
    python3 -m granular.data.dem_plunge report data/dem_plunge.csv --plot plunge.png

A row per (bed, path, depth): |F| averaged over ±5 mm of that depth. The CSV is rewritten after
every run, and a run already recorded in the workdir is reused (``dem.is_done``).
"""
from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from granular.data import dem
from granular.data.dem_study import _child_cpu, pick, read_rows, write_rows
from granular.errors import GranularError

log = logging.getLogger(__name__)

#: Waypoints (t s, x m, z m, φ rad) of p_center from the box's centre and the surface: 0.2 m/s down to
#: 20 cm. The flat foot's axis runs 0.3 m back along −x from p_center, so x = 0.15 centres it.
PATHS = {"upright": [[0.0, 0.0, 0.0, 0.0], [1.0, 0.0, -0.20, 0.0]],
         "flat": [[0.0, 0.15, 0.0, 1.5], [1.0, 0.15, -0.20, 1.5]]}
#: Depths (m) of the profile, each |F| a mean over ±HALF_WINDOW.
DEPTHS = np.round(np.arange(0.01, 0.195, 0.01), 3)
HALF_WINDOW = 0.005

_DEEP = dem.Bed(particles=5610, box=(0.55, 0.22, 0.6))   # the 12 and 18 cm rows' box (docs/beads-studies.md)
_WIDE = replace(_DEEP, box=(0.825, 0.33, 0.6), particles=12623)   # 1.5× wider and longer, as deep
_WIDER = replace(_DEEP, box=(1.2375, 0.495, 0.6), particles=28402)   # 1.5× _WIDE's width and length


@dataclass(frozen=True)
class PlungeBed:
    bed: dem.Bed
    run_young: float | None = None       # run at this stiffness (Pa) rather than the bed's own
    what: str = ""


def beds() -> dict:
    soft = dict(young=1e7)
    return {
        "N13e8": PlungeBed(replace(_DEEP, seed=13), what="0.55 × 0.22 m, settled at E 3e8 (the seed-13 cells' bed)"),
        "N21": PlungeBed(replace(_DEEP, seed=21, **soft), 3e8, "0.55 × 0.22 m, settled at E 1e7, run at 3e8"),
        "N22": PlungeBed(replace(_DEEP, seed=22, **soft), 3e8, "0.55 × 0.22 m, settled at E 1e7, run at 3e8"),
        "W21": PlungeBed(replace(_WIDE, seed=21, **soft), 3e8, "0.825 × 0.33 m, settled at E 1e7, run at 3e8"),
        "W22": PlungeBed(replace(_WIDE, seed=22, **soft), 3e8, "0.825 × 0.33 m, settled at E 1e7, run at 3e8"),
        "N21f": PlungeBed(replace(_DEEP, seed=21, wall_friction=0.0, **soft), 3e8,
                          "0.55 × 0.22 m, frictionless walls, settled at E 1e7, run at 3e8"),
        "W21f": PlungeBed(replace(_WIDE, seed=21, wall_friction=0.0, **soft), 3e8,
                          "0.825 × 0.33 m, frictionless walls, settled at E 1e7, run at 3e8"),
        "X21": PlungeBed(replace(_WIDER, seed=21, **soft), 3e8, "1.2375 × 0.495 m, settled at E 1e7, run at 3e8"),
    }


def profile(csv_path) -> np.ndarray:
    """|F| (N) at :data:`DEPTHS` from a path run's shipped record (low-passed, 200 Hz)."""
    rec = np.loadtxt(csv_path, delimiter=",", skiprows=1, ndmin=2)
    depth, force = -rec[:, 2], np.hypot(rec[:, 4], rec[:, 5])
    return np.array([force[np.abs(depth - d) <= HALF_WINDOW + 1e-9].mean() for d in DEPTHS])


def run_bed(name: str, pb: PlungeBed, workdir: Path, rows: list, out: Path | None, paths=tuple(PATHS)):
    from granular.foot import Foot

    foot, folder = Foot(), workdir / name
    dem.prepare_bed(pb.bed, folder, threads=1, progress=True)
    info = dem._bed_summary(pb.bed, folder)
    for path in paths:
        waypoints = PATHS[path]
        if any(r["bed"] == name and r["path"] == path for r in rows):
            continue
        params = dem.path_params(f"{path}_{name}", path, pb.bed, folder, info,
                                 dem.check_path(pb.bed, waypoints, foot, path).tolist(), foot, run_young=pb.run_young)
        done, t, c = dem.is_done(params, folder), time.time(), _child_cpu()
        record = dem.run_path(params, str(folder), timeout=6 * 3600)
        cpu = None if done else _child_cpu() - c
        log.info("%s %s: %.0f s", name, path, time.time() - t)
        seconds = json.loads(Path(record).with_suffix(".json").read_text())["seconds"]
        for d, f in zip(DEPTHS, profile(record)):
            rows.append({"bed": name, "path": path, "what": pb.what, "box": "x".join(f"{b:g}" for b in pb.bed.box),
                         "seed": pb.bed.seed, "wall_friction": pb.bed.wall_friction, "young_bed": pb.bed.young,
                         "young_run": pb.run_young or pb.bed.young,
                         "spheres": info["spheres"], "packing": info["packing_measured"], "bed_s": info["seconds"],
                         "run_s": seconds, "cpu_s": cpu, "depth": d, "F": round(float(f), 2)})
        if out is not None:
            write_rows(rows, out)


def _table(rows):
    """{(bed, path): |F| over DEPTHS} and the beds' rows, in the order recorded."""
    prof, meta = {}, {}
    for r in rows:
        prof.setdefault((r["bed"], r["path"]), {})[round(r["depth"], 3)] = r["F"]
        meta.setdefault(r["bed"], r)
    return {k: np.array([v.get(d, np.nan) for d in DEPTHS]) for k, v in prof.items()}, meta


def report(rows) -> str:
    """Markdown: the beds; |F| (kN) at 3–18 cm per run (means over ±1.5 cm); the growth from 12 to 18 cm;
    and each run's profile over every earlier bed's on the same path (the geometric mean of the ratio
    over 3–18 cm): wide boxes over today's, and beds of the same box over each other."""
    prof, meta = _table(rows)
    show = [0.03, 0.06, 0.09, 0.12, 0.15, 0.18]

    def at(f, d):   # the three profile points within 1.5 cm
        return np.nanmean(f[np.abs(DEPTHS - d) <= 0.0101])
    lines = ["| bed | what | spheres | packing | bed s | run | YADE s | " + " | ".join(f"{d * 100:.0f} cm" for d in show)
             + " | 18 / 12 cm |", "|---|---|---|---|---|---|---|" + "---|" * (len(show) + 1)]
    for (bed, path), f in prof.items():
        m, run_s = meta[bed], next(r["run_s"] for r in rows if r["bed"] == bed and r["path"] == path)
        lines.append(f"| {bed} | {m['what']} | {int(m['spheres'])} | {m['packing']:.3f} | {m['bed_s']:.0f} | {path} | "
                     f"{run_s:.0f} | " + " | ".join(f"{at(f, d) / 1e3:.2f}" for d in show)
                     + f" | {at(f, 0.18) / at(f, 0.12):.2f} |")
    deep = (DEPTHS >= 0.03) & (DEPTHS <= 0.18)
    lines += ["", "| run | one bed over another, 3–18 cm (geometric mean ± s.e. over the profile's depths) |", "|---|---|"]
    runs = list(prof)
    for i, (b, path) in enumerate(runs):
        for a, other in runs[:i]:
            if other == path:
                x = np.log(prof[b, path][deep] / prof[a, path][deep])
                se = np.exp(x.std(ddof=1) / np.sqrt(len(x))) - 1
                lines.append(f"| {path}: {b} ({meta[b]['box']}) / {a} ({meta[a]['box']}) | {np.exp(x.mean()):.2f} ± {se:.0%} |")
    return "\n".join(lines)


def plot(rows, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from granular.io.files import atomic_path

    prof, meta = _table(rows)
    fig, axes = plt.subplots(1, len(PATHS), figsize=(5 * len(PATHS), 4), constrained_layout=True)
    for ax, name in zip(np.atleast_1d(axes), PATHS):
        for (bed, p), f in prof.items():
            if p == name:
                smooth = meta[bed].get("wall_friction") == 0
                ax.plot(DEPTHS * 100, f / 1e3, ":^" if smooth else "--s" if bed.startswith("N") else "-o", ms=3,
                        label=f"{bed}: {meta[bed]['box']} m" + (", smooth walls" if smooth else ""))
        ax.set(title=f"{name} plunge, 0.2 m/s", xlabel="depth of p_center (cm)", ylabel="|F| (kN)")
        if ax.lines:
            ax.legend(fontsize=8)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m granular.data.dem_plunge", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the beds' plunges one after another (YADE on one thread), resumable")
    r.add_argument("--workdir", required=True, help="where beds and runs are kept (not in git)")
    r.add_argument("--beds", required=True, help=f"comma-separated, of: {', '.join(beds())}")
    r.add_argument("--out", required=True, help="results CSV (a row per bed, path and depth)")
    r.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, of: {', '.join(PATHS)} (default: all)")
    s = sub.add_parser("report", help="markdown tables of a results CSV")
    s.add_argument("results")
    s.add_argument("--plot", help="also draw the profiles into this image (.png)")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    try:
        if args.cmd == "report":
            rows = read_rows(args.results)
            if not rows:
                raise GranularError(f"{args.results}: no rows")
            print(report(rows))
            if args.plot:
                plot(rows, args.plot)
            return 0
        known = beds()
        names, paths = pick(args.beds, known, "bed"), pick(args.paths, PATHS, "path")
        rows = read_rows(args.out)
        for name in names:
            run_bed(name, known[name], Path(args.workdir).resolve(), rows, Path(args.out), paths)
        print(report(rows))
    except GranularError as exc:
        print(f"dem_plunge: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
