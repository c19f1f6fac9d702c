"""The learned wrench-space model W(θ) (Zhu et al. 2019, §III-B3).

m regressions w_i(θ) predict the extreme wrenches for any configuration θ;
W(θ) is their convex hull (:mod:`granular.wrench.polytopes`). The model is exactly
mirror-symmetric: it is trained on the data and its mirror image and its
prediction is averaged with the mirrored prediction at (d, −φ).

What the regressors learn is the model's ``target``: the wrenches themselves ("wrench"), or the
wrenches per unit depth, w / |d| ("per-depth"), multiplied by |d| again when predicting. Granular
resistance grows about linearly with depth (Li et al. 2013, eq. 1), so w / |d| varies far less
over the grid than w: an interpolant through a few noisy rows then neither dips between them nor
overshoots past them, and the same law carries W to the surface and below the deepest data.

A model file (HDF5) holds the training dataset, the regressor's parameters
and its fitted arrays (RBF: centres and coefficients), which loading sets
without refitting; regressors without stored arrays (GP, SVR) refit
deterministically from their fitted hyperparameters. No pickle, so a model
file from a stranger cannot run code.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from granular.data import dataset as wd
from granular.wrench import polytopes as wrenchspace
from granular.wrench.flow import DirectionMap, choose_tail, dissipative_into
from granular.errors import GranularError
from granular.frames import MIRROR, foot_axis, twist_at
from granular.io.h5io import atomic_h5, attr, read_h5
from granular.learning.linear import KERNELS, depth_factor, mirror_average, support_of_mirror_average
from granular.data.sampling import mirror_permutation

log = logging.getLogger(__name__)
_FLIP_PHI = np.array([1.0, -1.0])
#: The names of :data:`granular.learning.regressors.REGRESSORS`, without importing scikit-learn.
REGRESSOR_NAMES = ("rbf", "gp", "svr")
#: What the regressors learn (the module's docstring): the wrenches, or the wrenches per unit depth.
TARGETS = ("wrench", "per-depth")
FORMAT = "granular-wrench-model"
VERSION = 3  # 1: no fitted arrays (refitted on load); 2: no target (the wrenches); both still read


def symmetrize(ds: wd.WrenchDataset) -> wd.WrenchDataset:
    """The dataset joined with its mirror image, a configuration seen twice averaged over its valid samples."""
    perm = mirror_permutation(ds.directions)
    configs = np.vstack([ds.configs, ds.configs * [1.0, -1.0]])
    wrenches = np.concatenate([ds.wrenches, ds.wrenches[:, perm] * MIRROR])
    valid = np.concatenate([ds.valid, ds.valid[:, perm]])
    return pooled(ds, configs, wrenches, valid)


def pooled(ds: wd.WrenchDataset, configs, wrenches, valid) -> wd.WrenchDataset:
    """``ds`` over the rows (configs, wrenches, valid), a configuration that occurs more than once
    averaged over its valid samples (the mirror images' rows meeting the data's own)."""
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
    fitted: dict = field(default_factory=dict, repr=False)  # per group: a model file's fitted arrays
    normals: dict = field(default_factory=dict, repr=False)  # K -> fitted fixed normals (K, 3), kept
    target: str = "wrench"  # one of TARGETS

    def __post_init__(self):
        ds = self.dataset
        if self.target not in TARGETS:
            raise GranularError(f"unknown model target {self.target!r}; choose one of {', '.join(TARGETS)}")
        self._warned = False
        self.perm = mirror_permutation(ds.directions)
        train = symmetrize(ds)
        below = train.configs[:, 0] < 0
        if not below.any():
            raise GranularError(f"dataset {ds.medium!r} has no configuration below the surface (d < 0)")
        self.d_min = float(train.configs[:, 0].min())
        self.phi_max = float(np.abs(train.configs[:, 1]).max())
        self.per_depth = int(self.target == "per-depth")
        if self.per_depth and len(np.unique(train.configs[below, 0])) < 2:
            raise GranularError(f"target 'per-depth' needs data at two depths or more below the surface; "
                                f"{ds.medium!r} has one (d = {self.d_min:g} m): learn the wrenches instead")
        self.x_scale = np.array([-self.d_min, self.phi_max if self.phi_max > 0 else 1.0])
        self.active = np.array([True, self.phi_max > 0])
        self.scale = wrench_scale(train)
        if self.per_depth:  # the surface's zero rows say nothing of w / |d|
            train = replace(train, configs=train.configs[below], valid=train.valid[below],
                            wrenches=train.wrenches[below] / -train.configs[below, :1, None])
        self._fit(train)

    def _x(self, configs):
        return (np.asarray(configs, dtype=float) / self.x_scale)[:, self.active]

    def _fit(self, train):
        """One regressor per group of directions sharing a validity pattern (usually one group).

        A single RBF group stored in a model file is used in its linear form straight from the
        file's arrays (no scikit-learn, no refit); otherwise the regressors are fitted or restored.
        """
        patterns, group_of = np.unique(train.valid.T, axis=0, return_inverse=True)
        self._patterns = [(np.flatnonzero(group_of.ravel() == g), rows) for g, rows in enumerate(patterns)]
        for g, (cols, rows) in enumerate(self._patterns):
            if rows.sum() < 3:
                raise GranularError(f"directions {cols.tolist()} have fewer than 3 valid configurations; "
                                    "cannot learn their extreme wrenches")
        self._bounds = np.array([self._range(train.configs[rows]) for _, rows in self._patterns])
        self._train, self._groups, self._linear = train, None, None
        arrays, params = self.fitted.get("group0", {}), self.params.get("group0", {})
        if self.regressor == "rbf" and len(self._patterns) == 1 and {"centers_", "coef_"} <= set(arrays):
            kernel = params.get("kernel", "thin_plate_spline")
            if kernel not in KERNELS:
                raise ValueError(f"unknown RBF kernel {kernel!r}")
            degree = int(params.get("degree", 1))
            self._link([self._fold(np.arange(self.m), np.asarray(arrays["centers_"], float), degree,
                                   np.asarray(arrays["coef_"], float))], KERNELS[kernel], degree)
        else:
            self._estimators()

    def _range(self, configs):
        """A group's own data range, as :func:`~granular.learning.linear.mirror_average` clamps θ to it:
        (deepest d, shallowest d or else 0, largest |φ|). Per unit depth, W between the surface and
        the shallowest data is that row's times |d|, so d is clamped to the shallowest row."""
        d = configs[:, 0]
        return d.min(), (d.max() if self.per_depth else 0.0), np.abs(configs[:, 1]).max()

    def _estimators(self):
        """The fitted regressors, per group (cols, regressor); fitted or restored on first use."""
        from granular.learning import regressors

        if self._groups is not None:
            return self._groups
        self._groups = []
        given = self.params.get("group0", {})  # fit(**params): every group's, until each keeps its own
        for g, (cols, rows) in enumerate(self._patterns):
            reg = regressors.make(self.regressor, **self.params.get(f"group{g}", given))
            arrays = self.fitted.get(f"group{g}", {})
            if reg.FITTED and all(k in arrays for k in reg.FITTED):
                reg = regressors.restore(reg, arrays)
            else:
                Y = self._train.wrenches[rows][:, cols].reshape(rows.sum(), -1)
                reg.fit(self._x(self._train.configs[rows]), Y)
            self.params[f"group{g}"] = reg.fitted_params()
            self.fitted[f"group{g}"] = {k: getattr(reg, k) for k in reg.FITTED}
            self._groups.append((cols, reg))
        forms = [reg.linear_form() for _, reg in self._groups if hasattr(reg, "linear_form")]
        if len(forms) == len(self._groups) and len({(kernel, degree) for _, kernel, degree, _ in forms}) == 1:
            _, kernel, degree, _ = forms[0]
            self._link([self._fold(cols, centers, degree, C) for (cols, _), (centers, _, _, C)
                        in zip(self._groups, forms)], kernel, degree)
        return self._groups

    def _fold(self, cols, centers, degree, coef):
        """One group's RBF (centres, coefficients C in its directions' columns ``cols``) with its mirror
        image folded in: (centres, their rows of coefficients, the polynomial tail's rows), all m
        directions wide.

        f(x) = F(x) C is linear in C, so the mirror average ½ (F(x) C + F(x̄) C'), C' the
        coefficients of the mirrored outputs, is one RBF evaluation: mirroring flips φ, an isometry,
        so the kernel part of F(x̄) is F(x) about the mirrored centres, and its polynomial part
        [1, x] is F(x)'s with φ's sign flipped. The centres and their mirror images (merged where
        they coincide, as the symmetrised training data's do) carry ½ C and ½ C'. The mirrored
        outputs come from the same regressor, so they see its group's clamp."""
        n, dim = centers.shape
        C = np.zeros((len(coef), self.m, 3))
        C[:, cols] = np.asarray(coef).reshape(len(coef), len(cols), 3)
        Cm = C[:, self.perm] * MIRROR
        flip = np.ones(dim)
        flip[1:] = -1.0                     # the φ column, where the inputs have one
        sign = np.concatenate([[1.0], np.tile(flip, degree)])
        index = {tuple(c): i for i, c in enumerate(np.round(centers, 12))}
        rows, extra, more = 0.5 * C[:n].copy(), [], []
        for j, c in enumerate(centers * flip):
            i = index.get(tuple(np.round(c, 12)))
            if i is None:
                extra.append(c), more.append(0.5 * Cm[j])
            else:
                rows[i] += 0.5 * Cm[j]
        poly = 0.5 * (C[n:] + sign[:, None, None] * Cm[n:])
        centers = np.vstack([centers, *extra]) if extra else centers
        rows = np.concatenate([rows, *([np.array(more)] if more else [])])
        return centers, rows.reshape(len(rows), -1), poly.reshape(len(poly), -1)

    def _link(self, folded, kernel, degree):
        """The groups' folded RBFs (:meth:`_fold`) as one linear form, as
        :func:`~granular.learning.linear.mirror_average` evaluates it: every group's centres in turn
        (``spans``: where each group's begin, and the end), then every group's polynomial tail in turn."""
        centers = np.vstack([c for c, _, _ in folded])
        spans = np.cumsum([0] + [len(c) for c, _, _ in folded]).astype(np.int64)
        coef = np.vstack([rows for _, rows, _ in folded] + [poly for _, _, poly in folded])
        self._linear = (np.ascontiguousarray(centers), (centers**2).sum(axis=1), spans, kernel, degree,
                        np.ascontiguousarray(coef))

    @property
    def m(self) -> int:
        return len(self.dataset.directions)

    def _clamp(self, thetas, bounds):
        """θ clamped to a group's data range ``bounds`` (:meth:`_range`)."""
        d, phi = thetas[:, 0].clip(bounds[0], bounds[1]), thetas[:, 1].clip(-bounds[2], bounds[2])
        return np.column_stack([d, phi])

    def warn_clamped(self):
        if not self._warned:
            self._warned = True
            # a note, not a warning: leaving the data a little is what the depth law is for; a run warns
            # where a foot goes far past them (scenarios.advice)
            log.debug("configuration outside the %r data (d ≥ %g m, |φ| ≤ %g rad): W taken at the data's "
                      "edge, scaled in proportion to depth below the deepest data (said once per model)",
                      self.dataset.medium, self.d_min, self.phi_max)

    def _depth_factor(self, d, d_min):
        """What a group's prediction at the clamped θ is multiplied by at depths d < 0, its deepest data
        d_min (:func:`~granular.learning.linear.depth_factor`, where the law is written)."""
        return np.array([depth_factor(x, d_min, self.per_depth) for x in np.asarray(d, dtype=float).tolist()])

    def outside(self, thetas):
        """Per configuration in contact: True where θ lies deeper or more tilted than all the data."""
        thetas = np.asarray(thetas, dtype=float).reshape(-1, 2)
        return (thetas[:, 0] < 0) & ((thetas[:, 0] < self.d_min) | (np.abs(thetas[:, 1]) > self.phi_max))

    def points(self, thetas):
        """Predicted extreme wrenches (k, m, 3) in F_r for configurations (k, 2); zero where d ≥ 0."""
        thetas = np.ascontiguousarray(np.asarray(thetas, dtype=float).reshape(-1, 2))
        if self._linear is not None:
            W, clamped = mirror_average(thetas, *self.rbf_arrays())
            if clamped:
                self.warn_clamped()
            return W.reshape(len(thetas), self.m, 3)
        contact = thetas[:, 0] < 0
        out = np.zeros((len(thetas), self.m, 3))
        if contact.any():
            out[contact] = self._predict(thetas[contact])
        return out

    def _predict(self, th):
        """The regressors' mirror-averaged prediction for configurations in contact, each group's at θ
        clamped to its own data and scaled in depth past them (as :func:`mirror_average` does)."""
        k = len(th)
        if self.outside(th).any():
            self.warn_clamped()
        both = np.empty((2 * k, self.m, 3))
        for (cols, reg), bounds in zip(self._estimators(), self._bounds):
            inside = self._clamp(th, bounds)
            X = self._x(np.concatenate([inside, inside * _FLIP_PHI]))
            factor = np.tile(self._depth_factor(th[:, 0], bounds[0]), 2)
            both[:, cols] = reg.predict(X).reshape(2 * k, len(cols), 3) * factor[:, None, None]
        return 0.5 * (both[:k] + both[k:, self.perm] * MIRROR)

    @cached_property
    def direction_map(self) -> DirectionMap:
        """Interpolation over the data's directions (:mod:`granular.wrench.flow`), with the tail that
        predicts the data's own left-out directions best; built on first use."""
        ds = self.dataset
        tail, scores = choose_tail(ds)
        log.debug("%s data-flow map: %s tail (leave-one-direction-out error %s)", ds.medium, tail,
                 ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))
        return DirectionMap(ds.directions, ds.velocity_scale, ds.foot.radius, tail)

    def flow(self, thetas, twists):
        """The data's wrench (k, 3) in F_r for twists (k, 3) of p_center in F_c: the recorded
        direction → wrench map interpolated between the sampled directions, less any part that would
        do work on the foot (:func:`~granular.wrench.flow.dissipative_into`); zero at rest or out of
        contact."""
        twists = np.asarray(twists, dtype=float).reshape(-1, 3)
        w = self.direction_map.wrenches(self.points(thetas), thetas, twists / self.dataset.velocity_scale)
        phi = np.asarray(thetas, dtype=float).reshape(-1, 2)[:, 1]
        twists_r = twist_at(twists, self.dataset.foot.r_offset * foot_axis(phi))
        scale = np.asarray(self.dataset.velocity_scale, dtype=float)
        for row, v in zip(w, twists_r):
            dissipative_into(v, scale, row, np.zeros((3, 3)), 0)
        return w

    def halfspaces(self, thetas):
        """Exact W(θ) for each configuration: a list of (A, b) with A w ≤ b, unit rows, b ≥ 0."""
        return self.hulls(self.points(thetas))

    def hulls(self, points):
        """The exact W of each set of extreme wrenches (k, m, 3): a list of (A, b) as :meth:`halfspaces`."""
        return [wrenchspace.hull_halfspaces(p, self.scale) for p in points]

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
            if str(K) not in self.normals:
                configs = symmetrize(self.dataset).configs
                self.normals[str(K)] = wrenchspace.fitted_normals(self.points(configs[configs[:, 0] < 0]),
                                                                  self.scale, K)
            return self.normals[str(K)].copy()
        except ValueError as exc:
            raise GranularError(str(exc)) from None

    def offsets(self, A, thetas):
        """b(θ) (k, K) of the fixed-normal representation: W(θ) ⊆ {w : A w ≤ b}."""
        return self.offsets_and_points(A, thetas)[0]

    def offsets_and_points(self, A, thetas):
        """(b(θ) (k, K), the extreme wrenches (k, m, 3)) in one prediction: the offsets of
        :meth:`offsets` and the points of :meth:`points` they are the support function of."""
        thetas = np.asarray(thetas, dtype=float).reshape(-1, 2)
        if self._linear is None:
            points = self.points(thetas)
            return wrenchspace.support_offsets(A, points), points
        b, W, clamped = support_of_mirror_average(np.ascontiguousarray(thetas), *self.rbf_arrays(), A)
        if clamped:
            self.warn_clamped()
        return b, W.reshape(len(thetas), self.m, 3)

    def rbf_arrays(self) -> tuple | None:
        """The compiled RBF's inputs, as :func:`~granular.learning.linear.mirror_average` takes them
        after θ: (each group's data range, x_scale, φ active, per depth, centres, their squared norms,
        where each group's centres begin, kernel id, degree, folded coefficients; groups of directions joined,
        :meth:`_link`); None where W(θ) is learned by another regressor than RBF."""
        if self._linear is None:
            return None
        return (self._bounds, np.ascontiguousarray(self.x_scale, np.float64), int(self.active[1]),
                self.per_depth, *self._linear)


