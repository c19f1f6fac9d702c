"""The ``granular`` command line: sim, view, train, inspect, synth, ingest, acquire, bench.

A thin layer: it parses and checks the options, calls the library, and prints.
Every subcommand reports bad input as one ``granular: error: …`` line (exit
status 2), never a traceback, and checks its inputs and outputs before any
work (an output is never one of the inputs). Results go to stdout (with ``--json``
one JSON object and nothing else), progress, warnings and notes to stderr
(:mod:`granular.apps.outputs`). Ctrl-C ends with
``granular: interrupted`` (exit status 130); a closed stdout ends quietly.
"""
from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from pathlib import Path

# Before numpy loads its BLAS: the step's matrices are small and gain nothing from BLAS threads, and
# numpy and scipy each load an OpenBLAS with a thread pool of its own, which on two cores spun
# against each other (a 64-contact step took 8–300 ms instead of 4 ms). A user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def _keep_freed_memory():
    """glibc hands large freed blocks back to the system and maps new ones afresh, so a step that
    allocates arrays of a few hundred kB faults their pages in every time: a 64-contact step took
    2.4–2.9 ms instead of 1.1 ms, depending on what the process had allocated before. Keep
    them instead (fixed thresholds: mapped only above 32 MB, trimmed only above 128 MB)."""
    import ctypes

    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, 32 << 20)   # M_MMAP_THRESHOLD
        libc.mallopt(-1, 128 << 20)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass  # not glibc: nothing to tune


_keep_freed_memory()


class _Format(logging.Formatter):
    """``granular: warning: …`` for warnings and errors, ``granular: …`` for notes."""

    def format(self, record):
        prefix = "granular: " if record.levelno < logging.WARNING else f"granular: {record.levelname.lower()}: "
        return prefix + record.getMessage()


def _logging(verbose: bool):
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Format())
    root = logging.getLogger("granular")
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbose else logging.INFO)


# Before the package's modules load: importing them may compile the step's kernels (once per
# machine, minutes), and its note must reach the terminal. main() sets the verbosity asked for.
_logging(False)

import numpy as np  # noqa: E402

from granular.contact.compliant import LAWS as COMPLIANT_LAWS
from granular.contact.flow import DEFAULT_LAW
from granular.errors import GranularError
from granular.learning.linear import KERNELS
from granular.data.sampling import SIZES_3D
from granular.apps import inspection, reports  # noqa: E402
from granular.apps.outputs import check_outputs, emit, say, wrote  # noqa: E402


def _number(low=-1e12, high=1e12, low_open=False, kind=float):
    """An argparse type: a finite number in [low, high] (or (low, high] with ``low_open``)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {'a whole number' if kind is int else 'a number'}, "
                                             f"got {text!r}") from None
        if not (np.isfinite(value) and (value > low if low_open else value >= low) and value <= high):
            raise argparse.ArgumentTypeError(f"{text} is out of range: expected {'>' if low_open else '≥'} {low:g}"
                                             f" and ≤ {high:g}")
        return value
    return parse


def _smoothing(text: str):
    """--smoothing: a number in [0, 1e6], or 'noise' (training.NOISE)."""
    if text == "noise":
        return text
    try:
        return _number(0, 1e6)(text)
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (or 'noise')") from None


def _floats(low=-1e12, high=1e12):
    number = _number(low, high)

    def parse(text: str):
        values = [number(v.strip()) for v in text.split(",") if v.strip()]
        if not values:
            raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
        return values
    return parse


def _directions(text: str) -> int:
    m = _number(10, 10**5, kind=int)(text)
    if (m - 2) % 8 and m not in SIZES_3D:
        raise argparse.ArgumentTypeError(f"{m} directions: the direction grid has m = 2 + 8k (10, 18, 26, 58, …); "
                                         f"in 3D one of {', '.join(map(str, SIZES_3D))}")
    return m


def _directions_or_dataset(text: str):
    """m of the direction grid, or a dataset (.h5) whose directions to sample (read in the command)."""
    return text if text.lower().endswith(".h5") else _directions(text)


def _sampled_directions(value, kind=None):
    """--directions as the data functions take it: m, or the named dataset's directions (of the
    wrench space ``kind``, None: either, as ingest's mapping decides)."""
    if not isinstance(value, str):
        return value
    from granular.data import dataset as wd

    return wd.read(value, kind=kind).directions


