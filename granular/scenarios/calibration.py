"""Calibrating a medium to a lab's own: one force scale fitted on a few recorded runs
(``granular calibrate``).

A model learned from one preparation of a medium transfers its shape to another but not its
magnitude (issue 49: the Beads model's forces were 1.9–3.7× an independent preparation's, and one
fitted constant brought its error from 1.3–3.2 to 0.23–0.65). The calibration is that constant, as
direct RFT's ζ is: s minimising Σ ‖(s·pred − meas) / scale‖² over the runs' samples in the medium
(:func:`granular.scenarios.validation.replay` under the contact law; the wrench scale (F, F, T) of
the runs weighs N and N·m alike), s = Σ pred·meas / Σ pred². W(θ) scales with it exactly (every
extreme wrench times s), so the calibrated model is the model refitted on its dataset × s, the
calibration in the dataset's provenance.

3D models calibrate the same way on 3D paths (:mod:`granular.data.paths3d`): the prediction is the
model's data-flow wrench at each sample's (θ, twist), the wrench scale (F, F, F, T, T, T), the
score the 3D validation's NRMSE.

The score is leave-one-run-out: each run is predicted by the scale fitted on the others, and the
NRMSE (:func:`~granular.scenarios.validation.nrmse`) before and after is reported per run. A
calibration that does not improve the held-out score is refused (nothing is written).
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from granular.errors import GranularError
from granular.scenarios.validation import DEPTH, fit_gain, nrmse, replay


def fit_scale(preds, runs) -> float:
    """The least-squares force scale of the predictions on the runs (module docstring)."""
    return fit_gain(preds, runs, "the model meets no resistance along these runs: nothing to calibrate")


def calibrate(model, runs, law: str = "data-flow") -> dict:
    """The scale on all runs (planar runs, or 3D paths for a 3D model), its leave-one-run-out score,
    and whether it improves the held-out fit."""
    from granular.data.paths3d import Path3D

    if not runs:
        raise GranularError("calibrate needs at least one run")
    in3d = [isinstance(tr, Path3D) for tr in runs]
    if any(in3d) != all(in3d):
        raise GranularError("calibrate takes planar runs or 3D paths, not both at once")
    if all(in3d) and law != "data-flow":
        raise GranularError("3D paths are calibrated under the data-flow law (drop --contact)")
    for tr in runs:
        if not (tr.theta[:, 0] < -DEPTH).any():
            raise GranularError(f"{tr.name}: the foot never enters the medium deeper than {DEPTH:g} m: "
                                "no sample to calibrate on")
    preds = [model.flow(tr.theta, tr.twist) if isinstance(tr, Path3D) else replay(model, tr, law) for tr in runs]
    s = fit_scale(preds, runs)
    rows = []
    for i, tr in enumerate(runs):
        others = [j for j in range(len(runs)) if j != i]
        held = fit_scale([preds[j] for j in others], [runs[j] for j in others]) if others else s
        rows.append({"run": tr.name, "scale_fitted_without_it": held, "before": _score(preds[i], tr),
                     "after": _score(held * preds[i], tr)})
    before, after = np.mean([r["before"] for r in rows]), np.mean([r["after"] for r in rows])
    return {"scale": s, "law": law, "runs": rows, "held_out_before": float(before), "held_out_after": float(after),
            "improves": bool(after < before), "leave_one_out": len(runs) > 1}


def _score(pred, tr) -> float:
    """The mean NRMSE over the samples deeper than DEPTH: the planar validation's, or the 3D paths'."""
    from granular.data.paths3d import Path3D, _nrmse

    mask = tr.theta[:, 0] < -DEPTH
    return _nrmse(pred[mask], tr.wrench[mask])[-1] if isinstance(tr, Path3D) else nrmse(pred, tr.wrench, mask)["mean"]


def calibrated(model, result: dict, runs):
    """The model refitted on its dataset's wrenches × the scale, the calibration in its provenance."""
    from granular.learning import model as wm, model3d

    ds = model.dataset
    provenance = {**ds.provenance, "calibration_scale": result["scale"], "calibration_law": result["law"],
                  "calibration_runs": ", ".join(tr.name for tr in runs)}
    scaled = replace(ds, wrenches=ds.wrenches * result["scale"], provenance=provenance)
    kind = model3d.WrenchSpaceModel3D if isinstance(model, model3d.WrenchSpaceModel3D) else wm.WrenchSpaceModel
    out = kind(scaled, model.regressor, dict(model.params), dict(model.info), target=model.target)
    out.info["calibration"] = {k: result[k] for k in ("scale", "law", "held_out_before", "held_out_after")}
    return out
