"""A run's raw record, for planar and 6-axis ingestion alike (:mod:`granular.data.ingest`,
:mod:`granular.data.ingest3d`): reading its columns by format (CSV with a JSON sidecar, HDF5, a ROS 2
bag's messages), the checks every run passes, the low-pass filter, the instant it passes θ_des, and
a batch's extraction with bad runs reported and skipped.
"""
from __future__ import annotations

import csv
import json
import logging
from pathlib import Path
from typing import Annotated

import h5py
import numpy as np
from msgspec import Meta
from scipy.signal import butter, filtfilt

from granular.errors import GranularError

log = logging.getLogger(__name__)

DEFAULT_CUTOFF_HZ = 5.0


PASS_FRACTION = 0.8


class BadRun(GranularError):
    """A run that cannot be ingested (reported and skipped)."""


Sign = Annotated[float, Meta(ge=-1.0, le=1.0)]   # ±1, checked below


def raw_columns(path: Path, mapping, wanted, read_bag) -> tuple[dict, dict]:
    """A run's mapped channels as stored and its metadata, by format: a ROS 2 bag (a folder, read by
    ``read_bag``, sidecar beside it), HDF5 (metadata as attributes) or CSV (+ sidecar)."""
    if not path.exists():
        raise BadRun(f"{path}: no such file")
    if path.is_dir():
        return read_bag(path, mapping), _sidecar(path)
    if path.suffix in (".h5", ".hdf5"):
        return _read_hdf5(path, mapping, wanted)
    return _read_csv(path, mapping, wanted), _sidecar(path)


def _read_hdf5(path: Path, mapping, wanted) -> tuple[dict, dict]:
    """The mapped datasets of an HDF5 run (numbers only) and its attributes."""
    cols = {}
    try:
        with h5py.File(path, "r") as f:
            for c in wanted:
                name = mapping.columns.get(c, c)
                if name not in f:
                    continue
                if not isinstance(f[name], h5py.Dataset) or f[name].dtype.kind not in "biuf":
                    raise BadRun(f"{path}: {name} should be a dataset of numbers")
                cols[c] = f[name][()]
            meta = {k: _plain(v) for k, v in f.attrs.items()}
    except OSError as exc:
        raise BadRun(f"{path}: not a readable HDF5 file ({exc})") from None
    return cols, meta


