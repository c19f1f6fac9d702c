"""Training jobs: fit a wrench-space model, cross-validate, and measure its representations.

A job is a TOML file (see training/*.toml); paths in it are relative to the
file. Cross-validation follows the paper (§III-B3): K folds over the
configurations below the surface (zero-depth configurations are not
experiments and always stay in training), the relative RMS error of the
held-out extreme wrenches per regressor.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Literal, NamedTuple

import numpy as np
from msgspec import Meta
from tqdm import tqdm

from granular.data import dataset as wd
from granular.data.sampling import random_configs
from granular.learning import model as wm
from granular.frames import foot_axis, twist_at
from granular.wrench import polytopes as wrenchspace
from granular.wrench.flow import non_associativity
from granular.errors import GranularError
from granular.io.schema import Finite, Schema, load
from granular.learning import regressors
from granular.learning.regressors import REGRESSORS
from granular.learning.linear import KERNELS

#: The RBF kernels a job may name (``kernel``; :data:`~granular.learning.linear.KERNELS`).
RBFKernel = Literal[tuple(KERNELS)]
#: ``smoothing = "noise"``: the RBF's smoothing chosen from the data's own noise (:func:`noise_smoothing`).
NOISE = "noise"

log = logging.getLogger(__name__)


def cross_validate(ds: wd.WrenchDataset, names=tuple(REGRESSORS), folds: int = 5, seed: int = 0,
                   progress: bool = False, target: str = "wrench", kernel: str | None = None,
                   smoothing: float | str = 0.0, cells: int | None = 10, repeats: int = 1) -> dict:
    """K-fold CV over configurations: {regressor: {rel_rmse, rel_rmse_fx, rel_rmse_fz, rel_rmse_tau, cells}}
    (``cells``: where the error lies, :func:`_cells`, the ``cells`` largest shares; None: every configuration).
    ``repeats`` > 1 draws the folds that many times (fold seeds ``seed``, ``seed`` + 1, ...), every
    configuration held out once per draw, and pools the errors; ``rel_rmse_repeats`` lists each
    draw's figure (one for one draw). With a few dozen configurations one draw of the folds is off its mean by several
    per cent (docs/beads-studies.md, "how much the folds matter").
    ``kernel``, ``smoothing``: the RBF's (its defaults where None, 0); smoothing :data:`NOISE` is
    chosen again in every fold from the fold's own training data (its noise floor; the whole data's
    where the fold holds no sample measured in two beds), so that the held-out cells play no part.

    Errors are ‖predicted − measured‖ / ‖measured‖ over every held-out valid
    sample, per axis and overall; overall, force and torque are first divided
    by the model's per-axis scale so that N and N·m weigh alike.
    """
    below = np.flatnonzero(ds.configs[:, 0] < 0)
    if folds < 2 or folds > len(below):
        raise GranularError(f"--cv {folds}: need 2 ≤ K ≤ {len(below)} (configurations below the surface)")
    if repeats < 1:
        raise GranularError(f"--cv-repeats {repeats}: the folds must be drawn at least once")
    splits = [np.array_split(np.random.default_rng(seed + r).permutation(below), folds) for r in range(repeats)]
    scale = wm.wrench_scale(ds)
    floor = _floor(ds) if smoothing == NOISE and "rbf" in names else None  # a fold without spread takes the data's
    results = {}
    bar = tqdm(total=len(names) * folds * repeats, desc="cross-validation", disable=None if progress else True)
    ref = np.zeros((ds.n, 3))  # each held-out configuration's measured wrenches, the same in every draw
    ref[below] = np.where(ds.valid[below, :, None], (ds.wrenches[below] / scale) ** 2, 0.0).sum(axis=1)
    for name in names:
        err = np.zeros((repeats, ds.n, 3))
        for r, draw in enumerate(splits):
            for test in draw:
                train = ds.subset(np.setdiff1d(np.arange(ds.n), test))
                lam = noise_smoothing(train, target, kernel, floor) if smoothing == NOISE and name == "rbf" \
                    else smoothing
                fold = wm.fit(train, name, target, **_params(name, kernel, lam))
                fold._warned = True  # held-out configurations past a fold's data are expected: no warning
                for j, w in zip(test, fold.points(ds.configs[test])):
                    err[r, j] = _squares(w[None], ds.wrenches[j][None], ds.valid[j][None], scale)[0]
                bar.update()
        pooled = err.sum(axis=0)
        per_axis = np.sqrt(pooled.sum(axis=0) / np.maximum(repeats * ref.sum(axis=0), 1e-300))
        results[name] = {"rel_rmse": float(np.sqrt(pooled.sum() / (repeats * ref.sum()))),
                         **{f"rel_rmse_{a}": float(v) for a, v in zip(("fx", "fz", "tau"), per_axis)},
                         "cells": _cells(ds, below, pooled.sum(axis=1), repeats * ref.sum(axis=1))[:cells],
                         "rel_rmse_repeats": np.sqrt(err.sum(axis=(1, 2)) / ref.sum()).tolist()}
    bar.close()
    return results


def _cells(ds: wd.WrenchDataset, below, err, ref) -> list:
    """Where the cross-validation error lies, the largest shares first: per configuration, its share of
    the summed squared error, its own relative RMS error, and how many realisations its samples average
    (``realisations``, the median over its directions: beds, or runs repeated in one bed; 1 where the
    data do not say)."""
    n = ds.provenance.get("realisations")
    cells, total = [], max(err.sum(), 1e-300)
    for j in below:
        reps = float(np.median(n[j][ds.valid[j]])) if n is not None and ds.valid[j].any() else 1.0
        cells.append({"theta": ds.configs[j].tolist(), "share": float(err[j] / total),
                      "rel_rmse": float(np.sqrt(err[j] / max(ref[j], 1e-300))), "realisations": reps})
    return sorted(cells, key=lambda c: -c["share"])


def cv_noise_floor(ds: wd.WrenchDataset) -> dict | None:
    """The cross-validation error an exact regressor would still show, from the data's bed-to-bed
    noise alone: a held-out sample is one measurement of its mean, off by its realisation noise
    (:func:`_sample_noise`). Summed like :func:`cross_validate`'s error (per-axis scale). A lower
    bound: the held-out cell's neighbours carry noise too. None where the data carry no spread (a
    synthetic source, or one bed)."""
    noise = _sample_noise(ds)
    if noise is None:
        return None
    ok = noise.ok
    return {"floor": float(np.sqrt(noise.variance[ok].sum() / noise.w2[ok].sum())),
            "single_bed_spread": float(np.sqrt(noise.rho2)), "samples_with_spread": int(noise.measured.sum()),
            "samples": int(ok.sum())}


class _Noise(NamedTuple):
    """The realisation noise of each sample, in the per-axis scale of :func:`cross_validate`."""

    single: np.ndarray  # one bed's variance
    beds: np.ndarray  # how many beds the sample averages (1 where one bed, or runs repeated in one)
    rho2: float  # one bed's variance relative to |w|², pooled over the samples with a measured spread
    ok: np.ndarray  # below the surface and valid
    measured: np.ndarray  # with a spread measured between beds
    w2: np.ndarray  # |w|²

    @property
    def variance(self) -> np.ndarray:
        """The variance of the sample as measured: one bed's over the beds it averages."""
        return self.single / self.beds


