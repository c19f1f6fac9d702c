"""How the DEM bed's artefacts and speed-ups move the wrench (issue 16): a re-runnable study.

Each *variant* is a bed (``dem.Bed``) and an insertion speed; each is run in the same few
configurations and directions through :mod:`granular.data.dem`'s own acquisition script, one YADE
process at a time on one thread, and the wrench is read the way the dataset reads it
(``ingest.extract``: low-passed at 50 Hz, at the instant the run passes θ_des, in F_r). A variant's
change is measured against a reference variant, cell by cell:

    change = |F_v − F_ref| / |F_ref|,   F = (f_x, f_z) at θ_des

and, less noisy, the same on the mean force over the last 40 % of the run (``win``). Results go to a
CSV row per run, rewritten atomically after every run, so the study reports as it goes and an
interrupted study continues where it stopped (runs already recorded are reused by
``dem.is_done``)::

    python3 -m granular.data.dem_study run --workdir /tmp/dem_study --variants E3e8,E3e7,E1e7 \\
        --out data/dem_study/results.csv
    python3 -m granular.data.dem_study report data/dem_study/results.csv

``run_s`` is YADE's own wall time for a run (loading the bed included), ``wall_s`` the time the
Python call took (starting YADE included; for a batch, its time divided by its runs), ``cpu_s`` the
CPU time YADE used for it (the figure to compare on a machine shared with other jobs).
"""
from __future__ import annotations

import argparse
import csv
import json
import logging
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from granular.data import dem
from granular.errors import GranularError

log = logging.getLogger(__name__)

#: (d m, φ rad): one upright and one tilted configuration, both within the training grid.
CONFIGS = {"upright": (-0.04, 0.0), "tilted": (-0.04, 0.75)}
#: Unit directions in (x, z, φ), scaled by the Beads velocity scale: straight down, a horizontal drag,
#: a diagonal down and forward.
DIRECTIONS = {"down": (0.0, -1.0, 0.0), "drag": (1.0, 0.0, 0.0), "diagonal": (2 ** -0.5, -(2 ** -0.5), 0.0)}
T_TOTAL, CUTOFF_HZ = 0.2, 50.0
#: The Beads protocol's drag speed (m/s), the x and z of dem.BEADS_VELOCITY_SCALE.
BEADS_SPEED = 0.2
#: The fraction of the run over whose end the windowed wrench is averaged.
WINDOW = 0.4


@dataclass(frozen=True)
class Variant:
    """A bed, an insertion speed, and the variant it is compared with (its reference)."""

    bed: dem.Bed
    insert_speed: float = 1.0
    reference: str = ""
    what: str = ""
    batch: bool = False                   # a configuration's directions in one YADE process (dem.run_batch)
    run_young: float | None = None        # run the bed at this stiffness (Pa) rather than the one it was made with
    speed: float = BEADS_SPEED            # the drag's speed in x and z (m/s); the run is as long as the same path takes
    run_damping: float | None = None      # YADE's local (numerical) damping in the runs; None: the bed's, 0.4


