"""Wrench datasets: samples of the limit surface ∂W(θ) (Zhu et al. 2019, §III-B1).

The on-disk format (HDF5, documented in data/README.md) holds one medium and
one foot. ``write`` is atomic; ``read`` validates everything and raises a
:class:`GranularError` naming the file and the problem.
"""
from __future__ import annotations

import datetime as _dt
import json
import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from granular import __version__
from granular.errors import GranularError
from granular.foot import Foot
from granular.frames import lowest_height
from granular.io.h5io import array, atomic_h5, attr, read_h5

FORMAT = "granular-wrench-dataset"
VERSION = 1
#: Where a dataset written now measures θ's d: at the foot's lowest point (:mod:`granular.frames`).
DEPTH_AT = "lowest"

log = logging.getLogger(__name__)

SOURCES = ("rft", "rft3d", "terramechanics", "coulomb", "wheel", "dem", "ft-rig")
#: The wrench spaces a dataset can sample, by the file's ``wrench_space`` attribute (absent: planar,
#: as every file before 3D was): planar (f_x, f_z, τ) or 3D (f_x, f_y, f_z, τ_x, τ_y, τ_z) in the
#: foot's tilt frame (:mod:`granular.frames3d`), and the dimension of each.
KINDS = {"planar": 3, "3d": 6}
UNITS = {
    "units_configs": "m, rad",
    "units_velocity_scale": "m/s, m/s, rad/s",
    "units_wrenches": "N, N, N*m",
}
UNITS_3D = {
    "units_configs": "m, rad",
    "units_velocity_scale": "m/s, m/s, m/s, rad/s, rad/s, rad/s",
    "units_wrenches": "N, N, N, N*m, N*m, N*m",
}


@dataclass(frozen=True)
class WrenchDataset:
    """n configurations × m velocity directions of measured resistance wrenches.

    configs (n, 2): [d, φ] (m, rad). directions (m, D): unit twists in F_c
    before scaling; velocity_scale (D,): per-axis scale (m/s, m/s, rad/s).
    wrenches (n, m, D): (f_x, f_z, τ) in F_r (N, N, N·m). valid (n, m): mask of
    usable samples (masked wrenches may hold NaN). D is 3 for a planar dataset and 6 for a 3D
    one (:data:`KINDS`; twists and wrenches in the tilt frame of :mod:`granular.frames3d`).
    """

    configs: np.ndarray
    directions: np.ndarray
    velocity_scale: np.ndarray
    wrenches: np.ndarray
    medium: str
    source: str
    foot: Foot = field(default_factory=Foot)
    valid: np.ndarray | None = None
    created: str = ""
    creator: str = f"granular {__version__}"
    provenance: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.valid is None:
            object.__setattr__(self, "valid", np.ones(self.wrenches.shape[:2], dtype=bool))
        if not self.created:
            object.__setattr__(self, "created", _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))

    @property
    def n(self) -> int:
        return len(self.configs)

    @property
    def m(self) -> int:
        return len(self.directions)

    @property
    def dim(self) -> int:
        """Components of a wrench: 3 (planar) or 6 (3D)."""
        return self.directions.shape[1]

    @property
    def kind(self) -> str:
        """'planar' or '3d' (:data:`KINDS`)."""
        return "3d" if self.dim == 6 else "planar"

    def subset(self, rows) -> "WrenchDataset":
        """The dataset restricted to the configurations ``rows`` (per-configuration provenance too)."""
        prov = {k: v[rows] if _per_config(self, k) else v for k, v in self.provenance.items()}
        return replace(self, configs=self.configs[rows], wrenches=self.wrenches[rows], valid=self.valid[rows],
                       provenance=prov)


