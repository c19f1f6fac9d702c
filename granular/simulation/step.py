"""Stepping the simulation: an immutable model, a small state, a step function.

``step(model, state, u, solver)`` detects contacts, predicts each foot's
W(θ), solves the maximum-dissipation QP (:mod:`granular.contact.qp`; with the
data-flow law, :mod:`granular.contact.flow` then gives sliding feet the data's
wrench) and integrates semi-implicitly: v⁺ from the QP, q⁺ = q + h v⁺. A
compliant law (:mod:`granular.contact.compliant`) replaces W(θ) and the QP by
penalty forces of the state at the start of the step (and a stick band for friction). ``u`` is a generalized
force (controllers compute it). The solver object carries only a warm-start
workspace.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from granular.contact.detection import ContactFrames, Feet, detect, leading
from granular.contact import compliant
from granular.contact.flow import DEFAULT_LAW, LAWS as QP_LAWS, WORK_TOLERANCE, data_flow
from granular.contact.qp import ContactQP, SolverError, stack_blocks
from granular.errors import GranularError
from granular.frames import center_slip
from granular.learning.model import WrenchSpaceModel
from granular.dynamics.multibody import MultiBody
from granular.dynamics.terrain import Terrain

REPRESENTATIONS = ("exact", "fixed")
#: The QP's laws (the learned W(θ)) and the compliant ones (closed-form penalty forces).
LAWS = QP_LAWS + compliant.LAWS


@dataclass(frozen=True)
class SimModel:
    """Everything that does not change during a run."""

    multibody: MultiBody
    contacts: tuple
    terrain: Terrain
    wrenches: WrenchSpaceModel
    dt: float = 1e-3
    representation: str = "fixed"
    normals: int = 32
    contact_law: str = DEFAULT_LAW
    #: parameters of a compliant law; default: fitted to the medium's dataset (contact/compliant.py)
    compliant: compliant.Compliant | None = None
    #: the passive walker's swing rule: one foot bears the load, and another takes it over by landing
    #: more than this margin (m) ahead (:func:`~granular.contact.detection.leading`); None: every
    #: foot in contact bears load
    leading_foot: float | None = None
    #: a Coulomb floor's kinetic friction μ_k (below its data's static μ_s) for the QP's feet that
    #: slide at the step's start (:func:`kinetic`); None: one coefficient
    kinetic_friction: float | None = None
    A_fixed: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        if not (np.isfinite(self.dt) and 0 < self.dt <= 0.05):
            raise GranularError(f"time step dt must be in (0, 0.05] s, got {self.dt!r}")
        if self.leading_foot is not None and not (np.isfinite(self.leading_foot) and self.leading_foot >= 0):
            raise GranularError(f"leading_foot must be a margin ≥ 0 m, got {self.leading_foot!r}")
        if self.representation not in REPRESENTATIONS:
            raise GranularError(f"unknown polytope representation {self.representation!r}; "
                                f"choose {' or '.join(REPRESENTATIONS)}")
        if self.contact_law not in LAWS:
            raise GranularError(f"unknown contact law {self.contact_law!r}; choose one of {', '.join(LAWS)}")
        if self.kinetic_friction is not None:
            self._check_kinetic()
        if self.contact_law in compliant.LAWS and self.compliant is None:
            object.__setattr__(self, "compliant", compliant.fit(self.contact_law, self.wrenches.dataset))
        if self.representation == "fixed" and self.A_fixed is None:
            object.__setattr__(self, "A_fixed", self.wrenches.fixed_normals(self.normals))
        object.__setattr__(self, "feet", Feet(tuple(self.contacts)))
        object.__setattr__(self, "_stacked", {})  # fixed representation: block-diagonal A per foot count

    def _check_kinetic(self):
        ds = self.wrenches.dataset
        if self.contact_law in compliant.LAWS:
            raise GranularError(f"kinetic_friction is the QP's; a compliant law ({self.contact_law!r}) takes "
                                "[compliant] friction and static_friction")
        if ds.source != "coulomb":
            raise GranularError(f"kinetic_friction needs a rigid floor (granular synth --source coulomb); "
                                f"{ds.medium!r} is a {ds.source} medium")
        if not 0 < self.kinetic_friction <= ds.provenance["friction"]:
            raise GranularError(f"kinetic_friction must be in (0, {ds.provenance['friction']}], the floor's "
                                f"static friction; got {self.kinetic_friction!r}")
        object.__setattr__(self, "_kinetic_ratio", self.kinetic_friction / ds.provenance["friction"])


@dataclass
class State:
    t: float
    q: np.ndarray
    v: np.ndarray
    holder: int = -1   # the swing rule's foot bearing the load (SimModel.leading_foot; −1: none)


@dataclass
class StepInfo:
    """Per foot: θ, in contact, wrench (f_x, f_z, τ) in F_r (N, N·m), slipping (on ∂W), p_center;
    ``fallback``: the data-flow law found no dissipative answer and the step kept max-dissipation's."""

    theta: np.ndarray
    active: np.ndarray
    wrench: np.ndarray
    slipping: np.ndarray
    p_center: np.ndarray
    fallback: bool = False