def _sample_noise(ds: wd.WrenchDataset) -> _Noise | None:
    """Per sample below the surface, its realisation noise: one bed's variance is spread² where a
    spread was measured between its n beds (``realisation_spread``, the single beds' standard
    deviation; the sample then averages n), and ρ² |w|² where it comes from one bed (or from runs
    repeated in one bed, which agree exactly: spread 0), ρ being the single-bed spread relative to
    the wrench, pooled over the samples that have one. None where no sample has a spread."""
    n, spread = ds.provenance.get("realisations"), ds.provenance.get("realisation_spread")
    if n is None or spread is None:
        return None
    scale = wm.wrench_scale(ds)
    ok = ds.valid & (ds.configs[:, 0] < 0)[:, None]
    w2 = ((np.where(ok[..., None], ds.wrenches, 0.0) / scale) ** 2).sum(axis=-1)
    s2 = ((np.where(ok[..., None], spread, 0.0) / scale) ** 2).sum(axis=-1)
    measured = ok & (s2 > 0)
    if not measured.any():
        return None
    rho2 = s2[measured].sum() / w2[measured].sum()
    single = np.where(measured, s2, np.where(ok, rho2 * w2, 0.0))
    return _Noise(single, np.where(measured, np.maximum(n, 1), 1), float(rho2), ok, measured, w2)


