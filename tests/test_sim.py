from dataclasses import replace

import numpy as np
import pytest

from granular.scenarios import scenario as scenarios

from granular.dynamics import terrain
from granular.contact.detection import FootContact, Feet, detect
from granular.contact.qp import ContactQP, SolverError, stack_blocks
from granular.contact.reduction import TREE_MIN_DOFS, one_branch, reduce_qp
from granular.contact.solvers import CvxpySolver, DaqpSolver, NativeSolver, OsqpSolver, QuadprogSolver
from granular.errors import GranularError
from granular.learning.catalog import load_model
from granular.dynamics.multibody import Body, MultiBody
from granular.simulation.step import SimModel, State, step


def run(name, set=None, **over):
    """A shipped scenario with overrides: fields (duration=…, dt=…) and table entries (set={"initial.angle": …})."""
    spec = scenarios.load(name)
    tables = {}
    for key, value in (set or {}).items():
        section, field = key.split(".")
        tables[section] = {**getattr(spec, section), **tables.get(section, {}), field: value}
    return scenarios.run(spec.with_(**over, **tables))


# --- dynamics ---------------------------------------------------------------

def chain():
    return MultiBody((Body("base", 3.0, 0.2, com=(0.05, 0.1)),
                      Body("upper", 1.5, 0.05, com=(0.0, -0.2), parent="base", joint=(0.1, 0.0), offset=0.3),
                      Body("lower", 1.0, 0.03, com=(0.0, -0.15), parent="upper", joint=(0.0, -0.3)),
                      Body("side", 0.5, 0.01, com=(0.1, 0.0), parent="base", joint=(-0.1, 0.05))))


def test_bias_forces_match_lagrange_equations():
    """k = gravity − (Ṁ v − ½ ∂(vᵀ M v)/∂q), checked by finite differences."""
    mb = chain()
    rng = np.random.default_rng(0)
    q, v = rng.normal(size=mb.ndof), rng.normal(size=mb.ndof)
    M, k = mb.dynamics(q, v)
    eps = 1e-6
    M_dot = (mb.dynamics(q + eps * v, v)[0] - mb.dynamics(q - eps * v, v)[0]) / (2 * eps)
    dT = np.array([(v @ mb.dynamics(q + eps * e, v)[0] @ v - v @ mb.dynamics(q - eps * e, v)[0] @ v) / (4 * eps)
                   for e in np.eye(mb.ndof)])
    grad_V = np.array([(mb.energy(q + eps * e, 0 * v) - mb.energy(q - eps * e, 0 * v)) / (2 * eps)
                       for e in np.eye(mb.ndof)])
    np.testing.assert_allclose(k, -grad_V - (M_dot @ v - dT), rtol=1e-5, atol=1e-6)
    assert np.all(np.linalg.eigvalsh(M) > 0)


def test_mass_matrix_gives_the_bodies_kinetic_energy():
    """½ vᵀ M v equals Σ ½ m |v_com|² + ½ I ω² of the bodies' own velocities (another route: the point
    Jacobians); over random v this fixes every entry of the symmetric M."""
    mb = chain()
    rng = np.random.default_rng(4)
    for _ in range(8):
        q, v = rng.normal(size=mb.ndof), rng.normal(size=mb.ndof)
        M, _ = mb.dynamics(q, v)
        kinetic = mb.energy(q, v) - mb.energy(q, 0 * v)
        assert 0.5 * v @ M @ v == pytest.approx(kinetic, rel=1e-12)


