"""The human form of each command's result: tables and summaries, on stdout (:mod:`.outputs`).

Each function takes the command's ``--json`` object and prints it as lines; files written are noted
on stderr (:func:`.outputs.wrote`), since the JSON already names them.
"""
from __future__ import annotations

import numpy as np

from granular.apps.outputs import say, wrote

#: Why a data-flow step keeps max-dissipation's impulses (``law_fallback_steps``; simulation.step).
FALLBACK_WHY = ("where the data's flow gave the sliding feet no motion (feet about to stop or land) or the "
                "grains' term would have made the impulses do work")


def _wrote_all(r, keys=("run_file", "video", "plot")):
    for key in keys:
        if key in r:
            wrote(r[key])
    for fig in r.get("figures", []):
        wrote(fig)


def summary(s: dict):
    """A summary as ``key value`` lines (inspect)."""
    width = max(map(len, s), default=0) + 2
    for key, value in s.items():
        say(f"  {key:<{width}}{value}")
    _wrote_all(s)


def wheel(r: dict):
    say(f"rigid wheel r {r['radius_m']} m, b {r['width_m']} m, load {r['load_n']:.4g} N on {r['soil']} "
        f"({r['model']}):")
    say("  slip  sinkage m  drawbar pull N  torque N·m  efficiency")
    for row in zip(r["slip"], r["sinkage_m"], r["drawbar_pull_n"], r["torque_nm"], r["efficiency"]):
        say("  {:4.2f}  {:9.4f}  {:14.2f}  {:10.2f}  {:10.2f}".format(*row))
    if "simulated" in r:
        sim = r["simulated"]
        say(f"simulated ({sim['scenario']}: the learned W(θ), data-flow contact, steady state):")
        say("  slip  sinkage m  drawbar pull N  torque N·m  load N")
        for row in zip(sim["slip"], sim["sinkage_m"], sim["drawbar_pull_n"], sim["torque_nm"], sim["load_n"]):
            say("  {:4.2f}  {:9.4f}  {:14.2f}  {:10.2f}  {:6.1f}".format(*row))
    if "figure" in r:
        wrote(r["figure"])


def _cv(r, folds):
    rbf = r["rbf"]
    smoothing = ("from the data’s noise, chosen in every fold" if rbf["smoothing_from_noise"]
                 else format(rbf["smoothing"], "g"))
    say(f"{folds}-fold cross-validation (relative RMS error of held-out extreme wrenches; the RBF's "
        f"kernel {rbf['kernel']}, smoothing {smoothing}):")
    say(f"  {'regressor':<10}{'all':>8}{'f_x':>8}{'f_z':>8}{'τ':>8}")
    for name, v in r["cv"].items():
        say(f"  {name:<10}{v['rel_rmse']:>8.4f}{v['rel_rmse_fx']:>8.4f}{v['rel_rmse_fz']:>8.4f}{v['rel_rmse_tau']:>8.4f}")
    v = r["cv_repeated"]
    if len(v["rel_rmse_repeats"]) > 1:
        say(f"  rbf over {len(v['rel_rmse_repeats'])} draws of the folds: {v['rel_rmse']:.4f} "
            f"(one draw: {min(v['rel_rmse_repeats']):.3f}–{max(v['rel_rmse_repeats']):.3f}, "
            f"± {np.std(v['rel_rmse_repeats']):.3f})")
    cells = (r["cv_repeated"] if r["regressor"] == "rbf" else r["cv"][r["regressor"]])["cells"][:5]
    smooth = all("smooth_rel_rmse" in c for c in cells)
    say(f"  where {r['regressor']}'s error lies, the five largest shares (share of the squared error, the "
        f"configuration's own error{' (a smooth medium’s at this noise)' if smooth else ''}, "
        f"realisations it averages):")
    for c in cells:
        beside = f" ({c['smooth_rel_rmse']:.2f})" if smooth else ""
        say(f"    d {c['theta'][0]:+.3f} m, φ {c['theta'][1]:.2f} rad: {c['share']:4.0%}, "
            f"{c['rel_rmse']:.2f}{beside}, {c['realisations']:g}")