#: The extra beds per cell at which :func:`cv_noise_budget` reports.
EXTRA_BEDS = (0, 1, 3)


def cv_noise_budget(ds: wd.WrenchDataset, truth: wm.WrenchSpaceModel, folds: int, target: str = "wrench",
                    kernel: str | None = None, smoothing: float | str = 0.0, extra_beds=EXTRA_BEDS,
                    draws: int = 10, seed: int = 0) -> dict | None:
    """How much of the RBF's cross-validation error the data's noise alone would cause, and how much
    more beds would remove: the same cross-validation on a medium that is smooth by construction
    (``truth``'s W at every configuration of ``ds``, e.g. the model fitted to ``ds``), measured with
    the data's bed-to-bed noise as if every sample came from ``e`` more beds (:func:`_synthetic`), for
    each ``e`` in ``extra_beds``. Noise draw i is cross-validated on fold draw i (``cross_validate``'s
    seed ``seed`` + i), so that ``draws`` = R compares with the data's CV repeated R times.
    Returns {"rel_rmse": {e: the RMS over ``draws`` noise draws, as CV pools its draws},
    "draw_std": {e: their standard deviation, None for one draw},
    "cells": [{"theta", "rel_rmse"}: each configuration's
    own error at the first e]}, or None where the data carry no spread. A measured error above these
    figures is structure between the cells that the grid does not resolve, not noise."""
    noise = _sample_noise(ds)
    if noise is None:
        return None
    smooth = np.where(noise.ok[..., None], truth.points(ds.configs), ds.wrenches)
    rng = np.random.default_rng(seed)
    shocks = [rng.standard_normal(smooth.shape) for _ in range(draws)]  # the same for every e: no Monte Carlo gap
    scores, own = {}, np.zeros(ds.n)
    for e in extra_beds:
        cvs = [cross_validate(_synthetic(ds, smooth, noise, e, z), ("rbf",), folds, seed + i, target=target,
                              kernel=kernel, smoothing=smoothing, cells=None)["rbf"] for i, z in enumerate(shocks)]
        scores[str(e)] = [cv["rel_rmse"] for cv in cvs]
        if e == extra_beds[0]:
            order = {tuple(theta): j for j, theta in enumerate(ds.configs.tolist())}
            for c in (c for cv in cvs for c in cv["cells"]):
                own[order[tuple(c["theta"])]] += c["rel_rmse"] ** 2 / draws
    below = np.flatnonzero(ds.configs[:, 0] < 0)
    return {"rel_rmse": {e: float(np.sqrt(np.mean(np.square(v)))) for e, v in scores.items()},  # pooled as CV's
            "draw_std": {e: float(np.std(v)) if draws > 1 else None for e, v in scores.items()},
            "cells": [{"theta": ds.configs[j].tolist(), "rel_rmse": float(np.sqrt(own[j]))} for j in below]}


def _synthetic(ds: wd.WrenchDataset, smooth: np.ndarray, noise: _Noise, extra: int, shock: np.ndarray):
    """``ds`` with its samples below the surface replaced by ``smooth`` plus noise of one bed's size
    (isotropic in the per-axis scale; ``shock``: standard normal draws) averaged over ``extra`` more
    beds than each sample has, and a provenance that says so: every such sample carries its one-bed
    spread, so its noise floor is exactly that noise."""
    one_bed = np.sqrt(noise.single / 3)[..., None] * wm.wrench_scale(ds)  # per axis
    beds = noise.beds + extra
    w = np.where(noise.ok[..., None], smooth + shock * one_bed / np.sqrt(beds)[..., None], ds.wrenches)
    return replace(ds, wrenches=w, provenance={**ds.provenance, "realisations": beds,
                                               "realisation_spread": np.where(noise.ok[..., None], one_bed, 0.0)})


