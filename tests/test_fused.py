"""The fused step (granular/simulation/fused.py) and the native QP solver it calls: the same answers
as the step stage by stage, and as quadprog, whatever the warm start."""
from pathlib import Path

import numpy as np
import pytest
import quadprog

from granular.contact.active_set import dual_active_set
from granular.contact.qp import stack_blocks
from granular.contact.reduction import strictly_convex
from granular.scenarios import scenario as scenarios
from granular.simulation import fused
from granular.simulation.simulation import Simulation


def block_qp(rng, feet, zero_bounds=0.0):
    """A random strictly convex QP with a block-diagonal A (up to 32 unit facets per foot); a share
    ``zero_bounds`` of the bounds is zero, so that many facets meet at one vertex (degenerate)."""
    n = 3 * feet
    X = rng.normal(size=(n, n))
    H = strictly_convex(X @ X.T + 0.05 * np.eye(n))
    blocks = [rng.normal(size=(int(rng.integers(4, 33)), 3)) for _ in range(feet)]
    blocks = [b / np.linalg.norm(b, axis=1, keepdims=True) for b in blocks]
    bounds = [np.where(rng.random(len(b)) < zero_bounds, 0.0, rng.uniform(0.1, 1.0, len(b))) for b in blocks]
    A, ub, rows = stack_blocks(blocks, bounds)
    return H, rng.normal(size=n) * 10, A, ub, rows


@pytest.mark.parametrize("zero_bounds", [0.0, 0.7])
def test_the_native_solver_matches_quadprog_from_any_warm_start(zero_bounds):
    """Cold, and warm from random (also out-of-range and repeated) constraint indices: a dual
    active-set method may start from any set, once the set's negative multipliers are dropped."""
    rng = np.random.default_rng(5)
    bound = compared = 0
    for trial in range(300):
        H, g, A, ub, rows = block_qp(rng, int(rng.integers(1, 5)), zero_bounds)
        try:
            ref = quadprog.solve_qp(H, -g, -A.T, -ub)[0]
        except ValueError:  # quadprog, too, can lose its way at a degenerate vertex
            ref = None
        n = len(g)
        for warm, count in ((np.zeros(n, np.int64), 0), (rng.integers(-2, len(ub) + 2, n), n)):
            x, status, size = dual_active_set(H, g, A, ub, rows, 1e-9, warm.copy(), count)
            assert status >= 0, trial
            assert_optimal(H, g, A, ub, x)
            if ref is not None:
                np.testing.assert_allclose(x, ref, atol=1e-7 * max(1.0, np.abs(ref).max()))
                compared += 1
        bound += size > 0
    assert bound > 200, "most instances should bind constraints"
    assert compared > 400


def assert_optimal(H, g, A, ub, x):
    """KKT: feasible, and −(H x + g) a non-negative combination of the tight constraints' normals."""
    from scipy.optimize import nnls

    assert np.all(A @ x - ub <= 1e-8)
    tight = A @ x - ub >= -1e-8
    grad = H @ x + g
    residual = nnls(A[tight].T, -grad)[1] if tight.any() else np.linalg.norm(grad)
    assert residual <= 1e-6 * max(1.0, np.linalg.norm(g))


def test_the_native_solver_hands_an_ill_conditioned_qp_on():
    """More impulses than the dofs they move (a rover's wheels): P is singular but for its ridge, and
    the native solver says so rather than trusting L⁻¹ (NativeSolver then asks DAQP)."""
    rng = np.random.default_rng(1)
    B = rng.normal(size=(6, 9))
    H = strictly_convex(B.T @ B)
    A, ub, rows = stack_blocks([np.eye(3)] * 3, [np.ones(3)] * 3)
    _, status, _ = dual_active_set(H, rng.normal(size=9), A, ub, rows, 1e-9, np.zeros(9, np.int64), 0)
    assert status == -3
    indefinite = np.diag([1.0, 2.0, -1.0])   # a pivot that is not positive: said, not divided by
    x, status, _ = dual_active_set(indefinite, np.ones(3), np.eye(3), np.ones(3), np.array([0, 3]), 1e-9,
                                   np.zeros(3, np.int64), 0)
    assert status == -3 and np.all(np.isfinite(x))


