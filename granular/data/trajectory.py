"""Recorded foot trajectories along any path: the runs ``granular validate`` scores a model on.

A trajectory is a raw run in any format :mod:`granular.data.ingest` reads — CSV with a JSON sidecar,
HDF5 (metadata as attributes) or a ROS 2 bag (a folder, sidecar ``<bag>.json`` beside it) — read
through the same mapping files (lab column names, units, the sensor's sign, ROS topics): per
sample the pose (x, z, φ) of p_center relative to the undisturbed surface and the wrench measured
by a sensor mounted on the foot (``fx, fz, tau``). Unlike an ingest run it need not move at a
constant twist: the twist (v_x, v_z, ω) of p_center in F_c comes from columns ``vx, vz, omega``
where the file has all three (in the mapping's pose units per its time unit; bags have none), or
else from the pose's central difference after the same low-pass filter as the wrench. Its
metadata (:class:`ValidationSidecar`) names the ``path``, the ``medium``, the bed ``seed`` (runs
of one path on several beds are realisations) and the sensor mount (default: at p_center,
aligned, as the DEM records it).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from granular.data.ingest import RATES, Mapping, lowpass_samples, read_columns, to_reference
from granular.errors import GranularError
from granular.foot import Foot
from granular.frames import lowest_height
from granular.io.schema import Finite, NonNegative, Schema, parse

COMPONENTS = ("fx", "fz", "tau")
DEPTH = 0.005      # m: samples whose lowest point is shallower than this are not scored
MAX_JUMP = 0.02    # m (and rad): a larger pose change between samples is a broken record
MIN_SAMPLES = 10   # fewer cannot be filtered (filtfilt's padding) nor differentiated


class ValidationSidecar(Schema):
    path: str
    medium: str = "unknown"
    seed: int = 0
    bed: dict = {}
    sensor_offset: tuple[Finite, Finite] = (0.0, 0.0)
    sensor_angle: Finite = 0.0
    seconds: NonNegative | None = None


@dataclass(frozen=True)
class Trajectory:
    """A validation run in SI units: pose (k, 3) of p_center, twist (k, 3), wrench (k, 3) in F_r,
    for a foot of plate radius ``radius`` (m)."""

    name: str
    path: str
    seed: int
    t: np.ndarray
    pose: np.ndarray
    twist: np.ndarray
    wrench: np.ndarray
    radius: float = Foot().radius

    @property
    def theta(self) -> np.ndarray:
        """θ (k, 2) per sample: d at the foot's lowest point (:mod:`granular.frames`), φ."""
        return np.column_stack([lowest_height(self.pose[:, 1], self.pose[:, 2], self.radius), self.pose[:, 2]])


def read(path, foot: Foot = Foot(), cutoff: float = 50.0, mapping: Mapping | str | Path | None = None) -> Trajectory:
    """A validation run (CSV + sidecar, HDF5 or ROS 2 bag), checked, filtered, its wrench moved to F_r.

    ``mapping``: a :class:`Mapping`, or the path of a mapping TOML (data/README.md); None reads the
    canonical column names in SI units."""
    path = Path(path)
    if not isinstance(mapping, Mapping):
        mapping = Mapping.load(mapping)
    cols, raw = read_columns(path, mapping, optional=tuple(RATES))
    meta = parse(raw, ValidationSidecar, f"{path} (metadata)")
    t = cols["t"]
    if len(t) < MIN_SAMPLES:
        raise GranularError(f"{path}: {len(t)} samples; a trajectory needs at least {MIN_SAMPLES}")
    if not all(np.isfinite(v).all() for v in cols.values()):
        raise GranularError(f"{path}: NaN or inf in the samples")
    if np.any(np.diff(t) <= 0):
        raise GranularError(f"{path}: time is not strictly increasing (at sample {int(np.argmax(np.diff(t) <= 0)) + 1})")
    pose = np.column_stack([cols["x"], cols["z"], cols["phi"]])
    jump = np.abs(np.diff(pose, axis=0)).max(axis=1)
    if jump.max() > MAX_JUMP:
        raise GranularError(f"{path}: the pose jumps by {jump.max():.3g} between samples {int(np.argmax(jump))} and "
                            f"{int(np.argmax(jump)) + 1}")
    if not (lowest_height(pose[:, 1], pose[:, 2], foot.radius) < -DEPTH).any():
        raise GranularError(f"{path}: no sample whose lowest point is deeper than {DEPTH} m in the medium")
    if cutoff >= 0.5 / np.median(np.diff(t)):
        raise GranularError(f"{path}: --cutoff {cutoff} Hz is above the Nyquist frequency {0.5 / np.median(np.diff(t)):.3g} Hz")
    measured = mapping.sign * lowpass_samples(t, np.column_stack([cols[c] for c in COMPONENTS]), cutoff)
    if all(c in cols for c in RATES):
        twist = np.column_stack([cols[c] for c in RATES])
    else:  # the pose's derivative, through the same filter as the wrench
        twist = np.gradient(lowpass_samples(t, pose, cutoff), t, axis=0)
    wrench = to_reference(measured, pose[:, 2], np.array(meta.sensor_offset), meta.sensor_angle, foot)
    return Trajectory(path.name if path.is_dir() else path.stem, meta.path, meta.seed, t, pose, twist, wrench,
                      foot.radius)
