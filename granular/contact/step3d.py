"""Both 3D contact laws compiled: a MuJoCo step's impulses in one kernel call (issues 50 and 51).

:func:`contact_step` is :func:`granular.contact.law3d.step` in numba's subset (that module's
docstring states the laws; its numpy code is the reference these kernels are tested against). What
differs: the QP is the dual active-set method of :mod:`granular.contact.active_set` (the reference
calls quadprog, the same method), started from the last step's active set, and where more feet's
impulses than the dofs they move make it singular it takes proximal steps (:data:`PROXIMAL`: v⁺
within 1e-5 of quadprog's, ``tests/test_step3d.py``); data-flow's Newton solve takes the data map's
Jacobian exactly (:func:`granular.wrench.flow3d.flow_into`, whose wrench both share), where the
reference differences it. The caller falls back to the reference when the kernel's QP does not solve.
"""
from __future__ import annotations

import numpy as np
from granular.compiled import kernel

from granular.contact.active_set import (NATIVE_TOLERANCE, _backward_into, _forward_into, dual_active_set,
                                        proximal_active_set)
from granular.contact.law3d import (ARMIJO, BACKTRACK, INSIDE, ITERATIONS, NEWTON_STEPS, NEWTON_TOLERANCE, RIDGE,
                                    TOLERANCE, WORK_TOLERANCE)
from granular.contact.reduction import cholesky
from granular.wrench.flow import solve_into
from granular.wrench.flow3d import _at_arm, coefficients, flow_into

#: :func:`contact_step`'s status: solved; solved, but data-flow's Newton failed and the step kept
#: max-dissipation's impulses (``law3d.Step.fell_back``); the QP did not solve (use the reference).
SOLVED, FELL_BACK, UNSOLVED = 0, 1, -1
#: Where P is too near singular for the dual active-set method (a quadruped's four feet: 24 impulses
#: on 18 dofs), proximal steps with this ridge (× tr P / its size), at most this many.
PROXIMAL, PROXIMAL_STEPS = 1e-6, 16


@kernel("f8[:, ::1], f8[::1], f8[::1], f8[:, :, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], "
        "f8[:, :, ::1], f8[::1], f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[::1], i8, f8, i8, i8[::1]")
