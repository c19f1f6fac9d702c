"""``granular validate``: a model's wrenches scored against recorded trajectories (planar or 3D paths)."""
from __future__ import annotations

import argparse

from granular.apps import reports
from granular.apps.commands.common import _number
from granular.apps.outputs import check_outputs, emit
from granular.contact.compliant import LAWS as COMPLIANT_LAWS
from granular.contact.flow import DEFAULT_LAW
from granular.errors import GranularError


def add(sub):
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
