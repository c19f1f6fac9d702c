"""The maximum-dissipation contact QP (Zhu et al. 2019, eq. 2) and its solvers.

In reduced coordinates there are no joint impulses c_j, so eq. (2) reads

    min_c  v⁺ᵀ M v⁺ + Σ_i (J_p,i v⁺)ᵀ M_g,i (J_p,i v⁺)
    s.t.   A_i(θ_i) c_i ≤ h b_i(θ_i)      for every foot i in contact,
           v⁺ = v + M⁻¹ (J_tᵀ c + h (k + J_uᵀ u)),

with c_i the contact impulse (N·s) of foot i in F_r. The paper writes the
constraint h A c ≤ b; since W bounds forces and c is an impulse (force × h),
the consistent form is A c ≤ h b, which is what is solved here.

Substituting v⁺ gives the reduced QP over contact impulses only:
min ½ cᵀ P c + gᵀ c with P = Bᵀ H B, g = Bᵀ H v_free, B = M⁻¹ J_tᵀ,
H = M + Σ J_pᵀ M_g J_p, v_free = v + M⁻¹ h (k + J_uᵀ u). The origin c = 0 is
always feasible (b ≥ 0), so a solver failure is a bug, reported with the step
and contact.

Solvers share one interface, ``solve(qp) -> c``:
``cvxpy`` (the paper's form, readable reference), ``osqp`` (sparse, warm
started, matrices updated in place while the structure stays), ``quadprog``
(dense, Goldfarb–Idnani) and ``daqp`` (dense dual active set) on the reduced form,
the two over a working set of constraints grown until none is violated
(``_DenseSolver``), and ``native`` (the default: Goldfarb–Idnani compiled with the
step's kernels, :func:`dual_active_set`, which the fused step calls).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from granular.compiled import kernel

from granular.errors import GranularError

log = logging.getLogger(__name__)


class SolverError(GranularError):
    """The contact QP was not solved (its origin is always feasible, so this is a bug)."""


@dataclass
class ContactQP:
    """One step's QP. Jt: (3N, n) stacked F_r Jacobians of the N feet in contact;
    Jp: (3N, n) p_center Jacobians; Mg: (3N,) grain masses; A: (ΣK_i, 3N) block-diagonal
    constraints, ub: (ΣK_i,) = h b_i stacked; rows: (N + 1,) where each foot's block starts."""

    M: np.ndarray
    v: np.ndarray
    impulse: np.ndarray      # h (k + J_uᵀ u)
    Jt: np.ndarray
    Jp: np.ndarray
    Mg: np.ndarray
    A: np.ndarray
    ub: np.ndarray
    rows: np.ndarray
    #: (dofs, starts) of the tree's branches (:attr:`MultiBody.branches`); None: M has no known structure
    branches: tuple | None = None

    @cached_property
    def _reduced(self):
        dofs, starts = self.branches if self.branches is not None else one_branch(len(self.v))
        return reduce_qp(self.M, self.Jt, self.Jp, self.Mg, self.v, self.impulse, dofs, starts)

    @property
    def reduced(self):
        """(P, g) of the reduced QP ½ cᵀ P c + gᵀ c."""
        return self._reduced[0], self._reduced[1]

    @property
    def B(self):
        """M⁻¹ J_tᵀ: the velocity change per unit contact impulse."""
        return self._reduced[2]

    @property
    def v_free(self):
        """v⁺ without contact impulses."""
        return self._reduced[3]

    @property
    def c_free(self):
        """The impulses if no constraint binds: the minimiser of ½ cᵀ P c + gᵀ c (P made strictly convex)."""
        return self._reduced[4]

    def velocity(self, c):
        """v⁺ for contact impulses c."""
        return self.v_free + self.B @ c

    def work(self, c) -> float:
        """Work (J) the impulses c do on the bodies at the velocity they produce."""
        return float(c @ (self.Jt @ self.velocity(c)))

    def stacked_constraints(self):
        """(A, ub): all feet's constraints A c ≤ ub."""
        return self.A, self.ub

    def excess(self, c):
        """A c − ub."""
        return block_excess(self.A, c, self.ub, self.rows)

    def slack_max(self, c):
        """Per foot: max over its facets of A_i c_i − ub_i (≥ 0 means on the boundary of W)."""
        return np.maximum.reduceat(self.excess(c), self.rows[:-1])


