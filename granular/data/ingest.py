"""Acquisition runs → wrench datasets: the extraction of Zhu et al. 2019, §III-B2.

A run drags the foot at constant velocity v_des (a twist in F_c) for t_total,
passing θ_des at 0.8·t_total. Its raw record (CSV with a JSON sidecar, or
HDF5; documented in data/README.md) holds time, the pose of p_center (x, z
relative to the undisturbed surface, tilt φ) and the wrench measured by a
sensor mounted on the foot. Extraction: zero-phase low-pass filter, find the
instant the pose passes θ_des, interpolate the wrench there, and move it into
F_r (rotate by the foot's tilt and the sensor's mounting angle; move the
torque to p_r). Many runs are assembled on the grid θ_des × directions; a
missing or failed sample is masked out (``valid``). A bad run is reported
with its file and the reason and skipped; it never stops the batch.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from granular.data.dataset import WrenchDataset
from granular.errors import GranularError
from granular.io.schema import Finite, NonNegative, Positive, Schema, parse, read_document
from granular.foot import Foot
from granular.frames import cross2, foot_axis, lowest_height
from granular.data.runs import (DEFAULT_CUTOFF_HZ, PASS_FRACTION, POSE_MSG, WRENCH_MSG, BadRun, Sign, _check,
                                _pass_time, _velocity_scale, extract_all, lowpass_samples, raw_columns)
from granular.data.sampling import direction_set

log = logging.getLogger(__name__)

CHANNELS = ("t", "x", "z", "phi", "fx", "fz", "tau")
#: Units a mapping may name, as factors to SI.
UNITS = {"s": 1.0, "ms": 1e-3, "m": 1.0, "mm": 1e-3, "cm": 1e-2, "rad": 1.0, "deg": np.pi / 180,
         "N": 1.0, "kgf": 9.80665, "N*m": 1.0, "N*mm": 1e-3}
#: Twist columns a trajectory may hold (granular.data.trajectory), read under these names: their unit is
#: the mapping's unit of the pose channel per its unit of time, so a rig logging mm and ms needs no more.
RATES = {"vx": "x", "vz": "z", "omega": "phi"}


@dataclass(frozen=True)
class Run:
    """One acquisition run in SI units: samples (k,) and its metadata."""

    path: Path
    t: np.ndarray
    pose: np.ndarray         # (k, 3): x, z of p_center (m), tilt φ (rad), in F_c
    wrench: np.ndarray       # (k, 3): f_x, f_z (N), τ (N·m) in the sensor frame, about the sensor origin
    theta_des: np.ndarray    # (d, φ)
    v_des: np.ndarray        # twist (v_x, v_z, ω) in F_c
    t_total: float
    medium: str
    sensor_offset: np.ndarray  # sensor origin in the foot frame, from p_center (m)
    sensor_angle: float        # sensor x axis from the foot frame's x axis (rad)
    velocity_scale: np.ndarray | None = None  # the run's direction grid scale, if recorded
    sign: float = 1.0                          # the sidecar's per-run sign (applied to the wrench)


#: What each channel measures, and the units of each kind.
KIND = {"t": "time", "x": "length", "z": "length", "phi": "angle", "fx": "force", "fz": "force", "tau": "torque"}
UNIT_KIND = {"s": "time", "ms": "time", "m": "length", "mm": "length", "cm": "length", "rad": "angle",
             "deg": "angle", "N": "force", "kgf": "force", "N*m": "torque", "N*mm": "torque"}
Channel = Literal["t", "x", "z", "phi", "fx", "fz", "tau"]
Unit = Literal["s", "ms", "m", "mm", "cm", "rad", "deg", "N", "kgf", "N*m", "N*mm"]


class MappingFile(Schema):
    """A column mapping (data/README.md): lab column names and units per canonical channel."""

    columns: dict[Channel, str] = {}
    units: dict[Channel, Unit] = {}
    sign: Sign = 1.0                        # −1 if the sensor reports the foot's force on the medium
    topics: dict[Literal["wrench", "pose"], str] = {}


MAPPING_CHOICES = {"columns": CHANNELS, "units": CHANNELS, "units[...]": tuple(UNIT_KIND), "topics": ("wrench", "pose")}


class Sidecar(Schema):
    """A run's metadata (``<run>.json``; for HDF5 runs, the file's attributes)."""

    theta_des: tuple[Finite, Finite]               # (d, φ): m, rad
    v_des: tuple[Finite, Finite, Finite]           # twist in F_c: m/s, m/s, rad/s
    t_total: Positive                              # s
    medium: str = "unknown"
    sensor_offset: tuple[Finite, Finite] | None = None   # sensor origin from p_center, foot frame (m)
    sensor_angle: Finite | None = None             # sensor x axis from the foot's x axis (rad)
    velocity_scale: tuple[Positive, Positive, Positive] | None = None
    sign: Sign = 1.0                               # per run, times the mapping's sign
    insertion_m: Finite | None = None              # DEM provenance (granular acquire dem)
    seconds: NonNegative | None = None


@dataclass(frozen=True)
class Mapping:
    """Lab column names and units → the canonical channels (see data/README.md)."""

    columns: dict
    units: dict
    sign: float = 1.0        # −1 if the sensor reports the foot's force on the medium
    topics: dict = field(default_factory=dict)  # ROS 2 bags: {"wrench": topic, "pose": topic}
    assume_sensor_at_p_center: bool = False     # a sidecar without the sensor mount means (0, 0), 0 rad

    @classmethod
    def load(cls, path=None, assume_sensor_at_p_center: bool = False) -> "Mapping":
        if path is None:
            return cls({c: c for c in CHANNELS}, {}, assume_sensor_at_p_center=assume_sensor_at_p_center)
        doc = read_document(path, "column mapping")
        if _3d().declares_3d(doc, path):  # a 6-axis rig: its runs go to ingest3d, into a 3D dataset
            return _3d().Mapping3D.load(path, doc, assume_sensor_at_p_center)
        doc.pop("wrench_space", None)  # "planar", said explicitly
        spec = parse(doc, MappingFile, path, MAPPING_CHOICES)
        if abs(spec.sign) != 1.0:
            raise GranularError(f"{path}: sign must be 1 or -1, got {spec.sign:g}")
        for channel, unit in spec.units.items():
            if UNIT_KIND[unit] != KIND[channel]:
                raise GranularError(f"{path}: units.{channel} = {unit!r} is a unit of {UNIT_KIND[unit]}, but "
                                    f"{channel} is a {KIND[channel]}; choose one of "
                                    f"{', '.join(u for u, k in UNIT_KIND.items() if k == KIND[channel])}")
        return cls({c: spec.columns.get(c, c) for c in CHANNELS}, dict(spec.units), spec.sign, dict(spec.topics),
                   assume_sensor_at_p_center)

    def factor(self, channel):
        if channel in RATES:
            return self.factor(RATES[channel]) / self.factor("t")
        return UNITS[self.units.get(channel, {"t": "s", "x": "m", "z": "m", "phi": "rad", "fx": "N", "fz": "N",
                                              "tau": "N*m"}[channel])]


def _3d():
    """granular.data.ingest3d, imported when needed (it imports this module)."""
    from granular.data import ingest3d

    return ingest3d


def _is_3d(thing) -> bool:
    """A 3D mapping or run (ingest3d's, whose ``space`` is "3d"): dispatched to ingest3d."""
    return getattr(thing, "space", "planar") == "3d"


def _metadata(meta: dict, path, mapping: Mapping):
    try:
        side = parse(meta, Sidecar, f"{path} (metadata)")
    except GranularError as exc:
        raise BadRun(str(exc)) from None
    if abs(side.sign) != 1.0:
        raise BadRun(f"{path} (metadata): sign must be 1 or -1, got {side.sign:g}")
    if side.sensor_offset is None or side.sensor_angle is None:
        if not mapping.assume_sensor_at_p_center:
            raise BadRun(f"{path} (metadata): no sensor mount (sensor_offset [m, m] and sensor_angle [rad]); give "
                         "them, or pass --assume-sensor-at-p-center if the sensor sits at p_center, aligned")
    return dict(theta_des=np.array(side.theta_des), v_des=np.array(side.v_des), t_total=side.t_total,
                medium=side.medium, sensor_offset=np.array(side.sensor_offset or (0.0, 0.0)),
                sensor_angle=side.sensor_angle or 0.0, sign=side.sign,
                velocity_scale=None if side.velocity_scale is None else np.array(side.velocity_scale))


def read_run(path, mapping: Mapping = Mapping.load()) -> Run:
    """A raw run from CSV (+ ``<name>.json`` sidecar), HDF5 (metadata as attributes) or a ROS 2 bag."""
    if _is_3d(mapping):
        return _3d().read_run(path, mapping)
    si, meta = read_columns(path, mapping)
    meta = _metadata(meta, path, mapping)
    return Run(Path(path), si["t"], np.column_stack([si["x"], si["z"], si["phi"]]),
               mapping.sign * meta["sign"] * np.column_stack([si["fx"], si["fz"], si["tau"]]), **meta)


def read_columns(path, mapping: Mapping, optional=()) -> tuple[dict, dict]:
    """A raw run's channels in SI units (1-D, one length) and its metadata as plain data, from CSV
    (+ ``<name>.json`` sidecar), HDF5 (metadata as attributes) or a ROS 2 bag (a folder, sidecar
    ``<bag>.json`` beside it). Every channel of CHANNELS must be there; ``optional`` ones (RATES)
    are read where the file has them."""
    if _is_3d(mapping):
        return _3d().read_columns(path, mapping, optional)
    path = Path(path)
    cols, meta = raw_columns(path, mapping, (*CHANNELS, *optional), _read_bag)
    _3d().refuse_space(path, meta, "planar")  # a 6-axis run: fatal, the batch needs the 3D mapping
    missing = [mapping.columns[c] for c in CHANNELS if c not in cols]
    if missing:
        raise BadRun(f"{path}: missing column(s) {', '.join(missing)}")
    si = {c: np.asarray(v, float) * mapping.factor(c) for c, v in cols.items()}
    shapes, time = {mapping.columns.get(c, c): v.shape for c, v in si.items()}, mapping.columns["t"]
    odd = [name for name, shape in shapes.items() if shape != shapes[time]] if len(shapes[time]) == 1 else []
    if odd or len(shapes[time]) != 1:
        raise BadRun(f"{path}: the columns should be 1-D and of one length: "
                     + ", ".join(f"{name} has shape {shapes[name]}" for name in [time, *odd]))
    return si, meta


def _read_bag(path: Path, mapping: Mapping):
    """A ROS 2 bag (directory): the wrench and pose topics, on the wrench's time stamps.

    The run's plane is the x–z plane of the messages' frames (ROS units, SI): the pose is p_center
    relative to the undisturbed surface, the tilt is the rotation about −y (counter-clockwise as
    drawn, frames.py); the wrench is in the sensor's frame, its torque about −y. The metadata is
    the JSON sidecar ``<bag>.json`` beside the bag directory; the mapping's units apply as for CSV.
    """
    try:
        from rosbags.highlevel import AnyReader
    except ImportError:
        raise GranularError("reading ROS 2 bags needs rosbags: pip install 'granular[ros]'") from None
    try:
        with AnyReader([path]) as reader:
            streams = {}
            for kind, msgtype in (("wrench", WRENCH_MSG), ("pose", POSE_MSG)):
                want = mapping.topics.get(kind)
                conns = [c for c in reader.connections if c.msgtype == msgtype and want in (None, c.topic)]
                if not conns:
                    raise BadRun(f"{path}: no {msgtype} topic" + (f" named {want!r}" if want else ""))
                streams[kind] = [reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages([conns[0]])]
                if not streams[kind]:
                    raise BadRun(f"{path}: no messages on {conns[0].topic}")
    except BadRun:
        raise
    except Exception as exc:  # rosbags raises its own types for unreadable bags
        raise BadRun(f"{path}: not a readable ROS 2 bag ({exc})") from None
    stamp = lambda m: m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec  # noqa: E731
    tw = np.array([stamp(m) for m in streams["wrench"]])
    tp = np.array([stamp(m) for m in streams["pose"]])
    q = np.array([[m.pose.orientation.w, m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z]
                  for m in streams["pose"]])
    phi = np.unwrap(np.arctan2(-2 * (q[:, 1] * q[:, 3] + q[:, 0] * q[:, 2]), 1 - 2 * (q[:, 1] ** 2 + q[:, 2] ** 2)))
    keep = (tw >= tp.min()) & (tw <= tp.max()) if len(tp) else np.zeros(len(tw), bool)
    t = tw[keep]
    cols = {"t": t - (t[0] if len(t) else 0.0),
            "x": np.interp(t, tp, [m.pose.position.x for m in streams["pose"]]),
            "z": np.interp(t, tp, [m.pose.position.z for m in streams["pose"]]),
            "phi": np.interp(t, tp, phi)}
    w = [m for m, k in zip(streams["wrench"], keep) if k]
    cols.update(fx=np.array([m.wrench.force.x for m in w]), fz=np.array([m.wrench.force.z for m in w]),
                tau=np.array([-m.wrench.torque.y for m in w]))
    return cols


def lowpass(run: Run, cutoff: float) -> np.ndarray:
    """The wrench samples through the low-pass filter of :func:`lowpass_samples` (paper step 4)."""
    if _is_3d(run):  # only the planar run figure (inspect --plot) asks; it would mislabel six components
        raise GranularError(f"{run.path}: a 3D (6-axis) run; its figure is not drawn yet (inspect without --plot "
                            "shows its extraction)")
    return lowpass_samples(run.t, run.wrench, cutoff)


def to_reference(w_s, phi, sensor_offset, sensor_angle: float, foot: Foot) -> np.ndarray:
    """Sensor wrenches (k, 3) (force in the sensor frame, torque about the sensor origin) at tilts
    ``phi`` (k,) → wrenches in F_r: force in F_c, torque about p_r (paper §III-B2, step 5)."""
    w_s, phi = np.atleast_2d(w_s), np.atleast_1d(phi)
    c, s = np.cos(phi + sensor_angle), np.sin(phi + sensor_angle)
    force = np.column_stack([c * w_s[:, 0] - s * w_s[:, 1], s * w_s[:, 0] + c * w_s[:, 1]])
    cp, sp = np.cos(phi), np.sin(phi)
    arm = np.column_stack([cp * sensor_offset[0] - sp * sensor_offset[1], sp * sensor_offset[0] + cp * sensor_offset[1]])
    arm = arm - foot.r_offset * foot_axis(phi).reshape(-1, 2)  # p_sensor − p_r, in F_c
    return np.column_stack([force, w_s[:, 2] + cross2(arm, force)])


def extract(run: Run, foot: Foot, cutoff: float = DEFAULT_CUTOFF_HZ):
    """(wrench in F_r (3,), quality dict) at the instant the run passes θ_des."""
    if _is_3d(run):
        return _3d().extract(run, foot, cutoff)
    _check(run, cutoff)
    smooth = lowpass(run, cutoff)
    residual = float(np.sqrt(np.mean((run.wrench - smooth) ** 2)))
    t_star, lag = _pass_time(run)
    w_s = np.array([np.interp(t_star, run.t, smooth[:, k]) for k in range(3)])
    phi = float(np.interp(t_star, run.t, run.pose[:, 2]))
    wrench = to_reference(w_s, phi, run.sensor_offset, run.sensor_angle, foot)[0]
    t0 = run.t[0]
    quality = {"pose_error_s": lag, "filter_residual": residual, "t_pass": float(t_star - t0),
               "t_pass_expected": PASS_FRACTION * run.t_total,
               "flagged": bool(abs(t_star - t0 - PASS_FRACTION * run.t_total) > 0.1 * run.t_total)}
    return wrench, quality


def _read_and_extract(path, mapping, foot, cutoff):
    run = read_run(path, mapping)
    return (run, *extract(run, foot, cutoff))


def assemble(paths, out_medium=None, mapping: Mapping = Mapping.load(), cutoff=DEFAULT_CUTOFF_HZ, m=26,
             velocity_scale=None, foot: Foot = Foot(), source: str = "ft-rig", progress=False):
    """A WrenchDataset from runs: good runs fill the grid θ_des × directions, bad ones are reported.
    ``m``: the directions the runs sample (:func:`~granular.data.sampling.direction_set`: m of the
    sphere grid, or the directions (m, 3) themselves, say an existing dataset's, so that a new
    bed's runs average into it)."""
    if _is_3d(mapping):
        return _3d().assemble(paths, out_medium, mapping, cutoff, m, velocity_scale, foot, source, progress)
    directions = direction_set(m)
    m = len(directions)
    paths = list({Path(p).resolve(): p for p in paths}.values())  # a run named twice counts once
    samples, skipped = extract_all(paths, lambda path: _read_and_extract(path, mapping, foot, cutoff), progress)
    if not samples:
        raise GranularError(f"no good runs among the {len(paths)} given")
    scale = _velocity_scale(samples, velocity_scale)
    configs = np.unique(np.round([r.theta_des for r, _, _ in samples], 9), axis=0)
    if not np.any(np.all(configs == 0, axis=1)):  # the paper's zero wrench at zero depth
        configs = np.vstack([[[0.0, 0.0]], configs])
    surface = np.all(configs == 0, axis=1)
    trials = {}
    for run, w, quality in samples:
        j = int(np.argmin(np.abs(configs - run.theta_des).sum(axis=1)))
        u = run.v_des / scale
        u = u / np.linalg.norm(u)
        i = int(np.argmin(np.linalg.norm(directions - u, axis=1)))
        if np.linalg.norm(directions[i] - u) > 1e-3:
            skipped.append(f"{run.path}: v_des {run.v_des.tolist()} is not one of the {m} grid directions")
            log.warning("skipped %s", skipped[-1])
            continue
        trials.setdefault((j, i), []).append((w, quality))
    wrenches = np.full((len(configs), m, 3), np.nan)
    valid = np.zeros((len(configs), m), bool)
    pose_error, residual, count = (np.full((len(configs), m), np.nan) for _ in range(3))
    spread = np.full((len(configs), m, 3), np.nan)
    wrenches[surface], valid[surface] = 0.0, True
    # a run's θ_des is p_center's (the rig's and the DEM's); a dataset's d is the lowest point's (frames)
    configs[:, 0] = np.where(surface, 0.0, lowest_height(configs[:, 0], configs[:, 1], foot.radius))
    for (j, i), group in trials.items():
        ws = np.array([w for w, _ in group])
        wrenches[j, i], valid[j, i], count[j, i] = ws.mean(axis=0), True, len(group)
        spread[j, i] = ws.std(axis=0, ddof=1) if len(group) > 1 else 0.0
        pose_error[j, i] = np.mean([q["pose_error_s"] for _, q in group])
        residual[j, i] = np.mean([q["filter_residual"] for _, q in group])
    repeated = int((count > 1).sum())
    if repeated:
        log.info("%d (θ_des, direction) cells had repeated trials: averaged, their standard deviation kept as "
                 "provenance 'trial_spread'", repeated)
    log.info("ingested %d run(s), skipped %d; %d of %d samples below the surface valid", len(paths) - len(skipped),
             len(skipped), int(valid[~surface].sum()), valid[~surface].size)
    return WrenchDataset(configs=configs, directions=directions, velocity_scale=scale, wrenches=wrenches,
                         valid=valid, medium=out_medium or samples[0][0].medium, source=source, foot=foot,
                         provenance={"cutoff_hz": cutoff, "pose_error_s": pose_error, "filter_residual": residual,
                                     "trials": np.nan_to_num(count), "trial_spread": spread,
                                     "skipped": json.dumps(skipped)})
