"""Both contact laws for feet in three dimensions: one step's impulses from a multibody's dynamics.

The caller (a MuJoCo model's coupling, or a test) gives, for the step: the generalized mass
matrix M (nv, nv) its integrator divides the step's forces by (the effective M − h ∂f/∂v of an
integrator that treats damping implicitly: the energy below then counts the damping's dissipation
too), the free velocity v_free = v + h M⁻¹ (applied − bias) the bodies would reach
without the medium, and per foot in contact its θ = (d, φ), its Jacobian J (6, nv) from generalized
velocities to the twist of p_center in its tilt frame F_c3 (:mod:`granular.frames3d`), the arm
p_r − p_center (3,) and its grains' mass (6,). The wrench W(θ) of a foot is about p_r, so its
impulse c (6,) enters as J_rᵀ c, J_r = T J the Jacobian of the twist at p_r.

``max-dissipation`` (Zhu et al. 2019, eq. 2, in ℝ⁶): the impulses minimise the kinetic energy of
the bodies and of the grains dragged along, ½ v⁺ᵀ M v⁺ + Σ ½ (J v⁺)ᵀ M_g (J v⁺), subject to
A c ≤ h b(θ) for each foot (the fixed-normal polytope of the 3D model), v⁺ = v_free + M⁻¹ Σ J_rᵀ c.

``data-flow`` (the default, as in the plane: :mod:`granular.contact.flow` gives the reasons): the
same QP decides who sticks (a foot sticks when its impulse lies strictly inside h W(θ)); a sliding
foot gets the data's own wrench for its direction of motion (the 3D model's ``flow``), the
sliding feet's velocities solving v⁺ = v_free + M⁻¹ (Σ_stick J_rᵀ c + h Σ_slide J_rᵀ w(J v⁺)) by
Newton's method, the sticking feet's impulses re-solved with the sliding ones held, alternating
until they settle. A sliding foot's wrench never does work on it (``flow3d.flow_into``); a
sticking foot's impulse solves a QP whose origin is feasible.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from granular.errors import GranularError
from granular.frames3d import foot_axis

LAWS = ("max-dissipation", "data-flow")
DEFAULT_LAW = "data-flow"
ITERATIONS, TOLERANCE = 8, 1e-6
#: Newton's iterations, each step halved up to BACKTRACK times until the residual's norm falls (a
#: backtracking line search: at a kink of the data's map, where plain Newton cycles, it converges).
#: It stops at a residual of 1e-8 of the speed, a hundredth of the law's own TOLERANCE: on
#: quad3d-trot the residual goes 1e-2, 2e-5, 1.5e-9 from the velocity before the step, and 1e-10
#: took a fourth evaluation of the data's map at most steps for digits nothing reads.
NEWTON_STEPS, NEWTON_TOLERANCE, BACKTRACK = 20, 1e-8, 6
#: A backtracked step is taken once the residual's norm falls by this share of the step (Armijo).
ARMIJO = 1e-4
#: The fixed normals of the 3D polytope the QP constrains the impulses to (K).
NORMALS = 72
#: A foot sticks when its impulse is inside h W by this share of the polytope's size.
INSIDE = 1e-6
#: The QP's ridge, × tr P / its size: P is singular where more feet's impulses than the degrees of
#: freedom they move (nearly so for a quadruped's four feet: 24 impulses on 18 dofs).
RIDGE = 1e-12
#: Work (J) the impulses may do on the bodies in a step and count as none (round-off).
WORK_TOLERANCE = 1e-10


@dataclass(frozen=True)
class Feet:
    """The feet in contact this step (N of them): θ (N, 2), J (N, 6, nv) at p_center in F_c3,
    arms p_r − p_center (N, 3) in F_c3, grains' masses (N, 6) (kg, kg·m²)."""

    thetas: np.ndarray
    J: np.ndarray
    arms: np.ndarray
    grain_mass: np.ndarray

    @property
    def Jr(self) -> np.ndarray:
        """(N, 6, nv): the twist at p_r, v + ω × (p_r − p_center), per generalized velocity."""
        T = np.zeros((len(self.arms), 6, 6)) + np.eye(6)
        x, y, z = self.arms.T
        T[:, 0, 4], T[:, 0, 5], T[:, 1, 3], T[:, 1, 5], T[:, 2, 3], T[:, 2, 4] = z, -y, -z, x, y, -x
        return T @ self.J