def contact_step(Mt, v_free, v0, J, arms, grain, A, ub, points, phis, Kinv, KT, U, geometry, tail, h, law, warm):
    """(v⁺ (nv,), impulses (N, 6) about p_r, sticking (N,), status, the generalized impulse Σ J_rᵀ c
    (nv,)) of one step: ``law`` 0 is
    max-dissipation, 1 data-flow. Arguments as :func:`granular.contact.law3d.step` takes them, unpacked:
    the effective mass M̃, v_free, the velocity before the step v0 (data-flow's first guess; length 0:
    none), per foot J (N, 6, nv), arms (N, 3), grains' masses (N, 6), the
    fixed normals A (K, 6) and offsets ``ub`` = h b (N, K), the extreme wrenches (N, m, 6), the
    feet's tilts φ (N,), and the data map's K⁻¹ (m, m), its constant tail parts KT (m + 7, 7),
    directions U (m, 6), geometry (7,) and its tail's size (:class:`granular.wrench.flow3d.SphereMap`).
    ``warm`` (6N + 1,): the active set of the QP over every foot, its size first, taken as the start
    (say, the last step's with the same feet in the medium; any set is a valid start) and left there
    for the next step."""
    N, nv = J.shape[0], len(v_free)
    if not np.isfinite(v_free).all():  # a blown-up state: the reference says how (max and min drop NaN)
        return v_free.copy(), np.zeros((N, 6)), np.zeros(N, np.bool_), UNSOLVED, np.zeros(nv)
    L = cholesky(Mt)
    Jr = np.empty((N, 6, nv))
    B = np.empty((N, nv, 6))  # M̃⁻¹ J_rᵀ per foot: an impulse's change of velocity
    y, col = np.empty(nv), np.empty(nv)
    for n in range(N):
        _at_r(J[n], arms[n], Jr[n])
        for a in range(6):
            _forward_into(L, Jr[n, a], y, 0)
            _backward_into(L, y, col)
            B[n, :, a] = col
    H = Mt.copy()
    dragged = False
    for n in range(N):
        for a in range(6):
            if grain[n, a] != 0.0:
                dragged = True
                for p in range(nv):
                    for q in range(nv):
                        H[p, q] += J[n, a, p] * grain[n, a] * J[n, a, q]
    every = np.ones(N, np.bool_)
    c, ok, size = _qp(B, H, v_free, A, ub, every, np.zeros((N, 6)), warm[1:], warm[0])
    warm[0] = size
    if ok and dragged and _largest_work(Jr, c, _moved(B, v_free, c, every)) > WORK_TOLERANCE:
        # the grains let the impulses do work on the bodies alone: drop them, as law3d does (from
        # the first QP's active set)
        H = Mt.copy()
        c, ok, size = _qp(B, H, v_free, A, ub, every, np.zeros((N, 6)), warm[1:], warm[0])
        warm[0] = size
    if not (ok and np.isfinite(c).all()):
        return _out(Jr, v_free.copy(), c, np.zeros(N, np.bool_), UNSOLVED)
    sticking = _inside(A, ub, c)
    if law == 0:
        return _out(Jr, _moved(B, v_free, c, every), c, sticking, SOLVED)
    md, slide, v = c, ~sticking, v_free.copy()
    if sticking.all():
        return _out(Jr, _moved(B, v_free, c, every), c, sticking, SOLVED)
    Q = np.zeros((N, U.shape[0] + tail, 6))  # the sliding feet's interpolants, solved in one call
    idx = np.flatnonzero(slide)
    solved = coefficients(Kinv, KT, U, geometry, tail, phis[idx], np.ascontiguousarray(points[idx]))
    for k in range(len(idx)):
        Q[idx[k]] = solved[k]
    for it in range(ITERATIONS):
        base = _moved(B, v_free, c, sticking)
        # from the velocity before the step where given, else (or where that fails) from
        # max-dissipation's (law3d.step says why); then from the last root
        ok = False
        if it > 0 or len(v0) == nv:
            v, flows, ok = _newton(base, v if it > 0 else v0, B, J, arms, Q, U, geometry, phis, slide, h)
        if it == 0 and not ok:
            v, flows, ok = _newton(base, _moved(B, v_free, md, every), B, J, arms, Q, U, geometry, phis, slide, h)
        if not ok:
            return _out(Jr, _moved(B, v_free, md, every), md, _inside(A, ub, md), FELL_BACK)
        c_new = c.copy()
        for n in range(N):
            if slide[n]:
                c_new[n] = h * flows[n]
        if not sticking.any():  # every foot slides: nothing else to settle
            c = c_new
            break
        held, ok, _ = _qp(B, H, v_free, A, ub, sticking, c_new, np.zeros(6 * N, np.int64), 0)
        if not ok:
            return _out(Jr, v_free.copy(), c, sticking, UNSOLVED)
        c_new = held
        settled = np.abs(c_new - c).max() <= TOLERANCE * max(np.abs(c_new).max(), 1e-300)
        c = c_new
        if settled:
            break
    return _out(Jr, _moved(B, v_free, c, every), c, sticking, SOLVED)


@kernel()
def _at_r(J, arm, out):
    """out (6, nv) ← the Jacobian of the twist at p_r = p_center + arm (law3d.Feet.Jr): each column
    moved by :func:`_at_arm`."""
    for p in range(J.shape[1]):
        _at_arm(J[:, p], arm[0], arm[1], arm[2], out[:, p])


@kernel()
def _out(Jr, v, c, sticking, status):
    """:func:`contact_step`'s result, with the generalized impulse Σ J_rᵀ c."""
    impulse = np.zeros(len(v))
    for n in range(Jr.shape[0]):
        for a in range(6):
            for p in range(len(v)):
                impulse[p] += Jr[n, a, p] * c[n, a]
    return v, c, sticking, status, impulse


@kernel()
def _twist(J, v, out):
    for a in range(6):
        acc = 0.0
        for p in range(len(v)):
            acc += J[a, p] * v[p]
        out[a] = acc


@kernel()
def _moved(B, v_free, c, which):
    """v_free + Σ_{n in which} M̃⁻¹ J_rᵀ c_n."""
    v = v_free.copy()
    for n in range(B.shape[0]):
        if which[n]:
            for p in range(len(v)):
                for a in range(6):
                    v[p] += B[n, p, a] * c[n, a]
    return v


