"""Contact laws: which wrench a foot in the medium gets, given W(θ) and how the foot moves.

``max-dissipation``: the paper's eq. (2) as it stands (:mod:`granular.contact.qp`): the impulses
minimise the kinetic energy of the bodies and dragged grains over W(θ), so a sliding foot gets
the hull's point of least power, which is the recorded wrench only for associated data.

``data-flow``: the same W(θ) decides who sticks and who slides (sticking whenever the load a foot
would need to stay put lies inside W(θ): the QP's answer is then strictly inside W), but a sliding
foot gets the data's own wrench for its direction of motion (:mod:`granular.wrench.flow`), as
solvers for non-associated Coulomb friction do. The sliding feet's post-step twists solve
v = a + h D w(v) (Newton's method, compiled; D their Delassus matrix), the sticking feet's
impulses solve the QP with the sliding ones' held, alternating until the impulses settle.

Energy: a sticking foot's impulse solves a QP whose origin is feasible, and a sliding foot's
wrench does no work on it: where the data's would, it is the nearest that does none
(:func:`~granular.wrench.flow.dissipative_into`, inside Newton's method). The step falls back to
max-dissipation when Newton's method fails (see :func:`granular.simulation.step.step` for the
grain term's guard).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from granular.compiled import kernel

from granular.contact.qp import ContactQP, block_excess
from granular.contact.reduction import strictly_convex
from granular.wrench.flow import TAILS, DirectionMap, coefficients, dissipative_into, interpolate_into, solve_into

LAWS = ("max-dissipation", "data-flow")
#: The default: it scores better on the held-out DEM set than the paper's law (issue 15; README, "How
#: accurate is it"). The paper's slide (Fig. 10c) is max-dissipation's, and its scenario says so.
DEFAULT_LAW = "data-flow"
#: Fixed-point iterations of data-flow per step, and its relative tolerance on the impulses.
ITERATIONS = 8
TOLERANCE = 1e-6
#: Newton steps for the sliding feet's twists, and their tolerance relative to the twists' size.
NEWTON_STEPS = 20
NEWTON_TOLERANCE = 1e-10
#: Work (J) the contact impulses may do on the bodies in one step and count as none (round-off):
#: past it, with the grain term, the step drops the grains (simulation.step).
WORK_TOLERANCE = 1e-10


@dataclass
class Restricted:
    """The reduced QP ½ xᵀ P x + gᵀ x, A x ≤ ub of some feet with the others' impulses held
    (the solvers' reduced-form interface; cvxpy's paper form takes :func:`subproblem`)."""

    P: np.ndarray
    g: np.ndarray
    A: np.ndarray
    ub: np.ndarray
    rows: np.ndarray

    @property
    def reduced(self):
        return self.P, self.g

    @cached_property
    def c_free(self):
        """The minimiser if no constraint binds (the dense solvers start from it)."""
        return np.linalg.solve(strictly_convex(self.P), -self.g)

    def excess(self, c):
        return block_excess(self.A, c, self.ub, self.rows)

    def stacked_constraints(self):
        return self.A, self.ub


def subproblem(qp: ContactQP, keep, held):
    """The paper-form QP of the feet ``keep`` (bool per foot) with the other feet's impulses
    ``held`` (3N,) added to the applied impulse; every foot's dragged grains stay in the objective,
    as in the reduced form's P."""
    rows3 = np.repeat(keep, 3)
    block = np.repeat(keep, np.diff(qp.rows))
    return ContactQP(M=qp.M, v=qp.v, impulse=qp.impulse + qp.Jt[~rows3].T @ held[~rows3],
                     Jt=qp.Jt[rows3], Jp=qp.Jp, Mg=qp.Mg, A=qp.A[block][:, rows3], ub=qp.ub[block],
                     rows=_kept_rows(qp, keep), branches=qp.branches)


def _kept_rows(qp: ContactQP, keep):
    """Where each kept foot's block of facets starts, once the other feet's are dropped."""
    return np.concatenate([[0], np.cumsum(np.diff(qp.rows)[keep])]).astype(np.int64)


def _sticking_solver(qp: ContactQP, sticky, solver):
    """solve(held) → the sticking feet's impulses with the sliding feet's ``held``."""
    if solver.name == "cvxpy":
        return lambda held: solver.solve(subproblem(qp, sticky, held))
    keep3 = np.repeat(sticky, 3)
    block = np.repeat(sticky, np.diff(qp.rows))
    P, g = qp.reduced
    P_kk, P_kh = P[keep3][:, keep3], P[keep3][:, ~keep3]
    A, ub = qp.A[block][:, keep3], qp.ub[block]
    rows = _kept_rows(qp, sticky)
    return lambda held: solver.solve(Restricted(P_kk, g[keep3] + P_kh @ held[~keep3], A, ub, rows))