@dataclass(frozen=True)
class Step:
    """A step's outcome: the velocity after it (nv,), each foot's impulse (N, 6) about p_r, which
    feet stuck, whether data-flow fell back to max-dissipation, and (set by a coupling that
    integrates the step) the impulses' work on the bodies."""

    v: np.ndarray
    impulses: np.ndarray
    sticking: np.ndarray
    work: float = 0.0   # J the impulses did on the bodies in the step, when the caller measured it
    fell_back: bool = False   # data-flow's Newton failed and the step kept max-dissipation's impulses


def step(model, M, v_free, feet: Feet, h: float, law: str = DEFAULT_LAW, K: int = NORMALS, v0=None) -> Step:
    """One step's contact impulses under ``law`` for the feet on the 3D ``model``
    (:class:`~granular.learning.model3d.WrenchSpaceModel3D`). ``v0``: the bodies' velocity before
    the step, data-flow's first guess for Newton's method, for feet that were in the medium the step
    before too (None: max-dissipation's velocity)."""
    if law not in LAWS:
        raise GranularError(f"unknown contact law {law!r}; choose one of {', '.join(LAWS)}")
    N = len(feet.thetas)
    if N == 0:
        return Step(np.asarray(v_free, float).copy(), np.zeros((0, 6)), np.zeros(0, bool))
    A = model.fixed_normals(K)
    b, points = model.support(A, feet.thetas)  # W(θ) of every foot, predicted once for the step
    ub = h * b  # (N, K)
    Jr = feet.Jr
    Minv = np.linalg.inv(M)
    H = M + np.einsum("nap,na,naq->pq", feet.J, feet.grain_mass, feet.J)
    c = _qp(Minv, H, Jr, v_free, A, ub, np.ones(N, bool), np.zeros((N, 6)))
    if feet.grain_mass.any() and _work(Jr, c, v_free + Minv @ np.einsum("nap,na->p", Jr, c)) > WORK_TOLERANCE:
        # With the grains in the objective the impulses minimise the energy of bodies and grains
        # together, and can then do work on the bodies alone; the step drops the grains, as the
        # planar step does (granular.simulation.step).
        H = M
        c = _qp(Minv, H, Jr, v_free, A, ub, np.ones(N, bool), np.zeros((N, 6)))
    if law == "max-dissipation":
        return Step(v_free + Minv @ np.einsum("nap,na->p", Jr, c), c, _inside(A, ub, c))
    sticking = _inside(A, ub, c)
    md, slide, v = c, ~sticking, None
    # the sliding feet's interpolants, solved once for the step
    Q = model.direction_map.coefficients(points[slide], feet.thetas[slide, 1]) if slide.any() else None
    for _ in range(ITERATIONS):
        if sticking.all():
            break
        base = v_free + Minv @ np.einsum("nap,na->p", Jr[sticking], c[sticking])
        # The first solve starts from the velocity before the step where the same feet were in the
        # medium then: it follows the last step's root, which moves little (quad3d-trot: 4.1
        # evaluations of the map a solve, against 6.1 from max-dissipation's velocity). Where a foot
        # lands, or that fails, it starts from max-dissipation's velocity, whose sliding feet already
        # resisted by the hull's wrench: where the data's map has more than one root (a planar
        # walker's heel strike on a rigid floor does), that is the one the law takes. Each next
        # solve starts from the last root (the sticking impulses moved a little).
        if v is None:
            v = None if v0 is None else _slide(model, Minv, Jr, feet, Q, base, slide, h, np.asarray(v0, float))
            if v is None:
                v = _slide(model, Minv, Jr, feet, Q, base, slide, h, v_free + Minv @ np.einsum("nap,na->p", Jr, md))
        else:
            v = _slide(model, Minv, Jr, feet, Q, base, slide, h, v)
        if v is None:  # Newton's method failed (a kink of the data's map): the step falls back, as in the plane
            return Step(v_free + Minv @ np.einsum("nap,na->p", Jr, md), md, _inside(A, ub, md), fell_back=True)
        c_new = c.copy()
        phis = feet.thetas[slide, 1]
        c_new[slide] = h * model.direction_map.at(Q, phis, np.einsum("nap,p->na", feet.J[slide], v),
                                                  model.dataset.foot.r_offset * foot_axis(phis))
        if not sticking.any():  # every foot slides: nothing else to settle
            c = c_new
            break
        c_new[sticking] = _qp(Minv, H, Jr, v_free, A, ub, sticking, c_new)[sticking]
        settled = np.abs(c_new - c).max() <= TOLERANCE * max(np.abs(c_new).max(), 1e-300)
        c = c_new
        if settled:
            break
    return Step(v_free + Minv @ np.einsum("nap,na->p", Jr, c), c, sticking)