def validate(ds: WrenchDataset, where="dataset") -> WrenchDataset:
    """Check shapes, values and metadata; raise GranularError naming ``where``."""
    n, m = len(ds.configs), len(ds.directions)

    def fail(msg):
        raise GranularError(f"{where}: {msg}")

    D = ds.directions.shape[1] if ds.directions.ndim == 2 else 0
    if ds.configs.shape != (n, 2) or n == 0:
        fail(f"configs must have shape (n, 2) with n ≥ 1, got {ds.configs.shape}")
    if D not in KINDS.values() or m == 0:
        fail(f"directions must have shape (m, 3) (planar) or (m, 6) (3D) with m ≥ 1, got {ds.directions.shape}")
    if ds.velocity_scale.shape != (D,):
        fail(f"velocity_scale must have shape ({D},), got {ds.velocity_scale.shape}")
    if ds.wrenches.shape != (n, m, D):
        fail(f"wrenches must have shape (n, m, {D}) = ({n}, {m}, {D}), got {ds.wrenches.shape}")
    if ds.valid.shape != (n, m):
        fail(f"valid must have shape (n, m) = ({n}, {m}), got {ds.valid.shape}")
    for name in ("configs", "directions", "velocity_scale"):
        bad = ~np.isfinite(getattr(ds, name))
        if bad.any():
            fail(f"{name} holds NaN or inf at index {tuple(np.argwhere(bad)[0])}")
    bad = ~np.isfinite(ds.wrenches).all(axis=-1) & ds.valid
    if bad.any():
        j, i = np.argwhere(bad)[0]
        fail(f"wrenches holds NaN or inf at config {j} (d={ds.configs[j, 0]}, φ={ds.configs[j, 1]}), "
             f"direction {i}, and it is not masked out by 'valid'")
    big = (np.abs(np.where(ds.valid[..., None], ds.wrenches, 0.0)) > MAX_WRENCH).any(axis=-1)
    if big.any():
        j, i = np.argwhere(big)[0]
        fail(f"wrenches at config {j}, direction {i} exceed {MAX_WRENCH:g} N (N·m): "
             f"{ds.wrenches[j, i].tolist()}; check the units")
    if np.any(ds.velocity_scale <= 0) or np.any(ds.velocity_scale > 1e6):
        fail(f"velocity_scale must be positive and finite, got {ds.velocity_scale.tolist()}")
    if np.any(np.abs(ds.configs[:, 0]) > 100.0):
        fail(f"depths must be within 100 m of the surface, got {ds.configs[:, 0].min()} m")
    if np.any(ds.velocity_scale <= 0):
        fail(f"velocity_scale must be positive, got {ds.velocity_scale.tolist()}")
    norms = np.linalg.norm(ds.directions, axis=1)
    if np.any(np.abs(norms - 1) > 1e-6):
        fail(f"directions must be unit vectors; direction {int(np.argmax(np.abs(norms - 1)))} has norm "
             f"{norms[np.argmax(np.abs(norms - 1))]:.6g}")
    if np.any(ds.configs[:, 0] > 0):
        fail(f"depth d must be ≤ 0 (below the surface); config {int(np.argmax(ds.configs[:, 0]))} has "
             f"d = {ds.configs[:, 0].max()} m")
    if np.any(np.abs(ds.configs[:, 1]) > np.pi / 2 + 1e-12):
        fail("tilt φ must lie in [−π/2, π/2] rad")
    if len(np.unique(np.round(ds.configs, 12), axis=0)) != n:
        fail("configs holds the same configuration twice")
    if ds.source not in SOURCES:
        fail(f"source is {ds.source!r}, expected one of {', '.join(SOURCES)}")
    if not ds.medium:
        fail("medium name is empty")
    return ds


#: No granular medium a foot can move through resists with more than this (N, or N·m): larger values
#: are unit errors, and they would overflow the hull and QP arithmetic downstream.
MAX_WRENCH = 1e8