def _squares(pred, wrenches, valid, scale):
    """Per axis, the summed squares of the scaled error and of the scaled measurement over the valid samples."""
    return ((((pred - wrenches) / scale) ** 2)[valid].sum(axis=0), ((wrenches / scale) ** 2)[valid].sum(axis=0))


def fit_residual(ds: wd.WrenchDataset, target: str = "wrench", kernel: str | None = None,
                 smoothing: float = 0.0) -> float:
    """How far the RBF model fitted to ``ds`` misses its own samples below the surface: the relative
    RMS error of :func:`cross_validate`, on the training data themselves. Against the samples as
    measured, not their mirror average, like the noise floor: at φ = 0 a sample's left-right
    asymmetry is bed noise too (on the Beads, 0.009 of the residual at λ = 0)."""
    model = wm.fit(ds, "rbf", target, **_params("rbf", kernel, smoothing))
    below = ds.configs[:, 0] < 0
    err, ref = _squares(model.points(ds.configs[below]), ds.wrenches[below], ds.valid[below], wm.wrench_scale(ds))
    return float(np.sqrt(err.sum() / ref.sum()))


def _floor(ds: wd.WrenchDataset, fallback: float | None = None) -> float:
    """The noise floor of :func:`cv_noise_floor`, else ``fallback``, else an error saying why smoothing
    by it is impossible."""
    floor = cv_noise_floor(ds)
    if floor is not None:
        return floor["floor"]
    if fallback is None:
        raise GranularError(f"smoothing {NOISE!r} needs the data's bed-to-bed noise, and {ds.medium!r} has none: "
                            "no configuration measured in two beds or more with a spread "
                            "(granular merge --average joins beds of one grid)")
    return fallback


#: Where :func:`noise_smoothing` looks for λ.
SMOOTHING_RANGE = (1e-6, 1e6)


def noise_smoothing(ds: wd.WrenchDataset, target: str = "wrench", kernel: str | None = None,
                    fallback: float | None = None) -> float:
    """The RBF's smoothing by Morozov's discrepancy principle: λ at which the fitted model misses its
    own samples (:func:`fit_residual`) by the data's bed-to-bed noise (:func:`cv_noise_floor`), no more.

    An interpolant (λ = 0) passes through every sample, noise and all, and carries each bed's noise
    into its neighbours; a model that misses its samples by more than their noise discards what the
    data resolve. The residual is taken to grow with λ (it does for the shipped data; were it not
    monotone, the λ returned still meets the bound, though it may not be the largest that does):
    bisection in log λ over :data:`SMOOTHING_RANGE`, to 1 %. ``fallback``: the floor to use where
    ``ds`` has none (a cross-validation fold that holds no sample measured in two beds)."""
    bound = _floor(ds, fallback)
    miss = lambda lam: fit_residual(ds, target, kernel, lam)  # noqa: E731
    lo, hi = SMOOTHING_RANGE
    if miss(lo) > bound:
        log.warning("smoothing %r: the interpolant already misses the %r samples by more than their noise "
                    "(%.4f): smoothing 0", NOISE, ds.medium, bound)
        return 0.0
    if miss(hi) <= bound:
        log.warning("smoothing %r: even λ = %g misses the %r samples by less than their noise (%.4f): taking it",
                    NOISE, hi, ds.medium, bound)
        return hi
    while hi / lo > 1.01:
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if miss(mid) <= bound else (lo, mid)
    return float(lo)


def _params(regressor: str, kernel: str | None, smoothing: float | str | None) -> dict:
    """A regressor's constructor arguments for a job: kernel and smoothing (a number here) go to the
    RBF only, and only where the job names them (else the RBF's defaults)."""
    params = {}
    if regressor == "rbf" and kernel:
        params["kernel"] = kernel
    if regressor == "rbf" and smoothing:
        params["smoothing"] = float(smoothing)
    return params


#: Zhu et al. 2019, Table II: (average, worst) concavity of the measured wrench spaces.
PAPER_CONCAVITY = {"beads": (0.0174, 0.1207), "pebbles": (0.0013, 0.0155), "sand": (0.0, 0.0)}