@kernel("f8[:], f8[::1], f8[::1]")
def twist_map(phi, r_offset, velocity_scale):
    """G (k, 3, 3): a foot's twist at p_r (F_c axes) → its twist at p_center in the data's
    velocity-scaled space, x = diag(1/S) T v_r, T = :func:`granular.frames.twist_transfer` to
    p_center − p_r = −r a(φ); written out so that the step stays compiled (a test compares)."""
    G = np.zeros((len(phi), 3, 3))
    for f in range(len(phi)):
        arm_x, arm_z = r_offset[f] * np.sin(phi[f]), -r_offset[f] * np.cos(phi[f])
        for a in range(3):
            G[f, a, a] = 1.0 / velocity_scale[a]
        G[f, 0, 2] = -arm_z / velocity_scale[0]
        G[f, 1, 2] = arm_x / velocity_scale[1]
    return G


def data_flow(qp: ContactQP, c, sliding, points, theta, r_offset, dmap: DirectionMap, solver, h: float):
    """Impulses (3N,) under the data-flow law, from the max-dissipation impulses ``c``
    (:func:`follow_data`). Where Newton's method finds no motion for the sliding feet together,
    some have none under the data's flow and keep max-dissipation's impulses, solved with the
    sticking feet, while the others follow the data: the slowest at ``c`` first, feet moving alike
    together (:func:`stop_groups`; quad-trot on sand: 267 such steps, 242 solved so). None where
    no such group does it.
    """
    flow = follow_data(qp, c, sliding, points, theta, r_offset, dmap, solver, h)
    slide = np.flatnonzero(sliding)
    if flow is not None or len(slide) < 2:
        return flow
    groups = stop_groups(np.ascontiguousarray(qp.Jt), np.ascontiguousarray(qp.B), qp.v_free, c, slide,
                         np.ascontiguousarray(theta[:, 1]), r_offset, dmap.geometry[:3])
    for g in range(groups.max()):  # the last group alone would leave no foot to follow the data
        keep = groups != g
        fewer = sliding.copy()
        fewer[slide[~keep]] = False
        flow = follow_data(qp, c, fewer, points[keep], theta[keep], r_offset[keep], dmap, solver, h)
        if flow is not None:
            return flow
    return None


#: Feet whose speeds differ by less than this, relative to the fastest, move alike (:func:`stop_groups`).
ALIKE = 1e-6


@kernel()
def stop_groups(Jt, B, v_free, c, slide, phi, r_offset, velocity_scale):
    """Groups of the k sliding feet (contacts ``slide``, tilts ``phi``, p_r offsets ``r_offset``) by
    their speed under the impulses ``c`` in the data's velocity-scaled space, |G J_t (v_free + B c)|
    (:func:`twist_map`): 0 the slowest, feet within :data:`ALIKE` of each other in one group. A foot
    about to stop is the one the data's flow has no motion for; feet moving alike (a planar robot's
    two front feet) are treated alike, so that symmetric feet keep symmetric impulses. In loops, so
    that the step by stages and the fused step group alike to the last bit."""
    n, m = B.shape
    v = np.empty(n)
    for i in range(n):
        v[i] = v_free[i]
        for j in range(m):
            v[i] += B[i, j] * c[j]
    G = twist_map(phi, r_offset, velocity_scale)
    k = len(slide)
    speed = np.empty(k)
    twist = np.empty(3)
    for f in range(k):
        for r in range(3):
            twist[r] = 0.0
            for i in range(n):
                twist[r] += Jt[3 * slide[f] + r, i] * v[i]
        s = 0.0
        for a in range(3):
            x = G[f, a, 0] * twist[0] + G[f, a, 1] * twist[1] + G[f, a, 2] * twist[2]
            s += x * x
        speed[f] = np.sqrt(s)
    order = np.argsort(speed)
    tie = ALIKE * max(speed[order[-1]], 1e-300)
    groups = np.empty(k, np.int64)
    group, start = 0, speed[order[0]]
    for f in order:
        if speed[f] - start > tie:
            group, start = group + 1, speed[f]
        groups[f] = group
    return groups