def test_tree_reduction_equals_the_dense_one():
    """The reduced QP over the tree's branches (per-branch blocks and a Schur complement on the
    base) equals the dense formulas, with contacts on the branches and one on the base itself."""
    from granular.apps.bench import centipede

    mb = centipede(14, wrench_model())[0].multibody
    assert mb.ndof >= TREE_MIN_DOFS and len(mb.branches[1]) == 15
    rng = np.random.default_rng(5)
    q, v = 0.3 * rng.normal(size=mb.ndof), rng.normal(size=mb.ndof)
    frames = mb.frames(q)
    M, k = mb.dynamics(q, v, frames)
    bodies = np.array([0, 3, 6, 8, 12, 29, 42])
    local = rng.normal(size=(len(bodies), 2))
    Jt = mb.jacobians(*frames, bodies, local).reshape(-1, mb.ndof)
    Jp = mb.jacobians(*frames, bodies, local + 0.1).reshape(-1, mb.ndof)
    Mg, impulse = rng.uniform(0.1, 10.0, size=Jt.shape[0]), 1e-3 * (k + rng.normal(size=mb.ndof))
    M_inv = np.linalg.inv(M)
    B = M_inv @ Jt.T
    H = M + Jp.T @ (Mg[:, None] * Jp)
    v_free = v + M_inv @ impulse
    expected = (B.T @ H @ B, B.T @ H @ v_free, B, v_free)
    for branches in (mb.branches, one_branch(mb.ndof)):
        got = reduce_qp(M, Jt, Jp, Mg, v, impulse, *branches)
        for a, b in zip(got, expected):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12 * np.abs(b).max())
        np.testing.assert_allclose(got[0] @ got[4], -got[1], atol=1e-6 * np.abs(got[1]).max())  # up to the ridge


def test_free_chain_conserves_energy_without_contact():
    """Semi-implicit Euler keeps the energy of a tumbling chain within a small bounded band."""
    mb = chain()
    model = SimModel(mb, (FootContact("f", 3),), terrain.flat(-100.0), wrench_model(), dt=1e-4)
    state = State(0.0, np.zeros(mb.ndof), np.array([0.3, 1.0, 2.0, -3.0, 1.5, 4.0]))
    e0 = mb.energy(state.q, state.v)
    energies = []
    for i in range(5000):
        state, _ = step(model, state, np.zeros(mb.ndof), QuadprogSolver(), i)
        energies.append(mb.energy(state.q, state.v))
    assert np.max(np.abs(np.array(energies) - e0)) < 2e-3 * abs(e0) + 0.05


_wm = {}


def wrench_model(medium="sand"):
    if medium not in _wm:
        _wm[medium] = load_model(medium)
    return _wm[medium]


# --- contact geometry ---------------------------------------------------------

def foot_model(ground):
    mb = MultiBody((Body("foot", 7.357, 0.061, com=(0.0, 0.15)),))
    return mb, Feet((FootContact("foot", 0),))


def test_contact_geometry_flat():
    mb, feet = foot_model(terrain.flat(0.1))
    for z, angle in [(0.05, 0.0), (0.08, 0.4), (0.12, -0.3), (-0.5, 1.5)]:
        q = np.array([0.3, z, angle])
        f = detect(mb, feet, terrain.flat(0.1), mb.frames(q))
        lowest = z - 0.1 - feet.contacts[0].foot.radius * abs(np.sin(angle))  # the plate's rim
        assert f.theta[0, 0] == pytest.approx(lowest)
        assert f.theta[0, 1] == pytest.approx(angle)
        assert f.active[0] == (lowest < 0)
        np.testing.assert_allclose(f.p_center[0], [0.3, z])


