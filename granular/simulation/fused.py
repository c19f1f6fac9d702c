"""The fused step: controller, detection, W(θ), the contact QP and the integration in one compiled
call (issue 12), for the common case of a legged robot under joint position control.

:func:`granular.simulation.step.step` runs each stage as its own compiled kernel with Python
between them (a quadruped step: ~150 µs, of which the numerics are about a third). Here the
kernels are called from one kernel, :func:`fused_steps`, that steps a batch of robots ``steps``
times each, so a call costs its numerics plus one crossing from Python, however many robots and
steps it takes (a single robot is a batch of one). It computes what ``step`` computes, to rounding, for
a model with fixed normals, an RBF model of W(θ) and a controller of the
:class:`~granular.simulation.fused_control.JointControl` kind, with :class:`~granular.contact.solvers.NativeSolver` as the QP solver (``tests/test_fused.py``
compares the two), under the maximum-dissipation law or the data-flow law (the sticking feet's
QP, where some feet stick while others follow the data, solved by the same native solver).
:func:`plan` says whether a model qualifies; the :class:`~granular.simulation.simulation.Simulation` loop takes this path where it
does and the solver is ``native``, and the per-stage path otherwise.
"""
from __future__ import annotations

import numpy as np

from granular.compiled import kernel, unchecked
from granular.contact.detection import _detect
from granular.contact.flow import (ITERATIONS, TOLERANCE, WORK_TOLERANCE, flow_coefficients, newton, slide_all,
                                    stop_groups)
from granular.contact.active_set import NATIVE_TOLERANCE, dual_active_set
from granular.contact.qp import stack_blocks
from granular.contact.reduction import (TREE_MIN_DOFS, leaves_first_cholesky, leaves_first_solve, reduce_qp,
                                        reduce_small, strictly_convex)
from granular.dynamics.multibody import _dynamics, _frames
from granular.learning.linear import support_of_mirror_average
from granular.simulation.fused_control import CONSTANT, control_forces
from granular.wrench.flow import TAILS

def plan(model, solver) -> tuple | None:
    """The model's arrays for :func:`fused_steps`, or None where the step must run stage by stage
    (another solver or representation, a compliant contact law, the walker's swing rule, kinetic
    friction, a W(θ) learned by another regressor than RBF)."""
    rbf = model.wrenches.rbf_arrays()
    if (getattr(solver, "name", None) != "native" or model.representation != "fixed"
            or model.contact_law not in ("max-dissipation", "data-flow") or model.compliant is not None
            or model.leading_foot is not None or model.kinetic_friction is not None or rbf is None):
        return None
    mb = model.multibody
    dofs, starts = mb.branches
    return (*_tree(mb), mb.com, mb.mass, mb.inertia, float(mb.gravity), dofs, starts,
            *_feet(model.feet), np.ascontiguousarray(model.feet.grain_mass.ravel()),
            *model.terrain.arrays,
            np.ascontiguousarray(model.A_fixed, np.float64), *_stacks(model.A_fixed, len(model.contacts)),
            *rbf[:7], int(rbf[7]), int(rbf[8]), rbf[9], *_flow(model))


def _stacks(A_fixed, N: int) -> tuple:
    """The block-diagonal A of the feet's W(θ) for 1 … N feet in contact (:func:`stack_blocks` of
    A_fixed per foot), one after another in one flat array, and where each begins (N,):
    :func:`_stacked` takes their views, so neither a step nor a call builds a constraint matrix."""
    zero = np.zeros(len(A_fixed))
    blocks = [stack_blocks([A_fixed] * nc, [zero] * nc)[0].ravel() for nc in range(1, N + 1)]
    offsets = np.cumsum([0] + [b.size for b in blocks[:-1]]).astype(np.int64)
    return np.concatenate([np.zeros(0), *blocks]), offsets


def _flow(model) -> tuple:
    """What :func:`_follow_data` needs: whether the law is data-flow, the data's largest tilt and the
    data's direction map (:class:`~granular.wrench.flow.DirectionMap`: K⁻¹, directions, velocity
    scale and radius, tail size); placeholders under max-dissipation."""
    if model.contact_law != "data-flow":
        return 0, 0.0, np.zeros((1, 1)), np.zeros((1, 3)), np.zeros(4), 0
    dmap = model.wrenches.direction_map
    return 1, float(model.wrenches.phi_max), dmap.kernel_inverse, dmap.directions, dmap.geometry, TAILS[dmap.tail]


