"""6-axis acquisition runs → 3D wrench datasets: the planar extraction (:mod:`granular.data.ingest`) in ℝ⁶.

A 3D run drags the foot at a twist v_des = (v_x, v_y, v_z, ω_x, ω_y, ω_z) of p_center in the tilt frame
F_c3 (:mod:`granular.frames3d`), passing θ_des = (d, φ) at 0.8·t_total, while a 6-axis sensor on the foot
records (f_x, f_y, f_z, τ_x, τ_y, τ_z) in its frame, about its origin. Extraction is the planar one (the
filter; the pass found on d, moving at v_z, and φ, at −ω_y), then the wrench is moved into F_c3 about p_r
through the sensor's 3D mount. ``granular ingest`` comes here when its mapping is 3D (data/README.md).

The foot frame (the mount's reference): origin p_center (or p_r), z along the axis p_center → p_r, y along
F_c3's y, x = (cos φ, 0, sin φ) in F_c3. At the pass the tilt's azimuth and the foot's spin about its axis
are zero by definition of F_c3 and of the foot frame, so the foot's orientation there is the tilt φ alone.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Literal

import numpy as np

from granular.data.dataset import KINDS, WrenchDataset
from granular.data import runs
from granular.data.runs import (DEFAULT_CUTOFF_HZ, PASS_FRACTION, BadRun, Sign, _check, _pass_time, _velocity_scale,
                                extract_all, lowpass_samples)
from granular.data.sampling import SIZES_3D, sphere_directions_3d
from granular.errors import GranularError
from granular.foot import Foot
from granular.frames3d import cross
from granular.io.schema import Finite, Positive, Schema, parse

log = logging.getLogger(__name__)

WRENCH = ("fx", "fy", "fz", "tx", "ty", "tz")
TWIST = ("vx", "vy", "vz", "wx", "wy", "wz")
#: Channels a 3D run must hold (x and y of p_center are not needed: the pass is found on d and φ).
CHANNELS = ("t", "z", "phi", *WRENCH)
KIND = dict(zip((*CHANNELS, *TWIST), ("time", "length", "angle", *["force"] * 3, *["torque"] * 3, *["velocity"] * 3,
                                     *["angular velocity"] * 3)))
#: Units a 3D mapping may name: (kind, factor to SI).
UNITS = {"s": ("time", 1.0), "ms": ("time", 1e-3), "m": ("length", 1.0), "mm": ("length", 1e-3),
         "cm": ("length", 1e-2), "rad": ("angle", 1.0), "deg": ("angle", np.pi / 180), "N": ("force", 1.0),
         "kN": ("force", 1e3), "kgf": ("force", 9.80665), "N*m": ("torque", 1.0), "N*mm": ("torque", 1e-3),
         "kN*m": ("torque", 1e3), "m/s": ("velocity", 1.0), "mm/s": ("velocity", 1e-3), "cm/s": ("velocity", 1e-2),
         "rad/s": ("angular velocity", 1.0), "deg/s": ("angular velocity", np.pi / 180)}
SI = {"time": "s", "length": "m", "angle": "rad", "force": "N", "torque": "N*m", "velocity": "m/s",
      "angular velocity": "rad/s"}
#: Mapping keys that only a 3D mapping has: naming any of them makes the mapping 3D.
ONLY_3D = set(WRENCH[1:2] + WRENCH[3:] + TWIST)
#: How far a run's unit direction may be from its grid direction: a commanded v_des is exact, a
#: measured twist is noisy (the 3D sets' nearest neighbours are 35° or more apart, so 0.05 ≈ 3° is safe).
DIRECTION_TOL = {False: 1e-3, True: 0.05}
#: The part of a record averaged for a measured twist: clear of the start-up and the stop (fractions).
STEADY = (0.2, 0.9)

Channel3D = Literal["t", "z", "phi", "fx", "fy", "fz", "tx", "ty", "tz", "vx", "vy", "vz", "wx", "wy", "wz"]
Unit3D = Literal["s", "ms", "m", "mm", "cm", "rad", "deg", "N", "kN", "kgf", "N*m", "N*mm", "kN*m", "m/s", "mm/s",
                 "cm/s", "rad/s", "deg/s"]
Vec3 = tuple[Finite, Finite, Finite]
Vec6 = tuple[Finite, Finite, Finite, Finite, Finite, Finite]


class WrongSpace(GranularError):
    """Runs of one wrench space read with the other's mapping: the batch's setup is wrong, not one run."""


class SensorFile(Schema):
    """``[sensor]`` of a 3D mapping: the 6-axis sensor's mount in the foot frame (module docstring)."""

    position: Vec3                                 # sensor origin from ``origin``, foot frame (m)
    origin: Literal["p_center", "p_r"] = "p_center"
    rpy: Vec3 | None = None                        # roll, pitch, yaw (rad): R = Rz(yaw) Ry(pitch) Rx(roll)
    matrix: tuple[Vec3, Vec3, Vec3] | None = None  # or R itself: its columns are the sensor's axes