@kernel()
def _largest_work(Jr, c, v):
    """The largest work a foot's impulse does on the bodies moving at v (law3d._work)."""
    top = -np.inf
    for n in range(Jr.shape[0]):
        acc = 0.0
        for a in range(6):
            for p in range(len(v)):
                acc += c[n, a] * Jr[n, a, p] * v[p]
        top = max(top, acc)
    return top


@kernel()
def _inside(A, ub, c):
    """Per foot: its impulse strictly inside h W (law3d._inside)."""
    N, K = ub.shape
    out = np.zeros(N, np.bool_)
    for n in range(N):
        top, least = 1e-300, np.inf
        for k in range(K):
            top = max(top, ub[n, k])
            s = ub[n, k]
            for a in range(6):
                s -= A[k, a] * c[n, a]
            least = min(least, s)
        out[n] = least > INSIDE * top
    return out


@kernel()
def _qp(B, H, v_free, A, ub, free, held, active, count):
    """law3d._qp: min ½ v⁺ᵀ H v⁺ over the impulses of the feet ``free``, the others ``held``, with
    A c_n ≤ ub_n, by the dual active-set method from the set ``active[:count]``. Returns (all
    impulses (N, 6), solved, the final set's size, left in ``active``)."""
    nv, K = B.shape[1], A.shape[0]
    idx = np.flatnonzero(free)
    F = len(idx)
    out = held.copy()
    if F == 0:
        return out, True, 0
    base = _moved(B, v_free, held, ~free)
    n = 6 * F
    BF = np.empty((nv, n))
    for k in range(F):
        BF[:, 6 * k:6 * k + 6] = B[idx[k]]
    HB = H @ BF
    P = BF.T @ HB
    g = HB.T @ base
    trace = 0.0
    for i in range(n):
        trace += P[i, i]
    for i in range(n):
        for j in range(i):
            P[i, j] = 0.5 * (P[i, j] + P[j, i])
            P[j, i] = P[i, j]
        P[i, i] += RIDGE * trace / n
    Ablock = np.zeros((K * F, n))
    bound = np.empty(K * F)
    rows = np.arange(F + 1) * K
    top = 1e-12
    for k in range(F):
        for r in range(K):
            for a in range(6):  # element by element: a row slice's view costs more than its six copies
                Ablock[K * k + r, 6 * k + a] = A[r, a]
            bound[K * k + r] = ub[idx[k], r]
            top = max(top, abs(ub[idx[k], r]))
    x, status, size = np.zeros(n), -3, 0
    if n <= nv:  # with more impulses than dofs P is singular (rank ≤ nv): the plain method would refuse it
        x, status, size = dual_active_set(P, g, Ablock, bound, rows, NATIVE_TOLERANCE * top, active, count)
    if status == -3:
        # P too near singular for the solver (more impulses than the dofs they move): proximal
        # steps converge to the QP's solution; v⁺ settles within a few (its error shrinks by
        # ε / (λ + ε) per step)
        x, status, size = proximal_active_set(P, g, Ablock, bound, rows, NATIVE_TOLERANCE * top, active, count,
                                              PROXIMAL * trace / n, BF, base, TOLERANCE, PROXIMAL_STEPS)
    for k in range(F):
        out[idx[k]] = x[6 * k:6 * k + 6]
    return out, status >= 0, size if status >= 0 else 0