def test_a_foot_tipped_past_lying_flat_meets_the_medium_with_its_far_end():
    """The cylinder is taken end for end: p_center at its far end, φ from the reversed axis, p_r
    r_offset up that axis (the twist Jt gives is that point's), and on both sides of lying flat the
    lower end is the one in the medium."""
    mb, feet = foot_model(terrain.flat(0.1))
    foot = feet.contacts[0].foot
    for angle in (2.5, -2.5, np.pi / 2 + 0.01):
        q = np.array([0.3, -0.5, angle])
        f = detect(mb, feet, terrain.flat(0.1), mb.frames(q))
        axis = np.array([-np.sin(angle), np.cos(angle)])
        far = q[:2] + foot.length * axis
        np.testing.assert_allclose(f.p_center[0], far, atol=1e-12)
        assert f.theta[0, 1] == pytest.approx(angle - np.sign(angle) * np.pi)
        assert f.theta[0, 0] == pytest.approx(far[1] - 0.1 - foot.radius * abs(np.sin(f.theta[0, 1])))
        p_r = far - foot.r_offset * axis
        twist = f.Jt[0] @ np.array([0.0, 0.0, 1.0])  # turning about the body's origin
        np.testing.assert_allclose(twist, [-(p_r[1] - q[1]), p_r[0] - q[0], 1.0], atol=1e-12)
    below = detect(mb, feet, terrain.flat(0.1), mb.frames(np.array([0.3, -0.5, np.pi / 2 - 0.01])))
    np.testing.assert_allclose(below.p_center[0], [0.3, -0.5])
    # two feet on one body, the second mounted upside down: only it is taken end for end
    two = Feet((FootContact("up", 0), FootContact("down", 0, p_center=(0.1, 0.0), axis=(0.0, -1.0))))
    f = detect(mb, two, terrain.flat(0.1), mb.frames(np.array([0.3, -0.5, 0.0])))
    np.testing.assert_allclose(f.p_center, [[0.3, -0.5], [0.4, -0.5 - foot.length]], atol=1e-12)
    np.testing.assert_allclose(f.theta[:, 1], [0.0, 0.0], atol=1e-12)


def test_contact_geometry_on_a_slope():
    alpha = 0.3
    ground = terrain.slope(alpha)
    mb, feet = foot_model(ground)
    # a foot standing along the slope's normal, 0.02 below the surface at x = 0
    n = np.array([-np.sin(alpha), np.cos(alpha)])
    p = -0.02 * n
    f = detect(mb, feet, ground, mb.frames(np.array([p[0], p[1], alpha])))
    assert f.theta[0] == pytest.approx([-0.02, 0.0])
    np.testing.assert_allclose(f.normal[0], n)
    # a world-vertical foot on that slope is tilted by −α from the normal
    f = detect(mb, feet, ground, mb.frames(np.array([p[0], p[1], 0.0])))
    assert f.theta[0, 1] == pytest.approx(-alpha)
    # J_t gives the twist in F_c: moving along the world x has a component along −n
    twist = f.Jt[0] @ np.array([1.0, 0.0, 0.0])
    np.testing.assert_allclose(twist[:2], [np.cos(alpha), -np.sin(alpha)])


def test_piecewise_terrain_heights_and_normals():
    ground = terrain.Terrain((-1.0, 0.0, 1.0), (0.5, 0.0, 0.0))
    assert ground.height(-0.5) == pytest.approx(0.25)
    assert ground.height(0.5) == pytest.approx(0.0)
    xs = np.array([-2.0, -1.0, -0.3, 0.0, 0.7, 1.0, 3.0])  # a float takes a path of its own: the same heights
    np.testing.assert_allclose([ground.height(float(x)) for x in xs], ground.height(xs), rtol=0, atol=1e-15)
    pc, n, h = ground.closest([[0.5, 0.1], [-0.5, 0.25 + 0.1]])
    np.testing.assert_allclose(h, [0.1, 0.1 * np.cos(np.arctan(0.5))])
    np.testing.assert_allclose(n[0], [0.0, 1.0])
    with pytest.raises(GranularError, match="strictly increasing"):
        terrain.Terrain((0.0, 0.0), (1.0, 2.0))


# --- the QP -----------------------------------------------------------------