def stack_blocks(A_list, ub_list):
    """Block-diagonal (A, ub, rows) from per-foot constraints A_i (K_i, 3) and ub_i (K_i,)."""
    rows = np.concatenate([[0], np.cumsum([len(A) for A in A_list])]).astype(np.int64)
    A = np.zeros((rows[-1], 3 * len(A_list)))
    for i, block in enumerate(A_list):
        A[rows[i]:rows[i + 1], 3 * i:3 * i + 3] = block
    return A, np.concatenate(ub_list) if ub_list else np.zeros(0), rows


@kernel("f8[:, ::1], f8[::1], f8[::1], i8[::1]")
def block_excess(A, c, ub, rows):
    """A c − ub for a block-diagonal A, foot i's facets rows[i]:rows[i + 1] acting on c[3i:3i + 3]
    alone: O(facets), where the dense product is O(facets × 3N) (0.4 M flops at 64 feet)."""
    out = np.empty(len(ub))
    for f in range(len(rows) - 1):
        j = 3 * f
        for r in range(rows[f], rows[f + 1]):
            out[r] = A[r, j] * c[j] + A[r, j + 1] * c[j + 1] + A[r, j + 2] * c[j + 2] - ub[r]
    return out


@kernel()
def _dot(A, B):
    """A @ B, in loops where the matrices are small (a branch's blocks: a BLAS call costs more)."""
    n, k, m = A.shape[0], A.shape[1], B.shape[1]
    if n * k * m > 4096:
        return A @ B
    out = np.zeros((n, m))
    for i in range(n):
        for j in range(k):
            a = A[i, j]
            for c in range(m):
                out[i, c] += a * B[j, c]
    return out


#: Below this many dofs the dense reduction is faster (measured: equal near 36, a quadruped's 15 dofs
#: 9 µs dense against 13 µs by branches; 195 dofs 2.3 ms against 0.66 ms).
TREE_MIN_DOFS = 36


@kernel()
def _reduce_dense(M, Jt, Jp, Mg, v, impulse):
    """:func:`reduce_qp` by the dense formulas."""
    P, g, B, v_free = reduce_small(M, Jt, Jp, Mg, v, impulse)
    c_free = np.linalg.solve(strictly_convex(P), -g) if len(P) else np.zeros(0)  # no foot in contact
    return P, g, B, v_free, c_free


@kernel()
def reduce_small(M, Jt, Jp, Mg, v, impulse):
    """(P, g, B, v_free) of :func:`reduce_qp` for a small system, in loops over M's Cholesky factor
    (M is symmetric positive definite: positive masses and inertias). With B = M⁻¹ J_tᵀ,
    P = Bᵀ (M + J_pᵀ M_g J_p) B = J_t B + (J_p B)ᵀ M_g (J_p B) and g = J_t v_free + (J_p B)ᵀ M_g J_p v_free,
    so H is never formed, and the Jacobians' zeros (a foot moves its own leg's joints only) are
    skipped. The fused step calls it: at a quadruped's 15 dofs and 12 impulses, numpy's and
    LAPACK's calls cost more than their flops."""
    n, m = M.shape[0], Jt.shape[0]
    L, first = leaves_first_cholesky(M)
    v_free = v + leaves_first_solve(L, first, impulse)
    B = _cho_solve_rows(L, first, Jt)
    P, JpB = _sparse_times(Jt, B), _sparse_times(Jp, B)
    g = np.zeros(m)
    for a in range(m):
        jt_v, jp_v = 0.0, 0.0
        for k in range(n):
            jt_v += Jt[a, k] * v_free[k]
            jp_v += Jp[a, k] * v_free[k]
        g[a] += jt_v
        w = Mg[a] * jp_v
        if Mg[a] != 0.0:
            for b in range(m):
                g[b] += JpB[a, b] * w
                for c in range(m):
                    P[b, c] += Mg[a] * JpB[a, b] * JpB[a, c]
    for b in range(m):  # ½ (P + Pᵀ), in place
        for c in range(b + 1, m):
            P[b, c] = P[c, b] = 0.5 * (P[b, c] + P[c, b])
    return P, g, B, v_free


