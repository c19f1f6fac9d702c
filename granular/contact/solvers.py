"""Solvers of the contact QP (:mod:`granular.contact.qp`), one interface, ``solve(qp) -> c``:
``cvxpy`` (the paper's form, readable reference), ``osqp`` (sparse, warm started, matrices updated
in place while the structure stays), ``quadprog`` (dense, Goldfarb–Idnani) and ``daqp`` (dense dual
active set) on the reduced form, the two over a working set of constraints grown until none is
violated (``_DenseSolver``), and ``native`` (the default: Goldfarb–Idnani compiled with the step's
kernels, :func:`~granular.contact.active_set.dual_active_set`, which the fused step calls).
"""
from __future__ import annotations

import logging
from functools import cached_property

import numpy as np

from granular.contact.active_set import NATIVE_TOLERANCE, dual_active_set
from granular.contact.qp import ContactQP, SolverError
from granular.contact.reduction import strictly_convex
from granular.errors import GranularError

log = logging.getLogger(__name__)


class CvxpySolver:
    """Eq. (2) as written in the paper (in v⁺ and c), solved by Clarabel: the readable reference."""

    name = "cvxpy"

    def solve(self, qp: ContactQP):
        import cvxpy as cp

        n, nc = len(qp.v), qp.Jt.shape[0]
        v_next, c = cp.Variable(n), cp.Variable(nc)
        grains = sum(cp.quad_form(qp.Jp[3 * i:3 * i + 3] @ v_next, np.diag(qp.Mg[3 * i:3 * i + 3]))
                     for i in range(len(qp.Mg) // 3))
        objective = cp.quad_form(v_next, cp.psd_wrap(qp.M)) + grains
        constraints = [qp.M @ (v_next - qp.v) == qp.Jt.T @ c + qp.impulse]
        constraints += [qp.A @ c <= qp.ub]
        problem = cp.Problem(cp.Minimize(objective), constraints)
        problem.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
        if problem.status not in ("optimal",):
            raise SolverError(f"cvxpy/Clarabel returned status {problem.status!r}")
        return np.asarray(c.value)


def polish(P, g, A, ub, c, y):
    """Exact solution on an active set guessed from an approximate solution ``c``, or None.

    Guesses: the constraints nearly tight at ``c`` or with a positive multiplier
    in ``y`` (at growing tolerances), then the k tightest for k = 1, 2, …
    Each guess is solved as an equality-constrained QP (KKT by least squares,
    so degenerate vertices with more tight facets than dimensions are fine)
    and accepted only with a certificate: primal feasible, and −(P x + g) a
    non-negative combination of the active normals (NNLS).
    """
    from scipy.optimize import nnls

    scale = max(np.abs(ub).max(), 1e-300)
    slack = ub - A @ c

    def guesses():
        for cut in (1e-7, 1e-5, 1e-3):
            yield (slack <= cut * scale) | (y > cut * max(np.abs(y).max(), 1e-300))
        order = np.argsort(slack)
        for k in range(1, min(len(ub), 2 * len(g)) + 1):
            S = np.zeros(len(ub), dtype=bool)
            S[order[:k]] = True
            yield S

    for S in guesses():
        k = int(S.sum())
        kkt = np.block([[P, A[S].T], [A[S], np.zeros((k, k))]])
        try:
            x = np.linalg.lstsq(kkt, np.concatenate([-g, ub[S]]), rcond=None)[0][:len(g)]
        except np.linalg.LinAlgError:
            continue
        if not np.all(np.isfinite(x)) or np.max(A @ x - ub) > 1e-9 * scale:
            continue
        grad = P @ x + g
        residual = nnls(A[S].T, -grad)[1] if k else np.linalg.norm(grad)
        if residual <= 1e-8 * max(np.linalg.norm(g), 1e-300):
            return x
    return None


class OsqpSolver:
    """OSQP on the reduced form, for large scenes. The workspace is kept and updated in
    place while the constraint matrix keeps its values (fixed normals) and set up anew
    when it changes; ADMM runs to a moderate tolerance and :func:`polish` makes the
    answer exact (OSQP's own polishing prints to stdout, which would spoil --json)."""

    name = "osqp"
    # ADMM needs 50k–200k iterations on some exact hulls of a tilted foot at shallow depth (one random
    # QP of tests/test_sim.py's twelve); the iterations stop at the tolerance, so easy QPs pay nothing
    settings = dict(verbose=False, eps_abs=1e-7, eps_rel=1e-7, max_iter=200_000, polishing=False)

    def __init__(self):
        self._solver = None
        self._A = None  # the constraint matrix the workspace was set up with

    def solve(self, qp: ContactQP):
        import osqp
        import scipy.sparse as sp

        P, g = qp.reduced
        A, ub = qp.stacked_constraints()
        # Solve for c = s x with s the largest bound, so that x and the bounds are O(1):
        # ADMM converges several times faster on the rescaled problem.
        s = max(np.abs(ub).max(), 1e-12)
        g_s, ub_s = g / s, ub / s
        n = len(P)
        rows, cols = np.triu_indices(n)
        order = np.lexsort((rows, cols))  # CSC order: by column, then row
        rows, cols = rows[order], cols[order]
        if self._A is not None and self._A.shape == A.shape and np.array_equal(self._A, A):
            self._solver.update(Px=P[rows, cols], q=g_s, u=ub_s)
        else:
            # Keep the whole upper triangle, zeros included, so later updates fit its pattern.
            indptr = np.concatenate([[0], np.cumsum(np.arange(1, n + 1))])
            P_upper = sp.csc_matrix((P[rows, cols], rows, indptr), shape=(n, n))
            self._solver = osqp.OSQP()
            self._solver.setup(P_upper, g_s, sp.csc_matrix(A), np.full(len(ub), -np.inf), ub_s, **self.settings)
            self._A = A
        result = self._solver.solve(raise_error=False)
        status = result.info.status
        if result.x is None or not np.all(np.isfinite(result.x)):
            raise SolverError(f"OSQP returned status {status!r} and no solution")
        exact = polish(P, g_s, A, ub_s, result.x, result.y)
        if exact is not None:
            return s * exact
        if status == "solved":
            return s * np.asarray(result.x)
        raise SolverError(f"OSQP returned status {status!r} after {result.info.iter} iterations "
                          "and its active set could not be certified")


class _DenseSolver:
    """A dense active-set solver on the reduced form, by constraint generation.

    Dense solvers set up all m constraints before they iterate (DAQP forms A R⁻¹: O(m n²), 12 of
    the 15 ms of a 64-contact step), although few bind: a foot that sticks binds none of its 32
    facets. So the QP is solved over a working set of constraints (at first the ones that bound
    the previous step), every constraint is checked, the violated ones join the set and it is
    solved again. The answer satisfies every constraint and is optimal over the set, so the KKT
    conditions of the whole QP hold (zero multipliers outside the set): it is the QP's answer, not
    an approximation. The working set is the solver's only state (its warm start).
    """

    #: a constraint violated by more than this × the largest bound joins the working set
    TOLERANCE = 1e-9

    def __init__(self):
        self._working = np.zeros(0, dtype=bool)

    def solve(self, qp: ContactQP):
        P, g = qp.reduced
        A, ub = qp.stacked_constraints()
        tol = self.TOLERANCE * max(np.abs(ub).max(), 1e-12)
        S = self._working if len(self._working) == len(ub) else np.zeros(len(ub), dtype=bool)
        H = None
        for _ in range(len(ub) + 1):  # each round adds a constraint, so this ends
            if S.any():
                H = strictly_convex(P) if H is None else H
                x = self._subset(H, g, A[S], ub[S])
            else:
                x = qp.c_free
            excess = qp.excess(x)
            if not (excess[~S] > tol).any():
                self._working = excess >= -tol
                return x
            S = S | (excess > tol)
        raise SolverError(f"{self.name}: constraint generation did not settle on {len(ub)} constraints")


class QuadprogSolver(_DenseSolver):
    """Dense Goldfarb–Idnani active set (quadprog) on the reduced form."""

    name = "quadprog"

    def __init__(self):
        super().__init__()
        import quadprog  # here, not at the top: a process that never solves a QP does not load it

        self._solve = quadprog.solve_qp

    def _subset(self, H, g, A, ub):
        try:
            return self._solve(H, -g, -A.T, -ub)[0]
        except ValueError as exc:
            raise SolverError(f"quadprog: {exc}") from None


class DaqpSolver(_DenseSolver):
    """Dense dual active set (DAQP) on the reduced form, over a working set."""

    name = "daqp"
    #: DAQP's exit flags for cycling and the iteration limit, which a degenerate vertex causes (the
    #: rover's wheels, whose wrench spaces are thin in τ, meet one): such a subset goes to quadprog
    DEGENERATE = (-2, -4)

    def __init__(self):
        super().__init__()
        import daqp  # here, not at the top: a process that never solves a QP does not load it

        self._solve = daqp.solve
        self._bounds = {}  # per constraint count: DAQP's one-sided lower bounds and its row kinds

    def _subset(self, H, g, A, ub):
        from ctypes import c_int

        if len(ub) not in self._bounds:
            self._bounds[len(ub)] = np.full(len(ub), -1e30), np.zeros(len(ub), dtype=c_int)
        x, _, flag, _ = self._solve(H, g, A, ub, *self._bounds[len(ub)])
        if flag in self.DEGENERATE:  # a degenerate vertex; Goldfarb–Idnani's primal view copes
            log.debug("DAQP exit flag %d on %d constraints: solved by quadprog instead", flag, len(ub))
            return self._fallback(H, g, A, ub)
        if flag <= 0:
            raise SolverError(f"DAQP exit flag {flag}")
        return np.asarray(x)

    @cached_property
    def _fallback(self):
        return QuadprogSolver()._subset


class NativeSolver:
    """The dual active-set method compiled with the step's kernels (:func:`dual_active_set`), on the
    reduced form over all constraints, warm started from the last step's active set. With it a
    quadruped's whole step runs as one compiled call (:mod:`granular.simulation.fused`). Where the
    method cannot be trusted (P nearly singular) or cycles on a degenerate vertex, DAQP solves that
    step (and quadprog where DAQP cycles)."""

    name = "native"

    def __init__(self):
        self._active, self._count = np.zeros(0, dtype=np.int64), 0  # the last step's active set

    def solve(self, qp: ContactQP):
        P, g = qp.reduced
        tol = NATIVE_TOLERANCE * max(np.abs(qp.ub).max(), 1e-12) if len(qp.ub) else 0.0
        if len(self._active) != len(g):
            self._active, self._count = np.zeros(len(g), dtype=np.int64), 0
        x, status, self._count = dual_active_set(strictly_convex(P), g, qp.A, qp.ub, qp.rows, tol, self._active,
                                                 self._count)
        if status >= 0 and np.all(np.isfinite(x)):
            return x
        self._count = 0
        log.debug("native QP status %d on %d constraints: solved by DAQP instead", status, len(qp.ub))
        return self._fallback.solve(qp)

    @cached_property
    def _fallback(self):
        return DaqpSolver()


SOLVERS = {cls.name: cls for cls in (CvxpySolver, OsqpSolver, QuadprogSolver, DaqpSolver, NativeSolver)}


def make_solver(name: str):
    try:
        return SOLVERS[name]()
    except KeyError:
        raise GranularError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)}") from None