def cmd_synth(args):
    from granular.data import dataset as wd
    from granular.foot import Foot
    from granular.data.synth import synthesize

    if args.source == "wheel" and (args.soil is None) == (args.medium is None):
        raise GranularError("--source wheel needs one of --soil (a Table 6 soil: Wong–Reece) and --medium (an RFT "
                            "medium: sand, pebbles)")
    name = args.soil if args.source == "terramechanics" or args.soil else args.medium
    if name is None:
        raise GranularError("--source rft, rft3d or coulomb needs --medium; --source terramechanics needs --soil")
    if args.friction is not None and args.source != "coulomb":
        raise GranularError("--friction is the rigid floor's (--source coulomb)")
    check_outputs(args)
    if args.source == "wheel":
        foot = Foot(args.wheel_radius, args.wheel_width, args.wheel_radius)
    else:
        foot = Foot(args.foot_radius, args.foot_length, args.foot_r_offset)
    if args.directions is not None and (args.source == "rft3d") != (args.directions in SIZES_3D):
        raise GranularError(f"--directions {args.directions}: " + (
            f"3D data take one of {', '.join(map(str, SIZES_3D))}" if args.source == "rft3d" else
            "planar data take m = 2 + 8k (26, 58, …)"))
    ds = synthesize(args.source, name, args.depths, args.tilts, args.directions, foot, progress=True,
                    friction=args.friction)
    wd.write(ds, args.out)
    wrote(f"{args.out}: {ds.n} configurations × {ds.m} directions ({args.source}, {name})")


def cmd_wheel(args):
    from granular.data import wheel

    check_outputs(args, files=("plot",), folders=())
    simulated = None
    if args.simulate:
        from granular.scenarios import scenario as scenarios, wheels

        bed = scenarios.load(args.simulate)
        w, soil = wheels.bed_reference(bed)
        soil_name = f"{scenarios.checked(bed).medium} (the scenario's)"
        simulated = wheels.simulate_bed(bed, args.slips, progress=True)
    else:
        w, soil, soil_name = wheel.Wheel(args.radius, args.width, args.load), wheel.ground(args.soil), args.soil
    sweep = wheel.slip_sweep(w, soil, args.slips, args.shear_modulus)
    model = "RFT" if isinstance(soil, wheel.RFTGround) else "Wong–Reece, Janosi–Hanamoto"
    result = {"soil": soil_name, "model": model, "radius_m": w.radius, "width_m": w.width, "load_n": w.load,
              **{k: [float(x) for x in v] for k, v in sweep.items()}}
    if simulated is not None:
        result["simulated"] = {"scenario": args.simulate, **{k: [float(x) for x in v] for k, v in simulated.items()}}
    if args.plot:
        from granular.apps import plots

        result["figure"] = str(plots.wheel(sweep, args.plot, f"{soil_name}: r {w.radius} m, b {w.width} m, "
                                                             f"load {w.load:.4g} N", simulated, model))

    emit(result, args.json, reports.wheel)


def cmd_merge(args):
    from granular.data import dataset as wd

    check_outputs(args, inputs=args.datasets)
    parts = [wd.read(p) for p in args.datasets]
    ds = wd.merge(parts, args.datasets, average=args.average, replace_configs=args.replace or ())
    wd.write(ds, args.out)
    wrote(f"{args.out}")
    say(f"{args.out}: {ds.n} configurations × {ds.m} directions from {len(parts)} datasets ({ds.medium})")
    for d, phi in args.replace or ():
        say(f"  d = {d:g} m, φ = {phi:g} rad: {args.datasets[0]}'s cell replaced by the later inputs'")
    if args.average:
        say(f"  {int((ds.provenance['realisations'] > 1).sum())} samples averaged over 2 or more inputs; "
             f"their spread, relative to the largest wrench: {_relative_spread(ds):.3f} (mean)")


def _relative_spread(ds) -> float:
    """Mean over the averaged samples of |spread (f_x, f_z)| / the dataset's largest |(f_x, f_z)|."""
    many = ds.provenance["realisations"] > 1
    if not many.any():
        return float("nan")
    top = np.nanmax(np.linalg.norm(ds.wrenches[..., :2], axis=-1))
    return float(np.mean(np.linalg.norm(ds.provenance["realisation_spread"][many][:, :2], axis=-1)) / top)