def wrench_scale(ds: wd.WrenchDataset) -> np.ndarray:
    """Per-axis scale (N, N, N·m) that weighs force and torque alike: the data's largest |f_x|, |f_z|
    for both forces, their largest |τ| for the torque (else the force times r_offset)."""
    f = np.nanmax(np.abs(np.where(ds.valid[..., None], ds.wrenches, 0.0)[..., :2]))
    t = np.nanmax(np.abs(np.where(ds.valid, ds.wrenches[..., 2], 0.0)))
    f = f if f > 0 else 1.0
    return np.array([f, f, t if t > 0 else f * ds.foot.r_offset])


def fit(ds: wd.WrenchDataset, regressor: str = "rbf", target: str = "wrench", **params) -> WrenchSpaceModel:
    from granular.learning import regressors

    regressors.make(regressor)  # unknown names fail before any work
    return WrenchSpaceModel(ds, regressor, {"group0": params} if params else {}, target=target)


def save(model: WrenchSpaceModel, path):
    with atomic_h5(path) as f:
        f.attrs.update({"format": FORMAT, "version": VERSION, "regressor": model.regressor,
                        "target": model.target, "info": json.dumps(model.info)})
        wd.write_group(f.create_group("dataset"), model.dataset)
        model.fixed_normals(32)  # the simulator's default: stored, so loading needs no clustering
        for top, content in (("params", model.params), ("fitted", model.fitted), ("normals", {"fitted": model.normals})):
            groups = f.create_group(top)
            for gname, values in content.items():
                g = groups.create_group(gname)
                for key, value in values.items():
                    if isinstance(value, np.ndarray):
                        g.create_dataset(key, data=value)
                    elif value is not None:
                        g.attrs[key] = value