class MappingFile3D(Schema):
    """A 3D column mapping (data/README.md, "6-axis (3D) acquisition runs")."""

    wrench_space: Literal["3d"] = "3d"
    columns: dict[Channel3D, str] = {}
    units: dict[Channel3D, Unit3D] = {}
    sign: Sign = 1.0
    topics: dict[Literal["wrench", "pose"], str] = {}
    sensor: SensorFile | None = None
    directions: int | str | list[Vec6] | None = None  # m of sphere_directions_3d, a 3D dataset, or the set


CHOICES = {"columns": Channel3D.__args__, "units": Channel3D.__args__, "units[...]": tuple(UNITS),
           "topics": ("wrench", "pose"), "sensor.origin": ("p_center", "p_r")}


class Sidecar3D(Schema):
    """A 3D run's metadata (``<run>.json``; for HDF5 runs the file's attributes)."""

    theta_des: tuple[Finite, Finite]               # (d, φ): m, rad
    t_total: Positive                              # s
    v_des: Vec6 | None = None                      # commanded twist of p_center in F_c3; else the twist channels
    medium: str = "unknown"
    wrench_space: Literal["3d"] = "3d"
    sensor_offset: Vec3 | None = None              # this run's mount, over the mapping's [sensor]
    sensor_origin: Literal["p_center", "p_r"] = "p_center"
    sensor_rpy: Vec3 | None = None
    sensor_matrix: tuple[Vec3, Vec3, Vec3] | None = None
    velocity_scale: tuple[Positive, Positive, Positive, Positive, Positive, Positive] | None = None
    sign: Sign = 1.0


@dataclass(frozen=True)
class Mount:
    """A sensor's pose on the foot: origin ``position`` (m) from ``origin`` and axes ``rotation`` (3, 3)
    (columns: the sensor's x, y, z in the foot frame), both in the foot frame."""

    position: np.ndarray
    rotation: np.ndarray
    origin: str = "p_center"


def rpy_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """Rz(yaw) Ry(pitch) Rx(roll): fixed-axis roll–pitch–yaw, as URDF and ROS give a mount."""
    (cr, sr), (cp, sp), (cy, sy) = ((np.cos(a), np.sin(a)) for a in (roll, pitch, yaw))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


def _mount(position, origin, rpy, matrix, where, error=GranularError) -> Mount:
    """A Mount from a mapping's [sensor] or a sidecar's sensor_* keys; one of rpy and matrix."""
    if (rpy is None) == (matrix is None):
        raise error(f"{where}: give the sensor's orientation as rpy [roll, pitch, yaw] (rad) or as a 3×3 "
                    "matrix, one of them")
    R = rpy_matrix(*rpy) if matrix is None else np.array(matrix, float)
    if not (np.allclose(R.T @ R, np.eye(3), atol=1e-6) and np.linalg.det(R) > 0):
        raise error(f"{where}: the sensor matrix is not a rotation (orthonormal, determinant +1): {R.tolist()}")
    return Mount(np.array(position, float), R, origin)


def declares_3d(doc: dict, path) -> bool:
    """Whether a mapping document is 3D: ``wrench_space = "3d"``, or it names 6-axis channels."""
    space = doc.get("wrench_space")
    if space not in (None, *KINDS):
        raise GranularError(f"{path}: wrench_space is {space!r}; choose {' or '.join(KINDS)}")
    tables = [doc.get(k) for k in ("columns", "units")]
    named = sorted(set().union(*(t for t in tables if isinstance(t, dict))) & ONLY_3D)
    hints = named + [k for k in ("sensor", "directions") if k in doc]
    if space == "planar" and hints:
        raise GranularError(f"{path}: wrench_space = \"planar\", but the mapping has 6-axis keys ({', '.join(hints)})")
    return space == "3d" or bool(hints)


