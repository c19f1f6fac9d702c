"""The learned wrench-space model W(θ) (Zhu et al. 2019, §III-B3).

m regressions w_i(θ) predict the extreme wrenches for any configuration θ;
W(θ) is their convex hull (:mod:`granular.wrench.polytopes`). The model is exactly
mirror-symmetric: it is trained on the data and its mirror image and its
prediction is averaged with the mirrored prediction at (d, −φ).

A model file (HDF5) holds the training dataset and the regressor's
parameters, from which loading refits the model deterministically: no pickle,
so a model file from a stranger cannot run code.
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field, replace

import numpy as np

from granular.data import dataset as wd
from granular.learning import regressors
from granular.wrench import polytopes as wrenchspace
from granular.errors import GranularError, GranularWarning
from granular.frames import MIRROR
from granular.io.h5io import atomic_h5, attr, read_h5
from granular.learning.regressors import mirror_average, support_of_mirror_average
from granular.data.sampling import mirror_permutation

_FLIP_PHI = np.array([1.0, -1.0])
FORMAT = "granular-wrench-model"
VERSION = 1


def symmetrize(ds: wd.WrenchDataset) -> wd.WrenchDataset:
    """The dataset joined with its mirror image, a configuration seen twice averaged over its valid samples."""
    perm = mirror_permutation(ds.directions)
    configs = np.vstack([ds.configs, ds.configs * [1.0, -1.0]])
    wrenches = np.concatenate([ds.wrenches, ds.wrenches[:, perm] * MIRROR])
    valid = np.concatenate([ds.valid, ds.valid[:, perm]])
    keys, inverse = np.unique(np.round(configs, 12), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    total = np.zeros((len(keys),) + wrenches.shape[1:])
    count = np.zeros((len(keys), valid.shape[1]))
    np.add.at(total, inverse, np.where(valid[..., None], wrenches, 0.0))
    np.add.at(count, inverse, valid)
    mean = np.divide(total, count[..., None], out=np.zeros_like(total), where=count[..., None] > 0)
    return replace(ds, configs=keys, wrenches=mean, valid=count > 0)


@dataclass
class WrenchSpaceModel:
    """A fitted W(θ). Build it with :func:`fit` or :func:`load`; treat it as immutable."""

    dataset: wd.WrenchDataset
    regressor: str = "rbf"
    params: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        ds = self.dataset
        self.perm = mirror_permutation(ds.directions)
        train = symmetrize(ds)
        self.d_min = float(train.configs[:, 0].min())
        self.phi_max = float(np.abs(train.configs[:, 1]).max())
        if self.d_min >= 0:
            raise GranularError(f"dataset {ds.medium!r} has no configuration below the surface (d < 0)")
        self.x_scale = np.array([-self.d_min, self.phi_max if self.phi_max > 0 else 1.0])
        self.active = np.array([True, self.phi_max > 0])
        self._lo = np.array([self.d_min, -self.phi_max])
        self._hi = np.array([0.0, self.phi_max])
        f = np.nanmax(np.abs(np.where(train.valid[..., None], train.wrenches, 0.0)[..., :2]))
        t = np.nanmax(np.abs(np.where(train.valid, train.wrenches[..., 2], 0.0)))
        f = f if f > 0 else 1.0
        self.scale = np.array([f, f, t if t > 0 else f * ds.foot.r_offset])
        self._fit(train)

    def _x(self, configs):
        return (np.asarray(configs, dtype=float) / self.x_scale)[:, self.active]

    def _fit(self, train):
        """One regressor per group of directions sharing a validity pattern (usually one group)."""
        patterns, group_of = np.unique(train.valid.T, axis=0, return_inverse=True)
        self._groups = []
        for g, rows in enumerate(patterns):
            cols = np.flatnonzero(group_of.ravel() == g)
            if rows.sum() < 3:
                raise GranularError(f"directions {cols.tolist()} have fewer than 3 valid configurations; "
                                    "cannot learn their extreme wrenches")
            Y = train.wrenches[rows][:, cols].reshape(rows.sum(), -1)
            params = dict(self.params.get(f"group{g}", {}))
            reg = regressors.make(self.regressor, **params).fit(self._x(train.configs[rows]), Y)
            self.params[f"group{g}"] = reg.params()
            self._groups.append((cols, reg))
        self._linear = None
        if len(self._groups) == 1 and hasattr(self._groups[0][1], "features"):
            # f(x) = F(x) C is linear in C, so the mirror average folds into one matrix:
            # ½ (F(x) C + F(x̄) C') with C' the coefficients of the mirrored outputs.
            reg = self._groups[0][1]
            C = reg.coef.reshape(len(reg.coef), self.m, 3)
            self._linear = (reg, 0.5 * np.vstack([C, C[:, self.perm] * MIRROR]).reshape(2 * len(C), -1))

    @property
    def m(self) -> int:
        return len(self.dataset.directions)

    def clamp(self, thetas):
        """θ clamped to the data's range (within [−π/2, π/2] in φ); warns once if that changes it."""
        thetas = np.asarray(thetas, dtype=float).reshape(-1, 2)
        out = np.clip(thetas, self._lo, self._hi)
        if (out != thetas).any():
            warnings.warn(f"configuration outside the {self.dataset.medium!r} data (d ≥ {self.d_min:g} m, "
                          f"|φ| ≤ {self.phi_max:g} rad): clamped to its edge", GranularWarning, stacklevel=3)
        return out

    def points(self, thetas):
        """Predicted extreme wrenches (k, m, 3) in F_r for configurations (k, 2); zero where d ≥ 0."""
        thetas = np.asarray(thetas, dtype=float).reshape(-1, 2)
        contact = thetas[:, 0] < 0
        if contact.all():
            return self._predict(self.clamp(thetas))
        out = np.zeros((len(thetas), self.m, 3))
        if contact.any():
            out[contact] = self._predict(self.clamp(thetas[contact]))
        return out

    def _predict(self, th):
        """The mirror-averaged prediction for configurations in contact, already clamped."""
        k = len(th)
        X = np.concatenate([th, th * _FLIP_PHI]) / self.x_scale
        X = X if self.active.all() else X[:, self.active]
        if self._linear is not None:
            reg, coef = self._linear
            return mirror_average(X, reg.centers, reg._c2, reg.KERNELS[reg.kernel], reg.degree,
                                  coef).reshape(k, self.m, 3)
        both = np.empty((2 * k, self.m, 3))
        for cols, reg in self._groups:
            both[:, cols] = reg.predict(X).reshape(2 * k, len(cols), 3)
        return 0.5 * (both[:k] + both[k:, self.perm] * MIRROR)

    def halfspaces(self, thetas):
        """Exact W(θ) for each configuration: a list of (A, b) with A w ≤ b, unit rows, b ≥ 0."""
        pts = self.points(thetas)
        return [wrenchspace.hull_halfspaces(p, self.scale) for p in pts]

    def fixed_normals(self, K: int = 32, kind: str = "fitted"):
        """The constant A (K, 3) of the fixed-normal representation.

        kind 'fitted' clusters the facet normals of the hulls at the training
        configurations (tighter); 'sphere' spreads K normals evenly.
        """
        try:
            if kind == "sphere":
                return wrenchspace.fixed_normals(K, self.scale)
            if kind != "fitted":
                raise GranularError(f"unknown fixed-normal kind {kind!r}; choose 'fitted' or 'sphere'")
            configs = symmetrize(self.dataset).configs
            return wrenchspace.fitted_normals(self.points(configs[configs[:, 0] < 0]), self.scale, K)
        except ValueError as exc:
            raise GranularError(str(exc)) from None

    def offsets(self, A, thetas):
        """b(θ) (k, K) of the fixed-normal representation: W(θ) ⊆ {w : A w ≤ b}."""
        thetas = np.asarray(thetas, dtype=float).reshape(-1, 2)
        if self._linear is None or not (thetas[:, 0] < 0).all():
            return wrenchspace.support_offsets(A, self.points(thetas))
        th = self.clamp(thetas)  # all in contact: the compiled path, fused with the support function
        X = np.concatenate([th, th * _FLIP_PHI]) / self.x_scale
        reg, coef = self._linear
        return support_of_mirror_average(X if self.active.all() else X[:, self.active], reg.centers, reg._c2,
                                         reg.KERNELS[reg.kernel], reg.degree, coef, np.ascontiguousarray(A))