def follow_data(qp: ContactQP, c, sliding, points, theta, r_offset, dmap: DirectionMap, solver, h: float):
    """Impulses (3N,) under the data-flow law with the feet ``sliding`` following the data.

    ``sliding`` (N,) marks the feet that follow the data's flow rule (some must); for them,
    ``points`` (k, m, 3) are their extreme wrenches, ``theta`` (k, 2) their configurations,
    ``r_offset`` (k,) their p_r offsets, and ``dmap`` the data's direction map. The sliding feet's
    twists solve v = a + h D flow(v) by Newton's method (a: their twists without their own
    impulses), alternating with the sticking feet's QP; when every foot slides that is one compiled
    call, :func:`slide_all`. No foot's wrench does work on it at the twist it solves for
    (:func:`_flow`). Returns (impulses, work), work (J) the impulses do on the bodies at the
    velocity they produce (the caller's guard on the grain term), or None when Newton's method
    fails (the caller keeps max-dissipation).
    """
    U, Kinv, geometry, size = dmap.directions, dmap.kernel_inverse, dmap.geometry, TAILS[dmap.tail]
    if len(points) == len(sliding):  # every foot slides, the common case
        impulses, converged, work = slide_all(qp.Jt, qp.B, qp.v_free, c, points, Kinv, U, geometry, size, theta,
                                              r_offset, h)
        return (impulses, work) if converged else None
    Q, G = flow_coefficients(points, Kinv, U, geometry, size, theta, r_offset)
    slide3 = np.repeat(sliding, 3)
    sticky = ~sliding
    J = qp.Jt[slide3]
    JB = J @ qp.B
    hD = h * JB[:, slide3]
    v_free = J @ qp.v_free
    current = c.copy()
    v = v_free + JB @ current
    stick = _sticking_solver(qp, sticky, solver) if sticky.any() else None
    for _ in range(ITERATIONS if stick else 1):
        a = v_free + JB[:, ~slide3] @ current[~slide3]
        v, wrench, ok = newton(v, a, hD, Q, G, U, theta, geometry)
        if not ok:
            return None
        new = current.copy()
        new[slide3] = h * wrench
        if stick is None:
            current = new
            break
        new[~slide3] = stick(new)
        settled = np.abs(new - current).max() <= TOLERANCE * max(np.abs(new).max(), 1e-12)
        current = new
        if settled:
            break
    return current, qp.work(current)


@kernel("f8[:, :, ::1], f8[:, ::1], f8[:, ::1], f8[::1], i8, f8[:, ::1], f8[::1]")
def flow_coefficients(points, Kinv, U, geometry, size, theta, r_offset):
    """(Q, G): the interpolants' coefficients Q (k, m + size, 3) of the feet's extreme wrenches
    ``points`` (k, m, 3) at their configurations ``theta`` (k, 2) (:class:`DirectionMap`) and
    their :func:`twist_map` G."""
    return coefficients(Kinv, U, geometry, size, theta, points), twist_map(theta[:, 1], r_offset, geometry[:3])


@kernel("f8[:, ::1], f8[:, ::1], f8[::1], f8[::1], f8[:, :, ::1], f8[:, ::1], f8[:, ::1], f8[::1], i8, "
        "f8[:, ::1], f8[::1], f8")
def slide_all(Jt, B, v_free, c, points, Kinv, U, geometry, size, theta, r_offset, h):
    """(impulses, converged, work) of :func:`data_flow` when every foot in contact slides: Newton's
    method on v = a + h D flow(v) from the max-dissipation impulses ``c``, with D = J_t B the
    Delassus matrix and a = J_t v_free; work (J) is the impulses' on the bodies, impulses · J_t v⁺."""
    n = Jt.shape[0]
    JB = np.zeros((n, n))
    a = np.zeros(n)
    for i in range(n):
        for k in range(Jt.shape[1]):
            a[i] += Jt[i, k] * v_free[k]
            for j in range(n):
                JB[i, j] += Jt[i, k] * B[k, j]
    v = a + _matvec(JB, c)
    Q, G = flow_coefficients(points, Kinv, U, geometry, size, theta, r_offset)
    v, wrench, ok = newton(v, a, h * JB, Q, G, U, theta, geometry)
    impulses = h * wrench
    twist = a + _matvec(JB, impulses)
    work = 0.0
    for i in range(n):
        work += impulses[i] * twist[i]
    return impulses, ok, work