@dataclass(frozen=True)
class Mapping3D:
    """A 3D mapping: lab column names and units → the 3D channels, the sensor mount, the direction set."""

    columns: dict
    units: dict
    sign: float = 1.0
    topics: dict = field(default_factory=dict)  # ROS 2 bags: {"wrench": topic, "pose": topic}
    mount: Mount | None = None          # the rig's sensor mount (a sidecar's own overrides it)
    directions: np.ndarray | None = None
    assume_sensor_at_p_center: bool = False
    path: str = "the 3D mapping"
    space = "3d"                        # ingest.py dispatches on it

    @classmethod
    def load(cls, path=None, doc: dict | None = None, assume_sensor_at_p_center: bool = False) -> "Mapping3D":
        spec = parse(doc or {}, MappingFile3D, path, CHOICES)
        if abs(spec.sign) != 1.0:
            raise GranularError(f"{path}: sign must be 1 or -1, got {spec.sign:g}")
        for channel, unit in spec.units.items():
            if UNITS[unit][0] != KIND[channel]:
                raise GranularError(f"{path}: units.{channel} = {unit!r} is a unit of {UNITS[unit][0]}, but "
                                    f"{channel} is a {KIND[channel]}; choose one of "
                                    f"{', '.join(u for u, (k, _) in UNITS.items() if k == KIND[channel])}")
        for group, names in (("wrench", WRENCH), ("twist", TWIST)):
            named = [c for c in names if c in spec.columns]
            if 0 < len(named) < 6:  # a 6-axis sensor's channels come as a set: a gap is a typo, not a default
                missing = [c for c in names if c not in named]
                raise GranularError(f"{path}: [columns] names {', '.join(named)} but not {', '.join(missing)}; a "
                                    f"6-axis mapping names all six {group} channels ({', '.join(names)}) or none")
        s = spec.sensor
        mount = None if s is None else _mount(s.position, s.origin, s.rpy, s.matrix, f"{path}: [sensor]")
        directions = None if spec.directions is None else _mapped_directions(spec.directions, path)
        return cls({c: spec.columns.get(c, c) for c in (*CHANNELS, *TWIST)}, dict(spec.units), spec.sign,
                   dict(spec.topics), mount, directions, assume_sensor_at_p_center,
                   str(path) if path else "the 3D mapping")

    def factor(self, channel) -> float:
        return UNITS[self.units.get(channel, SI[KIND[channel]])][1]


def _mapped_directions(value, path) -> np.ndarray:
    """The mapping's ``directions``: m of sphere_directions_3d, a 3D dataset's (a path from the mapping's
    folder), or the set itself."""
    if isinstance(value, str):
        from granular.data import dataset as wd

        return wd.read(Path(path).parent / value, kind="3d").directions
    return direction_set_3d(value, f"{path}: directions")


def direction_set_3d(m, where="directions") -> np.ndarray:
    """The (m, 6) direction set of a 3D acquisition: m of :func:`sphere_directions_3d`, or the set,
    which must hold distinct unit vectors of ℝ⁶ (one clear error otherwise)."""
    if np.ndim(m) == 0 and int(m) not in SIZES_3D:
        raise GranularError(f"{where}: {m} directions; a 3D acquisition samples one of "
                            f"{', '.join(map(str, SIZES_3D))} (sphere_directions_3d), or a set given in the mapping")
    if np.ndim(m) == 0:
        return sphere_directions_3d(int(m))
    U = np.asarray(m, dtype=float)
    if U.ndim != 2 or U.shape[1] != 6 or len(U) == 0:
        raise GranularError(f"{where}: 3D directions are (m, 6) twists (v_x, v_y, v_z, ω_x, ω_y, ω_z), got shape "
                            f"{U.shape}")
    norms = np.linalg.norm(U, axis=1)
    bad = np.flatnonzero(~np.isfinite(norms) | (np.abs(norms - 1) > 1e-6))
    if len(bad):
        raise GranularError(f"{where}: direction {bad[0]} has norm {norms[bad[0]]:.6g}; 3D directions must be unit "
                            "vectors on the sphere of ℝ⁶")
    if len(np.unique(np.round(U, 9), axis=0)) != len(U):
        raise GranularError(f"{where}: the same direction is listed twice")
    return U


