"""Regressors of extreme wrenches over configurations (Zhu et al. 2019, §III-B3).

Each follows scikit-learn's estimator contract: the constructor only stores
hyperparameters (``get_params``/``set_params``, ``clone`` work), ``fit(X, Y)``
with X (n, 2) normalised configurations and Y (n, p) outputs learns the fitted
attributes (trailing ``_``), ``predict(X) -> (k, p)``. Every output column is
its own regression (for RBF interpolation this holds by linearity; GP and SVR
fit one model per column).

Model files avoid pickle: they store ``fitted_params()`` (hyperparameters
that refit to the same estimator) and the arrays named in ``FITTED``, which
:func:`restore` sets without refitting (RBF: its centres and coefficients).
"""
from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from granular.errors import GranularError
from granular.learning.linear import KERNELS, rbf_features


class RBF(RegressorMixin, BaseEstimator):
    """Radial-basis-function interpolation (the paper's choice), exact at the training points.

    The interpolant of scipy.interpolate.RBFInterpolator: a
    kernel φ(r) over the training points plus a polynomial of ``degree`` ≤ 1,
    f(x) = Σ c_j φ(‖x − x_j‖) + a·[1, x]. It is written out here because it is
    linear in its coefficients, f(x) = F(x) @ coef_, and the simulator's
    compiled path evaluates that linear form (:meth:`linear_form`); a test
    checks it against scipy.
    """

    name = "rbf"
    KERNELS = KERNELS
    FITTED = ("centers_", "coef_")

    def __init__(self, kernel: str = "thin_plate_spline", degree: int = 1, smoothing: float = 0.0):
        self.kernel = kernel
        self.degree = degree
        self.smoothing = smoothing  # added to the kernel matrix's diagonal, as scipy's: 0 interpolates

    def _check(self):
        if self.kernel not in self.KERNELS:
            raise GranularError(f"unknown RBF kernel {self.kernel!r}; choose one of {', '.join(self.KERNELS)}")
        if self.degree not in (0, 1):
            raise GranularError(f"RBF polynomial degree must be 0 or 1, got {self.degree!r}")
        if not (np.isfinite(self.smoothing) and self.smoothing >= 0):
            raise GranularError(f"RBF smoothing must be a number ≥ 0, got {self.smoothing!r}")

    def fitted_params(self) -> dict:
        return self.get_params()

    def linear_form(self):
        """(centers (n, dim), kernel id, degree, coef (n + 1 + dim·degree, p)): f(x) = F(x) @ coef."""
        return self.centers_, self.KERNELS[self.kernel], self.degree, self.coef_

    def features(self, X):
        """F(x) (k, n + 1 + dim·degree): kernel values against the n training points, then the polynomial."""
        c = self.centers_
        return rbf_features(np.asarray(X, dtype=float), c, (c**2).sum(axis=1), self.KERNELS[self.kernel],
                            self.degree)

    def fit(self, X, Y):
        from scipy.linalg import solve

        self._check()
        self.centers_ = np.asarray(X, dtype=float)
        n = len(X)
        K = self.features(self.centers_)
        P = K[:, n:]
        system = np.block([[K[:, :n] + self.smoothing * np.eye(n), P], [P.T, np.zeros((P.shape[1], P.shape[1]))]])
        rhs = np.vstack([Y, np.zeros((P.shape[1], Y.shape[1]))])
        try:
            self.coef_ = solve(system, rhs)
        except np.linalg.LinAlgError:
            raise GranularError("RBF interpolation is singular: are two training configurations the same, "
                                "or all on one line?") from None
        return self

    def predict(self, X):
        return self.features(np.asarray(X, dtype=float)) @ self.coef_


class GP(RegressorMixin, BaseEstimator):
    """Gaussian-process regression (scikit-learn), one GP per output column.

    Kernel: constant × anisotropic Matérn (ν = 5/2) + a little white noise, fitted
    by maximum likelihood (the Matérn kernel copes better than the squared
    exponential with the sharp change of W as the foot tilts over). ``thetas``
    (p, 4), log-hyperparameters per column, fixes the kernels and skips the
    optimiser; after fitting, ``thetas_`` holds the ones used.
    """

    name = "gp"
    FITTED = ()

    def __init__(self, thetas=None, restarts: int = 0):
        self.thetas = thetas
        self.restarts = restarts

    def fitted_params(self) -> dict:
        return {**self.get_params(), "thetas": self.thetas_}

    def fit(self, X, Y):
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

        kernel = (ConstantKernel(1.0, (1e-3, 1e3)) * Matern([0.5] * X.shape[1], (5e-2, 1e1), nu=2.5)
                  + WhiteKernel(1e-6, (1e-10, 1e-3)))
        thetas = None if self.thetas is None else np.asarray(self.thetas, dtype=float)
        self.estimators_ = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for col in range(Y.shape[1]):
                if thetas is not None:
                    gp = GaussianProcessRegressor(kernel.clone_with_theta(thetas[col]), optimizer=None,
                                                  normalize_y=True)
                else:
                    gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=self.restarts,
                                                  random_state=col)
                self.estimators_.append(gp.fit(X, Y[:, col]))
        self.thetas_ = np.array([gp.kernel_.theta for gp in self.estimators_])
        return self

    def predict(self, X):
        return np.column_stack([gp.predict(X) for gp in self.estimators_])


class SVR(RegressorMixin, BaseEstimator):
    """Support-vector regression (scikit-learn, RBF kernel), one per output column on standardised
    outputs: scikit-learn's own MultiOutputRegressor inside a TransformedTargetRegressor."""

    name = "svr"
    FITTED = ()

    def __init__(self, C: float = 100.0, epsilon: float = 0.01, gamma: float = 1.0):
        self.C = C
        self.epsilon = epsilon
        self.gamma = gamma

    def fitted_params(self) -> dict:
        return self.get_params()

    def fit(self, X, Y):
        from sklearn.compose import TransformedTargetRegressor
        from sklearn.multioutput import MultiOutputRegressor
        from sklearn.preprocessing import StandardScaler
        from sklearn.svm import SVR as _SVR

        inner = MultiOutputRegressor(_SVR(C=self.C, epsilon=self.epsilon, gamma=self.gamma))
        self.estimator_ = TransformedTargetRegressor(inner, transformer=StandardScaler()).fit(X, Y)
        return self

    def predict(self, X):
        return self.estimator_.predict(X).reshape(len(X), -1)


REGRESSORS = {cls.name: cls for cls in (RBF, GP, SVR)}


def make(name: str, **params):
    try:
        cls = REGRESSORS[name]
    except KeyError:
        raise GranularError(f"unknown regressor {name!r}; choose one of {', '.join(REGRESSORS)}") from None
    try:
        return cls(**params)
    except TypeError as exc:
        raise GranularError(f"bad parameters for regressor {name!r}: {exc}") from None


def restore(reg, arrays: dict):
    """Set a regressor's fitted arrays (its ``FITTED``) as a model file stored them; no refit."""
    for key in reg.FITTED:
        setattr(reg, key, np.asarray(arrays[key], dtype=float))
    return reg