def _read_csv(path: Path, mapping, wanted) -> dict:
    """The mapped columns of a CSV file; a UTF-8 byte-order mark and spaces around names are fine."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh)
            header = [name.strip() for name in next(reader, [])]
            rows = list(reader)
    except UnicodeDecodeError as exc:
        raise BadRun(f"{path}: not UTF-8 text (byte {exc.start})") from None
    cols = {}
    for c in wanted:
        name = mapping.columns.get(c, c)
        if name in header:
            k = header.index(name)
            try:
                cols[c] = np.array([float(r[k].strip() or "nan") if k < len(r) else np.nan for r in rows])
            except ValueError:
                raise BadRun(f"{path}: column {name!r} holds non-numbers") from None
    return cols


def _plain(value):
    """An HDF5 attribute as plain Python data (for the metadata schema)."""
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.tolist()
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def _velocity_scale(samples, given=None) -> np.ndarray:
    """The direction grid's velocity scale: given, else the runs' own (which must agree), else the
    largest speed seen on each axis (right when the runs cover the whole sphere)."""
    if given is not None:
        scale = np.asarray(given, float)
    else:
        recorded = [(r.path, r.velocity_scale) for r, _, _ in samples if r.velocity_scale is not None]
        for path, s in recorded[1:]:
            if not np.allclose(s, recorded[0][1], rtol=1e-9):
                raise GranularError(f"runs disagree on velocity_scale: {recorded[0][0]} has "
                                    f"{recorded[0][1].tolist()}, {path} has {s.tolist()}")
        scale = recorded[0][1] if recorded else np.max(np.abs([r.v_des for r, _, _ in samples]), axis=0)
    return np.where(scale > 0, scale, 1.0)


def sidecar_path(path: Path) -> Path:
    """``run.csv`` → ``run.json``; a ROS 2 bag folder ``bag_d0.04`` → ``bag_d0.04.json`` beside it."""
    path = Path(path)
    return path.parent / f"{path.name}.json" if path.is_dir() else path.with_suffix(".json")


def _sidecar(path: Path) -> dict:
    """The run's metadata from its JSON sidecar (CSV files and ROS 2 bags)."""
    sidecar = sidecar_path(path)
    if not sidecar.is_file():
        raise BadRun(f"{path}: missing metadata sidecar {sidecar.name}")
    try:
        meta = json.loads(sidecar.read_bytes().decode("utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRun(f"{sidecar}: not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise BadRun(f"{sidecar}: should hold a JSON object, not {type(meta).__name__}")
    return meta


WRENCH_MSG, POSE_MSG = "geometry_msgs/msg/WrenchStamped", "geometry_msgs/msg/PoseStamped"


def _check(run, cutoff):
    """A run (planar or 6-axis) fit to extract from, else BadRun saying why."""
    if len(run.t) < 20:
        raise BadRun(f"{run.path}: too short ({len(run.t)} samples; need at least 20)")
    if not (np.all(np.isfinite(run.t)) and np.all(np.isfinite(run.pose)) and np.all(np.isfinite(run.wrench))):
        raise BadRun(f"{run.path}: NaN or inf in the samples")
    dt = np.diff(run.t)
    if np.any(dt <= 0):
        raise BadRun(f"{run.path}: time is not strictly increasing (duplicated or backwards at sample "
                     f"{int(np.argmax(dt <= 0)) + 1})")
    if run.t[-1] - run.t[0] < PASS_FRACTION * run.t_total:
        raise BadRun(f"{run.path}: too short ({run.t[-1] - run.t[0]:.3g} s of a {run.t_total:.3g} s run)")
    if cutoff >= 0.5 / np.median(dt):
        raise BadRun(f"{run.path}: cutoff {cutoff} Hz is above the Nyquist frequency {0.5 / np.median(dt):.3g} Hz")


#: How far (d, φ) may be from θ_des at the pass: m, rad.
POSE_TOLERANCE = np.array([0.005, 0.05])


def _pass_time(run):
    """The instant the configuration passes θ_des, and how far (in seconds of travel) it stays from it.

    Along the axes of (d, φ) that v_des changes, the closest sample (refined by a parabola through
    its neighbours); a configuration v_des leaves unchanged is passed on schedule, at 0.8·t_total.
    Either way the configuration must come within POSE_TOLERANCE of θ_des.
    """
    rates = np.abs(run.v_des[1:])
    moving = rates > 0
    if moving.any():
        err = (run.pose[:, 1:][:, moving] - run.theta_des[moving]) / rates[moving]
        dist = np.sqrt((err**2).sum(axis=1))
        i = int(np.argmin(dist))
        t_star, lag = run.t[i], float(dist[i])
        if 0 < i < len(run.t) - 1:
            d0, d1, d2 = dist[i - 1], dist[i], dist[i + 1]
            if d0 - 2 * d1 + d2 > 0:
                t_star = run.t[i] + 0.5 * (d0 - d2) / (d0 - 2 * d1 + d2) * (run.t[i + 1] - run.t[i])
    else:
        t_star, lag = run.t[0] + PASS_FRACTION * run.t_total, 0.0
    at = np.array([np.interp(t_star, run.t, run.pose[:, k]) for k in (1, 2)])
    if np.any(np.abs(at - run.theta_des) > POSE_TOLERANCE):
        raise BadRun(f"{run.path}: never reaches θ_des = {run.theta_des.tolist()} (closest: "
                     f"{np.round(at, 4).tolist()})")
    return t_star, lag


def lowpass_samples(t, samples, cutoff: float) -> np.ndarray:
    """Samples (k, n) through a zero-phase 2nd-order Butterworth low-pass filter at ``cutoff`` Hz."""
    fs = 1.0 / np.median(np.diff(t))
    b, a = butter(2, cutoff / (0.5 * fs))
    return filtfilt(b, a, samples, axis=0)


def extract_all(paths, one, progress: bool, desc: str = "ingest"):
    """``one(path)`` → (run, wrench, quality) of each run (planar or 3D), the bad ones reported and
    skipped: (samples, the skipped runs' reasons)."""
    from tqdm import tqdm

    samples, skipped = [], []
    for path in tqdm(paths, desc=desc, disable=None if progress else True):
        try:
            run, w, quality = one(path)
            samples.append((run, w, quality))
            if quality["flagged"]:
                log.warning("%s: passes θ_des at %.3g s, expected %.3g s", path, quality["t_pass"],
                            quality["t_pass_expected"])
        except BadRun as exc:
            skipped.append(str(exc))
            log.warning("skipped %s", exc)
    return samples, skipped