def random_qp(rng, model, feet=2, representation="exact"):
    n = 3 * feet + 3  # more dofs than contact impulses: a strictly convex QP, unique c
    L = rng.normal(size=(n, n))
    M = L @ L.T + n * np.eye(n)
    thetas = np.column_stack([rng.uniform(-0.06, -0.005, feet), rng.uniform(-1.0, 1.0, feet)])
    if representation == "exact":
        spaces = model.halfspaces(thetas)
    else:
        A = model.fixed_normals(32)
        spaces = [(A, b) for b in model.offsets(A, thetas)]
    h = 1e-3
    A, b, rows = stack_blocks([A for A, _ in spaces], [h * b for _, b in spaces])
    return ContactQP(M=M, v=rng.normal(size=n), impulse=h * rng.normal(size=n) * 50,
                     Jt=rng.normal(size=(3 * feet, n)), Jp=rng.normal(size=(3 * feet, n)),
                     Mg=np.tile([14.7, 14.7, 0.12], feet), A=A, ub=b, rows=rows)


@pytest.mark.parametrize("representation", ["exact", "fixed"])
def test_solvers_agree_with_the_reference(representation):
    rng = np.random.default_rng(7)
    model = wrench_model()
    active_seen = 0
    for trial in range(12):
        qp = random_qp(rng, model, feet=1 + trial % 3, representation=representation)
        ref = CvxpySolver().solve(qp)
        scale = max(np.abs(ref).max(), 1e-9)
        for solver in (DaqpSolver(), QuadprogSolver(), OsqpSolver(), NativeSolver()):
            c = solver.solve(qp)
            assert np.abs(c - ref).max() <= 1e-6 * scale, (solver.name, trial)
        A, ub = qp.stacked_constraints()
        active_seen += np.any(A @ ref > ub - 1e-7 * np.abs(ub).max())
    assert active_seen >= 6, "the instances should exercise active constraints"


def test_dense_solvers_stay_exact_whatever_working_set_the_last_step_left():
    """Constraint generation starts from the previous QP's binding constraints: with one solver
    reused over unrelated QPs of one size (a stale, wrong working set) each answer is still the
    reference's, and a QP whose answer binds nothing is solved with no constraint at all."""
    rng = np.random.default_rng(11)
    model = wrench_model()
    solvers = (DaqpSolver(), QuadprogSolver(), NativeSolver())
    bound = 0
    for trial in range(16):
        qp = random_qp(rng, model, feet=2, representation="fixed")
        if trial % 2:  # bounds far away: the unconstrained answer is the QP's
            qp = replace(qp, ub=qp.ub + 1e3)
            P, g = qp.reduced
            ref = np.linalg.solve(P, -g)
            assert (qp.A @ ref < qp.ub).all()
        else:
            ref = CvxpySolver().solve(qp)
        for solver in solvers:
            c = solver.solve(qp)
            assert np.abs(c - ref).max() <= 1e-6 * max(np.abs(ref).max(), 1e-9), (solver.name, trial)
        bound += solvers[0]._working.any()
    assert bound == 8, "the tight QPs bind constraints, the loose ones none"


def test_dense_solvers_solve_a_subproblem_that_binds_nothing():
    """The data-flow law's sticking feet (a Restricted QP, with no working set from the last step)
    whose answer lies inside W: the unconstrained minimiser."""
    from granular.contact.flow import Restricted

    rng = np.random.default_rng(2)
    L = rng.normal(size=(6, 6))
    P, g = L @ L.T + np.eye(6), rng.normal(size=6)
    A, ub, rows = stack_blocks([rng.normal(size=(8, 3))] * 2, [np.full(8, 1e3)] * 2)
    for solver in (DaqpSolver(), QuadprogSolver(), NativeSolver()):
        np.testing.assert_allclose(solver.solve(Restricted(P, g, A, ub, rows)), np.linalg.solve(P, -g), rtol=1e-9)


def test_osqp_keeps_its_workspace_when_the_structure_stays():
    rng = np.random.default_rng(3)
    model = wrench_model()
    solver = OsqpSolver()
    qp1 = random_qp(rng, model, feet=2, representation="fixed")
    solver.solve(qp1)
    workspace = solver._solver
    qp2 = random_qp(rng, model, feet=2, representation="fixed")
    c = solver.solve(qp2)
    assert solver._solver is workspace
    np.testing.assert_allclose(c, CvxpySolver().solve(qp2), atol=1e-6 * np.abs(c).max())