def fit(ds: wd.WrenchDataset, regressor: str = "rbf", **params) -> WrenchSpaceModel:
    regressors.make(regressor)  # unknown names fail before any work
    return WrenchSpaceModel(ds, regressor, {"group0": params} if params else {})


def save(model: WrenchSpaceModel, path):
    with atomic_h5(path) as f:
        f.attrs.update({"format": FORMAT, "version": VERSION, "regressor": model.regressor,
                        "info": json.dumps(model.info)})
        wd.write_group(f.create_group("dataset"), model.dataset)
        pg = f.create_group("params")
        for gname, params in model.params.items():
            g = pg.create_group(gname)
            for key, value in params.items():
                if isinstance(value, np.ndarray):
                    g.create_dataset(key, data=value)
                elif value is not None:
                    g.attrs[key] = value


def load(path) -> WrenchSpaceModel:
    with read_h5(path, FORMAT, {VERSION}) as f:
        regressor = attr(f, "regressor", path)
        if regressor not in regressors.REGRESSORS:
            raise GranularError(f"{path}: unknown regressor {regressor!r}")
        if "dataset" not in f or "params" not in f:
            raise GranularError(f"{path}: model file lacks its 'dataset' or 'params' group")
        ds = wd.read_group(f["dataset"], f"{path} (embedded dataset)")
        params = {g: {**{k: attr(f["params"][g], k, path) for k in f["params"][g].attrs},
                      **{k: f["params"][g][k][()] for k in f["params"][g]}} for g in f["params"]}
        try:
            info = json.loads(attr(f, "info", path))
        except json.JSONDecodeError:
            raise GranularError(f"{path}: attribute 'info' is not valid JSON") from None
    try:
        return WrenchSpaceModel(ds, regressor, params, info)
    except (TypeError, ValueError) as exc:
        raise GranularError(f"{path}: cannot rebuild the {regressor} model from its parameters ({exc})") from None