def _groups(f, top, path) -> dict:
    if top not in f:
        return {}
    return {g: {**{k: attr(f[top][g], k, path) for k in f[top][g].attrs},
                **{k: f[top][g][k][()] for k in f[top][g]}} for g in f[top]}


def load(path) -> WrenchSpaceModel:
    with read_h5(path, FORMAT, {1, 2, VERSION}) as f:
        if f.attrs.get("wrench_space", "planar") != "planar":
            raise GranularError(f"{path}: a 3D (6-axis) model, where a planar one is expected")
        regressor = attr(f, "regressor", path)
        if not isinstance(regressor, str) or regressor not in REGRESSOR_NAMES:
            raise GranularError(f"{path}: unknown regressor {regressor!r}")
        target = attr(f, "target", path) if "target" in f.attrs else "wrench"  # older files: the wrenches
        if not isinstance(target, str) or target not in TARGETS:
            raise GranularError(f"{path}: unknown model target {target!r}")
        if "dataset" not in f or "params" not in f:
            raise GranularError(f"{path}: model file lacks its 'dataset' or 'params' group")
        ds = wd.read_group(f["dataset"], f"{path} (embedded dataset)")
        params, fitted = _groups(f, "params", path), _groups(f, "fitted", path)
        if wd.depth_at(f["dataset"], path) == "center":  # fitted over θ with d at p_center (before issue 49)
            log.warning("%s: trained with θ's d at p_center; refitted to its data with d at the lowest point "
                        "(granular train writes it anew)", path)
            fitted = {}
        normals = _groups(f, "normals", path).get("fitted", {})
        try:
            info = json.loads(attr(f, "info", path))
        except json.JSONDecodeError:
            raise GranularError(f"{path}: attribute 'info' is not valid JSON") from None
    try:
        model = WrenchSpaceModel(ds, regressor, params, info, fitted, target=target)
    except (TypeError, ValueError, KeyError, GranularError) as exc:
        # without stored coefficients the model refits its embedded data, which can fail too
        raise GranularError(f"{path}: cannot rebuild the {regressor} model from its parameters ({exc})") from None
    for K, A in normals.items():
        if not (K.isdigit() and isinstance(A, np.ndarray) and A.shape == (int(K), 3) and np.isfinite(A).all()):
            raise GranularError(f"{path}: stored fixed normals {K} are not a finite ({K}, 3) array")
        model.normals[K] = A
    return model
