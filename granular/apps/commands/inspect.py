"""``granular inspect``: what a file (or a shipped medium's model) holds, as a summary or JSON.

Every file the project reads or writes is accepted: datasets, models, simulation run files,
acquisition runs (ingest's) and validation runs (validate's, whose metadata name a ``path``); a
medium's name (``sand``) inspects the model ``granular sim --medium sand`` would use.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from granular.apps import reports
from granular.apps.commands.common import _number
from granular.apps.outputs import check_outputs, emit
from granular.errors import GranularError


def add(sub):
    i = sub.add_parser("inspect", help="summarise a dataset, a model or a raw run; W(θ) of a model at --theta")
    i.add_argument("path", help="dataset or model (.h5), or an acquisition run (.csv + .json, or .h5)")
    i.add_argument("--cutoff", type=_number(0, 1e6, low_open=True),
                   help="runs: low-pass cutoff (Hz; default: an acquisition run's 5 as in ingest, a validation run's 50 "
                        "as in validate)")
    i.add_argument("--mapping", help="runs: column/unit mapping (.toml)")
    i.add_argument("--assume-sensor-at-p-center", action="store_true",
                   help="runs: a sidecar without sensor_offset/sensor_angle means the sensor sits at p_center")
    i.add_argument("--theta", nargs=2, type=_number(-10, 10), metavar=("D", "PHI"),
                   help="configuration: D the lowest point's height (m, < 0 in the medium), PHI the tilt (rad)")
    i.add_argument("--fixed", type=_number(8, 256, kind=int), metavar="K", help="also give the K-fixed-normal polytope")
    i.add_argument("--plot", help="write a figure (.png)")
    i.add_argument("--json", action="store_true")
    i.set_defaults(func=cmd_inspect)


def label(theta):
    return f"d={theta[0]:+.3f} m, φ={theta[1]:+.2f} rad"


def default_thetas(model):
    d, phi = 0.6 * model.d_min, 0.0
    return [[d, phi], [d, min(0.6, model.phi_max)], [model.d_min, phi]]


def cmd_inspect(args):
    from granular.data.runs import sidecar_path
    from granular.io.kinds import kind_of
    from granular.learning import catalog

    path = Path(args.path)
    if not path.exists():
        for kind in ("planar", "3d"):  # a shipped medium, named as validate and sim take it
            if str(args.path) in catalog.media(kind):
                check_outputs(args, files=("plot",), folders=())
                return _inspect_model(args, catalog.load_model(str(args.path), kind))
        raise GranularError(f"{path}: no such file (nor a medium: {', '.join(catalog.media())}; "
                            f"3D: {', '.join(catalog.media('3d'))})")
    kind = kind_of(path)
    inputs = [path]
    if kind == "raw-run":
        inputs += [sidecar_path(path)] + ([args.mapping] if args.mapping else [])
    check_outputs(args, inputs, files=("plot",), folders=())
    if kind == "model":
        return _inspect_model(args, load_model(path))
    if args.theta is not None:
        raise GranularError(f"--theta needs a model file (or a medium's name); {path} is a {kind.replace('-', ' ')}")
    if kind == "raw-run":
        return _inspect_raw(args, path)
    if kind == "run":
        return _inspect_sim_run(args, path)
    if kind == "path3d":
        return _inspect_path3d(args, path)
    from granular.data import dataset as wd

    return _inspect_dataset(args, wd.read(path, kind=None))


def load_model(path):
    """A model file of either wrench space: planar (:mod:`granular.learning.model`) or 3D
    (:mod:`granular.learning.model3d`), told by its ``wrench_space`` attribute."""
    from granular.io.kinds import wrench_space
    from granular.learning import model as wm, model3d as wm3

    return wm3.load(path) if wrench_space(path) == "3d" else wm.load(path)


def _planar_plot(args, what):
    if args.plot:
        raise GranularError(f"--plot: the figures are planar; {what} is 3D (6-axis) and has none yet")


def _inspect_path3d(args, path):
    from granular.data import paths3d

    _planar_plot(args, "this path")
    p = paths3d.read(path)
    emit({"kind": "3D path", "path": p.name, "medium": p.medium, "source": p.source, "samples": len(p.t),
          "t_total": float(p.t[-1] - p.t[0]), "d_range_m": [float(p.theta[:, 0].min()), float(p.theta[:, 0].max())],
          "tilt_range_rad": [float(p.theta[:, 1].min()), float(p.theta[:, 1].max())],
          "max_abs_wrench": np.abs(p.wrench).max(axis=0).tolist()}, args.json, reports.summary)


def _inspect_sim_run(args, path):
    from granular.simulation import runfile

    if args.plot:
        raise GranularError(f"--plot: {path} is a simulation run file; `granular sim … --plot DIR` draws its figures")
    run = runfile.read(path)
    emit({"kind": "simulation run", **run["summary"]}, args.json, reports.summary)


def _inspect_raw(args, path):
    """An acquisition run (one θ, one direction) or a validation run (a path), told by its metadata."""
    from granular.data import ingest

    mapping = ingest.Mapping.load(args.mapping, args.assume_sensor_at_p_center)
    _, meta = ingest.read_columns(path, mapping, optional=tuple(ingest.RATES))
    if "path" in meta:
        return _inspect_trajectory(args, path, mapping)
    return _inspect_acquisition(args, path, mapping)


def _inspect_acquisition(args, path, mapping):
    from granular.apps import plots
    from granular.data import ingest
    from granular.foot import Foot

    run = ingest.read_run(path, mapping)
    cutoff = 5.0 if args.cutoff is None else args.cutoff  # ingest's default
    wrench, quality = ingest.extract(run, Foot(), cutoff=cutoff)
    summary = {"kind": "acquisition run", "theta_des": run.theta_des.tolist(), "v_des": run.v_des.tolist(),
               "t_total": run.t_total, "samples": len(run.t), "cutoff_hz": cutoff,
               "wrench_F_r": wrench.tolist(), **quality}
    if args.plot:
        plots.acquisition_run(run, ingest.lowpass(run, cutoff), quality["t_pass"], args.plot,
                              f"{path.name}: F_r wrench at the pass {np.round(wrench, 2).tolist()}")
        summary["plot"] = str(args.plot)
    emit(summary, args.json, reports.summary)


def _inspect_trajectory(args, path, mapping):
    from granular.apps import plots
    from granular.data import trajectory
    from granular.foot import Foot

    cutoff = 50.0 if args.cutoff is None else args.cutoff  # validate's default
    tr = trajectory.read(path, Foot(), cutoff, mapping)
    summary = {"kind": "validation run", "path": tr.path, "seed": tr.seed, "samples": len(tr.t),
               "t_total": float(tr.t[-1] - tr.t[0]), "cutoff_hz": cutoff,
               "z_range_m": [float(tr.pose[:, 1].min()), float(tr.pose[:, 1].max())],
               "tilt_range_rad": [float(tr.pose[:, 2].min()), float(tr.pose[:, 2].max())],
               "max_abs_wrench_F_r": np.abs(tr.wrench).max(axis=0).tolist()}
    if args.plot:
        plots.trajectory(tr, args.plot, f"{path.name}: the {tr.path} path, bed seed {tr.seed}")
        summary["plot"] = str(args.plot)
    emit(summary, args.json, reports.summary)


def _dataset_summary(ds):
    if ds.dim == 6:
        from granular.learning.training3d import concavity_table, flow_mismatch_table
    else:
        from granular.learning.training import concavity_table, flow_mismatch_table

    w = np.where(ds.valid[..., None], ds.wrenches, 0.0)
    return {"kind": "dataset", "wrench_space": ds.kind, "medium": ds.medium, "source": ds.source, "n_configs": ds.n, "m_directions": ds.m,
            "depths_m": sorted(set(ds.configs[:, 0].tolist())), "tilts_rad": sorted(set(ds.configs[:, 1].tolist())),
            "valid_samples": int(ds.valid.sum()), "max_abs_wrench": np.abs(w).max(axis=(0, 1)).tolist(),
            "velocity_scale": ds.velocity_scale.tolist(), "foot": ds.foot.attrs(), "created": ds.created,
            "creator": ds.creator,
            "concavity": {k: v for k, v in concavity_table(ds).items() if k != "per_config"},
            "non_associativity": flow_mismatch_table(ds)}


def _inspect_dataset(args, ds):
    from granular.apps import plots

    if ds.dim == 6:
        _planar_plot(args, "this dataset")
    summary = _dataset_summary(ds)
    if args.plot:
        below = np.flatnonzero(ds.configs[:, 0] < 0)
        deep = below[np.argmin(ds.configs[below, 0])]
        tilted = below[np.argmax(np.abs(ds.configs[below, 1]) - 1e-3 * ds.configs[below, 0])]
        rows = list(dict.fromkeys([deep, tilted, below[0]]))
        plots.wrench_spaces([ds.wrenches[j][ds.valid[j]] for j in rows], [label(ds.configs[j]) for j in rows],
                            args.plot, f"{ds.medium} ({ds.source}): measured extreme wrenches")
        summary["plot"] = str(args.plot)
    emit(summary, args.json, reports.summary)


def _inspect_model(args, model):
    from granular.apps import plots

    spatial = model.dataset.dim == 6
    if spatial:
        _planar_plot(args, "this model")
    if args.theta is None:
        summary = {"kind": "model", "wrench_space": model.dataset.kind, "regressor": model.regressor, "target": model.target,
                   "medium": model.dataset.medium,
                   "source": model.dataset.source, "d_range_m": [model.d_min, 0.0],
                   "phi_range_rad": [-model.phi_max, model.phi_max], "m_directions": model.m,
                   "foot": model.dataset.foot.attrs(), **model.info}
        if args.plot:
            thetas = default_thetas(model)
            plots.wrench_spaces(model.points(thetas), [label(t) for t in thetas], args.plot,
                                f"{model.dataset.medium}: predicted W(θ)")
            summary["plot"] = str(args.plot)
        return emit(summary, args.json, reports.summary)
    theta = np.array(args.theta, dtype=float)
    (A, b), = model.halfspaces(theta[None])
    points = model.points(theta[None])[0]
    out = {"theta": theta.tolist(), "A": A.tolist(), "b": b.tolist(), "points": points.tolist()}
    if args.fixed:
        Af = model.fixed_normals(args.fixed)
        out["fixed"] = {"K": args.fixed, "A": Af.tolist(), "b": model.offsets(Af, theta[None])[0].tolist()}
    if args.plot:
        d, phi = min(max(theta[0], model.d_min), 0.0), min(max(theta[1], -model.phi_max), model.phi_max)
        thetas = [theta, [d, float(np.clip(phi + 0.3, -model.phi_max, model.phi_max))],
                  [max(model.d_min, d - 0.3 * abs(model.d_min)), phi]]
        plots.wrench_spaces(model.points(thetas), [label(theta), "tilted: " + label(thetas[1]),
                                                   "deeper: " + label(thetas[2])], args.plot,
                            f"{model.dataset.medium}: W(θ) at {label(theta)}")
        out["plot"] = str(args.plot)
    emit(out, args.json, lambda o: reports.halfspaces(o, label(theta)))