def wrench_spaces(model: SimModel, theta):
    """Stacked constraints (A, b, rows) of W for feet at configurations ``theta`` (k, 2):
    A w ≤ b on the feet's stacked wrenches, in the model's representation; and the extreme
    wrenches (k, m, 3) W is the hull of."""
    wm = model.wrenches
    if model.representation == "exact":
        points = wm.points(theta)
        spaces = wm.hulls(points)
        return *stack_blocks([A for A, _ in spaces], [b for _, b in spaces]), points
    k = len(theta)
    if k not in model._stacked:
        model._stacked[k] = stack_blocks([model.A_fixed] * k, [np.zeros(len(model.A_fixed))] * k)
    A, _, rows = model._stacked[k]
    b, points = wm.offsets_and_points(model.A_fixed, theta)
    return A, b.ravel(), rows, points


def contact_qp(model: SimModel, state: State, u, frames, on, M, k, A, b, rows) -> ContactQP:
    """The step's contact QP (eq. 2) for the feet ``on``, given M, the bias forces k and their W (A, b)."""
    mb, h = model.multibody, model.dt
    every = len(on) == len(model.contacts)  # the common case: no copies to select feet
    return ContactQP(M=M, v=state.v, impulse=h * (k + u),
                     Jt=(frames.Jt if every else frames.Jt[on]).reshape(-1, mb.ndof),
                     Jp=(frames.Jp if every else frames.Jp[on]).reshape(-1, mb.ndof),
                     Mg=model.feet.grain_mass.ravel() if every else model.feet.grain_mass[on].ravel(),
                     A=A, ub=h * b, rows=rows, branches=mb.branches)


def step(model: SimModel, state: State, u, solver, index: int = 0):
    """One step of length model.dt; returns the next state and what the contacts did."""
    mb, h = model.multibody, model.dt
    body_frames = mb.frames(state.q)
    frames = detect(mb, model.feet, model.terrain, body_frames)
    holder = state.holder
    if model.leading_foot is not None:
        holder = leading(frames, state.v, state.holder, model.leading_foot, h)
        frames.active = frames.active & (np.arange(len(frames.active)) == holder)
    M, k = mb.dynamics(state.q, state.v, body_frames)
    on = np.flatnonzero(frames.active)
    every = len(on) == len(model.contacts)  # the common case: no copies to select feet
    wrench = np.zeros((len(model.contacts), 3))
    slipping = np.zeros(len(model.contacts), dtype=bool)
    if model.compliant is None:
        A, b, rows, points = wrench_spaces(model, frames.theta if every else frames.theta[on])
    else:  # no wrench space: the penalty force is a function of the state
        A, b, rows, points = np.zeros((0, 3 * len(on))), np.zeros(0), np.zeros(1, dtype=int), None
    qp = contact_qp(model, state, u, frames, on, M, k, A, b, rows)
    if model.kinetic_friction is not None and len(on):
        qp = replace(qp, A=kinetic(qp, model.feet.r_offset[on], frames.theta[on], rows, model._kinetic_ratio))
    fallback = False
    if not len(on):
        v_next = qp.v_free
    else:
        if model.compliant is not None:
            # penalty forces from the state at the start of the step, friction with a stick band
            c = compliant.impulses(model.compliant, qp, frames.theta[on], model.feet.r_offset[on], h)
        else:
            c, slipping[on], fallback = _learned(model, qp, frames, on, points, state, solver, index)
        v_next = qp.velocity(c)
        wrench[on] = c.reshape(-1, 3) / h
    info = StepInfo(frames.theta, frames.active, wrench, slipping, frames.p_center, fallback)
    return State(state.t + h, state.q + h * v_next, v_next, holder), info