def test_the_native_solver_survives_a_nearly_dependent_warm_start():
    """Three feet with nearly parallel facets, warm started from a set with a repeated constraint
    (a case a review found): Gram–Schmidt's rounding once let a dependent constraint in and the
    active set outgrow its arrays. Now the set stays independent and the answer is the QP's."""
    d = np.load(Path(__file__).parent / "data" / "native_qp_near_dependent.npz")
    H, g, A, ub, rows = d["H"], d["g"], d["A"], d["ub"], d["rows"]
    for _ in range(50):
        x, status, size = dual_active_set(H, g, A, ub, rows, 1e-9 * np.abs(ub).max(), d["w"].copy(), int(d["c"]))
        assert status >= 0 and size <= len(g)
        assert_optimal(H, g, A, ub, x)


def test_a_first_pivot_that_is_not_positive_is_reported():
    x, status, _ = dual_active_set(np.diag([-1.0, 2.0, 1.0]), np.ones(3), np.eye(3), np.ones(3), np.array([0, 3]),
                                   1e-9, np.zeros(3, np.int64), 0)
    assert status == -3 and np.all(np.isfinite(x))


def test_a_pose_the_native_solver_never_takes_steps_by_stages_to_the_end():
    """Legs held straight (every limb at thigh + shank below its hip): the reduced QP is too
    ill-conditioned for the native solver at every step, so each step falls back to DAQP by stages,
    in a loop (it once recursed per step and overflowed the stack), and the run is DAQP's."""
    from granular.scenarios.control import Hold, JointPD
    from granular.simulation.step import State

    def held(solver):
        sim = scenarios.build(scenarios.load("quad-slide").with_(medium="sand", solver=solver))
        robot = sim.controller.robot
        sim.controller = JointPD(robot, Hold(robot, {limb: (0.0, -(robot.thigh + robot.shank))
                                                     for limb in ("front_1", "front_2", "rear_1", "rear_2")}))
        q = sim.state.q.copy()
        q[0], q[2], q[3:] = 1.0, 0.0, sim.controller.targets(0.0)
        q[1] = robot.thigh + robot.shank + 0.3
        sim.state = State(0.0, q, np.zeros_like(q))
        sim.advance(1500)
        return sim

    native, daqp = held("native"), held("daqp")
    assert native.fused_control() is not None and native.steps == 1500
    np.testing.assert_allclose(native.state.q, daqp.state.q, atol=1e-9)


def test_advancing_no_steps_changes_nothing():
    sim = scenarios.build(scenarios.load("quad-trot").with_(solver="native"))
    sim.advance(5)
    info, state = sim.info, sim.state
    sim.advance(0)
    assert sim.info is info and sim.state is state and sim.steps == 5


def run(name, steps, stages, **overrides):
    sim = scenarios.build(scenarios.load(name).with_(solver="native", **overrides))
    infos = []
    for _ in range(steps):
        if stages:
            sim._stage_step()
        else:
            sim.advance(1)
        infos.append(sim.info)
    return sim, infos


@pytest.mark.parametrize("name, steps, medium, law", [("quad-trot", 1500, "sand", "max-dissipation"),
                                                       ("quad-push", 1200, "sand", "max-dissipation"),
                                                       ("quad-slide", 800, "sand", "max-dissipation"),
                                                       ("quad-trot", 1000, "beads", "max-dissipation"),
                                                       ("quad-trot", 1500, "sand", "data-flow"),
                                                       ("quad-push", 1200, "sand", "data-flow"),
                                                       ("quad-trot", 1000, "beads", "data-flow"),
                                                       ("drop-upright", 1000, "sand", "data-flow"),
                                                       ("drop-tilted", 1000, "sand", "data-flow"),
                                                       ("drop-tilted", 1000, "sand", "max-dissipation")])
