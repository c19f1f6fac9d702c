"""3D validation paths: a foot moving through the medium along a path, and the wrench it meets.

A 3D path is sampled as (t, θ = (d, φ), twist of p_center in F_c3, wrench about p_r in F_c3): the
foot's θ and twist in its own tilt frame (:mod:`granular.frames3d`), which is what a 3D model
takes, whatever the path's azimuth does in the world. The shipped set (``data/validation3d/``,
written by :func:`write_shipped`: ``python3 -m granular.data.paths3d``) is synthesized from 3D-RFT
(:mod:`granular.data.rft3d`), so scoring a 3D model learned from 3D-RFT data on it is a
self-consistency check of the learning and the data-flow law, not of the medium: a diagonal
descent with a sideways drag, a turning drag (the velocity's direction rotates in the tilt frame),
and a twist about the vertical while sinking.

The file (HDF5): attributes ``format`` = "granular-path3d", ``version``, ``path``, ``medium``,
``source``, ``wrench_space`` = "3d"; arrays ``t`` (T,) s, ``theta`` (T, 2) m, rad, ``twist`` (T, 6)
m/s, rad/s, ``wrench`` (T, 6) N, N·m.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from granular.errors import GranularError
from granular.io.h5io import array, atomic_h5, attr, read_h5

FORMAT, VERSION = "granular-path3d", 1
COMPONENTS = ("fx", "fy", "fz", "tx", "ty", "tz", "mean")
SAMPLES = 200


@dataclass(frozen=True)
class Path3D:
    name: str
    medium: str
    source: str
    t: np.ndarray
    theta: np.ndarray
    twist: np.ndarray
    wrench: np.ndarray


def shapes(samples: int = SAMPLES) -> dict:
    """The shipped paths' (t, θ, twist) by name, 2 s each, depths within the shipped media's data."""
    t = np.linspace(0.0, 2.0, samples)
    s = t / t[-1]
    out = {}
    # diagonal descent at a fixed tilt, dragged sideways: v = (0.02, 0.015·cos, −0.03) m/s
    d = -0.01 - 0.05 * s
    out["diagonal-sideways"] = (t, np.column_stack([d, np.full_like(s, 0.3)]),
                                np.column_stack([np.full_like(s, 0.02), 0.015 * np.cos(np.pi * s), np.full_like(s, -0.03),
                                                 np.zeros_like(s), np.zeros_like(s), np.zeros_like(s)]))
    # a turning drag at 5 cm: the horizontal velocity's direction turns by 270° in the foot's frame
    angle = 1.5 * np.pi * s
    tilt = 0.2 + 0.2 * np.sin(np.pi * s)
    out["turning-drag"] = (t, np.column_stack([np.full_like(s, -0.05), tilt]),
                           np.column_stack([0.02 * np.cos(angle), 0.02 * np.sin(angle), np.zeros_like(s),
                                            np.zeros_like(s), 0.2 * np.cos(np.pi * s), np.zeros_like(s)]))
    # sinking while twisting about the vertical, upright, then rocking
    out["vertical-twist"] = (t, np.column_stack([-0.02 - 0.06 * s, 0.1 * s]),
                             np.column_stack([np.zeros_like(s), np.zeros_like(s), np.full_like(s, -0.01),
                                              0.1 * np.sin(2 * np.pi * s), np.zeros_like(s), np.full_like(s, 0.4)]))
    return out


def synthesize(medium: str, samples: int = SAMPLES) -> list:
    """The shipped paths for an RFT medium, with 3D-RFT's wrench along each."""
    from granular.data import rft3d
    from granular.data.media import medium as preset
    from granular.foot import Foot

    m, foot = preset(medium), Foot()
    out = []
    for name, (t, theta, twist) in shapes(samples).items():
        wrench = np.array([rft3d.foot_wrench(foot, th, tw[None], m.zeta, m.coeffs)[0] for th, tw in zip(theta, twist)])
        out.append(Path3D(name, medium, "rft3d", t, theta, twist, wrench))
    return out


def write(path3d: Path3D, path) -> Path:
    with atomic_h5(path) as f:
        f.attrs.update({"format": FORMAT, "version": VERSION, "path": path3d.name, "medium": path3d.medium,
                        "source": path3d.source, "wrench_space": "3d"})
        for key in ("t", "theta", "twist", "wrench"):
            f.create_dataset(key, data=getattr(path3d, key))
    return Path(path)


def read(path) -> Path3D:
    with read_h5(path, FORMAT, {VERSION}) as f:
        t = array(f, "t", path, shape=(None,))
        T = len(t)
        p = Path3D(str(attr(f, "path", path)), str(attr(f, "medium", path)), str(attr(f, "source", path)), t,
                   array(f, "theta", path, shape=(T, 2)), array(f, "twist", path, shape=(T, 6)),
                   array(f, "wrench", path, shape=(T, 6)))
    for key in ("t", "theta", "twist", "wrench"):
        if not np.isfinite(getattr(p, key)).all():
            raise GranularError(f"{path}: {key} holds NaN or inf")
    return p


def is_path3d(path) -> bool:
    """Whether ``path`` is a 3D path file (an HDF5 file of this format)."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            return f.attrs.get("format") == FORMAT
    except OSError:
        return False


def score(model, paths) -> dict:
    """Per path and over all: the model's wrench under the data-flow law at each sample's (θ, twist)
    against the path's, per component NRMSE = RMS(pred − path) / the path's RMS force (torque)
    magnitude, and their mean, over the samples deeper than the planar validation's DEPTH. (The
    planar ``granular validate`` divides by each component's own RMS; in 3D, components that
    symmetry makes nearly zero would be divided by nearly nothing.)"""
    from granular.data.trajectory import DEPTH

    out, pred_all, ref_all = {}, [], []
    for p in paths:
        contact = p.theta[:, 0] < -DEPTH
        if not contact.any():
            raise GranularError(f"path {p.name!r}: no sample deeper than {DEPTH:g} m in the medium: nothing to score")
        pred, ref = model.flow(p.theta[contact], p.twist[contact]), p.wrench[contact]
        out[p.name] = dict(zip(COMPONENTS, _nrmse(pred, ref)))
        pred_all.append(pred), ref_all.append(ref)
    out["all"] = dict(zip(COMPONENTS, _nrmse(np.concatenate(pred_all), np.concatenate(ref_all))))
    return out


def _nrmse(pred, ref):
    # each component against the RMS magnitude of its group (force, torque): an upright foot
    # twisting about the vertical meets f_x ≈ 0, whose own RMS would divide by nearly nothing
    f, t = np.sqrt(np.mean(np.sum(ref[:, :3] ** 2, axis=1))), np.sqrt(np.mean(np.sum(ref[:, 3:] ** 2, axis=1)))
    rms = np.array([f] * 3 + [t] * 3)
    rmse = np.sqrt(np.mean((pred - ref) ** 2, axis=0))
    values = [float(e / r) if r > 0 else float("nan") for e, r in zip(rmse, rms)]
    return values + [float(np.nanmean(values))]


def write_shipped(folder, media=("sand", "pebbles")) -> list:
    """The shipped self-consistency set: ``folder/MEDIUM_PATH.h5`` for each medium and path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    return [write(p, folder / f"{medium}_{p.name}.h5") for medium in media for p in synthesize(medium)]


if __name__ == "__main__":
    from granular.io.resources import shipped

    for written in write_shipped(shipped("data") / "validation3d"):
        print(written)