def depth_arrays(model) -> tuple:
    """The model's arrays for :func:`foot_depths`, after q."""
    return (*_tree(model.multibody), *_feet(model.feet), *model.terrain.arrays)


def _tree(mb) -> tuple:
    """What places the bodies (``_frames``) and the feet's chains: parent, joint, offset, chain."""
    return mb.parent, np.ascontiguousarray(mb.joint, np.float64), mb.offset, mb.chain


def _feet(feet) -> tuple:
    """What ``_detect`` needs of the feet: bodies, points, axis, roll radius, r_offset, plate radius."""
    return feet.bodies.astype(np.int64), feet.points, feet.axis, feet.roll_radius, feet.r_offset, feet.radius


@kernel("f8[:, ::1], i8[::1], f8[:, ::1], f8[::1], f8[:, ::1], i8[::1], f8[:, ::1], f8[:, ::1], f8[::1], f8[::1], f8[::1]",
        "f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[::1], f8[::1]")
def foot_depths(q, parent, joint, offset, chain, bodies, points, axis, roll, r_offset, radius, ta, tt, tn, tlo, thi):
    """θ's d (R, N) of each foot at each of the states q (R, n) (m): negative in the medium, 0 out
    of it (one compiled call for a batch's observations; ``depth_arrays`` gives the model's arguments)."""
    out = np.empty((q.shape[0], len(bodies)))
    for r in range(q.shape[0]):
        angle, origin = _frames(q[r], parent, joint, offset)
        theta = _detect(angle, origin, chain, bodies, points, axis, roll, r_offset, radius, ta, tt, tn, tlo, thi)[0]
        for i in range(len(bodies)):
            out[r, i] = min(theta[i, 0], 0.0)
    return out


def advance(model, arrays, controls, states, warms, steps: int, memories=None):
    """Step each of ``states`` (robots of one model; robot r under ``controls[r]``, its QP warm
    started from ``warms[r]``, :func:`workspace`) ``steps`` times in one call. All controls share
    one kind; only a CONSTANT one's goal may differ from robot to robot (:func:`batchable`).
    ``memories`` (R, S): the servos' integrals (``JointControl.memory_array``), advanced in place.
    Returns arrays over the robots: t (R,), q, v (R, n), the last step's StepInfo fields (θ,
    active, wrench, slipping, p_center, fallback (non-zero: fell back); R rows each) and the steps done (R,); fewer than
    ``steps`` are done only where the QP solver failed at the next one, which the caller then
    steps stage by stage (and that robot's StepInfo fields are not the last step's)."""
    R, N = len(states), len(model.contacts)
    c = controls[0].arrays
    if R == 1:  # one robot (an interactive loop's every step, where this function's own time shows): copies
        s = states[0]
        q, v, t = np.array(s.q, np.float64, ndmin=2), np.array(s.v, np.float64, ndmin=2), np.array([float(s.t)])
        goals = c[2][None]
    else:
        q = np.array([s.q for s in states], dtype=np.float64)
        v = np.array([s.v for s in states], dtype=np.float64)
        t = np.array([s.t for s in states], dtype=np.float64)
        goals = np.array([ctl.arrays[2] for ctl in controls])
    if memories is None:
        memories = np.zeros((R, 0))
    theta, wrench, p_center = np.empty((R, N, 2)), np.empty((R, N, 3)), np.empty((R, N, 2))
    flags, done, effort = np.empty((R, N, 2), np.bool_), np.empty(R, np.int64), np.empty(R)
    fallback = np.zeros(R, np.int64)
    clamped = unchecked(fused_steps)(q, v, t, memories, steps, float(model.dt), *arrays, *c[:2], goals, *c[3:],
                                     theta, wrench, flags, p_center, warms, done, effort, fallback)
    if clamped:
        model.wrenches.warn_clamped()
    for ctl, e in zip(controls, effort):
        if ctl.effort is not None:
            ctl.effort(e)
    return t, q, v, (theta, flags[:, :, 0], wrench, flags[:, :, 1], p_center, fallback), done