#: Slip speed (m/s) of p_center above which a foot is sliding (Zheng & Wang's ε).
SLIDING = 1e-5


def kinetic(qp, r_offset, theta, rows, ratio: float):
    """A Coulomb floor's constraints A with the friction of the feet sliding at the step's start
    scaled by ``ratio`` = μ_k / μ_s (Zheng & Wang §2, eq. 6: kinetic friction while sliding, static
    friction up to μ₀ deciding stick). The floor's W is the cone of μ_s at p_center; the kinetic one
    is its image under L, which scales f_x and the torque it makes about p_r: w ∈ L W iff
    A L⁻¹ w ≤ b."""
    arm, slip = center_slip(qp.Jt @ qp.v, r_offset, theta[:, 1])
    A = qp.A
    for i in np.flatnonzero(np.abs(slip) > SLIDING):
        if A is qp.A:
            A = A.copy()
        inverse = np.array([[1.0 / ratio, 0.0, 0.0], [0.0, 1.0, 0.0], [arm[i, 1] * (ratio - 1.0) / ratio, 0.0, 1.0]])
        block = A[rows[i]:rows[i + 1], 3 * i:3 * i + 3]
        A[rows[i]:rows[i + 1], 3 * i:3 * i + 3] = block @ inverse
    return A


def _learned(model: SimModel, qp, frames, on, points, state, solver, index):
    """The impulses of the feet ``on`` in their learned W(θ) (the hulls of ``points``), per the
    model's contact law: (c, which feet slip, whether data-flow fell back to max-dissipation)."""
    c = _solve(solver, qp, model, frames, on, state, index)
    grains = model.feet.grain_mass.any()
    if grains and qp.work(c) > WORK_TOLERANCE:
        # With the grain term (the paper's M_g) the impulses minimise the energy of bodies and
        # grains together, so they can do positive work on the bodies alone (e.g. where W(θ)
        # changes fast with θ); without it the contact provably dissipates (contact/qp.py).
        qp = replace(qp, Mg=np.zeros_like(qp.Mg))
        c = _solve(solver, qp, model, frames, on, state, index)
    slipping = qp.slack_max(c) >= -1e-6 * max(qp.ub.max(), 1e-12)
    if model.contact_law != "data-flow":
        return c, slipping, False
    theta = frames.theta[on]
    sliding = slipping & (np.abs(theta[:, 1]) <= model.wrenches.phi_max)
    count = np.count_nonzero(sliding)
    if not count:
        return c, slipping, False
    all_slide = count == len(sliding)
    flow = _data_flow(model, qp, c, sliding, all_slide, on, theta, points, solver)
    fallback = flow is None or (grains and flow[1] > WORK_TOLERANCE)
    return (c if fallback else flow[0]), slipping, fallback


def _data_flow(model: SimModel, qp, c, sliding, all_slide, on, theta, points, solver):
    """The data-flow law's (impulses, their work on the bodies), or None where the step keeps
    max-dissipation (Newton's method failed: :func:`~granular.contact.flow.data_flow`).
    ``sliding`` marks the feet that follow the data's flow rule (``all_slide``: all of them): those
    on ∂W and tilted within the data (past the data's tilts there is no recorded direction → wrench
    map to follow, and those feet keep max-dissipation: their impulses are solved with the sticking
    feet's)."""
    if not all_slide:
        on, theta, points = on[sliding], theta[sliding], points[sliding]
    return data_flow(qp, c, sliding, points, theta, model.feet.r_offset[on], model.wrenches.direction_map,
                     solver, model.dt)


def _solve(solver, qp, model, frames: ContactFrames, on, state, index):
    def where():
        feet = ", ".join(f"{model.contacts[i].name} (d={frames.theta[i, 0]:+.4f} m, φ={frames.theta[i, 1]:+.3f})"
                         for i in on)
        return f"step {index} (t = {state.t:.4f} s), contacts {feet}"

    try:
        c = solver.solve(qp)
    except SolverError as exc:
        raise SolverError(f"contact QP failed at {where()}: {exc}") from None
    if c is None or not np.all(np.isfinite(c)):
        raise SolverError(f"contact QP returned no finite solution at {where()} ({solver.name})")
    return c


