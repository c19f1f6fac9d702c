"""``granular calibrate MODEL RUN... --out MODEL2.h5``: a model's forces scaled to a lab's medium
(:mod:`granular.scenarios.calibration`), scored leave-one-run-out, written only if it helps."""
from __future__ import annotations

from granular.apps.outputs import check_outputs, emit, say, wrote
from granular.errors import GranularError


def cmd_calibrate(args):
    from granular.data.paths3d import is_path3d
    from granular.learning import model as wm
    from granular.learning.catalog import load_model
    from granular.scenarios import calibration, validation

    from pathlib import Path

    from granular.data.ingest import sidecar_path

    inputs = list(args.runs) + [sidecar_path(r) for r in args.runs] + ([args.mapping] if args.mapping else [])
    check_outputs(args, inputs + ([args.model] if Path(args.model).is_file() else []))
    for run in args.runs:
        if is_path3d(run):
            raise GranularError(f"{run}: a 3D path; calibrate takes planar validation runs (3D models: not yet)")
    model = load_model(args.model)
    runs = [validation.read(p, model.dataset.foot, args.cutoff, args.mapping) for p in args.runs]
    result = calibration.calibrate(model, runs, args.contact)
    result["model"], result["out"] = str(args.model), str(args.out)
    if not result["improves"]:
        raise GranularError(f"the calibration (scale {result['scale']:.3g}) does not improve the held-out fit "
                            f"(NRMSE {result['held_out_before']:.3f} → {result['held_out_after']:.3f}); nothing written")
    wm.save(calibration.calibrated(model, result, runs), args.out)
    emit(result, args.json, _report)


def _report(r):
    how = "each run predicted by the scale fitted on the others" if r["leave_one_out"] else "one run: scored on itself"
    say(f"force scale {r['scale']:.4g} ({r['law']}); NRMSE before → after, {how}:")
    for row in r["runs"]:
        say(f"  {row['run']:<28} {row['before']:.3f} → {row['after']:.3f}  (scale {row['scale_fitted_without_it']:.3g})")
    say(f"  {'mean':<28} {r['held_out_before']:.3f} → {r['held_out_after']:.3f}")
    wrote(r["out"])