def cmd_train(args):
    from granular.apps import plots
    from granular.learning import training

    source = Path(args.source)
    if source.suffix == ".toml":
        job = training.load_job(source)
    else:
        if args.out is None:
            raise GranularError("granular train DATASET needs --out MODEL.h5 (or pass a training job .toml)")
        job = training.Job(dataset=source, out=Path(args.out))
    job.regressor = args.regressor or job.regressor
    job.target = args.target or job.target
    job.kernel = args.kernel or job.kernel
    job.smoothing = job.smoothing if args.smoothing is None else args.smoothing
    job.cv = job.cv if args.cv is None else args.cv
    job.cv_repeats = job.cv_repeats if args.cv_repeats is None else args.cv_repeats
    job.out = Path(args.out) if args.out else job.out
    job.figures = Path(args.figures) if args.figures else job.figures
    from granular.apps.outputs import check_suffix
    from granular.io.files import check_output

    inputs = [source, job.dataset]
    check_output(job.out, inputs, what="model output")
    check_suffix(job.out, "hdf5", "model output")
    if job.figures:
        check_output(job.figures, inputs + [job.out], directory=True, what="--figures")
        from granular.data import dataset as wd

        if wd.read(job.dataset, kind=None).dim == 6:
            raise GranularError("--figures: the training figures are planar; a 3D model has none yet")
    if job.cv == 1:
        raise GranularError("--cv needs K ≥ 2 folds (or 0 for none)")
    if args.cv_repeats is not None and not job.cv:
        raise GranularError(f"--cv-repeats {args.cv_repeats} draws the folds of a cross-validation, and this job "
                            f"has none: add --cv K (K ≥ 2 folds)")

    result, model, concavity = training.run_job(job, progress=True)
    medium = result["medium"]
    if job.figures:
        thetas = job.plot_thetas or inspection.default_thetas(model)
        result["figures"] = [
            str(plots.wrench_spaces(model.points(thetas), [inspection.label(t) for t in thetas],
                                    job.figures / "wrench_space.png", f"{medium}: predicted W(θ)")),
            str(plots.training_report(result.get("cv", {}), result.get("cv_repeated"), result["fixed_normals"],
                                      concavity, job.figures / "training_report.png",
                                      f"{medium} ({job.regressor})")),
        ]

    emit(result, args.json, lambda r: reports.train(r, job.cv))


def cmd_sim(args):
    from granular.simulation import runfile
    from granular.scenarios import advice, scenario as scenarios, scenario3d

    if scenario3d.is_3d(scenarios.find(args.scenario)):
        return _sim3d(args, scenarios.find(args.scenario))
    scenario = scenarios.load(args.scenario).with_(
        medium=args.medium, dt=args.dt, solver=args.solver, representation=args.representation,
        contact=args.contact, duration=args.duration)
    inputs = [scenario.path] + ([scenario.medium] if Path(scenario.medium).is_file() else [])
    check_outputs(args, inputs)
    advice.before(scenario)
    rec = scenarios.run(scenario, progress=True)
    summary = scenarios.summary(rec)
    advice.after(rec, summary)
    data = runfile.record(rec, summary)
    if args.out:
        runfile.write(data, args.out)
        summary["run_file"] = str(args.out)
    if args.plot or args.video:
        from granular.apps import plots

        if args.plot:
            summary["figures"] = plots.run_figures(data, args.plot)
        if args.video:
            summary["video"] = str(plots.video(data, args.video))

    emit(summary, args.json, reports.sim)


def _sim3d(args, path):
    from granular.scenarios import scenario3d

    for option in ("out", "video", "dt", "solver", "representation"):
        if getattr(args, option, None):
            raise GranularError(f"--{option}: not for a 3D (MuJoCo) scenario yet; {path.name} is one")
    check_outputs(args, [path])
    world = scenario3d.build(path, medium=args.medium, law=args.contact, duration=args.duration)
    rec = scenario3d.run(world, progress=True)
    summary = scenario3d.summary(world, rec)
    if args.plot:
        from granular.apps import plots3d

        summary["figures"] = plots3d.motion(world, rec, args.plot)
    emit(summary, args.json, reports.summary)


def cmd_ingest(args):
    from granular.data import dataset as wd
    from granular.data import ingest

    inputs = list(args.runs) + [ingest.sidecar_path(r) for r in args.runs] + ([args.mapping] if args.mapping else [])
    check_outputs(args, inputs)
    mapping = ingest.Mapping.load(args.mapping, args.assume_sensor_at_p_center)
    ds = ingest.assemble(args.runs, out_medium=args.medium, mapping=mapping, cutoff=args.cutoff,
                         m=_sampled_directions(args.directions),
                         source=args.source, progress=True)
    wd.write(ds, args.out)
    wrote(args.out)


def _check_scheduler(args):
    if args.scheduler:
        from granular.apps.network import check_scheduler

        check_scheduler(args.scheduler)