@kernel()
def _flow_into(v, Q, G, U, theta, geometry, w, dw, x, dx):
    """The data's wrenches w (3k,) of k feet at twists v (3k,) at p_r (none doing work on its foot:
    :func:`~granular.wrench.flow.dissipative_into`), and their block-diagonal derivative dw (3k, 3k),
    written into w and dw; x (3,) and dx (3, 3) are scratch."""
    w[:] = 0.0
    dw[:] = 0.0
    for f in range(Q.shape[0]):
        o = 3 * f
        for a in range(3):
            x[a] = G[f, a, 0] * v[o] + G[f, a, 1] * v[o + 1] + G[f, a, 2] * v[o + 2]
        dx[:] = 0.0
        interpolate_into(U, Q, f, x, theta[f, 0], theta[f, 1], geometry, w, o, dx)
        for a in range(3):
            for b in range(3):
                dw[o + a, o + b] = dx[a, 0] * G[f, 0, b] + dx[a, 1] * G[f, 1, b] + dx[a, 2] * G[f, 2, b]
        dissipative_into(v, geometry, w, dw, o)


@kernel()
def _residual_into(v, a, hD, w, F):
    """F ← v − a − hD w, the Newton residual, and its largest magnitude."""
    top = 0.0
    for i in range(len(v)):
        acc = 0.0
        for j in range(len(w)):
            acc += hD[i, j] * w[j]
        F[i] = v[i] - a[i] - acc
        top = max(top, abs(F[i]))
    return top


@kernel("f8[::1], f8[::1], f8[:, :], f8[:, :, ::1], f8[:, :, ::1], f8[:, ::1], f8[:, ::1], f8[::1]")
def newton(v, a, hD, Q, G, U, theta, geometry):
    """(v, wrench, converged): a root of F(v) = v − a − hD flow(v) from ``v``, with backtracking.
    Each iteration's line search starts at twice the last accepted step, not at 1: near a face's
    leading/trailing switch the flow has kinks where the full step overshoots iteration after
    iteration, and the halvings back down cost a flow evaluation each. Where that shortened search
    finds no step, the longer steps it skipped are tried before giving up, so that a line search
    fails only where one from 1 would (on quad-trot 7.6 evaluations a call against 9.1, and as many
    calls failing: 107 of 1,885). Its arrays are made once and swapped between the
    iterate and the trial (each allocation in this loop cost as much as a foot's flow)."""
    n = len(v)
    v, trial = v.copy(), np.empty(n)
    w, w_trial, dw, dw_trial = np.empty(n), np.empty(n), np.empty((n, n)), np.empty((n, n))
    F, F_trial, jac, delta = np.empty(n), np.empty(n), np.empty((n, n)), np.empty((n, 1))
    x, dx = np.empty(3), np.empty((3, 3))
    _flow_into(v, Q, G, U, theta, geometry, w, dw, x, dx)
    norm = _residual_into(v, a, hD, w, F)
    top_a, top_v = 0.0, 0.0
    for i in range(n):
        top_a, top_v = max(top_a, abs(a[i])), max(top_v, abs(v[i]))
    size = NEWTON_TOLERANCE * (top_a + top_v + 1e-12)
    start = 1.0
    for _ in range(NEWTON_STEPS):
        if norm <= size:
            return v, w, True
        for i in range(n):
            for j in range(n):  # dw is block-diagonal: foot j // 3's 3 × 3 block
                o = j - j % 3
                jac[i, j] = (1.0 if i == j else 0.0) - (hD[i, o] * dw[o, j] + hD[i, o + 1] * dw[o + 1, j]
                                                       + hD[i, o + 2] * dw[o + 2, j])
            delta[i, 0] = -F[i]
        solve_into(jac, delta)
        t, low = start, 1e-3  # steps are powers of 2: tried down to, not including, ``low``
        while True:
            for i in range(n):
                trial[i] = v[i] + t * delta[i, 0]
            _flow_into(trial, Q, G, U, theta, geometry, w_trial, dw_trial, x, dx)
            trial_norm = _residual_into(trial, a, hD, w_trial, F_trial)
            if trial_norm < norm:
                break
            t *= 0.5
            if t <= low:
                if start == 1.0:
                    return v, w, False
                t, low, start = 1.0, start, 1.0  # the longer steps the shortened search skipped
        start = min(1.0, 2.0 * t)
        v, trial, w, w_trial, dw, dw_trial, F, F_trial = trial, v, w_trial, w, dw_trial, dw, F_trial, F
        norm = trial_norm
    return v, w, norm <= size


@kernel()
def _matvec(A, x):
    out = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            out[i] += A[i, j] * x[j]
    return out