def run_space(meta: dict) -> str | None:
    """The wrench space a run's metadata describes ('planar', '3d'), or None if it does not say."""
    def size(key):
        return len(meta[key]) if isinstance(meta.get(key), (list, tuple)) else None
    if meta.get("wrench_space") in KINDS:
        return meta["wrench_space"]
    if any(k in meta for k in ("sensor_rpy", "sensor_matrix", "sensor_origin")) or size("v_des") == 6 \
            or size("sensor_offset") == 3:
        return "3d"
    if "sensor_angle" in meta or size("v_des") == 3 or size("sensor_offset") == 2:
        return "planar"
    return None


def refuse_space(path, meta: dict, mapping_space: str, mapping_path=None):
    """A run of the other wrench space than the mapping's: one clear error for the whole batch."""
    found = run_space(meta)
    if found is None or found == mapping_space:
        return
    if found == "3d":
        raise WrongSpace(f"{path}: a 3D (6-axis) run, read with a planar mapping; give its 3D mapping "
                         "(--mapping with wrench_space = \"3d\", data/README.md), nothing was written")
    raise WrongSpace(f"{path}: a planar run (fx, fz, tau), read with the 3D mapping {mapping_path}; ingest planar "
                     "runs without it, nothing was written")


@dataclass(frozen=True)
class Run3D:
    """One 6-axis acquisition run in SI units."""

    path: Path
    t: np.ndarray
    pose: np.ndarray            # (k, 2): height z of p_center above the surface (m), tilt φ (rad); θ_des's d
                                #   is the lowest point's (frames3d)
    wrench: np.ndarray          # (k, 6): sensor frame, torque about the sensor origin; signs applied
    theta_des: np.ndarray       # (d, φ)
    v_des: np.ndarray           # (6,) twist of p_center in F_c3: commanded, or the record's steady mean
    t_total: float
    medium: str
    mount: Mount
    velocity_scale: np.ndarray | None = None
    measured: bool = False      # v_des from the twist channels (matched to the grid more loosely)
    space = "3d"                # ingest.py dispatches on it


def read_columns(path, mapping: Mapping3D, optional=()) -> tuple[dict, dict]:
    """A 3D run's channels in SI (1-D, one length; the twist channels where the record has them) and its
    metadata, from CSV (+ sidecar), HDF5 or a ROS 2 bag; a planar run is refused (:func:`refuse_space`)."""
    path = Path(path)
    cols, meta = runs.raw_columns(path, mapping, (*CHANNELS, *TWIST), _read_bag)
    if "path" in meta:  # a validation trajectory (granular validate): planar only
        raise WrongSpace(f"{path}: a validation run; those are planar, read it without the 3D mapping")
    refuse_space(path, meta, "3d", mapping.path)
    missing = [mapping.columns[c] for c in CHANNELS if c not in cols]
    if missing:
        raise BadRun(f"{path}: missing column(s) {', '.join(missing)}")
    si = {c: np.asarray(v, float) * mapping.factor(c) for c, v in cols.items()}
    odd = [mapping.columns[c] for c, v in si.items() if v.shape != si["t"].shape]
    if si["t"].ndim != 1 or odd:
        raise BadRun(f"{path}: the columns should be 1-D and of one length: {mapping.columns['t']} has shape "
                     f"{si['t'].shape}" + "".join(f", {n} has another" for n in odd))
    return si, meta


def _metadata(meta: dict, path, mapping: Mapping3D) -> dict:
    where = f"{path} (metadata)"
    try:
        side = parse(meta, Sidecar3D, where)
    except GranularError as exc:
        raise BadRun(str(exc)) from None
    if abs(side.sign) != 1.0:
        raise BadRun(f"{where}: sign must be 1 or -1, got {side.sign:g}")
    if side.sensor_offset is not None or side.sensor_rpy is not None or side.sensor_matrix is not None:
        if side.sensor_offset is None:
            raise BadRun(f"{where}: sensor_rpy/sensor_matrix without sensor_offset [m, m, m]")
        mount = _mount(side.sensor_offset, side.sensor_origin, side.sensor_rpy, side.sensor_matrix, where, BadRun)
    elif mapping.mount is not None:
        mount = mapping.mount
    elif mapping.assume_sensor_at_p_center:
        mount = Mount(np.zeros(3), np.eye(3))
    else:
        raise BadRun(f"{where}: no sensor mount: give [sensor] in the mapping (or sensor_offset and sensor_rpy in "
                     "the metadata), or pass --assume-sensor-at-p-center if the sensor sits at p_center, aligned")
    return dict(theta_des=np.array(side.theta_des), v_des=None if side.v_des is None else np.array(side.v_des),
                t_total=side.t_total, medium=side.medium, mount=mount, sign=side.sign,
                velocity_scale=None if side.velocity_scale is None else np.array(side.velocity_scale))