def cmd_acquire(args):
    import dataclasses

    from granular.data import dataset as wd
    from granular.data import dem

    if args.periodic and args.wall_friction is not None:
        raise GranularError("--wall-friction: a --periodic bed has no walls; give one or the other")
    bed = dem.Bed(particles=args.particles, box=tuple(args.box), young=args.settle_young or args.young,
                  periodic=args.periodic, seed=args.seed, wall_friction=args.wall_friction)
    run_young = args.young if args.settle_young else None
    if args.engine == "dem-paths":
        check_outputs(args, files=(), folders=("out",))
        names = args.paths or list(dem.VALIDATION_PATHS)
        unknown = [n for n in names if n not in dem.VALIDATION_PATHS]
        if unknown:
            raise GranularError(f"--paths: unknown path(s) {', '.join(unknown)}; known: {', '.join(dem.VALIDATION_PATHS)}")
        seeds = args.seeds or [1, 2, 3]
        if len(set(seeds)) != len(seeds):
            raise GranularError("--seeds: give distinct seeds (a bed's folder and its runs are named by its seed)")
        if args.medium != "beads":
            raise GranularError(f"unknown DEM medium {args.medium!r}; the DEM preset is 'beads' (paper §IV-A)")
        _check_scheduler(args)
        dem.yade_command()
        done = dem.acquire_paths(args.workdir or str(args.out).rstrip("/") + "_runs",
                                 [dataclasses.replace(bed, seed=s) for s in seeds],
                                 {n: dem.VALIDATION_PATHS[n] for n in names}, workers=args.workers,
                                 scheduler=args.scheduler, insert_speed=args.insert_speed, out=args.out,
                                 threads=args.threads, run_young=run_young)
        wrote(f"{len(done)} of {len(names) * len(seeds)} runs to {args.out}")
        return
    if args.paths or args.seeds:
        raise GranularError("--paths and --seeds belong to `granular acquire dem-paths`")
    check_outputs(args)
    _check_scheduler(args)
    ds = dem.acquire_dataset(args.out, args.medium, bed, args.depths, args.tilts, _sampled_directions(args.directions, "planar"),
                             args.t_total,
                             args.cutoff, workdir=args.workdir, workers=args.workers, scheduler=args.scheduler,
                             insert_speed=args.insert_speed, threads=args.threads, batch=args.batch,
                             run_young=run_young)
    wd.write(ds, args.out)
    wrote(args.out)


def cmd_validate(args):
    from granular.data.media import MEDIA
    from granular.learning.catalog import load_model
    from granular.scenarios import validation

    check_outputs(args, list(args.runs) + list(args.calibrate or []), files=(), folders=("plot",))
    from granular.data.paths3d import is_path3d

    spatial = [is_path3d(p) for p in args.runs]
    if any(spatial):
        if not all(spatial):
            raise GranularError(f"{args.runs[spatial.index(False)]}: a planar run among 3D paths; validate them apart")
        from granular.apps import validate3d

        return validate3d.validate(args)
    model = load_model(args.model)
    source, coeffs = None, None
    if args.source:
        kind, _, value = args.source.partition(":")
        if kind != "rft":
            raise GranularError(f"--source {args.source!r}: give rft:ZETA (N/cm³ per unit generic α, e.g. rft:1.2) "
                                "or rft:MEDIUM (a synthetic medium's own RFT, e.g. rft:pebbles)")
        if value in MEDIA:
            source, coeffs = MEDIA[value].zeta, MEDIA[value].coeffs
        else:
            try:
                source = _number(0, 1e6, low_open=True)(value)
            except argparse.ArgumentTypeError as exc:
                raise GranularError(f"--source {args.source!r}: {exc}; or name a medium ({', '.join(MEDIA)})") from None
    read = lambda paths: [validation.read(p, model.dataset.foot, args.cutoff, args.mapping) for p in paths or ()]  # noqa: E731
    runs = read(args.runs)
    result, curves = validation.validate(model, runs, calibrate=read(args.calibrate), source_zeta=source,
                                         sim=args.sim, medium=args.model, law=args.contact, source_coeffs=coeffs,
                                         representation=args.representation)
    result["cutoff_hz"] = args.cutoff
    if args.plot:
        from granular.apps import plots

        result["figures"] = plots.validation(model.dataset.medium, runs, curves, args.plot)

    emit(result, args.json, reports.validate)


def cmd_calibrate(args):
    from granular.apps.calibrating import cmd_calibrate as calibrate

    calibrate(args)


def cmd_view(args):
    import socket

    from granular.apps import network, viewer

    with socket.socket() as s:
        try:
            s.bind((args.host, args.port))
        except OSError as exc:
            raise GranularError(f"cannot serve on {args.host}:{args.port} ({exc.strerror or exc}); "
                                "choose another --port or --host") from None
    network.warn_if_exposed(args.host, args.port)
    viewer.serve(args.scenario, medium=args.medium, replay=args.replay, host=args.host, port=args.port,
                 browser=not args.no_browser)


def cmd_bench(args):
    from granular.apps import bench

    check_outputs(args, files=("plot",), folders=())
    from granular.apps import bench3d

    results = bench.run(quick=args.quick)
    results.update(bench3d.run(quick=args.quick))
    if args.stability:
        results["stability"] = bench3d.stability()
    if args.scaling:
        from granular.apps import plots

        results["scaling"] = {f"daqp/fixed, {n} contacts": row for n, row in bench.scaling().items()}
        if args.plot:
            rows = {k.split(", ")[1]: v for k, v in results["scaling"].items()}
            plots.scaling({"daqp/fixed": rows}, args.plot)
    if args.compliant:
        results["compliant_largest_stable_step"] = bench.compliant()
    if args.batch:
        results["batch"] = bench.batch()
    emit(results, args.json, bench.print_table)


