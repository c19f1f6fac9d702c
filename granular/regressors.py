"""Regressors of extreme wrenches over configurations (Zhu et al. 2019, §III-B3).

Each is a small estimator: ``fit(X, Y)`` with X (n, 2) normalised
configurations and Y (n, p) outputs, then ``predict(X) -> (k, p)``. Every
output column is its own regression (for RBF interpolation this holds by
linearity; GP and SVR fit one model per column). ``params()`` returns plain
values that, passed back to the constructor and refitted on the same data,
reproduce the fit exactly: that is how model files avoid pickle.
"""
from __future__ import annotations

import warnings

import numpy as np
from scipy.interpolate import RBFInterpolator

from .errors import GranularError


class RBF:
    """scipy RBF interpolation (the paper's choice): exact at the training points."""

    name = "rbf"

    def __init__(self, kernel: str = "thin_plate_spline", smoothing: float = 0.0, degree: int = 1,
                 epsilon: float = 1.0):
        self.kernel, self.smoothing, self.degree, self.epsilon = kernel, smoothing, degree, epsilon

    def params(self) -> dict:
        return {"kernel": self.kernel, "smoothing": self.smoothing, "degree": self.degree, "epsilon": self.epsilon}

    def fit(self, X, Y):
        self._f = RBFInterpolator(X, Y, kernel=self.kernel, smoothing=self.smoothing,
                                  degree=self.degree, epsilon=self.epsilon)
        return self

    def predict(self, X):
        return self._f(X)


class GP:
    """Gaussian-process regression (scikit-learn), one GP per output column.

    Kernel: constant × anisotropic squared-exponential + white noise, fitted by
    maximum likelihood. ``thetas`` (p, 4), the fitted log-hyperparameters,
    makes refitting skip the optimiser.
    """

    name = "gp"

    def __init__(self, thetas=None, restarts: int = 0):
        self.thetas = None if thetas is None else np.asarray(thetas, dtype=float)
        self.restarts = restarts

    def params(self) -> dict:
        return {"thetas": self.thetas, "restarts": self.restarts}

    def fit(self, X, Y):
        from sklearn.exceptions import ConvergenceWarning
        from sklearn.gaussian_process import GaussianProcessRegressor
        from sklearn.gaussian_process.kernels import RBF as SE, ConstantKernel, WhiteKernel

        kernel = ConstantKernel(1.0, (1e-3, 1e3)) * SE([0.5, 0.5], (1e-2, 1e2)) + WhiteKernel(1e-4, (1e-10, 1e-1))
        self._gps, thetas = [], []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for col in range(Y.shape[1]):
                if self.thetas is not None:
                    gp = GaussianProcessRegressor(kernel.clone_with_theta(self.thetas[col]), optimizer=None,
                                                  normalize_y=True)
                else:
                    gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=self.restarts,
                                                  random_state=col)
                self._gps.append(gp.fit(X, Y[:, col]))
                thetas.append(gp.kernel_.theta)
        self.thetas = np.array(thetas)
        return self

    def predict(self, X):
        return np.column_stack([gp.predict(X) for gp in self._gps])


class SVR:
    """Support-vector regression (scikit-learn, RBF kernel) on standardised outputs, one per column."""

    name = "svr"

    def __init__(self, C: float = 100.0, epsilon: float = 0.01, gamma: float = 1.0):
        self.C, self.epsilon, self.gamma = C, epsilon, gamma

    def params(self) -> dict:
        return {"C": self.C, "epsilon": self.epsilon, "gamma": self.gamma}

    def fit(self, X, Y):
        from sklearn.svm import SVR as _SVR

        self._mean = Y.mean(axis=0)
        self._std = np.where(Y.std(axis=0) > 0, Y.std(axis=0), 1.0)
        Z = (Y - self._mean) / self._std
        self._svrs = [_SVR(C=self.C, epsilon=self.epsilon, gamma=self.gamma).fit(X, Z[:, c]) for c in range(Y.shape[1])]
        return self

    def predict(self, X):
        return np.column_stack([s.predict(X) for s in self._svrs]) * self._std + self._mean


REGRESSORS = {cls.name: cls for cls in (RBF, GP, SVR)}


def make(name: str, **params):
    try:
        cls = REGRESSORS[name]
    except KeyError:
        raise GranularError(f"unknown regressor {name!r}; choose one of {', '.join(REGRESSORS)}") from None
    return cls(**params)