def test_the_fused_step_equals_the_step_by_stages(name, steps, medium, law):
    """Trot (gait), push (keyframes) and slide (a held pose): the whole run, state and contacts; on
    Beads, a model of W per unit depth (groups of directions: tests/test_model.py); a dropped foot,
    which has no joints (Passive's fused form). Under data-flow the
    push has many steps where some feet stick while others slide (the sticking feet's QP then runs
    in the fused step too): almost no step is left to the stages."""
    staged = []
    original = Simulation._stage_step

    def counted(sim):
        staged.append(sim.steps)
        original(sim)

    Simulation._stage_step = counted
    try:
        a, info_a = run(name, steps, stages=False, medium=medium, contact=law)
    finally:
        Simulation._stage_step = original
    assert len(staged) <= steps // 100, f"{len(staged)} of {steps} steps by stages"
    b, info_b = run(name, steps, stages=True, medium=medium, contact=law)
    assert a.fused_control() is not None, "the quadruped's and the dropped foot's scenarios fuse"
    assert a.steps == b.steps == steps and a.state.t == pytest.approx(b.state.t, abs=1e-12)
    np.testing.assert_allclose(a.state.q, b.state.q, atol=1e-9)
    np.testing.assert_allclose(a.state.v, b.state.v, atol=1e-7)
    for x, y in zip(info_a[-50:], info_b[-50:]):
        np.testing.assert_allclose(x.theta, y.theta, atol=1e-9)
        np.testing.assert_array_equal(x.active, y.active)
        np.testing.assert_allclose(x.wrench, y.wrench, atol=1e-5 * max(1.0, np.abs(y.wrench).max()))
        np.testing.assert_allclose(x.p_center, y.p_center, atol=1e-9)
    assert sum(x.slipping.sum() for x in info_a) == pytest.approx(sum(y.slipping.sum() for y in info_b), rel=0.01)
    assert sum(x.fallback for x in info_a) == sum(y.fallback for y in info_b)
    assert np.any([x.active.any() for x in info_a]) and np.any([x.slipping.any() for x in info_a])


@pytest.mark.parametrize("control", [{}, {"slip": None, "torque": 3.0}])
def test_the_wheel_bed_steps_fused_as_by_stages(control):
    """The test bed's carriage and motor servos (Carriage's fused form): the same run as by stages,
    the servos' integrals (the controller's memory) included, across calls of one and of many steps
    and a step by stages between them; slip set (the motor a rate servo) and torque set (ramped)."""
    spec = scenarios.load("wheel-bed")
    spec = spec.with_(solver="native", control={**spec.control, **control})
    a, b = scenarios.build(spec), scenarios.build(spec)
    assert a.fused_control() is not None, "the wheel steps fused"
    a.advance(700)
    a._stage_step()
    for _ in range(100):
        a.advance(1)
    a.advance(1199)
    for _ in range(2000):
        b._stage_step()
    assert a.steps == b.steps == 2000
    np.testing.assert_allclose(a.state.q, b.state.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.state.v, b.state.v, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.memory, b.memory, rtol=0, atol=1e-12)
    assert b.memory[0] != 0.0 and (b.memory[1] != 0.0) == (not control), "the servos' integrals moved"
    assert a.info.active[0] and b.state.q[0] > 0.05, "the wheel rolls along the bed in contact"


@pytest.mark.parametrize("name", ["foot-track-straight", "foot-track-curved", "recorded"])
def test_the_foot_tracking_steps_fused_as_by_stages(name):
    """The paper's PID on a foot along a line, an arc (in pebbles) and a recorded path (as
    `granular validate --sim` replays DEM paths): the fused run is the run by stages, the PID's
    error integral (its memory) included, across calls of many steps and of one."""
    from granular.scenarios.control import PIDTracker, Recorded

    a, b = (scenarios.build(scenarios.load("foot-track-straight" if name == "recorded" else name)
                            .with_(solver="native")) for _ in range(2))
    if name == "recorded":
        t = np.linspace(0.0, 2.0, 11)
        path = Recorded(t, np.column_stack([-0.05 + 0.05 * t, 0.02 - 0.06 * t, 0.02 * t]),
                        np.tile([0.05, -0.06, 0.02], (11, 1)))
        for sim in (a, b):
            c = sim.controller
            sim.controller = PIDTracker(path, c.dt, c.kp, c.ki, c.kd, c.weight, c.ndof)
            sim.memory = sim.controller.initial_memory()
    assert a.fused_control() is not None, "the tracker steps fused"
    a.advance(1200)
    for _ in range(50):
        a.advance(1)
    a.advance(1250)
    in_medium = 0
    for _ in range(2500):
        b._stage_step()
        in_medium += bool(b.info.active[0])
    np.testing.assert_allclose(a.state.q, b.state.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.state.v, b.state.v, rtol=0, atol=1e-10)
    assert isinstance(a.memory, np.ndarray) and np.abs(a.memory).max() > 0
    np.testing.assert_allclose(a.memory, b.memory, rtol=0, atol=1e-12)
    assert in_medium > 300, "the foot goes through the medium"