def variants() -> dict:
    """The study's variants by name. ``E3e8`` is today's training bed (seeded, so it can be repeated);
    the artefact variants are built on ``E1e7``, the stiffness the speed-up uses, each changing one
    thing: 1.5× wider and longer, 1.5× deeper, 4× slower insertion, periodic in x and y, another seed."""
    base = dem.Bed(seed=1)
    soft = replace(base, young=1e7)
    wide_box = (base.box[0] * 1.5, base.box[1] * 1.5, base.box[2])
    wider_box = (base.box[0] * 2.25, base.box[1] * 2.25, base.box[2])
    deep_box = (base.box[0], base.box[1], base.box[2] * 1.5)
    v = {
        "E3e8": Variant(base, what="today's bed: walled 0.5 × 0.22 m, 3,400 spheres, E 3e8 Pa"),
        "E3e7": Variant(replace(base, young=3e7), reference="E3e8", what="E 3e7 Pa"),
        "E1e7": Variant(soft, reference="E3e8", what="E 1e7 Pa"),
        "E3e6": Variant(replace(base, young=3e6), reference="E3e8", what="E 3e6 Pa"),
        "E1e7-s2": Variant(replace(soft, seed=2), reference="E1e7", what="another realisation (seed 2)"),
        "E1e7-s3": Variant(replace(soft, seed=3), reference="E1e7", what="another realisation (seed 3)"),
        "E1e7-wide": Variant(replace(soft, box=wide_box, particles=round(base.particles * 2.25)), reference="E1e7",
                             what="walls: box 1.5× wider and longer (same depth)"),
        "E1e7-deep": Variant(replace(soft, box=deep_box, particles=round(base.particles * 1.5)), reference="E1e7",
                             what="floor: bed 1.5× deeper"),
        "E1e7-slow": Variant(soft, insert_speed=0.25, reference="E1e7", what="insertion 4× slower (0.25 m/s)"),
        "E1e7-per": Variant(replace(soft, periodic=True), reference="E1e7",
                            what="periodic in x and y (no walls), same period as the box"),
        "E1e7-per-wide": Variant(replace(soft, periodic=True, box=wide_box, particles=round(base.particles * 2.25)),
                                 reference="E1e7-per", what="periodic, period 1.5× longer and wider"),
        "E1e7-per-s2": Variant(replace(soft, periodic=True, seed=2), reference="E1e7-per",
                               what="periodic, another realisation (seed 2)"),
        "E3e8-slow": Variant(base, insert_speed=0.25, reference="E3e8", what="E 3e8 Pa, insertion 4× slower"),
        "E3e8bed-E1e7": Variant(base, run_young=1e7, reference="E3e8",
                                what="E3e8's bed, its runs at E 1e7 Pa (contacts remade, settled again)"),
        "E3e8bed-E3e7": Variant(base, run_young=3e7, reference="E3e8",
                                what="E3e8's bed, its runs at E 3e7 Pa (contacts remade, settled again)"),
        "E3e8-rep": Variant(base, reference="E3e8",
                            what="E3e8's runs again, on the same bed (is a run repeatable? its CPU time)"),
        # Is the stiffness dependence the confinement's? The same wider beds, run stiffer.
        "E3e7-wide": Variant(replace(soft, box=wide_box, particles=round(base.particles * 2.25)), run_young=3e7,
                             reference="E1e7-wide", what="E1e7-wide's bed, its runs at E 3e7 Pa"),
        "E3e8-wide": Variant(replace(soft, box=wide_box, particles=round(base.particles * 2.25)), run_young=3e8,
                             reference="E1e7-wide", what="E1e7-wide's bed, its runs at E 3e8 Pa"),
        "E3e7-per-wide": Variant(replace(soft, periodic=True, box=wide_box, particles=round(base.particles * 2.25)),
                                 run_young=3e7, reference="E1e7-per-wide", what="E1e7-per-wide's bed, its runs at E 3e7 Pa"),
        # Has the wrench converged with the width at 1.5×? One more 1.5× (2.25× today's box, 5× its spheres).
        "E1e7-wider": Variant(replace(soft, box=wider_box, particles=round(base.particles * 2.25 ** 2)),
                              reference="E1e7-wide", what="walls: box 2.25× wider and longer (1.5× E1e7-wide's)"),
        "E3e8-wider": Variant(replace(soft, box=wider_box, particles=round(base.particles * 2.25 ** 2)), run_young=3e8,
                              reference="E3e8-wide", what="E1e7-wider's bed, its runs at E 3e8 Pa"),
        # Do smooth walls (friction 0) confine as little as a larger box? Today's box, smooth.
        "E1e7-smooth": Variant(replace(soft, wall_friction=0.0), reference="E1e7",
                               what="smooth walls (friction 0), today's box"),
        "E3e8-smooth": Variant(replace(soft, wall_friction=0.0), run_young=3e8, reference="E3e8",
                               what="E1e7-smooth's bed, its runs at E 3e8 Pa"),
        "E1e7-batch": Variant(soft, reference="E1e7", batch=True,
                              what="E1e7's runs, a configuration's three in one YADE process, the bed kept in memory"),
    }
    v.update(preparation_variants(soft))
    return v