@kernel()
def leaves_first_cholesky(M):
    """The Cholesky factor L of M with its dofs in reverse order (L Lᵀ = R M R, R the reversal), and
    each of its rows' first column that can be non-zero. A tree's dofs are numbered from its base to its
    leaves, so reversed its branches come first and its base last: M has no entries between two
    branches, and in this order the factor fills none either (a row's non-zeros start where M's do),
    so the loops skip them. Where a pivot is not positive, L so far with that pivot and the rest zero
    (as :func:`cholesky`)."""
    n = M.shape[0]
    first = np.empty(n, np.int64)
    for i in range(n):
        first[i] = i
        for k in range(i):
            if M[n - 1 - i, n - 1 - k] != 0.0:
                first[i] = k
                break
    L = np.zeros((n, n))
    for j in range(n):
        acc = M[n - 1 - j, n - 1 - j]
        for k in range(first[j], j):
            acc -= L[j, k] * L[j, k]
        if not acc > 0.0:
            return L, first
        L[j, j] = np.sqrt(acc)
        for i in range(j + 1, n):
            if first[i] > j:
                continue
            acc = M[n - 1 - i, n - 1 - j]
            for k in range(max(first[i], first[j]), j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc / L[j, j]
    return L, first


@kernel()
def leaves_first_solve(L, first, b):
    """M⁻¹ b for L, first = :func:`leaves_first_cholesky` (M)."""
    return _cho_solve_rows(L, first, b.reshape((1, len(b))))[:, 0]


@kernel()
def _cho_solve_rows(L, first, J):
    """M⁻¹ Jᵀ (n × m) for L, first = :func:`leaves_first_cholesky` (M), all m right-hand sides at once
    (each row operation a vector op); Y holds the reversed order."""
    n, m = L.shape[0], J.shape[0]
    Y = np.empty((n, m))
    for i in range(n):          # L Y = R Jᵀ
        for r in range(m):
            Y[i, r] = J[r, n - 1 - i]
        for k in range(first[i], i):
            l = L[i, k]
            if l != 0.0:
                for r in range(m):
                    Y[i, r] -= l * Y[k, r]
        for r in range(m):
            Y[i, r] /= L[i, i]
    X = np.empty((n, m))
    for i in range(n - 1, -1, -1):   # Lᵀ Y' = Y, X = R Y'
        for k in range(i + 1, n):
            l = L[k, i]
            if l != 0.0:
                for r in range(m):
                    Y[i, r] -= l * Y[k, r]
        for r in range(m):
            Y[i, r] /= L[i, i]
            X[n - 1 - i, r] = Y[i, r]
    return X


@kernel()
def _sparse_times(J, B):
    """J B for a Jacobian J with many zeros (skipped)."""
    m, n, k = J.shape[0], J.shape[1], B.shape[1]
    out = np.zeros((m, k))
    for a in range(m):
        for i in range(n):
            j = J[a, i]
            if j != 0.0:
                for b in range(k):
                    out[a, b] += j * B[i, b]
    return out


@kernel()
def cholesky(A):
    """L with L Lᵀ = A, for A symmetric positive definite (a small one: loops, no LAPACK call); where
    a pivot is not positive, L so far with that pivot and the rest zero."""
    n = A.shape[0]
    L = np.zeros((n, n))
    for j in range(n):
        acc = A[j, j]
        for k in range(j):
            acc -= L[j, k] * L[j, k]
        if not acc > 0.0:  # not positive definite (NaN too): a zero pivot, which the caller checks
            return L
        L[j, j] = np.sqrt(acc)
        for i in range(j + 1, n):
            acc = A[i, j]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc / L[j, j]
    return L


def one_branch(n: int):
    """The branch layout (dofs, starts) that assumes no structure: every non-base dof in one branch."""
    return np.arange(3, n, dtype=np.int64), np.array([0, n - 3], dtype=np.int64)


@kernel("f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[::1], f8[::1], f8[::1], i8[::1], i8[::1]")
def reduce_qp(M, Jt, Jp, Mg, v, impulse, dofs, starts):
    """P = Bᵀ H B and g = Bᵀ H v_free with B = M⁻¹ J_tᵀ, H = M + J_pᵀ M_g J_p, v_free = v + M⁻¹ impulse,
    and c_free, the QP's answer if no constraint binds (solved here: a foot that sticks binds none).

    A tree's M is an arrowhead: the branches hanging from the base (dofs[starts[k]:starts[k + 1]],
    :attr:`MultiBody.branches`) couple only through the base's dofs 0–2, so M⁻¹ comes from each
    branch's own block and a 3 × 3 Schur complement S on the base, and B = B_loc + Φ B_b with B_loc
    on each contact's own branch and Φ = [I; −M_kk⁻¹ M_kb] (n × 3). H has M's pattern (a foot's J_p
    lives on its own branch and the base), so P splits the same way: a block per branch plus terms
    of rank 3. The cost grows with the branches and with P's entries, not as n³ (issue 12). Small
    systems and single branches take the dense formulas, which cost less there."""
    n, m = M.shape[0], Jt.shape[0]
    if n < TREE_MIN_DOFS or len(starts) <= 2:
        return _reduce_dense(M, Jt, Jp, Mg, v, impulse)
    row_branch = _contact_branches(Jt, dofs, starts)
    H = _with_grains(M, Jp, Mg)
    K, E, S_inv = _branch_inverses(M, dofs, starts)
    Bloc, X = _tree_solve(K, E, S_inv, Jt, impulse, row_branch, dofs, starts)
    B, v_free = np.ascontiguousarray(X[:, :m]), v + X[:, m]
    P = _tree_P(H, E, Bloc, np.ascontiguousarray(X[:3, :m]), row_branch, dofs, starts)
    g = B.T @ (H @ v_free)
    c_free = np.linalg.solve(strictly_convex(P), -g) if m else np.zeros(0)  # no foot in contact
    return P, g, B, v_free, c_free


@kernel()
def _contact_branches(Jt, dofs, starts):
    """The branch each contact's impulse acts on, from its Jacobian's row (−1: the base alone)."""
    n, m = Jt.shape[1], Jt.shape[0]
    branch = np.full(n, -1)
    for k in range(len(starts) - 1):
        for a in range(starts[k], starts[k + 1]):
            branch[dofs[a]] = k
    out = np.full(m, -1)
    for r in range(m):
        for i in range(3, n):
            if Jt[r, i] != 0.0:
                out[r] = branch[i]
                break
    return out


@kernel()
def _with_grains(M, Jp, Mg):
    """H = M + J_pᵀ M_g J_p, row by row over each row's non-zeros."""
    n = M.shape[0]
    H = M.copy()
    nz = np.empty(n, dtype=np.int64)
    for r in range(Jp.shape[0]):
        if Mg[r] != 0.0:
            d = 0
            for i in range(n):
                if Jp[r, i] != 0.0:
                    nz[d] = i
                    d += 1
            for a in range(d):
                f = Mg[r] * Jp[r, nz[a]]
                for b in range(d):
                    H[nz[a], nz[b]] += f * Jp[r, nz[b]]
    return H


@kernel()
def _branch_inverses(M, dofs, starts):
    """Per branch k, K_k = M_kk⁻¹ (padded into one array) and E_k = K_k M_kb (rows of E at the branch's
    dofs); S⁻¹ with S = M_bb − Σ_k M_bk E_k, the Schur complement on the base."""
    n, nbr = M.shape[0], len(starts) - 1
    size = 0
    for k in range(nbr):
        size = max(size, starts[k + 1] - starts[k])
    K = np.zeros((nbr, size, size))
    E = np.zeros((n, 3))
    S = M[:3, :3].copy()
    for k in range(nbr):
        idx = dofs[starts[k]:starts[k + 1]]
        s = len(idx)
        Mkk, Mkb = np.empty((s, s)), np.empty((s, 3))
        for a in range(s):
            for b in range(s):
                Mkk[a, b] = M[idx[a], idx[b]]
            for b in range(3):
                Mkb[a, b] = M[idx[a], b]
        Kk = np.linalg.inv(Mkk)
        Ek = _dot(Kk, Mkb)
        K[k, :s, :s] = Kk
        for a in range(s):
            E[idx[a]] = Ek[a]
        S -= _dot(np.ascontiguousarray(Mkb.T), Ek)
    return K, E, np.linalg.inv(S)


@kernel()
def _tree_solve(K, E, S_inv, Jt, impulse, row_branch, dofs, starts):
    """X = M⁻¹ [J_tᵀ, impulse] = B_loc + Φ B_b, with B_loc (each column on its contact's branch, the
    impulse's on every branch) and X itself; X's first three rows are B_b."""
    n, m = E.shape[0], Jt.shape[0]
    Y = np.empty((n, m + 1))
    Y[:, :m] = Jt.T
    Y[:, m] = impulse
    Bloc = np.zeros((n, m + 1))
    W = Y[:3].copy()  # the base's right-hand side, Y_b − Σ_k E_kᵀ Y_k
    for k in range(len(starts) - 1):
        idx = dofs[starts[k]:starts[k + 1]]
        s = len(idx)
        sel = np.nonzero(np.append(row_branch == k, True))[0]  # its contacts and the impulse
        Yk = np.empty((s, len(sel)))
        for a in range(s):
            for b in range(len(sel)):
                Yk[a, b] = Y[idx[a], sel[b]]
        Xk = _dot(np.ascontiguousarray(K[k, :s, :s]), Yk)
        Wk = _dot(np.ascontiguousarray(E[idx].T), Yk)
        for b in range(len(sel)):
            for a in range(s):
                Bloc[idx[a], sel[b]] = Xk[a, b]
            for c in range(3):
                W[c, sel[b]] -= Wk[c, b]
    Bb = S_inv @ W
    X = Bloc.copy()
    for i in range(n):
        for r in range(m + 1):
            if i < 3:
                X[i, r] = Bb[i, r]
            else:
                X[i, r] -= E[i, 0] * Bb[0, r] + E[i, 1] * Bb[1, r] + E[i, 2] * Bb[2, r]
    return Bloc, X


@kernel()
def _tree_P(H, E, Bloc, Bb, row_branch, dofs, starts):
    """P = Bᵀ H B for B = B_loc + Φ B_b: Φᵀ H Φ = G and C = (H Φ)ᵀ B_loc give the rank-3 terms
    B_bᵀ (G B_b + C) + Cᵀ B_b, and each branch adds its block B_locᵀ H_kk B_loc over its contacts."""
    n, m = H.shape[0], Bb.shape[1]
    HPhi = np.ascontiguousarray(H[:, :3])
    for i in range(n):
        for j in range(3, n):
            if H[i, j] != 0.0:
                for c in range(3):
                    HPhi[i, c] -= H[i, j] * E[j, c]
    G = HPhi[:3].copy()
    for i in range(3, n):
        for c in range(3):
            for d in range(3):
                G[c, d] -= E[i, c] * HPhi[i, d]
    C = np.zeros((3, m))
    for i in range(3, n):  # along Bloc's rows: its columns are far apart in memory
        for r in range(m):
            if Bloc[i, r] != 0.0:
                for c in range(3):
                    C[c, r] += HPhi[i, c] * Bloc[i, r]
    P = Bb.T @ (G @ Bb + C) + C.T @ Bb
    for k in range(len(starts) - 1):
        idx = dofs[starts[k]:starts[k + 1]]
        rows = np.nonzero(row_branch == k)[0]
        s, mk = len(idx), len(rows)
        if mk == 0:
            continue
        Xk, Hk = np.empty((s, mk)), np.empty((s, s))
        for a in range(s):
            for b in range(mk):
                Xk[a, b] = Bloc[idx[a], rows[b]]
            for b in range(s):
                Hk[a, b] = H[idx[a], idx[b]]
        Lk = _dot(np.ascontiguousarray(Xk.T), _dot(Hk, Xk))
        for a in range(mk):
            for b in range(mk):
                P[rows[a], rows[b]] += Lk[a, b]
    return 0.5 * (P + P.T)


@kernel("f8[:, ::1]")
def strictly_convex(P):
    """P plus a tiny ridge: dense active-set solvers need a positive-definite Hessian, and P is
    only semi-definite when two feet's impulses move the same degrees of freedom."""
    out = P.copy()
    ridge = 1e-12 * np.trace(P) / len(P)
    for i in range(len(P)):
        out[i, i] += ridge
    return out


#: The native solver's violation tolerance, × the largest bound (as the dense solvers' working set).
NATIVE_TOLERANCE = 1e-9
#: A constraint joins the active set only if L⁻¹ a has at least this share of its length outside the
#: set's span (independent, well beyond Gram–Schmidt's rounding).
INDEPENDENT = 1e-7
#: The smallest ratio of the Cholesky factor's diagonal entries (about √ of H's inverse condition
#: number) the native solver works with; below it, DAQP solves the step.
CONDITION = 1e-4


@kernel("f8[:, ::1], f8[::1], f8[:, ::1], f8[::1], i8[::1], f8, i8[::1], i8")
def dual_active_set(H, g, A, ub, rows, tol, active, count):
    """min ½ xᵀ H x + gᵀ x subject to A x ≤ ub, for H positive definite and A block-diagonal by feet
    (foot f's facets rows[f]:rows[f + 1] act on x[3f:3f + 3] alone): the dual active-set method of
    Goldfarb & Idnani (1983), the method quadprog implements. From the minimiser over an active set
    with non-negative multipliers it adds the most violated constraint until none is violated by
    more than ``tol``, keeping the multipliers non-negative on the way (a constraint whose
    multiplier would turn negative leaves the set), so the answer is the QP's own.

    Warm start: ``active[:count]`` (say, the last step's set) is taken as the first active set,
    less the constraints that are out of range, dependent on the others or whose multipliers come
    out negative (a dual active-set method may start from any set with non-negative multipliers).
    The set is at most len(x) constraints, so its QR factorisation (of L⁻¹ N, H = L Lᵀ) is rebuilt
    from a removed constraint on rather than updated. On return ``active[:size]`` is the final set.
    Returns (x, status, size): status ≥ 0 the iterations taken; −1 an infeasible step (impossible
    when x = 0 is feasible), −2 the iteration limit (cycling on a degenerate vertex), −3 H too
    ill-conditioned to trust L⁻¹ (more impulses than the degrees of freedom they move, as a rover's
    wheels: P is singular but for its ridge)."""
    n = len(g)
    L = cholesky(H)
    lo, hi = np.inf, 0.0
    for i in range(n):
        lo, hi = min(lo, L[i, i]), max(hi, L[i, i])
    if not (hi > 0.0 and lo >= CONDITION * hi):  # NaN too: a pivot that was not positive
        return np.zeros(n), -3, 0
    # two allocations, not thirteen: at a quadruped's size they cost as much as the flops
    matrices, vectors = np.empty((3, n, n)), np.empty((9, n))
    Nt, Q, R = matrices[0], matrices[1], matrices[2]   # Nt: L⁻¹ a_j of the active constraints, one per row
    gt, u, proj, rr, a, at, resid, x, z = (vectors[0], vectors[1], vectors[2], vectors[3], vectors[4], vectors[5],
                                           vectors[6], vectors[7], vectors[8])
    _forward_into(L, g, gt, 0)           # L⁻¹ g
    u[:] = 0.0
    na = _warm_start(A, ub, rows, L, active, count, Nt, Q, R, gt, u, proj, rr, a, at, resid)
    _minimiser(L, gt, Nt, u, na, resid, x)
    for it in range(4 * (len(ub) + n) + 10):
        p, s = _most_violated(A, x, ub, rows, tol)
        if p < 0:
            return x, it, na
        f = _constraint_row(A, rows, p, a)
        _forward_into(L, a, at, 3 * f)
        up = 0.0
        while True:
            _project(Q, R, na, at, proj, rr, resid)
            t1, drop = np.inf, -1
            for j in range(na):
                if rr[j] > 1e-12 and u[j] / rr[j] < t1:
                    t1, drop = u[j] / rr[j], j
            az = _vdot(resid, resid, n)
            t2 = s / az if az > INDEPENDENT**2 * _vdot(at, at, n) else np.inf
            if t1 == np.inf and t2 == np.inf:
                return x, -1, na
            step = min(t1, t2)
            _backward_into(L, resid, z)
            for i in range(n):
                x[i] -= step * z[i]
            for j in range(na):
                u[j] -= step * rr[j]
            up += step
            if t2 <= t1:
                if na == n:  # more than n independent constraints: rounding; let another solver decide
                    return x, -2, na
                Nt[na], active[na], u[na] = at, p, up
                _extend(Q, R, na, proj, resid, np.sqrt(az))
                na += 1
                break
            _remove(Nt, active, u, drop, na)
            na -= 1
            if not _qr(Nt, na, Q, R, drop):
                return x, -2, na
            s = -ub[p]
            for c in range(3):
                s += A[p, 3 * f + c] * x[3 * f + c]
    return x, -2, na


@kernel()
def _warm_start(A, ub, rows, L, active, count, Nt, Q, R, gt, u, proj, rr, a, at, resid):
    """The guessed active set made a valid start: each constraint in range and independent of those
    kept before it, then the one with the most negative multiplier dropped until none is negative.
    Multipliers of the minimiser over the set (N x = ub_N): u = −(RᵀR)⁻¹ (ub_N + Ñᵀ L⁻¹ g). Leaves
    Q R = Ñ of the set; a, at and resid are scratch."""
    n = len(gt)
    na = 0
    for j in range(min(count, n)):
        p = active[j]
        if p < 0 or p >= len(ub):
            continue
        _forward_into(L, a, at, 3 * _constraint_row(A, rows, p, a))
        _project(Q, R, na, at, proj, rr, resid)
        norm = np.sqrt(_vdot(resid, resid, n))
        if norm > INDEPENDENT * np.sqrt(_vdot(at, at, n)):
            Nt[na], active[na] = at, p
            _extend(Q, R, na, proj, resid, norm)
            na += 1
    while na > 0:
        for j in range(na):   # rhs = −(ub_N + Ñᵀ gt); solve Rᵀ y = rhs, then R u = y
            acc = -(ub[active[j]] + _vdot(Nt[j], gt, n))
            for k in range(j):
                acc -= R[k, j] * proj[k]
            proj[j] = acc / R[j, j]
        for j in range(na - 1, -1, -1):
            acc = proj[j]
            for k in range(j + 1, na):
                acc -= R[j, k] * u[k]
            u[j] = acc / R[j, j]
        worst, drop = 0.0, -1
        for j in range(na):
            if u[j] < worst:
                worst, drop = u[j], j
        if drop < 0:
            break
        _remove(Nt, active, u, drop, na)
        na -= 1
        if not _qr(Nt, na, Q, R, drop):  # rounding made the rest dependent: start cold
            na = 0
    for j in range(na, n):
        u[j] = 0.0
    return na


@kernel()
def _extend(Q, R, k, proj, resid, norm):
    """Q R grown by the vector whose projections on Q[:k] are proj[:k] and whose remainder is resid."""
    for i in range(k):
        R[i, k] = proj[i]
    R[k, k] = norm
    for i in range(len(resid)):
        Q[k, i] = resid[i] / norm


@kernel()
def _minimiser(L, gt, Nt, u, na, work, x):
    """x ← −L⁻ᵀ (L⁻¹ g + Ñ u): the minimiser for the active set's multipliers u."""
    n = len(gt)
    for i in range(n):
        work[i] = gt[i]
    for j in range(na):
        for i in range(n):
            work[i] += u[j] * Nt[j, i]
    _backward_into(L, work, x)
    for i in range(n):
        x[i] = -x[i]


@kernel()
def _project(Q, R, na, at, proj, rr, resid):
    """Split ã = L⁻¹ a over the active set's span: rr = R⁻¹ Qᵀ ã (the multipliers' rates) and
    resid = ã − Q Qᵀ ã (the part that moves x)."""
    n = len(at)
    for i in range(n):
        resid[i] = at[i]
    for j in range(na):
        proj[j] = _vdot(Q[j], at, n)
        for i in range(n):
            resid[i] -= proj[j] * Q[j, i]
    for j in range(na - 1, -1, -1):
        acc = proj[j]
        for k in range(j + 1, na):
            acc -= R[j, k] * rr[k]
        rr[j] = acc / R[j, j]


@kernel()
def _remove(Nt, active, u, drop, na):
    for j in range(drop, na - 1):
        Nt[j], active[j], u[j] = Nt[j + 1], active[j + 1], u[j + 1]
    u[na - 1] = 0.0


@kernel()
def _most_violated(A, x, ub, rows, tol):
    """The constraint of A x ≤ ub violated the most beyond ``tol`` and its violation; (−1, 0) if none."""
    best, worst = -1, tol
    for f in range(len(rows) - 1):
        j = 3 * f
        for r in range(rows[f], rows[f + 1]):
            s = A[r, j] * x[j] + A[r, j + 1] * x[j + 1] + A[r, j + 2] * x[j + 2] - ub[r]
            if s > worst:
                best, worst = r, s
    return best, (worst if best >= 0 else 0.0)


@kernel()
def _constraint_row(A, rows, r, out):
    """out ← constraint r's row of the block-diagonal A (dense); returns its foot."""
    f = 0
    while rows[f + 1] <= r:
        f += 1
    out[:] = 0.0
    for c in range(3):
        out[3 * f + c] = A[r, 3 * f + c]
    return f


@kernel()
def _vdot(a, b, n):
    acc = 0.0
    for i in range(n):
        acc += a[i] * b[i]
    return acc


@kernel()
def _forward_into(L, b, y, start):
    """y ← L⁻¹ b for lower-triangular L and b zero before ``start`` (a constraint's row: its foot's
    three impulses), whose y is zero there too; ``start`` = 0 for a dense b."""
    for i in range(start):
        y[i] = 0.0
    for i in range(start, len(b)):
        acc = b[i]
        for k in range(start, i):
            acc -= L[i, k] * y[k]
        y[i] = acc / L[i, i]


@kernel()
def _backward_into(L, y, x):
    """x ← L⁻ᵀ y for lower-triangular L."""
    for i in range(len(y) - 1, -1, -1):
        acc = y[i]
        for k in range(i + 1, len(y)):
            acc -= L[k, i] * x[k]
        x[i] = acc / L[i, i]


@kernel()
def _qr(N, k, Q, R, start):
    """Q R = N by modified Gram–Schmidt for the vectors N[:k] (rows, as Q's: contiguous), which the
    active set keeps independent; False if rounding has made them dependent after all. Q R of
    N[:start] is taken as it stands (vector j's factors depend on N[:j + 1] alone: after a removal,
    only those behind it change)."""
    n = N.shape[1]
    for j in range(start, k):
        for i in range(n):
            Q[j, i] = N[j, i]
        for i in range(j):
            R[i, j] = _vdot(Q[i], Q[j], n)
            for c in range(n):
                Q[j, c] -= R[i, j] * Q[i, c]
        R[j, j] = np.sqrt(_vdot(Q[j], Q[j], n))
        if not R[j, j] > INDEPENDENT * np.sqrt(_vdot(N[j], N[j], n)):
            return False
        for c in range(n):
            Q[j, c] /= R[j, j]
    return True


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
    settings = dict(verbose=False, eps_abs=1e-7, eps_rel=1e-7, max_iter=50_000, polishing=False)

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