def test_many_steps_in_one_call_equal_one_call_per_step():
    a = scenarios.build(scenarios.load("quad-trot").with_(solver="native"))
    b = scenarios.build(scenarios.load("quad-trot").with_(solver="native"))
    a.advance(700)
    for _ in range(700):
        b.advance(1)
    np.testing.assert_array_equal(a.state.q, b.state.q)
    np.testing.assert_array_equal(a.info.wrench, b.info.wrench)


@pytest.mark.parametrize("overrides", [dict(solver="daqp"), dict(contact="hertz"), dict(representation="exact")])
def test_what_does_not_fuse_steps_by_stages(overrides):
    sim = scenarios.build(scenarios.load("quad-trot").with_(**{"solver": "native", **overrides}))
    assert sim.fused_control() is None


def test_a_controller_without_a_fused_form_steps_by_stages():
    sim = scenarios.build(scenarios.load("rover-climb").with_(solver="native"))
    assert sim.fused_control() is None
    sim.advance(10)
    assert sim.steps == 10


def test_a_step_the_native_solver_cannot_take_is_stepped_by_stages(monkeypatch):
    """Where the fused call stops early (its QP failed), the loop takes that step by stages and
    fuses the rest: the run equals the one that never stopped."""
    ref = scenarios.build(scenarios.load("quad-trot").with_(solver="native"))
    ref.advance(600)
    sim = scenarios.build(scenarios.load("quad-trot").with_(solver="native"))
    real, calls = fused.advance, []

    def stops_once(model, arrays, controls, states, warms, steps, memories=None):
        calls.append(steps)
        if len(calls) > 1:
            return real(model, arrays, controls, states, warms, steps, memories)
        t, q, v, info, _ = real(model, arrays, controls, states, warms, 250, memories)
        return t, q, v, info, np.array([250])

    monkeypatch.setattr(fused, "advance", stops_once)
    sim.advance(600)
    assert calls == [600, 349] and sim.steps == 600
    np.testing.assert_allclose(sim.state.q, ref.state.q, atol=1e-9)


def test_robots_stepped_together_equal_robots_stepped_alone():
    """A batch of gym-like robots (one model, each its own joint goal and state) in one call equals
    each stepped alone, bit for bit."""
    from granular.simulation.simulation import advance_together

    rng = np.random.default_rng(4)

    def robots():
        out = []
        for k in range(5):
            sim = scenarios.build(scenarios.load("quad-slide").with_(solver="native"))
            sim.state.q[3:] += rng.uniform(-0.05, 0.05, len(sim.state.q) - 3)
            out.append(sim)
        return out

    state = rng.bit_generator.state
    alone = robots()
    rng.bit_generator.state = state
    together = robots()
    model = alone[0].model
    for sim in together[1:]:
        sim.model = model          # one model shared, as a batch worker shares its media
    for sim in alone:
        sim.advance(300)
    controls = [sim.fused_control() for sim in together]
    assert fused.batchable(controls)
    advance_together(together, controls, 300)
    for a, b in zip(alone, together):
        np.testing.assert_array_equal(a.state.q, b.state.q)
        np.testing.assert_array_equal(a.state.v, b.state.v)
        np.testing.assert_array_equal(a.info.wrench, b.info.wrench)
        assert a.steps == b.steps == 300


def test_the_simulation_notices_a_new_controller():
    """Validation replaces a simulation's controller: the new one decides whether steps fuse."""
    sim = scenarios.build(scenarios.load("quad-trot").with_(solver="native"))
    assert sim.fused_control() is not None

    class Still:
        def initial_memory(self):
            return None

        def __call__(self, t, q, v, memory):
            return np.zeros(len(q)), memory

    sim.controller = Still()
    assert sim.fused_control() is None
    assert isinstance(sim, Simulation)
    sim.advance(5)
    assert sim.steps == 5