def preparation_variants(soft: dem.Bed) -> dict:
    """Issue 49's preparation effects, at the data's stiffness (E 3e8 Pa) on beds settled soft (as
    ``E3e8-wide``, whose box effect is read against ``P-ref``): three realisations beside each effect,
    so an effect is read against the noise between beds. Each effect changes one thing of ``P-ref``."""
    stiff = 3e8
    tr = dem.TRANSFER_PREPARATION
    return {
        "P-ref": Variant(soft, run_young=stiff, what="E1e7's bed (seed 1), its runs at E 3e8 Pa"),
        "P-s2": Variant(replace(soft, seed=2), run_young=stiff, reference="P-ref", what="another realisation (seed 2)"),
        "P-s3": Variant(replace(soft, seed=3), run_young=stiff, reference="P-ref", what="another realisation (seed 3)"),
        "P-psd": Variant(replace(soft, size_spread=tr["size_spread"]), run_young=stiff, reference="P-ref",
                         what=f"radii ±{tr['size_spread']:.0%} (uniform) against equal spheres"),
        "P-pack": Variant(replace(soft, deposit_friction=tr["deposit_friction"], packing=tr["packing"], rain=tr["rain"]),
                          run_young=stiff, reference="P-ref",
                          what=f"deposited at friction {tr['deposit_friction']:g} from a cloud {tr['rain']:g} beds high"
                               f" (denser), levelled at {tr['packing']:g}"),
        "P-v0.05": Variant(soft, run_young=stiff, speed=0.05, reference="P-ref", what="dragged at 0.05 m/s (4× slower)"),
        "P-v0.5": Variant(soft, run_young=stiff, speed=0.5, reference="P-ref", what="dragged at 0.5 m/s (2.5× faster)"),
        # Is the rate effect YADE's local damping (0.4, the bed's, kept in the runs), which resists every
        # grain's acceleration? The same two speeds without it.
        "P-d0": Variant(soft, run_young=stiff, run_damping=0.0, reference="P-ref",
                        what="P-ref's runs without YADE's local damping (0 for 0.4)"),
        "P-v0.5-d0": Variant(soft, run_young=stiff, speed=0.5, run_damping=0.0, reference="P-d0",
                             what="dragged at 0.5 m/s, without local damping"),
    }


def _bed_dir(bed: dem.Bed) -> str:
    """A folder name per distinct bed, so variants on the same bed share it."""
    parts = [f"n{bed.particles}", "x".join(f"{b:g}" for b in bed.box), f"E{bed.young:.0e}", f"s{bed.seed}"]
    return "bed_" + "_".join(parts) + ("_per" if bed.periodic else "") + \
        ("" if bed.wall_friction is None else f"_mu{bed.wall_friction:g}") + \
        (f"_r{bed.size_spread:g}" if bed.size_spread else "") + \
        ("" if bed.deposit_friction is None else f"_dep{bed.deposit_friction:g}") + \
        ("" if bed.packing == dem.Bed.packing else f"_pack{bed.packing:g}") + \
        ("" if bed.rain == dem.Bed.rain else f"_rain{bed.rain:g}")


