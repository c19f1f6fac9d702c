"""The learned wrench-space model in three dimensions: W(θ) ⊂ ℝ⁶ (Zhu et al. 2019, §III-B3, in 3D).

As in the plane (:mod:`granular.learning.model`): m regressions predict the extreme wrenches
w_i(θ) ∈ ℝ⁶ for any θ = (d, φ), and W(θ) is their convex hull. Wrenches and twists are in the
foot's tilt frame (:mod:`granular.frames3d`), where a foot of revolution's W depends on θ alone.

The model is exactly symmetric under both mirrors of a foot of revolution in a level medium: it is
trained on the data and their images under x → −x (with φ → −φ) and y → −y, and each prediction
is averaged with its mirror images. The same regressors as the planar model's (RBF by default,
GP, SVR) learn either the wrenches or the wrenches per unit depth (``target``); past the deepest
data W is scaled in proportion to depth (:func:`~granular.learning.linear.depth_factor`).

Two representations of W(θ), as in the plane: the exact hull of the points and the origin
(qhull in ℝ⁶; affordable for the 72-direction set, ~10 ms) and the fixed-normal polytope, whose
K normals are the 3D direction set's (:func:`~granular.data.sampling.sphere_directions_3d`) in the
scaled wrench space and whose offsets b(θ) are the points' support function.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from granular.data import dataset as wd
from granular.data.sampling import mirror_permutation, sphere_directions_3d
from granular.errors import GranularError
from granular.frames3d import MIRROR_X, MIRROR_Y, foot_axis
from granular.io.h5io import atomic_h5, attr, read_h5
from granular.learning.linear import support_3d
from granular.learning.model import REGRESSOR_NAMES, TARGETS, pooled
from granular.wrench import polytopes
from granular.wrench.flow import choose_tail
from granular.wrench.flow3d import SphereMap

log = logging.getLogger(__name__)

FORMAT, VERSION = "granular-wrench-model", 3  # the planar model's format, with wrench_space = "3d"
_FLIP_PHI = np.array([1.0, -1.0])
_NO_NORMALS = np.zeros((0, 6))


def symmetrize(ds: wd.WrenchDataset) -> wd.WrenchDataset:
    """The dataset joined with its images under both mirrors, each configuration's samples averaged
    over the valid ones that land on it."""
    px, py = mirror_permutation(ds.directions, mirror=MIRROR_X), mirror_permutation(ds.directions, mirror=MIRROR_Y)
    configs = np.vstack([ds.configs, ds.configs, ds.configs * _FLIP_PHI, ds.configs * _FLIP_PHI])
    y = ds.wrenches[:, py] * MIRROR_Y
    wrenches = np.concatenate([ds.wrenches, y, ds.wrenches[:, px] * MIRROR_X, y[:, px] * MIRROR_X])
    vy = ds.valid[:, py]
    valid = np.concatenate([ds.valid, vy, ds.valid[:, px], vy[:, px]])
    return pooled(ds, configs, wrenches, valid)


def wrench_scale(ds: wd.WrenchDataset) -> np.ndarray:
    """Per-axis scale (N ×3, N·m ×3) weighing force and torque alike: the data's largest force
    component for the forces, largest torque component for the torques (else force × r_offset)."""
    w = np.abs(np.where(ds.valid[..., None], np.nan_to_num(ds.wrenches), 0.0))
    f, t = w[..., :3].max(), w[..., 3:].max()
    f = f if f > 0 else 1.0
    return np.array([f] * 3 + [t if t > 0 else f * ds.foot.r_offset] * 3)


@dataclass
class WrenchSpaceModel3D:
    """A fitted W(θ) ⊂ ℝ⁶. Build it with :func:`fit` or :func:`load`; treat it as immutable."""

    dataset: wd.WrenchDataset
    regressor: str = "rbf"
    params: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)
    target: str = "wrench"

    def __post_init__(self):
        from granular.learning import regressors

        ds = self.dataset
        if ds.dim != 6:
            raise GranularError(f"dataset {ds.medium!r} is planar; the 3D model needs a 3D (6-axis) dataset")
        if self.target not in TARGETS:
            raise GranularError(f"unknown model target {self.target!r}; choose one of {', '.join(TARGETS)}")
        self._normals = {}
        self.px = mirror_permutation(ds.directions, mirror=MIRROR_X)
        self.py = mirror_permutation(ds.directions, mirror=MIRROR_Y)
        train = symmetrize(ds)
        below = train.configs[:, 0] < 0
        if not below.any():
            raise GranularError(f"dataset {ds.medium!r} has no configuration below the surface (d < 0)")
        if not train.valid.all():
            raise GranularError(f"dataset {ds.medium!r}: the 3D model needs every direction at every configuration "
                                f"(after mirroring); {int((~train.valid).sum())} samples are missing")
        self.d_min = float(train.configs[:, 0].min())
        self.d_max = float(train.configs[below, 0].max()) if self.target == "per-depth" else 0.0
        self.phi_max = float(np.abs(train.configs[:, 1]).max())
        self.x_scale = np.array([-self.d_min, self.phi_max if self.phi_max > 0 else 1.0])
        self.active = np.array([True, self.phi_max > 0])
        self.scale = wrench_scale(train)
        rows = below if self.target == "per-depth" else np.ones(len(train.configs), bool)
        Y = train.wrenches[rows]
        if self.target == "per-depth":
            Y = Y / -train.configs[rows, :1, None]
        self._reg = regressors.make(self.regressor, **self.params)
        self._reg.fit(self._x(train.configs[rows]), Y.reshape(rows.sum(), -1))
        self.params = self._reg.fitted_params()

    @property
    def m(self) -> int:
        return self.dataset.m

    def _x(self, configs):
        return (np.asarray(configs, dtype=float) / self.x_scale)[:, self.active]

    def outside(self, thetas):
        """Per configuration in contact: True where θ lies deeper or more tilted than all the data."""
        thetas = np.asarray(thetas, dtype=float).reshape(-1, 2)
        return (thetas[:, 0] < 0) & ((thetas[:, 0] < self.d_min) | (np.abs(thetas[:, 1]) > self.phi_max))

    def support(self, A, thetas) -> tuple[np.ndarray, np.ndarray]:
        """(b (k, K), points (k, m, 6)): :meth:`offsets` and :meth:`points` together, in one compiled
        call for an RBF model (the MuJoCo step's W(θ) for every foot in the medium)."""
        thetas = np.ascontiguousarray(np.asarray(thetas, dtype=float).reshape(-1, 2))
        linear = self._linear
        if linear is None:
            points = self._regressed(thetas)
            return polytopes.support_offsets(A, points), points
        b, W = support_3d(thetas, *linear, np.ascontiguousarray(A, dtype=float))
        return b, W.reshape(len(thetas), self.m, 6)

    @cached_property
    def _linear(self):
        """:func:`~granular.learning.linear.support_3d`'s model arguments (an RBF only, else None)."""
        if self.regressor != "rbf":
            return None
        centers, kernel, degree, coef = self._reg.linear_form()
        bounds = np.array([self.d_min, self.d_max, self.phi_max, *self.x_scale])
        kept, mirror = _mirrored(coef, self.py)
        return (bounds, int(self.active[1]), int(self.target == "per-depth"), np.ascontiguousarray(centers),
                np.ascontiguousarray((centers ** 2).sum(axis=1)), int(kernel), int(degree), kept, mirror)

    def points(self, thetas) -> np.ndarray:
        """Predicted extreme wrenches (k, m, 6) in F_r for configurations (k, 2); zero where d ≥ 0."""
        thetas = np.asarray(thetas, dtype=float).reshape(-1, 2)
        if self._linear is None:
            return self._regressed(thetas)
        # an RBF: the compiled call, with no normals
        return support_3d(np.ascontiguousarray(thetas), *self._linear, _NO_NORMALS)[1].reshape(len(thetas), self.m, 6)

    def _regressed(self, thetas) -> np.ndarray:
        """:meth:`points` by the regressor's own predict (any regressor; the compiled call's reference)."""
        out = np.zeros((len(thetas), self.m, 6))
        contact = thetas[:, 0] < 0
        if not contact.any():
            return out
        th = thetas[contact]
        inside = np.column_stack([th[:, 0].clip(self.d_min, self.d_max), th[:, 1].clip(-self.phi_max, self.phi_max)])
        # depth_factor's law (granular.learning.linear), over the batch
        factor = -th[:, 0] if self.target == "per-depth" else np.maximum(1.0, th[:, 0] / self.d_min)
        if self.regressor == "rbf":
            # an RBF through mirror-symmetric data is itself symmetric under both mirrors (the kernel
            # and the centres are; the interpolant is linear in the data): no averaging needed
            W = self._reg.predict(self._x(inside)).reshape(len(th), self.m, 6)
        else:
            k = len(th)
            both = self._reg.predict(self._x(np.concatenate([inside, inside * _FLIP_PHI]))).reshape(2 * k, self.m, 6)
            W = 0.5 * (both[:k] + both[k:, self.px] * MIRROR_X)
            W = 0.5 * (W + W[:, self.py] * MIRROR_Y)
        out[contact] = W * factor[:, None, None]
        return out

    @cached_property
    def direction_map(self) -> SphereMap:
        """The data-flow interpolant over the dataset's directions (:mod:`granular.wrench.flow3d`), with
        the tail that predicts the data's own left-out directions best; built on first use."""
        ds = self.dataset
        tail, scores = choose_tail(ds, SphereMap)
        log.debug("%s 3D data-flow map: %s tail (leave-one-direction-out error %s)", ds.medium, tail,
                  ", ".join(f"{k} {v:.4f}" for k, v in scores.items()))
        return SphereMap(ds.directions, ds.velocity_scale, ds.foot.radius, tail)

    def flow(self, thetas, twists) -> np.ndarray:
        """The data's wrench (k, 6) about p_r for twists (k, 6) of p_center in F_c3 at configurations
        (k, 2): the data-flow law (:class:`~granular.wrench.flow3d.SphereMap`); zero at rest or out of
        contact."""
        thetas = np.asarray(thetas, dtype=float).reshape(-1, 2)
        return self.flow_at(self.points(thetas), thetas, twists)

    def flow_at(self, points, thetas, twists) -> np.ndarray:
        """:meth:`flow` from the extreme wrenches (k, m, 6) already predicted at the configurations."""
        phis = np.asarray(thetas, dtype=float).reshape(-1, 2)[:, 1]
        return self.direction_map.wrenches(points, phis, twists, self.dataset.foot.r_offset * foot_axis(phis))

    def halfspaces(self, thetas):
        """Exact W(θ) for each configuration: a list of (A, b) with A w ≤ b, unit rows, b ≥ 0."""
        return [polytopes.hull_halfspaces(p, self.scale) for p in self.points(thetas)]

    def fixed_normals(self, K: int = 72) -> np.ndarray:
        """The constant A (K, 6) of the fixed-normal representation: the 3D direction set of size K
        taken as normals in the scaled wrench space (w / scale), unit rows in wrench units."""
        if K not in self._normals:
            A = sphere_directions_3d(K) / self.scale
            self._normals[K] = A / np.linalg.norm(A, axis=1, keepdims=True)
        return self._normals[K].copy()

    def offsets(self, A, thetas) -> np.ndarray:
        """b(θ) (k, K) of the fixed-normal representation: W(θ) ⊆ {w : A w ≤ b}."""
        return self.support(A, thetas)[0]


def _mirrored(coef, py, rtol: float = 1e-12):
    """(kept, mirror): the RBF's columns (features, 6m) of one point of each pair the mirror y → −y
    exchanges (``py``), and per point the block of ``kept`` it is (mirror[j] ≥ 0) or mirrors (−1 − block),
    as :func:`~granular.learning.linear.support_3d` takes them. An RBF through mirror-averaged data is
    symmetric itself, to round-off; the step reads its coefficients at every step, and a third fewer
    is as much less memory. Where they are not symmetric within ``rtol``, every column is kept."""
    m = len(py)
    blocks = coef.reshape(len(coef), m, 6)
    mirror = np.arange(m)
    if np.abs(blocks[:, py] * MIRROR_Y - blocks).max() <= rtol * np.abs(coef).max():
        keep = np.flatnonzero(py >= np.arange(m))  # one of each pair; a point its own mirror kept
        block = np.full(m, -1)
        block[keep] = np.arange(len(keep))
        mirror = np.where(py >= np.arange(m), block, -1 - block[py])
        blocks = blocks[:, keep]
    return np.ascontiguousarray(blocks.reshape(len(coef), -1)), np.ascontiguousarray(mirror, dtype=np.int64)


def fit(ds: wd.WrenchDataset, regressor: str = "rbf", target: str = "wrench", **params) -> WrenchSpaceModel3D:
    if regressor not in REGRESSOR_NAMES:
        raise GranularError(f"unknown regressor {regressor!r}; choose one of {', '.join(REGRESSOR_NAMES)}")
    return WrenchSpaceModel3D(ds, regressor, dict(params), target=target)


def save(model: WrenchSpaceModel3D, path):
    """The model file: the planar model's format with ``wrench_space`` = "3d"; the regressor refits
    from its stored parameters on loading (deterministic), so no pickle is stored."""
    with atomic_h5(path) as f:
        f.attrs.update({"format": FORMAT, "version": VERSION, "wrench_space": "3d", "regressor": model.regressor,
                        "target": model.target, "info": json.dumps(model.info),
                        "params": json.dumps(model.params)})
        wd.write_group(f.create_group("dataset"), model.dataset)


def load(path) -> WrenchSpaceModel3D:
    with read_h5(path, FORMAT, {VERSION}) as f:
        kind = str(attr(f, "wrench_space", path)) if "wrench_space" in f.attrs else "planar"
        if kind != "3d":
            raise GranularError(f"{path}: a planar model, where a 3D (6-axis) one is expected")
        regressor, target = attr(f, "regressor", path), attr(f, "target", path)
        if regressor not in REGRESSOR_NAMES or target not in TARGETS:
            raise GranularError(f"{path}: unknown regressor {regressor!r} or target {target!r}")
        if "dataset" not in f:
            raise GranularError(f"{path}: model file lacks its 'dataset' group")
        ds = wd.read_group(f["dataset"], f"{path} (embedded dataset)", kind="3d")
        try:
            params, info = json.loads(attr(f, "params", path)), json.loads(attr(f, "info", path))
        except json.JSONDecodeError:
            raise GranularError(f"{path}: attribute 'params' or 'info' is not valid JSON") from None
    try:
        return WrenchSpaceModel3D(ds, regressor, params, info, target)
    except (TypeError, ValueError, KeyError) as exc:
        raise GranularError(f"{path}: cannot rebuild the {regressor} model from its parameters ({exc})") from None