def merge(datasets, names=None, average: bool = False, replace_configs=()) -> WrenchDataset:
    """One dataset from several of one medium and protocol: the same medium, source, foot and velocity
    scale; the surface rows (d = 0, which every acquisition adds) are kept once.

    The inputs may sample different directions (e.g. a later acquisition adds the equator ring the
    first lacked): the result holds every input's directions, the first's first, and a sample no
    input holds is marked invalid. A sample that more than one input holds is refused (a grid
    extended by a later acquisition holds each once), unless ``average``: then the inputs are
    realisations of one protocol (e.g. DEM beds of different seeds) and each (configuration,
    direction) is the mean of the inputs that hold it validly, with their count and standard
    deviation in the provenance (``realisations``, ``realisation_spread``, N and N·m; 0 where one
    input holds it). Per-sample provenance arrays that every input holds are joined (averaged where
    averaged); the inputs' other provenance is kept per input, as JSON, under ``merged_from``.

    ``replace_configs``: configurations (d, φ) re-acquired (e.g. in a better bed) that the later
    inputs hold: the first input's cell is dropped, so that they come from the later inputs only."""
    datasets = list(datasets)
    names = [str(n) for n in (names or [f"dataset {i + 1}" for i in range(len(datasets))])]
    if len(datasets) < 2:
        raise GranularError("merging needs two datasets or more")
    replaced = [list(map(float, c)) for c in replace_configs]
    if replaced:
        datasets[0] = _without(datasets[0], replaced, datasets[1:], names)
    first = datasets[0]
    for ds, name in zip(datasets[1:], names[1:]):
        for what, same in (("medium", ds.medium == first.medium), ("source", ds.source == first.source),
                           ("foot geometry", ds.foot == first.foot),
                           ("velocity_scale", np.allclose(ds.velocity_scale, first.velocity_scale))):
            if not same:
                raise GranularError(f"{name}: its {what} differs from {names[0]}'s; only datasets of one "
                                    "medium and protocol can be merged")
    directions = _union(ds.directions for ds in datasets)
    if any("realisations" in ds.provenance for ds in datasets):
        datasets = [_realisations(ds) for ds in datasets]
    datasets = [_on(ds, directions) for ds in datasets]
    datasets = [datasets[0]] + [ds.subset(ds.configs[:, 0] < 0) for ds in datasets[1:]]
    configs = np.concatenate([ds.configs for ds in datasets])
    _, first_seen, inverse, counts = np.unique(np.round(configs, 9), axis=0, return_index=True,
                                               return_inverse=True, return_counts=True)
    keys = ["wrenches", "valid"] + [k for k in first.provenance if all(_per_config(ds, k) for ds in datasets)]
    rows = {k: np.concatenate([getattr(ds, k) if k in ("wrenches", "valid") else ds.provenance[k]
                               for ds in datasets]) for k in keys}
    order = np.argsort(first_seen)  # the configurations in the order the inputs first hold them
    wrenches, valid, spread, count = _average(rows["wrenches"], rows["valid"], inverse.ravel(), order,
                                              rows.get("realisations"), rows.get("realisation_spread"))
    held = np.zeros(count.shape)  # inputs holding each sample (an input may hold several realisations)
    np.add.at(held, np.argsort(order)[inverse.ravel()], rows["valid"])
    if (held > 1).any() and not average:
        j, i = np.argwhere(held > 1)[0]
        d, phi = configs[first_seen[order[j]]]
        raise GranularError(f"configuration d = {d:g} m, φ = {phi:g} rad, direction {np.round(directions[i], 3).tolist()} "
                            "is in more than one input; merge takes each sample once (--average: realisations "
                            "of one protocol)")
    provenance = {k: _pool(rows[k], rows["valid"], inverse.ravel(), order) for k in keys[2:]}
    if average:
        provenance.update(realisations=count, realisation_spread=spread)
    if replaced:
        provenance["replaced_configs"] = json.dumps({"configs": replaced, "first_input": names[0]})
    provenance["merged_from"] = json.dumps(
        [{"input": name, "created": ds.created, "creator": ds.creator,
          **{k: _history(k, v) for k, v in ds.provenance.items() if k not in provenance}}
         for ds, name in zip(datasets, names)], default=str)
    return WrenchDataset(configs=configs[first_seen[order]], directions=directions,
                         velocity_scale=first.velocity_scale, wrenches=wrenches, valid=valid,
                         medium=first.medium, source=first.source, foot=first.foot, provenance=provenance)


