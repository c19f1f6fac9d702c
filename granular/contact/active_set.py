"""The native QP solver's kernels: a dual active-set method (Goldfarb–Idnani) for
min ½ xᵀ H x + gᵀ x subject to A x ≤ ub with A block-diagonal by feet, compiled with the step's
kernels so that the fused step calls it (:class:`granular.contact.solvers.NativeSolver` wraps it).
"""
from __future__ import annotations

import numpy as np
from granular.compiled import kernel

from granular.contact.reduction import cholesky


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
    (foot f's facets rows[f]:rows[f + 1] act on its own w impulses x[wf:wf + w] alone, w = len(x) /
    feet: 3 in the plane, 6 in space): the dual active-set method of
    Goldfarb & Idnani (1983), the method quadprog implements. From the minimiser over an active set
    with non-negative multipliers it adds the most violated constraint until none is violated by
    more than ``tol``, keeping the multipliers non-negative on the way (a constraint whose
    multiplier would turn negative leaves the set), so the answer is the QP's own.

    Warm start: ``active[:count]`` (say, the last step's set) is taken as the first active set,
    less the constraints that are out of range, dependent on the others or whose multipliers come
    out negative (a dual active-set method may start from any set with non-negative multipliers).
    The QR factorisation of the set (of L⁻¹ N, H = L Lᵀ) grows as a constraint joins and is downdated
    by Givens rotations as one leaves (:func:`_downdate`). On return ``active[:size]`` is the final set.
    Returns (x, status, size): status ≥ 0 the iterations taken; −1 an infeasible step (impossible
    when x = 0 is feasible), −2 the iteration limit (cycling on a degenerate vertex), −3 H too
    ill-conditioned to trust L⁻¹ (more impulses than the degrees of freedom they move, as a rover's
    wheels: P is singular but for its ridge)."""
    n = len(g)
    L = cholesky(H)
    if not _conditioned(L):
        return np.zeros(n), -3, 0
    # two allocations, not thirteen: at a quadruped's size they cost as much as the flops
    matrices, vectors = np.empty((3, n, n)), np.empty((9, n))
    _forward_into(L, g, vectors[0], 0)           # L⁻¹ g
    na = _warm_start(A, ub, rows, L, active, count, matrices, vectors)
    status, na = _iterate(A, ub, rows, tol, L, active, na, matrices, vectors)
    return vectors[7], status, na


@kernel("f8[:, ::1], f8[::1], f8[:, ::1], f8[::1], i8[::1], f8, i8[::1], i8, f8, f8[:, ::1], f8[::1], f8, i8")
def proximal_active_set(H, g, A, ub, rows, tol, active, count, ridge, V, base, rtol, steps):
    """:func:`dual_active_set` for H positive semidefinite (more impulses than the dofs they move):
    proximal steps x_{k+1} = argmin ½ xᵀ H x + gᵀ x + ½ ``ridge`` |x − x_k|² subject to A x ≤ ub, from
    x_0 = 0, which converge to a solution of the QP (Rockafellar 1976); each step's error in the
    directions H sees shrinks by ridge / (λ + ridge). The steps share one factorisation of H + ridge I
    and go on from the last one's active set and its QR factors (only g changes between them). They
    stop when the image V x (say, the velocity base + V x the impulses make; the part of x that
    moves nothing is not unique) moves by at most ``rtol`` × its size, after at most ``steps``.
    Returns (x, status, size) as :func:`dual_active_set`; status −2 also where V x did not settle."""
    n = len(g)
    Hr = H.copy()
    for i in range(n):
        Hr[i, i] += ridge
    L = cholesky(Hr)
    if not _conditioned(L):
        return np.zeros(n), -3, 0
    matrices, vectors = np.empty((3, n, n)), np.empty((9, n))
    gt, x = vectors[0], vectors[7]
    shifted, x_old = g.copy(), np.zeros(n)
    _forward_into(L, shifted, gt, 0)
    na = _warm_start(A, ub, rows, L, active, count, matrices, vectors)
    status, na = _iterate(A, ub, rows, tol, L, active, na, matrices, vectors)
    for _ in range(steps - 1):
        if status < 0:
            return x, status, na
        for i in range(n):  # the next step's g − ridge x_k, and its minimiser over the same set
            shifted[i] = g[i] - ridge * x[i]
            x_old[i] = x[i]
        _forward_into(L, shifted, gt, 0)
        na = _drop_negative(ub, active, na, matrices, vectors)
        status, na = _iterate(A, ub, rows, tol, L, active, na, matrices, vectors)
        if status >= 0 and _settled(V, base, x, x_old, rtol):
            return x, status, na
    return x, (-2 if status >= 0 else status), na


@kernel()
def _settled(V, base, x, x_old, rtol):
    """|V (x − x_old)| ≤ rtol |base + V x| (max norms)."""
    moved, size = 0.0, 1e-12
    for p in range(V.shape[0]):
        dv, v = 0.0, base[p]
        for i in range(len(x)):
            dv += V[p, i] * (x[i] - x_old[i])
            v += V[p, i] * x[i]
        moved, size = max(moved, abs(dv)), max(size, abs(v))
    return moved <= rtol * size


@kernel()
def _conditioned(L):
    """L's diagonal within :data:`CONDITION` of its largest entry (not NaN: every pivot positive)."""
    lo, hi = np.inf, 0.0
    for i in range(L.shape[0]):
        lo, hi = min(lo, L[i, i]), max(hi, L[i, i])
    return hi > 0.0 and lo >= CONDITION * hi


@kernel()
def _iterate(A, ub, rows, tol, L, active, na, matrices, vectors):
    """The dual active-set iterations from the set ``active[:na]`` (QR factors and multipliers in
    ``matrices`` and ``vectors`` as :func:`_warm_start` leaves them), the minimiser in vectors[7]:
    returns (status, the final set's size), :func:`dual_active_set`'s status."""
    n = len(vectors[0])
    Nt, Q, R = matrices[0], matrices[1], matrices[2]   # Nt: L⁻¹ a_j of the active constraints, one per row
    gt, u, proj, rr, a, at, resid, x, z = (vectors[0], vectors[1], vectors[2], vectors[3], vectors[4], vectors[5],
                                           vectors[6], vectors[7], vectors[8])
    _minimiser(L, gt, Nt, u, na, resid, x)
    for it in range(4 * (len(ub) + n) + 10):
        p, s = _most_violated(A, x, ub, rows, tol)
        if p < 0:
            return it, na
        f = _constraint_row(A, rows, p, a)
        _forward_into(L, a, at, _width(rows, n) * f)
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
                return -1, na
            step = min(t1, t2)
            _backward_into(L, resid, z)
            for i in range(n):
                x[i] -= step * z[i]
            for j in range(na):
                u[j] -= step * rr[j]
            up += step
            if t2 <= t1:
                if na == n:  # more than n independent constraints: rounding; let another solver decide
                    return -2, na
                Nt[na], active[na], u[na] = at, p, up
                _extend(Q, R, na, proj, resid, np.sqrt(az))
                na += 1
                break
            if drop < 0:  # neither step is a number (NaN in the iterates): let another solver decide
                return -1, na
            _remove(Nt, active, u, drop, na)
            na -= 1
            _downdate(Q, R, na, drop)
            s = -ub[p]
            w = _width(rows, n)
            for c in range(w * f, w * f + w):
                s += A[p, c] * x[c]
    return -2, na


@kernel()
def _warm_start(A, ub, rows, L, active, count, matrices, vectors):
    """The guessed active set made a valid start: each constraint in range and independent of those
    kept before it, then :func:`_drop_negative`. Leaves Q R = Ñ of the set and its multipliers in
    ``matrices`` and ``vectors`` (:func:`_iterate`'s layout; L⁻¹ g already in vectors[0])."""
    n = L.shape[0]
    Nt, Q, R = matrices[0], matrices[1], matrices[2]
    proj, rr, a, at, resid = vectors[2], vectors[3], vectors[4], vectors[5], vectors[6]
    na = 0
    for j in range(min(count, n)):
        p = active[j]
        if p < 0 or p >= len(ub):
            continue
        _forward_into(L, a, at, _width(rows, n) * _constraint_row(A, rows, p, a))
        _project(Q, R, na, at, proj, rr, resid)
        norm = np.sqrt(_vdot(resid, resid, n))
        if norm > INDEPENDENT * np.sqrt(_vdot(at, at, n)):
            Nt[na], active[na] = at, p
            _extend(Q, R, na, proj, resid, norm)
            na += 1
    return _drop_negative(ub, active, na, matrices, vectors)


@kernel()
def _drop_negative(ub, active, na, matrices, vectors):
    """The multipliers of the minimiser over the set (N x = ub_N), u = −(RᵀR)⁻¹ (ub_N + Ñᵀ L⁻¹ g),
    into vectors[1], the constraint with the most negative one dropped until none is negative;
    returns the set's size."""
    n = vectors.shape[1]
    Nt, Q, R = matrices[0], matrices[1], matrices[2]
    gt, u, proj = vectors[0], vectors[1], vectors[2]
    while na > 0:
        for j in range(na):   # rhs = −(ub_N + Ñᵀ gt); solve Rᵀ y = rhs, then R u = y
            acc = -(ub[active[j]] + _rowdot(Nt, j, gt, n))
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
        _downdate(Q, R, na, drop)
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
        proj[j] = _rowdot(Q, j, at, n)
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
    w = _width(rows, len(x))
    for f in range(len(rows) - 1):
        j = w * f
        for r in range(rows[f], rows[f + 1]):
            if w == 3:  # the plane's hot loop, unrolled
                s = A[r, j] * x[j] + A[r, j + 1] * x[j + 1] + A[r, j + 2] * x[j + 2] - ub[r]
            elif w == 6:  # space's, unrolled in the loop's order (the same sums)
                s = (((((-ub[r] + A[r, j] * x[j]) + A[r, j + 1] * x[j + 1]) + A[r, j + 2] * x[j + 2])
                      + A[r, j + 3] * x[j + 3]) + A[r, j + 4] * x[j + 4]) + A[r, j + 5] * x[j + 5]
            else:
                s = -ub[r]
                for c in range(j, j + w):
                    s += A[r, c] * x[c]
            if s > worst:
                best, worst = r, s
    return best, (worst if best >= 0 else 0.0)


@kernel(inline=True)
def _width(rows, n):
    """Impulses per foot: n over the feet (rows has one entry more than there are feet)."""
    return n // max(len(rows) - 1, 1)


@kernel()
def _constraint_row(A, rows, r, out):
    """out ← constraint r's row of the block-diagonal A (dense); returns its foot."""
    f = 0
    while rows[f + 1] <= r:
        f += 1
    out[:] = 0.0
    w = _width(rows, len(out))
    for c in range(w * f, w * f + w):
        out[c] = A[r, c]
    return f


@kernel()
def _vdot(a, b, n):
    acc = 0.0
    for i in range(n):
        acc += a[i] * b[i]
    return acc


@kernel(inline=True)
def _rowdot(A, r, b, n):
    """:func:`_vdot` of A's row r and b, without the row's view (whose reference counting, in
    the active set's inner loops, cost as much as the products)."""
    acc = 0.0
    for i in range(n):
        acc += A[r, i] * b[i]
    return acc


@kernel()
def _forward_into(L, b, y, start):
    """y ← L⁻¹ b for lower-triangular L and b zero before ``start`` (a constraint's row: its foot's
    impulses), whose y is zero there too; ``start`` = 0 for a dense b."""
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
def _downdate(Q, R, na, drop):
    """Q R of the active set after its constraint ``drop`` left it (the set now ``na`` long): R's
    columns after ``drop`` move one left, which leaves R upper Hessenberg from there, and Givens
    rotations of rows j, j + 1 of R (and of Q's rows, its columns) make it triangular again (Golub &
    Van Loan, Matrix Computations, §12.5.2): O(na (na + n)) flops, where rebuilding the factors from
    ``drop`` on by Gram–Schmidt took O(na² n), most of the quadruped's QP."""
    n = Q.shape[1]
    for j in range(drop, na):
        for i in range(j + 2):
            R[i, j] = R[i, j + 1]
    for j in range(drop, na):
        a, b = R[j, j], R[j + 1, j]
        r = np.hypot(a, b)
        c, s = a / r, b / r
        for k in range(j, na):
            x, y = R[j, k], R[j + 1, k]
            R[j, k], R[j + 1, k] = c * x + s * y, c * y - s * x
        for i in range(n):
            x, y = Q[j, i], Q[j + 1, i]
            Q[j, i], Q[j + 1, i] = c * x + s * y, c * y - s * x