#: A number, or a comma-separated list of them, that starts with a minus sign.
_NEGATIVE = re.compile(r"^-\d*\.?\d+(e[-+]?\d+)?(,\s*-?\d*\.?\d+(e[-+]?\d+)?)*,?$", re.IGNORECASE)


class _Parser(argparse.ArgumentParser):
    """Bad options get the same one line as every other error."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # argparse takes "-0.06,-0.08" for an option (it knows only single negative numbers), so
        # `--depths -0.06,-0.08` failed with "expected one argument"; no option of ours looks like one
        self._negative_number_matcher = _NEGATIVE

    def error(self, message):
        self.exit(2, f"granular: error: {self.prog}: {message} (see {self.prog} --help)\n")


def build_parser():
    p = _Parser(prog="granular", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true", help="log debugging detail")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("synth", help="generate a synthetic wrench dataset (RFT, terramechanics, a rigid floor, "
                                     "a wheel)")
    s.add_argument("--source", choices=["rft", "rft3d", "terramechanics", "coulomb", "wheel"], default="rft",
                   help="rft3d: 3D-RFT, a 3D (6-axis) dataset (data/rft3d.py); coulomb: a rigid floor with Coulomb "
                        "friction (data/coulomb.py); wheel: a rigid wheel on a --soil (Wong–Reece, data/wheel.py) "
                        "or an RFT --medium")
    s.add_argument("--medium", help="RFT medium preset: sand, pebbles; for coulomb, the name to give the floor")
    s.add_argument("--soil", help="terramechanics soil (Ding et al. Table 6), e.g. dry-sand, lete-sand")
    s.add_argument("--out", required=True, help="output dataset (.h5)")
    s.add_argument("--depths", type=_floats(-10.0, 0.0), help="comma-separated depths d ≤ 0 (m); default: Table I")
    s.add_argument("--tilts", type=_floats(-1.5708, 1.5708), help="comma-separated tilts φ (rad); default: Table I")
    s.add_argument("--directions", type=_directions, help="m velocity directions: 2 + 8k (default 26, 58, …); "
                                                           "3D: 12, 72 (default) or 232")
    s.add_argument("--foot-radius", type=_number(0, 10, low_open=True), default=0.05, help="m")
    s.add_argument("--foot-length", type=_number(0, 10, low_open=True), default=0.30, help="m")
    s.add_argument("--foot-r-offset", type=_number(-10, 10), default=0.25, help="p_r's distance above p_center (m)")
    s.add_argument("--wheel-radius", type=_number(0, 10, low_open=True), default=0.15, help="--source wheel: m")
    s.add_argument("--wheel-width", type=_number(0, 10, low_open=True), default=0.10, help="--source wheel: m")
    s.add_argument("--friction", type=_number(0, 10, low_open=True),
                   help="--source coulomb: the floor's (static) Coulomb μ (default 0.8)")
    s.set_defaults(func=cmd_synth)

    mg = sub.add_parser("merge", help="join datasets of one medium and protocol (e.g. an extended grid)")
    mg.add_argument("datasets", nargs="+", help="datasets (.h5) with the same directions, scale and foot")
    mg.add_argument("--out", required=True, help="output dataset (.h5)")
    mg.add_argument("--average", action="store_true",
                    help="the inputs are realisations of one grid (e.g. DEM beds of other seeds): average the "
                         "configurations several hold, keeping their spread")
    mg.add_argument("--replace", type=_number(), nargs=2, action="append", metavar=("D", "PHI"),
                    help="a configuration (m, rad) re-acquired in the later inputs (e.g. in a better bed): "
                         "the first input's cell is dropped and the later inputs' taken (repeatable)")
    mg.set_defaults(func=cmd_merge)

    t = sub.add_parser("train", help="train a wrench-space model from a dataset or a training job (.toml)")
    t.add_argument("source", help="dataset .h5, or a training job .toml")
    t.add_argument("--out", help="model file to write (.h5)")
    t.add_argument("--regressor", choices=["rbf", "gp", "svr"])
    t.add_argument("--target", choices=["wrench", "per-depth"],
                   help="learn the wrenches, or the wrenches per unit depth (w / |d|; default: the job's, else wrench)")
    t.add_argument("--kernel", choices=list(KERNELS),
                   help="the RBF's kernel (default: the job's, else thin_plate_spline)")
    t.add_argument("--smoothing", type=_smoothing,
                   help="the RBF's smoothing, added to its kernel matrix's diagonal, or 'noise': as much as "
                        "the data's bed-to-bed noise allows (data of several beds, granular merge --average; "
                        "chosen again in every --cv fold) (default: the job's, else 0)")
    t.add_argument("--cv", type=_number(0, 1000, kind=int), help="K-fold cross-validation of all regressors")
    t.add_argument("--cv-repeats", type=_number(1, 1000, kind=int),
                   help="the RBF's cross-validation, its folds drawn this many times (default: the job's, else 10)")
    t.add_argument("--figures", help="directory for the figures")
    t.add_argument("--json", action="store_true", help="print one JSON object")
    t.set_defaults(func=cmd_train)

    i = sub.add_parser("inspect", help="summarise a dataset, a model or a raw run; W(θ) of a model at --theta")
    i.add_argument("path", help="dataset or model (.h5), or an acquisition run (.csv + .json, or .h5)")
    i.add_argument("--cutoff", type=_number(0, 1e6, low_open=True),
                   help="runs: low-pass cutoff (Hz; default: an acquisition run's 5 as in ingest, a validation run's 50 "
                        "as in validate)")
    i.add_argument("--mapping", help="runs: column/unit mapping (.toml)")
    i.add_argument("--assume-sensor-at-p-center", action="store_true",
                   help="runs: a sidecar without sensor_offset/sensor_angle means the sensor sits at p_center")
    i.add_argument("--theta", nargs=2, type=_number(-10, 10), metavar=("D", "PHI"))
    i.add_argument("--fixed", type=_number(8, 256, kind=int), metavar="K", help="also give the K-fixed-normal polytope")
    i.add_argument("--plot", help="write a figure (.png)")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=inspection.cmd_inspect)

    r = sub.add_parser("sim", help="run a scenario from sim/ (or a scenario .toml)")
    r.add_argument("scenario", help="scenario name (e.g. drop-upright) or path")
    r.add_argument("--medium", help="sand, pebbles, or a trained model file (.h5)")
    r.add_argument("--duration", type=_number(0, 1e4, low_open=True), help="simulated time (s)")
    r.add_argument("--dt", type=_number(1e-5, 0.05), help="time step (s), 1e-5 to 0.05")
    r.add_argument("--solver", choices=["native", "daqp", "quadprog", "osqp", "cvxpy"], help="contact QP solver (default: native)")
    r.add_argument("--representation", choices=["fixed", "exact"], help="polytope representation of W(θ)")
    r.add_argument("--contact", choices=["max-dissipation", "data-flow", *COMPLIANT_LAWS],
                   help="contact law: the data's own flow rule (default, unless the scenario file sets one), "
                        "the hull's maximum dissipation (paper eq. 2), or a compliant (penalty) law fitted to the "
                        "medium's data (undamped hertz needs --dt ≤ 0.0002)")
    r.add_argument("--out", help="run file to write (.h5)")
    r.add_argument("--plot", help="directory for the figures")
    r.add_argument("--video", help="render the run to a video (.gif, or .mp4 with ffmpeg)")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_sim)

    g = sub.add_parser("ingest", help="turn acquisition runs (F/T rig or DEM) into a wrench dataset")
    g.add_argument("runs", nargs="+", help="run files: .csv (with a .json sidecar) or .h5")
    g.add_argument("--out", required=True, help="dataset to write (.h5)")
    g.add_argument("--mapping", help="TOML mapping of your column names and units")
    g.add_argument("--assume-sensor-at-p-center", action="store_true",
                   help="a sidecar without sensor_offset/sensor_angle means the sensor sits at p_center, aligned")
    g.add_argument("--cutoff", type=_number(0, 1e6, low_open=True), default=5.0, help="low-pass cutoff (Hz, default 5)")
    g.add_argument("--medium", help="medium name (default: from the runs' metadata)")
    g.add_argument("--source", choices=["ft-rig", "dem"], default="ft-rig")
    g.add_argument("--directions", type=_directions_or_dataset, default=26,
                   help="m of the direction grid the runs sample, 2 + 8k (default 26), or a dataset (.h5) whose "
                        "directions they sample")
    g.set_defaults(func=cmd_ingest)

    a = sub.add_parser("acquire", help="generate wrench data by DEM simulation with YADE, on a Dask cluster")
    a.add_argument("engine", choices=["dem", "dem-paths"],
                   help="dem: the wrench dataset; dem-paths: the held-out validation paths (data/validation)")
    a.add_argument("--medium", default="beads")
    a.add_argument("--out", required=True, help="dataset to write (.h5); for dem-paths, the folder of the shipped runs")
    a.add_argument("--depths", type=_floats(-10.0, 0.0), default=[0.0, -0.03, -0.06],
                   help="comma-separated d (m); default: 0, -0.03, -0.06 (Table I Beads: 0 to -0.24 in steps of 0.06)")
    a.add_argument("--tilts", type=_floats(-1.5708, 1.5708), default=[0.0, 0.5, 1.0],
                   help="comma-separated φ (rad); default: 0, 0.5, 1 (Table I Beads goes to 1.5 in steps of 0.25)")
    a.add_argument("--directions", type=_directions_or_dataset, default=26,
                   help="m of the direction grid, 2 + 8k (default 26: the poles and rings at 0 and ±45°), or a "
                        "dataset (.h5) whose directions to sample, so that a new bed averages into it "
                        "(data/beads.h5: the poles and rings at 0 and ±30°)")
    a.add_argument("--particles", type=_number(10, 10**8, kind=int), default=3400, help="spheres rained into the box (paper: 58,500)")
    a.add_argument("--box", type=_number(0, 100, low_open=True), nargs=3, default=[0.5, 0.22, 0.4], metavar=("X", "Y", "Z"),
                   help="box size (m); the bed fills it to particles·sphere volume / (0.6·X·Y)")
    a.add_argument("--t-total", type=_number(0, 100, low_open=True), default=0.2, help="duration of each run (s)")
    a.add_argument("--insert-speed", type=_number(0, 100, low_open=True), default=1.0,
                   help="speed (m/s) of the straight descent from above the surface to the start point")
    a.add_argument("--cutoff", type=_number(0, 1e6, low_open=True), default=50.0, help="low-pass cutoff (Hz)")
    a.add_argument("--workers", type=_number(1, 1024, kind=int), default=2, help="local Dask workers")
    a.add_argument("--scheduler", help="address of an existing Dask scheduler (scale to many machines)")
    a.add_argument("--workdir", help="where runs are kept (resumable); default: OUT_runs/")
    a.add_argument("--young", type=_number(1e5, 1e12), default=3e8,
                   help="Young's modulus of the beads (Pa; default 3e8, the paper's); softer is faster (time step "
                        "∝ 1/√E) but weakens the wrench (1e7: −63 %%, data/README.md)")
    a.add_argument("--settle-young", type=_number(1e5, 1e12),
                   help="settle the bed at this Young's modulus (Pa) and run at --young: settled at 1e7 a deep bed was "
                        "ready 37× sooner and its plunges met the same force within 3 ± 6 %% (data/README.md, "
                        "'The plunge over depth')")
    a.add_argument("--periodic", action="store_true",
                   help="a bed periodic in x and y (no side or end walls; the box's X, Y are the period)")
    a.add_argument("--wall-friction", type=_number(0, 10),
                   help="the walls' friction coefficient (default: the beads' own, 0.577); 0: smooth walls, which "
                        "confine the foot less (data/README.md, 'The plunge over depth')")
    a.add_argument("--seed", type=_number(0, 2**31 - 1, kind=int), default=0,
                   help="the bed's realisation (0: from the clock)")
    a.add_argument("--threads", type=_number(1, 1024, kind=int),
                   help="YADE threads for preparing the bed (default: all cores); runs use one each")
    a.add_argument("--batch", type=_number(1, 10**4, kind=int), default=1,
                   help="runs of one configuration per YADE process, the bed read once and kept in memory (default 1)")
    a.add_argument("--paths", type=lambda t: [n.strip() for n in t.split(",") if n.strip()],
                   help="dem-paths: comma-separated path names (default: all of dem.VALIDATION_PATHS)")
    a.add_argument("--seeds", type=lambda t: [_number(1, 2**31 - 1, kind=int)(n) for n in t.split(",") if n.strip()],
                   help="dem-paths: comma-separated bed seeds, one bed each (default: 1,2,3)")
    a.set_defaults(func=cmd_acquire)

    k = sub.add_parser("calibrate", help="scale a medium's forces to your own runs (one fitted constant, as RFT's ζ)")
    k.add_argument("model", help="sand, pebbles, beads, or a model file (.h5)")
    k.add_argument("runs", nargs="+", help="recorded runs in your medium (as validate reads them: .csv + .json, .h5, bags)")
    k.add_argument("--out", required=True, help="the calibrated model to write (.h5)")
    k.add_argument("--mapping", help="TOML mapping of your column names, units, sign and bag topics (as for ingest)")
    k.add_argument("--contact", choices=["data-flow", "max-dissipation"], default=DEFAULT_LAW)
    k.add_argument("--cutoff", type=_number(0, 1e6, low_open=True), default=50.0, help="low-pass cutoff (Hz)")
    k.add_argument("--json", action="store_true")
    k.set_defaults(func=cmd_calibrate)

    c = sub.add_parser("validate", help="score a model's wrenches against recorded trajectories (held-out DEM runs)")
    c.add_argument("model", help="sand, pebbles, beads, or a model file (.h5); for 3D paths sand3d, pebbles3d")
    c.add_argument("runs", nargs="+", help="validation runs: .csv (with a .json sidecar), .h5, or ROS 2 bag folders "
                                           "(data/validation/*.csv)")
    c.add_argument("--calibrate", nargs="+", help="runs on which direct RFT's ζ is fitted (the baseline)")
    c.add_argument("--source", help="also score against the model's synthetic source: rft:MEDIUM (e.g. rft:pebbles) "
                                    "or rft:ZETA (generic RFT, e.g. rft:1.2)")
    c.add_argument("--sim", help="also simulate: this single-foot scenario's foot PID-tracks each run's path "
                                 "(paper Figs. 7-8), e.g. foot-track-straight")
    c.add_argument("--mapping", help="TOML mapping of your column names, units, sign and bag topics (as for ingest)")
    c.add_argument("--contact", choices=["max-dissipation", "data-flow", *COMPLIANT_LAWS], default=DEFAULT_LAW,
                   help=f"contact law of the model's wrench, in replay and --sim (default: {DEFAULT_LAW}); a "
                        "compliant law is fitted to the model's dataset")
    c.add_argument("--representation", choices=["exact", "fixed"], default="exact",
                   help="max-dissipation replay in the exact hull or the simulator's fixed-normal polytope")
    c.add_argument("--cutoff", type=_number(0, 1e6, low_open=True), default=50.0, help="low-pass cutoff (Hz)")
    c.add_argument("--plot", help="directory for the figures")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_validate)

    v = sub.add_parser("view", help="the live viewer in the browser (or --replay a run file)")
    v.add_argument("scenario", nargs="?", default="quad-trot")
    v.add_argument("--medium", choices=["sand", "pebbles", "beads"])
    v.add_argument("--replay", help="play back a run file (.h5)")
    v.add_argument("--host", default="127.0.0.1", help="address to bind (default: this machine only)")
    v.add_argument("--port", type=_number(1, 65535, kind=int), default=8080, help="1 to 65535")
    v.add_argument("--no-browser", action="store_true", help="do not open a browser")
    v.set_defaults(func=cmd_view)

    w = sub.add_parser("wheel", help="single-wheel test bed: sinkage, drawbar pull and torque against slip "
                                     "(terramechanics reference)")
    w.add_argument("--soil", default="dry-sand", help="Ding et al. Table 6 soil, e.g. dry-sand, lete-sand (Wong–Reece), "
                                                      "or an RFT medium: sand, pebbles")
    w.add_argument("--radius", type=_number(0, 10, low_open=True), default=0.15, help="wheel radius (m)")
    w.add_argument("--width", type=_number(0, 10, low_open=True), default=0.10, help="wheel width (m)")
    w.add_argument("--load", type=_number(0, 1e6, low_open=True), default=100.0, help="vertical load (N)")
    w.add_argument("--slips", type=_floats(0.0, 0.99), default=[round(0.05 * i, 2) for i in range(17)],
                   help="comma-separated slips in [0, 0.99] (default 0 to 0.8)")
    w.add_argument("--shear-modulus", type=_number(0, 10, low_open=True), default=0.01,
                   help="Janosi–Hanamoto K (m); Table 6 gives none")
    w.add_argument("--simulate", nargs="?", const="wheel-bed", metavar="SCENARIO",
                   help="also run the test bed in the simulator at each slip (default scenario wheel-bed); the "
                        "wheel, soil and load are then the scenario's")
    w.add_argument("--plot", help="write the figure (.png)")
    w.add_argument("--json", action="store_true")
    w.set_defaults(func=cmd_wheel)

    b = sub.add_parser("bench", help="time the real code paths")
    b.add_argument("--json", action="store_true")
    b.add_argument("--quick", action="store_true", help="fewer repetitions")
    b.add_argument("--scaling", action="store_true", help="also time scenes of 1, 4, 16, 64 and 256 legged contacts")
    b.add_argument("--compliant", action="store_true",
                   help="also find each compliant law's largest stable time step (drop-upright; a few minutes)")
    b.add_argument("--batch", action="store_true",
                   help="also time batches of 1, 16, 256 and 1024 quadrupeds on the cores (needs gymnasium)")
    b.add_argument("--stability", action="store_true",
                   help="also the largest time step at which quad3d-trot trots, implicit contact against explicit 3D-RFT")
    b.add_argument("--plot", help="with --scaling: write the scaling figure (.png)")
    b.set_defaults(func=cmd_bench)
    return p


def _interrupted(exc: BaseException) -> bool:
    """Ctrl-C, also when it landed inside compiled code and came back wrapped in another error."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def main(argv=None):
    try:
        args = build_parser().parse_args(argv)
        _logging(args.verbose)
        args.func(args)
        sys.stdout.flush()
    except GranularError as exc:
        print("granular: error: " + " ".join(str(exc).splitlines()), file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader of stdout went away (``granular … --json | head``): end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except BaseException as exc:
        if _interrupted(exc):
            print("granular: interrupted", file=sys.stderr)
            return 130
        raise
    return 0


if __name__ == "__main__":
    sys.exit(main())