def batchable(controls) -> bool:
    """Whether robots under these controls can step in one call: one kind, and beyond a CONSTANT
    goal the same targets."""
    first = controls[0]
    return all(c is first or (c.kind == CONSTANT == first.kind
                              and (c.limits is first.limits or np.array_equal(c.limits, first.limits)))
               for c in controls)


def workspace(model, robots: int = 1) -> np.ndarray:
    """The QP's warm start that :func:`advance` carries, per robot: [size, active constraints…]."""
    return np.zeros((robots, 3 * len(model.contacts) + 1), dtype=np.int64)


_TYPES = ("f8[:, ::1], f8[:, ::1], f8[::1], f8[:, ::1], i8, f8",                              # states, steps, dt
          "i8[::1], f8[:, ::1], f8[::1], f8[:, ::1], f8[:, ::1], f8[::1], f8[::1], f8, i8[::1], i8[::1]",  # bodies
          "i8[::1], f8[:, ::1], f8[:, ::1], f8[::1], f8[::1], f8[::1], f8[::1]",                 # feet
          "f8[:, ::1], f8[:, ::1], f8[:, ::1], f8[::1], f8[::1]",                                # terrain
          "f8[:, ::1], f8[::1], i8[::1], f8[:, ::1], f8[::1], i8, i8, f8[:, ::1], f8[::1], i8[::1], i8, i8, f8[:, ::1]",  # W(θ)
          "i8, f8, f8[:, ::1], f8[:, ::1], f8[::1], i8",                                          # data-flow
          "i8, f8[:, ::1], f8[:, ::1], f8[::1], f8[::1], f8[:, ::1], i8[::1], f8[::1], f8[::1], i8[:, ::1], "
          "f8[:, ::1], f8[::1]",                                                                  # control
          "f8[:, :, ::1], f8[:, :, ::1], b1[:, :, ::1], f8[:, :, ::1], i8[:, ::1], i8[::1], f8[::1], i8[::1]")  # out


@kernel(*_TYPES)
def fused_steps(q, v, t, memory, steps, dt,
                parent, joint, offset, chain, com, mass, inertia, gravity, dofs, starts,
                bodies, points, axis, roll, r_offset, radius, grain_mass,
                ta, tt, tn, tlo, thi,
                A_fixed, stacks, offsets, bounds, x_scale, phi_active, per_depth, centers, c2, spans, rbf, degree, coef,
                flow, phi_max, Kinv, U, flow_geometry, tail,
                kind, limits, goals, trot, times, xz, limbs, geometry, sides, columns, servos, track,
                theta_out, wrench_out, flags_out, pc_out, warms, done, effort, fallback):
    """``steps`` steps of :func:`~granular.simulation.step.step` for each robot r (rows of q, v, t,
    memory, goals, warms and the outputs), with the controller ``JointControl`` describes; q, v, t
    and the controller's memory are advanced in place and the last step's per-foot θ, wrench (F_r, N, N·m), (active, slipping)
    and p_center written to the ``_out`` arrays and to ``fallback`` whether data-flow kept
    max-dissipation's impulses; ``warms`` carries each robot's QP active set from step to step and
    call to call; ``done`` gets the steps each robot took, ``effort`` its controller's. Returns
    whether W(θ) was clamped to the data for any robot. A single robot is a batch of one: the same
    code steps it."""
    clamped = False
    for r in range(q.shape[0]):
        done[r], outside, effort[r], t[r], fallback[r] = _steps(
            q[r], v[r], t[r], memory[r], steps, dt, parent, joint, offset, chain, com, mass, inertia, gravity, dofs, starts,
            bodies, points, axis, roll, r_offset, radius, grain_mass, ta, tt, tn, tlo, thi,
            A_fixed, stacks, offsets, bounds, x_scale, phi_active, per_depth, centers, c2, spans, rbf, degree, coef,
            flow, phi_max, Kinv, U, flow_geometry, tail,
            kind, limits, goals[r], trot, times, xz, limbs, geometry, sides, columns, servos, track,
            theta_out[r], wrench_out[r], flags_out[r], pc_out[r], warms[r])
        clamped = clamped or outside
    return clamped


