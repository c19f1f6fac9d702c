"""``granular merge``: datasets of one medium and protocol joined, or averaged over realisations."""
from __future__ import annotations

import numpy as np

from granular.apps.commands.common import _number
from granular.apps.outputs import check_outputs, say, wrote


def add(sub):
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
