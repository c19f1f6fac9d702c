"""The contact QP's reduction to the contact impulses (Zhu et al. 2019, eq. 2 with v⁺ eliminated):
P = Bᵀ H B, g = Bᵀ H v_free, B = M⁻¹ J_tᵀ, H = M + Σ J_pᵀ M_g J_p, v_free = v + M⁻¹ h (k + J_uᵀ u)
(:mod:`granular.contact.qp` states the QP). Dense for small systems; by the tree's branches
(leaves first, so a leg's block is factored alone) for large ones.
"""
from __future__ import annotations

import numpy as np
from granular.compiled import kernel


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