def _work(Jr, c, v) -> float:
    """The largest work (J) a foot's impulse does on the bodies moving at v after the step."""
    return float(np.einsum("na,nap,p->n", c, Jr, v).max())


def _inside(A, ub, c) -> np.ndarray:
    """Per foot: its impulse strictly inside h W (every facet slack by INSIDE of the largest offset)."""
    slack = ub - np.einsum("kd,nd->nk", A, c)
    return slack.min(axis=1) > INSIDE * np.maximum(ub.max(axis=1), 1e-300)


def _qp(Minv, H, Jr, v_free, A, ub, free, held):
    """The max-dissipation QP over the impulses of the feet ``free`` (bool, N), the others' ``held``
    (N, 6): min ½ v⁺ᵀ H v⁺ with v⁺ = v_free + M⁻¹ Σ J_rᵀ c, A c_i ≤ ub_i. Returns all impulses (N, 6)."""
    import quadprog

    idx = np.flatnonzero(free)
    B = np.concatenate([Minv @ Jr[i].T for i in idx], axis=1)
    base = v_free + Minv @ np.einsum("nap,na->p", Jr[~free], held[~free]) if (~free).any() else v_free
    P = B.T @ H @ B
    g = B.T @ H @ base
    n = len(idx) * 6
    P = 0.5 * (P + P.T) + RIDGE * np.trace(P) / n * np.eye(n)  # quadprog needs it strictly convex
    C = np.zeros((n, len(idx) * A.shape[0]))
    for k, i in enumerate(idx):
        C[6 * k:6 * k + 6, A.shape[0] * k:A.shape[0] * (k + 1)] = -A.T
    x = quadprog.solve_qp(P, -g, C, -ub[idx].ravel())[0]
    out = held.copy()
    out[idx] = x.reshape(-1, 6)
    return out


def _slide(model, Minv, Jr, feet, Q, base, slide, h, start):
    """Newton's method on v = base + h M⁻¹ Σ_slide J_rᵀ w(θ, J v), the sliding feet's data wrench
    at their twists; the Jacobian of w by central differences in the twist, all feet and axes in
    one call (w is rate-independent, so its derivative is taken at the twist's own scale); each step
    halved up to :data:`BACKTRACK` times until the residual's norm falls (Armijo). ``Q``: the sliding
    feet's interpolants (``SphereMap.coefficients``), solved once for the step (θ does not change
    within it); ``start`` the first guess. None if it does not converge."""
    idx = np.flatnonzero(slide)
    n = len(idx)
    th, J, Jri = feet.thetas[idx], feet.J[idx], Jr[idx]
    dmap, scale = model.direction_map, model.dataset.velocity_scale
    Q13 = np.repeat(Q, 13, axis=0)
    phi13 = np.repeat(th[:, 1], 13)
    arm13 = model.dataset.foot.r_offset * foot_axis(phi13)  # as model.flow_at takes them

    def residual(v):
        twists = np.einsum("nap,p->na", J, v)
        size = 1e-6 * np.maximum(np.linalg.norm(twists / scale, axis=1), 1e-3)[:, None] * scale  # (n, 6)
        probe = np.repeat(twists[:, None, :], 13, axis=1)
        steps = np.zeros((n, 13, 6))
        steps[:, 1:7] = np.eye(6) * size[:, None, :]
        steps[:, 7:] = -np.eye(6) * size[:, None, :]
        w = dmap.at(Q13, phi13, (probe + steps).reshape(-1, 6), arm13).reshape(n, 13, 6)
        dw = (w[:, 1:7] - w[:, 7:]).transpose(0, 2, 1) / (2 * size[:, None, :])  # (n, 6 wrench, 6 twist)
        G = np.eye(len(v)) - h * Minv @ np.einsum("nap,nab,nbq->pq", Jri, dw, J)
        return v - base - h * Minv @ np.einsum("nap,na->p", Jri, w[:, 0]), G

    def converged(v, r):
        return np.abs(r).max() <= NEWTON_TOLERANCE * max(np.abs(v).max(), 1e-12)

    v = start.copy()
    r, G = residual(v)
    for _ in range(NEWTON_STEPS):
        if converged(v, r):
            return v
        step = np.linalg.solve(G, r)
        for k in range(BACKTRACK + 1):
            alpha = 0.5 ** k
            r_new, G_new = residual(v - alpha * step)
            if np.linalg.norm(r_new) <= (1.0 - ARMIJO * alpha) * np.linalg.norm(r):
                break
        else:
            return None
        v, r, G = v - alpha * step, r_new, G_new
    return v if converged(v, r) else None
