"""``granular acquire``: wrench data (or validation paths) by DEM simulation with YADE, on a Dask cluster."""
from __future__ import annotations

from granular.apps.commands.common import _directions_or_dataset, _floats, _number, _sampled_directions
from granular.apps.outputs import check_outputs, wrote
from granular.errors import GranularError


def add(sub):
    a = sub.add_parser("acquire", help="generate wrench data by DEM simulation with YADE, on a Dask cluster")
    a.add_argument("engine", choices=["dem", "dem-paths"],
                   help="dem: the wrench dataset; dem-paths: the held-out validation paths (data/validation)")
    a.add_argument("--medium", default="beads")
    a.add_argument("--out", required=True, help="dataset to write (.h5); for dem-paths, the folder of the shipped runs")
    a.add_argument("--depths", type=_floats(-10.0, 0.0), default=[0.0, -0.03, -0.06],
                   help="comma-separated d of the lowest point (m); default: 0, -0.03, -0.06 (Table I Beads: 0 to -0.24 in steps of 0.06)")
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
                        "∝ 1/√E) but weakens the wrench (1e7: −63 %%, docs/beads-studies.md)")
    a.add_argument("--settle-young", type=_number(1e5, 1e12),
                   help="settle the bed at this Young's modulus (Pa) and run at --young: settled at 1e7 a deep bed was "
                        "ready 37× sooner and its plunges met the same force within 3 ± 6 %% (docs/beads-studies.md, "
                        "'The plunge over depth')")
    a.add_argument("--damping", type=_number(0, 1),
                   help="YADE's local damping in the runs (default: the bed's 0.4, as every shipped Beads run); 0: "
                        "none, whose wrench is rate-free and 5-10x smaller (data/README.md, 'How the wrench depends "
                        "on the preparation')")
    a.add_argument("--periodic", action="store_true",
                   help="a bed periodic in x and y (no side or end walls; the box's X, Y are the period)")
    a.add_argument("--wall-friction", type=_number(0, 10),
                   help="the walls' friction coefficient (default: the beads' own, 0.577); 0: smooth walls, which "
                        "confine the foot less (docs/beads-studies.md, 'The plunge over depth')")
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
                                 threads=args.threads, run_young=run_young, run_damping=args.damping)
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
                             run_young=run_young, run_damping=args.damping)
    wd.write(ds, args.out)
    wrote(args.out)