def _child_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes (YADE): a run's cost that, unlike its
    wall time, does not grow when other jobs share the cores."""
    import resource

    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def _window(path, foot, cutoff):
    """Mean wrench in F_r over the last WINDOW of the run (the low-passed record)."""
    from granular.data import ingest

    run = ingest.read_run(path)
    smooth = ingest.lowpass(run, cutoff)
    keep = run.t >= run.t[0] + (1 - WINDOW) * run.t_total
    w = ingest.to_reference(smooth[keep], run.pose[keep, 2], run.sensor_offset, run.sensor_angle, foot)
    return w.mean(axis=0)


def plan(name: str, variant: Variant, bed_path) -> dict:
    """The variant's runs per configuration: [(dem.plan's parameters, direction name)]. A variant
    dragged at another speed runs the same path (v_des and t_total scaled inversely)."""
    from granular.foot import Foot

    rate = variant.speed / BEADS_SPEED
    scale, t_total = rate * np.array(dem.BEADS_VELOCITY_SCALE), T_TOTAL / rate
    out = {}
    for cname, theta in CONFIGS.items():
        runs = dem.plan(bed_path, variant.bed, [theta], np.array(list(DIRECTIONS.values())), scale, t_total, Foot(),
                        "beads", variant.insert_speed, variant.run_young)
        for params, dname in zip(runs, DIRECTIONS):
            params["name"] = f"{name}_{cname}_{dname}"
            if variant.run_damping is not None:
                params["damping"] = variant.run_damping
        out[cname] = list(zip(runs, DIRECTIONS))
    return out


def run_variant(name: str, variant: Variant, workdir: Path, rows: list, out: Path | None):
    """Prepare the variant's bed and run its configurations × directions, appending a row per run."""
    from granular.data import ingest
    from granular.foot import Foot

    rate = variant.speed / BEADS_SPEED
    foot = Foot()
    folder = workdir / _bed_dir(variant.bed)
    t = time.time()
    dem.prepare_bed(variant.bed, folder, threads=1, progress=True)
    info = dem._bed_summary(variant.bed, folder)
    raw = json.loads(dem._bed_info(folder).read_text())
    log.info("%s: bed %s, %d spheres, packing %.3f, unbalanced %.3g (%.0f s)", name, folder.name, info["spheres"],
             info["packing_measured"], raw.get("unbalanced", float("nan")), time.time() - t)
    for cname, plans in plan(name, variant, dem.bed_file(folder)).items():
        theta = CONFIGS[cname]
        t_total = plans[0][0]["t_total"]
        plans = [(p, d) for p, d in plans
                 if not any(r["variant"] == name and r["config"] == cname and r["direction"] == d for r in rows)]
        batch_wall = batch_cpu = None
        if variant.batch and plans:
            todo = [p for p, _ in plans if not dem.is_done(p, folder)]
            t, c = time.time(), _child_cpu()
            failed = [err for _, path, err in dem.run_batch(todo, str(folder)) if path is None]
            if failed:
                raise GranularError("; ".join(failed))
            if todo:
                batch_wall, batch_cpu = (time.time() - t) / len(todo), (_child_cpu() - c) / len(todo)
        for params, dname in plans:
            t, c = time.time(), _child_cpu()
            done = dem.is_done(params, folder)
            path = dem.run_one(params, str(folder))
            wall = batch_wall if variant.batch else (None if done else time.time() - t)
            cpu = batch_cpu if variant.batch else (None if done else _child_cpu() - c)
            cutoff = CUTOFF_HZ * rate   # the same filter along the path, whatever the speed
            w, _ = ingest.extract(ingest.read_run(path), foot, cutoff)
            win = _window(path, foot, cutoff)
            side = json.loads(Path(path).with_suffix(".json").read_text())
            dt = raw["dt"] * np.sqrt(variant.bed.young / (variant.run_young or variant.bed.young))   # ∝ 1/√E
            contacts = Path(path).with_suffix(".contacts.json")
            overlap = json.loads(contacts.read_text())["overlap_at_pass"] if contacts.exists() else [float("nan")] * 2
            rows.append({"variant": name, "reference": variant.reference, "what": variant.what,
                         "config": cname, "d": theta[0], "phi": theta[1], "direction": dname,
                         "fx": w[0], "fz": w[1], "tau": w[2], "fx_win": win[0], "fz_win": win[1], "tau_win": win[2],
                         "run_s": side.get("seconds"), "wall_s": wall, "cpu_s": cpu, "insert_speed": variant.insert_speed,
                         "speed": variant.speed, "damping": 0.4 if variant.run_damping is None else variant.run_damping,
                         "young": variant.run_young or variant.bed.young, "periodic": variant.bed.periodic, "seed": variant.bed.seed,
                         "box": "x".join(f"{b:g}" for b in variant.bed.box), "spheres": info["spheres"],
                         "packing": info["packing_measured"], "unbalanced": raw.get("unbalanced"),
                         "bed_s": info["seconds"], "dt": dt,
                         "steps": round((side.get("insertion_m", 0.0) / variant.insert_speed + t_total) / dt),
                         "overlap_max": overlap[0], "overlap_mean": overlap[1]})
            log.info("%s %s %s: F_r = (%.1f, %.1f) N, %.2f N·m; window (%.1f, %.1f) N; %.0f s", name, cname, dname,
                     *w, win[0], win[1], side.get("seconds", 0))
            if out is not None:
                write_rows(rows, out)