def test_solver_failure_names_the_step_and_contact():
    class Broken:
        name = "broken"

        def solve(self, qp):
            return np.full(qp.Jt.shape[0], np.nan)

    model = scenarios.build(scenarios.load("drop-upright")).model
    state = State(0.0, np.array([0.0, -0.02, 0.0]), np.zeros(3))
    with pytest.raises(SolverError, match=r"step 17 \(t = 0.0000 s\), contacts foot \(d=-0.0200 m"):
        step(model, state, np.zeros(3), Broken(), 17)


# --- invariants of whole runs -------------------------------------------------

@pytest.mark.parametrize("name", ["drop-upright", "drop-slope", "drop-tilted"])
def test_passive_drops_never_gain_energy(name):
    """The shipped drops (paper's M_g, default fixed normals): no step raises the mechanical
    energy by more than 1e-9 J (observed ≤ 1e-12 J: semi-implicit Euler loses ½ m g² h² per step)."""
    rec = run(name)
    assert np.diff(rec.energy).max() <= 1e-9
    assert rec.energy[-1] < rec.energy[0]


@pytest.mark.parametrize("representation", ["fixed", "exact"])
@pytest.mark.parametrize("seed", range(4))
def test_without_grain_term_contact_never_does_work(representation, seed):
    """With M_g = 0 the QP's optimality conditions make the contact power −λᵀ h b ≤ 0, so even
    a foot kicked over in any direction never gains energy (bound 1e-9 J per step)."""
    rng = np.random.default_rng(seed)
    spec = scenarios.load("drop-upright")
    initial = {"height": float(rng.uniform(-0.03, 0.02)), "angle": float(rng.uniform(-0.8, 0.8)),
               "vx": float(rng.normal() * 0.3), "vz": float(rng.normal() * 0.3), "omega": float(rng.normal() * 2)}
    rec = scenarios.run(spec.with_(robot={**spec.robot, "grain_mass": [0.0, 0.0, 0.0]}, initial=initial,
                                   duration=0.7, representation=representation, contact="max-dissipation"))
    assert np.diff(rec.energy).max() <= 1e-9


def test_foot_at_rest_stays_put_for_5_s():
    spec = scenarios.load("drop-upright")
    settled = scenarios.run(spec.with_(duration=1.0))
    rest = {"x": float(settled.q[-1, 0]), "z": float(settled.q[-1, 1]), "angle": 0.0}
    rec = scenarios.run(spec.with_(initial=rest, duration=5.0))
    assert np.abs(rec.q - rec.q[0]).max() < 1e-6
    assert np.abs(rec.v).max() < 1e-6
    assert rec.active.all()


def test_drop_outcomes():
    upright = scenarios.summary(run("drop-upright"))["bodies"]["foot"]
    assert abs(upright["final"]["angle"]) < 1e-6 and abs(upright["final"]["vz"]) < 1e-6
    slope = run("drop-slope")
    tilt = slope.q[:, 2] - slope.q[0, 2]
    assert np.abs(tilt).max() > 0.005, "on a slope it should begin to tip"
    assert np.abs(tilt).max() < 0.1 and np.abs(slope.v[-1]).max() < 1e-6, "and then balance"
    tilted = run("drop-tilted")
    assert tilted.q[-1, 2] > 1.2, "tilted 0.2 rad it should tip over"
    assert np.abs(tilted.v[-1]).max() < 1e-6, "and come to rest"
    # on the surface, not turned through it: lying within 0.35 rad of flat, its lowest point less than
    # a foot radius deep (measured: 0.01 rad past flat, its rim 41 mm deep under max-dissipation; 0.32
    # rad past flat, the far end's rim 47 mm deep under data-flow, whose flow lets the falling far end
    # dig in where the hull's normal skis it)
    assert abs(tilted.q[-1, 2] - np.pi / 2) < 0.35
    assert tilted.active[-1, 0] and -tilted.theta[-1, 0, 0] < tilted.model.contacts[0].foot.radius


