"""``granular ingest``: acquisition runs (F/T rig or DEM) turned into a wrench dataset."""
from __future__ import annotations

from granular.apps.commands.common import _directions_or_dataset, _number, _sampled_directions
from granular.apps.outputs import check_outputs, wrote


def add(sub):
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


def cmd_ingest(args):
    from granular.data import dataset as wd
    from granular.data import ingest, runs

    inputs = list(args.runs) + [runs.sidecar_path(r) for r in args.runs] + ([args.mapping] if args.mapping else [])
    check_outputs(args, inputs)
    mapping = ingest.Mapping.load(args.mapping, args.assume_sensor_at_p_center)
    ds = ingest.assemble(args.runs, out_medium=args.medium, mapping=mapping, cutoff=args.cutoff,
                         m=_sampled_directions(args.directions),
                         source=args.source, progress=True)
    wd.write(ds, args.out)
    wrote(args.out)