def flow_mismatch_table(ds: wd.WrenchDataset) -> dict:
    """How far the data are from associated flow (issue 15): per valid sample below the surface, the
    distance of the recorded wrench from the maximum-dissipation point of its own hull for its own
    twist (scaled wrench space, relative to the configuration's largest wrench); average and worst.
    The contact law ``max-dissipation`` replaces each recorded wrench by that point."""
    below = ds.configs[:, 0] < 0
    phi = ds.configs[below, 1]
    twists = np.broadcast_to(ds.directions * ds.velocity_scale, (len(phi),) + ds.directions.shape)
    arm = ds.foot.r_offset * foot_axis(phi)[:, None, :]  # p_r − p_center
    twist_r = twist_at(twists, arm)
    w = np.where(ds.valid[below][..., None], ds.wrenches[below], 0.0)
    f, t = np.abs(w[..., :2]).max(), np.abs(w[..., 2]).max()
    scale = np.array([f or 1.0, f or 1.0, t or f or 1.0])
    d = non_associativity(w, twist_r, ds.valid[below], scale)
    return {"average": float(d.mean()) if d.size else 0.0, "worst": float(d.max()) if d.size else 0.0}


def concavity_table(ds: wd.WrenchDataset) -> dict:
    """Concavity (paper §IV-B, Table II) per configuration below the surface: average and worst."""
    values = [wrenchspace.concavity(ds.wrenches[j][ds.valid[j]])
              for j in range(ds.n) if ds.configs[j, 0] < 0 and ds.valid[j].sum() >= 4]
    table = {"average": float(np.mean(values)) if values else 0.0,
             "worst": float(np.max(values)) if values else 0.0,
             "per_config": values}
    if ds.medium in PAPER_CONCAVITY:
        table["paper"] = dict(zip(("average", "worst"), PAPER_CONCAVITY[ds.medium]))
    return table


def fixed_normal_errors(model: wm.WrenchSpaceModel, Ks=(16, 32, 64), samples: int = 40, seed: int = 0) -> dict:
    """Outer-approximation error of the fixed-normal representation against the exact hull.

    For each K and kind ('fitted', 'sphere'): largest and mean relative
    distance over ``samples`` random configurations in the data's range
    (mostly between the training configurations, where the normals were not fitted).
    """
    pts = model.points(random_configs(model.d_min, model.phi_max, samples, seed))
    out = {}
    for K in Ks:
        for kind in ("fitted", "sphere"):
            A = model.fixed_normals(K, kind)
            errs = [wrenchspace.outer_error(p, model.scale, A) for p in pts]
            out.setdefault(str(K), {})[kind] = {"max_rel_distance": float(np.max(errs)),
                                                "mean_rel_distance": float(np.mean(errs))}
    return out


@dataclass
class Job:
    """A training job: which data, which regressor, where the model and figures go."""

    dataset: Path
    out: Path
    regressor: str = "rbf"
    cv: int = 0
    cv_repeats: int = 10  # the RBF's CV, folds drawn this many times (cross_validate's repeats)
    figures: Path | None = None
    fixed_normals: list = field(default_factory=lambda: [16, 32, 64])
    plot_thetas: list = field(default_factory=list)
    target: str = "wrench"
    kernel: str | None = None
    smoothing: float | Literal["noise"] = 0.0  # a number, or NOISE


class JobFile(Schema):
    """A training job file (training/*.toml); paths are relative to the file."""

    dataset: str
    out: str
    regressor: Literal["rbf", "gp", "svr"] = "rbf"
    cv: Annotated[int, Meta(ge=0, le=1000)] = 0
    cv_repeats: Annotated[int, Meta(ge=1, le=1000)] = 10
    figures: str | None = None
    fixed_normals: tuple[Annotated[int, Meta(ge=8, le=256)], ...] = (16, 32, 64)
    plot_thetas: tuple[tuple[Finite, Finite], ...] = ()
    target: Literal["wrench", "per-depth"] = "wrench"  # wm.TARGETS
    kernel: RBFKernel | None = None  # the RBF's; None: its default
    # the RBF's: 0 interpolates the data; "noise" takes it from the data's own noise (noise_smoothing)
    smoothing: Annotated[float, Meta(ge=0, le=1e6)] | Literal["noise"] = 0.0