def _noise(r):
    f = r["cv_noise_floor"]
    say(f"  the data's own noise alone would score {f['floor']:.4f} (bed-to-bed spread: "
        f"{f['single_bed_spread']:.2f} of the wrench for one bed, from {f['samples_with_spread']} of "
        f"{f['samples']} samples measured in ≥ 2 beds)")
    (_, now), *more = r["cv_noise_budget"]["rel_rmse"].items()
    more = ", ".join(f"{v:.3f} with {e} more bed{'s' * (e != '1')} in every cell" for e, v in more)
    truth = "this model's W" if r["regressor"] == "rbf" else "an RBF's W fitted to these data"
    say(f"  the RBF on a smooth medium ({truth}) measured with this noise on the same folds would score "
        f"{now:.3f}, {more}; the rest of its {r['cv_repeated']['rel_rmse']:.3f} is structure between cells")


def train(r: dict, folds: int):
    if "cv" in r and r.get("wrench_space") == "3d":
        for name, v in r["cv"].items():
            say(f"{folds}-fold cross-validation over configurations ({name}): extreme wrenches' RMSE "
                f"{v['rel_rmse']:.4f} of the data's scale, worst configuration {v['worst']:.4f}")
    elif "cv" in r:
        _cv(r, folds)
    if "cv_noise_floor" in r:
        _noise(r)
    if r["rbf"]["smoothing_from_noise"] and r["regressor"] == "rbf":
        say(f"RBF smoothing {r['rbf']['smoothing']:.3g}: the model misses its own samples by the data's "
            f"bed-to-bed noise, no more (discrepancy principle)")
    c = r["concavity"]
    paper = f"; paper's {r['medium']}: {c['paper']['average']:.4f}, {c['paper']['worst']:.4f}" if "paper" in c else ""
    say(f"concavity (Table II): average {c['average']:.4f}, worst {c['worst']:.4f}{paper}")
    a = r["non_associativity"]
    say(f"non-associativity (recorded wrench vs the hull's max-dissipation point for its twist): "
        f"average {a['average']:.4f}, worst {a['worst']:.4f}")
    say("fixed-normal outer approximation, distance outside the exact hull / largest wrench:")
    for K, kinds in r["fixed_normals"].items():
        row = "  ".join(f"{kind} max {v['max_rel_distance']:.3f} mean {v['mean_rel_distance']:.3f}"
                        for kind, v in kinds.items())
        say(f"  K = {K:>3}: {row}")
    wrote(r["model"])
    _wrote_all(r)


def halfspaces(o: dict, label: str):
    """W(θ) of a model at one θ (inspect --theta)."""
    A, b, points = np.array(o["A"]), np.array(o["b"]), np.array(o["points"])
    planar = A.shape[1] == 3
    names = "n_x, n_z, n_τ" if planar else "n_fx, n_fy, n_fz, n_τx, n_τy, n_τz"
    say(f"W(θ) at {label}: {len(b)} facets, A w ≤ b (rows: {names} | b)")
    shown = len(b) if planar else 12  # a 6-D hull has hundreds of facets
    for row, off in list(zip(A, b))[:shown]:
        say(f"  [{' '.join(f'{x:+.4f}' for x in row)}] · w ≤ {off:.4f}")
    if len(b) > shown:
        say(f"  … {len(b) - shown} more (--json has them all)")
    components = "f_x, f_z, τ" if planar else "f_x, f_y, f_z, τ_x, τ_y, τ_z"
    say(f"extreme wrenches ({components}): max |.| = {np.abs(points).max(axis=0).round(3).tolist()}")
    _wrote_all(o)


def _gait(g):
    if g.get("fell_at_s") is not None:
        say(f"  gait: {g['strikes']} heel strikes, then fell at t = {g['fell_at_s']:.2f} s (no leg within "
            f"60° of the vertical: the hip below half a leg's height)")
        return
    cycle = (f": last step {g['length']:.3f} m in {g['period']:.3f} s ({g['speed']:.2f} m/s), the Poincaré "
             f"point moved {g['return_error']:.3f} over the last three steps") if "length" in g else ""
    say(f"  gait: {g['strikes']} heel strikes{cycle}")