def _steady_twist(path, si: dict) -> np.ndarray:
    """The run's twist from its twist channels: their mean over the steady part (:data:`STEADY`)."""
    absent = [c for c in TWIST if c not in si]
    if absent:
        raise BadRun(f"{path}: no v_des in the metadata, and the record lacks the twist column(s) "
                     f"{', '.join(absent)}; give one or the other")
    t = si["t"] - si["t"][0] if len(si["t"]) else si["t"]
    keep = (t >= STEADY[0] * t[-1]) & (t <= STEADY[1] * t[-1]) if len(t) else np.zeros(0, bool)
    v = np.array([si[c][keep].mean() if keep.any() else np.nan for c in TWIST])
    if not np.all(np.isfinite(v)):
        raise BadRun(f"{path}: the twist channels hold NaN or inf, or no samples, in the steady part of the run")
    return v


def read_run(path, mapping: Mapping3D) -> Run3D:
    """A 6-axis run (see :func:`read_columns`) in SI, its wrench signed by the mapping and the sidecar."""
    si, meta = read_columns(path, mapping)
    meta = _metadata(meta, path, mapping)
    measured = meta["v_des"] is None
    if measured:
        meta["v_des"] = _steady_twist(path, si)
    if not np.any(meta["v_des"]):
        raise BadRun(f"{path}: v_des is zero: the run does not move the foot")
    sign = mapping.sign * meta.pop("sign")
    return Run3D(Path(path), si["t"], np.column_stack([si["z"], si["phi"]]),
                 sign * np.column_stack([si[c] for c in WRENCH]), measured=measured, **meta)


def _tilt_rotation(phi) -> np.ndarray:
    """(k, 3, 3): the foot frame's axes (columns) in F_c3 at tilts ``phi`` (k,): Ry(−φ)."""
    c, s, zero, one = np.cos(phi), np.sin(phi), np.zeros_like(phi), np.ones_like(phi)
    return np.stack([np.stack([c, zero, -s], -1), np.stack([zero, one, zero], -1), np.stack([s, zero, c], -1)], -2)


def to_reference(w_s, phi, mount: Mount, foot: Foot) -> np.ndarray:
    """Sensor wrenches (k, 6) (sensor frame, torque about the sensor origin) at tilts ``phi`` (k,) →
    wrenches in F_c3 about p_r: force and torque rotated into F_c3, then the torque gains
    (p_sensor − p_r) × f for the change of reference point."""
    w_s, phi = np.atleast_2d(np.asarray(w_s, float)), np.atleast_1d(np.asarray(phi, float))
    tilt = _tilt_rotation(phi)
    R = tilt @ mount.rotation
    force, torque = (np.einsum("kij,kj->ki", R, w_s[:, s]) for s in (slice(0, 3), slice(3, 6)))
    axis = tilt[:, :, 2]  # p_center → p_r
    origin = -foot.r_offset * axis if mount.origin == "p_center" else 0.0 * axis  # the mount origin − p_r
    arm = np.einsum("kij,j->ki", tilt, mount.position) + origin
    return np.column_stack([force, torque + cross(arm, force)])