@kernel()
def _steps(q, v, t, memory, steps, dt,
           parent, joint, offset, chain, com, mass, inertia, gravity, dofs, starts,
           bodies, points, axis, roll, r_offset, radius, grain_mass,
           ta, tt, tn, tlo, thi,
           A_fixed, stacks, offsets, bounds, x_scale, phi_active, per_depth, centers, c2, spans, rbf, degree, coef,
           flow, phi_max, Kinv, U, flow_geometry, tail,
           kind, limits, goal, trot, times, xz, limbs, geometry, sides, columns, servos, track,
           theta_out, wrench_out, flags_out, pc_out, warm):
    """One robot's steps (:func:`fused_steps`): (steps done, clamped, the controller's effort, t,
    whether the last step's data-flow fell back)."""
    n, N = len(q), len(bodies)
    grains = False
    for i in range(len(grain_mass)):
        grains = grains or grain_mass[i] != 0.0
    clamped, effort, fell_back = False, 0.0, False
    u, impulse = np.zeros(n), np.empty(n)
    pending = memory.copy()  # the controller's memory after this step: kept once the step is done
    unreported = np.zeros(0, np.bool_)  # the slipping test's stand-in where nothing needs it
    # the feet in contact's rows, sliced from buffers made once per call, not per step
    on_all, theta_all, Mg_all = np.empty(N, np.int64), np.empty((N, 2)), np.empty(3 * N)
    Jt_all, Jp_all = np.empty((3 * N, n)), np.empty((3 * N, n))
    ub_all, rows_all = np.empty(N * A_fixed.shape[0]), np.empty(N + 1, np.int64)
    for a in range(N + 1):
        rows_all[a] = a * A_fixed.shape[0]
    for s in range(steps):
        pending[:] = memory
        spent = control_forces(t, q, v, u, pending, kind, limits, goal, trot, times, xz, limbs, geometry, sides,
                               columns, servos, track)
        angle, origin = _frames(q, parent, joint, offset)
        theta, p_center, _, Jt, Jp = _detect(angle, origin, chain, bodies, points, axis, roll, r_offset, radius,
                                             ta, tt, tn, tlo, thi)
        M, k = _dynamics(angle, origin, v, parent, com, mass, inertia, gravity)
        nc = 0
        for i in range(N):
            if theta[i, 0] < 0.0:
                on_all[nc] = i
                nc += 1
        for i in range(n):
            impulse[i] = dt * (k[i] + u[i])
        on, theta_on, Mg = on_all[:nc], theta_all[:nc], Mg_all[:3 * nc]
        Jt_on, Jp_on = Jt_all[:3 * nc], Jp_all[:3 * nc]
        for a in range(nc):
            theta_on[a] = theta[on[a]]
            for r in range(3):
                Jt_on[3 * a + r] = Jt[on[a], r]
                Jp_on[3 * a + r] = Jp[on[a], r]
                Mg[3 * a + r] = grain_mass[3 * on[a] + r]
        if nc == 0:  # nothing to solve: v⁺ = v_free
            _free_flight(M, v, impulse)
            if s == steps - 1:
                _report(theta, p_center, on, np.zeros(0), np.zeros(0, np.bool_), dt,
                        theta_out, wrench_out, flags_out, pc_out)
                fell_back = False
            t += dt
            effort += spent
            memory[:] = pending
            for i in range(n):
                q[i] += dt * v[i]
            continue
        b, W, outside = support_of_mirror_average(theta_on, bounds, x_scale, phi_active, per_depth, centers, c2,
                                                  spans, rbf, degree, coef, A_fixed)
        clamped = clamped or outside
        A, ub, rows = _stacked(stacks, offsets, A_fixed.shape[0], b, dt, ub_all, rows_all)
        P, g, B, v_free = _reduce(M, Jt_on, Jp_on, Mg, v, impulse, dofs, starts)
        c, ok = _solve(P, g, A, ub, rows, warm)
        if ok and grains and _work(c, Jt_on, v_free, B) > WORK_TOLERANCE:
            P, g, B, v_free = _reduce(M, Jt_on, Jp_on, np.zeros(3 * nc), v, impulse, dofs, starts)
            c, ok = _solve(P, g, A, ub, rows, warm)
        if not ok:  # the caller takes this step by stages (its controller runs again)
            return s, clamped, effort, t, fell_back
        # which feet are on ∂W: the data-flow law's test, and the last step's report
        slipping = _slipping(c, A, ub, rows) if flow or s == steps - 1 else unreported
        step_fell_back = False
        if flow:
            c, step_fell_back, by_stages = _follow_data(c, slipping, theta_on, on, W, Jt_on, B, v_free, P, g, A, ub,
                                                        rows, r_offset, grains, phi_max, Kinv, U, flow_geometry,
                                                        tail, dt)
            if by_stages:
                return s, clamped, effort, t, fell_back
        if s == steps - 1:
            _report(theta, p_center, on, c, slipping, dt, theta_out, wrench_out, flags_out, pc_out)
            fell_back = step_fell_back
        t += dt
        effort += spent
        memory[:] = pending
        for i in range(n):  # v⁺ = v_free + B c
            acc = v_free[i]
            for j in range(len(c)):
                acc += B[i, j] * c[j]
            v[i] = acc
            q[i] += dt * acc
    return steps, clamped, effort, t, fell_back