def write_rows(rows, out: Path):
    from granular.io.files import atomic_path

    out.parent.mkdir(parents=True, exist_ok=True)
    keys = list(dict.fromkeys(k for r in rows for k in r))   # rows of an older study may lack newer columns
    with atomic_path(out) as tmp, open(tmp, "w", newline="") as fh:
        wr = csv.DictWriter(fh, keys)
        wr.writeheader()
        for r in rows:
            wr.writerow({k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()})


def read_rows(path) -> list:
    path = Path(path)
    if not path.exists():
        return []
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return [{k: _value(v) for k, v in r.items()} for r in rows]


def _value(text: str):
    """A CSV cell as written by :func:`write_rows`: a bool, None, a number, or else the text."""
    words = {"True": True, "False": False, "": None}
    if text in words:
        return words[text]
    try:
        return float(text)
    except ValueError:
        return text


def pairs(rows, extra=()) -> list:
    """(variant, reference) in the order recorded, each variant against its own reference, then ``extra``."""
    own = dict.fromkeys((r["variant"], r["reference"]) for r in rows if r["reference"])
    return list(own) + [p for p in extra if p not in own]


def changes(rows, compared=None) -> list:
    """Per (variant, reference) pair (default: each variant against its own): the force change in % per
    (config, direction), instant and windowed."""
    by = {(r["variant"], r["config"], r["direction"]): r for r in rows}
    out = []
    for name, reference in (pairs(rows) if compared is None else compared):
        for (v, c, d), r in by.items():
            ref = by.get((reference, c, d))
            if v != name or ref is None:
                continue
            out.append(_change(r, ref, reference))
    return out


def _change(r, ref, reference) -> dict:
    f, fr = np.array([r["fx"], r["fz"]]), np.array([ref["fx"], ref["fz"]])
    g, gr = np.array([r["fx_win"], r["fz_win"]]), np.array([ref["fx_win"], ref["fz_win"]])
    return {"variant": r["variant"], "reference": reference, "config": r["config"],
            "direction": r["direction"], "F": float(np.linalg.norm(f)), "F_ref": float(np.linalg.norm(fr)),
            "change": 100 * float(np.linalg.norm(f - fr) / np.linalg.norm(fr)),
            "signed": 100 * float(np.linalg.norm(f) / np.linalg.norm(fr) - 1),
            "change_win": 100 * float(np.linalg.norm(g - gr) / np.linalg.norm(gr))}