def _history(key: str, value):
    """An input's provenance entry as the merged ``merged_from`` keeps it: arrays as lists, and an
    earlier merge's own JSON history decoded (kept as a string, each merge would escape it again and
    the history would grow without bound)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if key in ("merged_from", "replaced_configs") and isinstance(value, str):
        value = json.loads(value)
        if key == "merged_from":
            value = [{k: _history(k, v) for k, v in entry.items()} for entry in value]
    return value


def _without(base: WrenchDataset, configs, later, names) -> WrenchDataset:
    """``base`` without the configurations ``configs`` (below the surface), each of which both
    ``base`` and a ``later`` dataset hold, the later one with valid samples."""
    def rows(ds, d, phi):
        return (ds.configs[:, 0] < 0) & np.isclose(ds.configs, [d, phi], rtol=0, atol=1e-9).all(axis=1)

    drop = np.zeros(base.n, bool)
    for d, phi in configs:
        where = f"replace d = {d:g} m, φ = {phi:g} rad"
        if d >= 0:
            raise GranularError(f"{where}: d must be below the surface (< 0); the surface row is kept once anyway")
        if not rows(base, d, phi).any():
            raise GranularError(f"{where}: {names[0]} (the first input, whose cell it replaces) does not hold it")
        if not any(ds.valid[rows(ds, d, phi)].any() for ds in later):
            raise GranularError(f"{where}: no input after {names[0]} holds a valid sample there")
        drop |= rows(base, d, phi)
    return base.subset(~drop)


def _union(direction_sets, atol: float = 1e-6) -> np.ndarray:
    """Every direction of the sets once, in the order first met."""
    out = []
    for U in direction_sets:
        for u in U:
            if not any(np.allclose(u, v, atol=atol) for v in out):
                out.append(u)
    return np.array(out)


def _on(ds: WrenchDataset, directions, atol: float = 1e-6) -> WrenchDataset:
    """``ds`` over ``directions`` (a superset of its own): the samples it lacks invalid (NaN), its
    per-sample provenance arrays widened the same way."""
    if ds.directions.shape == directions.shape and np.allclose(ds.directions, directions, atol=atol):
        return ds
    cols = [int(np.argmin(np.linalg.norm(directions - u, axis=1))) for u in ds.directions]

    def widen(a, fill):
        out = np.full((a.shape[0], len(directions)) + a.shape[2:], fill, dtype=a.dtype if fill is False else float)
        out[:, cols] = a
        return out

    prov = {k: widen(v, np.nan) if _per_config(ds, k) and v.ndim >= 2 and v.shape[1] == ds.m else v
            for k, v in ds.provenance.items()}
    wrenches, valid = widen(ds.wrenches, np.nan), widen(ds.valid, False)
    surface = ds.configs[:, 0] >= 0  # the surface's wrench is zero in every direction
    wrenches[surface], valid[surface] = 0.0, True
    return replace(ds, directions=np.asarray(directions, dtype=float), wrenches=wrenches, valid=valid,
                   provenance=prov)


def _realisations(ds: WrenchDataset) -> WrenchDataset:
    """``ds`` with the count of realisations per sample and their spread: one, and 0, where an
    acquisition does not say (it is one realisation), so that a merge keeps the others' counts."""
    if "realisations" in ds.provenance:
        return ds
    return replace(ds, provenance={**ds.provenance, "realisations": ds.valid.astype(float),
                                   "realisation_spread": np.zeros(ds.wrenches.shape)})


def _per_config(ds: WrenchDataset, key: str) -> bool:
    """Whether the provenance entry ``key`` of ``ds`` is an array with a row per configuration."""
    v = ds.provenance.get(key)
    return isinstance(v, np.ndarray) and v.ndim > 0 and len(v) == ds.n