@kernel()
def _free_flight(M, v, impulse):
    """v ← v + M⁻¹ impulse (no foot in contact; as reduce_small forms it)."""
    v += leaves_first_solve(*leaves_first_cholesky(M), impulse)


@kernel()
def _stacked(stacks, offsets, K, b, dt, ub_all, rows_all):
    """(A, ub, rows) of the nc = len(b) feet in contact: A their block-diagonal facets (a view of
    :func:`_stacks`), ub = h b (a view of ub_all), rows their first facets."""
    nc = b.shape[0]
    at = offsets[nc - 1]
    ub = ub_all[:nc * K]
    for a in range(nc):
        for f in range(K):
            ub[a * K + f] = dt * b[a, f]
    return stacks[at:at + nc * K * 3 * nc].reshape((nc * K, 3 * nc)), ub, rows_all[:nc + 1]


@kernel()
def _reduce(M, Jt, Jp, Mg, v, impulse, dofs, starts):
    """(P, g, B, v_free) of :func:`~granular.contact.reduction.reduce_qp`, in loops where the system is small."""
    if M.shape[0] < TREE_MIN_DOFS or len(starts) <= 2:
        return reduce_small(M, Jt, Jp, Mg, v, impulse)
    P, g, B, v_free, _ = reduce_qp(M, Jt, Jp, Mg, v, impulse, dofs, starts)
    return P, g, B, v_free


@kernel()
def _solve(P, g, A, ub, rows, warm):
    """The QP's impulses (as :class:`~granular.contact.solvers.NativeSolver`) and whether it was solved;
    ``warm`` = [size, the active set…] is the warm start, updated."""
    top = 1e-12
    for r in range(len(ub)):
        top = max(top, abs(ub[r]))
    # the set is updated in place; where the solve fails, size 0 says to start afresh
    c, status, size = dual_active_set(strictly_convex(P), g, A, ub, rows, NATIVE_TOLERANCE * top,
                                      warm[1:1 + len(g)], warm[0])
    ok = status >= 0 and np.all(np.isfinite(c))  # else the step by stages (which names a non-finite one)
    warm[0] = size if ok else 0
    return c, ok


@kernel()
def _work(c, Jt, v_free, B):
    """Work (J) the impulses c do on the bodies at the velocity they produce (ContactQP.work), in loops:
    no BLAS call, whose result may depend on its threads."""
    n, m = B.shape
    work = 0.0
    for i in range(n):
        vi = v_free[i]
        for j in range(m):
            vi += B[i, j] * c[j]
        for a in range(m):
            work += c[a] * Jt[a, i] * vi
    return work


