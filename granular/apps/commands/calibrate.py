"""``granular calibrate MODEL RUN... --out MODEL2.h5``: a model's forces scaled to a lab's medium
(:mod:`granular.scenarios.calibration`), scored leave-one-run-out, written only if it helps."""
from __future__ import annotations

from granular.apps.commands.common import _number
from granular.apps.outputs import check_outputs, emit, say, wrote
from granular.contact.flow import DEFAULT_LAW
from granular.errors import GranularError


def add(sub):
    k = sub.add_parser("calibrate", help="scale a medium's forces to your own runs (one fitted constant, as RFT's ζ)")
    k.add_argument("model", help="sand, pebbles, beads, or a model file (.h5)")
    k.add_argument("runs", nargs="+", help="recorded runs in your medium (as validate reads them: .csv + .json, .h5, "
                                           "bags; or 3D paths for a 3D model)")
    k.add_argument("--out", required=True, help="the calibrated model to write (.h5)")
    k.add_argument("--mapping", help="TOML mapping of your column names, units, sign and bag topics (as for ingest)")
    k.add_argument("--contact", choices=["data-flow", "max-dissipation"], default=DEFAULT_LAW)
    k.add_argument("--cutoff", type=_number(0, 1e6, low_open=True), default=50.0, help="low-pass cutoff (Hz)")
    k.add_argument("--json", action="store_true")
    k.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args):
    from granular.data import paths3d
    from granular.data.paths3d import is_path3d
    from granular.learning import model as wm, model3d
    from granular.learning.catalog import load_model
    from granular.scenarios import calibration, validation

    from pathlib import Path

    from granular.data.runs import sidecar_path

    inputs = list(args.runs) + [sidecar_path(r) for r in args.runs] + ([args.mapping] if args.mapping else [])
    check_outputs(args, inputs + ([args.model] if Path(args.model).is_file() else []))
    in3d = [is_path3d(run) for run in args.runs]
    if any(in3d) != all(in3d):
        raise GranularError("calibrate takes planar runs or 3D paths, not both at once: "
                            f"3D paths {', '.join(r for r, k in zip(args.runs, in3d) if k)}")
    if all(in3d):
        if args.mapping:
            raise GranularError("--mapping: planar runs only; these are 3D paths")
        model = load_model(args.model, "3d")
        runs = [paths3d.read(p) for p in args.runs]
        save = model3d.save
    else:
        model = load_model(args.model)
        runs = [validation.read(p, model.dataset.foot, args.cutoff, args.mapping) for p in args.runs]
        save = wm.save
    result = calibration.calibrate(model, runs, args.contact)
    result["model"], result["out"] = str(args.model), str(args.out)
    if not result["improves"]:
        raise GranularError(f"the calibration (scale {result['scale']:.3g}) does not improve the held-out fit "
                            f"(NRMSE {result['held_out_before']:.3f} → {result['held_out_after']:.3f}); nothing written")
    save(calibration.calibrated(model, result, runs), args.out)
    emit(result, args.json, _report)


def _report(r):
    how = "each run predicted by the scale fitted on the others" if r["leave_one_out"] else "one run: scored on itself"
    say(f"force scale {r['scale']:.4g} ({r['law']}); NRMSE before → after, {how}:")
    for row in r["runs"]:
        say(f"  {row['run']:<28} {row['before']:.3f} → {row['after']:.3f}  (scale {row['scale_fitted_without_it']:.3g})")
    say(f"  {'mean':<28} {r['held_out_before']:.3f} → {r['held_out_after']:.3f}")
    wrote(r["out"])