def sim(s: dict):
    say(f"{s['scenario']} on {s['medium']}: {s['steps']} steps of {s['dt']} s in {s['wall_time_s']:.2f} s "
        f"({s['solver']}, {s['representation']} polytopes, {s['contact']} contact)")
    if s["law_fallback_steps"]:
        say(f"  data-flow kept max-dissipation's impulses on {s['law_fallback_steps']} of {s['steps']} steps, "
            f"{FALLBACK_WHY}")
    for name, b in s["bodies"].items():
        i, f = b["initial"], b["final"]
        say(f"  {name}: x {i['x']:+.4f} → {f['x']:+.4f} m, z {i['z']:+.4f} → {f['z']:+.4f} m, "
            f"angle {i['angle']:+.3f} → {f['angle']:+.3f} rad")
    say(f"  max penetration {s['max_penetration_m']:.4f} m; energy {s['energy']['initial']:.3f} → "
        f"{s['energy']['final']:.3f} J (largest step increase {s['energy']['max_step_increase']:.2e} J)")
    if "gait" in s:
        _gait(s["gait"])
    wheels = {name: f for name, f in s["feet"].items() if "wheel_slip" in f}
    if wheels:
        def slip(v):
            return "–" if v is None else f"{v:.3f}"

        say("  wheel slip (while turning in the soil), mean / last second: " + ", ".join(
            f"{name} {slip(f['wheel_slip'])} / {slip(f['wheel_slip_end'])}" for name, f in wheels.items()))
    _wrote_all(s)


def _simulated(r):
    sims = {name: row["sim"] for name, row in r["runs"].items() if "sim" in row}
    if not sims:
        return
    worst = max(sims, key=lambda n: sims[n]["step_vs_replay"])
    say(f"  simulated foot's tracking error (RMS of p_center): "
        f"{1e3 * max(s['tracking_rms_m'] for s in sims.values()):.1f} mm at worst")
    say("  its wrench against the law replayed at its own pose and twist (step_vs_replay): "
        f"{min(s['step_vs_replay'] for s in sims.values()):.3f} to {sims[worst]['step_vs_replay']:.3f} ({worst})")
    fallback = sum(s["fallback_steps"] for s in sims.values())
    if r["contact"] == "data-flow" and fallback:
        say(f"  data-flow kept max-dissipation's impulses on {fallback} simulated steps, {FALLBACK_WHY}")


def validate(r: dict):
    keys = [k for k in ("model", "sim", "rft", "source") if k in r["mean"]]
    say(f"NRMSE (RMS error / RMS measured, samples whose lowest point is > {r['depth_m'] * 1e3:g} mm deep), {r['contact']} law:")
    say(f"  {'run':<22}" + "".join(f"{k + ' fx/fz/τ/mean':>34}" for k in keys))
    for name, row in r["runs"].items():
        cells = "".join(f"{'  '.join(f'{row[k][c]:.2f}' for c in ('fx', 'fz', 'tau', 'mean')):>34}" for k in keys)
        say(f"  {name:<22}{cells}")
    say("  mean: " + ", ".join(f"{k} {v:.3f}" for k, v in r["mean"].items())
        + (f" (RFT ζ = {r['rft_zeta']:.3g} fitted on the calibration runs)" if "rft_zeta" in r else ""))
    _simulated(r)
    if "spread" in r:
        say(f"  DEM spread (each realisation against the mean of the others): {r['spread']['mean']:.3f}")
    say("  model's force / measured, by depth (least squares): "
        + ", ".join(f"{k} {v:.2f}" for k, v in r["depth_gain"].items()))
    if r["cell_gain"]:
        say("  where a path crosses a recorded cell (θ and direction), force / measured, data's own → model's: "
            + ", ".join(f"{k} {v['data']:.2f} → {v['model']:.2f} ({v['samples']})" for k, v in r["cell_gain"].items()))
    _wrote_all(r)