def test_mirrored_drops_mirror_each_other():
    plus = run("drop-tilted", duration=1.0)
    minus = run("drop-tilted", duration=1.0, set={"initial.angle": -0.2})
    np.testing.assert_allclose(minus.q[:, 0], -plus.q[:, 0], atol=1e-9)
    np.testing.assert_allclose(minus.q[:, 1], plus.q[:, 1], atol=1e-9)
    np.testing.assert_allclose(minus.q[:, 2], -plus.q[:, 2], atol=1e-9)


def test_tracking_resistance_grows_with_depth():
    rec = run("foot-track-straight")
    depth = -rec.theta[:, 0, 0]
    deep, shallow = depth > 0.03, (depth > 0.005) & (depth < 0.015)
    assert rec.wrench[deep, 0, 1].mean() > 2 * rec.wrench[shallow, 0, 1].mean() > 0
    assert np.abs(rec.wrench[deep, 0, 2]).mean() > np.abs(rec.wrench[shallow, 0, 2]).mean()


@pytest.mark.parametrize("text,message", [
    ('duration = 1.0\n[robot]\nkind = "foot"\nmass = -3\n', "robot.mass: expected a number > 0"),
    ('duration = 1.0\n[robot]\nkind = "foot"\ngrain_mass = "abc"\n', "robot.grain_mass: expected a list"),
    ('duration = 1.0\n[robot]\nkind = "foot"\n[terrain]\nkind = "hill"\n',
     "terrain.kind: invalid value 'hill'; choose flat, slope, profile"),
    ('duration = 1.0\nspeed = 3\n[robot]\nkind = "foot"\n', "unknown field `speed`"),
    ('duration = 1.0\n[robot]\nkind = "quadruped"\nspec = "robots/robosimian.toml"\n'
     '[control]\nkind = "trot"\nperiod = 0.0\n', "control.period: expected a number >= 0.05"),
    ('duration = nan\n[robot]\nkind = "foot"\n', "duration: expected a number > 0"),
    ('duration = 1.0\n[robot]\nkind = "foot"\n[initial]\nz = 0.1\nheight = 0.1\n', "give z or height"),
])
def test_bad_scenarios_are_clear_errors(tmp_path, text, message):
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    with pytest.raises(GranularError) as info:
        scenarios.build(scenarios.load(str(bad)))
    assert message in str(info.value) and str(bad) in str(info.value)


def test_unknown_scenario_and_medium():
    with pytest.raises(GranularError, match="unknown scenario 'nope'; known: .*drop-upright"):
        scenarios.load("nope")
    with pytest.raises(GranularError, match="unknown medium 'mud'"):
        scenarios.build(scenarios.load("drop-upright").with_(medium="mud"))


@pytest.mark.slow
def test_default_step_is_accurate_against_a_quarter_step():
    """h = 1 ms (the default) against h = 0.25 ms on the hardest single-foot run, the tilted drop,
    whose far end strikes the sand: under data-flow its resting pose converges as h shrinks
    (rest angle 1.757, 1.769, 1.781, 1.786, 1.787 rad at 2, 1, 0.5, 0.25, 0.125 ms; 1 % at 1 ms), under
    max-dissipation it moves by 0.3 mm and 0.04 mrad."""
    coarse, fine = run("drop-tilted"), run("drop-tilted", dt=2.5e-4)
    assert np.abs(coarse.q[-1, :2] - fine.q[-1, :2]).max() < 0.007
    assert abs(coarse.q[-1, 2] - fine.q[-1, 2]) < 0.02
    half = run("drop-tilted", dt=5e-4)
    assert abs(half.q[-1, 2] - fine.q[-1, 2]) < 0.6 * abs(coarse.q[-1, 2] - fine.q[-1, 2]), "and converges"
    paper = [run("drop-tilted", dt=dt, contact="max-dissipation") for dt in (1e-3, 2.5e-4)]
    assert np.abs(paper[0].q[-1] - paper[1].q[-1]).max() < 1e-3