@kernel()
def _newton(base, start, B, J, arms, Q, U, geometry, phis, slide, h):
    """law3d._slide: Newton's method on v = base + h Σ_slide M̃⁻¹ J_rᵀ w(J v) from ``start``, with w's
    exact Jacobian, each step backtracked until the residual falls (law3d.BACKTRACK). Returns (v, the
    sliding feet's wrenches w(J v) (N, 6) at that v, converged).

    The Newton matrix G = I − h Σ_n B_n dW_n J_n (B_n = M̃⁻¹ J_rnᵀ) differs from I by rank 6 per
    sliding foot, so each step solves it through the feet (Woodbury): z from
    (I − h D dW) z = J r, the blocks D_ab = J_a B_b made once, then G⁻¹ r = r + h Σ_b B_b dW_b z_b.
    Six unknowns per sliding foot, and no nv × nv matrix built at each evaluation (the same Newton
    steps as with G itself, to round-off)."""
    nv, N = len(base), B.shape[0]
    idx = np.flatnonzero(slide)
    S = len(idx)
    D = np.empty((6 * S, 6 * S))
    for a in range(S):
        for b in range(S):
            for i in range(6):
                for k in range(6):
                    acc = 0.0
                    for p in range(nv):
                        acc += J[idx[a], i, p] * B[idx[b], p, k]
                    D[6 * a + i, 6 * b + k] = acc
    v, trial = start.copy(), np.empty(nv)
    residual, flows, slopes = np.empty(nv), np.zeros((N, 6)), np.zeros((N, 6, 6))
    trial_residual, trial_flows, trial_slopes = np.empty(nv), np.zeros((N, 6)), np.zeros((N, 6, 6))
    step, M, z = np.empty(nv), np.empty((6 * S, 6 * S)), np.empty((6 * S, 1))
    work, radial = np.empty((13, 6)), np.empty(U.shape[0])
    size = _residual(v, base, B, J, arms, Q, U, geometry, phis, slide, h, residual, flows, slopes, work, radial)
    for _ in range(NEWTON_STEPS):
        if _converged(v, residual):
            return v, flows, True
        _newton_step(D, B, J, idx, slopes, residual, h, M, z, step)
        alpha, accepted = 1.0, False
        for _ in range(BACKTRACK + 1):
            for p in range(nv):
                trial[p] = v[p] - alpha * step[p]
            trial_size = _residual(trial, base, B, J, arms, Q, U, geometry, phis, slide, h, trial_residual,
                                   trial_flows, trial_slopes, work, radial)
            if trial_size <= (1.0 - ARMIJO * alpha) * size:
                accepted = True
                break
            alpha *= 0.5
        if not accepted:
            return v, flows, False
        v, trial = trial, v
        residual, trial_residual = trial_residual, residual
        flows, trial_flows = trial_flows, flows
        slopes, trial_slopes = trial_slopes, slopes
        size = trial_size
    return v, flows, _converged(v, residual)


@kernel()
def _newton_step(D, B, J, idx, slopes, residual, h, M, z, step):
    """step ← G⁻¹ residual (:func:`_newton`'s G, through the sliding feet ``idx``: M = I − h D dW,
    z = M⁻¹ J r, step = r + h Σ_b B_b dW_b z_b); M and z (6S, 1) are scratch."""
    nv, S = len(residual), len(idx)
    for a in range(S):
        for i in range(6):
            acc = 0.0
            for p in range(nv):
                acc += J[idx[a], i, p] * residual[p]
            z[6 * a + i, 0] = acc
            for b in range(S):
                dW = slopes[idx[b]]
                for k in range(6):
                    acc = 0.0
                    for l in range(6):
                        acc += D[6 * a + i, 6 * b + l] * dW[l, k]
                    M[6 * a + i, 6 * b + k] = (1.0 if a == b and i == k else 0.0) - h * acc
    solve_into(M, z)
    for p in range(nv):
        step[p] = residual[p]
    for b in range(S):
        n, dW = idx[b], slopes[idx[b]]
        for l in range(6):
            acc = 0.0
            for k in range(6):
                acc += dW[l, k] * z[6 * b + k, 0]
            for p in range(nv):
                step[p] += h * B[n, p, l] * acc


@kernel(inline=True)
def _converged(v, residual):
    big, err = 1e-12, 0.0
    for p in range(len(v)):
        big, err = max(big, abs(v[p])), max(err, abs(residual[p]))
    return err <= NEWTON_TOLERANCE * big


@kernel()
def _residual(v, base, B, J, arms, Q, U, geometry, phis, slide, h, residual, flows, slopes, work, radial):
    """residual ← v − base − h Σ_slide M̃⁻¹ J_rᵀ w(J v), flows[n] ← each sliding foot's w and
    slopes[n] ← its Jacobian dw/dtwist; returns |residual|. ``work`` (13, 6) and ``radial`` (m,):
    scratch."""
    nv = len(base)
    twist = work[12]
    for p in range(nv):
        residual[p] = v[p] - base[p]
    for n in range(B.shape[0]):
        if not slide[n]:
            continue
        _twist(J[n], v, twist)
        w = flows[n]
        flow_into(Q[n], U, geometry, phis[n], arms[n], twist, w, slopes[n], work[:12], radial)
        for p in range(nv):
            acc = 0.0
            for a in range(6):
                acc += B[n, p, a] * w[a]
            residual[p] -= h * acc
    size = 0.0
    for p in range(nv):
        size += residual[p] * residual[p]
    return np.sqrt(size)