def report(rows, extra=()) -> str:
    """Markdown tables: the beds and the cost per run; per variant its change (%) against its reference
    (and per ``extra`` pair (variant, reference)), per cell, its means, and the mean signed change of |F|
    (a systematic shift) with its standard error over the cells; the forces (f_x, f_z) in N."""
    lines = ["| variant | what | spheres | packing | unbalanced | bed s | dt s | steps/run | YADE s/run | wall s/run "
             "| CPU s/run | overlap max/r at pass |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    seen = {}
    for r in rows:
        seen.setdefault(r["variant"], []).append(r)
    for name, rs in seen.items():
        r = rs[0]
        run_s = np.mean([x["run_s"] for x in rs])
        walls = [x["wall_s"] for x in rs if x.get("wall_s")]
        cpus = [x["cpu_s"] for x in rs if x.get("cpu_s")]
        steps = [x["steps"] for x in rs if x.get("steps")]
        ov = np.nanmax([x["overlap_max"] for x in rs])
        lines.append(f"| {name} | {r['what']} | {int(r['spheres'])} | {r['packing']:.3f} | {r['unbalanced']:.3f} | "
                     f"{r['bed_s']:.0f} | {r['dt']:.2e} | {np.mean(steps) if steps else float('nan'):.0f} | "
                     f"{run_s:.1f} | {np.mean(walls) if walls else float('nan'):.1f} | "
                     f"{np.mean(cpus) if cpus else float('nan'):.1f} | {ov:.3f} |")
    compared = pairs(rows, extra)
    ch = changes(rows, compared)
    lines += ["", "| variant vs reference | " + " | ".join(f"{c} {d}" for c in CONFIGS for d in DIRECTIONS)
              + " | mean | mean (window) | \\|F\\| bias ± s.e. |", "|---|" + "---|" * (len(CONFIGS) * len(DIRECTIONS) + 3)]
    for name, reference in compared:
        cells = {(c["config"], c["direction"]): c for c in ch if (c["variant"], c["reference"]) == (name, reference)}
        if not cells:
            continue
        row = [f"{cells[(c, d)]['change']:.0f}" if (c, d) in cells else "–" for c in CONFIGS for d in DIRECTIONS]
        mean = np.mean([c["change"] for c in cells.values()])
        mean_w = np.mean([c["change_win"] for c in cells.values()])
        signed = np.array([c["signed"] for c in cells.values()])
        se = signed.std(ddof=1) / np.sqrt(len(signed)) if len(signed) > 1 else float("nan")
        lines.append(f"| {name} vs {reference} | " + " | ".join(row)
                     + f" | {mean:.0f} | {mean_w:.0f} | {signed.mean():+.0f} ± {se:.0f} |")
    lines += ["", "| variant | " + " | ".join(f"{c} {d}" for c in CONFIGS for d in DIRECTIONS) + " |",
              "|---|" + "---|" * (len(CONFIGS) * len(DIRECTIONS))]
    for name, rs in seen.items():
        cells = {(r["config"], r["direction"]): r for r in rs}
        row = [f"({cells[(c, d)]['fx']:.0f}, {cells[(c, d)]['fz']:.0f})" if (c, d) in cells else "–"
               for c in CONFIGS for d in DIRECTIONS]
        lines.append(f"| {name} | " + " | ".join(row) + " |")
    return "\n".join(lines).replace("| nan |", "| – |")   # columns an older study did not record


def pick(text: str, known, what: str) -> list:
    """The comma-separated names in ``text``, each one of ``known``, at least one."""
    names = [n for n in text.split(",") if n]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise GranularError(f"unknown {what}(s) {', '.join(unknown) or repr(text)}; known: {', '.join(known)}")
    return names


def _against(text: str, recorded) -> list:
    """``A:B,C:D`` as [(A, B), (C, D)], each name a recorded variant."""
    out = []
    for item in filter(None, text.split(",")):
        pair = item.split(":")
        if len(pair) != 2:
            raise GranularError(f"--against: {item!r} is not VARIANT:REFERENCE")
        pick(",".join(pair), recorded, "variant")
        out.append(tuple(pair))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m granular.data.dem_study", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run variants one after another (YADE on one thread), resumable")
    r.add_argument("--workdir", required=True, help="where beds and runs are kept (not in git)")
    r.add_argument("--variants", required=True, help=f"comma-separated, of: {', '.join(variants())}")
    r.add_argument("--out", required=True, help="results CSV (a row per run, rewritten after each run)")
    s = sub.add_parser("report", help="markdown tables of a results CSV")
    s.add_argument("results")
    s.add_argument("--against", default="", help="more comparisons, comma-separated VARIANT:REFERENCE pairs "
                                                 "(each variant is always compared with its own reference)")
    s.add_argument("--variants", default="", help="only these recorded variants (comma-separated), e.g. a study's own")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    try:
        if args.cmd == "report":
            rows = read_rows(args.results)
            if args.variants:
                keep = pick(args.variants, dict.fromkeys(r["variant"] for r in rows), "recorded variant")
                rows = [r for r in rows if r["variant"] in keep]
            print(report(rows, _against(args.against, dict.fromkeys(r["variant"] for r in rows))))
            return 0
        known = variants()
        names = pick(args.variants, known, "variant")
        out = Path(args.out)
        rows = read_rows(out)
        for name in names:
            run_variant(name, known[name], Path(args.workdir).resolve(), rows, out)
        print(report(rows))
    except GranularError as exc:
        print(f"dem_study: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