def extract(run: Run3D, foot: Foot = Foot(), cutoff: float = DEFAULT_CUTOFF_HZ):
    """(wrench (6,) in F_c3 about p_r, quality dict) at the instant the run passes θ_des."""
    _check(run, cutoff)
    smooth = lowpass_samples(run.t, run.wrench, cutoff)
    residual = float(np.sqrt(np.mean((run.wrench - smooth) ** 2)))
    # the planar pass finder reads (x, z, φ) poses and (v_x, v_z, ω) rates; x is never used, φ̇ = −ω_y;
    # a 3D θ's d is the foot's lowest point's (frames3d), R sin|φ| below the recorded p_center
    lowest = run.pose[:, 0] - foot.radius * np.abs(np.sin(run.pose[:, 1]))
    planar = SimpleNamespace(path=run.path, t=run.t, theta_des=run.theta_des, t_total=run.t_total,
                             pose=np.column_stack([np.zeros(len(run.t)), lowest, run.pose[:, 1]]),
                             v_des=np.array([run.v_des[0], run.v_des[2], -run.v_des[4]]))
    t_star, lag = _pass_time(planar)
    w_s = np.array([np.interp(t_star, run.t, smooth[:, k]) for k in range(6)])
    wrench = to_reference(w_s, np.interp(t_star, run.t, run.pose[:, 1]), run.mount, foot)[0]
    t0 = run.t[0]
    quality = {"pose_error_s": lag, "filter_residual": residual, "t_pass": float(t_star - t0),
               "t_pass_expected": PASS_FRACTION * run.t_total,
               "flagged": bool(abs(t_star - t0 - PASS_FRACTION * run.t_total) > 0.1 * run.t_total)}
    return wrench, quality


def _read_bag(path: Path, mapping: Mapping3D) -> dict:
    """A 3D run as a ROS 2 bag: WrenchStamped (all six components, sensor frame) and PoseStamped (p_center
    in F_c3; its tilt φ is the lean of the foot's z axis in the x–z plane, about −y), on the wrench's stamps."""
    try:
        from rosbags.highlevel import AnyReader
    except ImportError:
        raise GranularError("reading ROS 2 bags needs rosbags: pip install 'granular[ros]'") from None
    try:
        with AnyReader([path]) as reader:
            streams = {kind: _messages(reader, path, kind, msgtype, mapping.topics.get(kind))
                       for kind, msgtype in (("wrench", runs.WRENCH_MSG), ("pose", runs.POSE_MSG))}
    except Exception as exc:  # rosbags raises its own types for unreadable bags
        raise exc if isinstance(exc, BadRun) else BadRun(f"{path}: not a readable ROS 2 bag ({exc})") from None
    stamp = lambda m: m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec  # noqa: E731
    tw, tp = (np.array([stamp(m) for m in streams[k]]) for k in ("wrench", "pose"))
    q = np.array([[m.pose.orientation.w, m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z]
                  for m in streams["pose"]])
    # the foot's z axis in F_c3 is R(q) ẑ; φ = atan2(−a_x, a_z) (frames3d: the axis leans along −x)
    phi = np.unwrap(np.arctan2(-2 * (q[:, 1] * q[:, 3] + q[:, 0] * q[:, 2]), 1 - 2 * (q[:, 1] ** 2 + q[:, 2] ** 2)))
    keep = (tw >= tp.min()) & (tw <= tp.max())
    t, w = tw[keep], [m.wrench for m, k in zip(streams["wrench"], keep) if k]
    cols = {"t": t - (t[0] if len(t) else 0.0), "z": np.interp(t, tp, [m.pose.position.z for m in streams["pose"]]),
            "phi": np.interp(t, tp, phi)}
    for name, part, axis in zip(WRENCH, ["force"] * 3 + ["torque"] * 3, "xyzxyz"):
        cols[name] = np.array([getattr(getattr(m, part), axis) for m in w])
    return cols


def _messages(reader, path, kind, msgtype, want):
    """The messages of the first topic of ``msgtype`` (or the one named ``want``)."""
    conns = [c for c in reader.connections if c.msgtype == msgtype and want in (None, c.topic)]
    if not conns:
        raise BadRun(f"{path}: no {msgtype} topic" + (f" named {want!r}" if want else ""))
    out = [reader.deserialize(raw, c.msgtype) for c, _, raw in reader.messages([conns[0]])]
    if not out:
        raise BadRun(f"{path}: no messages on {conns[0].topic}")
    return out


def _directions(m, mapping: Mapping3D) -> np.ndarray:
    """The direction set: ``m`` if it is a 3D one (a size of SIZES_3D or an (m, 6) set), else the
    mapping's, else 72. ``granular ingest``'s default --directions (26, a planar grid)
    means "not given"."""
    if m is None or (np.ndim(m) == 0 and int(m) == 26):
        return sphere_directions_3d() if mapping.directions is None else mapping.directions  # 72
    return direction_set_3d(m, "--directions")