def load_job(path) -> Job:
    path = Path(path)
    spec = load(path, JobFile, "training job", choices={"smoothing": ("a number from 0 to 1e6", repr(NOISE))})
    where = lambda p: None if p is None else (path.parent / p).resolve()  # noqa: E731
    return Job(dataset=where(spec.dataset), out=where(spec.out), regressor=spec.regressor, cv=spec.cv,
               cv_repeats=spec.cv_repeats,
               figures=where(spec.figures), fixed_normals=list(spec.fixed_normals),
               plot_thetas=[list(x) for x in spec.plot_thetas], target=spec.target, kernel=spec.kernel,
               smoothing=spec.smoothing)


def run_job(job: Job, progress: bool = False):
    """Run a training job: cross-validate (if ``job.cv``: every regressor on one draw of the folds, the
    RBF on ``job.cv_repeats`` draws; the noise floor and budget where the data have a spread), fit,
    measure concavity and the fixed-normal error, save the model.
    Returns (result dict for --json, the model, the full concavity table)."""
    ds = wd.read(job.dataset, kind=None)
    if ds.dim == 6:
        from granular.learning import training3d

        result, model = training3d.run_job(job, ds)
        return result, model, None
    log.info("training %s (target %s) on %s (%s, %s: %d × %d)", job.regressor, job.target, job.dataset, ds.medium,
             ds.source, ds.n, ds.m)
    result = {"model": str(job.out), "dataset": str(job.dataset), "regressor": job.regressor, "medium": ds.medium,
              "target": job.target}
    from_noise = job.smoothing == NOISE
    if from_noise and job.regressor != "rbf" and not job.cv:
        raise GranularError(f"smoothing {NOISE!r} is the RBF's, and this job neither fits an RBF nor "
                            f"cross-validates one (regressor {job.regressor!r}, cv 0)")
    smoothing = job.smoothing
    if from_noise:  # an RBF model's own λ; a GP or SVR job's RBF folds choose theirs
        smoothing = noise_smoothing(ds, job.target, job.kernel) if job.regressor == "rbf" else None
    rbf = regressors.make("rbf", **_params("rbf", job.kernel, smoothing))
    result["rbf"] = {"kernel": rbf.kernel, "smoothing": None if smoothing is None else rbf.smoothing,
                     "smoothing_from_noise": from_noise}
    if job.cv:
        result["cv"] = cross_validate(ds, tuple(REGRESSORS), job.cv, progress=progress, target=job.target,
                                      kernel=job.kernel, smoothing=job.smoothing)
        # the RBF's figure, off no single draw of the folds (one draw: the comparison's own)
        result["cv_repeated"] = result["cv"]["rbf"] if job.cv_repeats == 1 else cross_validate(
            ds, ("rbf",), job.cv, progress=progress, target=job.target, kernel=job.kernel,
            smoothing=job.smoothing, repeats=job.cv_repeats)["rbf"]
        if (floor := cv_noise_floor(ds)) is not None:
            result["cv_noise_floor"] = floor
    model = wm.fit(ds, job.regressor, job.target, **_params(job.regressor, job.kernel, smoothing))
    if "cv_noise_floor" in result:
        truth = model if job.regressor == "rbf" else wm.fit(ds, "rbf", job.target, **_params(
            "rbf", job.kernel, noise_smoothing(ds, job.target, job.kernel) if smoothing is None else smoothing))
        result["cv_noise_budget"] = budget = cv_noise_budget(ds, truth, job.cv, job.target, job.kernel,
                                                             job.smoothing, draws=job.cv_repeats)
        smooth = {tuple(c["theta"]): c["rel_rmse"] for c in budget["cells"]}
        for c in result["cv_repeated"]["cells"]:
            c["smooth_rel_rmse"] = smooth[tuple(c["theta"])]
    concavity = concavity_table(ds)
    result["concavity"] = {k: v for k, v in concavity.items() if k != "per_config"}
    result["non_associativity"] = flow_mismatch_table(ds)
    result["fixed_normals"] = fixed_normal_errors(model, tuple(job.fixed_normals))
    model.info = {k: result[k] for k in ("rbf", "cv", "cv_repeated", "cv_noise_floor", "cv_noise_budget",
                                         "concavity", "non_associativity", "fixed_normals") if k in result}
    wm.save(model, job.out)
    return result, model, concavity