@kernel()
def _slipping(c, A, ub, rows):
    """Per foot in contact, whether its impulse lies on ∂W: max over its facets of A c − ub ≥ −10⁻⁶
    × the largest bound (step._learned's test)."""
    top = 1e-12
    for r in range(len(ub)):
        top = max(top, ub[r])
    out = np.zeros(len(rows) - 1, np.bool_)
    for a in range(len(rows) - 1):
        slack = -np.inf
        for r in range(rows[a], rows[a + 1]):
            slack = max(slack, A[r, 3 * a] * c[3 * a] + A[r, 3 * a + 1] * c[3 * a + 1]
                        + A[r, 3 * a + 2] * c[3 * a + 2] - ub[r])
        out[a] = slack >= -1e-6 * top
    return out


@kernel()
def _follow_data(c, slipping, theta, on, W, Jt, B, v_free, P, g, A, ub, rows, r_offset, grains, phi_max, Kinv, U,
                 flow_geometry, tail, dt):
    """The data-flow law's impulses from max-dissipation's ``c`` (step._learned, contact.flow.data_flow):
    (impulses, fell back, by stages). A foot follows the data when it slips and is tilted within
    the data; if none does, ``c``. Every foot does: Newton's method (flow.slide_all). Some do:
    Newton's method for them alternating with the others' QP (:func:`_alternate`). ``c``, falling
    back, where Newton's method fails or (with grains) where the impulses would do work on the
    bodies. ``by stages`` where the sticking feet's QP defeats the native solver: the caller takes
    the step by stages (DAQP then solves it)."""
    nc = len(on)
    follow = np.zeros(nc, np.bool_)
    for a in range(nc):
        follow[a] = slipping[a] and abs(theta[a, 1]) <= phi_max
    if not follow.any():
        return c, False, False
    arm = np.empty(nc)
    for a in range(nc):
        arm[a] = r_offset[on[a]]
    points = W.reshape((nc, W.shape[1] // 3, 3))
    if follow.all():
        impulses, converged, work = slide_all(Jt, B, v_free, c, points, Kinv, U, flow_geometry, tail, theta, arm,
                                              dt)
        status = 1 if converged else 0
    else:
        impulses, status = _alternate(c, follow, theta, points, Jt, B, v_free, P, g, A, ub, rows, arm,
                                      Kinv, U, flow_geometry, tail, dt)
        work = _work(impulses, Jt, v_free, B) if grains and status > 0 else 0.0
    if status == 0 and follow.sum() > 1:
        impulses, status = _one_group_less(c, follow, theta, points, Jt, B, v_free, P, g, A, ub, rows, arm,
                                           Kinv, U, flow_geometry, tail, dt)
        work = _work(impulses, Jt, v_free, B) if grains and status > 0 else 0.0
    if status < 0:
        return c, False, True
    if status == 0 or (grains and work > WORK_TOLERANCE):
        return c, True, False
    return impulses, False, False


@kernel()
def _one_group_less(c, follow, theta, points, Jt, B, v_free, P, g, A, ub, rows, arm, Kinv, U, flow_geometry, tail,
                    dt):
    """contact.flow.data_flow's second try: a group of following feet moving alike, the slowest at
    ``c`` first (flow.stop_groups), keeps max-dissipation's impulses with the sticking feet and the
    others follow the data. (impulses, status) of the first that :func:`_alternate` solves, else (c, 0)."""
    slide = np.flatnonzero(follow)
    groups = stop_groups(Jt, B, v_free, c, slide, theta[slide, 1], arm[slide], flow_geometry[:3])
    for group in range(groups.max()):  # the last group alone would leave no foot to follow the data
        fewer = follow.copy()
        for i in range(len(slide)):
            if groups[i] == group:
                fewer[slide[i]] = False
        impulses, status = _alternate(c, fewer, theta, points, Jt, B, v_free, P, g, A, ub, rows, arm, Kinv, U,
                                      flow_geometry, tail, dt)
        if status != 0:
            return impulses, status
    return c, 0


@kernel()
def _alternate(c, follow, theta, points, Jt, B, v_free, P, g, A, ub, rows, arm, Kinv, U, flow_geometry, tail, dt):
    """contact.flow.data_flow where some feet (``follow``) follow the data and the others stick: the
    following feet's twists by Newton's method with the others' impulses held, then the sticking
    feet's QP with theirs held, alternating until the impulses settle. (impulses, status: 1
    solved, 0 Newton's method failed, −1 the QP failed)."""
    nc = len(follow)
    slide = np.flatnonzero(follow)
    stick = np.flatnonzero(~follow)
    ks, kk = len(slide), len(stick)
    s3, k3 = np.empty(3 * ks, np.int64), np.empty(3 * kk, np.int64)
    for i in range(ks):
        for r in range(3):
            s3[3 * i + r] = 3 * slide[i] + r
    for i in range(kk):
        for r in range(3):
            k3[3 * i + r] = 3 * stick[i] + r
    JB = Jt[s3] @ B
    hD = np.empty((3 * ks, 3 * ks))
    for i in range(3 * ks):
        for j in range(3 * ks):
            hD[i, j] = dt * JB[i, s3[j]]
    vf = Jt[s3] @ v_free
    Q, G = flow_coefficients(np.ascontiguousarray(points[slide]), Kinv, U, flow_geometry, tail,
                             np.ascontiguousarray(theta[slide]), arm[slide])
    theta_s = np.ascontiguousarray(theta[slide])
    # the sticking feet's QP: P, g and the facets restricted to them
    P_kk, P_ks = np.empty((3 * kk, 3 * kk)), np.empty((3 * kk, 3 * ks))
    for i in range(3 * kk):
        for j in range(3 * kk):
            P_kk[i, j] = P[k3[i], k3[j]]
        for j in range(3 * ks):
            P_ks[i, j] = P[k3[i], s3[j]]
    H = strictly_convex(P_kk)
    rows_k = np.zeros(kk + 1, np.int64)
    for i in range(kk):
        rows_k[i + 1] = rows_k[i] + rows[stick[i] + 1] - rows[stick[i]]
    A_k, ub_k = np.zeros((rows_k[kk], 3 * kk)), np.empty(rows_k[kk])
    top = 1e-12
    for i in range(kk):
        f = stick[i]
        for r in range(rows[f], rows[f + 1]):
            o = rows_k[i] + r - rows[f]
            ub_k[o] = ub[r]
            top = max(top, abs(ub[r]))
            for a in range(3):
                A_k[o, 3 * i + a] = A[r, 3 * f + a]
    current = c.copy()
    v = vf + JB @ current
    for _ in range(ITERATIONS):
        a = vf.copy()
        for i in range(3 * ks):
            for j in range(3 * kk):
                a[i] += JB[i, k3[j]] * current[k3[j]]
        v, wrench, ok = newton(v, a, hD, Q, G, U, theta_s, flow_geometry)
        if not ok:
            return current, 0
        new = current.copy()
        for i in range(3 * ks):
            new[s3[i]] = dt * wrench[i]
        gk = g[k3] + P_ks @ new[s3]
        x, status, _ = dual_active_set(H, gk, A_k, ub_k, rows_k, NATIVE_TOLERANCE * top,
                                       np.zeros(3 * kk, np.int64), 0)
        if status < 0 or not np.all(np.isfinite(x)):
            return current, -1
        for i in range(3 * kk):
            new[k3[i]] = x[i]
        change, size = 0.0, 1e-12
        for i in range(3 * nc):
            change = max(change, abs(new[i] - current[i]))
            size = max(size, abs(new[i]))
        current = new
        if change <= TOLERANCE * size:
            break
    return current, 1


@kernel()
def _report(theta, p_center, on, c, slipping, dt, theta_out, wrench_out, flags_out, pc_out):
    """The StepInfo of a step: per foot θ, p_center, wrench = c / h, in contact, slipping (on ∂W
    under max-dissipation's impulses, :func:`_slipping`)."""
    theta_out[:] = theta
    pc_out[:] = p_center
    wrench_out[:] = 0.0
    flags_out[:] = False
    for a in range(len(on)):
        i = on[a]
        flags_out[i, 0] = True
        flags_out[i, 1] = slipping[a]
        for r in range(3):
            wrench_out[i, r] = c[3 * a + r] / dt