def _extract_all(paths, mapping, foot, cutoff, progress):
    """(run, wrench, quality) of each good run, and the reasons the others were skipped."""
    def one(path):
        run = read_run(path, mapping)
        return (run, *extract(run, foot, cutoff))
    return extract_all(paths, one, progress, desc="ingest 3d")


def _place(samples, configs, directions, scale, skipped) -> dict:
    """The runs' samples by (configuration, direction) cell; runs off the direction set are skipped."""
    trials = {}
    for run, w, quality in samples:
        j = int(np.argmin(np.abs(configs - run.theta_des).sum(axis=1)))
        u = run.v_des / scale
        u = u / np.linalg.norm(u)
        i = int(np.argmin(np.linalg.norm(directions - u, axis=1)))
        if np.linalg.norm(directions[i] - u) > DIRECTION_TOL[run.measured]:
            skipped.append(f"{run.path}: v_des {np.round(run.v_des, 6).tolist()} is not one of the {len(directions)} "
                           "3D directions" + (" (measured from the twist channels)" if run.measured else ""))
            log.warning("skipped %s", skipped[-1])
            continue
        trials.setdefault((j, i), []).append((w, quality))
    return trials


def _fill(configs, trials, m):
    """Wrenches (n, m, 6), valid (n, m) and the per-sample provenance: repeated trials averaged."""
    n = len(configs)
    wrenches, spread = np.full((n, m, 6), np.nan), np.full((n, m, 6), np.nan)
    valid = np.zeros((n, m), bool)
    pose_error, residual, count = (np.full((n, m), np.nan) for _ in range(3))
    surface = np.all(configs == 0, axis=1)
    wrenches[surface], valid[surface] = 0.0, True  # the paper's zero wrench at zero depth
    for (j, i), group in trials.items():
        ws = np.array([w for w, _ in group])
        wrenches[j, i], valid[j, i], count[j, i] = ws.mean(axis=0), True, len(group)
        spread[j, i] = ws.std(axis=0, ddof=1) if len(group) > 1 else 0.0
        pose_error[j, i] = np.mean([q["pose_error_s"] for _, q in group])
        residual[j, i] = np.mean([q["filter_residual"] for _, q in group])
    return wrenches, valid, {"pose_error_s": pose_error, "filter_residual": residual,
                             "trials": np.nan_to_num(count), "trial_spread": spread}


def assemble(paths, out_medium=None, mapping: Mapping3D | None = None, cutoff=DEFAULT_CUTOFF_HZ, m=None,
             velocity_scale=None, foot: Foot = Foot(), source: str = "ft-rig", progress=False) -> WrenchDataset:
    """A 3D WrenchDataset from 6-axis runs, as :func:`granular.data.ingest.assemble` builds a planar one:
    good runs fill the grid θ_des × directions (:func:`_directions`), bad ones are reported and skipped."""
    mapping = mapping or Mapping3D.load()
    directions = _directions(m, mapping)
    paths = list({Path(p).resolve(): p for p in paths}.values())  # a run named twice counts once
    samples, skipped = _extract_all(paths, mapping, foot, cutoff, progress)
    if not samples:
        raise GranularError(f"no good runs among the {len(paths)} given")
    scale = _velocity_scale(samples, velocity_scale)
    configs = np.unique(np.round([r.theta_des for r, _, _ in samples], 9), axis=0)
    if not np.any(np.all(configs == 0, axis=1)):
        configs = np.vstack([[[0.0, 0.0]], configs])
    trials = _place(samples, configs, directions, scale, skipped)
    wrenches, valid, provenance = _fill(configs, trials, len(directions))
    below = configs[:, 0] < 0
    log.info("ingested %d run(s), skipped %d; %d of %d samples below the surface valid", len(paths) - len(skipped),
             len(skipped), int(valid[below].sum()), valid[below].size)
    return WrenchDataset(configs=configs, directions=directions, velocity_scale=scale, wrenches=wrenches,
                         valid=valid, medium=out_medium or samples[0][0].medium, source=source, foot=foot,
                         provenance={"cutoff_hz": cutoff, **provenance, "skipped": json.dumps(skipped)})