def _average(wrenches, valid, group, order, counts=None, spreads=None):
    """Per group of rows (``group``: each row's index, ``order``: the groups' output order): the mean
    wrench over the valid rows, any valid, the standard deviation and the count of realisations. A
    row that already averages several realisations (``counts`` per sample, 1 where None; their
    standard deviation ``spreads``) weighs as that many, and the deviation pools each row's own with
    the rows' scatter about the mean, so that merging averaged data with a new realisation equals
    averaging every realisation at once."""
    n, m, D = len(order), wrenches.shape[1], wrenches.shape[2]
    weights = np.where(valid, 1.0 if counts is None else np.nan_to_num(counts), 0.0)
    spreads = np.zeros(wrenches.shape) if spreads is None else np.nan_to_num(spreads)
    out, spread, count = np.full((n, m, D), np.nan), np.full((n, m, D), np.nan), np.zeros((n, m))
    for j, g in enumerate(order):
        rows = group == g
        w, k, sd = wrenches[rows], weights[rows], spreads[rows]
        count[j] = k.sum(axis=0)
        for i in np.flatnonzero(count[j]):
            ok = k[:, i] > 0
            wi, ki, si = w[ok, i], k[ok, i, None], sd[ok, i]
            mean = (ki * wi).sum(axis=0) / count[j, i]
            squares = ((ki - 1) * si ** 2 + ki * (wi - mean) ** 2).sum(axis=0)
            out[j, i] = mean
            spread[j, i] = np.sqrt(squares / (count[j, i] - 1)) if count[j, i] > 1 else 0.0
    return out, count > 0, spread, count


def _pool(values, valid, group, order):
    """A per-sample provenance array over the groups of :func:`_average`: the mean of the rows that
    hold the sample validly (the row itself where there is one)."""
    out = []
    for g in order:
        v, ok = values[group == g].astype(float), valid[group == g]
        if v.ndim > ok.ndim:
            ok = ok.reshape(ok.shape + (1,) * (v.ndim - ok.ndim))
        elif v.ndim < ok.ndim:  # per configuration rather than per sample
            ok = ok.any(axis=tuple(range(v.ndim, ok.ndim)))
        with np.errstate(invalid="ignore"):
            mean = np.where(ok, v, 0.0).sum(axis=0) / np.maximum(ok.sum(axis=0), 1)
        out.append(np.where(ok.any(axis=0), mean, v[0]))
    return np.array(out)


def write_group(g, ds: WrenchDataset):
    """Write ``ds`` into an open HDF5 group (a file's root, or a model's embedded copy)."""
    g.attrs.update({"format": FORMAT, "version": VERSION, "medium": ds.medium, "source": ds.source,
                    "created": ds.created, "creator": ds.creator, "wrench_space": ds.kind, "depth_at": DEPTH_AT,
                    **(UNITS_3D if ds.dim == 6 else UNITS), **ds.foot.attrs()})
    for name in ("configs", "directions", "velocity_scale", "wrenches"):
        g.create_dataset(name, data=np.asarray(getattr(ds, name), dtype=np.float64))
    g.create_dataset("valid", data=np.asarray(ds.valid, dtype=bool))
    prov = g.create_group("provenance")
    for key, value in ds.provenance.items():
        if isinstance(value, np.ndarray) and value.ndim > 0:
            prov.create_dataset(key, data=value)
        else:
            prov.attrs[key] = value


def file_kind(g, where) -> str:
    """The wrench space an open dataset group samples: 'planar' (also when the file predates 3D) or '3d'."""
    kind = str(attr(g, "wrench_space", where)) if "wrench_space" in g.attrs else "planar"
    if kind not in KINDS:
        raise GranularError(f"{where}: attribute wrench_space is {kind!r}; expected one of {', '.join(KINDS)}")
    return kind


