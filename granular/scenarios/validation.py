"""How right are the forces? A model's wrenches against recorded trajectories (``granular validate``).

A validation run (:mod:`granular.data.trajectory`: CSV + JSON sidecar, HDF5 or ROS 2 bag, through
ingest's mapping files) is a trajectory of the foot along any path: per sample the pose (x, z, φ) of
p_center relative to the undisturbed surface, the foot's twist (v_x, v_z, ω) of p_center in F_c
(columns ``vx, vz, omega``, or else the pose's central difference after the same low-pass filter
as the wrench) and the wrench on the foot in the foot frame about p_center (``fx, fz, tau``, as
the DEM and rig records of :mod:`granular.data.ingest`). Its metadata names the ``path``, the
``medium`` and the bed ``seed`` (runs of one path on several beds are realisations).

Kinematic replay: at each sample, θ (d the foot's lowest point's height, :mod:`granular.frames`; φ) and the twist give the model's wrench under a contact
law (:mod:`granular.contact.flow`): ``data-flow``, the data's own wrench for that direction of
motion, or ``max-dissipation``, the point of W(θ) with the least power w·v_r (v_r the twist at
p_r), which is what the paper's contact QP picks for a foot much heavier than the grains it drags. The score is the normalised
RMS error NRMSE = RMS(pred − meas) / RMS(meas) per component, over the samples whose lowest point
is deeper than ``DEPTH`` (the impact of the insertion and the grains' noise at the surface are left out).
Baselines: direct RFT with ζ fitted by least squares on the calibration runs; the DEM's own
spread (each realisation against the mean of the others on the same path).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from granular.data.trajectory import COMPONENTS, DEPTH, Trajectory, read  # noqa: F401 (the CLI calls validation.read)
from granular.contact import compliant
from granular.contact.flow import DEFAULT_LAW, LAWS
from granular.errors import GranularError
from granular.wrench.flow import dissipating, dissipating_polytope
from granular.foot import Foot
from granular.frames import MIRROR, foot_axis, twist_at


def replay(model, traj: Trajectory, law: str = DEFAULT_LAW, representation: str = "exact") -> np.ndarray:
    """The model's wrench along the trajectory (kinematic replay), in F_r, under contact ``law``:
    'max-dissipation' (the point of W(θ) with the least power, the paper's eq. 2, in the
    ``representation`` 'exact' (the hull) or 'fixed' (the simulator's fixed-normal polytope)) or
    'data-flow' (the data's own direction → wrench map, :mod:`granular.wrench.flow`), or a compliant
    law (:mod:`granular.contact.compliant`) fitted to the model's dataset."""
    theta = traj.theta
    if law == "data-flow":
        return model.flow(theta, traj.twist)
    twist_r = twist_at(traj.twist, model.dataset.foot.r_offset * foot_axis(traj.pose[:, 2]))  # at p_r
    if law in compliant.LAWS:
        return compliant.wrench(compliant.fit(law, model.dataset), theta, twist_r,
                                np.full(len(theta), model.dataset.foot.r_offset))
    if law != "max-dissipation":
        raise GranularError(f"unknown contact law {law!r}; choose one of {', '.join(LAWS + compliant.LAWS)}")
    if representation == "fixed":
        A = model.fixed_normals(32)
        return dissipating_polytope(A, model.offsets(A, theta), twist_r)
    if representation != "exact":
        raise GranularError(f"unknown polytope representation {representation!r}; choose exact or fixed")
    return dissipating(model.points(theta), twist_r)


def rft_wrench(traj: Trajectory, zeta: float, foot: Foot = Foot(), coeffs=None) -> np.ndarray:
    """Direct RFT along the trajectory: ζ times ``coeffs`` (default Li et al.'s generic shape)."""
    from granular.data import rft

    coeffs = rft.GENERIC if coeffs is None else coeffs
    return np.array([rft.foot_wrench(foot, th, v, zeta, coeffs)[0] for th, v in zip(traj.theta, traj.twist)])


def fit_zeta(trajs, foot: Foot = Foot()) -> float:
    """ζ of direct RFT by least squares on the calibration runs (RFT is linear in ζ)."""
    return fit_gain([rft_wrench(tr, 1.0, foot) for tr in trajs], trajs,
                    "the calibration runs give RFT no resistance to fit")


def fit_gain(preds, trajs, nothing: str) -> float:
    """The s minimising Σ ‖(s·pred − meas) / scale‖² over the runs' samples deeper than DEPTH, in the
    wrench scale (F, F, T) of the runs (3D paths: (F, F, F, T, T, T)) so that N and N·m weigh alike:
    Σ pred·meas / Σ pred². A
    GranularError saying ``nothing`` where the predictions are zero."""
    masks = [tr.theta[:, 0] < -DEPTH for tr in trajs]
    scale = _scale([tr.wrench[k] for tr, k in zip(trajs, masks)])
    num = sum(((p[k] / scale) * (tr.wrench[k] / scale)).sum() for p, tr, k in zip(preds, trajs, masks))
    den = sum(((p[k] / scale) ** 2).sum() for p, k in zip(preds, masks))
    if den <= 0:
        raise GranularError(nothing)
    return float(num / den)


def _scale(measured):
    """Per component the RMS of its group, forces or torques: (F, F, T) planar, (F, F, F, T, T, T) in 3D."""
    w = np.vstack(measured)
    forces = 2 if w.shape[1] == 3 else 3
    f, t = np.sqrt(np.mean(w[:, :forces] ** 2)), np.sqrt(np.mean(w[:, forces:] ** 2))
    return np.array([f] * forces + [t if t > 0 else 1.0] * (w.shape[1] - forces))


def nrmse(pred, meas, mask) -> dict:
    """Per component RMS(pred − meas) / RMS(meas) over ``mask``, and their mean."""
    err = np.sqrt(np.mean((pred[mask] - meas[mask]) ** 2, axis=0))
    ref = np.sqrt(np.mean(meas[mask] ** 2, axis=0))
    out = {c: float(e / r) if r > 0 else float("nan") for c, e, r in zip(COMPONENTS, err, ref)}
    out["mean"] = float(np.nanmean([out[c] for c in COMPONENTS]))
    return out


#: Depth bins (m) of :func:`depth_gain`: where a model's forces are too weak or too strong.
DEPTH_BINS = (DEPTH, 0.015, 0.03, 0.045, 0.07, np.inf)


def _gain(pred, meas) -> float:
    """The least-squares scale g of the predicted force on the measured one (pred ≈ g meas:
    Σ pred·meas / Σ meas² over f_x and f_z); 1 is unbiased, 0.5 half as strong as measured."""
    den = np.sum(meas[:, :2] ** 2)
    return float(np.sum(pred[:, :2] * meas[:, :2]) / den) if den > 0 else float("nan")


def depth_gain(curves, runs) -> dict:
    """Per depth bin, :func:`_gain` of the model over the runs' samples in it: where it is too weak
    or too strong."""
    gains = {}
    for lo, hi in zip(DEPTH_BINS, DEPTH_BINS[1:]):
        inside = [(-tr.theta[:, 0] >= lo) & (-tr.theta[:, 0] < hi) for tr in runs]
        meas = np.concatenate([tr.wrench[k] for tr, k in zip(runs, inside)])
        if len(meas) and np.any(meas[:, :2]):
            pred = np.concatenate([curves[tr.name]["model"][k] for tr, k in zip(runs, inside)])
            gains[f"{1e3 * lo:g}-{1e3 * hi:g} mm"] = _gain(pred, meas)
    return gains


#: A run's sample lies on a cell of the data when its θ is within (m, rad) of a recorded
#: configuration and its direction of motion (in the data's velocity scale) within (rad) of a recorded one.
CELL = (0.004, 0.06, np.radians(8.0))


def _on_cells(dataset, tr):
    """The samples of ``tr`` deeper than DEPTH that lie on a cell of ``dataset`` (:data:`CELL`; φ < 0
    through the mirror), and the data's own wrench there (F_r)."""
    d_tol, phi_tol, angle = CELL
    sign = np.where(tr.pose[:, 2:3] < 0, MIRROR, 1.0)
    u = sign * tr.twist / dataset.velocity_scale
    norm = np.linalg.norm(u, axis=1)
    u = u / np.where(norm > 0, norm, 1.0)[:, None]
    near = ((np.abs(tr.theta[:, None, 0] - dataset.configs[None, :, 0]) < d_tol)
            & (np.abs(np.abs(tr.pose[:, None, 2]) - dataset.configs[None, :, 1]) < phi_tol))
    cell = np.argmax(near, axis=1)
    direction = np.argmax(u @ dataset.directions.T, axis=1)
    on = (near.any(axis=1) & (norm > 0) & (tr.theta[:, 0] < -DEPTH)
          & (np.sum(u * dataset.directions[direction], axis=1) > np.cos(angle))
          & dataset.valid[cell, direction])
    return on, sign[on] * dataset.wrenches[cell[on], direction[on]]


def cell_gain(dataset, curves, runs) -> dict:
    """Per path, on the samples where its runs cross a cell of the data (a recorded θ moving in a
    recorded direction, :data:`CELL`): :func:`_gain` of the data's own wrench and of the model's.
    Where the data's gain is as far from 1 as the model's, the error is in the data (the acquisition's
    protocol or bed), not in the learning."""
    pairs = {}
    for tr in runs:
        on, data = _on_cells(dataset, tr)
        if on.any():
            pairs.setdefault(tr.path, []).append((data, curves[tr.name]["model"][on], tr.wrench[on]))
    out = {}
    for path, rows in pairs.items():
        data, model, meas = (np.concatenate(cols) for cols in zip(*rows))
        out[path] = {"samples": len(meas), "data": _gain(data, meas), "model": _gain(model, meas)}
    return out


def spread(trajs) -> dict:
    """Each realisation of a path against the mean of the others (on its own time base)."""
    out = {}
    for tr in trajs:
        others = [o for o in trajs if o.path == tr.path and o is not tr]
        if not others:
            continue
        mean = np.mean([np.column_stack([np.interp(tr.t, o.t, o.wrench[:, i]) for i in range(3)]) for o in others], axis=0)
        out[tr.name] = nrmse(mean, tr.wrench, tr.theta[:, 0] < -DEPTH)
    return out


@dataclass(frozen=True)
class Tracked:
    """A simulated foot along a recorded path, on the run's time base: its wrench (F_r), its own
    pose and twist (of p_center), the RMS distance of p_center from the path (m), how many steps
    data-flow kept max-dissipation's answer, and the polytope it stepped with."""

    wrench: np.ndarray
    trajectory: Trajectory
    tracking_rms_m: float
    fallback_steps: int
    representation: str


#: Distance (m) from the recorded path past which a simulated foot has not tracked it but diverged
#: (the paper's gains trail the DEM's fast paths by at most 17 mm, RMS).
DIVERGED = 0.1


def simulate(model, medium: str, scenario_name: str, traj: Trajectory, law: str = DEFAULT_LAW) -> Tracked:
    """The paper's Figs. 7–8 protocol: the scenario's foot (mass, inertia, M_g, PID gains) tracks the
    recorded path in the simulator, on ``model`` (the medium ``medium``'s)."""
    from granular.scenarios import scenario as scenarios
    from granular.scenarios.control import PIDTracker, Recorded

    spec = scenarios.load(scenario_name)
    if spec.robot.get("kind") != "foot" or spec.control.get("kind") != "track":
        raise GranularError(f"--sim {scenario_name}: needs a single-foot tracking scenario (e.g. foot-track-straight)")
    x, z, phi = map(float, traj.pose[0])
    vx, vz, omega = map(float, traj.twist[0])
    spec = spec.with_(medium=medium, contact=law, terrain={"kind": "flat", "height": 0.0},
                      duration=float(traj.t[-1] - traj.t[0]),
                      initial={"x": x, "z": z, "angle": phi, "vx": vx, "vz": vz, "omega": omega})
    sim = scenarios.build(spec, model)
    old = sim.controller
    sim.controller = PIDTracker(Recorded(traj.t - traj.t[0], traj.pose, traj.twist), old.dt, old.kp, old.ki, old.kd,
                                old.weight, old.ndof)
    sim.memory = sim.controller.initial_memory()
    steps = scenarios.check_size(spec)
    t, w, q, v = np.empty(steps), np.empty((steps, 3)), np.empty((steps, 3)), np.empty((steps, 3))
    fallback = np.zeros(steps, dtype=bool)

    def record(s):
        # a step's wrench comes from the pose it starts at (s.info) and the twist it ends with
        # (the implicit step's v⁺, the foot's own coordinates being p_center and its tilt)
        i = s.steps - 1
        t[i], w[i], fallback[i], v[i] = s.state.t - spec.dt, s.info.wrench[0], s.info.fallback, s.state.v[:3]
        q[i] = *s.info.p_center[0], s.info.theta[0, 1]

    on = traj.t - traj.t[0]
    where = f"--sim {scenario_name}, run {traj.name}: the simulated foot"
    diverged = (f"the tracker diverged (gains too stiff for dt = {spec.dt:g} s) or cannot follow the path (too "
                "soft for its speed)")
    try:
        sim.rollout(steps, [record])
    except Exception as error:
        last = sim.steps - 1  # the last step recorded: where the foot was when the step failed
        off = np.hypot(q[last, 0] - np.interp(t[last], on, traj.pose[:, 0]),
                       q[last, 1] - np.interp(t[last], on, traj.pose[:, 1])) if last >= 0 else 0.0
        if off <= DIVERGED:
            raise
        raise GranularError(f"{where} was {off:.3g} m off the recorded path when its step failed ({error}): "
                            f"{diverged}") from error
    wrench, pose, twist = (np.column_stack([np.interp(on, t, a[:, i]) for i in range(3)]) for a in (w, q, v))
    own = replace(traj, pose=pose, twist=twist, wrench=wrench)
    off = np.sqrt(np.sum((pose[:, :2] - traj.pose[:, :2]) ** 2, axis=1))
    if not off.max() <= DIVERGED:
        raise GranularError(f"{where} left the recorded path by up to {off.max():.3g} m: {diverged}")
    tracking = float(np.sqrt(np.mean(off ** 2)))
    return Tracked(wrench, own, tracking, int(fallback.sum()), spec.representation)


def validate(model, runs, calibrate=(), source_zeta=None, sim: str | None = None, medium: str | None = None,
             law: str = DEFAULT_LAW, source_coeffs=None, representation: str = "exact"):
    """Scores of ``model`` (and of direct RFT, the simulated foot, the synthetic source) on the runs
    (:class:`Trajectory`): the ``--json`` object of granular validate, and per run the predicted
    wrenches {"model", "rft", "sim"} for figures."""
    foot = model.dataset.foot
    names = [r.name for r in runs]
    if len(set(names)) != len(names):
        raise GranularError("two runs share a name; give each run once")
    zeta = fit_zeta(calibrate, foot) if calibrate else None
    result = {"runs": {}, "mean": {}, "depth_m": DEPTH, "depth_at": "lowest point", "contact": law,
              "representation": representation}
    if zeta is not None:
        result["rft_zeta"] = zeta
    curves = {}
    for tr in runs:
        mask = tr.theta[:, 0] < -DEPTH
        curves[tr.name] = pred = {"model": replay(model, tr, law, representation)}
        row = {"model": nrmse(pred["model"], tr.wrench, mask), "path": tr.path, "seed": tr.seed,
               "samples": int(mask.sum()), "force_gain": _gain(pred["model"][mask], tr.wrench[mask])}
        if zeta is not None:
            pred["rft"] = rft_wrench(tr, zeta, foot)
            row["rft"] = nrmse(pred["rft"], tr.wrench, mask)
        if source_zeta is not None:
            row["source"] = nrmse(pred["model"], rft_wrench(tr, source_zeta, foot, source_coeffs), mask)
        if sim is not None:
            run = simulate(model, medium, sim, tr, law)
            pred["sim"] = run.wrench
            # the step against the law replayed where the simulated foot really was: what is left
            # of the simulated score once the tracker's error is taken out
            own = replay(model, run.trajectory, law, run.representation)
            row["sim"] = {**nrmse(run.wrench, tr.wrench, mask), "tracking_rms_m": run.tracking_rms_m,
                          "step_vs_replay": nrmse(run.wrench, own, mask)["mean"],
                          "fallback_steps": run.fallback_steps}
        result["runs"][tr.name] = row
    result["depth_gain"] = depth_gain(curves, runs)
    result["cell_gain"] = cell_gain(model.dataset, curves, runs)
    for key in ("model", "sim", "rft", "source"):
        values = [r[key]["mean"] for r in result["runs"].values() if key in r]
        if values:
            result["mean"][key] = float(np.mean(values))
    dem = spread(runs)
    if dem:
        result["spread"] = {"runs": dem, "mean": float(np.mean([v["mean"] for v in dem.values()]))}
    return result, curves
