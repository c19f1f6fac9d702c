"""Training a 3D wrench-space model (:mod:`granular.learning.model3d`): the planar job's steps in ℝ⁶.

``granular train`` reads the dataset's kind and comes here for 3D data: cross-validation over the
configurations (if asked), the fit, the data's concavity (paper §IV-B, Table II, in ℝ⁶) and
non-associativity, the fixed-normal polytope's outer-approximation error, and the model file.
"""
from __future__ import annotations

import logging

import numpy as np

from granular.data import dataset as wd
from granular.data.sampling import random_configs
from granular.errors import GranularError
from granular.learning import model3d as wm3
from granular.wrench import polytopes

log = logging.getLogger(__name__)


def cross_validate(ds: wd.WrenchDataset, regressor: str, folds: int, target: str, seed: int = 0) -> dict:
    """K-fold over the configurations below the surface: each fold's model predicts the extreme
    wrenches of the configurations it did not see; the error relative to the data's scale."""
    below = np.flatnonzero(ds.configs[:, 0] < 0)
    if len(below) < folds:
        raise GranularError(f"--cv {folds}: the dataset has only {len(below)} configurations below the surface")
    order = np.random.default_rng(seed).permutation(below)
    scale = wm3.wrench_scale(ds)
    errors = []
    for part in np.array_split(order, folds):
        keep = np.setdiff1d(np.arange(ds.n), part)
        model = wm3.fit(ds.subset(keep), regressor, target)
        miss = (model.points(ds.configs[part]) - ds.wrenches[part]) / scale
        errors.append(np.sqrt(np.mean(miss ** 2, axis=(1, 2))))
    err = np.concatenate(errors)
    return {regressor: {"folds": folds, "rel_rmse": float(np.sqrt(np.mean(err ** 2))), "worst": float(err.max())}}


def concavity_table(ds: wd.WrenchDataset) -> dict:
    """Concavity per configuration below the surface (every sample, in ℝ⁶): average and worst."""
    values = [polytopes.concavity(ds.wrenches[j][ds.valid[j]])
              for j in range(ds.n) if ds.configs[j, 0] < 0 and ds.valid[j].sum() > 6]
    return {"average": float(np.mean(values)) if values else 0.0, "worst": float(np.max(values)) if values else 0.0}


def flow_mismatch_table(ds: wd.WrenchDataset) -> dict:
    """Non-associativity: per sample, the distance of the recorded wrench from the most dissipative
    recorded wrench for its own twist (the maximum-dissipation point of the hull of the samples is one
    of them), scaled, relative to the configuration's largest wrench. The twists, sampled at
    p_center, are taken to p_r, about which the wrenches are, so that w·v is the power."""
    from granular.frames3d import foot_axis, point_velocity

    scale = wm3.wrench_scale(ds)
    out = []
    for j in np.flatnonzero(ds.configs[:, 0] < 0):
        phi = ds.configs[j, 1]
        twist = (ds.directions * ds.velocity_scale)[ds.valid[j]]
        arm = ds.foot.r_offset * foot_axis(phi)
        at_r = np.concatenate([point_velocity(twist, arm), twist[:, 3:]], axis=1)
        W = ds.wrenches[j][ds.valid[j]] / scale
        V = at_r * scale  # power w·v in scaled units
        top = np.linalg.norm(W, axis=1).max()
        if top == 0:
            continue
        best = W[np.argmin(V @ W.T, axis=1)]  # for each twist, the sample of least power w·v
        out.append(np.linalg.norm(W - best, axis=1) / top)
    d = np.concatenate(out) if out else np.zeros(0)
    return {"average": float(d.mean()) if d.size else 0.0, "worst": float(d.max()) if d.size else 0.0}


def fixed_normal_errors(model: wm3.WrenchSpaceModel3D, Ks=(72, 232), samples: int = 8, seed: int = 0) -> dict:
    """The fixed-normal polytope's distance outside the exact hull, relative to the largest wrench,
    over random configurations in the data's range (vertex enumeration in ℝ⁶ is costly: few samples)."""

    pts = model.points(random_configs(model.d_min, model.phi_max, samples, seed))
    out = {}
    for K in Ks:
        A = model.fixed_normals(K)
        errs = [polytopes.outer_error(p, model.scale, A) for p in pts]
        out[str(K)] = {"sphere": {"max_rel_distance": float(np.max(errs)), "mean_rel_distance": float(np.mean(errs))}}
    return out


def run_job(job, ds: wd.WrenchDataset) -> tuple:
    """The training job (:class:`granular.learning.training.Job`) for 3D data: (result, model)."""
    if job.smoothing not in (0, 0.0) or job.kernel:
        raise GranularError("3D models take the RBF's defaults for now: drop --kernel and --smoothing")
    log.info("training a 3D %s model (target %s) on %s (%s, %s: %d × %d)", job.regressor, job.target, job.dataset,
             ds.medium, ds.source, ds.n, ds.m)
    result = {"model": str(job.out), "dataset": str(job.dataset), "regressor": job.regressor, "medium": ds.medium,
              "target": job.target, "wrench_space": "3d",
              "rbf": {"kernel": "thin_plate_spline", "smoothing": 0.0, "smoothing_from_noise": False}}
    if job.cv:
        # the job's repeats: each draw of the folds its own seed, the figures averaged over the draws
        draws = [cross_validate(ds, job.regressor, job.cv, job.target, seed=k)[job.regressor]
                 for k in range(max(1, job.cv_repeats))]
        result["cv"] = {job.regressor: {"folds": job.cv, "repeats": len(draws),
                                        "rel_rmse": float(np.mean([d["rel_rmse"] for d in draws])),
                                        "worst": float(np.max([d["worst"] for d in draws]))}}
    model = wm3.fit(ds, job.regressor, job.target)
    result["concavity"] = concavity_table(ds)
    result["non_associativity"] = flow_mismatch_table(ds)
    from granular.data.sampling import SIZES_3D

    Ks = tuple(K for K in job.fixed_normals if K in SIZES_3D) or (72, 232)  # a planar job's 16/32/64 have no 3D set
    result["fixed_normals"] = fixed_normal_errors(model, Ks)
    model.info = {k: result[k] for k in ("cv", "concavity", "non_associativity", "fixed_normals") if k in result}
    wm3.save(model, job.out)
    return result, model