def check_kind(found: str, expected, where):
    """A clear error when a dataset of one wrench space is given where the other is expected."""
    if expected is not None and found != expected:
        names = {"planar": "planar (f_x, f_z, τ)", "3d": "3D (6-axis)"}
        raise GranularError(f"{where}: a {names[found]} dataset, where a {names[expected]} one is expected")


def _read_group(g, where, kind="planar") -> WrenchDataset:
    found = file_kind(g, where)
    check_kind(found, kind, where)
    D = KINDS[found]
    for key, expected in (UNITS_3D if D == 6 else UNITS).items():
        found_units = attr(g, key, where)
        if found_units != expected:
            raise GranularError(f"{where}: attribute {key} is {found_units!r}; this format stores {expected!r}")
    configs = array(g, "configs", where, shape=(None, 2))
    directions = array(g, "directions", where, shape=(None, D))
    n, m = len(configs), len(directions)
    try:
        foot = Foot.from_attrs(g.attrs)
    except KeyError as exc:
        raise GranularError(f"{where}: missing foot geometry attribute {exc}") from None
    except GranularError as exc:
        raise GranularError(f"{where}: {exc}") from None
    configs = _depth_at_lowest(g, where, configs, foot, D)
    provenance = {}
    if "provenance" in g:
        prov = g["provenance"]
        provenance.update({k: attr(prov, k, where) for k in prov.attrs})
        provenance.update({k: prov[k][()] for k in prov})
    ds = WrenchDataset(
        configs=configs, directions=directions,
        velocity_scale=array(g, "velocity_scale", where, shape=(D,)),
        wrenches=array(g, "wrenches", where, shape=(n, m, D)),
        valid=array(g, "valid", where, shape=(n, m), dtype=bool, required=False),
        medium=str(attr(g, "medium", where)), source=str(attr(g, "source", where)), foot=foot,
        created=str(g.attrs.get("created", "")), creator=str(g.attrs.get("creator", "")),
        provenance=provenance)
    return validate(ds, where)


def depth_at(g, where, dim: int = 3) -> str:
    """Where an open dataset or model group measures θ's d: 'lowest' (the foot's lowest point,
    :mod:`granular.frames`), or 'center' (p_center: planar files written before issue 49)."""
    default = "lowest" if dim == 6 else "center"  # 3D θ was the lowest point's from the start
    found = str(attr(g, "depth_at", where)) if "depth_at" in g.attrs else default
    if found not in ("lowest", "center"):
        raise GranularError(f"{where}: attribute depth_at is {found!r}; expected 'lowest' or 'center'")
    return found


def _depth_at_lowest(g, where, configs, foot, dim):
    """``configs`` with d at the lowest point. An older planar file measured it at p_center: its rows
    below the surface move down by R |sin φ|, and its surface rows (zero wrench, added by every
    acquisition) stay at d = 0, where the new convention makes them right at every tilt."""
    if depth_at(g, where, dim) == "lowest":
        return configs
    log.info("%s: d measured at p_center (written before issue 49); read with d at the lowest point", where)
    out = configs.copy()
    below = configs[:, 0] < 0
    out[below, 0] = lowest_height(configs[below, 0], configs[below, 1], foot.radius)
    return out


def write(ds: WrenchDataset, path) -> Path:
    """Validate and write ``ds`` to ``path`` atomically."""
    validate(ds, path)
    with atomic_h5(path) as f:
        write_group(f, ds)
    return Path(path)


def read(path, kind: str | None = "planar") -> WrenchDataset:
    """Read and validate a dataset file of the wrench space ``kind`` ('planar', '3d', or None: either)."""
    with read_h5(path, FORMAT, {VERSION}) as f:
        return _read_group(f, path, kind)


def read_group(g, where, kind: str | None = "planar") -> WrenchDataset:
    if attr(g, "format", where) != FORMAT or attr(g, "version", where) != VERSION:
        raise GranularError(f"{where}: embedded dataset has an unknown format or version")
    return _read_group(g, where, kind)
