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
from numba import njit
from granular.errors import GranularError


class RBF:
    """Radial-basis-function interpolation (the paper's choice), exact at the training points.

    The interpolant of scipy.interpolate.RBFInterpolator (smoothing 0): a
    kernel φ(r) over the training points plus a polynomial of ``degree`` ≤ 1,
    f(x) = Σ c_j φ(‖x − x_j‖) + a·[1, x]. It is written out here because its
    features F(x) = [φ(‖x − x_j‖)…, 1, x] are what the simulator's fast path
    evaluates (f(x) = F(x) @ coef); a test checks it against scipy.
    """

    name = "rbf"
    KERNELS = {"thin_plate_spline": 0, "cubic": 1, "linear": 2}  # ids for the compiled features

    def __init__(self, kernel: str = "thin_plate_spline", degree: int = 1):
        if kernel not in self.KERNELS:
            raise GranularError(f"unknown RBF kernel {kernel!r}; choose one of {', '.join(self.KERNELS)}")
        if degree not in (0, 1):
            raise GranularError(f"RBF polynomial degree must be 0 or 1, got {degree!r}")
        self.kernel, self.degree = kernel, degree

    def params(self) -> dict:
        return {"kernel": self.kernel, "degree": self.degree}

    def features(self, X):
        """F(x) (k, n + p): kernel values against the n training points, then the polynomial terms."""
        return rbf_features(np.asarray(X, dtype=float), self.centers, self._c2, self.KERNELS[self.kernel],
                            self.degree)

    def fit(self, X, Y):
        from scipy.linalg import solve

        self.centers = np.asarray(X, dtype=float)
        self._c2 = (self.centers**2).sum(axis=1)
        n = len(X)
        K = self.features(self.centers)
        P = K[:, n:]
        system = np.block([[K[:, :n], P], [P.T, np.zeros((P.shape[1], P.shape[1]))]])
        rhs = np.vstack([Y, np.zeros((P.shape[1], Y.shape[1]))])
        try:
            self.coef = solve(system, rhs)
        except np.linalg.LinAlgError:
            raise GranularError("RBF interpolation is singular: are two training configurations the same, "
                                "or all on one line?") from None
        return self

    def predict(self, X):
        return self.features(np.asarray(X, dtype=float)) @ self.coef


@njit(cache=True)
def rbf_features(X, centers, c2, kernel, degree):
    """[φ(‖x − x_j‖)…, 1, x…] per row of X; φ = r² log r, r³ or −r (kernel 0, 1, 2)."""
    k, n, dim = X.shape[0], centers.shape[0], X.shape[1]
    F = np.empty((k, n + 1 + dim * degree))
    for i in range(k):
        x2 = 0.0
        for d in range(dim):
            x2 += X[i, d] * X[i, d]
        for j in range(n):
            dot = 0.0
            for d in range(dim):
                dot += X[i, d] * centers[j, d]
            r2 = max(x2 + c2[j] - 2.0 * dot, 0.0)
            if kernel == 0:
                F[i, j] = 0.5 * r2 * np.log(r2) if r2 > 0.0 else 0.0
            elif kernel == 1:
                F[i, j] = r2 ** 1.5
            else:
                F[i, j] = -np.sqrt(r2)
        F[i, n] = 1.0
        for d in range(dim * degree):
            F[i, n + 1 + d] = X[i, d]
    return F


@njit(cache=True)
def mirror_average(X, centers, c2, kernel, degree, coef):
    """½ (F(x) C + F(x̄) C') for X = [x; x̄] (2k rows): the model's folded, mirror-averaged RBF."""
    k = X.shape[0] // 2
    F = rbf_features(X, centers, c2, kernel, degree)
    n = F.shape[1]
    return F[:k] @ coef[:n] + F[k:] @ coef[n:]


@njit(cache=True)
def support_of_mirror_average(X, centers, c2, kernel, degree, coef, A):
    """max(0, max_i A w_i(θ)) per configuration: the fixed-normal offsets of the mirror-averaged RBF."""
    k, K = X.shape[0] // 2, A.shape[0]
    W = mirror_average(X, centers, c2, kernel, degree, coef)  # (k, 3m)
    m = W.shape[1] // 3
    b = np.zeros((k, K))
    for i in range(k):
        for f in range(K):
            best = 0.0
            for j in range(m):
                val = A[f, 0] * W[i, 3 * j] + A[f, 1] * W[i, 3 * j + 1] + A[f, 2] * W[i, 3 * j + 2]
                if val > best:
                    best = val
            b[i, f] = best
    return b


class GP:
    """Gaussian-process regression (scikit-learn), one GP per output column.

    Kernel: constant × anisotropic Matérn (ν = 5/2) + a little white noise, fitted
    by maximum likelihood (the Matérn kernel copes better than the squared
    exponential with the sharp change of W as the foot tilts over). ``thetas`` (p, 4), the fitted log-hyperparameters,
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
        from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

        kernel = (ConstantKernel(1.0, (1e-3, 1e3)) * Matern([0.5] * X.shape[1], (5e-2, 1e1), nu=2.5)
                  + WhiteKernel(1e-6, (1e-10, 1e-3)))
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
